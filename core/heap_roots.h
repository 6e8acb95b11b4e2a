// heap_roots.h - the roots of the object graph a heap walk starts from when it asks what keeps
// an object alive: every module in each interpreter's sys.modules, the local variables of every
// thread's Python frames (cells dereferenced; a class body's locals dict), and the exception
// each thread is handling. Each root says what it is in words and as a Python expression.
// The locals of the coroutines (and generators) a suspended asyncio task awaits through are
// roots too (tasks.h finds them); those of other suspended generators and coroutines are not:
// the census follows them from whatever holds the generator.
// Model layer: reads the snapshot (threads, frames), tasks (tasks.h), locals (locals.h) and
// dicts (values.h).
#ifndef PYU_HEAP_ROOTS_H
#define PYU_HEAP_ROOTS_H

#include <stdint.h>

#include "error.h"
#include "stacks.h"

// Roots kept at most (a thread's deep recursion holds many locals).
#define PYU_HEAP_MAX_ROOTS (1u << 20)

enum pyu_heap_root_kind {
	PYU_ROOT_MODULE,    // sys.modules['name']
	PYU_ROOT_LOCAL,     // a local variable of a thread's frame
	PYU_ROOT_LOCALS,    // the locals dict of a class body (or exec) frame
	PYU_ROOT_EXCEPTION, // the exception a thread is handling
	PYU_ROOT_TASK_LOCAL, // a local variable of a frame of a suspended asyncio task's
	                    // coroutine chain (thread: -1; frame: its number in the task's stack)
};

struct pyu_heap_root {
	uint64_t addr;              // the object
	enum pyu_heap_root_kind kind;
	char *name;                 // "sys.modules['app']", "local 'x' of frame #2 of thread
	                            // 0x7f..." (owned)
	char *expr;                 // a Python expression for it: "sys.modules['app']", "x",
	                            // "sys.exc_info()[1]" (owned)
	// Locals, the locals dict and exceptions: whose.
	uint32_t thread;            // index in pyu_stacks.threads (a task's local: 0)
	int32_t frame;              // as py-bt numbers it (innermost #0); -1 for none
	uint64_t frame_address;     // the frame's address (0 for none)
	char *local;                // the local's name (owned; NULL for none)
};

struct pyu_heap_roots {
	struct pyu_heap_root *items;
	uint32_t count, cap;
	uint64_t *addrs;            // items[i].addr, for pyu_heap_walk.roots
	char **errors;              // what could not be read (owned), at most a few
	uint32_t error_count;
	uint64_t dropped;           // past PYU_HEAP_MAX_ROOTS
};

// Collects the roots of the snapshot @s, modules first (each interpreter's sys.modules in
// its order), then each thread's frame locals, innermost frame first, then the frame locals of
// each suspended task (as py-tasks orders them), then exceptions. Fails
// only when out of memory; unreadable modules, frames or locals are left out with a line in
// ret->errors. On error, *ret is unchanged.
struct pyu_error *pyu_heap_roots_collect(struct pyu_stacks *s, struct pyu_heap_roots *ret);

// Frees what @r holds and zeroes it. Cannot fail.
void pyu_heap_roots_clear(struct pyu_heap_roots *r);

#endif
