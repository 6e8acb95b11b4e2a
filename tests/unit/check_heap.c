// check_heap.c - the heap census (heap.c, heap_size.c) on synthetic memory: the collector's
// rings of a 2.7 and a 3.12 interpreter laid out by their heap layouts, objects counted and
// sized per type, references followed to an untracked object counted once; and damaged rings
// - a prev that does not point back, a node that loops to itself, a link into nothing - each
// ending that walk with a counted error after the objects before it, never in a hang.
#include <check.h>

#include "checkmain.h"
#include "fakepy.h"
#include "heap.h"
#include "heap_graph.h"
#include "heap_layout.h"

#define HAVE_GC (1ull << 14)
#define NODES 6

struct zoo {
	struct fake_py p;
	struct pyu_stacks s;
	const struct pyu_heap_layout *hl;
	uint64_t gens;            // first generation head
	uint64_t nodes[NODES];    // PyGC_Head of each list object in generation 0
	uint64_t list_type, tuple_type, str;
};

// A ring head at @head holding @n nodes (or empty).
static void link_ring(struct zoo *z, uint64_t head, const uint64_t *nodes, int n)
{
	struct fakemem *m = &z->p.m;
	int32_t nx = z->hl->gc.next, pv = z->hl->gc.prev;
	for (int i = 0; i < n; i++) {
		fm_u64(m, nodes[i] + (uint64_t)nx, i + 1 < n ? nodes[i + 1] : head);
		fm_u64(m, nodes[i] + (uint64_t)pv, i ? nodes[i - 1] : head);
	}
	fm_u64(m, head + (uint64_t)nx, n ? nodes[0] : head);
	fm_u64(m, head + (uint64_t)pv, n ? nodes[n - 1] : head);
}

// NODES lists (each with 5 slots allocated; the last holds a 1-tuple of a str) in
// generation 0, the other generations empty.
static void make_zoo(struct zoo *z, uint32_t version)
{
	memset(z, 0, sizeof(*z));
	fp_init(&z->p, version);
	struct fakemem *m = &z->p.m;
	const struct pyu_layout *l = z->p.l;
	z->hl = pyu_heap_layout_for_version(version);
	ck_assert_ptr_nonnull(z->hl);
	const struct pyu_value_layout *vl = pyu_value_layout_for_version(version);
	if (z->hl->home == PYU_GC_GEN0_SYMBOL) {
		uint64_t gen0 = fm_alloc(m, 256);
		z->p.rt.gc_generation0_addr = fm_alloc(m, 8);
		fm_u64(m, z->p.rt.gc_generation0_addr, gen0);
		z->gens = gen0;
	} else {
		z->gens = z->p.interp + (uint64_t)z->hl->gc.state_in_interp +
			  (uint64_t)z->hl->gc.generations;
	}
	int64_t hs = z->hl->gc.head_size;
	z->list_type = fm_type_sized(m, "list", HAVE_GC, vl->list_item + 16, 0);
	z->tuple_type = fm_type_sized(m, "tuple", HAVE_GC, l->tuple_item, 8);
	z->str = fm_str(m, "leaf");
	fm_u64(m, z->str + (uint64_t)l->ob_type - 8, 1); // a live object: referenced
	uint64_t tuple = fm_alloc(m, (size_t)(hs + l->tuple_item + 8)) + (uint64_t)hs;
	fm_u64(m, tuple + (uint64_t)l->ob_type - 8, 1);
	fm_u64(m, tuple + (uint64_t)l->ob_type, z->tuple_type);
	fm_u64(m, tuple + (uint64_t)l->ob_size, 1);
	fm_u64(m, tuple + (uint64_t)l->tuple_item, z->str);
	uint64_t items = fm_alloc(m, 40);
	fm_u64(m, items, tuple);
	for (int i = 0; i < NODES; i++) {
		z->nodes[i] = fm_alloc(m, (size_t)(hs + vl->list_item + 16));
		uint64_t obj = z->nodes[i] + (uint64_t)hs;
		fm_u64(m, obj + (uint64_t)l->ob_type - 8, 1);
		fm_u64(m, obj + (uint64_t)l->ob_type, z->list_type);
		fm_u64(m, obj + (uint64_t)z->hl->size.list_allocated, 5);
		if (i == NODES - 1) {
			fm_u64(m, obj + (uint64_t)l->ob_size, 1);
			fm_u64(m, obj + (uint64_t)vl->list_item, items);
		}
	}
	link_ring(z, z->gens, z->nodes, NODES);
	for (int g = 1; g < z->hl->generation_count; g++)
		link_ring(z, z->gens + (uint64_t)g * (uint64_t)z->hl->gc.generation_size, NULL, 0);
	if (z->hl->gc.permanent >= 0)
		link_ring(z, z->gens - (uint64_t)z->hl->gc.generations + (uint64_t)z->hl->gc.permanent,
			  NULL, 0);
	z->s.target = m->t;
	z->s.runtime = &z->p.rt;
}

