// values.c - the value reader: repr() of objects in target memory as the interpreter prints
// them, dict iteration (every table layout), instance attributes and attribute lookup, all
// without running target code. Types are recognised in one place (classify) and remembered
// per type address. Every count read from the target is bounded before use; every read goes
// through the context's read budget. Text rules live in reprtext.c.
#include <inttypes.h>
#include <math.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "bytes.h"
#include "carets.h"
#include "objects.h"
#include "printable.h"
#include "reprtext.h"
#include "siphash.h"
#include "types.h"
#include "value_layout.h"
#include "values.h"

#define TPFLAGS_INLINE_VALUES (1ul << 2) // 3.13+
#define TPFLAGS_MANAGED_DICT (1ul << 4)  // 3.11+
#define TPFLAGS_HEAPTYPE (1ul << 9)
#define TPFLAGS_DICT_SUBCLASS (1ul << 29)
#define TPFLAGS_BASE_EXC_SUBCLASS (1ul << 30)
#define TPFLAGS_TYPE_SUBCLASS (1ul << 31)

#define TYPE_CACHE 512           // type addresses remembered per context (direct-mapped)
#define FLOAT_CACHE 256          // float reprs remembered per context, by bit pattern
#define KNOWN_MAX 256            // builtin types learnt by address
#define KNOWN_NAME 48            // bytes of a learnt type's tp_name
#define KNOWN_FUNCS 128          // builtins module values remembered as function candidates
#define SEED_MODULES 4096        // sys.modules entries looked at while learning them
#define SEED_MODULE_SCAN 64      // modules whose dicts are searched for a function
#define SEED_ITEMS 4096          // entries of one dict looked at while learning
#define BASES_MAX 64             // tp_base links followed to find a builtin base
#define MRO_MAX 256              // classes of an MRO searched by getattr
#define NAME_CHARS 512           // characters of a type, module or function name
#define DEPTH_MAX 200            // hard cap on limits.depth (C recursion)
#define SIZE_MAX_SANE (1ull << 40) // counts past this are corrupt, whatever the limits
#define TABLE_LOG2_MAX 30        // dict/set tables larger than 2**30 slots are corrupt
#define CHUNK 128                // entries read per target read when scanning tables
#define KEY_PREFETCH 64          // bytes of each key object worth having at hand

enum kind {
	K_UNKNOWN = 0, // not classified yet (cache slots)
	K_OTHER,       // default form
	K_NONE, K_BOOL, K_INT, K_PY2INT, K_FLOAT, K_COMPLEX, K_STR, K_PY2STR, K_BYTES,
	K_BYTEARRAY, K_TUPLE, K_LIST, K_DICT, K_SET, K_FROZENSET, K_EXC, K_TYPE, K_MODULE,
	K_FUNCTION, K_CFUNCTION, K_ELLIPSIS, K_NOTIMPL, K_PY2_INSTANCE, K_PY2_CLASS,
	K_FRAME, K_CODE, K_GEN, K_CORO, K_AGEN, K_CELL, K_METHOD,
};

struct type_entry {
	uint64_t addr;
	uint64_t flags;
	uint8_t kind;
	bool exact; // the type is the builtin type itself (not a subclass)
};

// type(obj).__name__ as pyu_value_type_name returns it, per type address: a dump asks for
// the type of every local, and most share a few types.
struct type_name_entry {
	uint64_t addr;
	char *name; // escaped; NULL = free slot
};

// Shortest round-trip digits cost several rounds of printf and strtod; a dump meets the same
// doubles over and over (every thread running the same code).
struct float_entry {
	uint64_t bits;
	bool used;
	char text[PYU_FLOAT_REPR_MAX];
};

// A builtin type known by its address (learnt from the interpreter's own builtins, not from
// tp_name, which a core without the interpreter's files cannot show).
struct known_type {
	uint64_t addr;
	uint8_t kind;          // K_UNKNOWN: only the name is known (exceptions, object, ...)
	char name[KNOWN_NAME]; // its tp_name
};

// A value of the builtins module bound under one name only (a candidate for a builtin
// function's name when the C string of its PyMethodDef cannot be read).
struct known_func {
	uint64_t addr;
	bool ambiguous;        // bound under two names: neither is taken
	char name[KNOWN_NAME];
};

struct where_str {
	struct where_str *next;
	char text[];
};

// A str key of some dict compared with a name: the same key objects come back in every
// instance's dict (interned attribute names; 3.11+ instances share one keys table), so each
// is read once per context, not once per instance.
#define KEY_MEMO 16
#define KEY_MEMO_NAME 32 // longer names are compared each time
struct key_memo {
	uint64_t key;             // the key object's address; 0: free
	char name[KEY_MEMO_NAME]; // the name it was compared with
	bool equal;
};

struct pyu_values {
	struct pyu_target *t;
	const struct pyu_layout *l;
	struct pyu_value_layout vl;
	struct pyu_value_limits lim;
	uint64_t read_used;
	struct type_entry types[TYPE_CACHE];
	struct type_name_entry type_names[TYPE_CACHE];
	struct float_entry floats[FLOAT_CACHE];
	const struct pyu_runtime *rt;
	struct known_type known[KNOWN_MAX];
	uint32_t known_count;
	uint64_t exc_root;     // BaseException, learnt with the builtin types
	uint64_t builtins;     // the builtins module, learnt with them
	struct known_func funcs[KNOWN_FUNCS];
	uint32_t func_count;
	bool seeded;           // the builtin types were looked for (found or not)
	bool visits_values;    // the dict walks' visitors read every value too (prefetched)
	uint64_t stack[DEPTH_MAX + 1]; // containers being printed, outermost first
	uint32_t depth;
	bool cut;                      // a bound cut the repr being built
	struct where_str *wheres;
	struct key_memo keys_seen[KEY_MEMO]; // find_str_visit's comparisons, newest overwriting
	uint32_t keys_next;
	int64_t (*frame_line)(void *arg, uint64_t frame); // pyu_values_set_frame_lines
	void *frame_line_arg;
	int8_t hash_keys;      // the str hash's keys: 0 not read yet, 1 read, -1 not known
	uint64_t hash_k0, hash_k1;
};

void pyu_values_set_frame_lines(struct pyu_values *v,
				int64_t (*line)(void *arg, uint64_t frame), void *arg)
{
	v->frame_line = line;
	v->frame_line_arg = arg;
}

void pyu_value_limits_default(struct pyu_value_limits *ret)
{
	ret->depth = 6;
	ret->items = 100;
	ret->chars = 1000;
	ret->digits = 1000;
	ret->output = 4096;
	ret->read_budget = 64u << 20;
}

// ---- reads -------------------------------------------------------------------------------

static struct pyu_error *rd(struct pyu_values *v, uint64_t addr, void *buf, size_t len)
{
	if (addr == 0)
		return pyu_error_create(PYU_ERR_CORRUPT, "NULL pointer");
	if (len > v->lim.read_budget || v->read_used > v->lim.read_budget - len)
		return pyu_error_create(PYU_ERR_CORRUPT, "read budget of %" PRIu64 " bytes spent",
					v->lim.read_budget);
	v->read_used += len;
	return pyu_target_read(v->t, addr, buf, len);
}

static struct pyu_error *rd_u64(struct pyu_values *v, uint64_t addr, uint64_t *ret)
{
	uint8_t b[8];
	struct pyu_error *err = rd(v, addr, b, 8);
	if (!err)
		*ret = pyu_le64(b);
	return err;
}

// Field @off (PYU_NO_FIELD = absent) of the object at @addr.
static struct pyu_error *field_u64(struct pyu_values *v, uint64_t addr, int32_t off,
				   uint64_t *ret)
{
	if (off == PYU_NO_FIELD)
		return pyu_error_create(PYU_ERR_UNSUPPORTED, "field absent in this version");
	return rd_u64(v, addr + (uint64_t)(int64_t)off, ret);
}

// ---- context -----------------------------------------------------------------------------

static void shift_fields(struct pyu_value_layout *vl, int32_t shift)
{
	int32_t *f[] = {
		&vl->type.basicsize, &vl->type.itemsize, &vl->type.dictoffset, &vl->type.repr,
		&vl->type.base, &vl->type.mro, &vl->type.dict, &vl->type.ht_name,
		&vl->type.ht_qualname, &vl->type.ht_cached_keys, &vl->int_.digits, &vl->int_.ival,
		&vl->float_fval, &vl->complex_cval, &vl->list_item, &vl->bytearray_start,
		&vl->dict.used, &vl->dict.keys, &vl->dict.values, &vl->dict.mask, &vl->dict.table,
		&vl->set.used, &vl->set.mask, &vl->set.table, &vl->exc_args, &vl->exc_traceback,
		&vl->tb.next, &vl->tb.frame, &vl->tb.lasti, &vl->tb.lineno, &vl->frame_iframe,
		&vl->module_dict,
		&vl->func.name, &vl->func.qualname, &vl->func.code, &vl->cfunc.ml, &vl->cfunc.self,
		&vl->cell_ref, &vl->instance.klass, &vl->instance.dict, &vl->instance.cl_name,
		&vl->instance.cl_dict, &vl->exc.context, &vl->exc.cause, &vl->exc.suppress_context,
		&vl->exc.notes, &vl->exc.group_msg, &vl->exc.group_excs, &vl->exc.os_errno,
		&vl->exc.os_strerror, &vl->exc.os_filename, &vl->exc.os_filename2,
		&vl->exc.syntax_msg, &vl->exc.syntax_filename, &vl->exc.syntax_lineno,
		&vl->exc.syntax_offset, &vl->exc.syntax_text, &vl->exc.syntax_end_lineno,
		&vl->exc.syntax_end_offset, &vl->method.func,
		&vl->method.self, &vl->method.klass, &vl->gen.code, &vl->gen.qualname,
	};
	for (size_t i = 0; i < sizeof(f) / sizeof(f[0]); i++)
		if (*f[i] != PYU_NO_FIELD)
			*f[i] += shift;
}

// 3.13+: the object offsets the target publishes win over the static table (they differ in
// free-threaded builds); each must lie inside its group's published size.
static struct pyu_error *apply_debug_offsets(struct pyu_values *v, const uint8_t *buf,
					     size_t len)
{
	// Each group's size, then its fields, in the order of the blocks' field lists: looked up
	// in one pass (a search from the block's start for each was a fifth of the instructions
	// of a JSON document's thread names).
	enum { GROUP = -1 };
	static const struct {
		const char *name;
		ptrdiff_t field; // offsetof in struct pyu_value_layout; GROUP: a group's size
	} map[] = {
		{"type_object.size", GROUP},
		{"type_object.tp_basicsize", offsetof(struct pyu_value_layout, type.basicsize)},
		{"type_object.tp_dictoffset", offsetof(struct pyu_value_layout, type.dictoffset)},
		{"heap_type_object.size", GROUP},
		{"heap_type_object.ht_cached_keys",
		 offsetof(struct pyu_value_layout, type.ht_cached_keys)},
		{"list_object.size", GROUP},
		{"list_object.ob_item", offsetof(struct pyu_value_layout, list_item)},
		{"set_object.size", GROUP},
		{"set_object.used", offsetof(struct pyu_value_layout, set.used)},
		{"set_object.table", offsetof(struct pyu_value_layout, set.table)},
		{"set_object.mask", offsetof(struct pyu_value_layout, set.mask)},
		{"dict_object.size", GROUP},
		{"dict_object.ma_keys", offsetof(struct pyu_value_layout, dict.keys)},
		{"dict_object.ma_values", offsetof(struct pyu_value_layout, dict.values)},
		{"float_object.size", GROUP},
		{"float_object.ob_fval", offsetof(struct pyu_value_layout, float_fval)},
		{"long_object.size", GROUP},
		{"long_object.ob_digit", offsetof(struct pyu_value_layout, int_.digits)},
	};
	enum { N = sizeof(map) / sizeof(map[0]) };
	const char *names[N];
	uint64_t vals[N];
	bool found[N];
	for (size_t i = 0; i < N; i++)
		names[i] = map[i].name;
	pyu_debug_offsets_fields(buf, len, names, N, vals, found);
	bool group_found = false;
	uint64_t size = 0;
	for (size_t i = 0; i < N; i++) {
		if (map[i].field == GROUP) {
			group_found = found[i];
			size = vals[i];
			continue;
		}
		if (!found[i])
			continue;
		uint64_t off = vals[i];
		if (!group_found || size > 4096 ||
		    off + 8 > size + (strstr(map[i].name, "digit") ? 8 : 0))
			return pyu_error_create(PYU_ERR_CORRUPT,
						"_Py_DebugOffsets: %s = %" PRIu64
						" lies outside its struct", map[i].name, off);
		int32_t val = (int32_t)off;
		memcpy((char *)&v->vl + map[i].field, &val, sizeof(val));
	}
	return NULL;
}

struct pyu_error *pyu_values_create(struct pyu_target *t, const struct pyu_runtime *rt,
				    const struct pyu_value_limits *lim, struct pyu_values **ret)
{
	const struct pyu_value_layout *vl = pyu_value_layout_for_version(rt->layout.version_hex);
	const struct pyu_layout *base = pyu_layout_for_version(rt->layout.version_hex);
	if (!vl || !base)
		return pyu_error_create(PYU_ERR_UNSUPPORTED, "no value layout for CPython %s",
					rt->layout.name ? rt->layout.name : "?");
	struct pyu_values *v = calloc(1, sizeof(*v));
	if (!v)
		return &pyu_error_nomem;
	v->t = t;
	v->rt = rt;
	v->l = &rt->layout;
	v->vl = *vl;
	if (lim)
		v->lim = *lim;
	else
		pyu_value_limits_default(&v->lim);
	if (v->lim.depth > DEPTH_MAX)
		v->lim.depth = DEPTH_MAX;
	// Py_TRACE_REFS (and any larger object header) moves every object field alike.
	int32_t shift = rt->layout.ob_type - base->ob_type;
	if (shift)
		shift_fields(&v->vl, shift);
	if (rt->runtime_addr) {
		uint8_t buf[PYU_DEBUG_OFFSETS_MAX];
		struct pyu_error *err = pyu_target_read(t, rt->runtime_addr, buf, sizeof(buf));
		if (!err && memcmp(buf, "xdebugpy", 8) == 0)
			err = apply_debug_offsets(v, buf, sizeof(buf));
		if (err && err->code == PYU_ERR_CORRUPT) {
			free(v);
			return err;
		}
		pyu_error_destroy(err); // an unreadable block leaves the static table
	}
	*ret = v;
	return NULL;
}

const struct pyu_value_layout *pyu_values_layout(const struct pyu_values *v)
{
	return &v->vl;
}

void pyu_values_destroy(struct pyu_values *v)
{
	if (!v)
		return;
	while (v->wheres) {
		struct where_str *n = v->wheres->next;
		free(v->wheres);
		v->wheres = n;
	}
	for (size_t i = 0; i < TYPE_CACHE; i++)
		free(v->type_names[i].name);
	free(v);
}

// ---- types -------------------------------------------------------------------------------

static enum kind kind_by_name(const struct pyu_values *v, const char *n)
{
	bool py2 = v->vl.py2;
	static const struct {
		const char *name;
		enum kind k2, k3; // 2.7, 3.x
	} names[] = {
		{"NoneType", K_NONE, K_NONE},
		{"bool", K_BOOL, K_BOOL},
		{"int", K_PY2INT, K_INT},
		{"long", K_INT, K_OTHER},
		{"float", K_FLOAT, K_FLOAT},
		{"complex", K_COMPLEX, K_COMPLEX},
		{"str", K_PY2STR, K_STR},
		{"unicode", K_STR, K_OTHER},
		{"bytes", K_OTHER, K_BYTES},
		{"bytearray", K_BYTEARRAY, K_BYTEARRAY},
		{"tuple", K_TUPLE, K_TUPLE},
		{"list", K_LIST, K_LIST},
		{"dict", K_DICT, K_DICT},
		{"set", K_SET, K_SET},
		{"frozenset", K_FROZENSET, K_FROZENSET},
		{"ellipsis", K_ELLIPSIS, K_ELLIPSIS},
		{"NotImplementedType", K_NOTIMPL, K_NOTIMPL},
		{"module", K_MODULE, K_MODULE},
		{"function", K_FUNCTION, K_FUNCTION},
		{"builtin_function_or_method", K_CFUNCTION, K_CFUNCTION},
		{"type", K_TYPE, K_TYPE},
		{"instance", K_PY2_INSTANCE, K_OTHER},
		{"classobj", K_PY2_CLASS, K_OTHER},
		{"frame", K_FRAME, K_FRAME},
		{"code", K_CODE, K_CODE},
		{"generator", K_GEN, K_GEN},
		{"coroutine", K_OTHER, K_CORO},
		{"async_generator", K_OTHER, K_AGEN},
		{"cell", K_CELL, K_CELL},
		{"instancemethod", K_METHOD, K_OTHER},
		{"method", K_OTHER, K_METHOD},
	};
	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		if (strcmp(names[i].name, n) == 0)
			return py2 ? names[i].k2 : names[i].k3;
	return K_OTHER;
}

static struct pyu_error *read_cstr(struct pyu_values *v, uint64_t addr, char **ret)
{
	if (addr == 0)
		return pyu_error_create(PYU_ERR_CORRUPT, "NULL name");
	if (v->read_used > v->lim.read_budget || v->lim.read_budget - v->read_used < NAME_CHARS)
		return pyu_error_create(PYU_ERR_CORRUPT, "read budget spent");
	v->read_used += NAME_CHARS;
	return pyu_target_read_cstr(v->t, addr, NAME_CHARS, ret);
}

// True when @err is success; an error is dropped. For reads whose failure only means
// "not known".
static bool ok(struct pyu_error *err)
{
	pyu_error_destroy(err);
	return !err;
}

static const struct known_type *known_of(const struct pyu_values *v, uint64_t type);
static void seed_known_types(struct pyu_values *v);

