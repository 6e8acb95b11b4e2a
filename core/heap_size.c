// heap_size.c - sys.getsizeof() of objects in target memory (heap_size.h). A type's rule is
// decided once from its MRO; an object's size is then computed from the fields its rule reads,
// every count bounded before it is multiplied. Version differences come from the layouts.
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "bytes.h"
#include "heap_size.h"
#include "values.h"

#define TPFLAGS_HEAPTYPE (1ull << 9)
#define TPFLAGS_HAVE_GC (1ull << 14)
#define TPFLAGS_BASE_EXC_SUBCLASS (1ull << 30)
#define MRO_MAX 256                 // classes of an MRO looked at
#define COUNT_MAX (1ull << 40)      // element counts past this are corrupt
#define LOG2_MAX 40                 // dict tables of more than 2**40 slots are corrupt

// Static types whose objects getsizeof() sizes by one of the rules, by tp_name. Any other
// static type may define its own __sizeof__ (deque, array, BytesIO ...): inexact.
static const struct {
	const char *name;
	enum pyu_size_rule rule;
	int py; // 2: only 2.7, 3: only 3.x, 0: both
} static_rules[] = {
	{"object", PYU_SIZE_DEFAULT, 0},
	{"list", PYU_SIZE_LIST, 0},
	{"dict", PYU_SIZE_DICT, 0},
	{"set", PYU_SIZE_SET, 0},
	{"frozenset", PYU_SIZE_SET, 0},
	{"str", PYU_SIZE_STR, 3},
	{"str", PYU_SIZE_DEFAULT, 2},
	{"unicode", PYU_SIZE_UNICODE27, 2},
	{"bytes", PYU_SIZE_DEFAULT, 3},
	{"bytearray", PYU_SIZE_BYTEARRAY, 0},
	{"int", PYU_SIZE_INT, 3},
	{"bool", PYU_SIZE_INT, 3},
	{"int", PYU_SIZE_DEFAULT, 2},
	{"bool", PYU_SIZE_DEFAULT, 2},
	{"long", PYU_SIZE_INT, 2},
	{"float", PYU_SIZE_DEFAULT, 0},
	{"complex", PYU_SIZE_DEFAULT, 0},
	{"tuple", PYU_SIZE_DEFAULT, 0},
	{"type", PYU_SIZE_TYPE, 3},
	{"type", PYU_SIZE_DEFAULT, 2}, // 2.7: + one PyMemberDef per __slots__ name
	{"function", PYU_SIZE_DEFAULT, 0},
	{"cell", PYU_SIZE_DEFAULT, 0},
	{"method", PYU_SIZE_DEFAULT, 0},
	{"instancemethod", PYU_SIZE_DEFAULT, 2},
	{"instance", PYU_SIZE_DEFAULT, 2},
	{"classobj", PYU_SIZE_DEFAULT, 2},
	{"staticmethod", PYU_SIZE_DEFAULT, 0},
	{"classmethod", PYU_SIZE_DEFAULT, 0},
	{"property", PYU_SIZE_DEFAULT, 0},
	{"weakref", PYU_SIZE_DEFAULT, 0},
	{"weakproxy", PYU_SIZE_DEFAULT, 0},
	{"weakcallableproxy", PYU_SIZE_DEFAULT, 0},
	{"builtin_function_or_method", PYU_SIZE_DEFAULT, 0},
	{"method_descriptor", PYU_SIZE_DEFAULT, 0},
	{"classmethod_descriptor", PYU_SIZE_DEFAULT, 0},
	{"getset_descriptor", PYU_SIZE_DEFAULT, 0},
	{"member_descriptor", PYU_SIZE_DEFAULT, 0},
	{"wrapper_descriptor", PYU_SIZE_DEFAULT, 0},
	{"method-wrapper", PYU_SIZE_DEFAULT, 0},
	{"mappingproxy", PYU_SIZE_DEFAULT, 3},
	{"dictproxy", PYU_SIZE_DEFAULT, 2},
	{"module", PYU_SIZE_DEFAULT, 0},
	{"NoneType", PYU_SIZE_DEFAULT, 0},
};

