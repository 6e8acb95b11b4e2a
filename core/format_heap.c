// format_heap.c - the heap census as text and JSON (pyu_format_heap): one row per type sorted by
// bytes, under a header that says how many objects were found, how, and what was left out.
// Face layer: prints what heap.c counted; reads nothing from the target itself.
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "heap.h"
#include "heap_graph.h"
#include "heap_roots.h"
#include "include/pyunwind.h"
#include "locals.h"
#include "strbuf.h"
#include "values.h"

// Bounds on the repr of each of the largest objects: one line each.
#define BIG_REPR_CHARS 60
#define BIG_REPR_ITEMS 4
#define BIG_REPR_DEPTH 2
#define BIG_REPR_OUTPUT 160

// A value reader for the heap's one-line reprs (the BIG_REPR_* bounds).
static struct pyu_error *repr_values(struct pyu_stacks *s, struct pyu_values **v)
{
	struct pyu_value_limits lim;
	pyu_value_limits_default(&lim);
	lim.chars = BIG_REPR_CHARS;
	lim.items = BIG_REPR_ITEMS;
	lim.depth = BIG_REPR_DEPTH;
	lim.output = BIG_REPR_OUTPUT;
	return pyu_values_create(s->target, s->runtime, &lim, v);
}

// The reprs of h->biggest (NULL where none could be made), or NULL for none at all.
static char **big_reprs(struct pyu_stacks *s, const struct pyu_heap *h)
{
	if (!h->biggest_count)
		return NULL;
	struct pyu_values *v;
	struct pyu_error *err = repr_values(s, &v);
	if (err) {
		pyu_error_destroy(err);
		return NULL;
	}
	char **out = calloc(h->biggest_count, sizeof(*out));
	for (uint32_t i = 0; out && i < h->biggest_count; i++) {
		struct pyu_strbuf sb;
		pyu_strbuf_init(&sb, 4 * BIG_REPR_OUTPUT);
		pyu_value_repr(v, h->biggest[i].addr, &sb, NULL);
		err = pyu_strbuf_finish(&sb, &out[i]);
		pyu_error_destroy(err);
	}
	pyu_values_destroy(v);
	return out;
}

static int by_bytes(const void *a, const void *b)
{
	const struct pyu_heap_type *x = *(const struct pyu_heap_type *const *)a;
	const struct pyu_heap_type *y = *(const struct pyu_heap_type *const *)b;
	if (x->bytes != y->bytes)
		return x->bytes < y->bytes ? 1 : -1;
	if (x->count != y->count)
		return x->count < y->count ? 1 : -1;
	return strcmp(x->name, y->name);
}

static int by_name(const void *a, const void *b)
{
	const struct pyu_heap_type *x = *(const struct pyu_heap_type *const *)a;
	const struct pyu_heap_type *y = *(const struct pyu_heap_type *const *)b;
	return strcmp(x->name, y->name);
}

static const char *sized_by(const struct pyu_heap_type *t)
{
	return t->size.exact ? "getsizeof" : "basicsize";
}

// "12.3 MiB"
static void human(struct pyu_strbuf *sb, uint64_t n)
{
	static const char *const units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
	double x = (double)n;
	size_t u = 0;
	while (x >= 1024 && u + 1 < sizeof(units) / sizeof(units[0]))
		x /= 1024, u++;
	if (u == 0)
		pyu_strbuf_printf(sb, "%" PRIu64 " B", n);
	else
		pyu_strbuf_printf(sb, "%.1f %s", x, units[u]);
}

// --retained: the bytes of the first rows' types (row_retained, up to RETAINED_ROWS rows) and
// of each of the largest objects (big_retained; UINT64_MAX: no root reaches it). NULL: none.
#define RETAINED_ROWS 64
struct retained {
	uint64_t *rows;
	uint32_t row_count;
	uint64_t *big;
	uint64_t unreached;
};

static void json_retained(struct pyu_strbuf *sb, uint64_t v)
{
	if (v == UINT64_MAX)
		pyu_strbuf_puts(sb, ", \"retained\": null");
	else
		pyu_strbuf_printf(sb, ", \"retained\": %" PRIu64, v);
}

