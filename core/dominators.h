// dominators.h - immediate dominators over a graph in compressed form (the successors of node v
// are adj[start[v] .. start[v + 1])), from node 0: a depth-first numbering without recursion,
// the predecessors in that numbering, and Cooper, Harvey and Kennedy's iterative algorithm ("A
// Simple, Fast Dominance Algorithm") over the reverse postorder, with array indices only (no
// per-edge allocation). Pure layer: the heap's retained sizes (heap_graph.c) use it.
#ifndef PYU_DOMINATORS_H
#define PYU_DOMINATORS_H

#include <stdbool.h>
#include <stdint.h>

#include "error.h"

// No node: not reached, or a successor entry to leave out.
#define PYU_DOM_NONE UINT32_MAX
// Passes of the iterative algorithm at most (it settles in a few on object graphs; each pass
// is linear in the edges).
#define PYU_DOM_PASSES_MAX 1000

// The dominator tree of the nodes node 0 reaches, numbered in reverse postorder: the root is
// 0 and a node's dominators all have numbers below its own.
struct pyu_dom_tree {
	uint32_t reached;         // nodes node 0 reaches (itself included)
	uint32_t *node;           // node[k]: the node numbered k (k < reached)
	uint32_t *idom;           // idom[k]: the number of node[k]'s immediate dominator (idom[0] 0)
	uint32_t passes;          // passes the iterative algorithm took
};

// Asked between passes and every 64 Ki nodes of a pass: true stops the computation.
typedef bool (*pyu_dom_stop_fn)(void *arg);

// Computes the dominator tree of the graph of @nodes nodes (at least 1) whose successors are
// adj[start[v] .. start[v + 1]) (entries of PYU_DOM_NONE or >= @nodes are left out; self
// references and repeats are allowed). @stop (may be NULL) is asked now and then; when it
// says stop, returns NULL with *ret empty (reached 0, no arrays). Fails when out of memory or
// when it did not settle in PYU_DOM_PASSES_MAX passes. On error, *ret is unchanged.
struct pyu_error *pyu_dominators(uint32_t nodes, const uint32_t *start, const uint32_t *adj,
				 pyu_dom_stop_fn stop, void *stop_arg, struct pyu_dom_tree *ret);
void pyu_dom_tree_clear(struct pyu_dom_tree *t);

#endif
