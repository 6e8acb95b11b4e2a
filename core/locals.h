// locals.h - the local variables of one Python frame, as frame.f_locals names them: which
// names, of which kind, bound to which object. Values are addresses; making reprs of them is
// the value reader's job (values.h). Also what a name means in a frame's scope (py-print).
#ifndef PYU_LOCALS_H
#define PYU_LOCALS_H

#include <stdbool.h>
#include <stdint.h>

#include "layout.h"
#include "target.h"

// At most this many locals of one frame (a module body's dict may hold thousands).
#define PYU_LOCALS_MAX 4096
// Code points of one local's name.
#define PYU_LOCAL_NAME_MAX 1024

enum pyu_local_kind {
	PYU_LOCAL_ARGUMENT, // positional, keyword-only, *args or **kwargs parameter
	PYU_LOCAL_LOCAL,
	PYU_LOCAL_CELL,     // a local that inner functions capture (the cell is dereferenced)
	PYU_LOCAL_FREE,     // a variable of an enclosing function (the cell is dereferenced)
	PYU_LOCAL_DICT,     // an entry of the locals dict of a module or class body
};

// "argument", "local", "cell", "free" or "dict". Cannot fail.
const char *pyu_local_kind_name(enum pyu_local_kind kind);

struct pyu_local {
	char *name;             // UTF-8, owned
	enum pyu_local_kind kind;
	uint64_t address;       // the object bound to the name (never 0: unbound names are left out)
	uint64_t cell;          // cell and free variables: the cell it was read from (the frame
	                        // holds the cell, the cell the object); 0 for others
};

struct pyu_locals_cache;

struct pyu_locals {
	struct pyu_local *items;
	uint32_t count;
	bool truncated;         // more than PYU_LOCALS_MAX (or the caller's item bound)
	uint64_t dict;          // the locals dict of a module or class body, else 0
	uint64_t globals;       // f_globals / f_builtins of the frame (0 when unreadable)
	uint64_t builtins;
};

// Names and kinds of every slot of the frame at @frame, whose code object is at @code (read
// and checked by the walker), in the code's own order (arguments first): positional and
// keyword-only arguments, *args, **kwargs, other locals, cell variables and free variables,
// cells dereferenced; unbound names and hidden slots are left out, as frame.f_locals does.
// A module or class body (code without CO_OPTIMIZED) reports its locals dict in ret->dict
// and no items: the caller walks the dict (values.h). At most @max_items items (0: the
// default bound). On error (frame or code unreadable), *ret is unchanged; a single unreadable
// slot or name is left out.
// @cache (may be NULL) keeps each code object's slot names between calls: a dump reads the
// same code's names once, however many frames run it. It must only serve one snapshot (code
// addresses are reused once a process runs on).
struct pyu_error *pyu_frame_locals(struct pyu_target *t, const struct pyu_layout *l,
				   struct pyu_locals_cache *cache, uint64_t frame, uint64_t code,
				   uint32_t max_items, struct pyu_locals *ret);

// Slot names of code objects, per snapshot. Create returns NULL when out of memory (callers
// then read without a cache); destroy accepts NULL. Cannot fail otherwise.
struct pyu_locals_cache *pyu_locals_cache_create(void);
void pyu_locals_cache_destroy(struct pyu_locals_cache *c);

// Appends a local to @ls (name copied). Used for the entries of a locals dict. On error (out
// of memory), @ls is unchanged.
struct pyu_error *pyu_locals_add(struct pyu_locals *ls, const char *name,
				 enum pyu_local_kind kind, uint64_t address);

// Frees what @ls holds and zeroes it. Cannot fail.
void pyu_locals_clear(struct pyu_locals *ls);

#endif
