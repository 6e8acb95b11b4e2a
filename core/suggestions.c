// suggestions.c - what 3.12+'s traceback module appends to the line of a NameError,
// AttributeError or ImportError ("Did you mean: 'x'?", "Did you forget to import 'x'?", 3.15's
// other hints), made from target memory as TracebackException.__init__ makes it: the same
// candidates in the same order, the search of suggest.c, the wording of each version (RULES).
// Whatever would take running target code (a __dir__ or __getattr__ written in Python, a
// property) makes no suggestion at all rather than a wrong one; builtin types' dicts (out of
// reach in 3.12+) come from a generated table (builtin_dirs.c). Model layer: reads through values.h and locals.h; every walk is bounded.
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "builtin_dirs.h"
#include "bytes.h"
#include "locals.h"
#include "objects.h"
#include "strbuf.h"
#include "suggest.h"
#include "suggestions.h"
#include "tracebacks.h"
#include "types.h"
#include "value_layout.h"
#include "values.h"

#define NAMES_MAX 8192   // names gathered for one search (dir() of a big module, duplicates)
#define NAME_CHARS 1024  // code points of one name read
#define MRO_LIMIT 64

// What each version's TracebackException does, newest first (by vl->version_hex).
struct rules {
	uint32_t since;
	enum pyu_suggest_algo algo;
	bool hide_underscored; // AttributeError and ImportError candidates lose names starting
			       // with '_' unless the wrong name does (3.13+)
	bool import_question;  // "Did you forget to import 'x'?" ends in '?' (3.12: no '?')
	bool dotted_attr;      // AttributeError: ". Did you mean '.x' instead of '.y'?" (3.15)
	bool ascii_form;       // a non-ASCII suggestion also shown as ascii() (3.15)
	bool cross_language;   // _CROSS_LANGUAGE_HINTS for AttributeError (3.15)
	bool normalizes;       // NFKC of a non-ASCII wrong name (3.15): not done here
	bool own_module_not_found; // ModuleNotFoundError's own branch (3.15): not done here
	bool nested_attr;      // AttributeError with no match looks one attribute deeper (3.15)
};

static const struct rules RULES[] = {
	{0x030f0000, PYU_SUGGEST_C_THEN_PY, true, true, true, true, true, true, true, true},
	{0x030d0000, PYU_SUGGEST_C, true, true, false, false, false, false, false, false},
	{0x030c0000, PYU_SUGGEST_PY, false, false, false, false, false, false, false, false},
};

// 3.15's _CROSS_LANGUAGE_HINTS: a wrong name on an instance of a builtin type (or subclass).
// raw: the hint as it stands, else "Did you mean '.HINT'?".
static const struct {
	const char *name, *type, *hint;
	bool raw;
} CROSS_HINTS[] = {
	{"push", "list", "append", false},
	{"concat", "list", "extend", false},
	{"addAll", "list", "extend", false},
	{"contains", "list", "Use 'x in list'.", true},
	{"add", "list", "Did you mean to use a 'set' object?", true},
	{"add", "frozenset", "Did you mean to use a 'set' object?", true},
	{"toUpperCase", "str", "upper", false},
	{"toLowerCase", "str", "lower", false},
	{"trimStart", "str", "lstrip", false},
	{"trimEnd", "str", "rstrip", false},
	{"keySet", "dict", "keys", false},
	{"entrySet", "dict", "items", false},
	{"entries", "dict", "items", false},
	{"putAll", "dict", "update", false},
	{"put", "dict", "Use d[k] = v.", true},
	{"append", "tuple", "Did you mean to use a 'list' object?", true},
	{"extend", "tuple", "Did you mean to use a 'list' object?", true},
	{"insert", "tuple", "Did you mean to use a 'list' object?", true},
	{"remove", "tuple", "Did you mean to use a 'list' object?", true},
	{"remove", "frozenset", "Did you mean to use a 'set' object?", true},
	{"discard", "frozenset", "Did you mean to use a 'set' object?", true},
	{"update", "frozenset", "Did you mean to use a 'set' object?", true},
	{"update", "frozendict", "Did you mean to use a 'dict' object?", true},
	{"__or__", "float", "Did you mean to use an 'int' object? Bitwise operators are not "
			    "supported by 'float'.", true},
	{"__and__", "float", "Did you mean to use an 'int' object? Bitwise operators are not "
			     "supported by 'float'.", true},
	{"__xor__", "float", "Did you mean to use an 'int' object? Bitwise operators are not "
			     "supported by 'float'.", true},
	{"__lshift__", "float", "Did you mean to use an 'int' object? Bitwise operators are not "
				"supported by 'float'.", true},
	{"__rshift__", "float", "Did you mean to use an 'int' object? Bitwise operators are not "
				"supported by 'float'.", true},
};

