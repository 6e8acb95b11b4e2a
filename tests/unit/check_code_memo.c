// check_code_memo.c - the code-object memo of a live target (code_memo.c): its table starts
// small and grows, and every entry kept is given again, through each growth, only under the
// same header; past its bound it starts again, empty.
#include <stdio.h>
#include <string.h>

#include "checkmain.h"
#include "code_memo.h"
#include "layout.h"

// A header of the 3.12 layout for a code object numbered @n (its co_version, never 0).
static void header(const struct pyu_layout *l, uint8_t *hdr, uint32_t n)
{
	memset(hdr, 0, (size_t)l->code.size);
	memcpy(hdr + l->code.version, &n, 4);
	int32_t first = (int32_t)n * 10;
	memcpy(hdr + l->code.firstlineno, &first, 4);
}

static void info(struct pyu_code_info *ci, char *name, uint32_t n)
{
	snprintf(name, 32, "f%u", n);
	memset(ci, 0, sizeof(*ci));
	ci->name = name;
	ci->filename = "m.py";
	ci->firstlineno = (int32_t)n * 10;
}

static uint64_t addr_of(uint32_t n)
{
	return 0x7f0000000000ull + (uint64_t)n * 0x40;
}

START_TEST(test_grows_and_keeps_every_entry)
{
	const struct pyu_layout *l = pyu_layout_for_version(0x030c01f0);
	ck_assert_ptr_nonnull(l);
	struct pyu_code_memo *m = pyu_code_memo_create(l);
	ck_assert_ptr_nonnull(m);
	uint8_t hdr[1024];
	ck_assert_int_le(l->code.size, (int)sizeof(hdr));
	char name[32];
	struct pyu_code_info ci;
	const uint32_t count = 3000; // past several doublings, under the bound
	pyu_code_memo_begin(m);
	for (uint32_t n = 1; n <= count; n++) {
		header(l, hdr, n);
		info(&ci, name, n);
		pyu_code_memo_put(m, addr_of(n), hdr, &ci, 0);
	}
	pyu_code_memo_begin(m);
	for (uint32_t n = 1; n <= count; n++) {
		header(l, hdr, n);
		struct pyu_code_info got;
		int32_t ft = -1;
		ck_assert_msg(pyu_code_memo_get(m, addr_of(n), hdr, &got, &ft), "entry %u lost", n);
		snprintf(name, sizeof(name), "f%u", n);
		ck_assert_str_eq(got.name, name);
		ck_assert_int_eq(got.firstlineno, (int32_t)n * 10);
		ck_assert_int_eq(ft, 0);
		free(got.name);
		free(got.qualname);
		free(got.filename);
		free(got.table);
	}
	// Another code object at a kept one's address (a new co_version): not given again.
	header(l, hdr, count + 1);
	struct pyu_code_info got;
	int32_t ft;
	ck_assert(!pyu_code_memo_get(m, addr_of(7), hdr, &got, &ft));
	pyu_code_memo_destroy(m);
}
END_TEST

START_TEST(test_starts_again_past_its_bound)
{
	const struct pyu_layout *l = pyu_layout_for_version(0x030c01f0);
	struct pyu_code_memo *m = pyu_code_memo_create(l);
	ck_assert_ptr_nonnull(m);
	uint8_t hdr[1024];
	char name[32];
	struct pyu_code_info ci;
	const uint32_t count = 5000; // more than it keeps
	for (uint32_t n = 1; n <= count; n++) {
		header(l, hdr, n);
		info(&ci, name, n);
		pyu_code_memo_put(m, addr_of(n), hdr, &ci, 0);
	}
	// The first ones went when it started again; the last one is there.
	struct pyu_code_info got;
	int32_t ft;
	header(l, hdr, 1);
	ck_assert(!pyu_code_memo_get(m, addr_of(1), hdr, &got, &ft));
	header(l, hdr, count);
	ck_assert(pyu_code_memo_get(m, addr_of(count), hdr, &got, &ft));
	ck_assert_int_eq(got.firstlineno, (int32_t)count * 10);
	free(got.name);
	free(got.filename);
	pyu_code_memo_destroy(m);
}
END_TEST

static Suite *code_memo_suite(void)
{
	Suite *s = suite_create("code_memo");
	TCase *tc = tcase_create("core");
	tcase_add_test(tc, test_grows_and_keeps_every_entry);
	tcase_add_test(tc, test_starts_again_past_its_bound);
	suite_add_tcase(s, tc);
	return s;
}

PYU_CHECK_MAIN(code_memo_suite)
