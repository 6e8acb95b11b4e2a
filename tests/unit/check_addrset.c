// check_addrset.c - the census's set of addresses (addrset.c): members found and only they,
// each added once, across many chunks, sparse and dense, far apart in the address space, and
// emptied by a clear; its numbering of members (ranks): one number in [0, count) each, all
// different, none for a non-member.
#include <check.h>
#include <stdint.h>
#include <stdlib.h>

#include "addrset.h"
#include "checkmain.h"

static uint64_t next_rand(uint64_t *x)
{
	*x ^= *x << 13;
	*x ^= *x >> 7;
	*x ^= *x << 17;
	return *x;
}

START_TEST(test_dense_and_sparse)
{
	struct pyu_addrset s = {0};
	// dense: every 16 bytes of 4 MiB (64 chunks), then every 8 bytes of one chunk
	for (uint64_t a = 0x7f0000000000; a < 0x7f0000400000; a += 16)
		ck_assert_int_eq(pyu_addrset_add(&s, a), 1);
	for (uint64_t a = 0x7f0000000000; a < 0x7f0000400000; a += 8)
		ck_assert(pyu_addrset_has(&s, a) == ((a & 15) == 0));
	for (uint64_t a = 0x7f0000000000; a < 0x7f0000400000; a += 16)
		ck_assert_int_eq(pyu_addrset_add(&s, a), 0);
	ck_assert_uint_eq(s.count, 0x400000 / 16);
	// sparse: random addresses over the whole 47-bit space, some repeated
	uint64_t x = 88172645463325252ull, added = 0;
	for (int i = 0; i < 200000; i++) {
		uint64_t a = (next_rand(&x) & 0x7ffffffffff8ull) | 0x800000000000ull;
		int r = pyu_addrset_add(&s, a);
		ck_assert_int_ge(r, 0);
		added += (uint64_t)r;
		ck_assert(pyu_addrset_has(&s, a));
		ck_assert(!pyu_addrset_has(&s, a ^ 0x10000000000ull) ||
			  pyu_addrset_add(&s, a ^ 0x10000000000ull) == 0);
	}
	ck_assert_uint_eq(s.count, 0x400000 / 16 + added);
	ck_assert(!pyu_addrset_has(&s, 0x1000));
	ck_assert_uint_gt(pyu_addrset_bytes(&s), 0);
	pyu_addrset_clear(&s);
	ck_assert(!pyu_addrset_has(&s, 0x7f0000000000));
	ck_assert_uint_eq(s.count, 0);
	ck_assert_int_eq(pyu_addrset_add(&s, 0x7f0000000000), 1);
	pyu_addrset_clear(&s);
}
END_TEST

START_TEST(test_rank)
{
	struct pyu_addrset s = {0};
	struct pyu_addrset_rank r;
	// empty
	ck_assert_int_eq(pyu_addrset_rank_build(&s, &r), 0);
	ck_assert_int_eq(pyu_addrset_rank(&s, &r, 0x1000), -1);
	pyu_addrset_rank_clear(&r);
	// every 24 bytes over 3 chunks (words full and partly full), and scattered members
	enum { MEMBERS = 30000 };
	static uint64_t addrs[MEMBERS];
	uint64_t x = 88172645463325252ull;
	uint32_t n = 0;
	for (uint64_t a = 0x7f0000000000; a < 0x7f0000030000; a += 24)
		addrs[n++] = a;
	while (n < MEMBERS)
		addrs[n++] = (next_rand(&x) & 0x3ffffffff8ull) | 0x550000000000ull;
	for (uint32_t i = 0; i < MEMBERS; i++)
		ck_assert_int_ge(pyu_addrset_add(&s, addrs[i]), 0);
	ck_assert_int_eq(pyu_addrset_rank_build(&s, &r), 0);
	uint8_t *used = calloc(s.count, 1);
	ck_assert_ptr_nonnull(used);
	uint64_t distinct = 0;
	for (uint32_t i = 0; i < MEMBERS; i++) {
		int64_t k = pyu_addrset_rank(&s, &r, addrs[i]);
		ck_assert_int_ge(k, 0);
		ck_assert_int_lt(k, (int64_t)s.count);
		distinct += !used[k]; // a member added twice has one number
		used[k] = 1;
		ck_assert_int_eq(pyu_addrset_rank(&s, &r, addrs[i] + 8) >= 0,
				 pyu_addrset_has(&s, addrs[i] + 8));
	}
	ck_assert_uint_eq(distinct, s.count);
	ck_assert_int_eq(pyu_addrset_rank(&s, &r, 0x7f0000000008), -1);
	ck_assert_int_eq(pyu_addrset_rank(&s, &r, 0x100000), -1);
	free(used);
	pyu_addrset_rank_clear(&r);
	pyu_addrset_clear(&s);
}
END_TEST

static Suite *addrset_suite(void)
{
	Suite *s = suite_create("addrset");
	TCase *tc = tcase_create("addrset");
	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, test_dense_and_sparse);
	tcase_add_test(tc, test_rank);
	suite_add_tcase(s, tc);
	return s;
}

PYU_CHECK_MAIN(addrset_suite)
