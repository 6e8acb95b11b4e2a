// format_heap.c - the heap census as text and JSON (pyu_format_heap): one row per type sorted by
// bytes, under a header that says how many objects were found, how, and what was left out.
// Face layer: prints what heap.c counted; reads nothing from the target itself.
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "heap.h"
#include "include/pyunwind.h"
#include "strbuf.h"
#include "values.h"

// Bounds on the repr of each of the largest objects: one line each.
#define BIG_REPR_CHARS 60
#define BIG_REPR_ITEMS 4
#define BIG_REPR_DEPTH 2
#define BIG_REPR_OUTPUT 160

// The reprs of h->biggest (NULL where none could be made), or NULL for none at all.
static char **big_reprs(struct pyu_stacks *s, const struct pyu_heap *h)
{
	if (!h->biggest_count)
		return NULL;
	struct pyu_value_limits lim;
	pyu_value_limits_default(&lim);
	lim.chars = BIG_REPR_CHARS;
	lim.items = BIG_REPR_ITEMS;
	lim.depth = BIG_REPR_DEPTH;
	lim.output = BIG_REPR_OUTPUT;
	struct pyu_values *v;
	struct pyu_error *err = pyu_values_create(s->target, s->runtime, &lim, &v);
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

static void json_document(struct pyu_strbuf *sb, const struct pyu_stacks *s,
			  const struct pyu_heap *h, uint32_t names, struct pyu_heap_type **rows,
			  uint32_t n, char **reprs)
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
				  ", \"sized_by\": \"%s\"}", rows[i]->count, rows[i]->bytes,
				  sized_by(rows[i]));
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
		pyu_strbuf_putc(sb, '}');
	}
	pyu_strbuf_puts(sb, "]}\n");
}

static void text_document(struct pyu_strbuf *sb, const struct pyu_stacks *s,
			  const struct pyu_heap *h, uint32_t names, struct pyu_heap_type **rows,
			  uint32_t n, uint32_t shown, char **reprs)
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
	pyu_strbuf_printf(sb, "\n%12s %14s %10s %7s  %s\n", "count", "bytes", "average", "share",
			  "type");
	for (uint32_t i = 0; i < shown; i++) {
		const struct pyu_heap_type *t = rows[i];
		double share = h->bytes ? 100.0 * (double)t->bytes / (double)h->bytes : 0.0;
		pyu_strbuf_printf(sb, "%12" PRIu64 " %14" PRIu64 " %10" PRIu64 " %6.1f%%  ",
				  t->count, t->bytes, t->count ? t->bytes / t->count : 0, share);
		pyu_strbuf_text(sb, t->name, strlen(t->name));
		pyu_strbuf_puts(sb, t->size.exact ? "\n" : " (basicsize)\n");
	}
	if (shown < n)
		pyu_strbuf_printf(sb, "(%u more types: --top 0 shows them all)\n", n - shown);
	if (h->biggest_count)
		pyu_strbuf_printf(sb, "\nThe %u largest objects:\n%18s %14s  %s\n",
				  h->biggest_count, "address", "bytes", "type and repr");
	for (uint32_t i = 0; i < h->biggest_count; i++) {
		const struct pyu_heap_big *b = &h->biggest[i];
		const char *name = h->types[b->type].name;
		pyu_strbuf_printf(sb, "%#18" PRIx64 " %14" PRIu64 "  ", b->addr, b->bytes);
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
	struct pyu_error *err = pyu_heap_census(s, biggest, &h);
	if (err)
		return err;
	struct pyu_heap_type **rows = malloc((h->type_count + 1) * sizeof(*rows));
	if (!rows) {
		pyu_heap_destroy(h);
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
	struct pyu_strbuf sb;
	pyu_strbuf_init(&sb, PYU_STRBUF_MAX);
	if (flags & PYU_FMT_JSON) {
		json_document(&sb, s, h, names, rows, top && top < n ? top : n, reprs);
	} else {
		text_document(&sb, s, h, names, rows, n, top && top < n ? top : n, reprs);
	}
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

// How a referrer holds the object, as a Python expression suffix: "[3]", "['k']", ".attr".
static void via_text(struct pyu_values *v, const struct pyu_heap_ref *r, struct pyu_strbuf *sb)
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
	struct pyu_value_limits lim;
	pyu_value_limits_default(&lim);
	lim.chars = BIG_REPR_CHARS;
	lim.items = BIG_REPR_ITEMS;
	lim.depth = BIG_REPR_DEPTH;
	lim.output = BIG_REPR_OUTPUT;
	struct pyu_values *v;
	err = pyu_values_create(s->target, s->runtime, &lim, &v);
	if (err) {
		pyu_heap_destroy(h);
		return err;
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
		pyu_strbuf_printf(&sb, "%u referrer%s%s:\n", h->ref_count,
				  h->ref_count == 1 ? "" : "s",
				  h->interrupted ? " (the census was interrupted)" :
				  h->partial ? " (the census stopped at its object limit)" : "");
	}
	free(repr);
	for (uint32_t i = 0; i < h->ref_count; i++) {
		const struct pyu_heap_ref *r = &h->refs[i];
		char *tn = NULL, *via = NULL, *rr = short_repr(v, r->addr);
		pyu_error_destroy(pyu_value_type_name(v, r->addr, &tn));
		struct pyu_strbuf vb;
		pyu_strbuf_init(&vb, 4 * BIG_REPR_OUTPUT);
		via_text(v, r, &vb);
		pyu_error_destroy(pyu_strbuf_finish(&vb, &via));
		if (json) {
			pyu_strbuf_printf(&sb, "%s{\"address\": \"0x%" PRIx64 "\", \"type\": ",
					  i ? ", " : "", r->addr);
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
	if (json)
		pyu_strbuf_puts(&sb, "]}\n");
	else if (h->refs_dropped)
		pyu_strbuf_printf(&sb, "(%" PRIu64 " more referrers not kept)\n", h->refs_dropped);
	pyu_values_destroy(v);
	pyu_heap_destroy(h);
	return pyu_strbuf_finish(&sb, ret);
}