// tp_name of the static type at @type, malloc'd; a builtin type learnt by address gives the
// name it was found under when tp_name cannot be read. On error, *ret is unchanged.
static struct pyu_error *read_tp_name(struct pyu_values *v, uint64_t type, char **ret)
{
	uint64_t p;
	struct pyu_error *err = field_u64(v, type, v->l->type_tp_name, &p);
	if (!err && (err = read_cstr(v, p, ret)) == NULL)
		return NULL;
	if (!v->seeded)
		seed_known_types(v);
	const struct known_type *kt = known_of(v, type);
	if (!kt)
		return err;
	pyu_error_destroy(err);
	return (*ret = strdup(kt->name)) != NULL ? NULL : &pyu_error_nomem;
}

// Which builtin the static type @cur is, K_UNKNOWN when none (with @exc: K_EXC when it is
// BaseException). By address among the builtin types once they were learnt; by tp_name before
// that, which for the interpreter's own types says the same thing, and for others decides
// either way. read_tp_name() learns the builtins (some thirty reads) only when the name cannot
// be read: a static type of a core without the interpreter's files has no name, and no builtin
// it could be but one learnt by address, whose name it then gives.
static enum kind static_kind(struct pyu_values *v, uint64_t cur, bool exc)
{
	if (v->seeded) {
		if (exc && v->exc_root)
			return cur == v->exc_root ? K_EXC : K_UNKNOWN;
		const struct known_type *kt = exc ? NULL : known_of(v, cur);
		if (kt && kt->kind != K_UNKNOWN) // K_UNKNOWN: a name, not a builtin kind
			return (enum kind)kt->kind;
	}
	char *name = NULL;
	struct pyu_error *err = read_tp_name(v, cur, &name);
	if (err) {
		pyu_error_destroy(err);
		return exc ? K_UNKNOWN : K_OTHER;
	}
	// 2.7 names it "exceptions.BaseException".
	bool root = !strcmp(name, "BaseException") ||
		    (v->vl.py2 && !strcmp(name, "exceptions.BaseException"));
	enum kind k = exc ? (root ? K_EXC : K_UNKNOWN) : kind_by_name(v, name);
	free(name);
	return k;
}

// The one place that decides what kind of object a type makes: the first non-heap type on
// its tp_base chain names the builtin it derives from, and the builtin's repr is used only
// when the type did not replace tp_repr. Exceptions compare against BaseException's.
static struct pyu_error *classify(struct pyu_values *v, uint64_t type, struct type_entry *ret)
{
	struct type_entry *slot = &v->types[(type >> 4) % TYPE_CACHE];
	if (slot->kind != K_UNKNOWN && slot->addr == type) {
		*ret = *slot;
		return NULL;
	}
	const struct pyu_layout *l = v->l;
	uint64_t flags, repr;
	struct pyu_error *err = field_u64(v, type, l->type_tp_flags, &flags);
	if (!err)
		err = field_u64(v, type, v->vl.type.repr, &repr);
	if (err)
		return pyu_error_wrap(err, "reading the type at 0x%" PRIx64, type);
	struct type_entry e = {type, flags, K_OTHER, false};
	bool exc = flags & TPFLAGS_BASE_EXC_SUBCLASS;
	uint64_t cur = type, cur_flags = flags;
	for (int i = 0; i < BASES_MAX && cur; i++) {
		if (i > 0 && (err = field_u64(v, cur, l->type_tp_flags, &cur_flags)) != NULL)
			break;
		if (!(cur_flags & TPFLAGS_HEAPTYPE)) {
			uint64_t base_repr;
			if ((err = field_u64(v, cur, v->vl.type.repr, &base_repr)) != NULL)
				break;
			enum kind k = static_kind(v, cur, exc);
			if (k != K_UNKNOWN) {
				e.kind = (uint8_t)(base_repr == repr ? k : K_OTHER);
				e.exact = cur == type;
				break;
			}
		}
		if ((err = field_u64(v, cur, v->vl.type.base, &cur)) != NULL)
			break;
	}
	if (err)
		return pyu_error_wrap(err, "reading the bases of the type at 0x%" PRIx64, type);
	*slot = e;
	*ret = e;
	return NULL;
}

static struct pyu_error *type_of(struct pyu_values *v, uint64_t obj, uint64_t *type)
{
	if (obj == 0)
		return pyu_error_create(PYU_ERR_CORRUPT, "NULL object");
	if (obj & 7)
		return pyu_error_create(PYU_ERR_CORRUPT, "misaligned object address");
	struct pyu_error *err = field_u64(v, obj, v->l->ob_type, type);
	if (!err && (*type == 0 || (*type & 7)))
		err = pyu_error_create(PYU_ERR_CORRUPT, "implausible type pointer 0x%" PRIx64,
				       *type);
	return err;
}

static struct pyu_error *classify_obj(struct pyu_values *v, uint64_t obj, uint64_t *type,
				      struct type_entry *ret)
{
	struct pyu_error *err = type_of(v, obj, type);
	return err ? err : classify(v, *type, ret);
}

// ---- text objects ------------------------------------------------------------------------

// Code units of a str (3.x; 2.7 unicode) or the bytes of bytes (2.7 str): up to @max units
// into a malloc'd buffer. *total: the object's length.
struct text {
	uint8_t *data;
	size_t n, total;
	unsigned kind;
};

static struct pyu_error *read_text(struct pyu_values *v, uint64_t obj, enum kind k, size_t max,
				   struct text *ret)
{
	const struct pyu_layout *l = v->l;
	uint64_t data, len;
	unsigned kind = 1;
	struct pyu_error *err;
	if (k == K_BYTES || k == K_PY2STR) {
		if ((err = field_u64(v, obj, l->ob_size, &len)) != NULL)
			return err;
		data = obj + (uint64_t)l->bytes_sval;
	} else if (k == K_BYTEARRAY) {
		if ((err = field_u64(v, obj, l->ob_size, &len)) != NULL ||
		    (err = field_u64(v, obj, v->vl.bytearray_start, &data)) != NULL)
			return err;
	} else if (l->str == PYU_STR_PY2) {
		if ((err = field_u64(v, obj, l->unicode.length, &len)) != NULL ||
		    (err = field_u64(v, obj, l->unicode.data, &data)) != NULL)
			return err;
		kind = 4; // UCS4 builds (sys.maxunicode == 0x10ffff)
	} else {
		uint8_t st[4];
		if ((err = field_u64(v, obj, l->unicode.length, &len)) != NULL ||
		    (err = rd(v, obj + (uint64_t)l->unicode.state, st, 4)) != NULL)
			return err;
		uint32_t state = pyu_le32(st) >> l->unicode.state_shift;
		kind = (state >> 2) & 7;
		unsigned compact = (state >> 5) & 1, ascii = (state >> 6) & 1;
		if (kind != 1 && kind != 2 && kind != 4)
			return pyu_error_create(PYU_ERR_CORRUPT, "str kind %u", kind);
		if (ascii && kind != 1)
			return pyu_error_create(PYU_ERR_CORRUPT, "ASCII str of kind %u", kind);
		if (compact)
			data = obj + (uint64_t)(ascii ? l->unicode.ascii_size : l->unicode.compact_size);
		else if ((err = field_u64(v, obj, l->unicode.data, &data)) != NULL)
			return err;
	}
	if ((int64_t)len < 0 || len > SIZE_MAX_SANE)
		return pyu_error_create(PYU_ERR_CORRUPT, "length %" PRId64 " out of range",
					(int64_t)len);
	size_t n = len < max ? (size_t)len : max;
	uint8_t *buf = malloc(n * kind + 1);
	if (!buf)
		return &pyu_error_nomem;
	if (n && (err = rd(v, data, buf, n * kind)) != NULL) {
		free(buf);
		return err;
	}
	ret->data = buf;
	ret->n = n;
	ret->total = (size_t)len;
	ret->kind = kind;
	return NULL;
}

// A str object (3.x str, 2.7 str or unicode) as NUL-terminated UTF-8, at most NAME_CHARS
// characters (longer: error). For names, keys and module attributes.
static struct pyu_error *read_name_obj(struct pyu_values *v, uint64_t obj, char **ret)
{
	uint64_t type;
	struct type_entry te;
	struct pyu_error *err = classify_obj(v, obj, &type, &te);
	if (err)
		return err;
	if (te.kind != K_STR && te.kind != K_PY2STR) {
		// A str subclass that overrides __repr__ is still text.
		if (!(te.flags & (PYU_TPFLAGS_UNICODE_SUBCLASS |
				  (v->vl.py2 ? PYU_TPFLAGS_BYTES_SUBCLASS : 0))))
			return pyu_error_create(PYU_ERR_CORRUPT, "not a str");
	}
	enum kind k = (te.flags & PYU_TPFLAGS_UNICODE_SUBCLASS) ? K_STR : K_PY2STR;
	struct text tx;
	if ((err = read_text(v, obj, k, NAME_CHARS + 1, &tx)) != NULL)
		return err;
	if (tx.total > NAME_CHARS) {
		free(tx.data);
		return pyu_error_create(PYU_ERR_CORRUPT, "name longer than %d characters",
					NAME_CHARS);
	}
	char *out = malloc(tx.n * 4 + 1);
	if (!out) {
		free(tx.data);
		return &pyu_error_nomem;
	}
	size_t o = 0;
	for (size_t i = 0; i < tx.n; i++) {
		uint32_t cp = tx.kind == 1 ? tx.data[i]
			: tx.kind == 2 ? pyu_le16(tx.data + 2 * i) : pyu_le32(tx.data + 4 * i);
		o += pyu_utf8_put(cp, out + o);
	}
	out[o] = '\0';
	free(tx.data);
	*ret = out;
	return NULL;
}

// ---- dicts -------------------------------------------------------------------------------

typedef bool (*visit_fn)(void *arg, uint64_t key, uint64_t value);

static struct pyu_error *py2_dict_foreach(struct pyu_values *v, uint64_t dict, visit_fn visit,
					  void *arg)
{
	const struct pyu_value_layout *vl = &v->vl;
	uint64_t mask, table;
	struct pyu_error *err = field_u64(v, dict, vl->dict.mask, &mask);
	if (!err)
		err = field_u64(v, dict, vl->dict.table, &table);
	if (err)
		return err;
	if (mask >= (1ull << TABLE_LOG2_MAX) || ((mask + 1) & mask))
		return pyu_error_create(PYU_ERR_CORRUPT, "dict mask %" PRIu64 " implausible", mask);
	size_t es = (size_t)vl->dict.entry_size;
	uint8_t buf[CHUNK * 32];
	if (es == 0 || es > 32)
		return pyu_error_create(PYU_ERR_UNSUPPORTED, "dict entry size %zu", es);
	for (uint64_t i = 0; i <= mask; i += CHUNK) {
		size_t n = mask + 1 - i < CHUNK ? (size_t)(mask + 1 - i) : CHUNK;
		if ((err = rd(v, table + i * es, buf, n * es)) != NULL)
			return err;
		for (size_t j = 0; j < n; j++) {
			uint64_t key = pyu_get_u64(buf + j * es, vl->dict.entry_key);
			uint64_t val = pyu_get_u64(buf + j * es, vl->dict.entry_value);
			if (key && val && !visit(arg, key, val))
				return NULL;
		}
	}
	return NULL;
}

// The shape of a 3.6+ keys object.
struct keys_info {
	uint64_t entries;   // address of entry 0
	uint64_t nentries;
	size_t esize;
	int32_t key_off, value_off;
	uint64_t indices;   // address of the hash table of entry indices
	uint64_t size;      // its slots (a power of two)
	unsigned iwidth;    // bytes of each slot's signed index
};

static struct pyu_error *read_keys(struct pyu_values *v, uint64_t keys, struct keys_info *ret)
{
	const struct pyu_value_layout *vl = &v->vl;
	uint8_t hdr[64];
	if (vl->keys.indices <= 0 || vl->keys.indices > (int32_t)sizeof(hdr))
		return pyu_error_create(PYU_ERR_UNSUPPORTED, "no dict keys layout");
	struct pyu_error *err = rd(v, keys, hdr, (size_t)vl->keys.indices);
	if (err)
		return pyu_error_wrap(err, "reading dict keys at 0x%" PRIx64, keys);
	uint64_t size, index_bytes, nentries = pyu_get_u64(hdr, vl->keys.nentries);
	unsigned dk_kind = 0;
	if (v->vl.dict_kind == PYU_DICT_KEYS_36) {
		size = pyu_get_u64(hdr, vl->keys.size);
		if (size == 0 || size > (1ull << TABLE_LOG2_MAX) || (size & (size - 1)))
			return pyu_error_create(PYU_ERR_CORRUPT, "dict keys size %" PRIu64, size);
		unsigned w = size <= 0xff ? 1 : size <= 0xffff ? 2 : size <= 0xffffffffu ? 4 : 8;
		index_bytes = size * w;
	} else {
		unsigned log2 = hdr[vl->keys.log2_size], log2ib = hdr[vl->keys.log2_index_bytes];
		dk_kind = hdr[vl->keys.kind];
		if (log2 > TABLE_LOG2_MAX || log2ib > TABLE_LOG2_MAX + 3 || log2ib < log2 ||
		    dk_kind > 2)
			return pyu_error_create(PYU_ERR_CORRUPT,
						"dict keys log2 size %u, index bytes %u, kind %u",
						log2, log2ib, dk_kind);
		size = 1ull << log2;
		index_bytes = 1ull << log2ib;
	}
	if (nentries > size)
		return pyu_error_create(PYU_ERR_CORRUPT,
					"dict keys: %" PRIu64 " entries in a table of %" PRIu64,
					nentries, size);
	ret->entries = keys + (uint64_t)vl->keys.indices + index_bytes;
	ret->nentries = nentries;
	ret->indices = keys + (uint64_t)vl->keys.indices;
	ret->size = size;
	ret->iwidth = (unsigned)(index_bytes / size);
	if (dk_kind == 0) {
		ret->esize = (size_t)vl->dict.entry_size;
		ret->key_off = vl->dict.entry_key;
		ret->value_off = vl->dict.entry_value;
	} else { // {me_key, me_value}
		ret->esize = (size_t)vl->dict.uentry_size;
		ret->key_off = 0;
		ret->value_off = 8;
	}
	if (ret->esize < 16 || ret->esize > 32)
		return pyu_error_create(PYU_ERR_UNSUPPORTED, "dict entry size %zu", ret->esize);
	return NULL;
}

// Entries of a combined table in order, values from the entries (@values == 0) or from a
// split values array indexed like the entries (3.6 - 3.10).
static struct pyu_error *entries_foreach(struct pyu_values *v, const struct keys_info *k,
					 uint64_t values, visit_fn visit, void *arg)
{
	uint8_t buf[CHUNK * 32], vbuf[CHUNK * 8];
	struct pyu_error *err;
	for (uint64_t i = 0; i < k->nentries; i += CHUNK) {
		size_t n = k->nentries - i < CHUNK ? (size_t)(k->nentries - i) : CHUNK;
		if ((err = rd(v, k->entries + i * k->esize, buf, n * k->esize)) != NULL)
			return err;
		if (values && (err = rd(v, values + 8 * i, vbuf, n * 8)) != NULL)
			return err;
		// Every visitor reads the keys (names, mostly, each on a page of its own): their
		// pages at once, not a system call each.
		// And the values' headers when the visitor reads each value.
		uint64_t keys[2 * CHUNK];
		size_t nk = 0;
		for (size_t j = 0; j < n; j++) {
			uint64_t key = pyu_get_u64(buf + j * k->esize, k->key_off);
			uint64_t val = !v->visits_values ? 0 : values ? pyu_get_u64(vbuf, (int32_t)(8 * j))
				: pyu_get_u64(buf + j * k->esize, k->value_off);
			if (key)
				keys[nk++] = key;
			if (val)
				keys[nk++] = val;
		}
		pyu_target_prefetch_scattered(v->t, keys, nk, KEY_PREFETCH);
		for (size_t j = 0; j < n; j++) {
			uint64_t key = pyu_get_u64(buf + j * k->esize, k->key_off);
			uint64_t val = values ? pyu_get_u64(vbuf, (int32_t)(8 * j))
				: pyu_get_u64(buf + j * k->esize, k->value_off);
			if (key && val && !visit(arg, key, val))
				return NULL;
		}
	}
	return NULL;
}

// A 3.11+ values block in insertion order (its order bytes), keys from @k.
static struct pyu_error *ordered_values_foreach(struct pyu_values *v, const struct keys_info *k,
						uint64_t values, visit_fn visit, void *arg)
{
	const struct pyu_value_layout *vl = &v->vl;
	uint8_t order[256];
	size_t count;
	uint64_t array; // values[0]
	struct pyu_error *err;
	if (vl->split_kind == PYU_SPLIT_ORDER_BEFORE) {
		uint8_t sz[2];
		if ((err = rd(v, values - 2, sz, 2)) != NULL)
			return err;
		count = sz[0];
		if (count > k->nentries)
			return pyu_error_create(PYU_ERR_CORRUPT,
						"split dict: %zu ordered values, %" PRIu64 " keys",
						count, k->nentries);
		uint8_t rev[256];
		if (count && (err = rd(v, values - 2 - count, rev, count)) != NULL)
			return err;
		for (size_t i = 0; i < count; i++)
			order[i] = rev[count - 1 - i]; // order[i] = values[-3 - i]
		array = values;
	} else {
		uint8_t hdr[8];
		if ((err = rd(v, values, hdr, 8)) != NULL)
			return err;
		unsigned capacity = hdr[vl->dvalues.capacity];
		count = hdr[vl->dvalues.size];
		if (count > capacity || count > k->nentries)
			return pyu_error_create(PYU_ERR_CORRUPT,
						"split dict: %zu values, capacity %u, %" PRIu64
						" keys", count, capacity, k->nentries);
		array = values + (uint64_t)vl->dvalues.values;
		if (count && (err = rd(v, array + 8ull * capacity, order, count)) != NULL)
			return err;
	}
	for (size_t i = 0; i < count; i++) {
		uint64_t ix = order[i], key, val;
		if (ix >= k->nentries)
			return pyu_error_create(PYU_ERR_CORRUPT, "split dict order index %" PRIu64,
						ix);
		if ((err = rd_u64(v, k->entries + ix * k->esize + (uint64_t)k->key_off, &key)) ||
		    (err = rd_u64(v, array + 8 * ix, &val)))
			return err;
		if (key && val && !visit(arg, key, val))
			return NULL;
	}
	return NULL;
}