static const struct pyu_heap_type *row(const struct pyu_heap *h, const char *name)
{
	for (uint32_t i = 0; i < h->type_count; i++)
		if (!strcmp(h->types[i].name, name))
			return &h->types[i];
	return NULL;
}

static void check_census(uint32_t version)
{
	struct zoo z;
	make_zoo(&z, version);
	struct pyu_heap *h = NULL;
	ck_assert_ptr_null(pyu_heap_census(&z.s, 3, &h));
	ck_assert_uint_eq(h->error_count, 0);
	ck_assert_uint_eq(h->tracked, NODES);
	ck_assert_uint_eq(h->untracked, 2); // the tuple and the str, once each
	const struct pyu_heap_type *lists = row(h, "list");
	ck_assert_ptr_nonnull(lists);
	ck_assert_uint_eq(lists->count, NODES);
	ck_assert(lists->size.exact);
	uint64_t one = (uint64_t)lists->size.basicsize + 5 * 8 + (uint64_t)z.hl->gc.head_size;
	ck_assert_uint_eq(lists->bytes, NODES * one);
	ck_assert_ptr_nonnull(row(h, "tuple"));
	ck_assert_ptr_nonnull(row(h, "str"));
	ck_assert_uint_eq(row(h, "tuple")->count, 1);
	ck_assert(!h->partial);
	// the three largest, largest first
	ck_assert_uint_eq(h->biggest_count, 3);
	ck_assert_uint_ge(h->biggest[0].bytes, h->biggest[1].bytes);
	ck_assert_uint_ge(h->biggest[1].bytes, h->biggest[2].bytes);
	ck_assert_uint_eq(h->biggest[0].bytes, one);
	pyu_heap_destroy(h);
	fm_destroy(&z.p.m);
}

START_TEST(test_census_312)
{
	check_census(0x030c0000);
}
END_TEST

START_TEST(test_census_27)
{
	check_census(0x02070000);
}
END_TEST

static void expect_damage(struct zoo *z, uint64_t counted, const char *words)
{
	struct pyu_heap *h = NULL;
	ck_assert_ptr_null(pyu_heap_census(&z->s, 0, &h));
	ck_assert_uint_eq(h->tracked, counted);
	ck_assert_uint_ge(h->error_count, 1);
	ck_assert_msg(strstr(h->errors[0].message, words) != NULL, "error '%s' lacks '%s'",
		      h->errors[0].message, words);
	pyu_heap_destroy(h);
}

START_TEST(test_damaged_rings)
{
	struct zoo z;
	// node 3's prev points elsewhere: nodes 0-2 are counted
	make_zoo(&z, 0x030c0000);
	fm_u64(&z.p.m, z.nodes[3] + (uint64_t)z.hl->gc.prev, z.nodes[0]);
	expect_damage(&z, 3, "is broken at");
	fm_destroy(&z.p.m);
	// node 2 loops to itself: it is counted once, then its own prev does not match
	make_zoo(&z, 0x030c0000);
	fm_u64(&z.p.m, z.nodes[2] + (uint64_t)z.hl->gc.next, z.nodes[2]);
	expect_damage(&z, 3, "is broken at");
	fm_destroy(&z.p.m);
	// node 1's next points into nothing
	make_zoo(&z, 0x030c0000);
	fm_u64(&z.p.m, z.nodes[1] + (uint64_t)z.hl->gc.next, FM_BASE + FM_SIZE + 4096);
	expect_damage(&z, 2, "ends at unreadable");
	fm_destroy(&z.p.m);
	// a misaligned link
	make_zoo(&z, 0x030c0000);
	fm_u64(&z.p.m, z.nodes[0] + (uint64_t)z.hl->gc.next, z.nodes[1] + 4);
	expect_damage(&z, 1, "implausible link");
	fm_destroy(&z.p.m);
}
END_TEST

// The zoo's lists made into a graph: A -> B, C, F; B -> D; C -> D; D -> E; E -> D (a cycle).
enum { A, B, C, D, E, F };

static uint64_t obj_of(const struct zoo *z, int i)
{
	return z->nodes[i] + (uint64_t)z->hl->gc.head_size;
}