// Static builtin types whose own __sizeof__ no rule above knows: 3.12+ keep a static builtin
// type's dict in the interpreter (tp_dict is NULL), so whether __sizeof__ is its own is known
// by name (the list is that of `'__sizeof__' in vars(t)` over 3.12 - 3.15's builtin types).
static const char *const builtin_own_sizeof[] = {
	"async_generator", "code", "collections.OrderedDict", "coroutine", "frame", "frozendict",
	"generator",
};

// C types whose __sizeof__ the census reads, by name; their structs (Modules/arraymodule.c,
// Modules/_collectionsmodule.c) are the same in every 3.x (2.7: the deque below).
#define ARRAY_ALLOCATED 32  // arrayobject.allocated (after PyObject_VAR_HEAD and ob_item)
#define ARRAY_DESCR 40      // arrayobject.ob_descr: struct arraydescr, int itemsize at 4
#define ARRAY_DESCR_ITEMSIZE 4
static const struct pyu_deque_layout deque_py2 = {16, 32, 48, 62, 512, 0, 496},
	deque_py3 = {24, 40, -1, 64, 528, 8, 520};

const struct pyu_deque_layout *pyu_deque_layout(bool py2)
{
	return py2 ? &deque_py2 : &deque_py3;
}

static struct pyu_error *rd(struct pyu_sizer *z, uint64_t addr, void *buf, size_t len)
{
	if (!addr)
		return pyu_error_create(PYU_ERR_CORRUPT, "NULL pointer");
	return pyu_target_read(z->t, addr, buf, len);
}

static struct pyu_error *rd_u64(struct pyu_sizer *z, uint64_t addr, uint64_t *ret)
{
	uint8_t b[8];
	struct pyu_error *err = rd(z, addr, b, 8);
	if (!err)
		*ret = pyu_le64(b);
	return err;
}

// Field @off of the object at @obj: from @prefix when it holds it, else read.
static struct pyu_error *obj_u64(struct pyu_sizer *z, uint64_t obj, const uint8_t *prefix,
				 size_t prefix_len, int32_t off, uint64_t *ret)
{
	if (off < 0)
		return pyu_error_create(PYU_ERR_UNSUPPORTED, "field absent in this version");
	if ((size_t)off + 8 <= prefix_len && off + 8 <= PYU_SIZE_PREFIX) {
		*ret = pyu_le64(prefix + off);
		return NULL;
	}
	return rd_u64(z, obj + (uint64_t)off, ret);
}

// What the first static type on an MRO says about references, by tp_name.
static const struct {
	const char *name;
	enum pyu_ref_kind refs;
} static_refs[] = {
	{"str", PYU_REFS_NONE}, {"unicode", PYU_REFS_NONE}, {"bytes", PYU_REFS_NONE},
	{"int", PYU_REFS_NONE}, {"long", PYU_REFS_NONE}, {"bool", PYU_REFS_NONE},
	{"float", PYU_REFS_NONE}, {"complex", PYU_REFS_NONE}, {"bytearray", PYU_REFS_NONE},
	{"NoneType", PYU_REFS_NONE}, {"ellipsis", PYU_REFS_NONE},
	{"NotImplementedType", PYU_REFS_NONE},
	{"tuple", PYU_REFS_TUPLE}, {"list", PYU_REFS_LIST}, {"dict", PYU_REFS_DICT},
	{"set", PYU_REFS_SET}, {"frozenset", PYU_REFS_SET}, {"code", PYU_REFS_CODE},
	{"function", PYU_REFS_FUNCTION}, {"builtin_function_or_method", PYU_REFS_CFUNCTION},
	{"cell", PYU_REFS_CELL}, {"module", PYU_REFS_MODULE}, {"type", PYU_REFS_TYPE},
	{"generator", PYU_REFS_GENERATOR}, {"coroutine", PYU_REFS_COROUTINE},
	{"async_generator", PYU_REFS_ASYNC_GEN}, {"frame", PYU_REFS_FRAME},
	{"method", PYU_REFS_METHOD}, {"instancemethod", PYU_REFS_METHOD},
	{"traceback", PYU_REFS_TRACEBACK},
	{"method_descriptor", PYU_REFS_DESCR}, {"classmethod_descriptor", PYU_REFS_DESCR},
	{"getset_descriptor", PYU_REFS_DESCR}, {"member_descriptor", PYU_REFS_DESCR},
	{"wrapper_descriptor", PYU_REFS_DESCR},
	{"property", PYU_REFS_PROPERTY},
	{"classmethod", PYU_REFS_CLASSMETHOD}, {"staticmethod", PYU_REFS_CLASSMETHOD},
};

