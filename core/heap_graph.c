// heap_graph.c - shortest chains from roots and retained sizes (heap_graph.h), built from what a
// heap walk (heap.c) reports through its hooks: every object counted and every reference
// followed. Memory is proportional to the objects and references the walk met, which the
// census bounds; every loop here is bounded by those counts.
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "addrmap.h"
#include "heap_graph.h"

// ---- a shortest chain ------------------------------------------------------------------------

struct path_walk {
	struct pyu_addrmap seen;    // object -> index in parents
	struct pyu_heap_ref *parents; // parents[i]: who first referred to object i, and how
	uint64_t *objs;           // objs[i]: object i
	uint32_t count, cap;
	uint64_t want;
	bool found, oom;
};

static bool path_edge(void *arg, uint64_t from, const struct pyu_heap_ref *via, uint64_t to)
{
	struct path_walk *p = arg;
	(void)from;
	if (p->count == p->cap) {
		uint32_t cap = p->cap ? p->cap * 2 : 1u << 12;
		struct pyu_heap_ref *grown = realloc(p->parents, cap * sizeof(*grown));
		if (grown)
			p->parents = grown;
		uint64_t *objs = grown ? realloc(p->objs, cap * sizeof(*objs)) : NULL;
		if (!objs) {
			p->oom = true;
			return false;
		}
		p->objs = objs;
		p->cap = cap;
	}
	int added = pyu_addrmap_add(&p->seen, to, p->count);
	if (added < 0) {
		p->oom = true;
		return false;
	}
	if (!added)
		return true; // met before, over a chain no longer than this one
	p->parents[p->count] = *via;
	p->objs[p->count++] = to;
	if (to == p->want) {
		p->found = true;
		return false;
	}
	return true;
}

void pyu_heap_path_clear(struct pyu_heap_path *path)
{
	if (!path)
		return;
	free(path->steps);
	memset(path, 0, sizeof(*path));
}

// The chain that ends at object @i of the walk, root first. False: out of memory.
static bool make_path(const struct path_walk *p, uint32_t i, struct pyu_heap_path *ret)
{
	// parents[k] says how the object before object k on its chain holds it; a root's says
	// which root it is.
	uint32_t n = 1, at = i;
	while (p->parents[at].via != PYU_VIA_ROOT) {
		int64_t up = pyu_addrmap_get(&p->seen, p->parents[at].addr);
		if (up < 0 || n > p->count)
			return true; // cannot be: every referrer was met before what it refers to
		at = (uint32_t)up;
		n++;
	}
	uint32_t *chain = calloc(n, sizeof(*chain));
	struct pyu_heap_ref *steps = calloc(n, sizeof(*steps));
	if (!chain || !steps) {
		free(chain);
		free(steps);
		return false;
	}
	at = i;
	for (uint32_t k = n; k > 0; k--) {
		chain[k - 1] = at;
		if (k > 1)
			at = (uint32_t)pyu_addrmap_get(&p->seen, p->parents[at].addr);
	}
	for (uint32_t k = 0; k < n; k++) {
		if (k + 1 < n)
			steps[k] = p->parents[chain[k + 1]];
		steps[k].addr = p->objs[chain[k]];
	}
	ret->root = (uint32_t)p->parents[chain[0]].n;
	ret->steps = steps;
	ret->count = n;
	free(chain);
	return true;
}

struct pyu_error *pyu_heap_path_find(struct pyu_stacks *s, const struct pyu_heap_roots *roots,
				     uint64_t want, struct pyu_heap **h,
				     struct pyu_heap_path *path)
{
	if (!want)
		return pyu_error_create(PYU_ERR_ARGUMENT, "no object address");
	struct path_walk p;
	memset(&p, 0, sizeof(p));
	p.want = want;
	struct pyu_heap_hooks hooks = {.arg = &p, .edge = path_edge};
	struct pyu_heap_walk w = {.want = want, .roots = roots->addrs,
				  .root_count = roots->count, .roots_only = true, .hooks = &hooks};
	struct pyu_heap *got;
	struct pyu_error *err = pyu_heap_walk(s, &w, &got);
	bool got_ok = !err;
	struct pyu_heap_path out;
	memset(&out, 0, sizeof(out));
	if (!err && p.oom)
		err = &pyu_error_nomem;
	if (!err && p.found && !make_path(&p, p.count - 1, &out))
		err = &pyu_error_nomem;
	pyu_addrmap_clear(&p.seen);
	free(p.parents);
	free(p.objs);
	if (err) {
		if (got_ok)
			pyu_heap_destroy(got);
		return err;
	}
	*h = got;
	*path = out;
	return NULL;
}

