// compare.c - checks core/linetable.c against what each interpreter said about its own tables
// (dumps written by gen_truth.py). For every code object: the table decodes cleanly; the
// ranges are contiguous from 0; at every instruction the decoded form's lookup and (within a
// work budget per code object, else on a stride) pyu_linetable_lookup() both equal the
// interpreter's answer; negative and past-the-end offsets behave as PyCode_Addr2Line does.
//
//   compare LABEL DUMP.gz [LABEL DUMP.gz ...]
// prints "linetable <label> <version>: <C> code objects, <I> instructions, <M> mismatches" per
// interpreter (first mismatches in detail), then "N passed, N failed".
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "linetable.h"

#define DUMP_NONE INT32_MIN
#define MAX_DETAILS 8
// pyu_linetable_lookup() is O(table): check it at every instruction while instructions x
// table bytes stays under this, else at every k-th instruction.
#define LOOKUP_BUDGET 20000000ULL

struct run {
	const char *label;
	char version[64];
	uint64_t codes, instructions, mismatches, lookups;
	uint32_t files_ok, files_skipped, corpus;
	int details;
	bool complete;
	// coverage: which table features this interpreter's dump exercised
	uint64_t kinds[16];           // 3.11+ entry codes
	uint64_t neg_deltas, no_line; // <= 3.10 negative line steps; 3.10 -128 entries
	uint64_t empty, addr255;      // zero-length 3.10 entries / <= 3.9 pure line steps; 255 steps
	uint64_t max_code_len;
	int64_t max_line_jump, max_line_drop;
	int fmt;
};

// Counts the features of a (known good) table, to show the corpus reaches them.
static void coverage(struct run *r, int fmt, const uint8_t *t, size_t len)
{
	if (fmt == 3) {
		for (size_t i = 0; i < len; i++)
			if (t[i] & 0x80)
				r->kinds[(t[i] >> 3) & 15]++;
		return;
	}
	for (size_t i = 0; i + 1 < len; i += 2) {
		int delta = fmt == 0 ? t[i + 1] : (int8_t)t[i + 1];
		if (fmt == 2 && delta == -128)
			r->no_line++;
		else if (delta < 0)
			r->neg_deltas++;
		if (t[i] == 0)
			r->empty++;
		if (t[i] == 255)
			r->addr255++;
	}
}

struct buf {
	uint8_t *p;
	size_t cap;
};

static void *grow(struct buf *b, size_t n)
{
	if (n > b->cap) {
		free(b->p);
		b->cap = n * 2 + 64;
		b->p = malloc(b->cap);
		if (!b->p) {
			fprintf(stderr, "compare: out of memory\n");
			exit(2);
		}
	}
	return b->p;
}

static bool get(gzFile f, void *dst, size_t n)
{
	while (n) {
		unsigned chunk = n > (1u << 30) ? 1u << 30 : (unsigned)n;
		int got = gzread(f, dst, chunk);
		if (got <= 0)
			return false;
		dst = (uint8_t *)dst + got;
		n -= (size_t)got;
	}
	return true;
}

static bool loc_eq(const struct pyu_location *a, const struct pyu_location *b)
{
	return a->line == b->line && a->end_line == b->end_line && a->column == b->column &&
	       a->end_column == b->end_column;
}

static void fmt_field(char *out, size_t n, int32_t v)
{
	if (v == INT32_MIN)
		snprintf(out, n, "None");
	else
		snprintf(out, n, "%" PRId32, v);
}

static void fmt_loc(char *out, size_t n, const struct pyu_location *l)
{
	char a[16], b[16], c[16], d[16];
	fmt_field(a, sizeof(a), l->line);
	fmt_field(b, sizeof(b), l->end_line);
	fmt_field(c, sizeof(c), l->column);
	fmt_field(d, sizeof(d), l->end_column);
	snprintf(out, n, "(%s, %s, %s, %s)", a, b, c, d);
}

static void mismatch(struct run *r, const char *name, const char *what, int64_t offset,
		     const struct pyu_location *want, const struct pyu_location *got, int st)
{
	r->mismatches++;
	if (r->details++ >= MAX_DETAILS)
		return;
	char w[96], g[96];
	fmt_loc(w, sizeof(w), want);
	if (st == PYU_LT_OK)
		fmt_loc(g, sizeof(g), got);
	else
		snprintf(g, sizeof(g), "status %d", st);
	printf("  mismatch %s: %s offset %" PRId64 ": interpreter %s, %s %s\n", r->label, name,
	       offset, w, what, g);
}