struct mro_walk {
	struct pyu_sizer *z;
	bool done;          // the size rule is decided
	bool sized_by_heap; // a heap class defines __sizeof__
	enum pyu_size_rule rule;
	bool exact;
	enum pyu_ref_kind refs;
	bool is_type;
	bool static_seen;   // past the first static type: looking for references only
	struct pyu_error *err;
};

// Decides the size rule at the static class @cls named @name when it can: a rule of its
// name, an exception (object's __sizeof__), a class whose dict holds __sizeof__ (sized by
// tp_basicsize: inexact). A class without a __sizeof__ of its own leaves it to its base.
static void size_rule_of(struct mro_walk *w, uint64_t cls, const char *name, uint64_t flags)
{
	struct pyu_sizer *z = w->z;
	int py = z->vl->py2 ? 2 : 3;
	for (size_t i = 0; i < sizeof(static_rules) / sizeof(static_rules[0]); i++) {
		if ((static_rules[i].py == 0 || static_rules[i].py == py) &&
		    !strcmp(static_rules[i].name, name)) {
			w->rule = static_rules[i].rule;
			w->exact = w->done = true;
			return;
		}
	}
	// Exceptions keep object.__sizeof__ (none of the builtin ones defines its own).
	if (flags & TPFLAGS_BASE_EXC_SUBCLASS) {
		w->exact = w->done = true;
		return;
	}
	uint64_t dict = 0, found;
	struct pyu_error *err = rd_u64(z, cls + (uint64_t)z->vl->type.dict, &dict);
	if (!err && dict)
		err = pyu_dict_get_str(z->v, dict, "__sizeof__", &found);
	if (!err && !dict) {
		for (size_t i = 0; i < sizeof(builtin_own_sizeof) / sizeof(builtin_own_sizeof[0]); i++)
			if (!strcmp(builtin_own_sizeof[i], name))
				w->done = true;
		return;
	}
	if (err && pyu_error_code(err) == PYU_ERR_NOT_FOUND) {
		pyu_error_destroy(err);
		return; // not its own: its base's decides
	}
	pyu_error_destroy(err); // its own __sizeof__, or a dict that cannot tell: inexact
	w->done = true;
}

