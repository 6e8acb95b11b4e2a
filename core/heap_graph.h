// heap_graph.h - what keeps an object alive, over the object graph a heap walk (heap.h)
// reports: one shortest chain of references from a root (heap_roots.h) to an object, and the
// bytes each object retains (its dominator subtree: what would be freed if it became
// unreachable). Model layer; the Face (format_heap.c) prints the results.
#ifndef PYU_HEAP_GRAPH_H
#define PYU_HEAP_GRAPH_H

#include <stdbool.h>
#include <stdint.h>

#include "error.h"
#include "heap.h"
#include "heap_roots.h"

// One shortest chain: steps[0].addr is the root object, each step's object holds the next one's
// as its via says, and the last step's object is the one asked for (its via unused).
struct pyu_heap_path {
	uint32_t root;            // index in the roots
	struct pyu_heap_ref *steps; // .addr the object; .via/.n/.key/.field how it holds the next
	uint32_t count;
};

// Walks breadth first from @roots (in their order: a tie goes to the earlier root) until the
// object at @want is met; *path holds the chain (count 0: no root reaches it) and *h the walk's
// census (the objects met, and want_found/want_type/want_bytes). On error (out of memory, no
// runtime), *h and *path are unchanged.
struct pyu_error *pyu_heap_path_find(struct pyu_stacks *s, const struct pyu_heap_roots *roots,
				     uint64_t want, struct pyu_heap **h,
				     struct pyu_heap_path *path);
void pyu_heap_path_clear(struct pyu_heap_path *path);

// Retained sizes: the census (collector lists, then @roots, then references), each object's
// dominator over the graph from a virtual node whose edges go to the roots (dominators.h:
// objects numbered as the census counts them, references kept as 32-bit node numbers in
// arrays), and each dominator subtree's bytes.
struct pyu_heap_dominators;

// Takes the census as pyu_heap_census(@biggest) does and the dominators of its objects; the
// retained bytes of the @biggest largest objects and of the object at @want (0: none) can be
// asked for afterwards. Memory besides the census's: about 12 bytes per object and 8 per
// reference while it walks (4 more per object at its end), about 20 per object and 8 per
// reference while the dominators are computed, 16 per object kept. When the census was interrupted
// (h->interrupted), or the dominators were (the census then whole, yet marked partial and
// interrupted), *ret is NULL: no retained sizes. On error (out of memory), *h and *ret are
// unchanged.
struct pyu_error *pyu_heap_dominators_compute(struct pyu_stacks *s,
					      const struct pyu_heap_roots *roots,
					      uint32_t biggest, uint64_t want, struct pyu_heap **h,
					      struct pyu_heap_dominators **ret);
void pyu_heap_dominators_destroy(struct pyu_heap_dominators *d);

// The bytes the object at @addr retains (one of the census's biggest, or @want); false when it
// is none of those, no object of the census, or no root reaches it. Cannot fail.
bool pyu_heap_retained(const struct pyu_heap_dominators *d, uint64_t addr, uint64_t *ret);

// For @n sets of types (@type_set[i] for h->types[i]: a set number below 64, or -1 for none),
// the bytes retained by each whole set: what would be freed if every object of the set
// became unreachable. @ret holds @n sums. Cannot fail.
void pyu_heap_retained_by_sets(const struct pyu_heap_dominators *d, const int32_t *type_set,
			       uint32_t n, uint64_t *ret);

// Objects no root reaches (garbage cycles, objects held only by generators no root reaches or by
// references the census does not follow). Cannot fail.
uint64_t pyu_heap_unreached(const struct pyu_heap_dominators *d);

#endif
