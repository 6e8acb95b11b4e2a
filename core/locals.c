// locals.c - a frame's locals as frame.f_locals has them. 2.7 - 3.10: fast-local slots of the
// frame object named by co_varnames, then co_cellvars and co_freevars (cells); 3.11+: the
// interpreter frame's localsplus slots named by co_localsplusnames and typed by
// co_localspluskinds (3.14+: tagged stack references). Module and class bodies keep their
// locals in a dict, which this file only locates. Every count read from the target is bounded.
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "bytes.h"
#include "locals.h"
#include "objects.h"

const char *pyu_local_kind_name(enum pyu_local_kind kind)
{
	switch (kind) {
	case PYU_LOCAL_ARGUMENT: return "argument";
	case PYU_LOCAL_LOCAL: return "local";
	case PYU_LOCAL_CELL: return "cell";
	case PYU_LOCAL_FREE: return "free";
	case PYU_LOCAL_DICT: return "dict";
	}
	return "local";
}

struct pyu_error *pyu_locals_add(struct pyu_locals *ls, const char *name,
				 enum pyu_local_kind kind, uint64_t address)
{
	if (ls->count >= PYU_LOCALS_MAX) {
		ls->truncated = true;
		return NULL;
	}
	// Grows in powers of two: count is the capacity's measure.
	if ((ls->count & (ls->count - 1)) == 0) {
		uint32_t cap = ls->count ? ls->count * 2 : 8;
		struct pyu_local *items = realloc(ls->items, cap * sizeof(*items));
		if (!items)
			return &pyu_error_nomem;
		ls->items = items;
	}
	char *copy = strdup(name);
	if (!copy)
		return &pyu_error_nomem;
	ls->items[ls->count++] = (struct pyu_local){copy, kind, address, 0};
	return NULL;
}

void pyu_locals_clear(struct pyu_locals *ls)
{
	for (uint32_t i = 0; i < ls->count; i++)
		free(ls->items[i].name);
	free(ls->items);
	memset(ls, 0, sizeof(*ls));
}

// The names of a tuple of str (co_varnames, co_localsplusnames, ...): *ret[i] is NULL for a
// name that cannot be read. At most PYU_LOCALS_MAX names. On error, *ret is unchanged.
static struct pyu_error *read_names(struct pyu_target *t, const struct pyu_layout *l,
				    uint64_t tuple, char ***ret, uint32_t *ret_count)
{
	uint64_t n = 0;
	if (tuple) {
		struct pyu_error *err = pyu_target_read_u64(t, tuple + (uint64_t)l->ob_size, &n);
		if (err)
			return pyu_error_wrap(err, "reading the names tuple at 0x%" PRIx64, tuple);
		if (n > PYU_LOCALS_MAX)
			return pyu_error_create(PYU_ERR_CORRUPT,
						"names tuple at 0x%" PRIx64 " claims %" PRIu64
						" items", tuple, n);
	}
	char **names = calloc(n ? n : 1, sizeof(*names));
	if (!names)
		return &pyu_error_nomem;
	uint64_t items[64];
	for (uint64_t i = 0; i < n; i += 64) {
		uint64_t chunk = n - i < 64 ? n - i : 64;
		struct pyu_error *err = pyu_target_read(t, tuple + (uint64_t)l->tuple_item + 8 * i,
							items, 8 * chunk);
		if (err) {
			pyu_error_destroy(err);
			break;
		}
		for (uint64_t k = 0; k < chunk; k++) {
			err = pyu_read_str(t, l, items[k], PYU_LOCAL_NAME_MAX, &names[i + k]);
			if (err == &pyu_error_nomem) {
				for (uint64_t j = 0; j < n; j++)
					free(names[j]);
				free(names);
				return err;
			}
			pyu_error_destroy(err);
		}
	}
	*ret = names;
	*ret_count = (uint32_t)n;
	return NULL;
}

static void free_names(char **names, uint32_t n)
{
	for (uint32_t i = 0; names && i < n; i++)
		free(names[i]);
	free(names);
}

