// values.h - reading Python values out of target memory without running target code: repr()
// as the interpreter itself prints it, dict iteration, attribute lookup through instance, class
// and module dicts. Bounded in every direction (struct pyu_value_limits); anything unreadable
// or implausible becomes an inline `<unreadable ... at 0x...: reason>` rather than a failure.
// Per-version object layouts come from struct pyu_value_layout (value_layout.h), never from
// version tests. Model layer: uses the target, the runtime and the layouts, nothing above.
#ifndef PYU_VALUES_H
#define PYU_VALUES_H

#include <stdbool.h>
#include <stdint.h>

#include "error.h"
#include "runtime.h"
#include "strbuf.h"
#include "target.h"

struct pyu_value_layout;

// Bounds on one repr (depth, items, chars, digits, output) and on one pyu_values context
// (read_budget: bytes read from the target over the context's life; once spent, every further
// read gives `<unreadable ...: read budget exhausted>`).
struct pyu_value_limits {
	uint32_t depth;   // containers nested deeper print as `...` (list/dict/tuple/set)
	uint32_t items;   // elements shown per container; the rest become `...`
	uint32_t chars;   // characters of a str/bytes shown; the rest become `...`
	uint32_t digits;  // decimal digits of an int; past it `<int of N bits at 0x...>`
	uint32_t output;  // bytes of one repr; past it the repr is cut and ends in `...`
	uint64_t read_budget;
};

// Terminal-friendly defaults: depth 6, 100 items, 1,000 chars, 1,000 digits, 4,096 output
// bytes, 64 MiB read per context. Cannot fail.
void pyu_value_limits_default(struct pyu_value_limits *ret);

// Per-snapshot context: target, runtime layout and value layout, limits, type addresses
// learnt on the way, and the read budget used so far. Not thread-safe; one per snapshot.
struct pyu_values;

// Creates a context over @t for the interpreter @rt describes (rt->layout; for 3.13+ the
// value offsets are taken from the target's _Py_DebugOffsets at rt->runtime_addr and checked
// against the static table). @lim NULL means the defaults. @t and @rt must outlive the
// context. Fails with PYU_ERR_UNSUPPORTED for a version without a value layout, PYU_ERR_CORRUPT
// for debug offsets that fail validation, PYU_ERR_NOMEM. On error, *ret is unchanged.
struct pyu_error *pyu_values_create(struct pyu_target *t, const struct pyu_runtime *rt,
				    const struct pyu_value_limits *lim, struct pyu_values **ret);
void pyu_values_destroy(struct pyu_values *v);

// The value layout @v reads with (the version's table, shifted for the object header and
// overridden by the target's debug offsets). Cannot fail.
const struct pyu_value_layout *pyu_values_layout(const struct pyu_values *v);

// Appends repr(obj) of the object at @addr to @out, as the target's own repr() prints it for
// the types it knows (None, bool, int, float, complex, str, bytes, bytearray, tuple, list,
// dict, set, frozenset, exceptions, Ellipsis, NotImplemented, and the default forms of
// functions, classes, modules, builtins and instances). Never fails as a whole: unreadable or
// implausible parts become inline `<unreadable ... at 0x...: reason>`. Text taken from the
// target is escaped so that it cannot carry terminal control sequences. *truncated (may be
// NULL) is set to true when a bound cut the repr, and left alone otherwise.
void pyu_value_repr(struct pyu_values *v, uint64_t addr, struct pyu_strbuf *out,
		    bool *truncated);

// type(obj).__name__ of the object at @addr, escaped like any target text, malloc'd (caller
// frees). On error (unreadable object or type), *ret is unchanged.
struct pyu_error *pyu_value_type_name(struct pyu_values *v, uint64_t addr, char **ret);

// Calls @visit for each (key, value) of the dict at @dict, in the order Python iterates it,
// until it returns false. Never more entries than the table's checked size; the read budget
// bounds the work on a corrupt table. Fails when @dict is not a readable dict (PYU_ERR_CORRUPT, PYU_ERR_FAULT);
// a failure part way through is returned after the entries before it were visited.
struct pyu_error *pyu_dict_foreach(struct pyu_values *v, uint64_t dict,
				   bool (*visit)(void *arg, uint64_t key, uint64_t value),
				   void *arg);
// The value stored under the str key @key (UTF-8) / the int key @key. PYU_ERR_NOT_FOUND when
// absent; other errors as pyu_dict_foreach. On error, *ret is unchanged.
struct pyu_error *pyu_dict_get_str(struct pyu_values *v, uint64_t dict, const char *key,
				   uint64_t *ret);
struct pyu_error *pyu_dict_get_int(struct pyu_values *v, uint64_t dict, int64_t key,
				   uint64_t *ret);
// The values under each of the @n int keys @keys, in one pass over the dict (a lookup per
// thread of threading._active scanned it once per thread): @ret[i] is 0 when @keys[i] is
// absent. Errors as pyu_dict_foreach; on error @ret holds what was found before it.
struct pyu_error *pyu_dict_get_ints(struct pyu_values *v, uint64_t dict, const int64_t *keys,
				    size_t n, uint64_t *ret);