// The field offsets after PyException_HEAD (the same in 3.12 - 3.15's headers): NameError's
// name; AttributeError's obj, name; ImportError's msg, name, path, name_from.
enum {
	NAME_ERROR_NAME = 0,
	ATTRIBUTE_ERROR_OBJ = 0,
	ATTRIBUTE_ERROR_NAME = 8,
	IMPORT_ERROR_NAME = 8,
	IMPORT_ERROR_NAME_FROM = 24,
};

struct ctx {
	struct pyu_target *t;
	const struct pyu_layout *l;
	struct pyu_values *v;
	const struct pyu_value_layout *vl;
	const struct rules *r;
	uint64_t interp;
	bool unknown; // the answer needs what this reader cannot know: no suggestion
	bool nomem;
};

struct names {
	char **s;
	uint32_t n, cap;
};

static void names_clear(struct names *nm)
{
	for (uint32_t i = 0; i < nm->n; i++)
		free(nm->s[i]);
	free(nm->s);
	memset(nm, 0, sizeof(*nm));
}

// Appends @s (taken over). False when it cannot (out of memory: c->nomem; too many names:
// c->unknown).
static bool names_take(struct ctx *c, struct names *nm, char *s)
{
	if (nm->n == NAMES_MAX) {
		free(s);
		c->unknown = true;
		return false;
	}
	if (nm->n == nm->cap) {
		uint32_t cap = nm->cap ? nm->cap * 2 : 64;
		char **p = realloc(nm->s, cap * sizeof(*p));
		if (!p) {
			free(s);
			c->nomem = true;
			return false;
		}
		nm->s = p;
		nm->cap = cap;
	}
	nm->s[nm->n++] = s;
	return true;
}

static bool names_add(struct ctx *c, struct names *nm, const char *s)
{
	char *d = strdup(s);
	if (!d) {
		c->nomem = true;
		return false;
	}
	return names_take(c, nm, d);
}

// The str object at @obj as UTF-8 (malloc'd), or NULL: not a str, unreadable (c->unknown) or
// out of memory (c->nomem).
static char *str_at(struct ctx *c, uint64_t obj)
{
	char *s = NULL;
	uint64_t flags = 0;
	struct pyu_error *err = pyu_object_type_flags(c->t, c->l, obj, &flags);
	if (!err && !(flags & PYU_TPFLAGS_UNICODE_SUBCLASS))
		err = pyu_error_create(PYU_ERR_CORRUPT, "not a str");
	if (!err)
		err = pyu_read_str(c->t, c->l, obj, NAME_CHARS, &s);
	if (err) {
		if (pyu_error_code(err) == PYU_ERR_NOMEM)
			c->nomem = true;
		else
			c->unknown = true;
		pyu_error_destroy(err);
		return NULL;
	}
	return s;
}

struct key_walk {
	struct ctx *c;
	struct names *nm;
};

// A dict key into the names; a key that is not a str leaves the answer unknown (3.12 fails
// on it, 3.13+ drop it: either way nothing this reader vouches for).
static bool key_visit(void *arg, uint64_t key, uint64_t value)
{
	(void)value;
	struct key_walk *w = arg;
	char *s = str_at(w->c, key);
	return s && names_take(w->c, w->nm, s);
}

static void dict_keys(struct ctx *c, uint64_t dict, struct names *nm)
{
	struct key_walk w = {c, nm};
	struct pyu_error *err = pyu_dict_foreach(c->v, dict, key_visit, &w);
	if (err) {
		if (pyu_error_code(err) == PYU_ERR_NOMEM)
			c->nomem = true;
		else
			c->unknown = true;
		pyu_error_destroy(err);
	}
}

static uint64_t field(struct ctx *c, uint64_t obj, int32_t off)
{
	uint64_t val = 0;
	struct pyu_error *err = off == PYU_NO_FIELD ? pyu_error_create(PYU_ERR_UNSUPPORTED, "no field")
						    : pyu_target_read_u64(c->t, obj + (uint64_t)off,
									  &val);
	if (err) {
		c->unknown = true;
		pyu_error_destroy(err);
		return 0;
	}
	return val;
}

// The generated table's entry for the builtin type @k (tp_dict not set: 3.12+ keep it in the
// interpreter state), NULL for a type not in it.
static const struct pyu_builtin_dir *builtin_entry(struct ctx *c, uint64_t k)
{
	char *name = NULL;
	struct pyu_error *err = pyu_value_static_type_name(c->v, k, &name);
	if (err) {
		pyu_error_destroy(err);
		return NULL;
	}
	const char *dot = strrchr(name, '.'), *shortname = dot ? dot + 1 : name;
	const struct pyu_builtin_dir *found = NULL;
	for (size_t i = 0; i < pyu_builtin_dirs_count && !found; i++) {
		const struct pyu_builtin_dirs *d = &pyu_builtin_dirs[i];
		if (d->version_hex >> 16 != c->vl->version_hex >> 16)
			continue;
		for (uint32_t j = 0; j < d->count && !found; j++)
			if (!strcmp(d->types[j].type, shortname))
				found = &d->types[j];
	}
	free(name);
	return found;
}

