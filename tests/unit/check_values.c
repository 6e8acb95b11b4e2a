// check_values.c - the value reader (values.c) over hand-built object images in fake memory
// laid out by the 3.12 tables: exact reprs, and what corrupt counts, cycles, truncated memory
// and every bound turn into (inline forms, never a crash; also run under ASan/UBSan).
#include <string.h>

#include "checkmain.h"
#include "fakepy.h"
#include "value_layout.h"
#include "values.h"

struct vt {
	struct fake_py p;
	const struct pyu_value_layout *vl;
	uint64_t int_type, list_type, tuple_type, none_type, none;
	struct pyu_values *v;
};

static void vt_init(struct vt *x, const struct pyu_value_limits *lim)
{
	memset(x, 0, sizeof(*x));
	fp_init(&x->p, 0x030c0000);
	struct fakemem *m = &x->p.m;
	x->vl = pyu_value_layout_for_version(0x030c0000);
	x->int_type = fm_type(m, "int", PYU_TPFLAGS_LONG_SUBCLASS);
	x->list_type = fm_type(m, "list", 1ul << 25);
	x->tuple_type = fm_type(m, "tuple", 1ul << 26);
	x->none_type = fm_type(m, "NoneType", 0);
	x->none = fm_alloc(m, 16);
	fm_u64(m, x->none + (uint64_t)m->l->ob_type, x->none_type);
	ck_assert_ptr_null(pyu_values_create(m->t, &x->p.rt, lim, &x->v));
}

static void vt_destroy(struct vt *x)
{
	pyu_values_destroy(x->v);
	fm_destroy(&x->p.m);
}

// A 3.12 int (lv_tag) of at most one digit.
static uint64_t vt_int(struct vt *x, int32_t n)
{
	struct fakemem *m = &x->p.m;
	uint64_t o = fm_alloc(m, 32);
	uint32_t mag = (uint32_t)(n < 0 ? -n : n);
	fm_u64(m, o + (uint64_t)m->l->ob_type, x->int_type);
	fm_u64(m, o + (uint64_t)x->vl->int_.digits - 8,
	       (uint64_t)(n != 0) << 3 | (n < 0 ? 2u : n == 0 ? 1u : 0u));
	fm_u32(m, o + (uint64_t)x->vl->int_.digits, mag);
	return o;
}

static uint64_t vt_list(struct vt *x, const uint64_t *items, size_t n, int64_t claimed)
{
	struct fakemem *m = &x->p.m;
	uint64_t o = fm_alloc(m, 48), arr = fm_alloc(m, 8 * n + 8);
	fm_u64(m, o + (uint64_t)m->l->ob_type, x->list_type);
	fm_u64(m, o + (uint64_t)m->l->ob_size, (uint64_t)claimed);
	fm_u64(m, o + (uint64_t)x->vl->list_item, arr);
	for (size_t i = 0; i < n; i++)
		fm_u64(m, arr + 8 * i, items[i]);
	return o;
}

static char *vt_repr(struct vt *x, uint64_t addr, bool *cut)
{
	struct pyu_strbuf sb;
	char *s = NULL;
	pyu_strbuf_init(&sb, 1 << 20);
	pyu_value_repr(x->v, addr, &sb, cut);
	ck_assert_ptr_null(pyu_strbuf_finish(&sb, &s));
	return s;
}

START_TEST(test_exact_reprs)
{
	struct vt x;
	vt_init(&x, NULL);
	uint64_t items[4] = {vt_int(&x, 1), vt_int(&x, -7), x.none, fm_str(&x.p.m, "it's")};
	uint64_t l = vt_list(&x, items, 4, 4);
	bool cut = false;
	char *s = vt_repr(&x, l, &cut);
	ck_assert_str_eq(s, "[1, -7, None, \"it's\"]");
	ck_assert(!cut);
	free(s);
	char *tn = NULL;
	ck_assert_ptr_null(pyu_value_type_name(x.v, l, &tn));
	ck_assert_str_eq(tn, "list");
	free(tn);
	vt_destroy(&x);
}
END_TEST

START_TEST(test_cycle_and_shared)
{
	struct vt x;
	vt_init(&x, NULL);
	uint64_t one = vt_int(&x, 1);
	uint64_t inner = vt_list(&x, &one, 1, 1);
	uint64_t twice[2] = {inner, inner};
	uint64_t outer = vt_list(&x, twice, 2, 2);
	char *s = vt_repr(&x, outer, NULL);
	ck_assert_str_eq(s, "[[1], [1]]"); // met twice, not a cycle
	free(s);
	// A list that holds itself.
	uint64_t self = vt_list(&x, NULL, 0, 0);
	uint64_t arr = fm_alloc(&x.p.m, 16);
	fm_u64(&x.p.m, arr, one);
	fm_u64(&x.p.m, arr + 8, self);
	fm_u64(&x.p.m, self + (uint64_t)x.p.m.l->ob_size, 2);
	fm_u64(&x.p.m, self + (uint64_t)x.vl->list_item, arr);
	s = vt_repr(&x, self, NULL);
	ck_assert_str_eq(s, "[1, [...]]");
	free(s);
	vt_destroy(&x);
}
END_TEST