// The names (and 3.11+ kinds) of a code object's slots: 2.7 - 3.10 co_varnames, co_cellvars
// and co_freevars in names[0..2]; 3.11+ co_localsplusnames in names[0] with kinds.
struct code_names {
	uint64_t code; // 0 = free cache slot
	char **names[3];
	uint32_t count[3];
	uint8_t *kinds;
	size_t nkinds;
};

#define LOCALS_CACHE 256 // code objects whose names a cache keeps (direct-mapped)

struct pyu_locals_cache {
	struct code_names codes[LOCALS_CACHE];
};

static void code_names_clear(struct code_names *cn)
{
	for (int i = 0; i < 3; i++)
		free_names(cn->names[i], cn->count[i]);
	free(cn->kinds);
	memset(cn, 0, sizeof(*cn));
}

struct pyu_locals_cache *pyu_locals_cache_create(void)
{
	return calloc(1, sizeof(struct pyu_locals_cache));
}

void pyu_locals_cache_destroy(struct pyu_locals_cache *c)
{
	if (!c)
		return;
	for (size_t i = 0; i < LOCALS_CACHE; i++)
		code_names_clear(&c->codes[i]);
	free(c);
}

// Reads the slot names of the code object at @code (its fields in @cbuf) into *ret. On error,
// *ret is unchanged.
static struct pyu_error *read_code_names(struct pyu_target *t, const struct pyu_layout *l,
					 uint64_t code, const uint8_t *cbuf, bool objects,
					 struct code_names *ret)
{
	struct code_names cn = {code, {NULL, NULL, NULL}, {0, 0, 0}, NULL, 0};
	struct pyu_error *err;
	if (objects) {
		err = read_names(t, l, pyu_get_u64(cbuf, l->code.varnames), &cn.names[0],
				 &cn.count[0]);
		if (!err)
			err = read_names(t, l, pyu_get_u64(cbuf, l->code.cellvars), &cn.names[1],
					 &cn.count[1]);
		if (!err)
			err = read_names(t, l, pyu_get_u64(cbuf, l->code.freevars), &cn.names[2],
					 &cn.count[2]);
	} else {
		err = read_names(t, l, pyu_get_u64(cbuf, l->code.localsplusnames), &cn.names[0],
				 &cn.count[0]);
		if (!err)
			err = pyu_read_bytes(t, l, pyu_get_u64(cbuf, l->code.localspluskinds),
					     PYU_LOCALS_MAX, &cn.kinds, &cn.nkinds);
	}
	if (err) {
		code_names_clear(&cn);
		return err;
	}
	*ret = cn;
	return NULL;
}

// The names of @code's slots, from @cache when it has them (then *ret points into it) or read
// now (into @tmp, which the caller clears). On error, *ret is unchanged.
static struct pyu_error *code_names_of(struct pyu_target *t, const struct pyu_layout *l,
				       struct pyu_locals_cache *cache, uint64_t code,
				       const uint8_t *cbuf, bool objects, struct code_names *tmp,
				       const struct code_names **ret)
{
	struct code_names *slot = cache ? &cache->codes[(code >> 4) % LOCALS_CACHE] : NULL;
	if (slot && slot->code == code) {
		*ret = slot;
		return NULL;
	}
	struct pyu_error *err = read_code_names(t, l, code, cbuf, objects, tmp);
	if (err)
		return err;
	if (slot) {
		code_names_clear(slot);
		*slot = *tmp;
		memset(tmp, 0, sizeof(*tmp));
		*ret = slot;
	} else {
		*ret = tmp;
	}
	return NULL;
}

#define TPFLAGS_HEAPTYPE (1ull << 9)
#define TPFLAGS_BASETYPE (1ull << 10)
#define TPFLAGS_HAVE_GC (1ull << 14)