static bool mro_visit(void *arg, uint64_t cls)
{
	struct mro_walk *w = arg;
	struct pyu_sizer *z = w->z;
	uint64_t flags, dict, found;
	struct pyu_error *err = rd_u64(z, cls + (uint64_t)z->l->type_tp_flags, &flags);
	if (err) {
		w->err = err;
		return false;
	}
	if (flags & TPFLAGS_HEAPTYPE) {
		if (w->done)
			return true; // looking for the first static type (references) only
		// A class that defines __sizeof__ itself decides; we cannot run it.
		err = rd_u64(z, cls + (uint64_t)z->vl->type.dict, &dict);
		if (!err)
			err = pyu_dict_get_str(z->v, dict, "__sizeof__", &found);
		if (!err) {
			w->done = w->sized_by_heap = true;
			return true;
		}
		if (pyu_error_code(err) != PYU_ERR_NOT_FOUND) {
			w->err = err;
			return false;
		}
		pyu_error_destroy(err);
		return true;
	}
	char *name = NULL;
	err = pyu_value_static_type_name(z->v, cls, &name);
	if (err) {
		w->err = err;
		return false;
	}
	for (size_t i = 0; i < sizeof(static_refs) / sizeof(static_refs[0]); i++)
		if (w->refs == PYU_REFS_NONE && !strcmp(static_refs[i].name, name))
			w->refs = static_refs[i].refs;
	if (w->refs == PYU_REFS_NONE && (flags & TPFLAGS_BASE_EXC_SUBCLASS))
		w->refs = PYU_REFS_EXC; // every builtin exception starts as BaseException does
	if (!w->static_seen) {
		w->static_seen = true;
		w->is_type = !strcmp(name, "type");
	}
	if (!w->done)
		size_rule_of(w, cls, name, flags);
	// On to the next class while the size rule is not decided, or (a C class's base whose
	// references it keeps as the base does: 3.6's collections.OrderedDict is a dict) while
	// the references are not known.
	bool more = !w->done || (w->refs == PYU_REFS_NONE && strcmp(name, "object") != 0);
	free(name);
	return more;
}

struct pyu_error *pyu_size_type(struct pyu_sizer *z, uint64_t type, struct pyu_size_type *ret)
{
	uint8_t buf[8];
	struct pyu_size_type st;
	memset(&st, 0, sizeof(st));
	struct pyu_error *err = rd(z, type + (uint64_t)z->l->type_tp_flags, buf, 8);
	if (!err) {
		st.flags = pyu_le64(buf);
		err = rd(z, type + (uint64_t)z->vl->type.basicsize, buf, 8);
	}
	if (!err) {
		st.basicsize = (int64_t)pyu_le64(buf);
		err = rd(z, type + (uint64_t)z->vl->type.itemsize, buf, 8);
	}
	if (!err)
		st.itemsize = (int64_t)pyu_le64(buf);
	if (!err && (st.basicsize <= 0 || st.basicsize > (1 << 20) || st.itemsize < 0 ||
		     st.itemsize > (1 << 16)))
		err = pyu_error_create(PYU_ERR_CORRUPT, "type with tp_basicsize %" PRId64
				       ", tp_itemsize %" PRId64, st.basicsize, st.itemsize);
	if (err)
		return pyu_error_wrap(err, "reading the type at 0x%" PRIx64, type);
	st.gc = st.flags & TPFLAGS_HAVE_GC;
	st.extra = (st.gc ? (uint32_t)z->hl->gc.head_size : 0) +
		   ((st.flags & z->hl->preheader_flags) ? (uint32_t)z->hl->preheader_size : 0);

	struct mro_walk w = {z, false, false, PYU_SIZE_DEFAULT, false, PYU_REFS_NONE, false, false,
			     NULL};
	uint64_t mro = 0;
	err = rd_u64(z, type + (uint64_t)z->vl->type.mro, &mro);
	if (!err && mro)
		err = pyu_sequence_foreach(z->v, mro, mro_visit, &w);
	if (!err)
		err = w.err;
	else
		pyu_error_destroy(w.err);
	if (err || !mro) {
		// No readable MRO (a class in the making, 2.7 old-style ones): as object would.
		pyu_error_destroy(err);
		if (!mro && !(st.flags & TPFLAGS_HEAPTYPE)) {
			w.z = z;
			mro_visit(&w, type);
			pyu_error_destroy(w.err);
		}
	}
	st.rule = w.rule;
	st.exact = w.exact;
	st.refs = w.refs;
	st.heap = st.flags & TPFLAGS_HEAPTYPE;
	st.is_type = w.is_type;
	*ret = st;
	return NULL;
}

static uint64_t ix_size(uint64_t slots)
{
	return slots <= 0xff ? 1 : slots <= 0xffff ? 2 : slots <= 0xffffffffull ? 4 : 8;
}