// Keys @keys with values @values (0: combined table): the dict's items in Python's order.
static struct pyu_error *table_foreach(struct pyu_values *v, uint64_t keys, uint64_t values,
				       visit_fn visit, void *arg)
{
	struct keys_info k;
	struct pyu_error *err = read_keys(v, keys, &k);
	if (err)
		return err;
	if (values && v->vl.split_kind != PYU_SPLIT_PLAIN)
		return ordered_values_foreach(v, &k, values, visit, arg);
	return entries_foreach(v, &k, values, visit, arg);
}

static struct pyu_error *dict_foreach_checked(struct pyu_values *v, uint64_t dict,
					      visit_fn visit, void *arg)
{
	if (v->vl.dict_kind == PYU_DICT_PY2_TABLE)
		return py2_dict_foreach(v, dict, visit, arg);
	uint64_t keys, values;
	struct pyu_error *err = field_u64(v, dict, v->vl.dict.keys, &keys);
	if (!err)
		err = field_u64(v, dict, v->vl.dict.values, &values);
	if (err)
		return err;
	return table_foreach(v, keys, values, visit, arg);
}

// ---- builtin types by address --------------------------------------------------------------
//
// A core without the interpreter's files lacks its read-only data, so the tp_name of every
// static type is unreadable there. The builtin types are found instead the way Python itself
// names them: the `builtins` module (from sys.modules, whose keys are all exact str) maps
// 'int', 'list', ... to the type objects, and 'None', 'Ellipsis', 'len', ... to objects of the
// others; a function in some module's dict (its func_code a code object) gives the function
// type. Learnt once per context, on first use; names remain the fall-back for the rest.

static const struct known_type *known_of(const struct pyu_values *v, uint64_t type)
{
	for (uint32_t i = 0; i < v->known_count; i++)
		if (v->known[i].addr == type)
			return &v->known[i];
	return NULL;
}

static void learn(struct pyu_values *v, uint64_t type, enum kind k, const char *prefix,
		  const char *name)
{
	if (k == K_OTHER)
		k = K_UNKNOWN;
	if (!type || (type & 7) || strlen(prefix) + strlen(name) >= KNOWN_NAME)
		return;
	// A type bound under two names (2.7's bytes is str) is known by the one that says
	// what it is.
	struct known_type *kt = (struct known_type *)known_of(v, type);
	if (kt && (kt->kind != K_UNKNOWN || k == K_UNKNOWN))
		return;
	if (!kt && v->known_count >= KNOWN_MAX)
		return;
	if (!kt)
		kt = &v->known[v->known_count++];
	kt->addr = type;
	kt->kind = (uint8_t)k;
	strcpy(kt->name, prefix);
	strcat(kt->name, name);
}

struct seed_walk {
	struct pyu_values *v;
	uint64_t str_type; // the type of sys.modules' keys
	uint64_t builtins; // the builtins module
	uint64_t types;    // the types module, when imported
	uint64_t modules[SEED_MODULE_SCAN];
	uint32_t module_count, seen;
	uint64_t code_type;
	bool found;
};

// The text of the dict key @key into @name when it is an exact str (of @w->str_type) of fewer
// than KNOWN_NAME one-byte characters without a NUL; false otherwise. Read once per entry:
// every use below compares or keeps it.
static bool key_text(struct seed_walk *w, uint64_t key, char name[KNOWN_NAME])
{
	uint64_t type;
	struct text tx;
	if (!ok(type_of(w->v, key, &type)) || type != w->str_type ||
	    !ok(read_text(w->v, key, w->v->vl.py2 ? K_PY2STR : K_STR, KNOWN_NAME, &tx)))
		return false;
	bool fits = tx.kind == 1 && tx.n == tx.total && tx.n < KNOWN_NAME &&
		    !memchr(tx.data, 0, tx.n);
	if (fits) {
		memcpy(name, tx.data, tx.n);
		name[tx.n] = 0;
	}
	free(tx.data);
	return fits;
}

static bool seed_modules_visit(void *arg, uint64_t key, uint64_t value)
{
	struct seed_walk *w = arg;
	if (w->seen++ >= SEED_MODULES)
		return false;
	uint64_t type;
	if (!w->str_type) {
		if (!ok(type_of(w->v, key, &type)))
			return false;
		w->str_type = type;
	}
	char name[KNOWN_NAME];
	bool named = key_text(w, key, name);
	if (named && !strcmp(name, "types"))
		w->types = value;
	if (!w->builtins && named &&
	    (!strcmp(name, "builtins") || !strcmp(name, "__builtin__")))
		w->builtins = value;
	else if (w->module_count < SEED_MODULE_SCAN)
		w->modules[w->module_count++] = value;
	return true;
}

static bool non_heap_type(struct pyu_values *v, uint64_t type)
{
	uint64_t flags;
	return ok(field_u64(v, type, v->l->type_tp_flags, &flags)) &&
	       !(flags & TPFLAGS_HEAPTYPE);
}

static void remember_func(struct pyu_values *v, const char *name, uint64_t value)
{
	for (uint32_t i = 0; i < v->func_count; i++) {
		if (v->funcs[i].addr == value) {
			v->funcs[i].ambiguous = true;
			return;
		}
	}
	if (v->func_count >= KNOWN_FUNCS)
		return;
	struct known_func *f = &v->funcs[v->func_count++];
	f->addr = value;
	f->ambiguous = false;
	strcpy(f->name, name); // shorter than KNOWN_NAME (key_text), as f->name is
}

// The name the builtins module binds builtin function @obj to, or NULL when it binds it under
// none or under more than one name. Learns the builtins first if needed.
static const char *builtin_func_name(struct pyu_values *v, uint64_t obj)
{
	if (!v->seeded)
		seed_known_types(v);
	for (uint32_t i = 0; i < v->func_count; i++)
		if (v->funcs[i].addr == obj)
			return v->funcs[i].ambiguous ? NULL : v->funcs[i].name;
	return NULL;
}

static bool seed_builtins_visit(void *arg, uint64_t key, uint64_t value)
{
	struct seed_walk *w = arg;
	struct pyu_values *v = w->v;
	if (w->seen++ >= SEED_ITEMS)
		return false;
	char name[KNOWN_NAME];
	uint64_t type, flags;
	if (!key_text(w, key, name) || !ok(type_of(v, value, &type)))
		return true;
	// Names bound to static types: the builtin types themselves (int, list, ...), the
	// exceptions and the rest (object, range, ...), each under its name.
	if (ok(field_u64(v, type, v->l->type_tp_flags, &flags)) &&
	    (flags & TPFLAGS_TYPE_SUBCLASS) && non_heap_type(v, value)) {
		uint64_t vflags = 0;
		// 2.7's builtin exceptions live in the exceptions module (their tp_name).
		bool py2exc = v->vl.py2 && ok(field_u64(v, value, v->l->type_tp_flags, &vflags)) &&
			      (vflags & TPFLAGS_BASE_EXC_SUBCLASS);
		learn(v, value, kind_by_name(v, name), py2exc ? "exceptions." : "", name);
		if (!strcmp(name, "BaseException"))
			v->exc_root = value;
		return true;
	}
	// Any other value of a static type, under its name: builtin functions among them, whose
	// names their PyMethodDef keeps in read-only data. Which are functions is known once the
	// walk has learnt the type of 'len'.
	if (non_heap_type(v, type))
		remember_func(v, name, value);
	// Names bound to objects of the others.
	static const struct {
		const char *key, *type_name;
		enum kind k;
	} objects[] = {
		{"None", "NoneType", K_NONE},
		{"Ellipsis", "ellipsis", K_ELLIPSIS},
		{"NotImplemented", "NotImplementedType", K_NOTIMPL},
		{"len", "builtin_function_or_method", K_CFUNCTION},
	};
	for (size_t i = 0; i < sizeof(objects) / sizeof(objects[0]); i++) {
		if (!strcmp(name, objects[i].key)) {
			if (non_heap_type(v, type))
				learn(v, type, objects[i].k, "", objects[i].type_name);
			return true;
		}
	}
	return true;
}

// The types module's names for the interpreter's types that builtins does not bind
// (GeneratorType is generator, ...): each learnt under its tp_name.
static bool seed_types_visit(void *arg, uint64_t key, uint64_t value)
{
	static const struct {
		const char *key, *type_name;
	} names[] = {
		{"GeneratorType", "generator"}, {"CoroutineType", "coroutine"},
		{"AsyncGeneratorType", "async_generator"}, {"FrameType", "frame"},
		{"CodeType", "code"}, {"FunctionType", "function"}, {"CellType", "cell"},
		{"ModuleType", "module"},
	};
	struct seed_walk *w = arg;
	struct pyu_values *v = w->v;
	if (w->seen++ >= SEED_ITEMS)
		return false;
	char name[KNOWN_NAME];
	if (!key_text(w, key, name))
		return true;
	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		if (!strcmp(name, names[i].key) && non_heap_type(v, value))
			learn(v, value, kind_by_name(v, names[i].type_name), "", names[i].type_name);
	return true;
}

// A function among a module's values: an object of a static type not learnt yet whose
// func_code field holds an object of the code type.
static bool seed_function_visit(void *arg, uint64_t key, uint64_t value)
{
	struct seed_walk *w = arg;
	struct pyu_values *v = w->v;
	(void)key;
	if (w->seen++ >= SEED_ITEMS)
		return false;
	uint64_t type, code, code_type;
	if (!ok(type_of(v, value, &type)) || known_of(v, type) || !non_heap_type(v, type))
		return true;
	struct pyu_error *err = field_u64(v, value, v->vl.func.code, &code);
	if (!err)
		err = type_of(v, code, &code_type);
	if (!err) {
		struct pyu_types ty = v->rt->types; // a copy: what it learns is not kept
		err = pyu_type_check(&ty, v->t, v->l, PYU_TYPE_CODE, code_type, code);
	}
	if (err) {
		pyu_error_destroy(err);
		return true;
	}
	learn(v, type, K_FUNCTION, "", "function");
	w->found = true;
	return false;
}


// Learns the builtin types' addresses (see above). Cannot fail: what cannot be read is not
// learnt, and names decide for those types.
static void seed_known_types(struct pyu_values *v)
{
	v->seeded = true;
	const struct pyu_layout *l = v->l;
	uint64_t interp, modules, dict_type, module_type, bdict;
	struct seed_walk w = {v, 0, 0, 0, {0}, 0, 0, 0, false};
	struct pyu_error *err = NULL;
	if (!v->rt->interp_head_addr || l->interp.modules == PYU_NO_FIELD ||
	    v->vl.module_dict == PYU_NO_FIELD)
		return;
	if ((err = rd_u64(v, v->rt->interp_head_addr, &interp)) != NULL ||
	    (err = field_u64(v, interp, l->interp.modules, &modules)) != NULL ||
	    (err = type_of(v, modules, &dict_type)) != NULL ||
	    (err = dict_foreach_checked(v, modules, seed_modules_visit, &w)) != NULL)
		goto out;
	if (!w.builtins || !w.str_type || !non_heap_type(v, w.str_type) ||
	    !non_heap_type(v, dict_type))
		goto out;
	v->builtins = w.builtins;
	if ((err = type_of(v, w.builtins, &module_type)) != NULL ||
	    (err = field_u64(v, w.builtins, v->vl.module_dict, &bdict)) != NULL)
		goto out;
	w.seen = 0;
	v->visits_values = true;
	err = dict_foreach_checked(v, bdict, seed_builtins_visit, &w);
	v->visits_values = false;
	if (err)
		goto out;
	// sys.modules is a dict and its keys str (3.x) or str/bytes (2.7): the same types
	// builtins named, when it named them.
	learn(v, dict_type, K_DICT, "", "dict");
	learn(v, w.str_type, v->vl.py2 ? K_PY2STR : K_STR, "", "str");
	if (non_heap_type(v, module_type))
		learn(v, module_type, K_MODULE, "", "module");
	uint64_t tdict = 0;
	if (w.types && ok(field_u64(v, w.types, v->vl.module_dict, &tdict)) && tdict) {
		w.seen = 0;
		v->visits_values = true;
		pyu_error_destroy(dict_foreach_checked(v, tdict, seed_types_visit, &w));
		v->visits_values = false;
	}
	if (v->vl.func.code == PYU_NO_FIELD)
		goto out;
	for (uint32_t i = 0; i < w.module_count && !w.found; i++) {
		uint64_t mtype, mdict;
		if (!ok(type_of(v, w.modules[i], &mtype)) || mtype != module_type ||
		    !ok(field_u64(v, w.modules[i], v->vl.module_dict, &mdict)) || !mdict)
			continue;
		w.seen = 0;
		v->visits_values = true;
		pyu_error_destroy(dict_foreach_checked(v, mdict, seed_function_visit, &w));
		v->visits_values = false;
	}
out:
	pyu_error_destroy(err);
}

// An error unless the object at @dict is a dict (or of a subclass of dict).
static struct pyu_error *must_be_dict(struct pyu_values *v, uint64_t dict)
{
	uint64_t type;
	struct type_entry te;
	struct pyu_error *err = classify_obj(v, dict, &type, &te);
	if (!err && !(te.flags & TPFLAGS_DICT_SUBCLASS))
		err = pyu_error_create(PYU_ERR_CORRUPT, "not a dict");
	return err;
}

struct pyu_error *pyu_dict_foreach(struct pyu_values *v, uint64_t dict, visit_fn visit,
				   void *arg)
{
	struct pyu_error *err = must_be_dict(v, dict);
	if (!err)
		err = dict_foreach_checked(v, dict, visit, arg);
	if (err)
		return pyu_error_wrap(err, "reading the dict at 0x%" PRIx64, dict);
	return NULL;
}

struct find_str {
	struct pyu_values *v;
	const char *key;
	uint64_t found;
	bool hit;
};

static bool is_ascii(const char *s, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if ((unsigned char)s[i] >= 0x80)
			return false;
	return true;
}

// Whether the str object @key reads as @name: remembered per key and name (an unreadable key
// is no match, and is not remembered).
static bool key_is(struct pyu_values *v, uint64_t key, const char *name)
{
	for (uint32_t i = 0; i < KEY_MEMO; i++) {
		const struct key_memo *m = &v->keys_seen[i];
		if (m->key == key && key && strcmp(m->name, name) == 0)
			return m->equal;
	}
	// An ASCII @name of n characters equals only a str of n code points: a key of another
	// length is told by its length field alone (a module dict is searched key by key, and
	// reading each key whole was most of what finding thread names cost).
	size_t n = strlen(name);
	if (!v->vl.py2 && v->l->str != PYU_STR_PY2 && is_ascii(name, n)) {
		uint64_t len;
		struct pyu_error *e = field_u64(v, key, v->l->unicode.length, &len);
		bool other = e || len != n;
		pyu_error_destroy(e);
		if (other)
			return false;
	}
	char *s = NULL;
	struct pyu_error *err = read_name_obj(v, key, &s);
	if (err) {
		pyu_error_destroy(err);
		return false;
	}
	bool equal = strcmp(s, name) == 0;
	free(s);
	if (n < KEY_MEMO_NAME) {
		struct key_memo *m = &v->keys_seen[v->keys_next];
		v->keys_next = (v->keys_next + 1) % KEY_MEMO;
		m->key = key;
		memcpy(m->name, name, n + 1);
		m->equal = equal;
	}
	return equal;
}

static bool find_str_visit(void *arg, uint64_t key, uint64_t value)
{
	struct find_str *f = arg;
	if (key_is(f->v, key, f->key)) {
		f->found = value;
		f->hit = true;
	}
	return !f->hit;
}

// ---- str keys by hash --------------------------------------------------------------------
//
// A table of many str keys (a module's globals: threading's has 150) searched key by key reads
// every key object before the one wanted, each on a page of its own, mostly: finding a thread's
// name read 30 pages of keys, a third of a fresh 3.15 handle's JSON of one thread. CPython
// finds a key by its hash, and so does this: the str hash of the version (value_layout.h) keyed
// by the target's _Py_HashSecret, then CPython's probe sequence over the table of indices. The
// entry found is compared like any other key, so a wrong hash (a build configured with another
// algorithm or a hash cutoff) finds nothing, and the search goes on key by key.

#define HASH_PROBES 64 // slots looked at before giving up (a sparse table needs a few)
#define PERTURB_SHIFT 5

// The hash the target's str of the ASCII text @name (@n bytes) has, into *ret; false when it
// is not known. The keys are read once per reader.
static bool name_hash(struct pyu_values *v, const char *name, size_t n, uint64_t *ret)
{
	if (v->hash_keys == 0) {
		uint8_t k[16];
		v->hash_keys = -1;
		if (v->vl.str_hash != PYU_STR_HASH_NONE && v->rt->hash_secret_addr &&
		    ok(rd(v, v->rt->hash_secret_addr, k, sizeof(k)))) {
			v->hash_k0 = pyu_get_u64(k, 0);
			v->hash_k1 = pyu_get_u64(k, 8);
			v->hash_keys = 1;
		}
	}
	if (v->hash_keys < 0)
		return false;
	bool sip13 = v->vl.str_hash == PYU_STR_HASH_SIPHASH13;
	uint64_t h = n == 0 ? 0 : pyu_siphash(sip13 ? 1 : 2, sip13 ? 3 : 4, v->hash_k0, v->hash_k1,
					      (const uint8_t *)name, n);
	*ret = h == UINT64_MAX ? UINT64_MAX - 1 : h; // -1 is no hash: CPython makes it -2
	return true;
}

