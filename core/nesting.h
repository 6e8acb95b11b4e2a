// nesting.h - thread states of one OS thread in several interpreters, joined into one stack.
#ifndef PYU_NESTING_H
#define PYU_NESTING_H

#include <inttypes.h>

#include "stacks.h"

#define PYU_NESTING_MAX_STATES 4096u // thread states considered for joining

// Sets the inner/outer links of the thread states in @s that belong to one OS thread (the
// innermost interpreter's first). Thread states without an entry frame (before 3.12, or not
// running) stay apart. Cannot fail (a note that cannot be stored is dropped).
void pyu_link_nested(struct pyu_stacks *s);

#endif