static void json_document(struct pyu_strbuf *sb, const struct pyu_stacks *s,
			  const struct pyu_heap *h, uint32_t names, struct pyu_heap_type **rows,
			  uint32_t n, char **reprs, const struct retained *r)
{
	pyu_strbuf_puts(sb, "{\"version\": 1, \"kind\": \"heap\",\n \"python\": {\"version\": ");
	pyu_strbuf_json_cstr(sb, s->version);
	pyu_strbuf_printf(sb, ", \"hexversion\": %" PRIu64 ", \"debug_build\": %s, "
			  "\"free_threaded\": %s},\n", s->hexversion,
			  s->debug_build ? "true" : "false", s->free_threaded ? "true" : "false");
	pyu_strbuf_printf(sb, " \"objects\": %" PRIu64 ", \"bytes\": %" PRIu64 ", \"tracked\": %"
			  PRIu64 ", \"untracked\": %" PRIu64 ", \"partial\": %s, \"interrupted\": %s, "
			  "\"type_count\": %u,"
			  "\n \"sources\": [", h->objects, h->bytes, h->tracked, h->untracked,
			  h->partial ? "true" : "false", h->interrupted ? "true" : "false", names);
	for (uint32_t i = 0; i < h->source_count; i++) {
		pyu_strbuf_puts(sb, i ? ", " : "");
		pyu_strbuf_json_cstr(sb, h->sources[i]);
	}
	pyu_strbuf_puts(sb, "],\n \"errors\": [");
	for (uint32_t i = 0; i < h->error_count; i++) {
		pyu_strbuf_puts(sb, i ? ", {\"message\": " : "{\"message\": ");
		pyu_strbuf_json_cstr(sb, h->errors[i].message);
		pyu_strbuf_printf(sb, ", \"count\": %" PRIu64 "}", h->errors[i].count);
	}
	pyu_strbuf_puts(sb, "],\n \"types\": [");
	for (uint32_t i = 0; i < n; i++) {
		pyu_strbuf_puts(sb, i ? ",\n  {\"type\": " : "\n  {\"type\": ");
		pyu_strbuf_json_cstr(sb, rows[i]->name);
		pyu_strbuf_printf(sb, ", \"count\": %" PRIu64 ", \"bytes\": %" PRIu64
				  ", \"sized_by\": \"%s\"", rows[i]->count, rows[i]->bytes,
				  sized_by(rows[i]));
		if (r && i < r->row_count)
			json_retained(sb, r->rows[i]);
		pyu_strbuf_putc(sb, '}');
	}
	pyu_strbuf_puts(sb, "],\n \"biggest\": [");
	for (uint32_t i = 0; i < h->biggest_count; i++) {
		const struct pyu_heap_big *b = &h->biggest[i];
		pyu_strbuf_printf(sb, "%s{\"address\": \"0x%" PRIx64 "\", \"type\": ",
				  i ? ",\n  " : "\n  ", b->addr);
		pyu_strbuf_json_cstr(sb, h->types[b->type].name);
		pyu_strbuf_printf(sb, ", \"bytes\": %" PRIu64 ", \"repr\": ", b->bytes);
		if (reprs && reprs[i])
			pyu_strbuf_json_cstr(sb, reprs[i]);
		else
			pyu_strbuf_puts(sb, "null");
		if (r)
			json_retained(sb, r->big[i]);
		pyu_strbuf_putc(sb, '}');
	}
	pyu_strbuf_puts(sb, "]");
	if (r)
		pyu_strbuf_printf(sb, ",\n \"unreached\": %" PRIu64, r->unreached);
	pyu_strbuf_puts(sb, "}\n");
}

static void text_retained(struct pyu_strbuf *sb, uint64_t v)
{
	if (v == UINT64_MAX)
		pyu_strbuf_printf(sb, " %14s", "-");
	else
		pyu_strbuf_printf(sb, " %14" PRIu64, v);
}