// Slot @i of @k's table of indices into *ret (-1 empty, -2 deleted, else an entry); false when
// unreadable.
static bool index_at(struct pyu_values *v, const struct keys_info *k, uint64_t i, int64_t *ret)
{
	uint8_t b[8];
	if (!ok(rd(v, k->indices + i * k->iwidth, b, k->iwidth)))
		return false;
	switch (k->iwidth) {
	case 1: *ret = (int8_t)b[0]; return true;
	case 2: *ret = (int16_t)pyu_le16(b); return true;
	case 4: *ret = (int32_t)pyu_le32(b); return true;
	case 8: *ret = (int64_t)pyu_get_u64(b, 0); return true;
	default: return false;
	}
}

// The value of the str key @f->key in the table of keys object @keys with values @values (0:
// a combined table's, in its entries), found by hash into @f. False when not found so (not
// there, or the hash is not the target's, or something unreadable): the caller searches key
// by key. Cannot fail.
static bool table_find_hashed(struct pyu_values *v, uint64_t keys, uint64_t values,
			      struct find_str *f)
{
	uint64_t hash;
	struct keys_info k;
	size_t n = strlen(f->key);
	if (v->vl.py2 || v->l->str == PYU_STR_PY2 || !is_ascii(f->key, n) ||
	    !name_hash(v, f->key, n, &hash) || !keys || !ok(read_keys(v, keys, &k)) ||
	    k.iwidth == 0)
		return false;
	uint64_t array = values; // where a split table's values are, indexed like the entries
	if (values && v->vl.split_kind == PYU_SPLIT_HEADER)
		array = values + (uint64_t)v->vl.dvalues.values;
	uint64_t mask = k.size - 1, perturb = hash, i = hash & mask;
	for (unsigned probe = 0; probe < HASH_PROBES; probe++) {
		int64_t ix;
		if (!index_at(v, &k, i, &ix) || ix == -1 || ix >= (int64_t)k.nentries)
			return false; // -1: an empty slot ends the search
		if (ix >= 0) {
			uint8_t e[32];
			uint64_t at = k.entries + (uint64_t)ix * k.esize, key, val;
			if (!ok(rd(v, at, e, k.esize)))
				return false;
			key = pyu_get_u64(e, k.key_off);
			if (key && key_is(v, key, f->key)) {
				if (!values)
					val = pyu_get_u64(e, k.value_off);
				else if (!ok(rd_u64(v, array + 8 * (uint64_t)ix, &val)))
					return false;
				if (!val) // not set in this object's values: not there
					return false;
				f->found = val;
				f->hit = true;
				return true;
			}
		}
		perturb >>= PERTURB_SHIFT;
		i = (i * 5 + perturb + 1) & mask;
	}
	return false;
}

// find_str over the dict @dict (known to be one): by hash, else key by key.
static struct pyu_error *dict_find_str(struct pyu_values *v, uint64_t dict, struct find_str *f)
{
	uint64_t keys, values;
	if (v->vl.dict_kind != PYU_DICT_PY2_TABLE &&
	    ok(field_u64(v, dict, v->vl.dict.keys, &keys)) &&
	    ok(field_u64(v, dict, v->vl.dict.values, &values)) &&
	    table_find_hashed(v, keys, values, f))
		return NULL;
	return dict_foreach_checked(v, dict, find_str_visit, f);
}

struct pyu_error *pyu_dict_get_str(struct pyu_values *v, uint64_t dict, const char *key,
				   uint64_t *ret)
{
	struct find_str f = {v, key, 0, false};
	struct pyu_error *err = must_be_dict(v, dict);
	if (!err)
		err = dict_find_str(v, dict, &f);
	if (err)
		return pyu_error_wrap(err, "reading the dict at 0x%" PRIx64, dict);
	if (!f.hit)
		return pyu_error_create(PYU_ERR_NOT_FOUND, "no key '%s'", key);
	*ret = f.found;
	return NULL;
}

// The value of an int (3.x; 2.7 int or long) that fits in int64_t.
static struct pyu_error *read_small_int(struct pyu_values *v, uint64_t obj, enum kind k,
					int64_t *ret);

struct find_ints {
	struct pyu_values *v;
	const int64_t *keys;
	size_t n, left;
	uint64_t *found;
};

static bool find_ints_visit(void *arg, uint64_t key, uint64_t value)
{
	struct find_ints *f = arg;
	uint64_t type;
	struct type_entry te;
	int64_t k;
	struct pyu_error *err = classify_obj(f->v, key, &type, &te);
	if (!err && te.kind != K_INT && te.kind != K_PY2INT)
		return true;
	if (!err)
		err = read_small_int(f->v, key, (enum kind)te.kind, &k);
	if (err) {
		pyu_error_destroy(err);
		return true;
	}
	for (size_t i = 0; i < f->n; i++) {
		if (f->keys[i] == k && !f->found[i]) {
			f->found[i] = value;
			f->left--;
		}
	}
	return f->left > 0;
}

struct pyu_error *pyu_dict_get_ints(struct pyu_values *v, uint64_t dict, const int64_t *keys,
				    size_t n, uint64_t *ret)
{
	memset(ret, 0, n * sizeof(*ret));
	struct find_ints f = {v, keys, n, n, ret};
	return n ? pyu_dict_foreach(v, dict, find_ints_visit, &f) : NULL;
}

struct pyu_error *pyu_dict_get_int(struct pyu_values *v, uint64_t dict, int64_t key,
				   uint64_t *ret)
{
	uint64_t found;
	struct pyu_error *err = pyu_dict_get_ints(v, dict, &key, 1, &found);
	if (err)
		return err;
	if (!found) // a dict's values are never NULL: 0 is "no such key"
		return pyu_error_create(PYU_ERR_NOT_FOUND, "no key %" PRId64, key);
	*ret = found;
	return NULL;
}

// ---- attributes --------------------------------------------------------------------------

// Where an object's attributes are: a dict, or a values block with the type's shared keys.
struct attrs {
	uint64_t dict;
	uint64_t keys, values;
};

static struct pyu_error *find_attrs(struct pyu_values *v, uint64_t obj, struct attrs *ret)
{
	const struct pyu_value_layout *vl = &v->vl;
	uint64_t type;
	struct type_entry te;
	struct pyu_error *err = classify_obj(v, obj, &type, &te);
	if (err)
		return err;
	memset(ret, 0, sizeof(*ret));
	if (te.kind == K_MODULE)
		return field_u64(v, obj, vl->module_dict, &ret->dict);
	if (te.kind == K_PY2_INSTANCE)
		return field_u64(v, obj, vl->instance.dict, &ret->dict);
	if (te.kind == K_TYPE)
		return field_u64(v, obj, vl->type.dict, &ret->dict);
	if (vl->managed_kind != PYU_MANAGED_NONE && (te.flags & TPFLAGS_MANAGED_DICT)) {
		uint64_t word;
		if ((err = rd_u64(v, obj - 24, &word)) != NULL)
			return err;
		if (vl->managed_kind == PYU_MANAGED_312 && (word & 1)) {
			ret->values = word + 1;
		} else if (word) {
			ret->dict = word;
			return NULL;
		} else if (vl->managed_kind == PYU_MANAGED_311) {
			if ((err = rd_u64(v, obj - 32, &ret->values)) != NULL)
				return err;
		} else if (vl->managed_kind == PYU_MANAGED_313 &&
			   (te.flags & TPFLAGS_INLINE_VALUES)) {
			uint64_t basic;
			uint8_t valid;
			if ((err = field_u64(v, type, vl->type.basicsize, &basic)) != NULL)
				return err;
			if (basic > 1u << 20)
				return pyu_error_create(PYU_ERR_CORRUPT, "tp_basicsize %" PRIu64,
							basic);
			ret->values = obj + basic;
			if ((err = rd(v, ret->values + (uint64_t)vl->dvalues.valid, &valid, 1)))
				return err;
			if (!valid)
				ret->values = 0;
		}
		if (ret->values &&
		    (err = field_u64(v, type, vl->type.ht_cached_keys, &ret->keys)) != NULL)
			return err;
		if (ret->values && !ret->keys)
			ret->values = 0;
		return NULL;
	}
	uint64_t off;
	if ((err = field_u64(v, type, vl->type.dictoffset, &off)) != NULL)
		return err;
	int64_t doff = (int64_t)off;
	if (doff == 0)
		return NULL;
	if (doff < 0) {
		// From the end of a variable-size object: basicsize + |ob_size| * itemsize, rounded
		// up to a pointer.
		uint64_t basic, item, size;
		if ((err = field_u64(v, type, vl->type.basicsize, &basic)) ||
		    (err = field_u64(v, type, vl->type.itemsize, &item)) ||
		    (err = field_u64(v, obj, v->l->ob_size, &size)))
			return err;
		// |ob_size| in unsigned arithmetic: a corrupt INT64_MIN has no signed negation.
		uint64_t n = (int64_t)size < 0 ? (uint64_t)0 - size : size;
		if (basic > 1u << 20 || item > 1u << 10 || n > SIZE_MAX_SANE)
			return pyu_error_create(PYU_ERR_CORRUPT, "variable-size object implausible");
		uint64_t total = (basic + n * item + 7) & ~7ull;
		doff += (int64_t)total;
	}
	if (doff < 0 || doff > (1 << 24))
		return pyu_error_create(PYU_ERR_CORRUPT, "tp_dictoffset %" PRId64, doff);
	return rd_u64(v, obj + (uint64_t)doff, &ret->dict);
}

static struct pyu_error *attrs_foreach(struct pyu_values *v, const struct attrs *a,
				       visit_fn visit, void *arg)
{
	if (a->dict)
		return dict_foreach_checked(v, a->dict, visit, arg);
	if (a->values)
		return table_foreach(v, a->keys, a->values, visit, arg);
	return NULL;
}

struct pyu_error *pyu_object_dict_address(struct pyu_values *v, uint64_t obj, uint64_t *ret)
{
	struct attrs a;
	struct pyu_error *err = find_attrs(v, obj, &a);
	if (!err)
		*ret = a.dict;
	return err;
}

struct pyu_error *pyu_object_attrs_foreach(struct pyu_values *v, uint64_t obj, visit_fn visit,
					   void *arg)
{
	struct attrs a;
	struct pyu_error *err = find_attrs(v, obj, &a);
	if (!err)
		err = attrs_foreach(v, &a, visit, arg);
	if (err)
		return pyu_error_wrap(err, "reading the attributes of the object at 0x%" PRIx64,
				      obj);
	return NULL;
}

// find_str over the attributes @a: by hash, else key by key.
static struct pyu_error *attrs_find_str(struct pyu_values *v, const struct attrs *a,
					struct find_str *f)
{
	if (a->dict)
		return dict_find_str(v, a->dict, f);
	if (a->values && table_find_hashed(v, a->keys, a->values, f))
		return NULL;
	return attrs_foreach(v, a, find_str_visit, f);
}

static struct pyu_error *attrs_get(struct pyu_values *v, const struct attrs *a,
				   const char *name, uint64_t *ret)
{
	struct find_str f = {v, name, 0, false};
	struct pyu_error *err = attrs_find_str(v, a, &f);
	if (err)
		return err;
	if (!f.hit)
		return pyu_error_create(PYU_ERR_NOT_FOUND, "no attribute '%s'", name);
	*ret = f.found;
	return NULL;
}

static const char *keep_where(struct pyu_values *v, const char *prefix, const char *name)
{
	size_t n = strlen(prefix) + strlen(name) + 1;
	struct where_str *w = malloc(sizeof(*w) + n);
	if (!w)
		return "class";
	strcpy(w->text, prefix);
	strcat(w->text, name);
	w->next = v->wheres;
	v->wheres = w;
	return w->text;
}

static struct pyu_error *type_short_name(struct pyu_values *v, uint64_t type, char **ret);
static bool get_dict_str(struct pyu_values *v, uint64_t dict, const char *key, uint64_t *ret);

struct pyu_error *pyu_object_getattr(struct pyu_values *v, uint64_t obj, const char *name,
				     uint64_t *ret, const char **where)
{
	uint64_t type;
	struct type_entry te;
	struct pyu_error *err = classify_obj(v, obj, &type, &te);
	if (err)
		return pyu_error_wrap(err, "looking up '%s' on the object at 0x%" PRIx64, name,
				      obj);
	struct attrs a;
	uint64_t val = 0;
	if (te.kind != K_TYPE) {
		err = find_attrs(v, obj, &a);
		if (!err)
			err = attrs_get(v, &a, name, &val);
		if (!err) {
			*ret = val;
			if (where)
				*where = te.kind == K_MODULE ? "module" : "instance";
			return NULL;
		}
		if (err->code != PYU_ERR_NOT_FOUND || te.kind == K_MODULE)
			return pyu_error_wrap(err, "looking up '%s' on the object at 0x%" PRIx64,
					      name, obj);
		pyu_error_destroy(err);
	}
	if (te.kind == K_PY2_INSTANCE || te.kind == K_PY2_CLASS) {
		// 2.7 old-style: the class's own dict (its bases are not searched).
		uint64_t cls = obj, d;
		char *cn = NULL;
		if (te.kind == K_PY2_INSTANCE &&
		    (err = field_u64(v, obj, v->vl.instance.klass, &cls)) != NULL)
			return err;
		if ((err = field_u64(v, cls, v->vl.instance.cl_dict, &d)) != NULL)
			return err;
		struct find_str f = {v, name, 0, false};
		if (d && (err = dict_foreach_checked(v, d, find_str_visit, &f)) != NULL)
			return err;
		if (!f.hit)
			return pyu_error_create(PYU_ERR_NOT_FOUND, "no attribute '%s'", name);
		*ret = f.found;
		if (where) {
			uint64_t np;
			*where = "class";
			if (!field_u64(v, cls, v->vl.instance.cl_name, &np) &&
			    !read_name_obj(v, np, &cn))
				*where = keep_where(v, "class ", cn);
			free(cn);
		}
		return NULL;
	}
	// The MRO: of the class itself, or of the instance's type.
	uint64_t cls = te.kind == K_TYPE ? obj : type, mro;
	if ((err = field_u64(v, cls, v->vl.type.mro, &mro)) != NULL)
		return pyu_error_wrap(err, "reading the MRO of the type at 0x%" PRIx64, cls);
	uint64_t n = 0;
	if (mro && (err = field_u64(v, mro, v->l->ob_size, &n)) != NULL)
		return err;
	if (n > MRO_MAX)
		return pyu_error_create(PYU_ERR_CORRUPT, "MRO of %" PRIu64 " classes", n);
	if (!mro) // 2.7 old-style classes and unready types: the class alone
		n = 1;
	for (uint64_t i = 0; i < n; i++) {
		uint64_t c = cls, d;
		if (mro && (err = rd_u64(v, mro + (uint64_t)v->l->tuple_item + 8 * i, &c)))
			return err;
		if ((err = field_u64(v, c, v->vl.type.dict, &d)) != NULL)
			return err;
		if (!d) // 3.12+ static builtin types keep their dict elsewhere
			continue;
		struct find_str f = {v, name, 0, false};
		if ((err = dict_find_str(v, d, &f)) != NULL)
			return err;
		if (f.hit) {
			*ret = f.found;
			if (where) {
				char *cn = NULL;
				if ((err = type_short_name(v, c, &cn)) != NULL) {
					pyu_error_destroy(err);
					*where = "class";
				} else {
					*where = keep_where(v, "class ", cn);
					free(cn);
				}
			}
			return NULL;
		}
	}
	return pyu_error_create(PYU_ERR_NOT_FOUND, "no attribute '%s'", name);
}

// ---- repr --------------------------------------------------------------------------------

static void repr_obj(struct pyu_values *v, uint64_t addr, struct pyu_strbuf *sb);

static void unreadable(struct pyu_values *v, struct pyu_strbuf *sb, const char *what,
		       uint64_t addr, struct pyu_error *err)
{
	pyu_strbuf_printf(sb, "<unreadable %s at 0x%" PRIx64 ": ", what, addr);
	const char *msg = pyu_error_message(err);
	pyu_text_name(sb, msg, strlen(msg), v->vl.unicode_db);
	pyu_strbuf_putc(sb, '>');
	pyu_error_destroy(err);
}

static bool over_output(struct pyu_values *v, struct pyu_strbuf *sb)
{
	if (sb->len > v->lim.output) {
		v->cut = true;
		return true;
	}
	return false;
}

static void put_name(struct pyu_values *v, struct pyu_strbuf *sb, const char *s)
{
	pyu_text_name(sb, s, strlen(s), v->vl.unicode_db);
}

// type.__name__ for a type: heap types their ht_name, static types tp_name after the dot.
static struct pyu_error *type_short_name(struct pyu_values *v, uint64_t type, char **ret)
{
	uint64_t flags, p;
	struct pyu_error *err = field_u64(v, type, v->l->type_tp_flags, &flags);
	if (err)
		return err;
	if ((flags & TPFLAGS_HEAPTYPE) && v->vl.type.ht_name != PYU_NO_FIELD) {
		if ((err = field_u64(v, type, v->vl.type.ht_name, &p)) != NULL)
			return err;
		return read_name_obj(v, p, ret);
	}
	char *full;
	if ((err = read_tp_name(v, type, &full)) != NULL)
		return err;
	const char *dot = strrchr(full, '.');
	if (dot) {
		memmove(full, dot + 1, strlen(dot + 1) + 1);
	}
	*ret = full;
	return NULL;
}