// _PyDict_KeysSize() of the keys object at @keys; *refcnt its dk_refcnt.
static struct pyu_error *keys_size(struct pyu_sizer *z, uint64_t keys, uint64_t *refcnt,
				   uint64_t *shared_usable, uint64_t *ret)
{
	const struct pyu_value_layout *vl = z->vl;
	uint8_t b[64];
	struct pyu_error *err = rd(z, keys, b, sizeof(b));
	if (err)
		return pyu_error_wrap(err, "dict keys at 0x%" PRIx64, keys);
	if (z->hl->size.keys_refcnt < 0 || vl->keys.indices < 0 || vl->keys.indices > 56)
		return pyu_error_create(PYU_ERR_UNSUPPORTED, "no dict keys layout");
	*refcnt = pyu_get_u64(b, z->hl->size.keys_refcnt);
	uint64_t usable_now = z->hl->size.keys_usable >= 0 ?
		pyu_get_u64(b, z->hl->size.keys_usable) : 0;
	if (vl->dict_kind == PYU_DICT_KEYS_36) {
		uint64_t size = pyu_get_u64(b, vl->keys.size);
		if (!size || (size & (size - 1)) || size > (1ull << LOG2_MAX))
			return pyu_error_create(PYU_ERR_CORRUPT, "dict keys of %" PRIu64 " slots", size);
		uint64_t usable = (size << 1) / 3;
		*shared_usable = usable;
		*ret = (uint64_t)vl->keys.indices + ix_size(size) * size +
		       (uint64_t)vl->dict.entry_size * usable;
		return NULL;
	}
	unsigned log2 = b[vl->keys.log2_size], log2_ix = b[vl->keys.log2_index_bytes];
	unsigned kind = b[vl->keys.kind];
	uint64_t nentries = pyu_get_u64(b, vl->keys.nentries);
	if (log2 > LOG2_MAX || log2_ix > LOG2_MAX + 3 || nentries > COUNT_MAX ||
	    usable_now > COUNT_MAX)
		return pyu_error_create(PYU_ERR_CORRUPT, "dict keys of 2**%u slots", log2);
	uint64_t es = kind == 0 ? (uint64_t)vl->dict.entry_size : (uint64_t)vl->dict.uentry_size;
	*shared_usable = nentries + usable_now;
	*ret = (uint64_t)vl->keys.indices + (1ull << log2_ix) + (((1ull << log2) << 1) / 3) * es;
	return NULL;
}

static struct pyu_error *dict_size(struct pyu_sizer *z, uint64_t obj, const uint8_t *p,
				   size_t n, const struct pyu_size_type *st, uint64_t *ret)
{
	const struct pyu_value_layout *vl = z->vl;
	uint64_t res = (uint64_t)st->basicsize;
	struct pyu_error *err;
	if (vl->dict_kind == PYU_DICT_PY2_TABLE) {
		uint64_t mask, table;
		if ((err = obj_u64(z, obj, p, n, vl->dict.mask, &mask)) != NULL ||
		    (err = obj_u64(z, obj, p, n, vl->dict.table, &table)) != NULL)
			return err;
		if (mask >= (1ull << LOG2_MAX))
			return pyu_error_create(PYU_ERR_CORRUPT, "dict of %" PRIu64 " slots", mask + 1);
		if (table != obj + (uint64_t)(z->hl->size.dict_smalltable + z->shift))
			res += (mask + 1) * (uint64_t)vl->dict.entry_size;
		*ret = res;
		return NULL;
	}
	uint64_t keys, values, refcnt, usable, ksize;
	if ((err = obj_u64(z, obj, p, n, vl->dict.keys, &keys)) != NULL ||
	    (err = obj_u64(z, obj, p, n, vl->dict.values, &values)) != NULL ||
	    (err = keys_size(z, keys, &refcnt, &usable, &ksize)) != NULL)
		return err;
	if (values)
		res += usable * 8;
	if (refcnt == 1)
		res += ksize;
	*ret = res;
	return NULL;
}

