// heap_graph.c - shortest chains from roots and retained sizes (heap_graph.h), built from what a
// heap walk (heap.c) reports through its hooks: every object counted and every reference
// followed. Memory is proportional to the objects and references the walk met, which the
// census bounds; every loop here is bounded by those counts.
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "addrmap.h"
#include "addrset.h"
#include "dominators.h"
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

#define UNDEF PYU_DOM_NONE
#define EDGES_FIRST (1u << 16)
#define NODES_FIRST (1u << 14)

// What the objects asked about (the census's biggest and the caller's one) retain.
struct asked {
	uint64_t addr;
	uint32_t node;            // while building: its node; then its number in the tree
};

struct pyu_heap_dominators {
	// While walking, by node (node 0: the virtual root whose references are the roots; node
	// n: the census's n-th object): its bytes (past 4 GiB: UINT32_MAX, the bytes in big), its
	// type, and its references from start[n], which the walk reports node after node.
	uint32_t nodes, node_cap;
	size_t start_cap;
	uint32_t *bytes, *type, *start;
	struct { uint32_t node; uint64_t bytes; } *big;
	uint32_t big_count, big_cap;
	uint32_t row;             // the last node whose references started
	uint64_t *edges;          // a node, or (bit clear in known) an address to find the node
	                          // of; once resolved, 32-bit nodes (read as uint32_t)
	uint64_t *known;          // a bit per edge: its node is known
	size_t edge_count, edge_cap;
	uint64_t want;
	bool oom, resolved;
	// The dominator tree, by number in reverse postorder (0: the virtual root).
	uint32_t reached;
	uint32_t *idom, *tree_type;
	uint64_t *retained;
	struct asked *asked;
	uint32_t asked_count;
	struct pyu_addrmap asked_map; // address -> index in asked
};

static bool grow(void **p, size_t *cap, size_t need, size_t first, size_t size)
{
	if (need <= *cap)
		return true;
	size_t n = *cap ? *cap : first;
	while (n < need)
		n *= 2;
	void *grown = realloc(*p, n * size);
	if (!grown)
		return false;
	*p = grown;
	*cap = n;
	return true;
}

static bool dom_object(void *arg, uint64_t addr, uint64_t bytes, uint32_t type)
{
	struct pyu_heap_dominators *d = arg;
	(void)addr;
	if (d->nodes == d->node_cap) {
		size_t cap = d->node_cap, c2 = cap;
		if (d->nodes >= UINT32_MAX / 4 ||
		    !grow((void **)&d->bytes, &cap, d->nodes + 1u, NODES_FIRST, sizeof(*d->bytes)) ||
		    !grow((void **)&d->type, &c2, d->nodes + 1u, NODES_FIRST, sizeof(*d->type)) ||
		    !grow((void **)&d->start, &d->start_cap, (cap < c2 ? cap : c2) + 2, NODES_FIRST,
			  sizeof(*d->start))) {
			d->oom = true;
			return false;
		}
		d->node_cap = (uint32_t)(cap < c2 ? cap : c2);
	}
	uint32_t n = d->nodes++;
	d->type[n] = type;
	d->bytes[n] = bytes < UINT32_MAX ? (uint32_t)bytes : UINT32_MAX;
	if (bytes >= UINT32_MAX) {
		size_t cap = d->big_cap;
		if (!grow((void **)&d->big, &cap, d->big_count + 1u, 16, sizeof(*d->big))) {
			d->oom = true;
			return false;
		}
		d->big_cap = (uint32_t)cap;
		d->big[d->big_count].node = n;
		d->big[d->big_count++].bytes = bytes;
	}
	return true;
}