static void text_document(struct pyu_strbuf *sb, const struct pyu_stacks *s,
			  const struct pyu_heap *h, uint32_t names, struct pyu_heap_type **rows,
			  uint32_t n, uint32_t shown, char **reprs, const struct retained *r)
{
	pyu_strbuf_printf(sb, "Python %s heap: %" PRIu64 " objects, ", s->version, h->objects);
	human(sb, h->bytes);
	pyu_strbuf_printf(sb, " in %u types%s\n", names,
			  h->interrupted ? " (partial: interrupted)" :
			  h->partial ? " (partial: the object limit was reached)" : "");
	if (h->interrupted)
		pyu_strbuf_printf(sb, "  interrupted before the census finished: the counts are of "
				  "the %" PRIu64 " objects found until then\n", h->objects);
	for (uint32_t i = 0; i < h->source_count; i++) {
		pyu_strbuf_puts(sb, "  ");
		pyu_strbuf_text(sb, h->sources[i], strlen(h->sources[i]));
		pyu_strbuf_putc(sb, '\n');
	}
	if (!h->untracked)
		pyu_strbuf_puts(sb, "  no object reached through references\n");
	uint64_t inexact_types = 0, inexact_objects = 0;
	for (uint32_t i = 0; i < h->type_count; i++) {
		if (!h->types[i].size.exact) {
			inexact_types++;
			inexact_objects += h->types[i].count;
		}
	}
	if (inexact_types)
		pyu_strbuf_printf(sb, "  sized by tp_basicsize (their __sizeof__ is their own): %"
				  PRIu64 " types, %" PRIu64 " objects\n", inexact_types,
				  inexact_objects);
	for (uint32_t i = 0; i < h->error_count; i++) {
		pyu_strbuf_printf(sb, "  <error: %" PRIu64 " x ", h->errors[i].count);
		pyu_strbuf_text(sb, h->errors[i].message, strlen(h->errors[i].message));
		pyu_strbuf_puts(sb, ">\n");
	}
	if (r)
		pyu_strbuf_printf(sb, "  retained: what each row's type (object) keeps alive from the "
				  "roots; %" PRIu64 " objects no root reaches\n", r->unreached);
	pyu_strbuf_printf(sb, "\n%12s %14s", "count", "bytes");
	if (r)
		pyu_strbuf_printf(sb, " %14s", "retained");
	pyu_strbuf_printf(sb, " %10s %7s  %s\n", "average", "share", "type");
	for (uint32_t i = 0; i < shown; i++) {
		const struct pyu_heap_type *t = rows[i];
		double share = h->bytes ? 100.0 * (double)t->bytes / (double)h->bytes : 0.0;
		pyu_strbuf_printf(sb, "%12" PRIu64 " %14" PRIu64, t->count, t->bytes);
		if (r)
			text_retained(sb, i < r->row_count ? r->rows[i] : UINT64_MAX);
		pyu_strbuf_printf(sb, " %10" PRIu64 " %6.1f%%  ", t->count ? t->bytes / t->count : 0,
				  share);
		pyu_strbuf_text(sb, t->name, strlen(t->name));
		pyu_strbuf_puts(sb, t->size.exact ? "\n" : " (basicsize)\n");
	}
	if (shown < n)
		pyu_strbuf_printf(sb, "(%u more types: --top 0 shows them all)\n", n - shown);
	if (h->biggest_count) {
		pyu_strbuf_printf(sb, "\nThe %u largest objects:\n%18s %14s", h->biggest_count,
				  "address", "bytes");
		if (r)
			pyu_strbuf_printf(sb, " %14s", "retained");
		pyu_strbuf_printf(sb, "  %s\n", "type and repr");
	}
	for (uint32_t i = 0; i < h->biggest_count; i++) {
		const struct pyu_heap_big *b = &h->biggest[i];
		const char *name = h->types[b->type].name;
		pyu_strbuf_printf(sb, "%#18" PRIx64 " %14" PRIu64, b->addr, b->bytes);
		if (r)
			text_retained(sb, r->big[i]);
		pyu_strbuf_puts(sb, "  ");
		pyu_strbuf_text(sb, name, strlen(name));
		if (reprs && reprs[i]) {
			pyu_strbuf_puts(sb, "  ");
			pyu_strbuf_puts(sb, reprs[i]); // escaped by the value reader
		}
		pyu_strbuf_putc(sb, '\n');
	}
}