// The module and qualified name Python's object and type reprs use. *module NULL: builtins
// (or no str __module__). Both malloc'd.
static struct pyu_error *type_names(struct pyu_values *v, uint64_t type, char **module,
				    char **qualname)
{
	uint64_t flags, p;
	struct pyu_error *err = field_u64(v, type, v->l->type_tp_flags, &flags);
	if (err)
		return err;
	*module = NULL;
	if (flags & TPFLAGS_HEAPTYPE) {
		int32_t qoff = v->vl.type.ht_qualname != PYU_NO_FIELD ? v->vl.type.ht_qualname
			: v->vl.type.ht_name;
		uint64_t dict = 0, mod;
		if ((err = field_u64(v, type, qoff, &p)) != NULL ||
		    (err = read_name_obj(v, p, qualname)) != NULL)
			return err;
		// __module__ must be a str; anything else counts as builtins - but a class made in C
		// whose dict's __module__ is its instances' member descriptor and whose metaclass is
		// not `type` (Cython 3's functions: the metaclass names the module) is named, as
		// Python names it, by its tp_name's dotted prefix.
		pyu_error_destroy(field_u64(v, type, v->vl.type.dict, &dict));
		if (get_dict_str(v, dict, "__module__", &mod) &&
		    (err = read_name_obj(v, mod, module)) != NULL) {
			pyu_error_destroy(err);
			char *full = NULL, *dot = NULL;
			uint64_t meta = 0;
			err = type_of(v, type, &meta);
			if (!err)
				err = read_tp_name(v, meta, &full);
			bool plain = !err && !strcmp(full, "type");
			free(full);
			full = NULL;
			if (!err && !plain)
				err = read_tp_name(v, type, &full);
			else if (!err)
				err = pyu_error_create(PYU_ERR_NOT_FOUND, "a class of type");
			if (!err && (dot = strrchr(full, '.')) != NULL) {
				*dot = '\0';
				*module = full;
			} else {
				pyu_error_destroy(err);
				free(full);
			}
		}
		return NULL;
	}
	char *full;
	if ((err = read_tp_name(v, type, &full)) != NULL)
		return err;
	char *dot = strrchr(full, '.');
	if (dot) {
		*dot = '\0';
		*qualname = strdup(dot + 1);
		*module = full;
		if (!*qualname) {
			free(full);
			*module = NULL;
			return &pyu_error_nomem;
		}
	} else {
		*qualname = full;
	}
	return NULL;
}

static bool is_builtins(const struct pyu_values *v, const char *module)
{
	return !module || strcmp(module, v->vl.py2 ? "__builtin__" : "builtins") == 0;
}

// <module.Qualname object at 0x...>, as object.__repr__ writes it.
static void default_form(struct pyu_values *v, uint64_t addr, uint64_t type,
			 struct pyu_strbuf *sb)
{
	char *module = NULL, *qual = NULL;
	struct pyu_error *err = type_names(v, type, &module, &qual);
	if (err) {
		unreadable(v, sb, "object", addr, err);
		return;
	}
	pyu_strbuf_putc(sb, '<');
	if (!is_builtins(v, module)) {
		put_name(v, sb, module);
		pyu_strbuf_putc(sb, '.');
	}
	put_name(v, sb, qual);
	pyu_strbuf_printf(sb, " object at 0x%" PRIx64 ">", addr);
	free(module);
	free(qual);
}

static void repr_type(struct pyu_values *v, uint64_t type, struct pyu_strbuf *sb)
{
	char *module = NULL, *qual = NULL;
	uint64_t flags = 0;
	struct pyu_error *err = field_u64(v, type, v->l->type_tp_flags, &flags);
	if (!err)
		err = type_names(v, type, &module, &qual);
	if (err) {
		unreadable(v, sb, "class", type, err);
		return;
	}
	bool heap = flags & TPFLAGS_HEAPTYPE;
	pyu_strbuf_puts(sb, v->vl.py2 && !heap ? "<type '" : "<class '");
	if (!is_builtins(v, module)) {
		put_name(v, sb, module);
		pyu_strbuf_putc(sb, '.');
	}
	put_name(v, sb, qual);
	pyu_strbuf_puts(sb, "'>");
	free(module);
	free(qual);
}

static struct pyu_error *int_header(struct pyu_values *v, uint64_t obj, uint64_t *ndigits,
				    int *sign)
{
	uint64_t tag;
	int32_t off = v->vl.int_kind == PYU_INT_LV_TAG ? v->vl.int_.digits - 8 : v->l->ob_size;
	struct pyu_error *err = rd_u64(v, obj + (uint64_t)off, &tag);
	if (err)
		return err;
	if (v->vl.int_kind == PYU_INT_LV_TAG) {
		*ndigits = tag >> 3;
		*sign = 1 - (int)(tag & 3);
		if ((tag & 3) == 3 || (*sign == 0 && *ndigits))
			return pyu_error_create(PYU_ERR_CORRUPT, "int tag 0x%" PRIx64, tag);
		if (*ndigits == 0)
			*sign = 0;
	} else {
		int64_t s = (int64_t)tag;
		*sign = s < 0 ? -1 : s > 0;
		*ndigits = s < 0 ? (uint64_t)0 - (uint64_t)s : (uint64_t)s;
	}
	if (*ndigits > SIZE_MAX_SANE / 4)
		return pyu_error_create(PYU_ERR_CORRUPT, "int of %" PRIu64 " digits", *ndigits);
	return NULL;
}

static struct pyu_error *read_small_int(struct pyu_values *v, uint64_t obj, enum kind k,
					int64_t *ret)
{
	if (k == K_PY2INT) {
		uint64_t x;
		struct pyu_error *err = field_u64(v, obj, v->vl.int_.ival, &x);
		if (!err)
			*ret = (int64_t)x;
		return err;
	}
	uint64_t n;
	int sign;
	struct pyu_error *err = int_header(v, obj, &n, &sign);
	if (err)
		return err;
	if (n > 3)
		return pyu_error_create(PYU_ERR_CORRUPT, "int too large");
	uint8_t d[12];
	if (n && (err = rd(v, obj + (uint64_t)v->vl.int_.digits, d, (size_t)n * 4)) != NULL)
		return err;
	uint64_t x = 0;
	for (uint64_t i = n; i-- > 0;) {
		uint32_t dig = pyu_le32(d + 4 * i);
		if (dig >> 30 || x >> 33)
			return pyu_error_create(PYU_ERR_CORRUPT, "int too large");
		x = x << 30 | dig;
	}
	if (x > (uint64_t)INT64_MAX)
		return pyu_error_create(PYU_ERR_CORRUPT, "int too large");
	*ret = sign < 0 ? -(int64_t)x : (int64_t)x;
	return NULL;
}

static void repr_int(struct pyu_values *v, uint64_t obj, bool py2long, struct pyu_strbuf *sb)
{
	uint64_t n;
	int sign;
	struct pyu_error *err = int_header(v, obj, &n, &sign);
	if (err) {
		unreadable(v, sb, "int", obj, err);
		return;
	}
	const char *suffix = py2long ? "L" : "";
	if (n <= 2) {
		// Up to 60 bits, the common case: no big-number arithmetic, no allocation.
		uint8_t b[8] = {0};
		if (n && (err = rd(v, obj + (uint64_t)v->vl.int_.digits, b, (size_t)n * 4)) != NULL) {
			unreadable(v, sb, py2long ? "long" : "int", obj, err);
			return;
		}
		uint32_t d0 = pyu_le32(b), d1 = pyu_le32(b + 4);
		if ((d0 | d1) >> 30) {
			unreadable(v, sb, py2long ? "long" : "int", obj,
				   pyu_error_create(PYU_ERR_CORRUPT, "digit 0x%" PRIx32,
						    d0 >> 30 ? d0 : d1));
			return;
		}
		uint64_t val = (uint64_t)d1 << 30 | d0;
		char text[24];
		size_t len = 0;
		do {
			text[sizeof(text) - 1 - len++] = (char)('0' + val % 10);
			val /= 10;
		} while (val);
		if (len <= v->lim.digits) {
			if (sign < 0)
				pyu_strbuf_putc(sb, '-');
			pyu_strbuf_append(sb, text + sizeof(text) - len, len);
			pyu_strbuf_puts(sb, suffix);
			return;
		}
	}
	// A 30-bit digit carries at least 9 decimal digits: past the bound without reading them.
	bool too_long = n > 1 && (n - 1) * 9 > v->lim.digits;
	uint32_t *digits = NULL, *work = NULL;
	char *dec = NULL;
	size_t cap = (size_t)v->lim.digits + 2;
	if (!too_long) {
		digits = malloc((size_t)n * 4 + 4);
		work = malloc((size_t)n * 4 + 4);
		dec = malloc(cap);
		if (!digits || !work || !dec) {
			err = &pyu_error_nomem;
			goto fail;
		}
		if (n && (err = rd(v, obj + (uint64_t)v->vl.int_.digits, digits,
				   (size_t)n * 4)) != NULL)
			goto fail;
		for (uint64_t i = 0; i < n; i++) {
			digits[i] = pyu_le32((uint8_t *)&digits[i]);
			if (digits[i] >> 30) {
				err = pyu_error_create(PYU_ERR_CORRUPT, "digit 0x%" PRIx32,
						       digits[i]);
				goto fail;
			}
		}
		size_t len = pyu_int_decimal(digits, (size_t)n, work, dec, cap);
		if (len && len <= v->lim.digits) {
			if (sign < 0)
				pyu_strbuf_putc(sb, '-');
			pyu_strbuf_append(sb, dec, len);
			pyu_strbuf_puts(sb, suffix);
			goto done;
		}
	}
	// The short form: how many bits, and where to find it.
	uint8_t top[4];
	if ((err = rd(v, obj + (uint64_t)v->vl.int_.digits + (n - 1) * 4, top, 4)) != NULL)
		goto fail;
	uint32_t t = pyu_le32(top);
	unsigned tb = 0;
	while (t && tb < 32)
		t >>= 1, tb++;
	pyu_strbuf_printf(sb, "<%s%s of %" PRIu64 " bits at 0x%" PRIx64 ">",
			  sign < 0 ? "negative " : "", py2long ? "long" : "int",
			  (n - 1) * 30 + tb, obj);
	v->cut = true;
	goto done;
fail:
	unreadable(v, sb, py2long ? "long" : "int", obj, err);
done:
	free(digits);
	free(work);
	free(dec);
}

static void repr_text_obj(struct pyu_values *v, uint64_t obj, enum kind k, struct pyu_strbuf *sb)
{
	struct text tx;
	struct pyu_error *err = read_text(v, obj, k, v->lim.chars, &tx);
	if (err) {
		unreadable(v, sb, k == K_STR ? "str" : "bytes", obj, err);
		return;
	}
	enum pyu_text_style style = k == K_BYTES ? PYU_TEXT_BYTES
		: k == K_BYTEARRAY ? (v->vl.bytearray_escapes_quote ? PYU_TEXT_BYTEARRAY
						      : PYU_TEXT_BYTES)
		: k == K_PY2STR ? PYU_TEXT_PY2_STR
		: v->vl.py2 ? PYU_TEXT_PY2_UNICODE : PYU_TEXT_STR;
	bool cut = tx.total > tx.n;
	if (cut)
		v->cut = true;
	pyu_text_repr(sb, tx.data, tx.n, tx.kind, style, v->vl.unicode_db, cut);
	free(tx.data);
}

static bool on_stack(const struct pyu_values *v, uint64_t addr)
{
	for (uint32_t i = 0; i < v->depth; i++)
		if (v->stack[i] == addr)
			return true;
	return false;
}

// Enters a container: false (and the short form written) at the depth limit or in a cycle.
static bool enter(struct pyu_values *v, uint64_t addr, const char *what, const char *cycle,
		  struct pyu_strbuf *sb)
{
	if (on_stack(v, addr)) {
		pyu_strbuf_puts(sb, cycle);
		return false;
	}
	if (v->depth >= v->lim.depth) {
		pyu_strbuf_printf(sb, "<%s at 0x%" PRIx64 ": depth limit>", what, addr);
		v->cut = true;
		return false;
	}
	v->stack[v->depth++] = addr;
	return true;
}

static void leave(struct pyu_values *v)
{
	v->depth--;
}

// Items of a tuple (inline) or list (ob_item array): "a, b" (1-tuples add the comma).
static void repr_sequence(struct pyu_values *v, uint64_t obj, enum kind k, struct pyu_strbuf *sb)
{
	const char *open = k == K_LIST ? "[" : "(", *close = k == K_LIST ? "]" : ")";
	uint64_t size, items;
	struct pyu_error *err = field_u64(v, obj, v->l->ob_size, &size);
	if (!err) {
		if (k == K_LIST)
			err = field_u64(v, obj, v->vl.list_item, &items);
		else
			items = obj + (uint64_t)v->l->tuple_item;
	}
	if (!err && size > SIZE_MAX_SANE)
		err = pyu_error_create(PYU_ERR_CORRUPT, "size %" PRId64 " out of range",
				       (int64_t)size);
	if (err) {
		unreadable(v, sb, k == K_LIST ? "list" : "tuple", obj, err);
		return;
	}
	if (!enter(v, obj, k == K_LIST ? "list" : "tuple", k == K_LIST ? "[...]" : "(...)", sb))
		return;
	pyu_strbuf_puts(sb, open);
	uint64_t shown = size < v->lim.items ? size : v->lim.items;
	for (uint64_t i = 0; i < shown; i++) {
		uint64_t item;
		if (i)
			pyu_strbuf_puts(sb, ", ");
		if (over_output(v, sb))
			break;
		if ((err = rd_u64(v, items + 8 * i, &item)) != NULL) {
			unreadable(v, sb, "item", items + 8 * i, err);
			break;
		}
		repr_obj(v, item, sb);
	}
	if (shown < size) {
		pyu_strbuf_puts(sb, ", ...");
		v->cut = true;
	}
	if (k == K_TUPLE && size == 1)
		pyu_strbuf_putc(sb, ',');
	pyu_strbuf_puts(sb, close);
	leave(v);
}

struct dict_repr {
	struct pyu_values *v;
	struct pyu_strbuf *sb;
	uint32_t count;
	bool more;
};

static bool dict_repr_visit(void *arg, uint64_t key, uint64_t value)
{
	struct dict_repr *d = arg;
	if (d->count >= d->v->lim.items || over_output(d->v, d->sb)) {
		d->more = true;
		return false;
	}
	if (d->count++)
		pyu_strbuf_puts(d->sb, ", ");
	repr_obj(d->v, key, d->sb);
	pyu_strbuf_puts(d->sb, ": ");
	repr_obj(d->v, value, d->sb);
	return true;
}

static void repr_dict(struct pyu_values *v, uint64_t obj, struct pyu_strbuf *sb)
{
	if (!enter(v, obj, "dict", "{...}", sb))
		return;
	struct dict_repr d = {v, sb, 0, false};
	pyu_strbuf_putc(sb, '{');
	struct pyu_error *err = dict_foreach_checked(v, obj, dict_repr_visit, &d);
	if (err) {
		if (d.count)
			pyu_strbuf_puts(sb, ", ");
		unreadable(v, sb, "dict", obj, err);
	}
	if (d.more) {
		pyu_strbuf_puts(sb, ", ...");
		v->cut = true;
	}
	pyu_strbuf_putc(sb, '}');
	leave(v);
}

static void repr_set(struct pyu_values *v, uint64_t obj, uint64_t type, struct type_entry te,
		     struct pyu_strbuf *sb)
{
	const struct pyu_value_layout *vl = &v->vl;
	uint64_t used, mask, table;
	struct pyu_error *err = field_u64(v, obj, vl->set.used, &used);
	if (!err)
		err = field_u64(v, obj, vl->set.mask, &mask);
	if (!err)
		err = field_u64(v, obj, vl->set.table, &table);
	if (!err && (mask >= (1ull << TABLE_LOG2_MAX) || ((mask + 1) & mask) || used > mask + 1))
		err = pyu_error_create(PYU_ERR_CORRUPT, "set of %" PRIu64 " in %" PRIu64 " slots",
				       used, mask + 1);
	size_t es = (size_t)vl->set.entry_size;
	if (!err && (es < 16 || es > 32))
		err = pyu_error_create(PYU_ERR_UNSUPPORTED, "set entry size %zu", es);
	if (err) {
		unreadable(v, sb, "set", obj, err);
		return;
	}
	// 3.x: {1, 2} for set itself, Name({1, 2}) for frozenset and subclasses; 2.7:
	// Name([1, 2]) always. Empty: Name() (2.7: Name([])).
	bool bare = !vl->py2 && te.kind == K_SET && te.exact;
	char *name = NULL;
	if (!bare && (err = type_short_name(v, type, &name)) != NULL) {
		unreadable(v, sb, "set", obj, err);
		return;
	}
	if (!bare)
		put_name(v, sb, te.exact ? (te.kind == K_SET ? "set" : "frozenset") : name);
	free(name);
	if (used == 0 && !vl->py2) {
		pyu_strbuf_puts(sb, bare ? "set()" : "()");
		return;
	}
	if (!enter(v, obj, "set", "(...)", sb))
		return;
	pyu_strbuf_puts(sb, bare ? "{" : vl->py2 ? "([" : "({");
	uint8_t buf[CHUNK * 32];
	uint64_t found = 0;
	bool more = false;
	for (uint64_t i = 0; i <= mask && found < used && !more; i += CHUNK) {
		size_t n = mask + 1 - i < CHUNK ? (size_t)(mask + 1 - i) : CHUNK;
		if ((err = rd(v, table + i * es, buf, n * es)) != NULL) {
			unreadable(v, sb, "set table", table, err);
			break;
		}
		for (size_t j = 0; j < n && found < used; j++) {
			uint64_t key = pyu_get_u64(buf + j * es, vl->set.entry_key);
			int64_t hash = (int64_t)pyu_get_u64(buf + j * es, vl->set.entry_hash);
			if (!key || (!vl->py2 && hash == -1))
				continue; // empty or deleted (dummy key, hash -1)
			if (vl->py2) {
				char *s = NULL;
				struct pyu_error *e2 = read_name_obj(v, key, &s);
				bool dummy = !e2 && strcmp(s, "<dummy key>") == 0;
				pyu_error_destroy(e2);
				free(s);
				if (dummy)
					continue;
			}
			if (found >= v->lim.items || over_output(v, sb)) {
				more = true;
				break;
			}
			if (found++)
				pyu_strbuf_puts(sb, ", ");
			repr_obj(v, key, sb);
		}
	}
	if (more) {
		pyu_strbuf_puts(sb, ", ...");
		v->cut = true;
	}
	pyu_strbuf_puts(sb, bare ? "}" : vl->py2 ? "])" : "})");
	leave(v);
}