START_TEST(test_corrupt_counts)
{
	struct vt x;
	vt_init(&x, NULL);
	uint64_t one = vt_int(&x, 1);
	char want[128];
	// A negative size, and one far past any real list.
	uint64_t neg = vt_list(&x, &one, 1, -5);
	char *s = vt_repr(&x, neg, NULL);
	snprintf(want, sizeof(want), "<unreadable list at 0x%llx: size -5 out of range>",
		 (unsigned long long)neg);
	ck_assert_str_eq(s, want);
	free(s);
	// A huge claimed size over a short array: only the items bound is read; the
	// unreadable tail ends the list inline.
	uint64_t big = vt_list(&x, &one, 1, 1ll << 39);
	fm_u64(&x.p.m, big + (uint64_t)x.vl->list_item, FM_BASE + FM_SIZE - 8);
	bool cut = false;
	s = vt_repr(&x, big, &cut);
	ck_assert_msg(strstr(s, "<unreadable item at 0x") != NULL, "%s", s);
	ck_assert(cut);
	free(s);
	// An int whose tag claims 2**40 digits: the short form needs the top digit, which is
	// unreadable.
	uint64_t huge = vt_int(&x, 5);
	fm_u64(&x.p.m, huge + (uint64_t)x.vl->int_.digits - 8, (1ull << 40) << 3);
	s = vt_repr(&x, huge, NULL);
	ck_assert_msg(strncmp(s, "<unreadable int at 0x", 21) == 0, "%s", s);
	free(s);
	// Garbage where an object should be: a misaligned pointer, NULL, a wild type.
	uint64_t bad[3] = {one + 3, 0, fm_alloc(&x.p.m, 16)};
	fm_u64(&x.p.m, bad[2] + 8, 0xdead0000);
	uint64_t l = vt_list(&x, bad, 3, 3);
	s = vt_repr(&x, l, NULL);
	ck_assert_msg(strstr(s, "misaligned") && strstr(s, "NULL") && strstr(s, "0xdead0000"),
		      "%s", s);
	free(s);
	vt_destroy(&x);
}
END_TEST

START_TEST(test_bounds)
{
	struct pyu_value_limits lim;
	pyu_value_limits_default(&lim);
	lim.items = 3;
	lim.chars = 4;
	lim.depth = 2;
	lim.output = 40;
	struct vt x;
	vt_init(&x, &lim);
	uint64_t items[10];
	for (int i = 0; i < 10; i++)
		items[i] = vt_int(&x, i);
	bool cut = false;
	char *s = vt_repr(&x, vt_list(&x, items, 10, 10), &cut);
	ck_assert_str_eq(s, "[0, 1, 2, ...]");
	ck_assert(cut);
	free(s);
	cut = false;
	s = vt_repr(&x, fm_str(&x.p.m, "abcdefgh"), &cut);
	ck_assert_str_eq(s, "'abcd'...");
	ck_assert(cut);
	free(s);
	// Depth: the third list down is not entered.
	uint64_t l3 = vt_list(&x, items, 1, 1), l2 = vt_list(&x, &l3, 1, 1);
	uint64_t l1 = vt_list(&x, &l2, 1, 1);
	s = vt_repr(&x, l1, NULL);
	char want[128];
	snprintf(want, sizeof(want), "[[<list at 0x%llx: depth limit>]]", (unsigned long long)l3);
	ck_assert_str_eq(s, want);
	free(s);
	// Output: cut at the bound and marked.
	uint64_t strs[3];
	for (int i = 0; i < 3; i++)
		strs[i] = fm_str(&x.p.m, "0123456789012345678901234567890123456789");
	pyu_values_destroy(x.v);
	lim.chars = 1000;
	ck_assert_ptr_null(pyu_values_create(x.p.m.t, &x.p.rt, &lim, &x.v));
	cut = false;
	s = vt_repr(&x, vt_list(&x, strs, 3, 3), &cut);
	ck_assert_uint_eq(strlen(s), 43);
	ck_assert_str_eq(s + 40, "...");
	ck_assert(cut);
	free(s);
	vt_destroy(&x);
}
END_TEST

START_TEST(test_read_budget)
{
	struct pyu_value_limits lim;
	pyu_value_limits_default(&lim);
	lim.read_budget = 600;
	struct vt x;
	vt_init(&x, &lim);
	uint64_t items[20];
	for (int i = 0; i < 20; i++)
		items[i] = vt_int(&x, i);
	uint64_t l = vt_list(&x, items, 20, 20);
	char *s = vt_repr(&x, l, NULL);
	ck_assert_msg(strstr(s, "read budget") != NULL, "%s", s);
	free(s);
	// Spent for the context's life: the next value says so too.
	s = vt_repr(&x, items[0], NULL);
	ck_assert_msg(strstr(s, "read budget") != NULL, "%s", s);
	free(s);
	vt_destroy(&x);
}
END_TEST

START_TEST(test_truncated_memory)
{
	struct vt x;
	vt_init(&x, NULL);
	uint64_t one = vt_int(&x, 1);
	uint64_t l = vt_list(&x, &one, 1, 1);
	x.p.m.limit = l + 20; // the list's item pointer is gone
	pyu_target_flush_cache(x.p.m.t);
	char *s = vt_repr(&x, l, NULL);
	char want[64];
	snprintf(want, sizeof(want), "<unreadable list at 0x%llx: ", (unsigned long long)l);
	ck_assert_msg(strncmp(s, want, strlen(want)) == 0, "%s", s);
	free(s);
	vt_destroy(&x);
}
END_TEST

static Suite *values_suite(void)
{
	Suite *s = suite_create("values");
	TCase *tc = tcase_create("values");
	tcase_add_test(tc, test_exact_reprs);
	tcase_add_test(tc, test_cycle_and_shared);
	tcase_add_test(tc, test_corrupt_counts);
	tcase_add_test(tc, test_bounds);
	tcase_add_test(tc, test_read_budget);
	tcase_add_test(tc, test_truncated_memory);
	suite_add_tcase(s, tc);
	return s;
}

PYU_CHECK_MAIN(values_suite)
