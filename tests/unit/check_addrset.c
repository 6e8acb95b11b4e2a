// check_addrset.c - the census's set of addresses (addrset.c): members found and only they,
// each added once, across many chunks, sparse and dense, far apart in the address space, and
// emptied by a clear.
#include <check.h>
#include <stdint.h>

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

static Suite *addrset_suite(void)
{
	Suite *s = suite_create("addrset");
	TCase *tc = tcase_create("addrset");
	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, test_dense_and_sparse);
	suite_add_tcase(s, tc);
	return s;
}

PYU_CHECK_MAIN(addrset_suite)
