// dominators.c - immediate dominators over a compressed graph (dominators.h). Memory: about 16
// bytes a node and 4 an edge besides the graph, all in a few arrays; every loop is bounded by
// the node and edge counts (the iterative passes by PYU_DOM_PASSES_MAX).
#include <stdlib.h>
#include <string.h>

#include "dominators.h"

#define SEEN (PYU_DOM_NONE - 1) // on the depth-first stack, not finished
#define STOP_EVERY (1u << 16)

void pyu_dom_tree_clear(struct pyu_dom_tree *t)
{
	if (!t)
		return;
	free(t->node);
	free(t->idom);
	memset(t, 0, sizeof(*t));
}

// Depth first from node 0 without recursion: @post gets the nodes reached in postorder, and
// the count is returned. @number (per node) ends as PYU_DOM_NONE for nodes not reached.
// @stack and @pos are scratch of @nodes entries each.
static uint32_t postorder(uint32_t nodes, const uint32_t *start, const uint32_t *adj,
			  uint32_t *number, uint32_t *stack, uint32_t *pos, uint32_t *post)
{
	for (uint32_t v = 0; v < nodes; v++)
		number[v] = PYU_DOM_NONE;
	uint32_t top = 0, reached = 0;
	number[0] = SEEN;
	stack[top] = 0;
	pos[top++] = start[0];
	// Each step either looks at one edge or finishes one node.
	uint64_t steps_max = (uint64_t)start[nodes] + 2ull * nodes + 1;
	for (uint64_t steps = 0; top && steps < steps_max; steps++) {
		uint32_t v = stack[top - 1];
		if (pos[top - 1] < start[v + 1]) {
			uint32_t w = adj[pos[top - 1]++];
			if (w < nodes && number[w] == PYU_DOM_NONE) {
				number[w] = SEEN; // each node pushed once: top <= nodes
				stack[top] = w;
				pos[top++] = start[w];
			}
			continue;
		}
		top--;
		number[v] = reached;
		post[reached++] = v;
	}
	return reached;
}

// The nearest common dominator of @a and @b (numbers; their idoms are set), walking up the
// tree by number: a dominator's number is below its nodes'.
static uint32_t intersect(const uint32_t *idom, uint32_t a, uint32_t b, uint32_t reached)
{
	for (uint32_t steps = 0; a != b && steps < reached; steps++) {
		while (a > b)
			a = idom[a]; // idom[a] < a for every a > 0 set: ends at b or below
		while (b > a)
			b = idom[b];
	}
	return a;
}

struct pyu_error *pyu_dominators(uint32_t nodes, const uint32_t *start, const uint32_t *adj,
				 pyu_dom_stop_fn stop, void *stop_arg, struct pyu_dom_tree *ret)
{
	if (!nodes || !start || (!adj && start[nodes]))
		return pyu_error_create(PYU_ERR_ARGUMENT, "no graph");
	uint32_t *number = malloc((size_t)nodes * sizeof(*number));
	uint32_t *stack = malloc((size_t)nodes * sizeof(*stack));
	uint32_t *pos = malloc((size_t)nodes * sizeof(*pos));
	uint32_t *node = malloc((size_t)nodes * sizeof(*node));
	uint32_t *pstart = NULL, *padj = NULL, *idom = NULL;
	struct pyu_error *err = NULL;
	bool stopped = false;
	if (!number || !stack || !pos || !node)
		goto nomem;
	uint32_t reached = postorder(nodes, start, adj, number, stack, pos, node);
	free(pos);
	pos = NULL;
	// Reverse postorder: node[k] numbered k.
	for (uint32_t k = 0; k < reached / 2; k++) {
		uint32_t x = node[k];
		node[k] = node[reached - 1 - k];
		node[reached - 1 - k] = x;
	}
	for (uint32_t k = 0; k < reached; k++)
		number[node[k]] = k;
	// The predecessors of each number, by number, in increasing order (the first one met is
	// the nearest to the root: a tree edge's source comes first).
	pstart = calloc((size_t)reached + 1, sizeof(*pstart));
	if (!pstart)
		goto nomem;
	for (uint32_t k = 0; k < reached; k++) {
		uint32_t v = node[k];
		for (uint32_t e = start[v]; e < start[v + 1]; e++) {
			uint32_t w = adj[e];
			if (w < nodes && number[w] < reached && number[w] != k)
				pstart[number[w] + 1]++;
		}
	}
	for (uint32_t k = 0; k < reached; k++)
		pstart[k + 1] += pstart[k];
	padj = malloc((pstart[reached] ? pstart[reached] : 1) * sizeof(*padj));
	if (!padj)
		goto nomem;
	uint32_t *fill = stack; // scratch: nodes >= reached entries
	memcpy(fill, pstart, (size_t)reached * sizeof(*fill));
	for (uint32_t k = 0; k < reached; k++) {
		uint32_t v = node[k];
		for (uint32_t e = start[v]; e < start[v + 1]; e++) {
			uint32_t w = adj[e];
			if (w < nodes && number[w] < reached && number[w] != k)
				padj[fill[number[w]]++] = k;
		}
	}
	free(stack);
	free(number);
	stack = number = NULL;
	idom = malloc((size_t)reached * sizeof(*idom));
	if (!idom)
		goto nomem;
	for (uint32_t k = 0; k < reached; k++)
		idom[k] = PYU_DOM_NONE;
	idom[0] = 0;
	uint32_t pass = 0;
	bool changed = true;
	while (changed && pass < PYU_DOM_PASSES_MAX && !stopped) {
		changed = false;
		pass++;
		for (uint32_t k = 1; k < reached; k++) {
			if ((k & (STOP_EVERY - 1)) == 0 && stop && stop(stop_arg)) {
				stopped = true;
				break;
			}
			uint32_t nd = PYU_DOM_NONE;
			for (uint32_t e = pstart[k]; e < pstart[k + 1]; e++) {
				uint32_t p = padj[e];
				if (idom[p] == PYU_DOM_NONE)
					continue; // not processed yet (a later number, first pass)
				nd = nd == PYU_DOM_NONE ? p : intersect(idom, p, nd, reached);
			}
			if (nd != idom[k]) {
				idom[k] = nd;
				changed = true;
			}
		}
		if (!stopped && stop && stop(stop_arg))
			stopped = true;
	}
	free(pstart);
	free(padj);
	pstart = padj = NULL;
	if (stopped) {
		free(idom);
		free(node);
		memset(ret, 0, sizeof(*ret));
		return NULL;
	}
	if (changed) {
		err = pyu_error_create(PYU_ERR_UNSUPPORTED, "the dominators did not settle in %d "
				       "passes", PYU_DOM_PASSES_MAX);
		free(idom);
		free(node);
		return err;
	}
	uint32_t *shrunk = realloc(node, (reached ? reached : 1) * sizeof(*node));
	ret->reached = reached;
	ret->node = shrunk ? shrunk : node;
	ret->idom = idom;
	ret->passes = pass;
	return NULL;
nomem:
	free(number);
	free(stack);
	free(pos);
	free(node);
	free(pstart);
	free(padj);
	free(idom);
	return &pyu_error_nomem;
}
