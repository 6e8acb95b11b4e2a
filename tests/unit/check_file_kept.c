// check_file_kept.c - values kept by a file's identity (file_kept.c), as the interpreter's
// facts (runtime.c) and a non-PIE executable's map lines (target_proc.c) use them.
#include <string.h>

#include "checkmain.h"
#include "file_kept.h"
#include "threads.h"

struct value {
	size_t len;
	char text[32];
};

static struct pyu_file_id id_of(uint64_t ino)
{
	return (struct pyu_file_id){.dev = 8, .ino = ino, .size = 4096, .mtime_ns = 1, .ctime_ns = 2};
}

START_TEST(test_hit_miss_identity)
{
	PYU_KEPT_TABLE(t, 2, struct value);
	struct pyu_file_id a = id_of(1);
	struct value v = {5, "hello"}, got = {0};
	ck_assert(!pyu_kept_get(&t, &a, &got));
	pyu_kept_put(&t, &a, &v, sizeof(v));
	ck_assert(pyu_kept_get(&t, &a, &got));
	ck_assert_uint_eq(got.len, 5);
	ck_assert_str_eq(got.text, "hello");
	// Each part of the identity tells a file rewritten in place from the one kept.
	struct pyu_file_id other[] = {a, a, a, a, a};
	other[0].dev++;
	other[1].ino++;
	other[2].size++;
	other[3].mtime_ns++;
	other[4].ctime_ns++;
	for (size_t i = 0; i < 5; i++)
		ck_assert_msg(!pyu_kept_get(&t, &other[i], &got), "identity change %zu", i);
	// Kept again under the same identity: replaced in place, not a second slot.
	struct value w = {3, "abc"};
	pyu_kept_put(&t, &a, &w, sizeof(w));
	ck_assert(pyu_kept_get(&t, &a, &got));
	ck_assert_str_eq(got.text, "abc");
	ck_assert_uint_eq(t.slots[0].used + t.slots[1].used, 1);
}
END_TEST

START_TEST(test_least_recent_replaced)
{
	PYU_KEPT_TABLE(t, 3, struct value);
	struct value v = {0};
	struct pyu_file_id ids[4] = {id_of(1), id_of(2), id_of(3), id_of(4)};
	for (size_t i = 0; i < 3; i++) {
		v.len = i;
		pyu_kept_put(&t, &ids[i], &v, sizeof(v));
	}
	struct value got;
	ck_assert(pyu_kept_get(&t, &ids[0], &got)); // 1 used last: 2 is the least recent
	v.len = 3;
	pyu_kept_put(&t, &ids[3], &v, sizeof(v));
	ck_assert(!pyu_kept_get(&t, &ids[1], &got));
	ck_assert(pyu_kept_get(&t, &ids[0], &got) && got.len == 0);
	ck_assert(pyu_kept_get(&t, &ids[2], &got) && got.len == 2);
	ck_assert(pyu_kept_get(&t, &ids[3], &got) && got.len == 3);
}
END_TEST

// A value's first bytes alone are kept (a length and that much text); a longer length than
// the table's value is cut to it.
START_TEST(test_partial_value)
{
	PYU_KEPT_TABLE(t, 1, struct value);
	struct pyu_file_id a = id_of(1);
	struct value v = {2, "hi"};
	pyu_kept_put(&t, &a, &v, offsetof(struct value, text) + v.len);
	struct value got;
	memset(&got, 'x', sizeof(got));
	ck_assert(pyu_kept_get(&t, &a, &got));
	ck_assert_uint_eq(got.len, 2);
	ck_assert(memcmp(got.text, "hi", 2) == 0);
	unsigned char big[2 * sizeof(struct value)];
	memset(big, 7, sizeof(big));
	pyu_kept_put(&t, &a, big, sizeof(big));
	ck_assert(pyu_kept_get(&t, &a, &got));
	ck_assert(memcmp(&got, big, sizeof(got)) == 0);
}
END_TEST

// Several threads keep and look up values of more files than are kept: each value found is
// the one kept for its file.
PYU_KEPT_TABLE(shared, 4, struct value);
static void *churn(void *arg)
{
	uintptr_t seed = (uintptr_t)arg, wrong = 0;
	for (unsigned i = 0; i < 20000; i++) {
		uint64_t ino = (i * 7 + seed) % 9;
		struct pyu_file_id id = id_of(ino);
		struct value v;
		if (pyu_kept_get(&shared, &id, &v)) {
			if (v.len != ino)
				wrong++;
		} else {
			v = (struct value){.len = ino};
			pyu_kept_put(&shared, &id, &v, sizeof(v));
		}
	}
	return (void *)wrong;
}

START_TEST(test_concurrent)
{
	ck_assert_uint_eq(run_threads(churn, 4), 0);
}
END_TEST

static Suite *file_kept_suite(void)
{
	Suite *s = suite_create("file_kept");
	TCase *tc = tcase_create("file_kept");
	tcase_add_test(tc, test_hit_miss_identity);
	tcase_add_test(tc, test_least_recent_replaced);
	tcase_add_test(tc, test_partial_value);
	tcase_add_test(tc, test_concurrent);
	suite_add_tcase(s, tc);
	return s;
}

PYU_CHECK_MAIN(file_kept_suite)
