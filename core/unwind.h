// unwind.h - native stacks of a live process or a core file, unwound by elfutils (libdwfl):
// the CLI's way to see native frames (debuggers hand in their own). Memory layer: it knows
// nothing of Python.
#ifndef PYU_UNWIND_H
#define PYU_UNWIND_H

#include <stdbool.h>
#include <stdint.h>

#include "error.h"
#include "target.h"

#define PYU_UNWIND_MAX_FRAMES 8000000 // per thread: as PYU_MAX_NATIVE_FRAMES (native.h)

// One frame of thread @tid, innermost first; or, when @error is set, why @tid could not be
// unwound at all. Strings are valid only during the call; NULL / -1 when unknown.
struct pyu_unwound {
	int64_t tid;
	uint64_t pc, sp;
	const char *function, *library, *file;
	int64_t line;
	const char *error;
	bool artificial; // a frame for a function jumped through (a tail call)
	bool inlined;    // a function inlined where the next frame given runs
};

// Called for each frame; a non-NULL error stops the whole unwind and is returned.
typedef struct pyu_error *(*pyu_unwind_fn)(void *arg, const struct pyu_unwound *frame);

// Unwinds every thread of @t (a live process, stopped under ptrace by this process, or a core
// file) and hands each frame to @fn. Fails with PYU_ERR_ARGUMENT for other targets,
// PYU_ERR_UNSUPPORTED when built without elfutils, PYU_ERR_IO when elfutils cannot open the
// target at all; a thread that cannot be unwound is reported to @fn with its error instead.
struct pyu_error *pyu_target_unwind(struct pyu_target *t, pyu_unwind_fn fn, void *arg);

#endif
