// heap_size.h - sizes of objects as sys.getsizeof() reports them, read from target memory: each
// type gets a rule once (the first class on its MRO that defines __sizeof__: a heap class
// that defines it, or the first static type, known by name), then each object is sized from its
// own fields (list slots, dict keys and values, set tables, str payloads, int digits,
// bytearray buffers), plus the collector's header and 3.11+'s pre-header where getsizeof adds
// them. Types whose __sizeof__ is not one of these rules are sized as object.__sizeof__
// would (tp_basicsize + ob_size * tp_itemsize) and marked inexact. Model layer.
#ifndef PYU_HEAP_SIZE_H
#define PYU_HEAP_SIZE_H

#include <stdbool.h>
#include <stdint.h>

#include "error.h"
#include "heap_layout.h"
#include "layout.h"
#include "target.h"
#include "value_layout.h"

struct pyu_values;

enum pyu_size_rule {
	PYU_SIZE_DEFAULT,   // object.__sizeof__: basicsize + |ob_size| * itemsize
	PYU_SIZE_LIST,      // + allocated slots
	PYU_SIZE_DICT,      // + keys table (unshared) + values array (split)
	PYU_SIZE_SET,       // + table when not the inline one
	PYU_SIZE_BYTEARRAY, // + ob_alloc
	PYU_SIZE_STR,       // PEP 393 compact / legacy, utf8 and wstr copies
	PYU_SIZE_UNICODE27, // 2.7 unicode: + (length + 1) Py_UNICODE
	PYU_SIZE_INT,       // digits
	PYU_SIZE_TYPE,      // a class: sizeof(PyHeapTypeObject) + its cached keys
	PYU_SIZE_ARRAY,     // array.array: + allocated items of its typecode's size
	PYU_SIZE_DEQUE,     // collections.deque: + the blocks its items span
};

// How the census finds what a type's objects refer to (heap.c), from the first static type on
// its MRO.
enum pyu_ref_kind {
	PYU_REFS_NONE,     // atoms (str, bytes, int, float ...) and types whose references are
	                   // not known field by field
	PYU_REFS_TUPLE,    // ob_size items
	PYU_REFS_LIST,     // ob_size items of ob_item
	PYU_REFS_DICT,     // keys and values of every entry
	PYU_REFS_SET,      // keys of the table
	PYU_REFS_FUNCTION, // name, qualname, code
	PYU_REFS_CFUNCTION, // self (a bound builtin method's object)
	PYU_REFS_CELL,     // its contents
	PYU_REFS_MODULE,   // its dict
	PYU_REFS_TYPE,     // a class: its dict, MRO, base, name and qualname
	PYU_REFS_GENERATOR, // its frame (<= 3.10: gi_frame; 3.11+ the locals of the frame
	PYU_REFS_COROUTINE, // inside it) while it has one
	PYU_REFS_ASYNC_GEN,
	PYU_REFS_FRAME,    // a frame object: its locals (<= 3.10, where frames are objects)
	PYU_REFS_CODE,     // a code object (no collector object): its constants, names, file
	                   // name, line and exception tables, bytecode and variable names
	PYU_REFS_METHOD,   // a bound method: its function and self (2.7: and class)
	PYU_REFS_EXC,      // an exception: args, __traceback__, __context__, __cause__,
	                   // __notes__ and its dict
	PYU_REFS_TRACEBACK, // tb_next, tb_frame
	PYU_REFS_DESCR,    // a descriptor of a class: its class, name and qualname
	PYU_REFS_PROPERTY, // fget, fset, fdel, __doc__, __name__
	PYU_REFS_CLASSMETHOD, // classmethod, staticmethod: the callable and its dict
	PYU_REFS_DEQUE,    // collections.deque: the items in its blocks
};

// Where collections.deque keeps its items (Modules/_collectionsmodule.c: the same struct in
// every 3.x, another in 2.7), for its size and its references.
struct pyu_deque_layout {
	int32_t leftblock, leftindex, len; // len -1: ob_size
	uint64_t blocklen, block_size;
	int32_t block_data, block_right;    // in a block: data[blocklen], the next block
};
const struct pyu_deque_layout *pyu_deque_layout(bool py2);

// What a type's objects are sized by. Filled by pyu_size_type().
struct pyu_size_type {
	enum pyu_size_rule rule;
	bool exact;         // sized as sys.getsizeof() does (else: basicsize rule, inexact)
	bool gc;            // Py_TPFLAGS_HAVE_GC: the collector's header is counted
	int64_t basicsize, itemsize;
	uint64_t flags;
	uint32_t extra;     // bytes before the object that getsizeof counts (GC header, pre-header)
	enum pyu_ref_kind refs;
	bool heap;          // a class made at run time (Py_TPFLAGS_HEAPTYPE): instances may have
	                    // attributes (a dict, managed values) and __slots__
	bool is_type;       // its objects are classes (the first static type is `type`)
};

// The sizing context: the target, the layouts (object offsets shifted for the object header),
// and the value reader used to read type names, MROs and class dicts.
struct pyu_sizer {
	struct pyu_target *t;
	const struct pyu_layout *l;
	const struct pyu_value_layout *vl;
	const struct pyu_heap_layout *hl;
	struct pyu_values *v;
	int32_t shift;      // Py_TRACE_REFS object header (0 or 16) added to every object offset
};

// Bytes of an object's start that pyu_size_object() may look at without reading the target.
#define PYU_SIZE_PREFIX 96

// The rule for the type at @type. On error (unreadable type), *ret is unchanged.
struct pyu_error *pyu_size_type(struct pyu_sizer *z, uint64_t type, struct pyu_size_type *ret);

// Gives the type named @name (as the census names it) the rule of the C __sizeof__ it is known
// by (array.array, collections.deque), when @st has it sized by tp_basicsize, and the
// references of the one whose references the census reads (deque). Cannot fail.
void pyu_size_named(struct pyu_size_type *st, const char *name);

// sys.getsizeof() of the object at @obj of a type sized by @st (a static class counts no
// collector header, as getsizeof says): @prefix holds its first
// @prefix_len bytes (at most PYU_SIZE_PREFIX are used; fields past them are read). On error
// (unreadable or implausible fields), *ret is set to the basicsize rule's answer and the error
// says why the exact size could not be had.
struct pyu_error *pyu_size_object(struct pyu_sizer *z, uint64_t obj, const uint8_t *prefix,
				  size_t prefix_len, const struct pyu_size_type *st,
				  uint64_t *ret);

#endif