// The names in the dict of the builtin type @k, from the generated table; unknown for a type
// not in it.
static void builtin_names(struct ctx *c, uint64_t k, struct names *nm)
{
	const struct pyu_builtin_dir *found = builtin_entry(c, k);
	if (!found) {
		c->unknown = true;
		return;
	}
	for (uint32_t j = 0; j < found->count; j++)
		if (!names_add(c, nm, found->names[j]))
			return;
}

// The names of every class on the MRO of the class @cls (type.__dir__'s merge of the class
// dicts): their dicts, or for builtin types the generated table.
static void mro_names(struct ctx *c, uint64_t cls, struct names *nm)
{
	uint64_t mro = field(c, cls, c->vl->type.mro), n = 0;
	if (!mro || c->unknown) {
		c->unknown = true;
		return;
	}
	struct pyu_error *err = pyu_target_read_u64(c->t, mro + (uint64_t)c->l->ob_size, &n);
	if (err || n > MRO_LIMIT) {
		pyu_error_destroy(err);
		c->unknown = true;
		return;
	}
	for (uint64_t i = 0; i < n && !c->unknown && !c->nomem; i++) {
		uint64_t k = 0, flags = 0, dict = 0;
		err = pyu_target_read_u64(c->t, mro + (uint64_t)c->l->tuple_item + 8 * i, &k);
		if (!err)
			err = pyu_target_read_u64(c->t, k + (uint64_t)c->l->type_tp_flags, &flags);
		if (err) {
			pyu_error_destroy(err);
			c->unknown = true;
			return;
		}
		dict = field(c, k, c->vl->type.dict);
		if (dict)
			dict_keys(c, dict, nm);
		else if (!(flags & PYU_TPFLAGS_HEAPTYPE))
			builtin_names(c, k, nm);
		else
			c->unknown = true;
	}
}

// Whether the class @cls (or a class it derives from, that this reader can see) defines the
// attribute @name: 1 yes, 0 no, -1 unknown.
static int class_defines(struct ctx *c, uint64_t cls, const char *name)
{
	uint64_t val = 0;
	struct pyu_error *err = pyu_object_getattr(c->v, cls, name, &val, NULL);
	int ret = !err ? 1 : pyu_error_code(err) == PYU_ERR_NOT_FOUND ? 0 : -1;
	pyu_error_destroy(err);
	return ret;
}

static int cmp_names(const void *a, const void *b)
{
	// UTF-8's byte order is code-point order: sorted() of str
	return strcmp(*(char *const *)a, *(char *const *)b);
}

// sorted(set(...)) of the names.
static void sort_unique(struct names *nm)
{
	if (!nm->n)
		return;
	qsort(nm->s, nm->n, sizeof(*nm->s), cmp_names);
	uint32_t k = 1;
	for (uint32_t i = 1; i < nm->n; i++) {
		if (!strcmp(nm->s[i], nm->s[k - 1]))
			free(nm->s[i]);
		else
			nm->s[k++] = nm->s[i];
	}
	nm->n = k;
}

// dir(@obj) as the object's type computes it without a __dir__ of its own: a module's dict
// keys; a class's MRO dicts (type.__dir__); an instance's attributes and its type's MRO dicts
// (object.__dir__); sorted, each once. Anything else: unknown.
static void dir_names(struct ctx *c, uint64_t obj, struct names *nm)
{
	uint64_t type = 0, flags = 0;
	struct pyu_error *err = pyu_object_type(c->v, obj, &type);
	if (!err)
		err = pyu_target_read_u64(c->t, type + (uint64_t)c->l->type_tp_flags, &flags);
	if (err) {
		pyu_error_destroy(err);
		c->unknown = true;
		return;
	}
	// a __dir__ this reader can see is one some class wrote (object's, type's and module's
	// live in dicts it does not read)
	if (class_defines(c, type, "__dir__") != 0) {
		c->unknown = true;
		return;
	}
	if (flags & (1ull << 31)) { // Py_TPFLAGS_TYPE_SUBCLASS: a class
		mro_names(c, obj, nm);
	} else if (pyu_type_derives_from_builtin(c->v, type, "module")) {
		uint64_t dict = field(c, obj, c->vl->module_dict), dir = 0;
		if (!dict) {
			c->unknown = true;
			return;
		}
		err = pyu_dict_get_str(c->v, dict, "__dir__", &dir);
		if (!err || pyu_error_code(err) != PYU_ERR_NOT_FOUND)
			c->unknown = true;
		pyu_error_destroy(err);
		if (!c->unknown)
			dict_keys(c, dict, nm);
	} else {
		struct key_walk w = {c, nm};
		err = pyu_object_attrs_foreach(c->v, obj, key_visit, &w);
		if (err) {
			c->unknown = true;
			pyu_error_destroy(err);
		}
		mro_names(c, type, nm);
	}
	sort_unique(nm);
}