// ---- dominators ------------------------------------------------------------------------------

#define UNDEF UINT32_MAX
// Passes of the iterative algorithm at most (it settles in a few on object graphs; each pass
// is linear).
#define DOM_PASSES_MAX 1000

struct pyu_heap_dominators {
	struct pyu_addrmap ids;     // object -> node (node 0: the virtual root)
	uint32_t nodes;
	uint64_t *bytes;          // per node
	uint32_t *type;           // per node: index in the census's types
	uint32_t *idom;           // per node: its immediate dominator (UNDEF: no root reaches it)
	uint32_t *post;           // nodes reached, in postorder (the root last)
	uint32_t reached;
	uint64_t *retained;       // per node
	// while walking: the references, as node pairs
	uint32_t *from, *to;
	size_t edges, edge_cap;
	uint32_t node_cap;
	uint64_t last_from;       // the object whose references come in now, and its node: the
	int64_t last_node;        // walk reports one object's references one after another
	bool oom;
};

static bool dom_object(void *arg, uint64_t addr, uint64_t bytes, uint32_t type)
{
	struct pyu_heap_dominators *d = arg;
	if (d->nodes == d->node_cap) {
		uint32_t cap = d->node_cap ? d->node_cap * 2 : 1u << 14;
		uint64_t *b = realloc(d->bytes, cap * sizeof(*b));
		if (b)
			d->bytes = b;
		uint32_t *t = b ? realloc(d->type, cap * sizeof(*t)) : NULL;
		if (!t) {
			d->oom = true;
			return false;
		}
		d->type = t;
		d->node_cap = cap;
	}
	// The virtual root (address 0) is node 0 and no key: the map's keys are never 0.
	int added = addr ? pyu_addrmap_add(&d->ids, addr, d->nodes) : 1;
	if (added < 0) {
		d->oom = true;
		return false;
	}
	if (!added)
		return true; // on two of the collector's lists: one node
	d->bytes[d->nodes] = bytes;
	d->type[d->nodes++] = type;
	return true;
}

static bool dom_edge(void *arg, uint64_t from, const struct pyu_heap_ref *via, uint64_t to)
{
	struct pyu_heap_dominators *d = arg;
	(void)via;
	if (from != d->last_from || !d->last_node) {
		d->last_from = from;
		d->last_node = from ? pyu_addrmap_get(&d->ids, from) : 0;
	}
	int64_t f = d->last_node, t = pyu_addrmap_get(&d->ids, to);
	if (f < 0 || t < 0)
		return true; // cannot be: both were counted
	if (d->edges == d->edge_cap) {
		size_t cap = d->edge_cap ? d->edge_cap * 2 : 1u << 16;
		uint32_t *a = realloc(d->from, cap * sizeof(*a));
		if (a)
			d->from = a;
		uint32_t *b = a ? realloc(d->to, cap * sizeof(*b)) : NULL;
		if (!b) {
			d->oom = true;
			return false;
		}
		d->to = b;
		d->edge_cap = cap;
	}
	d->from[d->edges] = (uint32_t)f;
	d->to[d->edges++] = (uint32_t)t;
	return true;
}

void pyu_heap_dominators_destroy(struct pyu_heap_dominators *d)
{
	if (!d)
		return;
	pyu_addrmap_clear(&d->ids);
	free(d->bytes);
	free(d->type);
	free(d->idom);
	free(d->post);
	free(d->retained);
	free(d->from);
	free(d->to);
	free(d);
}

// Compressed adjacency: the neighbours of node v are adj[start[v] .. start[v + 1]).
struct adjacency {
	uint32_t *start;          // nodes + 1
	uint32_t *adj;
};