static const enum pyu_linetable_format formats[] = {
	PYU_LNOTAB_UNSIGNED, PYU_LNOTAB_SIGNED, PYU_LINETABLE_310, PYU_LOCATIONS_311,
};

// Checks one offset through both lookups.
static void check(struct run *r, const struct pyu_linetable *lt,
		  const struct pyu_linetable_decoded *d, const char *name, int64_t offset,
		  const struct pyu_location *want, bool slow)
{
	struct pyu_location got = { 0 };
	int st = pyu_linetable_decoded_lookup(d, offset, &got);
	if (st != PYU_LT_OK || !loc_eq(&got, want)) {
		mismatch(r, name, "decoded", offset, want, &got, st);
		return;
	}
	if (slow) {
		r->lookups++;
		st = pyu_linetable_lookup(lt, offset, &got);
		if (st != PYU_LT_OK || !loc_eq(&got, want))
			mismatch(r, name, "lookup", offset, want, &got, st);
	}
}

static struct pyu_location line_only(int32_t line)
{
	return (struct pyu_location){ line, line, PYU_NO_COLUMN, PYU_NO_COLUMN };
}

// One code record (tag 1 already read). Returns false on a truncated dump.
static bool code_record(gzFile f, struct run *r, struct buf *table, struct buf *entries,
			struct buf *ranges)
{
	uint8_t fmt, flags;
	int32_t firstlineno, neg, past;
	uint32_t code_len, table_len, count;
	uint16_t name_len;
	char name[65536 + 1];
	if (!get(f, &fmt, 1) || !get(f, &firstlineno, 4) || !get(f, &code_len, 4) ||
	    !get(f, &table_len, 4) || fmt > 3)
		return false;
	grow(table, table_len + 1);
	if (!get(f, table->p, table_len) || !get(f, &name_len, 2) || !get(f, name, name_len))
		return false;
	name[name_len] = 0;
	if (!get(f, &flags, 1) || !get(f, &neg, 4) || !get(f, &past, 4) || !get(f, &count, 4))
		return false;
	size_t entry_size = fmt == 3 ? 16 : 8;
	int32_t *e = grow(entries, (size_t)count * entry_size + 1);
	if (!get(f, e, (size_t)count * entry_size))
		return false;

	r->codes++;
	r->fmt = fmt;
	coverage(r, fmt, table->p, table_len);
	if (code_len > r->max_code_len)
		r->max_code_len = code_len;
	struct pyu_linetable lt = {
		.buf = table->p, .len = table_len, .firstlineno = firstlineno,
		.format = formats[fmt], .code_len = code_len,
	};
	size_t cap = pyu_linetable_max_ranges(&lt);
	struct pyu_line_range *rg = grow(ranges, cap * sizeof(*rg));
	struct pyu_linetable_decoded d;
	int st = pyu_linetable_decode(&lt, rg, cap, &d);
	if (st != PYU_LT_OK) {
		struct pyu_location none = line_only(PYU_NO_LINE);
		mismatch(r, name, "decode", 0, &none, &none, st);
		return true;
	}
	for (size_t i = 0; i < d.n; i++) {
		if (rg[i].start >= rg[i].end || rg[i].start != (i ? rg[i - 1].end : 0)) {
			struct pyu_location none = line_only(PYU_NO_LINE);
			mismatch(r, name, "ranges not contiguous at", (int64_t)rg[i].start, &none,
				 &none, PYU_LT_OK);
			return true;
		}
	}

