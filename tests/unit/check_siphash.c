// check_siphash.c - SipHash-1-3 and -2-4 against the str hashes real interpreters give with
// PYTHONHASHSEED=0 (both keys zero): 3.15's hash('threading') and 3.10's, and so on.
#include <string.h>

#include "checkmain.h"
#include "siphash.h"

static int64_t sip(unsigned c, unsigned d, const char *s)
{
	return (int64_t)pyu_siphash(c, d, 0, 0, (const uint8_t *)s, strlen(s));
}

START_TEST(test_siphash13_as_311_on)
{
	ck_assert_int_eq(sip(1, 3, "threading"), -217255072549013292ll);
	ck_assert_int_eq(sip(1, 3, "_active"), -8459328279367953207ll);
	ck_assert_int_eq(sip(1, 3, "a"), 4644417185603328019ll);
	ck_assert_int_eq(sip(1, 3, "abcdefgh"), 4574395652268504554ll); // one whole word
	ck_assert_int_eq(sip(1, 3, "abcdefghijklmnopq"), 7044894726457044172ll);
}
END_TEST

START_TEST(test_siphash24_as_36_to_310)
{
	ck_assert_int_eq(sip(2, 4, "threading"), -5426013259031524831ll);
	ck_assert_int_eq(sip(2, 4, "_active"), -5360198385244518320ll);
	ck_assert_int_eq(sip(2, 4, "a"), -7583489610679606711ll);
	ck_assert_int_eq(sip(2, 4, "abcdefgh"), -1847705707669741165ll);
	ck_assert_int_eq(sip(2, 4, "abcdefghijklmnopq"), -6196428185306681828ll);
}
END_TEST

START_TEST(test_keys_matter)
{
	const uint8_t *b = (const uint8_t *)"threading";
	ck_assert_uint_ne(pyu_siphash(1, 3, 1, 0, b, 9), pyu_siphash(1, 3, 0, 0, b, 9));
	ck_assert_uint_ne(pyu_siphash(1, 3, 0, 1, b, 9), pyu_siphash(1, 3, 0, 0, b, 9));
}
END_TEST

static Suite *siphash_suite(void)
{
	Suite *s = suite_create("siphash");
	TCase *tc = tcase_create("siphash");
	tcase_add_test(tc, test_siphash13_as_311_on);
	tcase_add_test(tc, test_siphash24_as_36_to_310);
	tcase_add_test(tc, test_keys_matter);
	suite_add_tcase(s, tc);
	return s;
}

PYU_CHECK_MAIN(siphash_suite)
