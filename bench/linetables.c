// linetables.c - decoder speed over one interpreter's standard library, read from the dump
// gen_truth.py wrote (corpus entries skipped). Measures, in CPU time:
//   decode   - iterating every range of every table (table bytes and ranges per second);
//   lookup   - pyu_linetable_lookup() at 8 evenly spaced instructions per code object, each
//              decoding from the start of the table;
//   walker   - pyu_linetable_decode() once per code object, then the decoded form at every
//              instruction (what a frame walker does with a cached code object).
//
//   linetables DUMP.gz
// prints one line of "key=value" figures for bench/linetables-run.
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <zlib.h>

#include "linetable.h"

#define MIN_SECONDS 0.3
#define SAMPLES_PER_CODE 8

struct code {
	struct pyu_linetable lt;
	uint32_t n_instr;
	uint32_t *offsets; // byte offset of each instruction
};

static const enum pyu_linetable_format formats[] = {
	PYU_LNOTAB_UNSIGNED, PYU_LNOTAB_SIGNED, PYU_LINETABLE_310, PYU_LOCATIONS_311,
};

static double cpu_now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static bool get(gzFile f, void *dst, size_t n)
{
	return n == 0 || gzread(f, dst, (unsigned)n) == (int)n;
}

static void *xmalloc(size_t n)
{
	void *p = malloc(n ? n : 1);
	if (!p) {
		fprintf(stderr, "linetables: out of memory\n");
		exit(2);
	}
	return p;
}

// Loads the stdlib code objects of a dump. Returns their count, or -1 on a bad dump.
static long load(const char *path, struct code **ret)
{
	gzFile f = gzopen(path, "rb");
	if (!f)
		return -1;
	gzbuffer(f, 1 << 20);
	char magic[7], version[64];
	uint16_t vlen;
	if (!get(f, magic, 7) || memcmp(magic, "PYULT1\n", 7) || !get(f, &vlen, 2) ||
	    vlen >= sizeof(version) || !get(f, version, vlen))
		return -1;
	size_t n = 0, cap = 1024;
	struct code *codes = xmalloc(cap * sizeof(*codes));
	int32_t *entries = NULL;
	size_t entries_cap = 0;
	for (;;) {
		uint8_t tag, fmt, flags;
		if (!get(f, &tag, 1))
			return -1;
		if (tag == 0)
			break;
		if (tag == 2) {
			uint32_t stats[3];
			if (!get(f, stats, sizeof(stats)))
				return -1;
			continue;
		}
		int32_t first, neg, past;
		uint32_t code_len, table_len, count;
		uint16_t name_len;
		char name[65536];
		if (tag != 1 || !get(f, &fmt, 1) || fmt > 3 || !get(f, &first, 4) ||
		    !get(f, &code_len, 4) || !get(f, &table_len, 4))
			return -1;
		uint8_t *table = xmalloc(table_len);
		if (!get(f, table, table_len) || !get(f, &name_len, 2) || !get(f, name, name_len) ||
		    !get(f, &flags, 1) || !get(f, &neg, 4) || !get(f, &past, 4) || !get(f, &count, 4))
			return -1;
		size_t size = (size_t)count * (fmt == 3 ? 16 : 8);
		if (size > entries_cap) {
			free(entries);
			entries_cap = size * 2;
			entries = xmalloc(entries_cap);
		}
		if (!get(f, entries, size))
			return -1;
		if (name_len >= 7 && !memcmp(name, "corpus/", 7)) {
			free(table);
			continue;
		}
		if (n == cap)
			codes = realloc(codes, (cap *= 2) * sizeof(*codes));
		if (!codes)
			return -1;
		struct code *c = &codes[n++];
		c->lt = (struct pyu_linetable){ .buf = table, .len = table_len, .firstlineno = first,
						.format = formats[fmt], .code_len = code_len };
		c->n_instr = count;
		c->offsets = xmalloc((size_t)count * 4);
		for (uint32_t i = 0; i < count; i++)
			c->offsets[i] = fmt == 3 ? 2 * i : (uint32_t)entries[2 * i];
	}
	free(entries);
	gzclose(f);
	*ret = codes;
	return (long)n;
}