// Whether the object at @addr is a cell: its type is named "cell" or, where the name cannot
// be read (a core without the interpreter's read-only data), its type has the cell type's
// shape: static, final, collected, the size of PyCellObject (which sets float apart, of the
// same size but subclassable and not collected). Cannot fail: false when unreadable.
static bool is_cell(struct pyu_target *t, const struct pyu_layout *l, uint64_t addr)
{
	uint64_t type, name, flags, size[2];
	char text[8];
	struct pyu_error *err = pyu_target_read_u64(t, addr + (uint64_t)l->ob_type, &type);
	if (!err)
		err = pyu_target_read_u64(t, type + (uint64_t)l->type_tp_name, &name);
	if (err) {
		pyu_error_destroy(err);
		return false;
	}
	if ((err = pyu_target_read(t, name, text, 5)) == NULL)
		return memcmp(text, "cell", 5) == 0;
	pyu_error_destroy(err);
	// tp_basicsize and tp_itemsize follow tp_name in every version.
	err = pyu_target_read(t, type + (uint64_t)l->type_tp_name + 8, size, sizeof(size));
	if (!err)
		err = pyu_target_read_u64(t, type + (uint64_t)l->type_tp_flags, &flags);
	if (err) {
		pyu_error_destroy(err);
		return false;
	}
	return size[0] == (uint64_t)l->cell_ref + 8 && size[1] == 0 &&
	       (flags & (TPFLAGS_HEAPTYPE | TPFLAGS_BASETYPE | TPFLAGS_HAVE_GC)) == TPFLAGS_HAVE_GC;
}

// The object a cell holds; 0 for an empty or unreadable cell. Cannot fail.
static uint64_t cell_contents(struct pyu_target *t, const struct pyu_layout *l, uint64_t cell)
{
	uint64_t v = 0;
	struct pyu_error *err = cell ? pyu_target_read_u64(t, cell + (uint64_t)l->cell_ref, &v)
				     : NULL;
	if (err) {
		pyu_error_destroy(err);
		return 0;
	}
	return v;
}

// Reads @n slots at @addr into @slots, untagging 3.14+ stack references (the NULL reference
// and non-object tags become 0). Slots that cannot be read are 0. Cannot fail.
static void read_slots(struct pyu_target *t, const struct pyu_layout *l, uint64_t addr,
		       uint64_t *slots, uint32_t n)
{
	struct pyu_error *err = n ? pyu_target_read(t, addr, slots, 8 * (size_t)n) : NULL;
	if (err) {
		pyu_error_destroy(err);
		memset(slots, 0, 8 * (size_t)n);
		return;
	}
	if (!l->stackref_mask)
		return;
	for (uint32_t i = 0; i < n; i++)
		slots[i] = (slots[i] & 2) ? 0 : slots[i] & ~l->stackref_mask;
}

// Number of parameters: positional (incl. positional-only), keyword-only, *args, **kwargs.
static uint32_t parameter_count(const uint8_t *code, const struct pyu_layout *l)
{
	int32_t flags = pyu_get_i32(code, l->code.flags);
	int64_t n = pyu_get_i32(code, l->code.argcount);
	if (l->code.kwonlyargcount != PYU_NO_FIELD)
		n += pyu_get_i32(code, l->code.kwonlyargcount);
	n += (flags & PYU_CO_VARARGS) != 0;
	n += (flags & PYU_CO_VARKEYWORDS) != 0;
	return n < 0 ? 0 : n > PYU_LOCALS_MAX ? PYU_LOCALS_MAX : (uint32_t)n;
}