static bool adjacency_build(uint32_t nodes, const uint32_t *from, const uint32_t *to,
			    size_t edges, struct adjacency *ret)
{
	uint32_t *start = calloc((size_t)nodes + 1, sizeof(*start));
	uint32_t *adj = malloc((edges ? edges : 1) * sizeof(*adj));
	uint32_t *fill = calloc((size_t)nodes + 1, sizeof(*fill));
	if (!start || !adj || !fill) {
		free(start);
		free(adj);
		free(fill);
		return false;
	}
	for (size_t e = 0; e < edges; e++)
		start[from[e] + 1]++;
	for (uint32_t v = 0; v < nodes; v++)
		start[v + 1] += start[v];
	for (size_t e = 0; e < edges; e++)
		adj[start[from[e]] + fill[from[e]]++] = to[e];
	free(fill);
	ret->start = start;
	ret->adj = adj;
	return true;
}

static void adjacency_free(struct adjacency *a)
{
	free(a->start);
	free(a->adj);
}

// Postorder of the nodes the root reaches, depth first without recursion; order[v] is v's
// number in it (UNDEF: not reached). False: out of memory.
static bool postorder(struct pyu_heap_dominators *d, const struct adjacency *succ,
		      uint32_t *order)
{
	uint32_t *stack = malloc((size_t)d->nodes * sizeof(*stack));
	uint32_t *next = calloc(d->nodes, sizeof(*next)); // the next successor to look at
	d->post = malloc((size_t)d->nodes * sizeof(*d->post));
	if (!stack || !next || !d->post) {
		free(stack);
		free(next);
		return false;
	}
	for (uint32_t v = 0; v < d->nodes; v++)
		order[v] = UNDEF;
	uint32_t *onstack = next; // next[v] > 0 or v == 0 pushed: marked by order below
	size_t top = 0;
	stack[top++] = 0;
	order[0] = UNDEF - 1; // seen, not finished
	while (top) {
		uint32_t v = stack[top - 1];
		uint32_t at = succ->start[v] + onstack[v];
		if (at < succ->start[v + 1]) {
			onstack[v]++;
			uint32_t w = succ->adj[at];
			if (order[w] == UNDEF) {
				order[w] = UNDEF - 1;
				stack[top++] = w; // each node is pushed once: top <= nodes
			}
			continue;
		}
		top--;
		order[v] = d->reached;
		d->post[d->reached++] = v;
	}
	free(stack);
	free(next);
	return true;
}

// The immediate dominators (Cooper, Harvey, Kennedy: "A Simple, Fast Dominance Algorithm"):
// in reverse postorder, each node's dominator is the nearest common dominator of its
// processed predecessors, until nothing changes. False: it did not settle in
// DOM_PASSES_MAX passes (d->idom then holds what it had).
static bool dominators(struct pyu_heap_dominators *d, const struct adjacency *pred,
		       const uint32_t *order)
{
	for (uint32_t v = 0; v < d->nodes; v++)
		d->idom[v] = UNDEF;
	d->idom[0] = 0;
	for (int pass = 0; pass < DOM_PASSES_MAX; pass++) {
		bool changed = false;
		for (uint32_t k = d->reached; k-- > 0;) {
			uint32_t v = d->post[k];
			if (v == 0)
				continue;
			uint32_t nd = UNDEF;
			for (uint32_t e = pred->start[v]; e < pred->start[v + 1]; e++) {
				uint32_t p = pred->adj[e];
				if (order[p] == UNDEF || d->idom[p] == UNDEF)
					continue;
				if (nd == UNDEF) {
					nd = p;
					continue;
				}
				uint32_t a = p, b = nd;
				// Walk up by postorder number; both end at the root (highest).
				for (uint32_t steps = 0; a != b && steps < 2 * d->reached; steps++) {
					while (order[a] < order[b])
						a = d->idom[a];
					while (order[b] < order[a])
						b = d->idom[b];
				}
				nd = a;
			}
			if (nd != UNDEF && d->idom[v] != nd) {
				d->idom[v] = nd;
				changed = true;
			}
		}
		if (!changed)
			return true;
	}
	return false;
}

