// codes.c - code objects, each read once per snapshot and cached by address: name, qualified
// name, file name, first line, bytecode length and a copy of the line table (validated: the type
// is the code type, lengths are capped), and each table decoded once for the lookups of every
// frame that runs it (a 1,000-deep recursion reads and decodes one code object).
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "bytes.h"
#include "code_memo.h"
#include "objects.h"
#include "runtime.h"

// Tables up to this size are decoded once per code object for O(log n) lookups; larger ones
// are looked up directly (decoding would allocate ranges proportional to the table).
#define DECODE_MAX_TABLE (256u << 10)
#define PYU_CODE_PART_PREFETCH 64u // bytes of each name and the line table worth having at hand

struct code_extra {
	int32_t firsttraceable;           // code-unit index; 0 when the version has none
	bool decoded, decode_failed;
	struct pyu_line_range *ranges;
	struct pyu_linetable_decoded dec;
	// The last lookup: a recursion asks for the same instruction of one code object again and
	// again (valid when has_last).
	bool has_last;
	int64_t last_offset;
	struct pyu_location last_loc;
};

struct pyu_code_cache {
	uint64_t *keys;     // code object addresses; 0 = empty slot
	int32_t *values;    // index into pyu_stacks.codes
	size_t slots;       // power of two
	size_t used;
	struct code_extra *extra; // parallel to pyu_stacks.codes
	size_t extra_cap;
	size_t extra_count; // entries set (each as its code object is added); the rest is not
	struct pyu_types types; // PyCode_Type once known (a symbol, or learnt by structure)
	uint64_t copied;    // bytes of names and tables held by the snapshot, against a budget
	uint64_t last_addr; // the code object of the last lookup (0: none), at index last_index:
	int32_t last_index; // the frames of a recursion ask for one code object again and again
};

struct pyu_error *pyu_code_cache_create(const struct pyu_types *types,
					struct pyu_code_cache **ret)
{
	struct pyu_code_cache *c = calloc(1, sizeof(*c));
	if (!c)
		return &pyu_error_nomem;
	if (types)
		c->types = *types;
	c->slots = 64; // doubles as it fills: most snapshots run a few dozen code objects
	c->keys = calloc(c->slots, sizeof(*c->keys));
	c->values = calloc(c->slots, sizeof(*c->values));
	if (!c->keys || !c->values) {
		pyu_code_cache_destroy(c);
		return &pyu_error_nomem;
	}
	*ret = c;
	return NULL;
}

void pyu_code_cache_destroy(struct pyu_code_cache *c)
{
	if (!c)
		return;
	for (size_t i = 0; i < c->extra_count; i++)
		free(c->extra[i].ranges);
	free(c->extra);
	free(c->keys);
	free(c->values);
	free(c);
}

static size_t slot_of(const struct pyu_code_cache *c, uint64_t addr)
{
	uint64_t h = addr * 0x9e3779b97f4a7c15ull;
	size_t i = (size_t)(h >> 32) & (c->slots - 1);
	while (c->keys[i] && c->keys[i] != addr)
		i = (i + 1) & (c->slots - 1);
	return i;
}

static struct pyu_error *cache_put(struct pyu_code_cache *c, uint64_t addr, int32_t index)
{
	if ((c->used + 1) * 2 > c->slots) {
		size_t n = c->slots * 2;
		uint64_t *keys = calloc(n, sizeof(*keys));
		int32_t *values = calloc(n, sizeof(*values));
		if (!keys || !values) {
			free(keys);
			free(values);
			return &pyu_error_nomem;
		}
		uint64_t *ok = c->keys;
		int32_t *ov = c->values;
		size_t os = c->slots;
		c->keys = keys;
		c->values = values;
		c->slots = n;
		for (size_t i = 0; i < os; i++) {
			if (ok[i]) {
				size_t s = slot_of(c, ok[i]);
				c->keys[s] = ok[i];
				c->values[s] = ov[i];
			}
		}
		free(ok);
		free(ov);
	}
	size_t s = slot_of(c, addr);
	c->keys[s] = addr;
	c->values[s] = index;
	c->used++;
	return NULL;
}

static void free_code_info(struct pyu_code_info *ci)
{
	pyu_code_info_free(ci);
}