static uint64_t node_bytes(const struct pyu_heap_dominators *d, uint32_t n)
{
	if (d->bytes[n] != UINT32_MAX)
		return d->bytes[n];
	// Nodes in big[] come in increasing order: a binary search.
	uint32_t lo = 0, hi = d->big_count;
	while (lo < hi) {
		uint32_t mid = lo + (hi - lo) / 2;
		if (d->big[mid].node < n)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo < d->big_count && d->big[lo].node == n ? d->big[lo].bytes : UINT32_MAX;
}

// Starts the references of every node up to @to (their references, if any, come next).
static void start_rows(struct pyu_heap_dominators *d, uint32_t to)
{
	for (uint32_t r = d->row + 1; r <= to && r < d->start_cap; r++)
		d->start[r] = (uint32_t)d->edge_count;
	if (to > d->row)
		d->row = to;
}

static bool dom_link(void *arg, uint32_t from, uint32_t to, uint64_t to_addr)
{
	struct pyu_heap_dominators *d = arg;
	if (from < d->row || from >= d->nodes)
		return true; // cannot be: the walk reports each node's references together
	if (d->edge_count >= UINT32_MAX - 1) {
		d->oom = true;
		return false;
	}
	start_rows(d, from);
	if (d->edge_count == d->edge_cap) {
		size_t cap = d->edge_cap, kcap = d->edge_cap / 64;
		if (!grow((void **)&d->edges, &cap, d->edge_count + 1, EDGES_FIRST, sizeof(uint64_t)) ||
		    !grow((void **)&d->known, &kcap, cap / 64, EDGES_FIRST / 64, sizeof(uint64_t))) {
			d->oom = true;
			return false;
		}
		memset(d->known + d->edge_cap / 64, 0, (cap - d->edge_cap) / 8);
		d->edge_cap = cap;
	}
	size_t e = d->edge_count++;
	if (to) {
		d->edges[e] = to;
		d->known[e / 64] |= 1ull << (e % 64);
	} else {
		d->edges[e] = to_addr;
	}
	return true;
}

// Adds @addr to the objects asked about, with the node @rank_to_node says it has.
static bool ask(struct pyu_heap_dominators *d, const struct pyu_addrset *seen,
		const struct pyu_addrset_rank *rank, const uint32_t *rank_to_node, uint64_t addr)
{
	int64_t r = pyu_addrset_rank(seen, rank, addr);
	if (r < 0 || rank_to_node[r] == UNDEF)
		return true;
	int added = pyu_addrmap_add(&d->asked_map, addr, d->asked_count);
	if (added < 0)
		return false;
	if (added) {
		d->asked[d->asked_count].addr = addr;
		d->asked[d->asked_count++].node = rank_to_node[r];
	}
	return true;
}

// The walk's end: every reference's node found (through a numbering of the census's set of
// objects, its edges rewritten in place as 32-bit nodes), and the nodes of the objects asked
// about.
static bool dom_done(void *arg, const struct pyu_heap *h, const struct pyu_addrset *seen,
		     const uint64_t *objects, uint64_t count)
{
	struct pyu_heap_dominators *d = arg;
	if (d->oom || count + 1 != d->nodes)
		return false; // cannot be: every object counted was one node
	start_rows(d, d->nodes);
	struct pyu_addrset_rank rank;
	if (pyu_addrset_rank_build(seen, &rank) != 0) {
		d->oom = true;
		return false;
	}
	uint32_t *rank_to_node = malloc((seen->count ? seen->count : 1) * sizeof(*rank_to_node));
	d->asked = malloc((h->biggest_count + 2) * sizeof(*d->asked));
	if (!rank_to_node || !d->asked) {
		free(rank_to_node);
		pyu_addrset_rank_clear(&rank);
		d->oom = true;
		return false;
	}
	for (uint64_t r = 0; r < seen->count; r++)
		rank_to_node[r] = UNDEF;
	for (uint64_t i = 0; i < count; i++) {
		int64_t r = pyu_addrset_rank(seen, &rank, objects[i]);
		if (r >= 0)
			rank_to_node[r] = (uint32_t)(i + 1);
	}
	bool ok = true;
	for (uint32_t i = 0; ok && i < h->biggest_count; i++)
		ok = ask(d, seen, &rank, rank_to_node, h->biggest[i].addr);
	if (ok && d->want)
		ok = ask(d, seen, &rank, rank_to_node, d->want);
	// In place: entry e's 4 bytes go where entry e / 2's 8 were, never past one still to read.
	unsigned char *out = (unsigned char *)d->edges;
	for (size_t e = 0; ok && e < d->edge_count; e++) {
		uint64_t v;
		memcpy(&v, out + e * 8, sizeof(v));
		uint32_t node = (uint32_t)v;
		if (!((d->known[e / 64] >> (e % 64)) & 1)) {
			int64_t r = pyu_addrset_rank(seen, &rank, v);
			node = r < 0 ? UNDEF : rank_to_node[r];
		}
		memcpy(out + e * 4, &node, sizeof(node));
	}
	free(rank_to_node);
	pyu_addrset_rank_clear(&rank);
	free(d->known);
	d->known = NULL;
	if (!ok) {
		d->oom = true;
		return false;
	}
	void *shrunk = realloc(d->edges, (d->edge_count ? d->edge_count : 1) * sizeof(uint32_t));
	if (shrunk)
		d->edges = shrunk;
	d->resolved = true;
	return true;
}

void pyu_heap_dominators_destroy(struct pyu_heap_dominators *d)
{
	if (!d)
		return;
	free(d->bytes);
	free(d->type);
	free(d->start);
	free(d->big);
	free(d->edges);
	free(d->known);
	free(d->idom);
	free(d->tree_type);
	free(d->retained);
	free(d->asked);
	pyu_addrmap_clear(&d->asked_map);
	free(d);
}

// The progress callback while the dominators are computed: every object looked into.
struct dom_progress {
	struct pyu_stacks *s;
	uint64_t objects;
};

static bool dom_stop(void *arg)
{
	const struct dom_progress *p = arg;
	return p->s->progress && p->s->progress(p->s->progress_arg, p->objects, p->objects);
}

// The tree's sums: each number's retained bytes (a dominator's number is below its nodes', so
// in decreasing order every subtree is summed before its dominator takes it), its type, and
// the numbers of the objects asked about; the walk's arrays are let go.
static bool tree_sums(struct pyu_heap_dominators *d, const struct pyu_dom_tree *t)
{
	uint32_t r = t->reached;
	d->retained = malloc((size_t)r * sizeof(*d->retained));
	d->tree_type = malloc((size_t)r * sizeof(*d->tree_type));
	uint64_t *mark = calloc(d->nodes / 64 + 1, sizeof(*mark)); // the nodes asked about
	if (!d->retained || !d->tree_type || !mark) {
		free(mark);
		return false;
	}
	for (uint32_t k = 0; k < r; k++) {
		d->retained[k] = node_bytes(d, t->node[k]);
		d->tree_type[k] = d->type[t->node[k]];
	}
	for (uint32_t k = r; k-- > 1;)
		d->retained[t->idom[k]] += d->retained[k];
	// The asked nodes' numbers (UNDEF: not reached), sorted by node for a binary search.
	struct pyu_addrmap by_node = {0};
	bool ok = true;
	for (uint32_t i = 0; ok && i < d->asked_count; i++) {
		uint32_t n = d->asked[i].node;
		mark[n / 64] |= 1ull << (n % 64);
		ok = pyu_addrmap_add(&by_node, (uint64_t)n + 1, i) >= 0;
		d->asked[i].node = UNDEF;
	}
	for (uint32_t k = 0; ok && k < r; k++) {
		uint32_t n = t->node[k];
		if (!((mark[n / 64] >> (n % 64)) & 1))
			continue;
		int64_t i = pyu_addrmap_get(&by_node, (uint64_t)n + 1);
		// Two addresses of one node cannot be: each object is one node.
		if (i >= 0)
			d->asked[i].node = k;
	}
	pyu_addrmap_clear(&by_node);
	free(mark);
	return ok;
}

struct pyu_error *pyu_heap_dominators_compute(struct pyu_stacks *s,
					      const struct pyu_heap_roots *roots,
					      uint32_t biggest, uint64_t want, struct pyu_heap **h,
					      struct pyu_heap_dominators **ret)
{
	struct pyu_heap_dominators *d = calloc(1, sizeof(*d));
	if (!d)
		return &pyu_error_nomem;
	d->want = want;
	// Node 0: the virtual root, whose references are the roots.
	if (!dom_object(d, 0, 0, UNDEF)) {
		pyu_heap_dominators_destroy(d);
		return &pyu_error_nomem;
	}
	d->start[0] = 0;
	struct pyu_heap_hooks hooks = {.arg = d, .object = dom_object, .link = dom_link,
				       .done = dom_done};
	struct pyu_heap_walk w = {.biggest = biggest, .roots = roots->addrs,
				  .root_count = roots->count, .hooks = &hooks};
	struct pyu_heap *got;
	struct pyu_error *err = pyu_heap_walk(s, &w, &got);
	if (err) {
		pyu_heap_dominators_destroy(d);
		return err;
	}
	if (d->oom) {
		pyu_heap_destroy(got);
		pyu_heap_dominators_destroy(d);
		return &pyu_error_nomem;
	}
	if (got->interrupted || !d->resolved) {
		// Stopped: the census so far, without retained sizes.
		pyu_heap_dominators_destroy(d);
		*h = got;
		*ret = NULL;
		return NULL;
	}
	struct pyu_dom_tree t;
	struct dom_progress progress = {s, got->objects};
	err = pyu_dominators(d->nodes, d->start, (const uint32_t *)d->edges, dom_stop, &progress,
			     &t);
	free(d->edges);
	free(d->start);
	d->edges = NULL;
	d->start = NULL;
	if (!err && !t.node) {
		got->partial = got->interrupted = true; // the census whole, its retained sizes not
		pyu_heap_dominators_destroy(d);
		*h = got;
		*ret = NULL;
		return NULL;
	}
	if (!err && !tree_sums(d, &t))
		err = &pyu_error_nomem;
	if (err) {
		pyu_dom_tree_clear(&t);
		pyu_heap_destroy(got);
		pyu_heap_dominators_destroy(d);
		return err;
	}
	d->reached = t.reached;
	d->idom = t.idom;
	t.idom = NULL;
	pyu_dom_tree_clear(&t);
	free(d->bytes);
	free(d->type);
	free(d->big);
	d->bytes = d->type = NULL;
	d->big = NULL;
	*h = got;
	*ret = d;
	return NULL;
}

bool pyu_heap_retained(const struct pyu_heap_dominators *d, uint64_t addr, uint64_t *ret)
{
	int64_t i = addr ? pyu_addrmap_get(&d->asked_map, addr) : -1;
	if (i < 0 || d->asked[i].node == UNDEF)
		return false;
	*ret = d->retained[d->asked[i].node];
	return true;
}

void pyu_heap_retained_by_sets(const struct pyu_heap_dominators *d, const int32_t *type_set,
			       uint32_t n, uint64_t *ret)
{
	for (uint32_t i = 0; i < n; i++)
		ret[i] = 0;
	uint64_t *in = calloc(d->reached ? d->reached : 1, sizeof(*in));
	if (!in)
		return; // advisory: sums of 0
	// From the root down (a dominator's number is below its nodes'), the sets an object's
	// dominators or itself belong to. What a set retains is what its topmost members in the
	// tree (no dominator of the set above them) retain: every object whose chain of
	// dominators meets the set is under exactly one of those.
	for (uint32_t k = 1; k < d->reached; k++) {
		uint64_t above = in[d->idom[k]], bit = 0;
		int32_t set = d->tree_type[k] != UNDEF ? type_set[d->tree_type[k]] : -1;
		if (set >= 0 && set < 64 && (uint32_t)set < n)
			bit = 1ull << set;
		in[k] = above | bit;
		if (bit && !(above & bit))
			ret[set] += d->retained[k];
	}
	free(in);
}

uint64_t pyu_heap_unreached(const struct pyu_heap_dominators *d)
{
	return d->nodes - d->reached;
}