PYU_PUBLIC struct pyu_error *pyu_format_heap(struct pyu_stacks *s, uint32_t flags,
					     uint32_t top, uint64_t min_size, uint32_t biggest,
					     char **ret)
{
	if (!s || !ret)
		return pyu_error_create(PYU_ERR_ARGUMENT, "no stacks");
	struct pyu_heap *h;
	struct pyu_heap_dominators *dom = NULL;
	struct pyu_error *err;
	if (flags & PYU_FMT_RETAINED) {
		struct pyu_heap_roots roots;
		if ((err = pyu_heap_roots_collect(s, &roots)) != NULL)
			return err;
		err = pyu_heap_dominators_compute(s, &roots, biggest, 0, &h, &dom);
		pyu_heap_roots_clear(&roots);
	} else {
		err = pyu_heap_census(s, biggest, &h);
	}
	if (err)
		return err;
	struct pyu_heap_type **rows = malloc((h->type_count + 1) * sizeof(*rows));
	if (!rows) {
		pyu_heap_destroy(h);
		pyu_heap_dominators_destroy(dom);
		return &pyu_error_nomem;
	}
	// One row per name: two classes of one name (a module loaded twice, a C class and the
	// Python one it replaced) are one type to the reader, as type(o).__qualname__ says.
	for (uint32_t i = 0; i < h->type_count; i++)
		rows[i] = &h->types[i];
	qsort(rows, h->type_count, sizeof(*rows), by_name);
	uint32_t n = 0;
	for (uint32_t i = 0; i < h->type_count; i++) {
		if (n && !strcmp(rows[n - 1]->name, rows[i]->name)) {
			rows[n - 1]->count += rows[i]->count;
			rows[n - 1]->bytes += rows[i]->bytes;
			rows[n - 1]->size.exact &= rows[i]->size.exact;
			continue;
		}
		rows[n++] = rows[i];
	}
	uint32_t names = n, kept = 0;
	for (uint32_t i = 0; i < n; i++)
		if (rows[i]->bytes >= min_size)
			rows[kept++] = rows[i];
	n = kept;
	qsort(rows, n, sizeof(*rows), by_bytes);
	char **reprs = big_reprs(s, h);
	uint32_t shown = top && top < n ? top : n;
	struct retained ret_sizes = {0}, *r = NULL;
	if (dom) {
		r = &ret_sizes;
		r->row_count = shown < RETAINED_ROWS ? shown : RETAINED_ROWS;
		r->rows = calloc(r->row_count + 1, sizeof(*r->rows));
		r->big = calloc(h->biggest_count + 1, sizeof(*r->big));
		int32_t *set = malloc((h->type_count + 1) * sizeof(*set));
		if (!r->rows || !r->big || !set) {
			free(r->rows);
			free(r->big);
			free(set);
			r = NULL;
		} else {
			// Rows stand for every type of their name.
			for (uint32_t i = 0; i < h->type_count; i++) {
				set[i] = -1;
				for (uint32_t k = 0; k < r->row_count && set[i] < 0; k++)
					if (!strcmp(h->types[i].name, rows[k]->name))
						set[i] = (int32_t)k;
			}
			pyu_heap_retained_by_sets(dom, set, r->row_count, r->rows);
			free(set);
			for (uint32_t i = 0; i < h->biggest_count; i++)
				if (!pyu_heap_retained(dom, h->biggest[i].addr, &r->big[i]))
					r->big[i] = UINT64_MAX;
			r->unreached = pyu_heap_unreached(dom);
		}
	}
	struct pyu_strbuf sb;
	pyu_strbuf_init(&sb, PYU_STRBUF_MAX);
	if (flags & PYU_FMT_JSON) {
		json_document(&sb, s, h, names, rows, shown, reprs, r);
	} else {
		text_document(&sb, s, h, names, rows, n, shown, reprs, r);
	}
	if (r) {
		free(r->rows);
		free(r->big);
	}
	pyu_heap_dominators_destroy(dom);
	for (uint32_t i = 0; reprs && i < h->biggest_count; i++)
		free(reprs[i]);
	free(reprs);
	free(rows);
	pyu_heap_destroy(h);
	return pyu_strbuf_finish(&sb, ret);
}

// ---- referrers ---------------------------------------------------------------------------------

// A one-line repr of the object at @addr (never NULL unless out of memory).
static char *short_repr(struct pyu_values *v, uint64_t addr)
{
	struct pyu_strbuf sb;
	char *out = NULL;
	pyu_strbuf_init(&sb, 4 * BIG_REPR_OUTPUT);
	pyu_value_repr(v, addr, &sb, NULL);
	pyu_error_destroy(pyu_strbuf_finish(&sb, &out));
	return out;
}