	uint64_t units = fmt == 3 ? code_len / 2 : 0;
	uint64_t n = fmt == 3 && units > count ? units : count;
	uint64_t stride = 1;
	if (n * (uint64_t)table_len > LOOKUP_BUDGET)
		stride = n * (uint64_t)table_len / LOOKUP_BUDGET + 1;
	int64_t end = 0, prev_line = PYU_NO_LINE;
	for (uint64_t i = 0; i < n; i++) {
		struct pyu_location want;
		int64_t offset;
		if (fmt == 3) {
			offset = (int64_t)(2 * i);
			if (i < count)
				want = (struct pyu_location){ e[4 * i], e[4 * i + 1], e[4 * i + 2],
							      e[4 * i + 3] };
			else // past co_positions(): PyCode_Addr2Line gives -1
				want = line_only(PYU_NO_LINE);
		} else {
			offset = e[2 * i];
			want = line_only(e[2 * i + 1]);
		}
		check(r, &lt, &d, name, offset, &want, i % stride == 0 || i + 1 == n);
		if (i > 0 && want.line != PYU_NO_LINE && prev_line != PYU_NO_LINE) {
			int64_t jump = (int64_t)want.line - prev_line;
			if (jump > r->max_line_jump)
				r->max_line_jump = jump;
			if (-jump > r->max_line_drop)
				r->max_line_drop = -jump;
		}
		if (want.line != PYU_NO_LINE)
			prev_line = want.line;
		r->instructions++;
		end = offset + 2;
	}
	if (flags & 1) {
		struct pyu_location want = line_only(neg);
		check(r, &lt, &d, name, -1, &want, true);
	}
	if (flags & 2) { // PyCode_Addr2Line's -1 is "no line" from 3.10 on
		struct pyu_location want = line_only(fmt >= 2 && past == -1 ? PYU_NO_LINE : past);
		check(r, &lt, &d, name, code_len, &want, true);
	}
	if (fmt >= 2) { // after everything the table covers: no line
		struct pyu_location want = line_only(PYU_NO_LINE);
		check(r, &lt, &d, name, end, &want, true);
	}
	return true;
}

static bool run_dump(struct run *r, const char *path)
{
	gzFile f = gzopen(path, "rb");
	if (!f) {
		printf("  %s: cannot open %s\n", r->label, path);
		return false;
	}
	gzbuffer(f, 1 << 20);
	char magic[7];
	uint16_t vlen;
	bool ok = get(f, magic, 7) && !memcmp(magic, "PYULT1\n", 7) && get(f, &vlen, 2) &&
		  vlen < sizeof(r->version) && get(f, r->version, vlen);
	struct buf table = { 0 }, entries = { 0 }, ranges = { 0 };
	while (ok) {
		uint8_t tag;
		if (!get(f, &tag, 1))
			break;
		if (tag == 0) {
			r->complete = true;
			break;
		} else if (tag == 1) {
			ok = code_record(f, r, &table, &entries, &ranges);
		} else if (tag == 2) {
			ok = get(f, &r->files_ok, 4) && get(f, &r->files_skipped, 4) &&
			     get(f, &r->corpus, 4);
		} else {
			ok = false;
		}
	}
	free(table.p);
	free(entries.p);
	free(ranges.p);
	gzclose(f);
	if (!r->complete)
		printf("  %s: dump %s is truncated or malformed\n", r->label, path);
	return r->complete;
}

int main(int argc, char **argv)
{
	int passed = 0, failed = 0;
	if (argc < 3 || argc % 2 == 0) {
		fprintf(stderr, "usage: compare LABEL DUMP.gz [LABEL DUMP.gz ...]\n");
		return 2;
	}
	for (int i = 1; i + 1 < argc; i += 2) {
		struct run r = { .label = argv[i] };
		strcpy(r.version, "?");
		bool ok = run_dump(&r, argv[i + 1]);
		printf("linetable %s %s: %" PRIu64 " code objects, %" PRIu64 " instructions, %" PRIu64
		       " mismatches\n", r.label, r.version, r.codes, r.instructions, r.mismatches);
		printf("  (%" PRIu32 " stdlib files compiled, %" PRIu32 " skipped as uncompilable, %"
		       PRIu32 " corpus sources; %" PRIu64 " offsets also via pyu_linetable_lookup)\n",
		       r.files_ok, r.files_skipped, r.corpus, r.lookups);
		if (r.fmt <= 1)
			printf("  (coverage: %" PRIu64 " negative line steps, %" PRIu64
			       " zero-address steps, %" PRIu64 " 255-byte address steps",
			       r.neg_deltas, r.empty, r.addr255);
		else if (r.fmt == 2)
			printf("  (coverage: %" PRIu64 " no-line entries, %" PRIu64
			       " zero-length entries, %" PRIu64 " negative line steps",
			       r.no_line, r.empty, r.neg_deltas);
		else {
			printf("  (coverage: entry kinds");
			for (int k = 0; k < 16; k++)
				printf(" %d:%" PRIu64, k, r.kinds[k]);
		}
		printf("; longest code %" PRIu64 " bytes, largest line step between instructions +%"
		       PRId64 " / -%" PRId64 ")\n", r.max_code_len, r.max_line_jump, r.max_line_drop);
		// A dump without the standard library would make a hollow pass.
		if (ok && r.mismatches == 0 && r.files_ok >= 100 && r.codes >= 10000)
			passed++;
		else
			failed++;
	}
	printf("%d passed, %d failed\n", passed, failed);
	return failed ? 1 : 0;
}
