// inspect.h - the values a snapshot shows: its value reader (made on first use, with limits the
// caller may change), each thread's name and the exception it is handling, a frame's locals
// with their reprs, and what a dotted name means in a frame (py-print). Model layer: reads the
// target through locals.c and values.c; the formatters print what these return.
#ifndef PYU_INSPECT_H
#define PYU_INSPECT_H

#include <stdbool.h>
#include <stdint.h>

#include "locals.h"
#include "stacks.h"

struct pyu_values;

// A snapshot's value state. Created by pyu_stacks_collect(), destroyed with the snapshot.
struct pyu_inspect;
struct pyu_error *pyu_inspect_create(struct pyu_inspect **ret);
void pyu_inspect_destroy(struct pyu_inspect *in);

// Sets one bound (enum pyu_limit of pyunwind.h; 0 = its default); when it changes, the value
// reader is remade on next use. Fails with PYU_ERR_ARGUMENT for an unknown limit.
struct pyu_error *pyu_inspect_set_limit(struct pyu_inspect *in, uint32_t which, uint64_t value);

// The snapshot's value reader, made on first use. On error (a version without value layouts),
// *ret is unchanged and the same error comes back on every call.
struct pyu_error *pyu_stacks_values(const struct pyu_stacks *s, struct pyu_values **ret);

// Fills every thread's name (threading._active[ident].name) and exception (what
// sys.exc_info() gives inside it) once; both stay NULL / 0 when unknown. Cannot fail.
void pyu_stacks_read_thread_values(const struct pyu_stacks *s);

// One local as shown: strings owned.
struct pyu_shown_local {
	char *name;
	enum pyu_local_kind kind;
	char *type;        // type(value).__name__; NULL when unreadable
	char *repr;
	uint64_t address;
	bool truncated;    // a bound cut the repr
};

struct pyu_shown_locals {
	struct pyu_shown_local *items;
	uint32_t count;
	bool truncated;    // more locals than shown
};

// The locals of frame @frame of thread @thread with their reprs. On error (no such frame, an
// error frame, unreadable frame or code, no value reader), *ret is unchanged.
struct pyu_error *pyu_frame_shown_locals(const struct pyu_stacks *s, uint32_t thread,
					 uint32_t frame, struct pyu_shown_locals *ret);
// The same for a frame of the snapshot that is not on a thread's stack (a suspended
// coroutine's, from tasks.c) whose code is in the snapshot's codes.
struct pyu_error *pyu_frame_info_shown_locals(const struct pyu_stacks *s,
					      const struct pyu_frame_info *f,
					      struct pyu_shown_locals *ret);
void pyu_shown_locals_clear(struct pyu_shown_locals *sl);

// Resolves @path ("name" or "name.attr.attr") in frame @frame of @thread as Python would:
// locals, enclosing (free) variables, f_globals, builtins; then attributes through instance,
// class and module dicts without running code. *ret_where: malloc'd text saying where each
// part was found ("local 'self'.count (instance)"); *ret_addr: the object. PYU_ERR_NOT_FOUND
// names what is missing. On error, *ret_where and *ret_addr are unchanged.
struct pyu_error *pyu_frame_lookup(const struct pyu_stacks *s, uint32_t thread, uint32_t frame,
				   const char *path, char **ret_where, uint64_t *ret_addr);

#endif