// Attribute lookup WITHOUT running code: for a module, its dict; otherwise the instance's
// attributes (tp_dictoffset including negative offsets, 3.11 managed dicts and values, 3.12
// tagged pointer, 3.13+ inline values), then the dicts of the type's MRO (for a class: its own
// MRO). No property, descriptor or __getattr__ runs. *where (may be NULL) is set to a static
// or context-owned string: "instance", "module" or "class NAME" (valid until the context is
// destroyed). PYU_ERR_NOT_FOUND when absent. On error, *ret and *where are unchanged.
struct pyu_error *pyu_object_getattr(struct pyu_values *v, uint64_t obj, const char *name,
				     uint64_t *ret, const char **where);

// Calls @visit for each instance attribute of @obj (any of the layouts above; a module's
// dict), in the order Python's vars(obj) gives, until it returns false. An object without
// attributes visits nothing and succeeds. Errors as pyu_dict_foreach.
struct pyu_error *pyu_object_attrs_foreach(struct pyu_values *v, uint64_t obj,
					   bool (*visit)(void *arg, uint64_t key,
							 uint64_t value),
					   void *arg);

// The address of the dict object that holds @obj's attributes (a module's, a class's, an
// instance's through tp_dictoffset or its managed dict), 0 when it has none (3.11+: values kept
// without a dict object). On error, *ret is unchanged.
struct pyu_error *pyu_object_dict_address(struct pyu_values *v, uint64_t obj, uint64_t *ret);

// The type of the object at @obj (checked: non-NULL, aligned). On error, *ret is unchanged.
struct pyu_error *pyu_object_type(struct pyu_values *v, uint64_t obj, uint64_t *ret);

// Whether the type at @type is @base or derives from it through tp_base (at most 64 links).
// An unreadable link answers false. Cannot fail.
bool pyu_type_derives(struct pyu_values *v, uint64_t type, uint64_t base);

// Whether the type at @type is the builtin (static) type called @name ("NameError", "object",
// "module") or derives from it through tp_base. An unreadable link answers false. Cannot fail.
bool pyu_type_derives_from_builtin(struct pyu_values *v, uint64_t type, const char *name);

// Whether the object at @obj is None (false when unreadable). Cannot fail.
bool pyu_object_is_none(struct pyu_values *v, uint64_t obj);

// Calls @visit for each element of the set or frozenset at @set, in table order, until it
// returns false. Never more elements than the table's checked size. Fails when @set is not a
// readable set (PYU_ERR_CORRUPT, PYU_ERR_FAULT); a failure part way through is returned after
// the elements before it were visited.
struct pyu_error *pyu_set_foreach(struct pyu_values *v, uint64_t set,
				  bool (*visit)(void *arg, uint64_t key), void *arg);

// Calls @visit for each item of the list or tuple at @obj, in order, until it returns false.
// Errors as pyu_set_foreach (the read budget bounds a corrupt size).
struct pyu_error *pyu_sequence_foreach(struct pyu_values *v, uint64_t obj,
				       bool (*visit)(void *arg, uint64_t item), void *arg);

// What traceback.format_exception_only says of the exception at @exc: *type is its type as
// it names it (3.x: the qualified name, after its module unless builtins or __main__; 2.7:
// __name__), *text is str(exc) as the interpreter makes it without running Python code (no
// argument: empty; one: its str(), a str's text unescaped, KeyError's repr; more: the args'
// repr; an exception group: "msg (N sub-exceptions)"), or NULL when a class written in Python
// defines __str__. Both malloc'd, UTF-8. *group is the tuple of an exception group's members
// (BaseExceptionGroup.exceptions), 0 for any other exception. *notes: the lines its
// __notes__ add (3.11+), each ended by '\n', malloc'd, or NULL. On error, the outputs are
// unchanged. A SyntaxError (and subclasses) comes in format_exception_only's own layout:
// *syntax holds the lines before the last one (file, source text, carets; each ended by
// '\n', malloc'd) and *text that line's message; *syntax is NULL for other exceptions.
struct pyu_error *pyu_exception_words(struct pyu_values *v, uint64_t exc, char **type,
				      char **text, uint64_t *group, char **notes, char **syntax);

// Where frame reprs (3.7+: "<frame at 0x..., file '...', line N, code f>") take their line:
// @line(@arg, @frame) gives the current line of the frame at @frame (the frame object, 3.11+
// the interpreter frame it wraps), or -1 when it does not know; then the repr says "line ?".
// Cannot fail.
void pyu_values_set_frame_lines(struct pyu_values *v,
				int64_t (*line)(void *arg, uint64_t frame), void *arg);

// The name of the type at @type as the heap census shows it: f"{__module__}.{__qualname__}"
// with the builtins module left out ("int", "collections.OrderedDict", "app.Cache.Entry";
// 2.7: __name__), escaped like any target text, malloc'd. On error, *ret is unchanged.
struct pyu_error *pyu_value_type_qualname(struct pyu_values *v, uint64_t type, char **ret);

// tp_name of the static (non-heap) type at @type ("list", "collections.deque"), malloc'd; a
// builtin type learnt by address gives the name it was found under when tp_name cannot be
// read. On error, *ret is unchanged.
struct pyu_error *pyu_value_static_type_name(struct pyu_values *v, uint64_t type, char **ret);

#endif
