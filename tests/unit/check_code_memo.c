// check_code_memo.c - the code-object memo kept between snapshots: what it gives again, and
// that its table grows from a small one (a fresh handle's first snapshot) without losing any.
#include <stdlib.h>
#include <string.h>

#include "checkmain.h"
#include "bytes.h"
#include "code_memo.h"
#include "layout.h"

// A header of layout @l for the code object "f<n>" with co_version @version.
static void make_header(const struct pyu_layout *l, uint8_t *hdr, uint32_t version, uint64_t n)
{
	memset(hdr, 0, (size_t)l->code.size);
	memcpy(hdr + l->code.version, &version, 4);
	memcpy(hdr + l->code.name, &n, 8);
}

static struct pyu_code_info info(uint64_t n)
{
	static char name[32];
	snprintf(name, sizeof(name), "f%llu", (unsigned long long)n);
	return (struct pyu_code_info){.address = n, .name = name, .firstlineno = (int32_t)n};
}

// A memo for 3.12's layout given code objects "f1" .. "f<n>" (co_version 1 .. n) at
// 0x10000 + 0x40 * k in one snapshot, and a new snapshot begun; @hdr gets a header buffer.
static struct pyu_code_memo *memo_of(const struct pyu_layout **l, uint8_t **hdr, uint64_t n)
{
	*l = pyu_layout_for_version(0x030C00F0);
	ck_assert_ptr_nonnull(*l);
	struct pyu_code_memo *m = pyu_code_memo_create(*l);
	ck_assert_ptr_nonnull(m);
	*hdr = malloc((size_t)(*l)->code.size);
	ck_assert_ptr_nonnull(*hdr);
	pyu_code_memo_begin(m);
	for (uint64_t k = 1; k <= n; k++) {
		struct pyu_code_info ci = info(k);
		make_header(*l, *hdr, (uint32_t)k, k);
		pyu_code_memo_put(m, 0x10000 + 0x40 * k, *hdr, &ci, 0);
	}
	pyu_code_memo_begin(m);
	return m;
}

// That the memo gives "f<n>" again for its address and unchanged header.
static void expect_given(struct pyu_code_memo *m, const struct pyu_layout *l, uint8_t *hdr,
			 uint64_t n)
{
	struct pyu_code_info got;
	int32_t ft = -1;
	char want[32];
	make_header(l, hdr, (uint32_t)n, n);
	ck_assert_msg(pyu_code_memo_get(m, 0x10000 + 0x40 * n, hdr, &got, &ft),
		      "entry %llu lost", (unsigned long long)n);
	snprintf(want, sizeof(want), "f%llu", (unsigned long long)n);
	ck_assert_str_eq(got.name, want);
	ck_assert_int_eq(got.firstlineno, (int32_t)n);
	ck_assert_int_eq(ft, 0);
	free(got.name);
}

START_TEST(test_grows_and_gives_again)
{
	const struct pyu_layout *l;
	uint8_t *hdr;
	enum { N = 3000 }; // past the first table's size many times, under MEMO_ENTRIES
	struct pyu_code_memo *m = memo_of(&l, &hdr, N);
	struct pyu_code_info got;
	int32_t ft;
	for (uint64_t n = 1; n <= N; n++) {
		expect_given(m, l, hdr, n);
		// another co_version at the same address: a new code object, not given
		make_header(l, hdr, (uint32_t)n + 1, n);
		ck_assert(!pyu_code_memo_get(m, 0x10000 + 0x40 * n, hdr, &got, &ft));
	}
	// never kept: version 0
	struct pyu_code_info ci = info(7);
	make_header(l, hdr, 0, 7);
	pyu_code_memo_put(m, 0x8, hdr, &ci, 0);
	ck_assert(!pyu_code_memo_get(m, 0x8, hdr, &got, &ft));
	free(hdr);
	pyu_code_memo_destroy(m);
}
END_TEST

// Past MEMO_ENTRIES the memo starts again, empty, in the table it grew to: the first entries
// are gone, the later ones are given again.
START_TEST(test_starts_again_past_its_bound)
{
	const struct pyu_layout *l;
	uint8_t *hdr;
	enum { N = 5000 }; // more than it keeps
	struct pyu_code_memo *m = memo_of(&l, &hdr, N);
	struct pyu_code_info got;
	int32_t ft = -1;
	make_header(l, hdr, 1, 1);
	ck_assert(!pyu_code_memo_get(m, 0x10000 + 0x40, hdr, &got, &ft));
	for (uint64_t n = N - 100; n <= N; n++)
		expect_given(m, l, hdr, n);
	free(hdr);
	pyu_code_memo_destroy(m);
}
END_TEST

static Suite *code_memo_suite(void)
{
	Suite *s = suite_create("code_memo");
	TCase *tc = tcase_create("code_memo");
	tcase_add_test(tc, test_grows_and_gives_again);
	tcase_add_test(tc, test_starts_again_past_its_bound);
	suite_add_tcase(s, tc);
	return s;
}

PYU_CHECK_MAIN(code_memo_suite)