// The frame object of the traceback's innermost entry (tb_frame of its last tb_next), 0 when
// none.
static uint64_t innermost_frame(struct ctx *c, uint64_t exc)
{
	uint64_t tb = field(c, exc, c->vl->exc_traceback), frame = 0;
	for (uint32_t i = 0; tb && !pyu_object_is_none(c->v, tb) && i < PYU_TB_MAX; i++) {
		frame = field(c, tb, c->vl->tb.frame);
		tb = field(c, tb, c->vl->tb.next);
		if (c->unknown)
			return 0;
	}
	return frame;
}

// frame.f_locals (names; *self: its 'self', 0 when none), f_globals and f_builtins of the
// frame object @frame. False when unknown.
static bool frame_scope(struct ctx *c, uint64_t frame, struct pyu_locals *ls)
{
	uint64_t iframe = field(c, frame, c->vl->frame_iframe), code = 0;
	if (!iframe || c->unknown || c->l->iframe.code == PYU_NO_FIELD) {
		c->unknown = true;
		return false;
	}
	struct pyu_error *err = pyu_target_read_u64(c->t, iframe + (uint64_t)c->l->iframe.code,
						    &code);
	if (!err)
		err = pyu_frame_locals(c->t, c->l, NULL, iframe, code & ~c->l->stackref_mask, 0, ls);
	if (err) {
		if (pyu_error_code(err) == PYU_ERR_NOMEM)
			c->nomem = true;
		c->unknown = true;
		pyu_error_destroy(err);
		return false;
	}
	return true;
}

static uint64_t scope_self(struct ctx *c, const struct pyu_locals *ls)
{
	uint64_t self = 0;
	if (ls->dict) {
		struct pyu_error *err = pyu_dict_get_str(c->v, ls->dict, "self", &self);
		if (err && pyu_error_code(err) != PYU_ERR_NOT_FOUND)
			c->unknown = true;
		pyu_error_destroy(err);
		return err ? 0 : self;
	}
	for (uint32_t i = 0; i < ls->count; i++)
		if (!strcmp(ls->items[i].name, "self"))
			return ls->items[i].address;
	return 0;
}

static int has_get(struct ctx *c, uint64_t val);

// Whether the slot that the member descriptor @descr describes holds a value in @obj: 1, 0,
// -1 unknown. PyMemberDescrObject: the object header, d_type, d_name, d_qualname, then
// d_member, a PyMemberDef {name, int type, Py_ssize_t offset, ...}; a __slots__ entry is of
// type Py_T_OBJECT_EX (16), which raises AttributeError when NULL.
static int slot_is_set(struct ctx *c, uint64_t obj, uint64_t descr)
{
	uint64_t member = 0, offset = 0, value = 0;
	uint32_t type = 0;
	if (c->vl->cfunc.ml == PYU_NO_FIELD) // (PyCFunctionObject.m_ml: right after the header)
		return -1;
	uint64_t header = (uint64_t)c->vl->cfunc.ml;
	struct pyu_error *err = pyu_target_read_u64(c->t, descr + header + 24, &member);
	if (!err)
		err = pyu_target_read_u32(c->t, member + 8, &type);
	if (!err)
		err = pyu_target_read_u64(c->t, member + 16, &offset);
	if (!err && type == 16 && offset < 1u << 20)
		err = pyu_target_read_u64(c->t, obj + offset, &value);
	if (err) {
		pyu_error_destroy(err);
		return -1;
	}
	return type != 16 || offset >= 1u << 20 ? -1 : value != 0;
}

// hasattr(@obj, @name) where it runs no code: 1, 0, or -1 when a __getattr__, an overridden
// __getattribute__ or a descriptor would decide.
static int has_attr(struct ctx *c, uint64_t obj, const char *name)
{
	uint64_t type = 0, val = 0;
	const char *where = NULL;
	struct pyu_error *err = pyu_object_type(c->v, obj, &type);
	if (err) {
		pyu_error_destroy(err);
		return -1;
	}
	if (class_defines(c, type, "__getattr__") != 0 ||
	    class_defines(c, type, "__getattribute__") != 0)
		return -1;
	err = pyu_object_getattr(c->v, obj, name, &val, &where);
	if (err) {
		int ret = pyu_error_code(err) == PYU_ERR_NOT_FOUND ? 0 : -1;
		pyu_error_destroy(err);
		return ret;
	}
	if (where && (!strcmp(where, "instance") || !strcmp(where, "module")))
		return 1;
	// found on a class: a plain value, a slot (set or not), or a descriptor whose __get__ may
	// run code or fail
	char *tn = NULL;
	err = pyu_value_type_name(c->v, val, &tn);
	int ret = -1;
	if (!err && !strcmp(tn, "member_descriptor"))
		ret = slot_is_set(c, obj, val);
	else if (!err && (!strcmp(tn, "function") || !strcmp(tn, "classmethod") ||
			  !strcmp(tn, "staticmethod")))
		ret = 1; // their __get__ binds, never fails
	else if (!err && has_get(c, val) == 0)
		ret = 1; // a plain value
	pyu_error_destroy(err);
	free(tn);
	return ret;
}

