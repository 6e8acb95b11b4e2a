// suggestions.h - the "Did you mean ...?" (and "Did you forget to import ...?") that 3.12+'s
// traceback module adds to the line of a NameError, AttributeError or ImportError, made from
// target memory alone: the exception's name/obj/name_from, the innermost traceback frame's
// locals, globals and builtins, dir() of an object from its instance and class dicts, a module
// from sys.modules, sys.stdlib_module_names. Where the answer would need the target to run
// code (a Python __dir__, __getattr__, a property), none is made. Model layer.
#ifndef PYU_SUGGESTIONS_H
#define PYU_SUGGESTIONS_H

#include <stdint.h>

#include "error.h"
#include "layout.h"
#include "target.h"

struct pyu_values;

// What the target version's TracebackException appends to str(exc) for the exception at
// @exc, of the interpreter at @interp (its sys.modules): *ret is that text (malloc'd; "" when it appends nothing, when the version predates it,
// or when this reader cannot know it without running code). Fails only for out of memory; on
// error, *ret is unchanged.
struct pyu_error *pyu_exception_suggestion(struct pyu_target *t, const struct pyu_layout *l,
					   struct pyu_values *v, uint64_t interp, uint64_t exc,
					   char **ret);

#endif