static struct pyu_error *str_size(struct pyu_sizer *z, uint64_t obj, const uint8_t *p, size_t n,
				  const struct pyu_size_type *st, uint64_t *ret)
{
	(void)st;
	const struct pyu_layout *l = z->l;
	uint64_t len, state_word, data = 0;
	struct pyu_error *err;
	if ((err = obj_u64(z, obj, p, n, l->unicode.length, &len)) != NULL ||
	    (err = obj_u64(z, obj, p, n, l->unicode.state, &state_word)) != NULL)
		return err;
	if (len > COUNT_MAX)
		return pyu_error_create(PYU_ERR_CORRUPT, "str of %" PRIu64 " characters", len);
	uint32_t state = (uint32_t)state_word >> l->unicode.state_shift;
	uint64_t kind = (state >> 2) & 7;
	bool compact = (state >> 5) & 1, ascii = (state >> 6) & 1;
	if (kind != 1 && kind != 2 && kind != 4)
		return pyu_error_create(PYU_ERR_CORRUPT, "str of kind %" PRIu64, kind);
	uint64_t res;
	int32_t ascii_size = l->unicode.ascii_size;
	if (compact && ascii) {
		res = (uint64_t)ascii_size + len + 1;
		data = obj + (uint64_t)ascii_size;
	} else if (compact) {
		res = (uint64_t)l->unicode.compact_size + (len + 1) * kind;
		data = obj + (uint64_t)l->unicode.compact_size;
	} else {
		res = (uint64_t)l->unicode.compact_size + 8; // sizeof(PyUnicodeObject), any subclass
		if ((err = obj_u64(z, obj, p, n, l->unicode.data, &data)) != NULL)
			return err;
		if (data)
			res += (len + 1) * kind;
	}
	if (!(compact && ascii)) {
		// A UTF-8 copy kept beside the characters.
		uint64_t utf8_len, utf8;
		if ((err = obj_u64(z, obj, p, n, ascii_size, &utf8_len)) != NULL ||
		    (err = obj_u64(z, obj, p, n, ascii_size + 8, &utf8)) != NULL)
			return err;
		if (utf8 && utf8 != data && utf8_len <= COUNT_MAX)
			res += utf8_len + 1;
	}
	if (ascii_size - z->shift == 48) {
		// <= 3.11: a wchar_t copy (wstr, after the state word) unless it is the data.
		uint64_t wstr, wlen = len;
		if ((err = obj_u64(z, obj, p, n, ascii_size - 8, &wstr)) != NULL)
			return err;
		if (wstr && wstr != data) {
			if (!(compact && ascii) &&
			    (err = obj_u64(z, obj, p, n, ascii_size + 16, &wlen)) != NULL)
				return err;
			if (wlen <= COUNT_MAX)
				res += (wlen + 1) * 4;
		}
	}
	*ret = res;
	return NULL;
}

static struct pyu_error *type_size(struct pyu_sizer *z, uint64_t obj, const uint8_t *p,
				   size_t n, const struct pyu_size_type *st, uint64_t *ret)
{
	(void)p, (void)n, (void)st;
	uint64_t flags;
	struct pyu_error *err = rd_u64(z, obj + (uint64_t)z->l->type_tp_flags, &flags);
	if (err)
		return err;
	if (!(flags & TPFLAGS_HEAPTYPE)) {
		*ret = (uint64_t)z->hl->size.type_object + (uint64_t)z->shift; // sizeof(PyTypeObject)
		return NULL;
	}
	uint64_t res = (uint64_t)(z->hl->size.heap_type + z->shift), keys = 0;
	if (z->vl->type.ht_cached_keys >= 0 &&
	    (err = rd_u64(z, obj + (uint64_t)z->vl->type.ht_cached_keys, &keys)) != NULL)
		return err;
	if (keys) {
		uint64_t refcnt, usable, ksize;
		if ((err = keys_size(z, keys, &refcnt, &usable, &ksize)) != NULL)
			return err;
		res += ksize;
	}
	*ret = res;
	return NULL;
}