struct set_find {
	struct ctx *c;
	const char *name;
	bool hit;
};

static bool set_visit(void *arg, uint64_t key)
{
	struct set_find *f = arg;
	char *s = str_at(f->c, key);
	if (!s)
		return false;
	f->hit = !strcmp(s, f->name);
	free(s);
	return !f->hit;
}

// sys.modules[@name] (0: absent; unreadable: c->unknown).
static uint64_t sys_module(struct ctx *c, const char *name)
{
	uint64_t modules = 0, mod = 0;
	if (!c->interp || c->l->interp.modules == PYU_NO_FIELD) {
		c->unknown = true;
		return 0;
	}
	modules = field(c, c->interp, c->l->interp.modules);
	if (!modules) {
		c->unknown = true;
		return 0;
	}
	struct pyu_error *err = pyu_dict_get_str(c->v, modules, name, &mod);
	if (err && pyu_error_code(err) != PYU_ERR_NOT_FOUND)
		c->unknown = true;
	pyu_error_destroy(err);
	return err ? 0 : mod;
}

// @name in sys.stdlib_module_names. Unreadable: c->unknown.
static bool stdlib_module(struct ctx *c, const char *name)
{
	uint64_t sys = sys_module(c, "sys"), set = 0;
	if (!sys) {
		c->unknown = true;
		return false;
	}
	struct pyu_error *err = pyu_object_getattr(c->v, sys, "stdlib_module_names", &set, NULL);
	struct set_find f = {c, name, false};
	if (!err)
		err = pyu_set_foreach(c->v, set, set_visit, &f);
	if (err) {
		c->unknown = true;
		pyu_error_destroy(err);
	}
	return f.hit;
}

static bool is_ascii(const char *s)
{
	for (; *s; s++)
		if ((unsigned char)*s >= 0x80)
			return false;
	return true;
}

// ascii(@s): repr() with every non-ASCII character escaped.
static void put_ascii_repr(struct pyu_strbuf *sb, const char *s)
{
	bool dq = strchr(s, '\'') && !strchr(s, '"');
	char q = dq ? '"' : '\'';
	pyu_strbuf_putc(sb, q);
	const unsigned char *p = (const unsigned char *)s;
	for (size_t left = strlen(s); left;) {
		uint32_t cp;
		size_t k = pyu_utf8_next(p, left, &cp);
		p += k;
		left -= k;
		if (cp == (uint32_t)q || cp == '\\')
			pyu_strbuf_printf(sb, "\\%c", (char)cp);
		else if (cp == '\t')
			pyu_strbuf_puts(sb, "\\t");
		else if (cp == '\n')
			pyu_strbuf_puts(sb, "\\n");
		else if (cp == '\r')
			pyu_strbuf_puts(sb, "\\r");
		else if (cp < 0x20 || cp == 0x7f || (cp >= 0x80 && cp < 0x100))
			pyu_strbuf_printf(sb, "\\x%02x", cp);
		else if (cp >= 0x100 && cp < 0x10000)
			pyu_strbuf_printf(sb, "\\u%04x", cp);
		else if (cp >= 0x10000)
			pyu_strbuf_printf(sb, "\\U%08x", cp);
		else
			pyu_strbuf_putc(sb, (char)cp);
	}
	pyu_strbuf_putc(sb, q);
}

// Whether @name is in the dict of a class on the MRO of the class @cls (inspect's
// _check_class): 1 (*val its value, 0 when the builtin table says so), 0, -1 unknown.
static int mro_lookup(struct ctx *c, uint64_t cls, const char *name, uint64_t *val)
{
	uint64_t mro = 0, n = 0;
	struct pyu_error *err = pyu_target_read_u64(c->t, cls + (uint64_t)c->vl->type.mro, &mro);
	if (!err && mro)
		err = pyu_target_read_u64(c->t, mro + (uint64_t)c->l->ob_size, &n);
	if (err || !mro || n > MRO_LIMIT) {
		pyu_error_destroy(err);
		return -1;
	}
	for (uint64_t i = 0; i < n; i++) {
		uint64_t k = 0, flags = 0, dict = 0;
		err = pyu_target_read_u64(c->t, mro + (uint64_t)c->l->tuple_item + 8 * i, &k);
		if (!err)
			err = pyu_target_read_u64(c->t, k + (uint64_t)c->l->type_tp_flags, &flags);
		if (!err)
			err = pyu_target_read_u64(c->t, k + (uint64_t)c->vl->type.dict, &dict);
		if (err) {
			pyu_error_destroy(err);
			return -1;
		}
		if (dict) {
			err = pyu_dict_get_str(c->v, dict, name, val);
			if (!err)
				return 1;
			bool absent = pyu_error_code(err) == PYU_ERR_NOT_FOUND;
			pyu_error_destroy(err);
			if (!absent)
				return -1;
			continue;
		}
		const struct pyu_builtin_dir *b = (flags & PYU_TPFLAGS_HEAPTYPE) ? NULL
							: builtin_entry(c, k);
		if (!b)
			return -1;
		for (uint32_t j = 0; j < b->count; j++)
			if (!strcmp(b->names[j], name)) {
				*val = 0;
				return 1;
			}
	}
	return 0;
}

