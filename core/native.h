// native.h - native frames in the snapshot and their merge with the Python frames (native.c).
#ifndef PYU_NATIVE_H
#define PYU_NATIVE_H

#include <stdbool.h>
#include <stdint.h>

#include "error.h"
#include "stacks.h"

// Native frames per thread: up to 3.10 every Python call nests C calls of the eval loop, so a
// stack as deep as PYU_MAX_FRAMES allows takes several native frames for each.
#define PYU_MAX_NATIVE_FRAMES 8000000 // 8 x PYU_MAX_FRAMES (runtime.h)
#define PYU_MERGE_REASON 256

// One line of a merged stack: Python frame @index of the thread, or native frame @index -
// shown as the Cython function it runs when @cython (its native frame's cython member says
// what it is).
struct pyu_merge_item {
	bool python;
	bool cython;
	uint32_t index;
};

struct pyu_merge {
	struct pyu_merge_item *items; // innermost first; owned
	uint32_t count;
	int32_t *runner;  // per Python frame: the native frame that runs it; owned; NULL unless
	                  // merged
	bool merged;      // false: items hold the Python frames, then the native frames
	char reason[PYU_MERGE_REASON]; // why they could not be merged ("" when merged)
};

// Places @th's Python frames among its native frames: each one just inner to the native frame
// of the eval-loop call that runs it (by its C-stack marker on 3.11+, by the eval loop's symbol
// on older versions). Hides the interpreter's plumbing frames, Cython's runtime helpers and
// the argument-parsing wrappers of Cython functions shown unless @keep_all; Cython functions
// are items of their own kind. When the two
// sides do not match, ret->merged is false and ret->reason says why; a wrong interleaving is
// never produced. Fails only for out of memory; on error, *ret is unchanged.
struct pyu_error *pyu_merge_thread(const struct pyu_stacks *s, const struct pyu_thread_info *th,
				   bool keep_all, struct pyu_merge *ret);
void pyu_merge_release(struct pyu_merge *m);

// Whether @function names a frame of the interpreter's own call machinery (eval loop,
// vectorcall, call helpers), hidden in the merged view. Cannot fail.
bool pyu_native_is_plumbing(const char *function);

#endif