static struct pyu_error *rule_size(struct pyu_sizer *z, uint64_t obj, const uint8_t *p,
				   size_t n, const struct pyu_size_type *st, uint64_t *ret)
{
	const struct pyu_value_layout *vl = z->vl;
	uint64_t v1, v2, size;
	struct pyu_error *err;
	switch (st->rule) {
	case PYU_SIZE_LIST:
		if ((err = obj_u64(z, obj, p, n, z->hl->size.list_allocated + z->shift, &v1)))
			return err;
		if (v1 > COUNT_MAX)
			return pyu_error_create(PYU_ERR_CORRUPT, "list of %" PRIu64 " slots", v1);
		*ret = (uint64_t)st->basicsize + v1 * 8;
		return NULL;
	case PYU_SIZE_DICT:
		return dict_size(z, obj, p, n, st, ret);
	case PYU_SIZE_SET:
		if ((err = obj_u64(z, obj, p, n, vl->set.mask, &v1)) != NULL ||
		    (err = obj_u64(z, obj, p, n, vl->set.table, &v2)) != NULL)
			return err;
		if (v1 >= (1ull << LOG2_MAX))
			return pyu_error_create(PYU_ERR_CORRUPT, "set of %" PRIu64 " slots", v1 + 1);
		size = (uint64_t)st->basicsize;
		if (v2 != obj + (uint64_t)(z->hl->size.set_smalltable + z->shift))
			size += (v1 + 1) * (uint64_t)vl->set.entry_size;
		*ret = size;
		return NULL;
	case PYU_SIZE_BYTEARRAY:
		if ((err = obj_u64(z, obj, p, n, z->hl->size.bytearray_alloc + z->shift, &v1)))
			return err;
		if (v1 > COUNT_MAX)
			return pyu_error_create(PYU_ERR_CORRUPT, "bytearray of %" PRIu64 " bytes", v1);
		*ret = (uint64_t)st->basicsize + v1 + (uint64_t)z->hl->bytearray_extra;
		return NULL;
	case PYU_SIZE_STR:
		return str_size(z, obj, p, n, st, ret);
	case PYU_SIZE_UNICODE27:
		if ((err = obj_u64(z, obj, p, n, z->l->unicode.length, &v1)) != NULL)
			return err;
		if (v1 > COUNT_MAX)
			return pyu_error_create(PYU_ERR_CORRUPT, "unicode of %" PRIu64 " characters",
						v1);
		*ret = (uint64_t)st->basicsize + (v1 + 1) * 4;
		return NULL;
	case PYU_SIZE_INT:
		if (vl->int_kind == PYU_INT_LV_TAG) {
			if ((err = obj_u64(z, obj, p, n, vl->int_.digits - 8, &v1)) != NULL)
				return err;
			v1 >>= 3;
		} else {
			if ((err = obj_u64(z, obj, p, n, z->l->ob_size, &v1)) != NULL)
				return err;
			if ((int64_t)v1 < 0)
				v1 = (uint64_t)0 - v1;
		}
		if (v1 < (uint64_t)z->hl->int_min_digits)
			v1 = (uint64_t)z->hl->int_min_digits;
		if (v1 > COUNT_MAX)
			return pyu_error_create(PYU_ERR_CORRUPT, "int of %" PRIu64 " digits", v1);
		*ret = (vl->int_kind == PYU_INT_PY2 ? (uint64_t)st->basicsize
						     : (uint64_t)vl->int_.digits) + v1 * 4;
		return NULL;
	case PYU_SIZE_TYPE:
		return type_size(z, obj, p, n, st, ret);
	case PYU_SIZE_ARRAY: {
		uint64_t descr;
		uint8_t b[4];
		if ((err = obj_u64(z, obj, p, n, ARRAY_ALLOCATED + z->shift, &v1)) != NULL ||
		    (err = obj_u64(z, obj, p, n, ARRAY_DESCR + z->shift, &descr)) != NULL ||
		    (err = rd(z, descr + ARRAY_DESCR_ITEMSIZE, b, 4)) != NULL)
			return err;
		v2 = pyu_le32(b);
		if (v1 > COUNT_MAX || v2 == 0 || v2 > 16)
			return pyu_error_create(PYU_ERR_CORRUPT, "array of %" PRIu64 " items of %"
						PRIu64 " bytes", v1, v2);
		*ret = (uint64_t)st->basicsize + v1 * v2;
		return NULL;
	}
	case PYU_SIZE_DEQUE: {
		const struct pyu_deque_layout *d = pyu_deque_layout(z->vl->py2);
		if ((err = obj_u64(z, obj, p, n, d->leftindex + z->shift, &v1)) != NULL ||
		    (err = obj_u64(z, obj, p, n, d->len < 0 ? z->l->ob_size : d->len + z->shift,
				   &v2)) != NULL)
			return err;
		if (v1 >= d->blocklen || v2 > COUNT_MAX)
			return pyu_error_create(PYU_ERR_CORRUPT, "deque of %" PRIu64 " items from %"
						PRIu64, v2, v1);
		*ret = (uint64_t)st->basicsize + (v1 + v2 + d->blocklen - 1) / d->blocklen *
		       d->block_size;
		return NULL;
	}
	case PYU_SIZE_DEFAULT:
		break;
	}
	size = (uint64_t)st->basicsize;
	if (st->itemsize > 0) {
		if ((err = obj_u64(z, obj, p, n, z->l->ob_size, &v1)) != NULL)
			return err;
		if ((int64_t)v1 < 0)
			v1 = (uint64_t)0 - v1;
		if (v1 > COUNT_MAX && !st->exact)
			v1 = 0; // its own __sizeof__ (a generator's frame): ob_size is no count
		if (v1 > COUNT_MAX)
			return pyu_error_create(PYU_ERR_CORRUPT, "object of %" PRIu64 " items", v1);
		size += v1 * (uint64_t)st->itemsize;
	}
	*ret = size;
	return NULL;
}