// Whether the class of @obj is a class (Py_TPFLAGS_TYPE_SUBCLASS); *type its type. -1: unknown.
static int is_class(struct ctx *c, uint64_t obj, uint64_t *type)
{
	uint64_t flags = 0;
	struct pyu_error *err = pyu_object_type(c->v, obj, type);
	if (!err)
		err = pyu_target_read_u64(c->t, *type + (uint64_t)c->l->type_tp_flags, &flags);
	if (err) {
		pyu_error_destroy(err);
		return -1;
	}
	return (flags & (1ull << 31)) != 0;
}

// inspect.getattr_static(@obj, @name) finds something: 1, 0, -1 unknown (the instance's
// own attributes, then its class's MRO dicts; for a class, its MRO and its metaclass's).
static int static_has(struct ctx *c, uint64_t obj, const char *name)
{
	uint64_t type = 0, val = 0;
	const char *where = NULL;
	int cls = is_class(c, obj, &type);
	if (cls < 0)
		return -1;
	if (!cls) {
		struct pyu_error *err = pyu_object_getattr(c->v, obj, name, &val, &where);
		bool absent = err && pyu_error_code(err) == PYU_ERR_NOT_FOUND;
		pyu_error_destroy(err);
		if (!err && where && (!strcmp(where, "instance") || !strcmp(where, "module")))
			return 1;
		if (err && !absent)
			return -1;
		return mro_lookup(c, type, name, &val);
	}
	int r = mro_lookup(c, obj, name, &val);
	return r ? r : mro_lookup(c, type, name, &val);
}

// Whether the value @val (0: a builtin type's dict entry: a method or other descriptor) has
// __get__: 1, 0, -1 unknown.
static int has_get(struct ctx *c, uint64_t val)
{
	uint64_t type = 0, found = 0;
	if (!val)
		return 1;
	struct pyu_error *err = pyu_object_type(c->v, val, &type);
	if (err) {
		pyu_error_destroy(err);
		return -1;
	}
	return mro_lookup(c, type, "__get__", &found);
}

// Whether the value @val is a lazy import (3.15's types.LazyImportType). Cannot fail.
static bool lazy_import(struct ctx *c, uint64_t val)
{
	char *tn = NULL;
	struct pyu_error *err = pyu_value_type_name(c->v, val, &tn);
	bool lazy = !err && !strcmp(tn, "lazy_import");
	pyu_error_destroy(err);
	free(tn);
	return lazy;
}

// 3.15's _check_for_nested_attribute: the first of the first 20 names of @d (not starting
// with '_') that is no descriptor on the object's class and whose value has @wrong, found
// statically: "NAME.WRONG" (malloc'd), or NULL (none, or c->unknown).
static char *nested_attribute(struct ctx *c, uint64_t obj, const char *wrong,
			      const struct names *d)
{
	uint64_t type = 0, meta = 0;
	if (is_class(c, obj, &type) < 0 || is_class(c, type, &meta) < 0) {
		c->unknown = true;
		return NULL;
	}
	bool module = pyu_type_derives_from_builtin(c->v, type, "module");
	uint32_t checked = 0;
	for (uint32_t i = 0; i < d->n && checked < 20 && !c->unknown; i++) {
		const char *name = d->s[i];
		if (name[0] == '_')
			continue;
		checked++;
		// getattr_static(type(obj), name): a descriptor there is skipped, never run
		uint64_t cv = 0;
		int r = mro_lookup(c, type, name, &cv);
		if (r == 0)
			r = mro_lookup(c, meta, name, &cv);
		if (r < 0) {
			c->unknown = true;
			break;
		}
		if (r > 0) {
			int g = has_get(c, cv);
			if (g < 0)
				c->unknown = true;
			if (g != 0)
				continue;
		}
		uint64_t val = 0;
		struct pyu_error *err = pyu_object_getattr(c->v, obj, name, &val, NULL);
		if (err) {
			bool absent = pyu_error_code(err) == PYU_ERR_NOT_FOUND;
			pyu_error_destroy(err);
			if (!absent || class_defines(c, type, "__getattr__") != 0)
				c->unknown = true; // getattr() would run code
			continue;
		}
		if (module && lazy_import(c, val))
			continue;
		uint64_t inner_type = 0, lazy = 0;
		if (!pyu_object_type(c->v, val, &inner_type) &&
		    pyu_type_derives_from_builtin(c->v, inner_type, "module") &&
		    !pyu_object_getattr(c->v, val, wrong, &lazy, NULL) && lazy_import(c, lazy))
			continue;
		int h = static_has(c, val, wrong);
		if (h < 0) {
			c->unknown = true;
			break;
		}
		if (h > 0) {
			struct pyu_strbuf sb;
			char *out = NULL;
			pyu_strbuf_init(&sb, PYU_STRBUF_MAX);
			pyu_strbuf_printf(&sb, "%s.%s", name, wrong);
			if (pyu_strbuf_finish(&sb, &out))
				c->nomem = true;
			return out;
		}
	}
	return NULL;
}