// How a referrer holds the object, as a Python expression suffix: "[3]", "['k']", ".attr"; a
// frame's local as the referrers say it ("local x of coroutine main()") or, with @expr, as
// an expression (".cr_frame.f_locals['x']" after a coroutine, ".f_locals['x']" after a frame).
static void via_text(struct pyu_values *v, const struct pyu_heap_ref *r, struct pyu_strbuf *sb,
		     bool expr)
{
	char *key = NULL;
	size_t len;
	switch (r->via) {
	case PYU_VIA_ITEM:
		pyu_strbuf_printf(sb, "[%" PRIu64 "]", r->n);
		return;
	case PYU_VIA_DICT_KEY:
		pyu_strbuf_puts(sb, "(a key)");
		return;
	case PYU_VIA_DICT_VALUE:
		key = short_repr(v, r->key);
		pyu_strbuf_printf(sb, "[%s]", key ? key : "?");
		break;
	case PYU_VIA_SET:
		pyu_strbuf_puts(sb, "(an element)");
		return;
	case PYU_VIA_ATTR:
		key = short_repr(v, r->key);
		len = key ? strlen(key) : 0;
		// The name's repr is 'name': the attribute is .name.
		if (len > 2 && key[0] == '\'' && key[len - 1] == '\'')
			pyu_strbuf_printf(sb, ".%.*s", (int)(len - 2), key + 1);
		else
			pyu_strbuf_printf(sb, ".<%s>", key ? key : "?");
		break;
	case PYU_VIA_FIELD:
		pyu_strbuf_printf(sb, ".%s", r->field);
		return;
	case PYU_VIA_SLOT:
		pyu_strbuf_printf(sb, "(__slots__ word at offset %" PRIu64 ")", r->n);
		return;
	case PYU_VIA_LOCAL: {
		const char *name = r->field ? r->field : "?";
		if (!expr) {
			pyu_strbuf_puts(sb, "local ");
			pyu_strbuf_text(sb, name, strlen(name));
			pyu_strbuf_printf(sb, " of %s ", pyu_heap_frame_kind_name(
				(enum pyu_heap_frame_kind)r->n));
			pyu_strbuf_text(sb, r->owner ? r->owner : "?",
					r->owner ? strlen(r->owner) : 1);
			pyu_strbuf_puts(sb, "()");
			return;
		}
		if (r->key)
			pyu_strbuf_printf(sb, ".%s", pyu_heap_frame_attr(
				(enum pyu_heap_frame_kind)r->n));
		pyu_strbuf_puts(sb, ".f_locals['");
		pyu_strbuf_text(sb, name, strlen(name));
		pyu_strbuf_puts(sb, "']");
		return;
	}
	case PYU_VIA_ROOT:
		return;
	}
	free(key);
}