static void repr_exception(struct pyu_values *v, uint64_t obj, uint64_t type,
			   struct pyu_strbuf *sb)
{
	char *name = NULL, *full = NULL;
	uint64_t args, n = 0, argtype;
	struct type_entry ate;
	// _PyType_Name: tp_name after its last dot.
	struct pyu_error *err = read_tp_name(v, type, &full);
	if (!err)
		err = field_u64(v, obj, v->vl.exc_args, &args);
	if (!err)
		err = classify_obj(v, args, &argtype, &ate);
	if (!err && ate.kind != K_TUPLE)
		err = pyu_error_create(PYU_ERR_CORRUPT, "args is not a tuple");
	if (!err)
		err = field_u64(v, args, v->l->ob_size, &n);
	if (err) {
		free(full);
		unreadable(v, sb, "exception", obj, err);
		return;
	}
	const char *dot = strrchr(full, '.');
	name = (char *)(dot ? dot + 1 : full);
	put_name(v, sb, name);
	free(full);
	if (n == 1 && !v->vl.exc_single_comma) {
		uint64_t a0;
		pyu_strbuf_putc(sb, '(');
		if ((err = rd_u64(v, args + (uint64_t)v->l->tuple_item, &a0)) != NULL)
			unreadable(v, sb, "args", args, err);
		else
			repr_obj(v, a0, sb);
		pyu_strbuf_putc(sb, ')');
		return;
	}
	repr_sequence(v, args, K_TUPLE, sb);
}

static void repr_str_or_unreadable(struct pyu_values *v, uint64_t obj, struct pyu_strbuf *sb)
{
	uint64_t type;
	struct type_entry te;
	struct pyu_error *err = classify_obj(v, obj, &type, &te);
	if (err) {
		unreadable(v, sb, "str", obj, err);
		return;
	}
	repr_obj(v, obj, sb);
}

static bool get_dict_str(struct pyu_values *v, uint64_t dict, const char *key, uint64_t *ret)
{
	struct find_str f = {v, key, 0, false};
	struct pyu_error *err = dict ? dict_find_str(v, dict, &f) : NULL;
	pyu_error_destroy(err);
	if (f.hit)
		*ret = f.found;
	return f.hit;
}

static bool is_kind(struct pyu_values *v, uint64_t obj, enum kind k)
{
	uint64_t type;
	struct type_entry te;
	struct pyu_error *err = classify_obj(v, obj, &type, &te);
	bool ok = !err && te.kind == k;
	pyu_error_destroy(err);
	return ok;
}

static void repr_module(struct pyu_values *v, uint64_t obj, struct pyu_strbuf *sb)
{
	uint64_t dict, spec = 0, name = 0, file = 0;
	struct pyu_error *err = field_u64(v, obj, v->vl.module_dict, &dict);
	if (err) {
		unreadable(v, sb, "module", obj, err);
		return;
	}
	if (v->vl.py2) {
		// <module 'name' from 'file'> / (built-in), the strings as they are.
		char *n = NULL, *f = NULL;
		if (get_dict_str(v, dict, "__name__", &name))
			pyu_error_destroy(read_name_obj(v, name, &n));
		if (get_dict_str(v, dict, "__file__", &file))
			pyu_error_destroy(read_name_obj(v, file, &f));
		pyu_strbuf_puts(sb, "<module '");
		put_name(v, sb, n ? n : "?");
		if (f) {
			pyu_strbuf_puts(sb, "' from '");
			put_name(v, sb, f);
			pyu_strbuf_puts(sb, "'>");
		} else {
			pyu_strbuf_puts(sb, "' (built-in)>");
		}
		free(n);
		free(f);
		return;
	}
	uint64_t loader = 0;
	if (v->vl.loader_module_repr && get_dict_str(v, dict, "__loader__", &loader) &&
	    is_kind(v, loader, K_TYPE)) {
		// 3.4 - 3.10: loader.module_repr() of the builtin and frozen importers comes first.
		char *ln = NULL;
		const char *how = NULL;
		if (!type_short_name(v, loader, &ln))
			how = strcmp(ln, "BuiltinImporter") == 0 ? "built-in"
				: strcmp(ln, "FrozenImporter") == 0 ? "frozen" : NULL;
		free(ln);
		if (how && get_dict_str(v, dict, "__name__", &name)) {
			pyu_strbuf_puts(sb, "<module ");
			repr_str_or_unreadable(v, name, sb);
			pyu_strbuf_printf(sb, " (%s)>", how);
			return;
		}
	}
	if (get_dict_str(v, dict, "__spec__", &spec) && !is_kind(v, spec, K_NONE)) {
		// importlib's _module_repr_from_spec, from the spec's instance attributes.
		struct attrs a;
		uint64_t sname = 0, origin = 0, has_loc = 0;
		err = find_attrs(v, spec, &a);
		if (err) {
			unreadable(v, sb, "module spec", spec, err);
			return;
		}
		struct find_str f;
#define SPEC_ATTR(key, dst) \
		f = (struct find_str){v, key, 0, false}; \
		pyu_error_destroy(attrs_find_str(v, &a, &f)); \
		dst = f.hit ? f.found : 0;
		SPEC_ATTR("name", sname);
		SPEC_ATTR("origin", origin);
		SPEC_ATTR("loader", loader);
		SPEC_ATTR("_set_fileattr", has_loc);
#undef SPEC_ATTR
		pyu_strbuf_puts(sb, "<module ");
		if (sname && !is_kind(v, sname, K_NONE))
			repr_str_or_unreadable(v, sname, sb);
		else
			pyu_strbuf_puts(sb, "'?'");
		if (!origin || is_kind(v, origin, K_NONE)) {
			if (loader && !is_kind(v, loader, K_NONE)) {
				pyu_strbuf_puts(sb, " (");
				repr_obj(v, loader, sb);
				pyu_strbuf_putc(sb, ')');
			}
		} else {
			int64_t hl = 0;
			if (has_loc && is_kind(v, has_loc, K_BOOL)) {
				struct pyu_error *e2 = read_small_int(v, has_loc, K_INT, &hl);
				pyu_error_destroy(e2);
			}
			if (hl) {
				pyu_strbuf_puts(sb, " from ");
				repr_str_or_unreadable(v, origin, sb);
			} else {
				char *o = NULL;
				pyu_strbuf_puts(sb, " (");
				if ((err = read_name_obj(v, origin, &o)) != NULL)
					unreadable(v, sb, "origin", origin, err);
				else
					put_name(v, sb, o);
				free(o);
				pyu_strbuf_putc(sb, ')');
			}
		}
		pyu_strbuf_putc(sb, '>');
		return;
	}
	pyu_strbuf_puts(sb, "<module ");
	if (get_dict_str(v, dict, "__name__", &name))
		repr_str_or_unreadable(v, name, sb);
	else
		pyu_strbuf_puts(sb, "'?'");
	if (get_dict_str(v, dict, "__file__", &file)) {
		pyu_strbuf_puts(sb, " from ");
		repr_str_or_unreadable(v, file, sb);
	}
	pyu_strbuf_putc(sb, '>');
}

static void repr_function(struct pyu_values *v, uint64_t obj, struct pyu_strbuf *sb)
{
	int32_t off = v->vl.func.qualname != PYU_NO_FIELD ? v->vl.func.qualname : v->vl.func.name;
	uint64_t p;
	char *name = NULL;
	struct pyu_error *err = field_u64(v, obj, off, &p);
	if (!err)
		err = read_name_obj(v, p, &name);
	if (err) {
		unreadable(v, sb, "function", obj, err);
		return;
	}
	pyu_strbuf_puts(sb, "<function ");
	put_name(v, sb, name);
	pyu_strbuf_printf(sb, " at 0x%" PRIx64 ">", obj);
	free(name);
}

// The name, file name and first line of the code object at @code (3.14+: a tagged reference
// is untagged). On error, the outputs are unchanged.
static struct pyu_error *code_names(struct pyu_values *v, uint64_t code, char **name,
				    char **file, int32_t *firstlineno)
{
	const struct pyu_layout *l = v->l;
	uint64_t n, f;
	uint32_t first;
	code &= ~l->stackref_mask;
	struct pyu_error *err = field_u64(v, code, l->code.name, &n);
	if (!err)
		err = field_u64(v, code, l->code.filename, &f);
	if (!err)
		err = rd(v, code + (uint64_t)l->code.firstlineno, &first, 4);
	char *nm = NULL, *fl = NULL;
	if (!err)
		err = read_name_obj(v, n, &nm);
	if (!err && (err = read_name_obj(v, f, &fl)) != NULL)
		free(nm);
	if (err)
		return err;
	*name = nm;
	*file = fl;
	*firstlineno = (int32_t)first;
	return NULL;
}

// <code object f at 0x..., file "...", line N>
static void repr_code(struct pyu_values *v, uint64_t obj, struct pyu_strbuf *sb)
{
	char *name, *file;
	int32_t first;
	struct pyu_error *err = code_names(v, obj, &name, &file, &first);
	if (err) {
		unreadable(v, sb, "code object", obj, err);
		return;
	}
	pyu_strbuf_puts(sb, "<code object ");
	put_name(v, sb, name);
	pyu_strbuf_printf(sb, " at 0x%" PRIx64 ", file \"", obj);
	put_name(v, sb, file);
	// 3.x writes a first line of 0 as -1
	pyu_strbuf_printf(sb, "\", line %d>", first == 0 && !v->vl.py2 ? -1 : (int)first);
	free(name);
	free(file);
}

// <frame at 0x..., file '...', line N, code f> (3.7+): the line its thread's stack gives it.
static void repr_frame(struct pyu_values *v, uint64_t obj, uint64_t type,
		       struct pyu_strbuf *sb)
{
	if (!v->vl.frame_repr) {
		default_form(v, obj, type, sb);
		return;
	}
	const struct pyu_layout *l = v->l;
	uint64_t code = 0, key = obj;
	struct pyu_error *err = NULL;
	if (v->vl.frame_iframe != PYU_NO_FIELD && l->iframe.code != PYU_NO_FIELD) {
		// 3.11+: the frame object wraps an interpreter frame, which the stacks list
		err = field_u64(v, obj, v->vl.frame_iframe, &key);
		if (!err)
			err = field_u64(v, key, l->iframe.code, &code);
	} else {
		err = field_u64(v, obj, l->frame.f_code, &code);
	}
	char *name = NULL, *file = NULL;
	int32_t first;
	if (!err)
		err = code_names(v, code, &name, &file, &first);
	if (err) {
		unreadable(v, sb, "frame", obj, err);
		return;
	}
	uint64_t fobj = 0;
	if (!err)
		err = field_u64(v, code & ~l->stackref_mask, l->code.filename, &fobj);
	if (err) {
		free(name);
		free(file);
		unreadable(v, sb, "frame", obj, err);
		return;
	}
	int64_t line = v->frame_line ? v->frame_line(v->frame_line_arg, key) : -1;
	pyu_strbuf_printf(sb, "<frame at 0x%" PRIx64 ", file ", obj);
	repr_obj(v, fobj, sb); // %R of co_filename
	if (line >= 0)
		pyu_strbuf_printf(sb, ", line %" PRId64 ", code ", line);
	else
		pyu_strbuf_puts(sb, ", line ?, code ");
	put_name(v, sb, name);
	pyu_strbuf_putc(sb, '>');
	free(name);
	free(file);
}

// <generator object f at 0x...> (3.x: its qualified name; 2.7: its code's name), and the
// same for coroutines and async generators.
static void repr_generator(struct pyu_values *v, uint64_t obj, enum kind k,
			   struct pyu_strbuf *sb)
{
	uint64_t p;
	char *name = NULL, *file = NULL;
	int32_t first;
	struct pyu_error *err;
	if (v->vl.gen.qualname != PYU_NO_FIELD) {
		err = field_u64(v, obj, v->vl.gen.qualname, &p);
		if (!err)
			err = read_name_obj(v, p, &name);
	} else {
		err = field_u64(v, obj, v->vl.gen.code, &p);
		if (!err && (err = code_names(v, p, &name, &file, &first)) == NULL)
			free(file);
	}
	const char *what = k == K_CORO ? "coroutine" : k == K_AGEN ? "async_generator"
			 : "generator";
	if (err) {
		unreadable(v, sb, what, obj, err);
		return;
	}
	pyu_strbuf_printf(sb, "<%s object ", what);
	put_name(v, sb, name);
	pyu_strbuf_printf(sb, " at 0x%" PRIx64 ">", obj);
	free(name);
}

// <cell at 0x...: int object at 0x...>, or <cell at 0x...: empty>
static void repr_cell(struct pyu_values *v, uint64_t obj, struct pyu_strbuf *sb)
{
	uint64_t ref, type;
	char *tp_name = NULL;
	struct pyu_error *err = field_u64(v, obj, v->vl.cell_ref, &ref);
	if (!err && ref && !(err = type_of(v, ref, &type)))
		err = read_tp_name(v, type, &tp_name);
	if (err) {
		unreadable(v, sb, "cell", obj, err);
		return;
	}
	pyu_strbuf_printf(sb, "<cell at 0x%" PRIx64 ": ", obj);
	if (!ref) {
		pyu_strbuf_puts(sb, "empty>");
		return;
	}
	// "%.80s": the type's name cut at 80 bytes
	size_t n = strlen(tp_name);
	pyu_text_name(sb, tp_name, n > 80 ? 80 : n, v->vl.unicode_db);
	pyu_strbuf_printf(sb, " object at 0x%" PRIx64 ">", ref);
	free(tp_name);
}

// <bound method C.f of <C object at 0x...>> (3.x: the function's qualified name; 2.7: the
// class's name and the function's, <unbound method C.f> without a self).
static void repr_method(struct pyu_values *v, uint64_t obj, uint64_t type,
			struct pyu_strbuf *sb)
{
	uint64_t func, self, ftype, p, klass = 0;
	struct type_entry fte;
	char *name = NULL, *kname = NULL;
	struct pyu_error *err = field_u64(v, obj, v->vl.method.func, &func);
	if (!err)
		err = field_u64(v, obj, v->vl.method.self, &self);
	if (!err)
		err = classify_obj(v, func, &ftype, &fte);
	if (!err && fte.kind != K_FUNCTION) {
		// a method made of something else names it by __qualname__/__name__ lookups this
		// reader does not make
		default_form(v, obj, type, sb);
		return;
	}
	int32_t off = v->vl.func.qualname != PYU_NO_FIELD ? v->vl.func.qualname : v->vl.func.name;
	if (!err)
		err = field_u64(v, func, off, &p);
	if (!err)
		err = read_name_obj(v, p, &name);
	if (!err && v->vl.py2) {
		err = field_u64(v, obj, v->vl.method.klass, &klass);
		if (!err && klass)
			err = type_short_name(v, klass, &kname);
	}
	if (err) {
		free(name);
		unreadable(v, sb, "method", obj, err);
		return;
	}
	if (v->vl.py2 && !self) {
		pyu_strbuf_puts(sb, "<unbound method ");
		put_name(v, sb, kname ? kname : "?");
		pyu_strbuf_putc(sb, '.');
		put_name(v, sb, name);
		pyu_strbuf_putc(sb, '>');
	} else {
		pyu_strbuf_puts(sb, "<bound method ");
		if (v->vl.py2) {
			put_name(v, sb, kname ? kname : "?");
			pyu_strbuf_putc(sb, '.');
		}
		put_name(v, sb, name);
		pyu_strbuf_puts(sb, " of ");
		if (enter(v, obj, "method", "...", sb)) {
			repr_obj(v, self, sb);
			leave(v);
		}
		pyu_strbuf_putc(sb, '>');
	}
	free(name);
	free(kname);
}

static void repr_cfunction(struct pyu_values *v, uint64_t obj, struct pyu_strbuf *sb)
{
	uint64_t ml, self, p, stype = 0;
	char *name = NULL, *tname = NULL;
	struct pyu_error *err = field_u64(v, obj, v->vl.cfunc.ml, &ml);
	if (!err)
		err = field_u64(v, obj, v->vl.cfunc.self, &self);
	if (!err)
		err = field_u64(v, ml, v->vl.cfunc.ml_name, &p);
	if (!err && (err = read_cstr(v, p, &name)) != NULL) {
		// A core without the interpreter's files lacks the C string; a function of the
		// builtins module is named by what the module binds it to (len -> 'len'). Its
		// self is the module (2.7: none).
		if (!v->seeded)
			seed_known_types(v);
		const char *known = !self || self == v->builtins ? builtin_func_name(v, obj) : NULL;
		if (known) {
			pyu_error_destroy(err);
			err = (name = strdup(known)) != NULL ? NULL : &pyu_error_nomem;
		}
	}
	if (!err && self && !is_kind(v, self, K_MODULE)) {
		if (!(err = type_of(v, self, &stype)))
			err = read_tp_name(v, stype, &tname);
	}
	if (err) {
		free(name);
		unreadable(v, sb, "built-in function", obj, err);
		return;
	}
	if (tname) {
		pyu_strbuf_puts(sb, "<built-in method ");
		put_name(v, sb, name);
		pyu_strbuf_puts(sb, " of ");
		put_name(v, sb, tname);
		pyu_strbuf_printf(sb, " object at 0x%" PRIx64 ">", self);
	} else {
		pyu_strbuf_puts(sb, "<built-in function ");
		put_name(v, sb, name);
		pyu_strbuf_putc(sb, '>');
	}
	free(name);
	free(tname);
}