// 2.7 - 3.10: co_varnames slots, then a cell per co_cellvars and per co_freevars name. An
// argument that is also a cell variable is reported once, as an argument, with the cell's
// value (3.x moves it into the cell and clears its slot; 2.7 copies it).
static struct pyu_error *frame_object_locals(struct pyu_target *t, const struct pyu_layout *l,
					     uint64_t frame, const uint8_t *code,
					     const struct code_names *cn, uint32_t max_items,
					     struct pyu_locals *ls)
{
	char *const *var = cn->names[0], *const *cellv = cn->names[1], *const *freev = cn->names[2];
	uint32_t nvar = cn->count[0], ncell = cn->count[1], nfree = cn->count[2];
	struct pyu_error *err = NULL;
	int32_t nlocals = pyu_get_i32(code, l->code.nlocals);
	if (nlocals < 0 || (uint32_t)nlocals != nvar)
		err = pyu_error_create(PYU_ERR_CORRUPT, "co_nlocals %" PRId32 " but %" PRIu32
				       " co_varnames", nlocals, nvar);
	uint64_t *slots = NULL;
	uint32_t total = nvar + ncell + nfree;
	if (!err && !(slots = calloc(total ? 2 * (size_t)total : 1, sizeof(*slots))))
		err = &pyu_error_nomem;
	if (err)
		goto out;
	read_slots(t, l, frame + (uint64_t)l->frame.f_localsplus, slots, total);
	uint64_t *cells = slots + total; // the cells themselves
	for (uint32_t i = nvar; i < total; i++) {
		cells[i] = slots[i];
		slots[i] = cell_contents(t, l, slots[i]);
	}
	uint32_t params = parameter_count(code, l);
	for (uint32_t i = 0; i < total && !err; i++) {
		const char *name = i < nvar ? var[i] : i < nvar + ncell ? cellv[i - nvar]
									: freev[i - nvar - ncell];
		uint64_t value = slots[i], cell = i < nvar ? 0 : cells[i];
		if (!name)
			continue;
		enum pyu_local_kind kind = i < nvar ? (i < params ? PYU_LOCAL_ARGUMENT : PYU_LOCAL_LOCAL)
				       : i < nvar + ncell ? PYU_LOCAL_CELL : PYU_LOCAL_FREE;
		if (i < nvar) {
			// A variable that is also a cell lives in the cell.
			for (uint32_t c = 0; c < ncell; c++)
				if (cellv[c] && !strcmp(cellv[c], name)) {
					value = slots[nvar + c];
					cell = cells[nvar + c];
					break;
				}
		} else if (i < nvar + ncell) {
			bool is_var = false;
			for (uint32_t v = 0; v < nvar && !is_var; v++)
				is_var = var[v] && !strcmp(var[v], name);
			if (is_var)
				continue; // reported with the variables
		}
		if (!value)
			continue;
		if (max_items && ls->count >= max_items) {
			ls->truncated = true;
			break;
		}
		uint32_t before = ls->count;
		err = pyu_locals_add(ls, name, kind, value);
		if (!err && ls->count > before)
			ls->items[before].cell = cell;
	}
out:
	free(slots);
	return err;
}

// 3.11+: localsplus slots with their kinds.
static struct pyu_error *interpreter_frame_locals(struct pyu_target *t,
						  const struct pyu_layout *l, uint64_t frame,
						  const uint8_t *code, const struct code_names *cn,
						  uint32_t max_items, struct pyu_locals *ls)
{
	char *const *names = cn->names[0];
	uint32_t n = cn->count[0];
	const uint8_t *kinds = cn->kinds;
	size_t nkinds = cn->nkinds;
	uint64_t *slots = NULL;
	struct pyu_error *err = NULL;
	int32_t nplus = pyu_get_i32(code, l->code.nlocalsplus);
	if (nkinds != n || nplus < 0 || (uint32_t)nplus != n)
		err = pyu_error_create(PYU_ERR_CORRUPT,
				       "%" PRIu32 " local names, %zu kinds, co_nlocalsplus %" PRId32,
				       n, nkinds, nplus);
	if (!err && !(slots = calloc(n ? n : 1, sizeof(*slots))))
		err = &pyu_error_nomem;
	if (err)
		goto out;
	read_slots(t, l, frame + (uint64_t)l->iframe.localsplus, slots, n);
	uint32_t params = parameter_count(code, l);
	for (uint32_t i = 0; i < n && !err; i++) {
		uint8_t k = kinds[i];
		uint64_t value = slots[i];
		if (!names[i] || !value || (k & PYU_CO_FAST_HIDDEN))
			continue;
		enum pyu_local_kind kind = PYU_LOCAL_LOCAL;
		uint64_t cell = 0;
		if (k & PYU_CO_FAST_FREE) {
			cell = value;
			value = cell_contents(t, l, value);
			kind = PYU_LOCAL_FREE;
		} else if (k & PYU_CO_FAST_CELL) {
			// Before MAKE_CELL ran, an argument's slot still holds the raw value.
			if (is_cell(t, l, value)) {
				cell = value;
				value = cell_contents(t, l, value);
			}
			kind = PYU_LOCAL_CELL;
		}
		if (i < params)
			kind = PYU_LOCAL_ARGUMENT;
		if (!value)
			continue;
		if (max_items && ls->count >= max_items) {
			ls->truncated = true;
			break;
		}
		uint32_t before = ls->count;
		err = pyu_locals_add(ls, names[i], kind, value);
		if (!err && ls->count > before)
			ls->items[before].cell = cell;
	}
out:
	free(slots);
	return err;
}