struct pyu_error *pyu_format_heap_referrers(struct pyu_stacks *s, uint64_t addr, uint32_t flags,
					    char **ret)
{
	if (!s || !ret)
		return pyu_error_create(PYU_ERR_ARGUMENT, "no stacks");
	struct pyu_heap *h;
	struct pyu_error *err = pyu_heap_census_referrers(s, addr, &h);
	if (err)
		return err;
	if (!h->want_found) {
		pyu_heap_destroy(h);
		return pyu_error_create(PYU_ERR_NOT_FOUND, "no object at 0x%" PRIx64 " among the "
					"objects the census found", addr);
	}
	struct pyu_values *v;
	err = repr_values(s, &v);
	if (err) {
		pyu_heap_destroy(h);
		return err;
	}
	// Frames that hold it as a local: roots of the object graph, not objects the census
	// follows.
	struct pyu_heap_roots roots;
	memset(&roots, 0, sizeof(roots));
	err = pyu_heap_roots_collect(s, &roots);
	if (err) {
		pyu_values_destroy(v);
		pyu_heap_destroy(h);
		return err;
	}
	uint32_t frame_refs = 0, shown = 0;
	for (uint32_t i = 0; i < roots.count; i++)
		if (roots.items[i].kind == PYU_ROOT_LOCAL && roots.items[i].addr == addr)
			frame_refs++;
	// A thread's frame that is an object (<= 3.10) the census found holding it as a local is
	// one of those: said once, with its number and thread.
	bool *dup = calloc(h->ref_count + 1, sizeof(*dup));
	if (!dup) {
		pyu_heap_roots_clear(&roots);
		pyu_values_destroy(v);
		pyu_heap_destroy(h);
		return &pyu_error_nomem;
	}
	for (uint32_t i = 0; i < h->ref_count; i++) {
		const struct pyu_heap_ref *r = &h->refs[i];
		for (uint32_t k = 0; r->via == PYU_VIA_LOCAL && !r->key && !dup[i] &&
				     k < roots.count; k++)
			dup[i] = roots.items[k].kind == PYU_ROOT_LOCAL && roots.items[k].addr == addr &&
				 roots.items[k].frame_address == r->addr;
		shown += !dup[i];
	}
	bool json = flags & PYU_FMT_JSON;
	struct pyu_strbuf sb;
	pyu_strbuf_init(&sb, PYU_STRBUF_MAX);
	const char *tname = h->types[h->want_type].name;
	char *repr = short_repr(v, addr);
	if (json) {
		pyu_strbuf_printf(&sb, "{\"version\": 1, \"kind\": \"heap-referrers\", "
				  "\"object\": {\"address\": \"0x%" PRIx64 "\", \"type\": ", addr);
		pyu_strbuf_json_cstr(&sb, tname);
		pyu_strbuf_printf(&sb, ", \"bytes\": %" PRIu64 ", \"repr\": ", h->want_bytes);
		pyu_strbuf_json_cstr(&sb, repr ? repr : "");
		pyu_strbuf_printf(&sb, "}, \"partial\": %s, \"dropped\": %" PRIu64
				  ", \"referrers\": [", h->partial ? "true" : "false",
				  h->refs_dropped);
	} else {
		pyu_strbuf_printf(&sb, "0x%" PRIx64 " %s, %" PRIu64 " bytes: %s\n", addr, tname,
				  h->want_bytes, repr ? repr : "?");
		pyu_strbuf_printf(&sb, "%u referrer%s%s:\n", shown + frame_refs,
				  shown + frame_refs == 1 ? "" : "s",
				  h->interrupted ? " (the census was interrupted)" :
				  h->partial ? " (the census stopped at its object limit)" : "");
	}
	free(repr);
	uint32_t k = 0;
	for (uint32_t i = 0; i < h->ref_count; i++) {
		const struct pyu_heap_ref *r = &h->refs[i];
		if (dup[i])
			continue;
		char *tn = NULL, *via = NULL, *rr = short_repr(v, r->addr);
		pyu_error_destroy(pyu_value_type_name(v, r->addr, &tn));
		struct pyu_strbuf vb;
		pyu_strbuf_init(&vb, 4 * BIG_REPR_OUTPUT);
		via_text(v, r, &vb, false);
		pyu_error_destroy(pyu_strbuf_finish(&vb, &via));
		if (json) {
			pyu_strbuf_printf(&sb, "%s{\"address\": \"0x%" PRIx64 "\", \"type\": ",
					  k++ ? ", " : "", r->addr);
			pyu_strbuf_json_cstr(&sb, tn ? tn : "");
			pyu_strbuf_puts(&sb, ", \"repr\": ");
			pyu_strbuf_json_cstr(&sb, rr ? rr : "");
			pyu_strbuf_puts(&sb, ", \"via\": ");
			pyu_strbuf_json_cstr(&sb, via ? via : "");
			pyu_strbuf_puts(&sb, "}");
		} else {
			pyu_strbuf_printf(&sb, "  0x%-14" PRIx64 " %-20s %-24s %s\n", r->addr,
					  tn ? tn : "?", via ? via : "?", rr ? rr : "?");
		}
		free(tn);
		free(via);
		free(rr);
	}
	free(dup);
	for (uint32_t i = 0; i < roots.count; i++) {
		const struct pyu_heap_root *rt = &roots.items[i];
		if (rt->kind != PYU_ROOT_LOCAL || rt->addr != addr)
			continue;
		const struct pyu_frame_info *f = &s->threads[rt->thread].frames[rt->frame];
		const struct pyu_code_info *code = &s->codes[f->code];
		struct pyu_strbuf fb;
		char *frepr = NULL, *via = NULL;
		pyu_strbuf_init(&fb, 4 * BIG_REPR_OUTPUT);
		// As Python writes a frame's repr.
		pyu_strbuf_printf(&fb, "<frame at 0x%" PRIx64 ", file '", f->frame_address);
		pyu_strbuf_text(&fb, code->filename, strlen(code->filename));
		pyu_strbuf_printf(&fb, "', line %d, code ", (int)f->loc.line);
		pyu_strbuf_text(&fb, code->name, strlen(code->name));
		pyu_strbuf_putc(&fb, '>');
		pyu_error_destroy(pyu_strbuf_finish(&fb, &frepr));
		pyu_strbuf_init(&fb, PYU_LOCAL_NAME_MAX * 4 + 64);
		pyu_strbuf_puts(&fb, "local ");
		pyu_strbuf_text(&fb, rt->local, strlen(rt->local));
		pyu_strbuf_printf(&fb, " of frame #%d", (int)rt->frame);
		pyu_error_destroy(pyu_strbuf_finish(&fb, &via));
		uint64_t tid = s->threads[rt->thread].thread_id;
		if (json) {
			pyu_strbuf_printf(&sb, "%s{\"address\": \"0x%" PRIx64 "\", \"type\": "
					  "\"frame\", \"repr\": ", k++ ? ", " : "", f->frame_address);
			pyu_strbuf_json_cstr(&sb, frepr ? frepr : "");
			pyu_strbuf_puts(&sb, ", \"via\": ");
			pyu_strbuf_json_cstr(&sb, via ? via : "");
			pyu_strbuf_printf(&sb, ", \"thread_id\": %" PRIu64 "}", tid);
		} else {
			pyu_strbuf_printf(&sb, "  0x%-14" PRIx64 " %-20s %-24s %s (thread 0x%" PRIx64
					  ")\n", f->frame_address, "frame", via ? via : "?",
					  frepr ? frepr : "?", tid);
		}
		free(frepr);
		free(via);
	}
	pyu_heap_roots_clear(&roots);
	if (json)
		pyu_strbuf_puts(&sb, "]}\n");
	else if (h->refs_dropped)
		pyu_strbuf_printf(&sb, "(%" PRIu64 " more referrers not kept)\n", h->refs_dropped);
	pyu_values_destroy(v);
	pyu_heap_destroy(h);
	return pyu_strbuf_finish(&sb, ret);
}