// 2.7 old-style classes and instances: <class __main__.C at 0x...>, <__main__.C instance at
// 0x...>.
static void repr_py2_classic(struct pyu_values *v, uint64_t obj, bool instance,
			     struct pyu_strbuf *sb)
{
	uint64_t cls = obj, name, dict = 0, mod = 0;
	char *n = NULL, *m = NULL;
	struct pyu_error *err = NULL;
	if (instance)
		err = field_u64(v, obj, v->vl.instance.klass, &cls);
	if (!err)
		err = field_u64(v, cls, v->vl.instance.cl_name, &name);
	if (!err)
		err = read_name_obj(v, name, &n);
	if (err) {
		unreadable(v, sb, instance ? "instance" : "class", obj, err);
		return;
	}
	if (!field_u64(v, cls, v->vl.instance.cl_dict, &dict) && dict &&
	    get_dict_str(v, dict, "__module__", &mod))
		pyu_error_destroy(read_name_obj(v, mod, &m));
	if (instance)
		pyu_strbuf_putc(sb, '<');
	else
		pyu_strbuf_puts(sb, "<class ");
	put_name(v, sb, m ? m : "?");
	pyu_strbuf_putc(sb, '.');
	put_name(v, sb, n);
	pyu_strbuf_printf(sb, "%s at 0x%" PRIx64 ">", instance ? " instance" : "", obj);
	free(n);
	free(m);
}

static void repr_obj(struct pyu_values *v, uint64_t addr, struct pyu_strbuf *sb)
{
	if (over_output(v, sb))
		return;
	uint64_t type;
	struct type_entry te;
	struct pyu_error *err = classify_obj(v, addr, &type, &te);
	if (err) {
		unreadable(v, sb, "object", addr, err);
		return;
	}
	double d[2];
	int64_t n;
	switch ((enum kind)te.kind) {
	case K_NONE:
		pyu_strbuf_puts(sb, "None");
		return;
	case K_ELLIPSIS:
		pyu_strbuf_puts(sb, "Ellipsis");
		return;
	case K_NOTIMPL:
		pyu_strbuf_puts(sb, "NotImplemented");
		return;
	case K_BOOL:
		if ((err = read_small_int(v, addr, v->vl.py2 ? K_PY2INT : K_INT, &n)) != NULL)
			unreadable(v, sb, "bool", addr, err);
		else
			pyu_strbuf_puts(sb, n ? "True" : "False");
		return;
	case K_PY2INT:
		if ((err = read_small_int(v, addr, K_PY2INT, &n)) != NULL)
			unreadable(v, sb, "int", addr, err);
		else
			pyu_strbuf_printf(sb, "%" PRId64, n);
		return;
	case K_INT:
		repr_int(v, addr, v->vl.py2, sb);
		return;
	case K_FLOAT:
	case K_COMPLEX: {
		int32_t off = te.kind == K_FLOAT ? v->vl.float_fval : v->vl.complex_cval;
		size_t len = te.kind == K_FLOAT ? 8 : 16;
		if (off == PYU_NO_FIELD)
			err = pyu_error_create(PYU_ERR_UNSUPPORTED, "no layout");
		else
			err = rd(v, addr + (uint64_t)off, d, len);
		if (err) {
			unreadable(v, sb, te.kind == K_FLOAT ? "float" : "complex", addr, err);
		} else if (te.kind == K_FLOAT) {
			uint64_t bits;
			memcpy(&bits, &d[0], sizeof(bits));
			struct float_entry *fe =
				&v->floats[(bits * 0x9e3779b97f4a7c15ull >> 56) % FLOAT_CACHE];
			if (!fe->used || fe->bits != bits) {
				pyu_float_repr(d[0], true, fe->text);
				fe->bits = bits;
				fe->used = true;
			}
			pyu_strbuf_puts(sb, fe->text);
		} else {
			pyu_complex_repr(sb, d[0], d[1]);
		}
		return;
	}
	case K_STR:
	case K_PY2STR:
	case K_BYTES:
		repr_text_obj(v, addr, (enum kind)te.kind, sb);
		return;
	case K_BYTEARRAY: {
		char *name = NULL;
		if ((err = type_short_name(v, type, &name)) != NULL) {
			unreadable(v, sb, "bytearray", addr, err);
			return;
		}
		put_name(v, sb, name);
		free(name);
		pyu_strbuf_putc(sb, '(');
		repr_text_obj(v, addr, K_BYTEARRAY, sb);
		pyu_strbuf_putc(sb, ')');
		return;
	}
	case K_TUPLE:
	case K_LIST:
		repr_sequence(v, addr, (enum kind)te.kind, sb);
		return;
	case K_DICT:
		repr_dict(v, addr, sb);
		return;
	case K_SET:
	case K_FROZENSET:
		repr_set(v, addr, type, te, sb);
		return;
	case K_EXC:
		repr_exception(v, addr, type, sb);
		return;
	case K_TYPE:
		repr_type(v, addr, sb);
		return;
	case K_MODULE:
		repr_module(v, addr, sb);
		return;
	case K_FUNCTION:
		repr_function(v, addr, sb);
		return;
	case K_CFUNCTION:
		repr_cfunction(v, addr, sb);
		return;
	case K_PY2_INSTANCE:
	case K_PY2_CLASS:
		repr_py2_classic(v, addr, te.kind == K_PY2_INSTANCE, sb);
		return;
	case K_FRAME:
		repr_frame(v, addr, type, sb);
		return;
	case K_CODE:
		repr_code(v, addr, sb);
		return;
	case K_GEN:
	case K_CORO:
	case K_AGEN:
		repr_generator(v, addr, (enum kind)te.kind, sb);
		return;
	case K_CELL:
		repr_cell(v, addr, sb);
		return;
	case K_METHOD:
		repr_method(v, addr, type, sb);
		return;
	case K_UNKNOWN:
	case K_OTHER:
		break;
	}
	default_form(v, addr, type, sb);
}

void pyu_value_repr(struct pyu_values *v, uint64_t addr, struct pyu_strbuf *out,
		    bool *truncated)
{
	struct pyu_strbuf sb;
	// Room for the bound plus the largest piece appended after the last check.
	pyu_strbuf_init(&sb, (size_t)v->lim.output * 2 + 4096);
	v->depth = 0;
	v->cut = false;
	repr_obj(v, addr, &sb);
	size_t len = sb.len;
	if (sb.nomem || sb.too_long || len > v->lim.output) {
		// Cut at the bound, on a character boundary.
		len = len < v->lim.output ? len : v->lim.output;
		while (len > 0 && (sb.buf[len] & 0xc0) == 0x80)
			len--;
		pyu_strbuf_append(out, sb.buf, len);
		pyu_strbuf_puts(out, "...");
		v->cut = true;
	} else if (len) {
		pyu_strbuf_append(out, sb.buf, len);
	}
	pyu_strbuf_release(&sb);
	if (v->cut && truncated)
		*truncated = true;
}

struct pyu_error *pyu_value_type_name(struct pyu_values *v, uint64_t addr, char **ret)
{
	uint64_t type;
	char *raw = NULL, *out = NULL;
	struct pyu_error *err = type_of(v, addr, &type);
	if (err)
		return pyu_error_wrap(err, "reading the type name of the object at 0x%" PRIx64,
				      addr);
	struct type_name_entry *slot = &v->type_names[(type >> 4) % TYPE_CACHE];
	if (!(slot->name && slot->addr == type)) {
		if ((err = type_short_name(v, type, &raw)) != NULL)
			return pyu_error_wrap(err, "reading the type name of the object at 0x%"
					      PRIx64, addr);
		struct pyu_strbuf sb;
		pyu_strbuf_init(&sb, 4 * NAME_CHARS + 64);
		pyu_text_name(&sb, raw, strlen(raw), v->vl.unicode_db);
		free(raw);
		if ((err = pyu_strbuf_finish(&sb, &out)) != NULL)
			return err;
		free(slot->name);
		slot->addr = type;
		slot->name = out;
	}
	if (!(out = strdup(slot->name)))
		return &pyu_error_nomem;
	*ret = out;
	return NULL;
}

// ---- type names for the heap census (heap.c) ---------------------------------------------

struct pyu_error *pyu_value_type_qualname(struct pyu_values *v, uint64_t type, char **ret)
{
	char *module = NULL, *qual = NULL;
	struct pyu_error *err = type_names(v, type, &module, &qual);
	if (err)
		return pyu_error_wrap(err, "reading the name of the type at 0x%" PRIx64, type);
	struct pyu_strbuf sb;
	pyu_strbuf_init(&sb, 8 * NAME_CHARS + 64);
	if (!is_builtins(v, module)) {
		pyu_text_name(&sb, module, strlen(module), v->vl.unicode_db);
		pyu_strbuf_putc(&sb, '.');
	}
	pyu_text_name(&sb, qual, strlen(qual), v->vl.unicode_db);
	free(module);
	free(qual);
	return pyu_strbuf_finish(&sb, ret);
}

struct pyu_error *pyu_value_static_type_name(struct pyu_values *v, uint64_t type, char **ret)
{
	return read_tp_name(v, type, ret);
}

// ---- object identity for other readers (tasks.c) ---------------------------------------

struct pyu_error *pyu_object_type(struct pyu_values *v, uint64_t obj, uint64_t *ret)
{
	return type_of(v, obj, ret);
}

bool pyu_type_derives(struct pyu_values *v, uint64_t type, uint64_t base)
{
	for (uint32_t i = 0; type && i < BASES_MAX; i++) {
		if (type == base)
			return true;
		struct pyu_error *err = field_u64(v, type, v->vl.type.base, &type);
		if (err) {
			pyu_error_destroy(err);
			return false;
		}
	}
	return false;
}

bool pyu_object_is_none(struct pyu_values *v, uint64_t obj)
{
	uint64_t type;
	struct type_entry te;
	struct pyu_error *err = classify_obj(v, obj, &type, &te);
	pyu_error_destroy(err);
	return !err && te.kind == K_NONE;
}

struct pyu_error *pyu_set_foreach(struct pyu_values *v, uint64_t set,
				  bool (*visit)(void *arg, uint64_t key), void *arg)
{
	const struct pyu_value_layout *vl = &v->vl;
	uint64_t type, used, mask, table;
	struct type_entry te;
	struct pyu_error *err = classify_obj(v, set, &type, &te);
	if (!err && te.kind != K_SET && te.kind != K_FROZENSET)
		err = pyu_error_create(PYU_ERR_CORRUPT, "object at 0x%" PRIx64 " is not a set",
				       set);
	if (!err)
		err = field_u64(v, set, vl->set.used, &used);
	if (!err)
		err = field_u64(v, set, vl->set.mask, &mask);
	if (!err)
		err = field_u64(v, set, vl->set.table, &table);
	if (!err && (mask >= (1ull << TABLE_LOG2_MAX) || ((mask + 1) & mask) || used > mask + 1))
		err = pyu_error_create(PYU_ERR_CORRUPT, "set of %" PRIu64 " in %" PRIu64 " slots",
				       used, mask + 1);
	size_t es = (size_t)vl->set.entry_size;
	if (!err && (es < 16 || es > 32))
		err = pyu_error_create(PYU_ERR_UNSUPPORTED, "set entry size %zu", es);
	if (err)
		return err;
	uint8_t buf[CHUNK * 32];
	uint64_t found = 0;
	for (uint64_t i = 0; i <= mask && found < used; i += CHUNK) {
		size_t n = mask + 1 - i < CHUNK ? (size_t)(mask + 1 - i) : CHUNK;
		if ((err = rd(v, table + i * es, buf, n * es)) != NULL)
			return pyu_error_wrap(err, "set table at 0x%" PRIx64, table);
		for (size_t j = 0; j < n && found < used; j++) {
			uint64_t key = pyu_get_u64(buf + j * es, vl->set.entry_key);
			int64_t hash = (int64_t)pyu_get_u64(buf + j * es, vl->set.entry_hash);
			if (!key || hash == -1)
				continue; // empty or deleted (dummy key, hash -1)
			found++;
			if (!visit(arg, key))
				return NULL;
		}
	}
	return NULL;
}

struct pyu_error *pyu_sequence_foreach(struct pyu_values *v, uint64_t obj,
				       bool (*visit)(void *arg, uint64_t item), void *arg)
{
	uint64_t type, size, items;
	struct type_entry te;
	struct pyu_error *err = classify_obj(v, obj, &type, &te);
	if (!err && te.kind != K_LIST && te.kind != K_TUPLE)
		err = pyu_error_create(PYU_ERR_CORRUPT, "object at 0x%" PRIx64 " is not a list "
				       "or tuple", obj);
	if (!err)
		err = field_u64(v, obj, v->l->ob_size, &size);
	if (!err) {
		if (te.kind == K_LIST)
			err = field_u64(v, obj, v->vl.list_item, &items);
		else
			items = obj + (uint64_t)v->l->tuple_item;
	}
	if (!err && size > SIZE_MAX_SANE)
		err = pyu_error_create(PYU_ERR_CORRUPT, "size %" PRId64 " out of range",
				       (int64_t)size);
	for (uint64_t i = 0; !err && i < size; i++) {
		uint64_t item;
		if ((err = rd_u64(v, items + 8 * i, &item)) != NULL)
			break;
		if (!visit(arg, item))
			break;
	}
	return err;
}

// ---- exceptions as the traceback module names them --------------------------------------

// Whether a static type whose tp_name is @name is on @type's tp_base chain. Cannot fail (an
// unreadable link: false).
static bool derives_from_static(struct pyu_values *v, uint64_t type, const char *name)
{
	for (uint32_t i = 0; type && i < BASES_MAX; i++) {
		uint64_t flags;
		if (!ok(field_u64(v, type, v->l->type_tp_flags, &flags)))
			return false;
		if (!(flags & TPFLAGS_HEAPTYPE)) {
			char *tp_name = NULL;
			if (!ok(read_tp_name(v, type, &tp_name)))
				return false;
			const char *dot = strrchr(tp_name, '.');
			bool same = !strcmp(dot ? dot + 1 : tp_name, name);
			free(tp_name);
			if (same)
				return true;
		}
		if (!ok(field_u64(v, type, v->vl.type.base, &type)))
			return false;
	}
	return false;
}

bool pyu_type_derives_from_builtin(struct pyu_values *v, uint64_t type, const char *name)
{
	return derives_from_static(v, type, name);
}

// Whether a class written in Python on @type's tp_base chain defines __str__ (then str()
// runs code this reader cannot). Cannot fail (unreadable: false).
static bool python_str(struct pyu_values *v, uint64_t type)
{
	for (uint32_t i = 0; type && i < BASES_MAX; i++) {
		uint64_t flags, dict = 0, found;
		if (!ok(field_u64(v, type, v->l->type_tp_flags, &flags)) ||
		    !(flags & TPFLAGS_HEAPTYPE))
			return false;
		pyu_error_destroy(field_u64(v, type, v->vl.type.dict, &dict));
		if (get_dict_str(v, dict, "__str__", &found))
			return true;
		if (!ok(field_u64(v, type, v->vl.type.base, &type)))
			return false;
	}
	return false;
}

// str(@obj) as the exception's str() takes it of an argument: a str's own text (UTF-8,
// unescaped, at most lim.chars characters), anything else its repr.
static void str_of(struct pyu_values *v, uint64_t obj, struct pyu_strbuf *sb)
{
	uint64_t type;
	struct type_entry te;
	struct pyu_error *err = classify_obj(v, obj, &type, &te);
	if (err) {
		unreadable(v, sb, "object", obj, err);
		return;
	}
	bool text = te.kind == K_STR || te.kind == K_PY2STR ||
		    (te.flags & PYU_TPFLAGS_UNICODE_SUBCLASS);
	if (!text) {
		repr_obj(v, obj, sb);
		return;
	}
	enum kind k = (te.flags & PYU_TPFLAGS_UNICODE_SUBCLASS) || te.kind == K_STR ? K_STR
										 : K_PY2STR;
	struct text tx;
	if ((err = read_text(v, obj, k, v->lim.chars, &tx)) != NULL) {
		unreadable(v, sb, "str", obj, err);
		return;
	}
	// 2.7: str() of a unicode object with non-ASCII text fails, and the traceback module
	// then writes it as ASCII with backslash escapes.
	bool escape = false;
	for (size_t i = 0; v->vl.py2 && k == K_STR && i < tx.n && !escape; i++)
		escape = (tx.kind == 1 ? tx.data[i] : tx.kind == 2 ? pyu_le16(tx.data + 2 * i)
							       : pyu_le32(tx.data + 4 * i)) >= 0x80;
	char utf8[4];
	for (size_t i = 0; i < tx.n; i++) {
		uint32_t cp = tx.kind == 1 ? tx.data[i]
			: tx.kind == 2 ? pyu_le16(tx.data + 2 * i) : pyu_le32(tx.data + 4 * i);
		if (escape && cp >= 0x80)
			pyu_strbuf_printf(sb, cp < 0x100 ? "\\x%02x" : cp < 0x10000 ? "\\u%04x"
					  : "\\U%08x", (unsigned)cp);
		else
			pyu_strbuf_append(sb, utf8, pyu_utf8_put(cp, utf8));
	}
	if (tx.total > tx.n) {
		pyu_strbuf_puts(sb, "...");
		v->cut = true;
	}
	free(tx.data);
}

// OSError's str() (2.7: EnvironmentError's) into @sb, when it has an errno and a message:
// "[Errno N] MESSAGE", then ": 'FILENAME'" and (3.x) " -> 'FILENAME2'". False, @sb
// untouched, when it is another exception or lacks them (then BaseException's str() holds).
static bool os_error_str(struct pyu_values *v, uint64_t exc, uint64_t type,
			 struct pyu_strbuf *sb)
{
	const struct pyu_value_layout *vl = &v->vl;
	uint64_t no = 0, msg = 0, file = 0, file2 = 0;
	if (vl->exc.os_errno == PYU_NO_FIELD || vl->exc.os_strerror == PYU_NO_FIELD ||
	    vl->exc.os_filename == PYU_NO_FIELD ||
	    !derives_from_static(v, type, vl->py2 ? "EnvironmentError" : "OSError"))
		return false;
	if (!ok(field_u64(v, exc, vl->exc.os_errno, &no)) ||
	    !ok(field_u64(v, exc, vl->exc.os_strerror, &msg)) ||
	    !ok(field_u64(v, exc, vl->exc.os_filename, &file)) ||
	    (vl->exc.os_filename2 != PYU_NO_FIELD &&
	     !ok(field_u64(v, exc, vl->exc.os_filename2, &file2))))
		return false;
	if (file && pyu_object_is_none(v, file))
		file = 0;
	if (file2 && pyu_object_is_none(v, file2))
		file2 = 0;
	if (!file && !(no && msg))
		return false;
	pyu_strbuf_puts(sb, "[Errno ");
	if (no)
		str_of(v, no, sb);
	else
		pyu_strbuf_puts(sb, "None");
	pyu_strbuf_puts(sb, "] ");
	if (msg)
		str_of(v, msg, sb);
	else
		pyu_strbuf_puts(sb, "None");
	if (file) {
		pyu_strbuf_puts(sb, ": ");
		repr_obj(v, file, sb);
	}
	if (file && file2) {
		pyu_strbuf_puts(sb, " -> ");
		repr_obj(v, file2, sb);
	}
	return true;
}

