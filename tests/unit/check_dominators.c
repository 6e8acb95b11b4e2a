// check_dominators.c - immediate dominators over compressed graphs (dominators.c): hand-made
// graphs (a chain, a diamond, a cycle, self references, repeated and out-of-range entries,
// nodes no path reaches, a root with no references) with their dominators written out, and
// random graphs checked against the definition (d dominates v when v cannot be reached from
// the root once d is taken out), with a stop asked for on the way.
#include <check.h>
#include <stdlib.h>
#include <string.h>

#include "checkmain.h"
#include "dominators.h"

#define MAXN 64
#define N PYU_DOM_NONE

// A graph from an edge list (pairs, -1 terminated) over @n nodes, in compressed form.
struct graph {
	uint32_t n, start[MAXN + 1], adj[MAXN * MAXN];
};

static void make(struct graph *g, uint32_t n, const int *pairs)
{
	memset(g, 0, sizeof(*g));
	g->n = n;
	for (const int *p = pairs; p[0] >= 0; p += 2)
		g->start[p[0] + 1]++;
	for (uint32_t v = 0; v < n; v++)
		g->start[v + 1] += g->start[v];
	uint32_t fill[MAXN + 1];
	memcpy(fill, g->start, sizeof(fill));
	for (const int *p = pairs; p[0] >= 0; p += 2)
		g->adj[fill[p[0]]++] = p[1] == -2 ? N : (uint32_t)p[1];
}

// Each node's immediate dominator as a node (N: not reached; the root's is itself).
static void idoms(const struct graph *g, uint32_t *out)
{
	struct pyu_dom_tree t;
	ck_assert_ptr_null(pyu_dominators(g->n, g->start, g->adj, NULL, NULL, &t));
	for (uint32_t v = 0; v < g->n; v++)
		out[v] = N;
	ck_assert_uint_ge(t.reached, 1);
	ck_assert_uint_eq(t.node[0], 0);
	for (uint32_t k = 0; k < t.reached; k++) {
		ck_assert_uint_lt(t.idom[k], k ? k : 1); // a dominator comes first
		out[t.node[k]] = t.node[t.idom[k]];
	}
	pyu_dom_tree_clear(&t);
}

static void expect(uint32_t n, const int *pairs, const uint32_t *want)
{
	struct graph g;
	uint32_t got[MAXN];
	make(&g, n, pairs);
	idoms(&g, got);
	for (uint32_t v = 0; v < n; v++)
		ck_assert_msg(got[v] == want[v], "node %u: idom %u, want %u", v, got[v], want[v]);
}

START_TEST(test_hand_made)
{
	// a chain 0 -> 1 -> 2 -> 3
	expect(4, (const int[]){0, 1, 1, 2, 2, 3, -1}, (const uint32_t[]){0, 0, 1, 2});
	// a diamond: 0 -> 1, 2; 1, 2 -> 3; 3 -> 4
	expect(5, (const int[]){0, 1, 0, 2, 1, 3, 2, 3, 3, 4, -1},
	       (const uint32_t[]){0, 0, 0, 0, 3});
	// a cycle entered at 1: 0 -> 1 -> 2 -> 3 -> 1, and 3 -> 4
	expect(5, (const int[]){0, 1, 1, 2, 2, 3, 3, 1, 3, 4, -1},
	       (const uint32_t[]){0, 0, 1, 2, 3});
	// a cycle entered at two places: 0 -> 1, 0 -> 2, 1 <-> 2, 2 -> 3
	expect(4, (const int[]){0, 1, 0, 2, 1, 2, 2, 1, 2, 3, -1},
	       (const uint32_t[]){0, 0, 0, 2});
	// self references, repeats, an entry past the nodes and a PYU_DOM_NONE one
	expect(4, (const int[]){0, 0, 0, 1, 0, 1, 1, 1, 1, 2, 1, 9, 1, -2, 2, 2, 2, 3, 3, 3, -1},
	       (const uint32_t[]){0, 0, 1, 2});
	// nodes no path from the root reaches: 3 refers to 1, 4 and 3 to each other
	expect(5, (const int[]){0, 1, 1, 2, 3, 1, 3, 4, 4, 3, -1},
	       (const uint32_t[]){0, 0, 1, N, N});
	// a root with no references, and a graph of one node
	expect(3, (const int[]){1, 2, 2, 1, -1}, (const uint32_t[]){0, N, N});
	expect(1, (const int[]){-1}, (const uint32_t[]){0});
	// the root referred back to from inside: 0 -> 1 -> 2 -> 0, 2 -> 3, 1 -> 3
	expect(4, (const int[]){0, 1, 1, 2, 2, 0, 2, 3, 1, 3, -1},
	       (const uint32_t[]){0, 0, 1, 1});
	// a loop needing a second pass (an irreducible pair reached in the "wrong" order):
	// 0 -> 1, 0 -> 2, 1 -> 3, 2 -> 4, 3 -> 4, 4 -> 3, 3 -> 5, 4 -> 5
	expect(6, (const int[]){0, 1, 0, 2, 1, 3, 2, 4, 3, 4, 4, 3, 3, 5, 4, 5, -1},
	       (const uint32_t[]){0, 0, 0, 0, 0, 0});
}
END_TEST

