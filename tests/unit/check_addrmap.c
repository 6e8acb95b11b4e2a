// check_addrmap.c - the map of non-zero keys to values (addrmap.c) the heap census, its set of
// addresses and its graphs share: each key's value found and only the keys added, a key added
// twice keeping its first value, key 0 refused, and the map emptied by a clear.
#include <check.h>
#include <stdint.h>

#include "addrmap.h"
#include "checkmain.h"

static uint64_t next_rand(uint64_t *x)
{
	*x ^= *x << 13;
	*x ^= *x >> 7;
	*x ^= *x << 17;
	return *x;
}

START_TEST(test_values_found)
{
	struct pyu_addrmap m = {0};
	ck_assert_int_eq(pyu_addrmap_get(&m, 0x1000), -1);
	// aligned addresses close together (the census's objects) and far apart, through growth
	for (uint32_t i = 0; i < 100000; i++)
		ck_assert_int_eq(pyu_addrmap_add(&m, 0x7f0000000000ull + 16ull * i, i), 1);
	uint64_t x = 88172645463325252ull;
	for (uint32_t i = 0; i < 50000; i++) {
		uint64_t k = (next_rand(&x) & 0x7ffffffffff8ull) | 0x800000000000ull;
		int r = pyu_addrmap_add(&m, k, 100000 + i);
		ck_assert_int_ge(r, 0);
		ck_assert_int_ge(pyu_addrmap_get(&m, k), 0);
	}
	for (uint32_t i = 0; i < 100000; i++) {
		ck_assert_int_eq(pyu_addrmap_get(&m, 0x7f0000000000ull + 16ull * i), i);
		ck_assert_int_eq(pyu_addrmap_get(&m, 0x7f0000000000ull + 16ull * i + 8), -1);
	}
	// a key already there keeps its value
	ck_assert_int_eq(pyu_addrmap_add(&m, 0x7f0000000000ull + 32, 7), 0);
	ck_assert_int_eq(pyu_addrmap_get(&m, 0x7f0000000000ull + 32), 2);
	// 0 is no key: never added, never found
	ck_assert_int_eq(pyu_addrmap_add(&m, 0, 1), -1);
	ck_assert_int_eq(pyu_addrmap_get(&m, 0), -1);
	ck_assert_uint_ge(m.slots, 2 * m.used);
	ck_assert_uint_gt(pyu_addrmap_bytes(&m), 0);
	pyu_addrmap_clear(&m);
	ck_assert_uint_eq(pyu_addrmap_bytes(&m), 0);
	ck_assert_int_eq(pyu_addrmap_get(&m, 0x7f0000000000ull), -1);
	ck_assert_int_eq(pyu_addrmap_add(&m, 0x7f0000000000ull, UINT32_MAX), 1);
	ck_assert_int_eq(pyu_addrmap_get(&m, 0x7f0000000000ull), UINT32_MAX);
	pyu_addrmap_clear(&m);
}
END_TEST

static Suite *addrmap_suite(void)
{
	Suite *s = suite_create("addrmap");
	TCase *tc = tcase_create("addrmap");
	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, test_values_found);
	suite_add_tcase(s, tc);
	return s;
}

PYU_CHECK_MAIN(addrmap_suite)
