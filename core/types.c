// types.c - recognising type objects by structure and learning their addresses (types.h).
// Every field checked lives in the type object itself, which is writable data (static types
// in the interpreter's .data, heap types on the heap), so cores always hold it.
#include <inttypes.h>
#include <string.h>

#include "bytes.h"
#include "types.h"

static const char *const kind_names[PYU_TYPE_KINDS] = {"code"};

bool pyu_type_shape(const struct pyu_layout *l, enum pyu_type_kind kind,
		    struct pyu_type_shape *ret)
{
	struct pyu_type_shape s = {0};
	switch (kind) {
	case PYU_TYPE_CODE:
		// 3.11+: a variable-size object whose bytecode starts at co_code_adaptive, in
		// 2-byte code units; before, a fixed-size object.
		if (l->code.code_adaptive != PYU_NO_FIELD) {
			s.basicsize = l->code.code_adaptive;
			s.itemsize = 2;
		} else {
			s.basicsize = l->code.size;
			s.itemsize = 0;
		}
		s.flags_set = PYU_TPFLAGS_READY;
		s.flags_clear = PYU_TPFLAGS_HEAPTYPE | PYU_TPFLAGS_SUBCLASS_BITS;
		break;
	default:
		return false;
	}
	if (s.basicsize <= 0 || l->type_tp_name == PYU_NO_FIELD ||
	    l->type_tp_flags == PYU_NO_FIELD || l->ob_type == PYU_NO_FIELD)
		return false;
	*ret = s;
	return true;
}

// Bytes of a type object read in one go: up to tp_flags, which comes last of the fields used.
#define TYPE_READ 512

// Reads the fields of the type object at @type that the checks use. tp_basicsize and
// tp_itemsize follow tp_name directly in every version (PyObject_VAR_HEAD; tp_name;
// tp_basicsize; tp_itemsize).
static struct pyu_error *read_type(struct pyu_target *t, const struct pyu_layout *l,
				   uint64_t type, uint64_t *metatype, int64_t *basicsize,
				   int64_t *itemsize, uint64_t *flags)
{
	uint8_t buf[TYPE_READ];
	size_t len = (size_t)l->type_tp_flags + 8;
	if (len > sizeof(buf) || (size_t)l->type_tp_name + 24 > sizeof(buf) ||
	    (size_t)l->ob_type + 8 > sizeof(buf))
		return pyu_error_create(PYU_ERR_CORRUPT, "type object fields outside %d bytes",
					TYPE_READ);
	if (type == 0 || (type & 7))
		return pyu_error_create(PYU_ERR_CORRUPT, "bad type pointer 0x%" PRIx64, type);
	struct pyu_error *err = pyu_target_read(t, type, buf, len);
	if (err)
		return pyu_error_wrap(err, "reading the type object at 0x%" PRIx64, type);
	*metatype = pyu_get_u64(buf, l->ob_type);
	*basicsize = (int64_t)pyu_get_u64(buf, l->type_tp_name + 8);
	*itemsize = (int64_t)pyu_get_u64(buf, l->type_tp_name + 16);
	*flags = pyu_get_u64(buf, l->type_tp_flags);
	return NULL;
}

// Whether @meta is `type`: its own type is itself and it is flagged as a type subclass.
static struct pyu_error *check_metatype(struct pyu_types *ty, struct pyu_target *t,
					const struct pyu_layout *l, uint64_t meta,
					bool *is_type)
{
	*is_type = false;
	if (ty->metatype) {
		*is_type = meta == ty->metatype;
		return NULL;
	}
	uint64_t metameta, flags;
	int64_t basicsize, itemsize;
	struct pyu_error *err = read_type(t, l, meta, &metameta, &basicsize, &itemsize, &flags);
	if (err)
		return err;
	*is_type = metameta == meta && (flags & PYU_TPFLAGS_TYPE_SUBCLASS) &&
		   (flags & PYU_TPFLAGS_READY) && basicsize > 0 && basicsize < 4096;
	return NULL;
}

struct pyu_error *pyu_type_check(struct pyu_types *ty, struct pyu_target *t,
				 const struct pyu_layout *l, enum pyu_type_kind kind,
				 uint64_t type, uint64_t obj)
{
	if ((unsigned)kind >= PYU_TYPE_KINDS)
		return pyu_error_create(PYU_ERR_ARGUMENT, "unknown type kind %d", (int)kind);
	const char *name = kind_names[kind];
	if (ty->addr[kind])
		return type == ty->addr[kind]
			? NULL
			: pyu_error_create(PYU_ERR_CORRUPT,
					   "object at 0x%" PRIx64 " is not a %s object (its type "
					   "0x%" PRIx64 " is not the %s type at 0x%" PRIx64 ")",
					   obj, name, type, name, ty->addr[kind]);
	struct pyu_type_shape want;
	if (!pyu_type_shape(l, kind, &want))
		return pyu_error_create(PYU_ERR_UNSUPPORTED,
					"layout %s cannot describe the %s type", l->name, name);
	uint64_t meta, flags;
	int64_t basicsize, itemsize;
	struct pyu_error *err = read_type(t, l, type, &meta, &basicsize, &itemsize, &flags);
	if (err)
		return pyu_error_wrap(err, "checking the type of the %s object at 0x%" PRIx64,
				      name, obj);
	bool is_type = false;
	err = check_metatype(ty, t, l, meta, &is_type);
	if (err)
		return pyu_error_wrap(err, "checking the type of the %s object at 0x%" PRIx64,
				      name, obj);
	if (!is_type || basicsize != want.basicsize || itemsize != want.itemsize ||
	    (flags & want.flags_set) != want.flags_set || (flags & want.flags_clear))
		return pyu_error_create(PYU_ERR_CORRUPT,
					"object at 0x%" PRIx64 " is not a %s object (its type at 0x%"
					PRIx64 ": size %" PRId64 "/%" PRId64 ", flags 0x%" PRIx64
					", %s metatype; want %" PRId64 "/%" PRId64 ")",
					obj, name, type, basicsize, itemsize, flags,
					is_type ? "a" : "no", want.basicsize, want.itemsize);
	ty->addr[kind] = type;
	ty->metatype = meta;
	return NULL;
}
