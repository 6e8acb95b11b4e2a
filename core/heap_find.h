// heap_find.h - where CPython 2.7 and 3.6 keep the collector's lists when no symbol says so
// (a core read from memory alone): gcmodule.c's static generations[] array, whose first head
// the _PyGC_generation0 pointer in the same file's data points at. Model layer (heap census).
#ifndef PYU_HEAP_FIND_H
#define PYU_HEAP_FIND_H

#include <stdint.h>

#include "heap_layout.h"
#include "layout.h"
#include "target.h"

// Scans the writable data (and the .bss after it) of the file @image for a word that points,
// inside that same data, at generation_count ring heads each of which links both ways (its
// next's prev and its prev's next are it), at least one of them holding a first object whose
// type's type is a metatype (its own type). Returns the address of the first head and sets
// *var to where the pointer to it was found; 0 (and *var unchanged) when nothing validates or
// more than one different array does. Bounded: at most PYU_HEAP_FIND_MAX bytes are scanned.
// Cannot fail otherwise.
#define PYU_HEAP_FIND_MAX (64u << 20)
uint64_t pyu_heap_find_generations(struct pyu_target *t, const struct pyu_layout *l,
				   const struct pyu_heap_layout *hl, const char *image,
				   uint64_t *var);

#endif