void pyu_size_named(struct pyu_size_type *st, const char *name)
{
	if (!name)
		return;
	if (!strcmp(name, "collections.deque") && st->refs == PYU_REFS_NONE)
		st->refs = PYU_REFS_DEQUE;
	if (st->exact)
		return;
	if (!strcmp(name, "array.array"))
		st->rule = PYU_SIZE_ARRAY;
	else if (!strcmp(name, "collections.deque"))
		st->rule = PYU_SIZE_DEQUE;
	else
		return;
	st->exact = true;
}

struct pyu_error *pyu_size_object(struct pyu_sizer *z, uint64_t obj, const uint8_t *prefix,
				  size_t prefix_len, const struct pyu_size_type *st,
				  uint64_t *ret)
{
	uint64_t size = 0;
	struct pyu_error *err = rule_size(z, obj, prefix, prefix_len, st, &size);
	if (err)
		size = (uint64_t)st->basicsize;
	uint32_t extra = st->extra;
	uint64_t flags = TPFLAGS_HEAPTYPE;
	if (st->is_type) {
		// tp_flags lies past the prefix (offset 168): read on its own when it does.
		struct pyu_error *ferr = obj_u64(z, obj, prefix, prefix_len, z->l->type_tp_flags,
						 &flags);
		if (ferr)
			flags = TPFLAGS_HEAPTYPE;
		pyu_error_destroy(ferr);
	}
	if (!(flags & TPFLAGS_HEAPTYPE) && !z->hl->static_type_header)
		extra = 0; // a static class is no collector object (type's tp_is_gc)
	*ret = size + extra;
	return err;
}
