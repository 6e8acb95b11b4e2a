// check_tasks.c - the asyncio reader's list walker (tasks.c) on synthetic memory: a 3.14+ task
// list read in order, and damaged ones - a loop that never comes back to the head, a NULL
// link, an unreadable link, a list longer than the bound - each ending in an error after the
// nodes before it, never in a hang.
#include <check.h>

#include "checkmain.h"
#include "fakemem.h"
#include "tasks.h"

#define NODES 8

struct seen {
	uint64_t nodes[64];
	uint32_t n;
	uint32_t stop_after;
};

static bool visit(void *arg, uint64_t node)
{
	struct seen *s = arg;
	if (s->n < 64)
		s->nodes[s->n] = node;
	s->n++;
	return !s->stop_after || s->n < s->stop_after;
}

// A head and NODES nodes {next, prev}, linked in a circle through the head.
static uint64_t make_list(struct fakemem *m, uint64_t *nodes)
{
	uint64_t head = fm_alloc(m, 16);
	for (int i = 0; i < NODES; i++)
		nodes[i] = fm_alloc(m, 64) + 16; // inside a bigger object, as task_node is
	for (int i = 0; i < NODES; i++) {
		fm_u64(m, nodes[i], i + 1 < NODES ? nodes[i + 1] : head);
		fm_u64(m, nodes[i] + 8, i ? nodes[i - 1] : head);
	}
	fm_u64(m, head, nodes[0]);
	fm_u64(m, head + 8, nodes[NODES - 1]);
	return head;
}

static void check_prefix(const struct seen *s, const uint64_t *nodes, uint32_t n)
{
	ck_assert_uint_eq(s->n, n);
	for (uint32_t i = 0; i < n; i++)
		ck_assert_uint_eq(s->nodes[i], nodes[i]);
}

START_TEST(test_list_in_order)
{
	struct fakemem m;
	uint64_t nodes[NODES];
	fm_init(&m, &pyu_layout_py314);
	uint64_t head = make_list(&m, nodes);
	struct seen s = {0};
	ck_assert_ptr_null(pyu_llist_foreach(m.t, head, 100, visit, &s));
	check_prefix(&s, nodes, NODES);
	// an empty list: the head points at itself
	uint64_t empty = fm_alloc(&m, 16);
	fm_u64(&m, empty, empty);
	fm_u64(&m, empty + 8, empty);
	struct seen e = {0};
	ck_assert_ptr_null(pyu_llist_foreach(m.t, empty, 100, visit, &e));
	ck_assert_uint_eq(e.n, 0);
	// the visitor may stop early
	struct seen early = {.stop_after = 3};
	ck_assert_ptr_null(pyu_llist_foreach(m.t, head, 100, visit, &early));
	check_prefix(&early, nodes, 3);
	fm_destroy(&m);
}
END_TEST

static void expect_error(struct pyu_error *err, int32_t code, const char *text)
{
	ck_assert_ptr_nonnull(err);
	ck_assert_int_eq(pyu_error_code(err), code);
	ck_assert_msg(strstr(pyu_error_message(err), text), "message: %s", pyu_error_message(err));
	pyu_error_destroy(err);
}

START_TEST(test_damaged_lists)
{
	struct fakemem m;
	uint64_t nodes[NODES];
	fm_init(&m, &pyu_layout_py314);
	uint64_t head = make_list(&m, nodes);
	// a loop that does not pass the head again: node 5 -> node 2
	fm_u64(&m, nodes[5], nodes[2]);
	struct seen s = {0};
	expect_error(pyu_llist_foreach(m.t, head, 100000, visit, &s), PYU_ERR_CORRUPT, "loops");
	ck_assert_uint_ge(s.n, 6);
	ck_assert_uint_le(s.n, 64); // found within a few laps, not after the bound
	// a node pointing at itself
	head = make_list(&m, nodes);
	fm_u64(&m, nodes[3], nodes[3]);
	struct seen self = {0};
	expect_error(pyu_llist_foreach(m.t, head, 100000, visit, &self), PYU_ERR_CORRUPT, "loops");
	ck_assert_uint_le(self.n, 8);
	// a NULL link
	head = make_list(&m, nodes);
	fm_u64(&m, nodes[4], 0);
	struct seen null = {0};
	expect_error(pyu_llist_foreach(m.t, head, 100, visit, &null), PYU_ERR_CORRUPT, "NULL");
	check_prefix(&null, nodes, 5);
	// a link into unreadable memory
	head = make_list(&m, nodes);
	fm_u64(&m, nodes[6], FM_BASE + FM_SIZE + 4096);
	struct seen fault = {0};
	expect_error(pyu_llist_foreach(m.t, head, 100, visit, &fault), PYU_ERR_FAULT, "list at");
	ck_assert_uint_eq(fault.n, 8); // the bad node is visited (its reader fails on it), then
	ck_assert_uint_eq(fault.nodes[7], FM_BASE + FM_SIZE + 4096); // its link cannot be read
	// longer than the bound
	head = make_list(&m, nodes);
	struct seen bounded = {0};
	expect_error(pyu_llist_foreach(m.t, head, 4, visit, &bounded), PYU_ERR_CORRUPT,
		     "longer than 4");
	check_prefix(&bounded, nodes, 4);
	// an unreadable head
	struct seen none = {0};
	expect_error(pyu_llist_foreach(m.t, 8, 100, visit, &none), PYU_ERR_FAULT, "list at");
	ck_assert_uint_eq(none.n, 0);
	fm_destroy(&m);
}
END_TEST

static Suite *tasks_suite(void)
{
	Suite *s = suite_create("tasks");
	TCase *tc = tcase_create("lists");
	tcase_add_test(tc, test_list_in_order);
	tcase_add_test(tc, test_damaged_lists);
	suite_add_tcase(s, tc);
	return s;
}

PYU_CHECK_MAIN(tasks_suite)