static void make_graph(struct zoo *z)
{
	static const int edges[NODES][3] = {{B, C, F}, {D, -1, -1}, {D, -1, -1}, {E, -1, -1},
					    {D, -1, -1}, {-1, -1, -1}};
	make_zoo(z, 0x030c0000);
	const struct pyu_value_layout *vl = pyu_value_layout_for_version(0x030c0000);
	for (int i = 0; i < NODES; i++) {
		uint64_t items = fm_alloc(&z->p.m, 40), n = 0;
		for (int k = 0; k < 3 && edges[i][k] >= 0; k++)
			fm_u64(&z->p.m, items + 8 * n++, obj_of(z, edges[i][k]));
		fm_u64(&z->p.m, obj_of(z, i) + (uint64_t)z->p.l->ob_size, n);
		fm_u64(&z->p.m, obj_of(z, i) + (uint64_t)vl->list_item, items);
	}
}

START_TEST(test_retained)
{
	struct zoo z;
	make_graph(&z);
	uint64_t root = obj_of(&z, A);
	struct pyu_heap_roots roots = {.addrs = &root, .count = 1};
	struct pyu_heap *h = NULL;
	struct pyu_heap_dominators *d = NULL;
	ck_assert_ptr_null(pyu_heap_dominators_compute(&z.s, &roots, NODES, 0, &h, &d));
	uint64_t one = h->bytes / NODES, got = 0;
	// Every chain to D passes through A only (B and C are two ways); E's through D.
	static const uint64_t want[NODES] = {6, 1, 1, 2, 1, 1};
	for (int i = 0; i < NODES; i++) {
		ck_assert(pyu_heap_retained(d, obj_of(&z, i), &got));
		ck_assert_uint_eq(got, want[i] * one);
	}
	ck_assert_uint_eq(pyu_heap_unreached(d), 0);
	int32_t set[1] = {0}; // every list
	pyu_heap_retained_by_sets(d, set, 1, &got);
	ck_assert_uint_eq(got, 6 * one);
	pyu_heap_dominators_destroy(d);
	pyu_heap_destroy(h);
	// From B alone: A, C and F are reached by no root and retain nothing.
	root = obj_of(&z, B);
	ck_assert_ptr_null(pyu_heap_dominators_compute(&z.s, &roots, NODES, 0, &h, &d));
	ck_assert(!pyu_heap_retained(d, obj_of(&z, A), &got));
	ck_assert(pyu_heap_retained(d, obj_of(&z, B), &got));
	ck_assert_uint_eq(got, 3 * one);
	ck_assert_uint_eq(pyu_heap_unreached(d), 3);
	pyu_heap_dominators_destroy(d);
	pyu_heap_destroy(h);
	fm_destroy(&z.p.m);
}
END_TEST

START_TEST(test_path)
{
	struct zoo z;
	make_graph(&z);
	uint64_t root = obj_of(&z, A);
	struct pyu_heap_roots roots = {.addrs = &root, .count = 1};
	struct pyu_heap *h = NULL;
	struct pyu_heap_path p;
	ck_assert_ptr_null(pyu_heap_path_find(&z.s, &roots, obj_of(&z, E), &h, &p));
	// Breadth first, A's items in order: A[0] is B, B[0] is D, D[0] is E.
	ck_assert_uint_eq(p.count, 4);
	ck_assert_uint_eq(p.root, 0);
	static const int chain[4] = {A, B, D, E};
	for (int k = 0; k < 4; k++)
		ck_assert_uint_eq(p.steps[k].addr, obj_of(&z, chain[k]));
	for (int k = 0; k < 3; k++) {
		ck_assert_uint_eq(p.steps[k].via, PYU_VIA_ITEM);
		ck_assert_uint_eq(p.steps[k].n, 0);
	}
	ck_assert(h->want_found);
	pyu_heap_path_clear(&p);
	pyu_heap_destroy(h);
	// Nothing reaches A from D.
	root = obj_of(&z, D);
	ck_assert_ptr_null(pyu_heap_path_find(&z.s, &roots, obj_of(&z, A), &h, &p));
	ck_assert_uint_eq(p.count, 0);
	pyu_heap_destroy(h);
	fm_destroy(&z.p.m);
}
END_TEST

static Suite *heap_suite(void)
{
	Suite *s = suite_create("heap");
	TCase *tc = tcase_create("census");
	tcase_add_test(tc, test_census_312);
	tcase_add_test(tc, test_census_27);
	tcase_add_test(tc, test_damaged_rings);
	tcase_add_test(tc, test_retained);
	tcase_add_test(tc, test_path);
	suite_add_tcase(s, tc);
	return s;
}

PYU_CHECK_MAIN(heap_suite)