static uint64_t next_rand(uint64_t *x)
{
	*x ^= *x << 13;
	*x ^= *x >> 7;
	*x ^= *x << 17;
	return *x;
}

// Nodes reached from the root with node @gone (N: none) taken out.
static void reach(const struct graph *g, uint32_t gone, bool *seen)
{
	uint32_t stack[MAXN], top = 0;
	memset(seen, 0, g->n * sizeof(*seen));
	if (gone == 0)
		return;
	seen[0] = true;
	stack[top++] = 0;
	while (top) {
		uint32_t v = stack[--top];
		for (uint32_t e = g->start[v]; e < g->start[v + 1]; e++) {
			uint32_t w = g->adj[e];
			if (w < g->n && w != gone && !seen[w]) {
				seen[w] = true;
				stack[top++] = w;
			}
		}
	}
}

START_TEST(test_random_against_definition)
{
	uint64_t x = 0x9e3779b97f4a7c15ull;
	for (int round = 0; round < 400; round++) {
		uint32_t n = 1 + (uint32_t)(next_rand(&x) % 40);
		uint32_t m = (uint32_t)(next_rand(&x) % (3 * n + 1));
		int pairs[2 * 3 * MAXN + 1];
		for (uint32_t i = 0; i < m; i++) {
			pairs[2 * i] = (int)(next_rand(&x) % n);
			pairs[2 * i + 1] = (int)(next_rand(&x) % n);
		}
		pairs[2 * m] = -1;
		struct graph g;
		make(&g, n, pairs);
		uint32_t got[MAXN];
		idoms(&g, got);
		bool all[MAXN], without[MAXN][MAXN];
		reach(&g, N, all);
		for (uint32_t d = 0; d < n; d++)
			reach(&g, d, without[d]);
		for (uint32_t v = 0; v < n; v++) {
			if (!all[v]) {
				ck_assert_uint_eq(got[v], N);
				continue;
			}
			if (v == 0) {
				ck_assert_uint_eq(got[v], 0);
				continue;
			}
			// The immediate dominator: a strict dominator of v that every other strict
			// dominator of v dominates.
			uint32_t i = got[v];
			ck_assert_uint_ne(i, N);
			ck_assert_msg(i != v && !without[i][v], "round %d: %u is no dominator of %u",
				      round, i, v);
			for (uint32_t d = 0; d < n; d++)
				if (d != v && all[d] && !without[d][v])
					ck_assert_msg(d == i || !without[d][i], "round %d: %u dominates "
						      "%u but not its idom %u", round, d, v, i);
		}
	}
}
END_TEST

static bool stop_now(void *arg)
{
	int *calls = arg;
	return ++*calls > 0;
}

START_TEST(test_stop)
{
	// A chain long enough to be asked within a pass: a stop leaves nothing.
	enum { LONG = 200000 };
	uint32_t *start = malloc((LONG + 1) * sizeof(*start));
	uint32_t *adj = malloc(LONG * sizeof(*adj));
	ck_assert_ptr_nonnull(start);
	ck_assert_ptr_nonnull(adj);
	for (uint32_t v = 0; v <= LONG; v++)
		start[v] = v < LONG ? v : LONG - 1;
	for (uint32_t v = 0; v + 1 < LONG; v++)
		adj[v] = v + 1;
	start[LONG] = LONG - 1;
	struct pyu_dom_tree t = {.reached = 7};
	int calls = 0;
	ck_assert_ptr_null(pyu_dominators(LONG, start, adj, stop_now, &calls, &t));
	ck_assert_int_ge(calls, 1);
	ck_assert_uint_eq(t.reached, 0);
	ck_assert_ptr_null(t.node);
	ck_assert_ptr_null(pyu_dominators(LONG, start, adj, NULL, NULL, &t));
	ck_assert_uint_eq(t.reached, LONG);
	for (uint32_t k = 1; k < LONG; k++)
		ck_assert_uint_eq(t.idom[k], k - 1);
	pyu_dom_tree_clear(&t);
	free(start);
	free(adj);
	// no graph
	struct pyu_error *err = pyu_dominators(0, NULL, NULL, NULL, NULL, &t);
	ck_assert_ptr_nonnull(err);
	pyu_error_destroy(err);
}
END_TEST

static Suite *dominators_suite(void)
{
	Suite *s = suite_create("dominators");
	TCase *tc = tcase_create("core");
	tcase_add_test(tc, test_hand_made);
	tcase_add_test(tc, test_random_against_definition);
	tcase_add_test(tc, test_stop);
	suite_add_tcase(s, tc);
	return s;
}

PYU_CHECK_MAIN(dominators_suite)