// ---- a path from a root ----------------------------------------------------------------------

// Whether @key (a repr) is 'name' with name an identifier: then ".__dict__['name']" is ".name".
static bool identifier_repr(const char *key)
{
	size_t len = key ? strlen(key) : 0;
	if (len < 3 || key[0] != '\'' || key[len - 1] != '\'')
		return false;
	for (size_t i = 1; i + 1 < len; i++) {
		char ch = key[i];
		bool alpha = (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || ch == '_';
		if (!alpha && !(i > 1 && ch >= '0' && ch <= '9'))
			return false;
	}
	return true;
}

// The expression after each step of @p (exprs[k]: NULL for a ".__dict__" step folded into
// the ".name" after it), the first the root's. False: out of memory.
static bool path_exprs(struct pyu_values *v, const struct pyu_heap_path *p, const char *root,
		       char **exprs)
{
	struct pyu_strbuf e;
	pyu_strbuf_init(&e, PYU_STRBUF_MAX);
	pyu_strbuf_puts(&e, root);
	bool ok = true;
	for (uint32_t k = 0; ok && k < p->count; k++) {
		if (k) {
			const struct pyu_heap_ref *r = &p->steps[k - 1];
			char *key = NULL;
			if (r->via == PYU_VIA_DICT_VALUE && k >= 2 &&
			    p->steps[k - 2].via == PYU_VIA_FIELD &&
			    !strcmp(p->steps[k - 2].field, "__dict__") && exprs[k - 1] &&
			    identifier_repr(key = short_repr(v, r->key)) &&
			    e.len >= strlen(".__dict__")) {
				// obj.__dict__['name'] is obj.name: drop the ".__dict__" just added.
				free(exprs[k - 1]);
				exprs[k - 1] = NULL;
				e.len -= strlen(".__dict__");
				e.buf[e.len] = 0;
				pyu_strbuf_printf(&e, ".%.*s", (int)(strlen(key) - 2), key + 1);
			} else if (r->via == PYU_VIA_FIELD && !strcmp(r->field, "cell_contents") &&
				   k >= 2 && p->steps[k - 2].via == PYU_VIA_LOCAL && exprs[k - 1]) {
				// f_locals['x'] of a cell variable is what its cell holds: the cell
				// step is folded into the local's.
				free(exprs[k - 1]);
				exprs[k - 1] = NULL;
			} else {
				via_text(v, r, &e, true);
			}
			free(key);
		}
		ok = !e.nomem && (exprs[k] = strdup(e.buf ? e.buf : "")) != NULL;
	}
	pyu_strbuf_release(&e);
	return ok;
}

struct pyu_error *pyu_format_heap_path(struct pyu_stacks *s, uint64_t addr, uint32_t flags,
				       char **ret)
{
	if (!s || !ret)
		return pyu_error_create(PYU_ERR_ARGUMENT, "no stacks");
	if (!addr)
		return pyu_error_create(PYU_ERR_ARGUMENT, "no object address");
	struct pyu_heap_roots roots;
	struct pyu_error *err = pyu_heap_roots_collect(s, &roots);
	if (err)
		return err;
	struct pyu_heap *h;
	struct pyu_heap_path p;
	err = pyu_heap_path_find(s, &roots, addr, &h, &p);
	if (err) {
		pyu_heap_roots_clear(&roots);
		return err;
	}
	if (!p.count || !h->want_found) {
		err = pyu_error_create(PYU_ERR_NOT_FOUND, "no chain of references from a root (%u "
				       "roots: modules, frame locals, tasks' coroutine locals, "
				       "exceptions) to an object at 0x%"
				       PRIx64 " (%" PRIu64 " objects looked at%s)", roots.count,
				       addr, h->objects, h->error_count ? ", with errors" : "");
		pyu_heap_path_clear(&p);
		pyu_heap_roots_clear(&roots);
		pyu_heap_destroy(h);
		return err;
	}
	uint64_t retained = 0;
	bool has_retained = false;
	if (flags & PYU_FMT_RETAINED) {
		struct pyu_heap *full;
		struct pyu_heap_dominators *dom = NULL;
		err = pyu_heap_dominators_compute(s, &roots, 0, addr, &full, &dom);
		if (err) {
			pyu_heap_path_clear(&p);
			pyu_heap_roots_clear(&roots);
			pyu_heap_destroy(h);
			return err;
		}
		has_retained = dom && pyu_heap_retained(dom, addr, &retained);
		if (full->interrupted) // Ctrl-C while the retained sizes were computed
			h->partial = h->interrupted = true;
		pyu_heap_dominators_destroy(dom);
		pyu_heap_destroy(full);
	}
	struct pyu_values *v = NULL;
	err = repr_values(s, &v);
	char **exprs = err ? NULL : calloc(p.count, sizeof(*exprs));
	const struct pyu_heap_root *root = &roots.items[p.root < roots.count ? p.root : 0];
	if (!err && (!exprs || !path_exprs(v, &p, root->expr, exprs)))
		err = &pyu_error_nomem;
	struct pyu_strbuf sb;
	pyu_strbuf_init(&sb, PYU_STRBUF_MAX);
	if (!err) {
		bool json = flags & PYU_FMT_JSON;
		const char *tname = h->types[h->want_type].name;
		const char *full = exprs[p.count - 1];
		char *repr = short_repr(v, addr);
		if (json) {
			pyu_strbuf_printf(&sb, "{\"version\": 1, \"kind\": \"heap-path\", "
					  "\"object\": {\"address\": \"0x%" PRIx64 "\", \"type\": ",
					  addr);
			pyu_strbuf_json_cstr(&sb, tname);
			pyu_strbuf_printf(&sb, ", \"bytes\": %" PRIu64 ", \"repr\": ", h->want_bytes);
			pyu_strbuf_json_cstr(&sb, repr ? repr : "");
			if (flags & PYU_FMT_RETAINED)
				json_retained(&sb, has_retained ? retained : UINT64_MAX);
			pyu_strbuf_puts(&sb, "}, \"root\": ");
			pyu_strbuf_json_cstr(&sb, root->name);
			pyu_strbuf_puts(&sb, ", \"expr\": ");
			pyu_strbuf_json_cstr(&sb, full);
			pyu_strbuf_puts(&sb, ", \"path\": [");
		} else {
			pyu_strbuf_printf(&sb, "0x%" PRIx64 " %s, %" PRIu64 " bytes", addr, tname,
					  h->want_bytes);
			if (has_retained)
				pyu_strbuf_printf(&sb, " (retains %" PRIu64 ")", retained);
			pyu_strbuf_printf(&sb, ": %s\n", repr ? repr : "?");
			pyu_strbuf_text(&sb, full, strlen(full));
			pyu_strbuf_puts(&sb, "\n  from ");
			pyu_strbuf_text(&sb, root->name, strlen(root->name));
			pyu_strbuf_putc(&sb, '\n');
		}
		free(repr);
		bool first = true;
		for (uint32_t k = 0; k < p.count; k++) {
			if (!exprs[k])
				continue; // the .__dict__ folded into .name
			char *tn = NULL;
			pyu_error_destroy(pyu_value_type_name(v, p.steps[k].addr, &tn));
			if (json) {
				pyu_strbuf_printf(&sb, "%s{\"address\": \"0x%" PRIx64 "\", "
						  "\"type\": ", first ? "" : ", ", p.steps[k].addr);
				pyu_strbuf_json_cstr(&sb, tn ? tn : "");
				pyu_strbuf_puts(&sb, ", \"expr\": ");
				pyu_strbuf_json_cstr(&sb, exprs[k]);
				pyu_strbuf_puts(&sb, "}");
			} else {
				pyu_strbuf_printf(&sb, "  0x%-14" PRIx64 " %-20s ", p.steps[k].addr,
						  tn ? tn : "?");
				pyu_strbuf_text(&sb, exprs[k], strlen(exprs[k]));
				pyu_strbuf_putc(&sb, '\n');
			}
			first = false;
			free(tn);
		}
		if (json)
			pyu_strbuf_puts(&sb, "]}\n");
	}
	for (uint32_t k = 0; exprs && k < p.count; k++)
		free(exprs[k]);
	free(exprs);
	if (v)
		pyu_values_destroy(v);
	pyu_heap_path_clear(&p);
	pyu_heap_roots_clear(&roots);
	pyu_heap_destroy(h);
	if (err) {
		pyu_strbuf_release(&sb);
		return err;
	}
	return pyu_strbuf_finish(&sb, ret);
}