struct notes_walk {
	struct pyu_values *v;
	struct pyu_strbuf *sb;
	uint32_t count;
};

static bool notes_visit(void *arg, uint64_t item)
{
	struct notes_walk *w = arg;
	if (w->count++ >= w->v->lim.items || over_output(w->v, w->sb))
		return false;
	str_of(w->v, item, w->sb);
	pyu_strbuf_putc(w->sb, '\n');
	return true;
}

// The lines format_exception_only prints after the exception's line for its __notes__
// (3.11+): each note's str() (a sequence of them), else the repr of what __notes__ holds;
// each line ended by '\n'. NULL when it has none. Cannot fail (out of memory: NULL).
static char *exception_notes(struct pyu_values *v, uint64_t exc)
{
	uint64_t notes, type;
	struct type_entry te;
	if (v->vl.exc.notes == PYU_NO_FIELD) // no notes before 3.11
		return NULL;
	struct pyu_error *err = pyu_object_getattr(v, exc, "__notes__", &notes, NULL);
	if (!err)
		err = classify_obj(v, notes, &type, &te);
	if (err || te.kind == K_NONE) {
		pyu_error_destroy(err);
		return NULL;
	}
	struct pyu_strbuf sb;
	pyu_strbuf_init(&sb, (size_t)v->lim.output * 2 + 4096);
	if (te.kind == K_LIST || te.kind == K_TUPLE) {
		struct notes_walk w = {v, &sb, 0};
		pyu_error_destroy(pyu_sequence_foreach(v, notes, notes_visit, &w));
	} else {
		repr_obj(v, notes, &sb);
		pyu_strbuf_putc(&sb, '\n');
	}
	char *out = NULL;
	pyu_error_destroy(pyu_strbuf_finish(&sb, &out));
	return out;
}

// ---- SyntaxError's layout ---------------------------------------------------------------

// Whether format_exception_only lays the SyntaxError at @exc out as one: 3.x always; 2.7
// only when its args are (msg, (filename, lineno, offset, text)), which set its fields.
static bool syntax_laid_out(struct pyu_values *v, uint64_t exc)
{
	uint64_t args, n = 0, details = 0, m = 0;
	if (!v->vl.py2)
		return true;
	if (!ok(field_u64(v, exc, v->vl.exc_args, &args)) ||
	    !ok(field_u64(v, args, v->l->ob_size, &n)) || n != 2 ||
	    !ok(rd_u64(v, args + (uint64_t)v->l->tuple_item + 8, &details)) ||
	    !is_kind(v, details, K_TUPLE) || !ok(field_u64(v, details, v->l->ob_size, &m)))
		return false;
	return m == 4;
}

// A SyntaxError's text as code points (what Python's len() and slices count).
struct syntax_text {
	uint32_t *cp;
	size_t n;
};

// Python's str.isspace() for the characters a source line holds (ASCII whitespace, the
// separators str.strip() removes too).
static bool py_isspace(uint32_t c)
{
	return c == ' ' || (c >= '\t' && c <= '\r') || (c >= 0x1c && c <= 0x1f) || c == 0x85 ||
	       c == 0xa0 || c == 0x1680 || (c >= 0x2000 && c <= 0x200a) || c == 0x2028 ||
	       c == 0x2029 || c == 0x202f || c == 0x205f || c == 0x3000;
}

static void put_cps(struct pyu_strbuf *sb, const uint32_t *cp, size_t n)
{
	char utf8[4];
	for (size_t i = 0; i < n; i++)
		pyu_strbuf_append(sb, utf8, pyu_utf8_put(cp[i], utf8));
}

// "    " then, for each character of @cp[0..n), itself when whitespace (a tab keeps the
// alignment) else a space.
static void put_caretspace(struct pyu_strbuf *sb, const uint32_t *cp, size_t n)
{
	pyu_strbuf_puts(sb, "    ");
	for (size_t i = 0; i < n; i++)
		if (py_isspace(cp[i]))
			put_cps(sb, cp + i, 1);
		else
			pyu_strbuf_putc(sb, ' ');
}

// An int field of the SyntaxError: *has false for None (or what is not a small int).
static void syntax_int(struct pyu_values *v, uint64_t exc, int32_t off, bool *has, int64_t *ret)
{
	uint64_t obj, type;
	struct type_entry te;
	*has = false;
	if (off == PYU_NO_FIELD || !ok(field_u64(v, exc, off, &obj)) || !obj ||
	    !ok(classify_obj(v, obj, &type, &te)))
		return;
	if ((te.kind == K_INT || te.kind == K_PY2INT) &&
	    ok(read_small_int(v, obj, (enum kind)te.kind, ret)))
		*has = true;
}

// The str at field @off (false: None, not a str, or unreadable).
static bool syntax_str(struct pyu_values *v, uint64_t exc, int32_t off, struct syntax_text *ret)
{
	uint64_t obj, type;
	struct type_entry te;
	struct text tx;
	if (off == PYU_NO_FIELD || !ok(field_u64(v, exc, off, &obj)) || !obj ||
	    !ok(classify_obj(v, obj, &type, &te)) || (te.kind != K_STR && te.kind != K_PY2STR) ||
	    !ok(read_text(v, obj, (enum kind)te.kind, v->lim.chars, &tx)))
		return false;
	ret->cp = malloc((tx.n + 1) * sizeof(uint32_t));
	if (!ret->cp) {
		free(tx.data);
		return false;
	}
	for (size_t i = 0; i < tx.n; i++)
		ret->cp[i] = tx.kind == 1 ? tx.data[i] : tx.kind == 2 ? pyu_le16(tx.data + 2 * i)
								   : pyu_le32(tx.data + 4 * i);
	ret->n = tx.n;
	free(tx.data);
	return true;
}

static int64_t clamp_index(int64_t i, size_t n)
{
	// a Python slice end: negative counts from the end, both clamped to [0, n]
	if (i < 0)
		i += (int64_t)n;
	return i < 0 ? 0 : i > (int64_t)n ? (int64_t)n : i;
}

// The lines before the last one format_exception_only prints for a SyntaxError (the file,
// the source text, the carets), each ended by '\n', into @lines, and its last line's text
// (the message, and on 3.8+ the file when there is no line number) into @last.
static void syntax_error_lines(struct pyu_values *v, uint64_t exc, struct pyu_strbuf *lines,
			       struct pyu_strbuf *last)
{
	const struct pyu_value_layout *vl = &v->vl;
	enum pyu_syntax_form form = vl->syntax_form;
	bool has_line, has_end_line, has_off, has_end_off;
	int64_t lineno = 0, end_lineno = 0, offset = 0, end_offset = 0;
	syntax_int(v, exc, vl->exc.syntax_lineno, &has_line, &lineno);
	syntax_int(v, exc, vl->exc.syntax_end_lineno, &has_end_line, &end_lineno);
	syntax_int(v, exc, vl->exc.syntax_offset, &has_off, &offset);
	syntax_int(v, exc, vl->exc.syntax_end_offset, &has_end_off, &end_offset);
	uint64_t filename = 0, msg = 0;
	bool has_file = ok(field_u64(v, exc, vl->exc.syntax_filename, &filename)) && filename &&
			!is_kind(v, filename, K_NONE);
	struct pyu_strbuf fsb; // filename or "<string>"
	pyu_strbuf_init(&fsb, PYU_STRBUF_MAX);
	if (has_file)
		str_of(v, filename, &fsb);
	if (fsb.len == 0)
		pyu_strbuf_puts(&fsb, "<string>");
	char *fname = NULL;
	if (!ok(pyu_strbuf_finish(&fsb, &fname)))
		fname = NULL;
	bool file_line = form <= PYU_SYNTAX_36 || has_line;
	if (file_line) {
		pyu_strbuf_printf(lines, "  File \"%s\", line ", fname ? fname : "?");
		if (has_line)
			pyu_strbuf_printf(lines, "%" PRId64 "\n", lineno);
		else
			pyu_strbuf_puts(lines, "None\n");
	}
	struct syntax_text t = {0};
	if (syntax_str(v, exc, vl->exc.syntax_text, &t)) {
		size_t n = t.n, r = n;
		while (r > 0 && t.cp[r - 1] == '\n') // rstrip('\n')
			r--;
		if (form <= PYU_SYNTAX_38) {
			// badline.strip(); the caret after badline.rstrip('\n')[:min(len, offset) - 1]
			// stripped of its leading whitespace
			size_t a = 0, b = n;
			while (a < b && py_isspace(t.cp[a]))
				a++;
			while (b > a && py_isspace(t.cp[b - 1]))
				b--;
			pyu_strbuf_puts(lines, "    ");
			put_cps(lines, t.cp + a, b - a);
			pyu_strbuf_putc(lines, '\n');
			if (has_off) {
				int64_t o = ((int64_t)r < offset ? (int64_t)r : offset) - 1;
				size_t e = (size_t)clamp_index(o, r), s = 0;
				while (s < e && py_isspace(t.cp[s]))
					s++;
				put_caretspace(lines, t.cp + s, e - s);
				pyu_strbuf_puts(lines, "^\n");
			}
		} else {
			// rtext = text.rstrip('\n'); ltext = rtext.lstrip(' \n\f')
			size_t l = 0;
			while (l < r && (t.cp[l] == ' ' || t.cp[l] == '\n' || t.cp[l] == '\f'))
				l++;
			int64_t spaces = (int64_t)l;
			const uint32_t *lt = t.cp + l;
			size_t ln = r - l;
			// (3.13+ print it in each branch, before the carets: the same text)
			pyu_strbuf_puts(lines, "    ");
			put_cps(lines, lt, ln);
			pyu_strbuf_putc(lines, '\n');
			if (form == PYU_SYNTAX_39) {
				int64_t caret = (has_off ? offset : 0) - 1 - spaces;
				if (caret >= 0) {
					put_caretspace(lines, lt, (size_t)clamp_index(caret, ln));
					pyu_strbuf_puts(lines, "^\n");
				}
			} else if (has_off) {
				int64_t off = offset, end;
				bool same_line = has_line == has_end_line &&
						 (!has_line || lineno == end_lineno);
				if (form == PYU_SYNTAX_310 || same_line)
					end = has_end_off && end_offset != 0 ? end_offset : off;
				else
					end = (int64_t)r + 1;
				if (form == PYU_SYNTAX_310) {
					if (off == end || end == -1)
						end = off + 1;
				} else {
					if (n && off > (int64_t)n)
						off = (int64_t)r + 1;
					if (n && end > (int64_t)n)
						end = (int64_t)r + 1;
					if (off >= end || end < 0)
						end = off + 1;
				}
				int64_t col = off - 1 - spaces, end_col = end - 1 - spaces;
				int64_t carets = end_col - col;
				if (col >= 0 && form >= PYU_SYNTAX_315) {
					// ' ' * _display_width(ltext, colno), then '^' for each column
					// of ltext[colno:end_colno] (for end_colno - colno when empty)
					size_t c0 = (size_t)clamp_index(col, ln);
					size_t c1 = end_col > col ? (size_t)clamp_index(end_col, ln) : c0;
					int64_t w = pyu_carets_width(lt, c0, PYU_WIDTH_WLEN);
					if (c1 > c0)
						carets = pyu_carets_width(lt + c0, c1 - c0,
									  PYU_WIDTH_WLEN);
					pyu_strbuf_puts(lines, "    ");
					for (int64_t i = 0; i < w; i++)
						pyu_strbuf_putc(lines, ' ');
				} else if (col >= 0) {
					put_caretspace(lines, lt, (size_t)clamp_index(col, ln));
				}
				if (col >= 0) {
					for (int64_t i = 0; i < carets && i < 100000; i++)
						pyu_strbuf_putc(lines, '^');
					pyu_strbuf_putc(lines, '\n');
				}
			}
		}
		free(t.cp);
	}
	// the last line: str(msg) (2.7: nothing for None or ''; 3.x: "<no detail available>")
	bool has_msg = ok(field_u64(v, exc, vl->exc.syntax_msg, &msg)) && msg &&
		       !is_kind(v, msg, K_NONE);
	size_t at = last->len;
	if (has_msg)
		str_of(v, msg, last);
	if (form != PYU_SYNTAX_27 && last->len == at)
		pyu_strbuf_puts(last, "<no detail available>");
	if (form >= PYU_SYNTAX_38 && !has_line && has_file) {
		pyu_strbuf_puts(last, " (");
		str_of(v, filename, last);
		pyu_strbuf_putc(last, ')');
	}
	free(fname);
}

struct pyu_error *pyu_exception_words(struct pyu_values *v, uint64_t exc, char **type_ret,
				      char **text_ret, uint64_t *group_ret, char **notes_ret,
				      char **syntax_ret)
{
	uint64_t type, args, n = 0, a0 = 0;
	char *module = NULL, *qual = NULL;
	struct pyu_error *err = type_of(v, exc, &type);
	if (!err)
		err = v->vl.py2 ? type_short_name(v, type, &qual)
				: type_names(v, type, &module, &qual);
	if (err)
		return pyu_error_wrap(err, "reading the type of the exception at 0x%" PRIx64, exc);
	struct pyu_strbuf sb;
	pyu_strbuf_init(&sb, (size_t)v->lim.output * 2 + 4096);
	if (module && !is_builtins(v, module) && strcmp(module, "__main__") != 0) {
		pyu_strbuf_puts(&sb, module);
		pyu_strbuf_putc(&sb, '.');
	}
	pyu_strbuf_puts(&sb, qual);
	free(module);
	free(qual);
	char *type_words = NULL, *text = NULL;
	if ((err = pyu_strbuf_finish(&sb, &type_words)) != NULL)
		return err;
	bool group = v->vl.exc.group_msg != PYU_NO_FIELD &&
		     derives_from_static(v, type, "BaseExceptionGroup");
	uint64_t excs = 0;
	if (group && (err = field_u64(v, exc, v->vl.exc.group_excs, &excs)) != NULL) {
		free(type_words);
		return pyu_error_wrap(err, "reading the exception group at 0x%" PRIx64, exc);
	}
	*syntax_ret = NULL;
	if (v->vl.exc.syntax_msg != PYU_NO_FIELD && derives_from_static(v, type, "SyntaxError") &&
	    syntax_laid_out(v, exc)) {
		// format_exception_only's own layout, which does not take str(exc)
		struct pyu_strbuf lines;
		pyu_strbuf_init(&lines, (size_t)v->lim.output * 2 + 4096);
		pyu_strbuf_init(&sb, (size_t)v->lim.output * 2 + 4096);
		v->depth = 0;
		v->cut = false;
		syntax_error_lines(v, exc, &lines, &sb);
		char *syntax = NULL;
		if ((err = pyu_strbuf_finish(&lines, &syntax)) != NULL ||
		    (err = pyu_strbuf_finish(&sb, &text)) != NULL) {
			free(syntax);
			free(type_words);
			return err;
		}
		*type_ret = type_words;
		*text_ret = text;
		*group_ret = 0;
		*notes_ret = exception_notes(v, exc);
		*syntax_ret = syntax;
		return NULL;
	}
	if (python_str(v, type)) {
		*type_ret = type_words;
		*text_ret = NULL;
		*group_ret = excs;
		*notes_ret = exception_notes(v, exc);
		return NULL;
	}
	pyu_strbuf_init(&sb, (size_t)v->lim.output * 2 + 4096);
	v->depth = 0;
	v->cut = false;
	uint64_t msg = 0;
	if (group) {
		// "msg (N sub-exceptions)"
		err = field_u64(v, exc, v->vl.exc.group_msg, &msg);
		if (!err)
			err = field_u64(v, excs, v->l->ob_size, &n);
		if (!err) {
			str_of(v, msg, &sb);
			pyu_strbuf_printf(&sb, " (%" PRIu64 " sub-exception%s)", n,
					  n == 1 ? "" : "s");
		}
	} else if (os_error_str(v, exc, type, &sb)) {
		// "[Errno 2] No such file or directory: 'x'"
	} else {
		// BaseException's str(): nothing, its one argument's str(), or the args' repr;
		// KeyError shows its one argument's repr.
		err = field_u64(v, exc, v->vl.exc_args, &args);
		if (!err)
			err = field_u64(v, args, v->l->ob_size, &n);
		if (!err && n == 1)
			err = rd_u64(v, args + (uint64_t)v->l->tuple_item, &a0);
		if (!err && n == 1 && derives_from_static(v, type, "KeyError"))
			repr_obj(v, a0, &sb);
		else if (!err && n == 1)
			str_of(v, a0, &sb);
		else if (!err && n > 1)
			repr_obj(v, args, &sb);
	}
	if (err) {
		pyu_strbuf_release(&sb);
		free(type_words);
		return pyu_error_wrap(err, "reading the exception at 0x%" PRIx64, exc);
	}
	if ((err = pyu_strbuf_finish(&sb, &text)) != NULL) {
		free(type_words);
		return err;
	}
	*type_ret = type_words;
	*text_ret = text;
	*group_ret = excs;
	*notes_ret = exception_notes(v, exc);
	return NULL;
}