struct pyu_error *pyu_heap_dominators_compute(struct pyu_stacks *s,
					      const struct pyu_heap_roots *roots,
					      uint32_t biggest, struct pyu_heap **h,
					      struct pyu_heap_dominators **ret)
{
	struct pyu_heap_dominators *d = calloc(1, sizeof(*d));
	if (!d)
		return &pyu_error_nomem;
	// Node 0: the virtual root, whose references are the roots (edges from 0).
	if (!dom_object(d, 0, 0, 0)) {
		pyu_heap_dominators_destroy(d);
		return &pyu_error_nomem;
	}
	struct pyu_heap_hooks hooks = {.arg = d, .object = dom_object, .edge = dom_edge};
	struct pyu_heap_walk w = {.biggest = biggest, .roots = roots->addrs,
				  .root_count = roots->count, .hooks = &hooks};
	struct pyu_heap *got;
	struct pyu_error *err = pyu_heap_walk(s, &w, &got);
	if (err) {
		pyu_heap_dominators_destroy(d);
		return err;
	}
	struct adjacency succ = {0}, pred = {0};
	uint32_t *order = NULL;
	bool ok = !d->oom && adjacency_build(d->nodes, d->from, d->to, d->edges, &succ);
	if (ok)
		ok = adjacency_build(d->nodes, d->to, d->from, d->edges, &pred);
	free(d->from);
	free(d->to);
	d->from = d->to = NULL;
	if (ok)
		ok = (order = malloc((size_t)d->nodes * sizeof(*order))) != NULL;
	if (ok)
		ok = postorder(d, &succ, order);
	if (ok)
		ok = (d->idom = malloc((size_t)d->nodes * sizeof(*d->idom))) != NULL &&
		     (d->retained = calloc(d->nodes, sizeof(*d->retained))) != NULL;
	bool settled = ok && dominators(d, &pred, order);
	adjacency_free(&succ);
	adjacency_free(&pred);
	free(order);
	if (!ok) {
		pyu_heap_destroy(got);
		pyu_heap_dominators_destroy(d);
		return &pyu_error_nomem;
	}
	if (!settled) {
		pyu_heap_destroy(got);
		pyu_heap_dominators_destroy(d);
		return pyu_error_create(PYU_ERR_UNSUPPORTED, "the dominators did not settle in %d "
					"passes", DOM_PASSES_MAX);
	}
	// A dominator comes after what it dominates in postorder: sums flow up in one pass.
	for (uint32_t k = 0; k < d->reached; k++) {
		uint32_t v = d->post[k];
		d->retained[v] += d->bytes[v];
		if (v)
			d->retained[d->idom[v]] += d->retained[v];
	}
	*h = got;
	*ret = d;
	return NULL;
}

bool pyu_heap_retained(const struct pyu_heap_dominators *d, uint64_t addr, uint64_t *ret)
{
	int64_t v = addr ? pyu_addrmap_get(&d->ids, addr) : -1;
	if (v <= 0 || d->idom[v] == UNDEF)
		return false;
	*ret = d->retained[v];
	return true;
}

void pyu_heap_retained_by_sets(const struct pyu_heap_dominators *d, const int32_t *type_set,
			       uint32_t n, uint64_t *ret)
{
	for (uint32_t i = 0; i < n; i++)
		ret[i] = 0;
	uint64_t *in = calloc(d->nodes ? d->nodes : 1, sizeof(*in));
	if (!in)
		return; // advisory: sums of 0
	// From the root down (reverse postorder: a dominator before what it dominates), the sets
	// an object's dominators or itself belong to.
	for (uint32_t k = d->reached; k-- > 0;) {
		uint32_t v = d->post[k];
		if (!v)
			continue;
		uint64_t mask = in[d->idom[v]];
		int32_t set = type_set[d->type[v]];
		if (set >= 0 && set < 64 && (uint32_t)set < n)
			mask |= 1ull << set;
		in[v] = mask;
		for (uint64_t m = mask; m; m &= m - 1)
			ret[__builtin_ctzll(m)] += d->bytes[v];
	}
	free(in);
}

uint64_t pyu_heap_unreached(const struct pyu_heap_dominators *d)
{
	return d->nodes - d->reached;
}