// A sink the optimiser cannot see through.
static volatile int64_t sink;

int main(int argc, char **argv)
{
	struct code *codes;
	if (argc != 2) {
		fprintf(stderr, "usage: linetables DUMP.gz\n");
		return 2;
	}
	long n = load(argv[1], &codes);
	if (n <= 0) {
		fprintf(stderr, "linetables: cannot read %s\n", argv[1]);
		return 1;
	}
	uint64_t table_bytes = 0, instructions = 0, max_ranges = 0;
	for (long i = 0; i < n; i++) {
		table_bytes += codes[i].lt.len;
		instructions += codes[i].n_instr;
		size_t m = pyu_linetable_max_ranges(&codes[i].lt);
		if (m > max_ranges)
			max_ranges = m;
	}

	// decode: every range of every table, repeated until MIN_SECONDS of CPU.
	uint64_t passes = 0, ranges = 0;
	double t0 = cpu_now(), t;
	do {
		for (long i = 0; i < n; i++) {
			struct pyu_linetable_iter it;
			struct pyu_line_range r;
			pyu_linetable_iter_init(&it, &codes[i].lt);
			while (pyu_linetable_next(&it, &r) == PYU_LT_OK) {
				ranges++;
				sink += r.loc.line;
			}
		}
		passes++;
	} while ((t = cpu_now() - t0) < MIN_SECONDS);
	double decode_bytes_s = (double)(table_bytes * passes) / t;
	double decode_ranges_s = (double)ranges / t;

	// lookup: O(table) each.
	uint64_t lookups = 0;
	t0 = cpu_now();
	do {
		for (long i = 0; i < n; i++) {
			const struct code *c = &codes[i];
			for (uint32_t k = 0; k < SAMPLES_PER_CODE && c->n_instr; k++) {
				struct pyu_location loc;
				uint32_t off = c->offsets[(uint64_t)c->n_instr * k / SAMPLES_PER_CODE];
				if (pyu_linetable_lookup(&c->lt, off, &loc) == PYU_LT_OK)
					sink += loc.line;
				lookups++;
			}
		}
	} while ((t = cpu_now() - t0) < MIN_SECONDS);
	double lookup_s = (double)lookups / t;

	// walker: decode once per code object, then every instruction through the decoded form.
	struct pyu_line_range *storage = xmalloc(max_ranges * sizeof(*storage));
	uint64_t walked = 0;
	t0 = cpu_now();
	do {
		for (long i = 0; i < n; i++) {
			const struct code *c = &codes[i];
			struct pyu_linetable_decoded d;
			if (pyu_linetable_decode(&c->lt, storage, max_ranges, &d) != PYU_LT_OK)
				continue;
			for (uint32_t k = 0; k < c->n_instr; k++) {
				struct pyu_location loc;
				if (pyu_linetable_decoded_lookup(&d, c->offsets[k], &loc) == PYU_LT_OK)
					sink += loc.line;
			}
			walked += c->n_instr;
		}
	} while ((t = cpu_now() - t0) < MIN_SECONDS);
	double walker_s = (double)walked / t;

	printf("codes=%ld table_bytes=%" PRIu64 " instructions=%" PRIu64
	       " decode_bytes_s=%.0f decode_ranges_s=%.0f lookup_s=%.0f walker_s=%.0f\n",
	       n, table_bytes, instructions, decode_bytes_s, decode_ranges_s, lookup_s, walker_s);
	for (long i = 0; i < n; i++) {
		free((void *)codes[i].lt.buf);
		free(codes[i].offsets);
	}
	free(codes);
	free(storage);
	return 0;
}
