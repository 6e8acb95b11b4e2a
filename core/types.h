// types.h - the interpreter's own type objects, recognised by structure rather than by name:
// a type's address is learnt once per snapshot from the first object whose type passes checks
// on fields that live in writable memory (its metatype is `type`, whose own type is itself;
// tp_basicsize, tp_itemsize and tp_flags as the layout expects), and every later object must
// name that same address. tp_name is never read: it points into read-only data, which cores
// leave out. Used by the runtime finder (to confirm a structure found by scanning memory) and
// by the walker; shared by every reader that needs "is this object of type X".
#ifndef PYU_TYPES_H
#define PYU_TYPES_H

#include <stdbool.h>
#include <stdint.h>

#include "layout.h"
#include "target.h"

enum pyu_type_kind {
	PYU_TYPE_CODE, // PyCode_Type
	PYU_TYPE_KINDS
};

// Type addresses known for one target: from a symbol, or learnt. 0 = not known yet.
struct pyu_types {
	uint64_t addr[PYU_TYPE_KINDS];
	uint64_t metatype; // PyType_Type, once a type passed the checks
};

// tp_flags bits used here.
#define PYU_TPFLAGS_HEAPTYPE (1ull << 9)
#define PYU_TPFLAGS_READY (1ull << 12)
#define PYU_TPFLAGS_SUBCLASS_BITS 0xff000000ull // LONG_SUBCLASS ... TYPE_SUBCLASS
#define PYU_TPFLAGS_TYPE_SUBCLASS (1ull << 31)

// What the type of @kind looks like under @l: sizes, flags that must be set and clear.
struct pyu_type_shape {
	int64_t basicsize, itemsize;
	uint64_t flags_set, flags_clear;
};

// The expected shape of @kind's type. False when @l lacks a field the shape needs.
bool pyu_type_shape(const struct pyu_layout *l, enum pyu_type_kind kind,
		    struct pyu_type_shape *ret);

// Whether @type is @kind's type (@obj names the object for messages). A known address
// (symbol or learnt) must be equal; otherwise the type object's structure is checked and, when
// it passes, its address is learnt into @ty. On error (PYU_ERR_CORRUPT: another type;
// PYU_ERR_FAULT: the type object is unreadable), @ty is unchanged.
struct pyu_error *pyu_type_check(struct pyu_types *ty, struct pyu_target *t,
				 const struct pyu_layout *l, enum pyu_type_kind kind,
				 uint64_t type, uint64_t obj);

#endif