// Reads the code object at @addr into a new pyu_code_info. On error, nothing is added.
static struct pyu_error *read_code(struct pyu_walk *w, uint64_t addr, struct pyu_code_info *ci,
				   int32_t *firsttraceable)
{
	const struct pyu_layout *l = &w->rt->layout;
	uint8_t buf[PYU_LAYOUT_MAX_STRUCT];
	struct pyu_error *err = pyu_target_read(w->t, addr, buf, (size_t)l->code.size);
	if (err)
		return pyu_error_wrap(err, "reading the code object at 0x%" PRIx64, addr);
	err = pyu_type_check(&w->codes->types, w->t, l, PYU_TYPE_CODE, pyu_get_u64(buf, l->ob_type),
			     addr);
	if (err)
		return err;
	if (w->memo && pyu_code_memo_get(w->memo, addr, buf, ci, firsttraceable))
		return NULL; // the same code object as in an earlier snapshot (code_memo.c)
	memset(ci, 0, sizeof(*ci));
	ci->address = addr;
	ci->firstlineno = pyu_get_i32(buf, l->code.firstlineno);
	ci->format = l->linetable;
	if (ci->firstlineno < 0)
		return pyu_error_create(PYU_ERR_CORRUPT,
					"code object at 0x%" PRIx64 ": co_firstlineno %" PRId32,
					addr, ci->firstlineno);
	err = pyu_code_bytecode_len(w->t, l, buf, PYU_CODE_UNITS_MAX, &ci->code_len);
	if (err)
		return pyu_error_wrap(err, "the code object at 0x%" PRIx64, addr);
	*firsttraceable = l->code.firsttraceable != PYU_NO_FIELD
		? pyu_get_i32(buf, l->code.firsttraceable) : 0;
	// The names and the line table sit on pages of their own: gathered in one read (where
	// the target can), the reads below then come from the cache.
	uint64_t parts[4];
	size_t np = 0;
	parts[np++] = pyu_get_u64(buf, l->code.name);
	parts[np++] = pyu_get_u64(buf, l->code.filename);
	parts[np++] = pyu_get_u64(buf, l->code.linetable);
	if (l->has_qualname && l->code.qualname != PYU_NO_FIELD)
		parts[np++] = pyu_get_u64(buf, l->code.qualname);
	pyu_target_prefetch_scattered(w->t, parts, np, PYU_CODE_PART_PREFETCH);
	err = pyu_read_str(w->t, l, pyu_get_u64(buf, l->code.name), PYU_NAME_MAX, &ci->name);
	if (!err)
		err = pyu_read_str(w->t, l, pyu_get_u64(buf, l->code.filename), PYU_NAME_MAX,
				   &ci->filename);
	if (!err && l->has_qualname && l->code.qualname != PYU_NO_FIELD)
		err = pyu_read_str(w->t, l, pyu_get_u64(buf, l->code.qualname), PYU_NAME_MAX,
				   &ci->qualname);
	if (!err)
		err = pyu_read_bytes(w->t, l, pyu_get_u64(buf, l->code.linetable), PYU_TABLE_MAX,
				     &ci->table, &ci->table_len);
	if (err) {
		free_code_info(ci);
		return pyu_error_wrap(err, "reading the code object at 0x%" PRIx64, addr);
	}
	pyu_code_memo_put(w->memo, addr, buf, ci, *firsttraceable);
	return NULL;
}

struct pyu_error *pyu_code_get(struct pyu_walk *w, uint64_t addr, int32_t *ret)
{
	struct pyu_code_cache *c = w->codes;
	if (addr == 0 || (addr & 7))
		return pyu_error_create(PYU_ERR_CORRUPT, "bad code object pointer 0x%" PRIx64,
					addr);
	if (addr == c->last_addr) {
		*ret = c->last_index;
		return NULL;
	}
	size_t s = slot_of(c, addr);
	if (c->keys[s] == addr) {
		*ret = c->last_index = c->values[s];
		c->last_addr = addr;
		return NULL;
	}
	struct pyu_stacks *st = w->s;
	if (st->code_count >= PYU_MAX_CODES)
		return pyu_error_create(PYU_ERR_CORRUPT, "more than %u code objects",
					PYU_MAX_CODES);
	struct pyu_code_info ci;
	int32_t ft;
	struct pyu_error *err = read_code(w, addr, &ci, &ft);
	if (err)
		return err;
	// Each object is capped, but a damaged target could still offer many large ones.
	uint64_t size = ci.table_len + strlen(ci.name) + strlen(ci.filename) +
			(ci.qualname ? strlen(ci.qualname) : 0);
	if (c->copied + size > PYU_COPIED_MAX) {
		free_code_info(&ci);
		return pyu_error_create(PYU_ERR_CORRUPT,
					"code object at 0x%" PRIx64 ": more than %u MiB of names and "
					"line tables in one snapshot", addr, PYU_COPIED_MAX >> 20);
	}
	c->copied += size;
	if (st->code_count == c->extra_cap) {
		size_t n = c->extra_cap ? c->extra_cap * 2 : 64;
		struct pyu_code_info *codes = realloc(st->codes, n * sizeof(*codes));
		if (codes)
			st->codes = codes;
		struct code_extra *extra = codes ? realloc(c->extra, n * sizeof(*extra)) : NULL;
		if (!extra) {
			free_code_info(&ci);
			return &pyu_error_nomem;
		}
		c->extra = extra;
		c->extra_cap = n;
	}
	int32_t index = (int32_t)st->code_count;
	err = cache_put(c, addr, index);
	if (err) {
		free_code_info(&ci);
		return err;
	}
	st->codes[index] = ci;
	c->extra[index] = (struct code_extra){.firsttraceable = ft};
	c->extra_count = (size_t)index + 1;
	st->code_count++;
	*ret = c->last_index = index;
	c->last_addr = addr;
	return NULL;
}