// [x for x in names if x[:1] != '_']
static void drop_underscored(struct names *nm)
{
	uint32_t k = 0;
	for (uint32_t i = 0; i < nm->n; i++)
		if (nm->s[i][0] == '_')
			free(nm->s[i]);
		else
			nm->s[k++] = nm->s[i];
	nm->n = k;
}

// _compute_suggestion_error: the suggestion for @wrong (malloc'd) or NULL.
enum kind { K_NAME, K_ATTRIBUTE, K_IMPORT };

static char *compute(struct ctx *c, enum kind kind, uint64_t exc, const char *wrong)
{
	struct names nm = {0};
	char *out = NULL;
	if (c->r->normalizes && !is_ascii(wrong)) {
		c->unknown = true; // NFKC normalization: not known here
		return NULL;
	}
	if (kind == K_ATTRIBUTE) {
		uint64_t obj = field(c, exc, c->vl->exc.syntax_msg + ATTRIBUTE_ERROR_OBJ);
		if (!obj) {
			c->unknown = true;
			return NULL;
		}
		dir_names(c, obj, &nm);
		bool hide = c->r->hide_underscored && wrong[0] != '_';
		uint64_t frame = hide ? innermost_frame(c, exc) : 0;
		if (hide && frame && !c->unknown) {
			struct pyu_locals ls = {0};
			if (frame_scope(c, frame, &ls) && scope_self(c, &ls) == obj)
				hide = false;
			pyu_locals_clear(&ls);
		}
		if (hide)
			drop_underscored(&nm);
	} else if (kind == K_IMPORT) {
		// __import__(exc.name): the top-level package of a dotted name
		char *name = str_at(c, field(c, exc, c->vl->exc.syntax_msg + IMPORT_ERROR_NAME));
		if (!name) {
			c->unknown = true;
			return NULL;
		}
		char *dot = strchr(name, '.');
		if (dot)
			*dot = '\0';
		uint64_t mod = sys_module(c, name);
		free(name);
		if (!mod) {
			c->unknown = true; // __import__ would import it
			return NULL;
		}
		dir_names(c, mod, &nm);
		if (c->r->hide_underscored && wrong[0] != '_')
			drop_underscored(&nm);
	} else {
		uint64_t frame = innermost_frame(c, exc);
		if (!frame)
			return NULL; // no traceback: no suggestion
		struct pyu_locals ls = {0};
		if (!frame_scope(c, frame, &ls))
			return NULL;
		if (ls.dict)
			dict_keys(c, ls.dict, &nm);
		else
			for (uint32_t i = 0; i < ls.count && !c->nomem; i++)
				names_add(c, &nm, ls.items[i].name);
		if (ls.globals)
			dict_keys(c, ls.globals, &nm);
		if (ls.builtins)
			dict_keys(c, ls.builtins, &nm);
		uint64_t self = scope_self(c, &ls);
		pyu_locals_clear(&ls);
		if (self && !c->unknown) {
			int has = has_attr(c, self, wrong);
			if (has < 0)
				c->unknown = true;
			if (has > 0) {
				names_clear(&nm);
				struct pyu_strbuf sb;
				pyu_strbuf_init(&sb, PYU_STRBUF_MAX);
				pyu_strbuf_printf(&sb, "self.%s", wrong);
				if (pyu_strbuf_finish(&sb, &out))
					c->nomem = true;
				return out;
			}
		}
	}
	if (c->unknown || c->nomem) {
		names_clear(&nm);
		return NULL;
	}
	bool unknown = false;
	int32_t pick = pyu_suggest_pick(c->r->algo, (const char *const *)nm.s, nm.n, wrong,
					&unknown);
	if (unknown)
		c->unknown = true;
	else if (pick >= 0 && !(out = strdup(nm.s[pick])))
		c->nomem = true;
	else if (pick < 0 && kind == K_ATTRIBUTE && c->r->nested_attr)
		out = nested_attribute(c, field(c, exc, c->vl->exc.syntax_msg + ATTRIBUTE_ERROR_OBJ),
				       wrong, &nm);
	names_clear(&nm);
	return out;
}