struct pyu_error *pyu_frame_locals(struct pyu_target *t, const struct pyu_layout *l,
				   struct pyu_locals_cache *cache, uint64_t frame, uint64_t code,
				   uint32_t max_items, struct pyu_locals *ret)
{
	uint8_t cbuf[PYU_LAYOUT_MAX_STRUCT], fbuf[PYU_LAYOUT_MAX_STRUCT];
	bool objects = l->chain == PYU_CHAIN_FRAME_OBJECT;
	int32_t fsize = objects ? l->frame.size : l->iframe.size;
	int32_t off_locals = objects ? l->frame.f_locals : l->iframe.f_locals;
	int32_t off_globals = objects ? l->frame.f_globals : l->iframe.f_globals;
	int32_t off_builtins = objects ? l->frame.f_builtins : l->iframe.f_builtins;
	if (l->code.flags == PYU_NO_FIELD || l->code.argcount == PYU_NO_FIELD ||
	    off_locals == PYU_NO_FIELD || off_globals == PYU_NO_FIELD ||
	    (objects ? l->frame.f_localsplus == PYU_NO_FIELD || l->code.varnames == PYU_NO_FIELD
		     : l->iframe.localsplus == PYU_NO_FIELD ||
			       l->code.localsplusnames == PYU_NO_FIELD ||
			       l->code.localspluskinds == PYU_NO_FIELD))
		return pyu_error_create(PYU_ERR_UNSUPPORTED,
					"the layout of %s does not say where locals are", l->name);
	struct pyu_error *err = pyu_target_read(t, frame, fbuf, (size_t)fsize);
	if (!err)
		err = pyu_target_read(t, code, cbuf, (size_t)l->code.size);
	if (err)
		return pyu_error_wrap(err, "reading the locals of the frame at 0x%" PRIx64, frame);
	struct pyu_locals ls = {0};
	ls.globals = pyu_get_u64(fbuf, off_globals);
	ls.builtins = off_builtins != PYU_NO_FIELD ? pyu_get_u64(fbuf, off_builtins) : 0;
	if (!(pyu_get_i32(cbuf, l->code.flags) & PYU_CO_OPTIMIZED)) {
		ls.dict = pyu_get_u64(fbuf, off_locals);
	} else {
		struct code_names tmp = {0};
		const struct code_names *cn = NULL;
		err = code_names_of(t, l, cache, code, cbuf, objects, &tmp, &cn);
		if (!err)
			err = objects ? frame_object_locals(t, l, frame, cbuf, cn, max_items, &ls)
				      : interpreter_frame_locals(t, l, frame, cbuf, cn, max_items,
								 &ls);
		code_names_clear(&tmp);
		if (err) {
			pyu_locals_clear(&ls);
			return pyu_error_wrap(err, "reading the locals of the frame at 0x%" PRIx64,
					      frame);
		}
	}
	*ret = ls;
	return NULL;
}