void pyu_code_prefetch(struct pyu_walk *w, const uint64_t *addrs, size_t n)
{
	const struct pyu_layout *l = &w->rt->layout;
	struct pyu_code_cache *c = w->codes;
	uint64_t fresh[PYU_CODE_PREFETCH_MAX], parts[4 * PYU_CODE_PREFETCH_MAX];
	size_t m = 0, np = 0;
	// A snapshot with a memo gathers the headers it knows (stacks.c), and needs no names of
	// those that are the same.
	if (w->memo || l->code.size <= 0 || l->code.size > 4096)
		return;
	for (size_t i = 0; i < n && m < PYU_CODE_PREFETCH_MAX; i++)
		if (addrs[i] && !(addrs[i] & 7) && c->keys[slot_of(c, addrs[i])] != addrs[i])
			fresh[m++] = addrs[i];
	if (m == 0)
		return;
	pyu_target_prefetch_scattered(w->t, fresh, m, (size_t)l->code.size);
	int32_t fields[4] = {l->code.name, l->code.filename, l->code.linetable,
			     l->has_qualname ? l->code.qualname : PYU_NO_FIELD};
	for (size_t i = 0; i < m; i++)
		for (size_t f = 0; f < 4; f++)
			if (fields[f] != PYU_NO_FIELD &&
			    pyu_target_peek_u64(w->t, fresh[i] + (uint64_t)fields[f], &parts[np]))
				np++;
	pyu_target_prefetch_scattered(w->t, parts, np, PYU_CODE_PART_PREFETCH);
}

struct pyu_location pyu_code_locate(struct pyu_walk *w, int32_t index, int64_t offset)
{
	struct pyu_code_info *ci = &w->s->codes[index];
	struct code_extra *x = &w->codes->extra[index];
	struct pyu_linetable lt = {ci->table, ci->table_len, ci->firstlineno, ci->format,
				   ci->code_len};
	struct pyu_location loc = {PYU_NO_LINE, PYU_NO_LINE, PYU_NO_COLUMN, PYU_NO_COLUMN};
	if (x->has_last && x->last_offset == offset)
		return x->last_loc;
	if (pyu_code_memo_locate(w->memo, ci->address, offset, &loc)) {
		x->has_last = true;
		x->last_offset = offset;
		x->last_loc = loc;
		return loc;
	}
	if (!x->decoded && !x->decode_failed) {
		x->decode_failed = true;
		if (ci->table_len <= DECODE_MAX_TABLE) {
			size_t cap = pyu_linetable_max_ranges(&lt);
			x->ranges = malloc(cap * sizeof(*x->ranges));
			if (x->ranges) {
				enum pyu_lt_status st = pyu_linetable_decode(&lt, x->ranges, cap,
									     &x->dec);
				if (st == PYU_LT_OK || st == PYU_LT_CORRUPT) {
					x->decoded = true;
					x->decode_failed = false;
				}
			}
		}
	}
	enum pyu_lt_status st = x->decoded ? pyu_linetable_decoded_lookup(&x->dec, offset, &loc)
					   : pyu_linetable_lookup(&lt, offset, &loc);
	if (st != PYU_LT_OK)
		loc = (struct pyu_location){PYU_NO_LINE, PYU_NO_LINE, PYU_NO_COLUMN,
					    PYU_NO_COLUMN};
	x->has_last = true;
	x->last_offset = offset;
	x->last_loc = loc;
	pyu_code_memo_note_location(w->memo, ci->address, offset, loc);
	return loc;
}

int32_t pyu_code_firsttraceable(const struct pyu_walk *w, int32_t index)
{
	return w->codes->extra[index].firsttraceable;
}