struct pyu_error *pyu_exception_suggestion(struct pyu_target *t, const struct pyu_layout *l,
					   struct pyu_values *v, uint64_t interp, uint64_t exc,
					   char **ret)
{
	const struct pyu_value_layout *vl = pyu_values_layout(v);
	struct ctx c = {t, l, v, vl, NULL, interp, false, false};
	for (size_t i = 0; i < sizeof(RULES) / sizeof(RULES[0]) && !c.r; i++)
		if (vl->version_hex >= RULES[i].since)
			c.r = &RULES[i];
	struct pyu_strbuf sb;
	pyu_strbuf_init(&sb, PYU_STRBUF_MAX);
	uint64_t type = 0;
	struct pyu_error *err = NULL;
	if (!c.r || vl->exc.syntax_msg == PYU_NO_FIELD || vl->frame_iframe == PYU_NO_FIELD ||
	    (err = pyu_object_type(v, exc, &type)) != NULL)
		goto done;
	enum kind kind;
	uint64_t name_obj = 0;
	uint64_t base = exc + (uint64_t)vl->exc.syntax_msg;
	bool import = pyu_type_derives_from_builtin(v, type, "ImportError");
	if (import) {
		kind = K_IMPORT;
		if ((err = pyu_target_read_u64(t, base + IMPORT_ERROR_NAME_FROM, &name_obj)) ||
		    !name_obj || pyu_object_is_none(v, name_obj)) {
			// 3.15: a ModuleNotFoundError's own hints (the file system, the finders)
			if (c.r->own_module_not_found &&
			    pyu_type_derives_from_builtin(v, type, "ModuleNotFoundError"))
				c.unknown = true;
			goto done;
		}
	} else if (pyu_type_derives_from_builtin(v, type, "AttributeError")) {
		kind = K_ATTRIBUTE;
		if ((err = pyu_target_read_u64(t, base + ATTRIBUTE_ERROR_NAME, &name_obj)))
			goto done;
	} else if (pyu_type_derives_from_builtin(v, type, "NameError")) {
		kind = K_NAME;
		if ((err = pyu_target_read_u64(t, base + NAME_ERROR_NAME, &name_obj)))
			goto done;
	} else {
		goto done;
	}
	if (!name_obj || pyu_object_is_none(v, name_obj))
		goto done;
	uint64_t flags = 0;
	if ((err = pyu_object_type_flags(t, l, name_obj, &flags)) ||
	    !(flags & PYU_TPFLAGS_UNICODE_SUBCLASS))
		goto done; // not a str: no suggestion
	char *wrong = str_at(&c, name_obj);
	if (!wrong)
		goto done;
	if (kind == K_ATTRIBUTE && c.r->cross_language) {
		uint64_t obj = 0, otype = 0;
		struct pyu_error *e2 = pyu_target_read_u64(t, base + ATTRIBUTE_ERROR_OBJ, &obj);
		if (!e2 && obj)
			e2 = pyu_object_type(v, obj, &otype);
		pyu_error_destroy(e2);
		for (size_t i = 0; otype && i < sizeof(CROSS_HINTS) / sizeof(CROSS_HINTS[0]); i++) {
			if (strcmp(CROSS_HINTS[i].name, wrong) ||
			    !pyu_type_derives_from_builtin(v, otype, CROSS_HINTS[i].type))
				continue;
			if (CROSS_HINTS[i].raw)
				pyu_strbuf_printf(&sb, ". %s", CROSS_HINTS[i].hint);
			else
				pyu_strbuf_printf(&sb, ". Did you mean '.%s'?", CROSS_HINTS[i].hint);
			free(wrong);
			goto done;
		}
	}
	char *sugg = compute(&c, kind, exc, wrong);
	if (sugg && !c.unknown) {
		bool plain = !c.r->ascii_form || is_ascii(sugg);
		if (kind == K_ATTRIBUTE && c.r->dotted_attr) {
			pyu_strbuf_printf(&sb, ". Did you mean '.%s'", sugg);
			if (!plain) {
				pyu_strbuf_puts(&sb, " (");
				put_ascii_repr(&sb, sugg);
				pyu_strbuf_puts(&sb, ")");
			}
			pyu_strbuf_printf(&sb, " instead of '.%s'", wrong);
			if (!plain) {
				pyu_strbuf_puts(&sb, " (");
				put_ascii_repr(&sb, wrong);
				pyu_strbuf_puts(&sb, ")");
			}
			pyu_strbuf_puts(&sb, "?");
		} else {
			pyu_strbuf_printf(&sb, ". Did you mean: '%s'", sugg);
			if (!plain) {
				pyu_strbuf_puts(&sb, " (");
				put_ascii_repr(&sb, sugg);
				pyu_strbuf_puts(&sb, ")");
			}
			pyu_strbuf_puts(&sb, "?");
		}
	}
	if (kind == K_NAME && !c.unknown && stdlib_module(&c, wrong) && !c.unknown) {
		pyu_strbuf_printf(&sb, "%s you forget to import '%s'%s", sugg ? " Or did" : ". Did",
				  wrong, c.r->import_question ? "?" : "");
	}
	free(sugg);
	free(wrong);
done:
	pyu_error_destroy(err);
	if (c.nomem) {
		pyu_strbuf_release(&sb);
		return &pyu_error_nomem;
	}
	if (c.unknown) {
		pyu_strbuf_release(&sb);
		pyu_strbuf_init(&sb, 16);
	}
	return pyu_strbuf_finish(&sb, ret);
}
