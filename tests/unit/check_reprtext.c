// check_reprtext.c - the pure repr rules (reprtext.c, printable.h) against what a real
// interpreter printed for the same values (repr_cases.h, made by gen_repr_cases.py).
#include <string.h>

#include "checkmain.h"
#include "printable.h"
#include "reprtext.h"
#include "repr_cases.h"

#define N(a) (sizeof(a) / sizeof((a)[0]))

static double from_bits(uint64_t b)
{
	double d;
	memcpy(&d, &b, 8);
	return d;
}

START_TEST(test_float_repr)
{
	char buf[PYU_FLOAT_REPR_MAX];
	for (size_t i = 0; i < N(float_cases); i++) {
		pyu_float_repr(from_bits(float_cases[i].bits), true, buf);
		ck_assert_msg(strcmp(buf, float_cases[i].repr) == 0, "%016llx: %s, Python %s",
			      (unsigned long long)float_cases[i].bits, buf, float_cases[i].repr);
	}
}
END_TEST

START_TEST(test_complex_repr)
{
	for (size_t i = 0; i < N(complex_cases); i++) {
		struct pyu_strbuf sb;
		char *s = NULL;
		pyu_strbuf_init(&sb, 1024);
		pyu_complex_repr(&sb, from_bits(complex_cases[i].re), from_bits(complex_cases[i].im));
		ck_assert_ptr_null(pyu_strbuf_finish(&sb, &s));
		ck_assert_str_eq(s, complex_cases[i].repr);
		free(s);
	}
}
END_TEST

static char *text(const uint8_t *data, size_t n, unsigned kind, enum pyu_text_style style,
		  bool cut)
{
	struct pyu_strbuf sb;
	char *s = NULL;
	pyu_strbuf_init(&sb, 1 << 20);
	pyu_text_repr(&sb, data, n, kind, style, REPR_CASES_DB, cut);
	ck_assert_ptr_null(pyu_strbuf_finish(&sb, &s));
	return s;
}

START_TEST(test_str_repr)
{
	for (size_t i = 0; i < N(str_cases); i++) {
		const uint32_t *u = str_units + str_cases[i].off;
		uint8_t buf[4 * 64];
		ck_assert_uint_le(str_cases[i].n, 64);
		for (size_t j = 0; j < str_cases[i].n; j++)
			memcpy(buf + 4 * j, &u[j], 4);
		char *s = text(buf, str_cases[i].n, 4, PYU_TEXT_STR, false);
		ck_assert_str_eq(s, str_cases[i].repr);
		free(s);
	}
}
END_TEST

START_TEST(test_str_kinds_and_cut)
{
	// The same text in 1- and 2-byte units, and a cut string.
	const uint8_t latin[] = {'a', 0xe9, '\''};
	const uint8_t ucs2[] = {'a', 0, 0xe9, 0, 0x28, 0x20};
	char *s = text(latin, 3, 1, PYU_TEXT_STR, false);
	ck_assert_str_eq(s, "\"a\xc3\xa9'\"");
	free(s);
	s = text(ucs2, 3, 2, PYU_TEXT_STR, true);
	ck_assert_str_eq(s, "'a\xc3\xa9\\u2028'...");
	free(s);
	// 2.7: unicode escapes everything past 0x7e; str is bytes.
	const uint8_t u4[] = {0xe9, 0, 0, 0, 0x00, 0xf6, 0x01, 0};
	s = text(u4, 2, 4, PYU_TEXT_PY2_UNICODE, false);
	ck_assert_str_eq(s, "u'\\xe9\\U0001f600'");
	free(s);
	// bytearray (<= 3.14) escapes ' even when it picked "...".
	const uint8_t ba[] = {'x', '\''};
	s = text(ba, 2, 1, PYU_TEXT_BYTEARRAY, false);
	ck_assert_str_eq(s, "b\"x\\'\"");
	free(s);
	const uint8_t b[] = {0xff, '"', '\n'};
	s = text(b, 3, 1, PYU_TEXT_PY2_STR, false);
	ck_assert_str_eq(s, "'\\xff\"\\n'");
	free(s);
}
END_TEST

START_TEST(test_bytes_repr)
{
	for (size_t i = 0; i < N(bytes_cases); i++) {
		char *s = text((const uint8_t *)bytes_cases[i].data, bytes_cases[i].n, 1,
			       PYU_TEXT_BYTES, false);
		ck_assert_str_eq(s, bytes_cases[i].repr);
		free(s);
	}
}
END_TEST

START_TEST(test_int_decimal)
{
	for (size_t i = 0; i < N(int_cases); i++) {
		// Hex digits -> 30-bit digits, least significant first.
		uint32_t digits[64] = {0}, work[64];
		const char *h = int_cases[i].hex;
		size_t bits = 0, len = strlen(h);
		for (size_t k = len; k-- > 0; bits += 4) {
			unsigned nib = (unsigned)(h[k] <= '9' ? h[k] - '0' : h[k] - 'a' + 10);
			digits[bits / 30] |= (uint32_t)nib << (bits % 30);
			if (bits % 30 > 26)
				digits[bits / 30 + 1] |= (uint32_t)nib >> (30 - bits % 30);
		}
		for (size_t k = 0; k < 64; k++)
			digits[k] &= 0x3fffffff;
		size_t n = (bits + 29) / 30;
		char buf[1024] = "-";
		size_t got = pyu_int_decimal(digits, n, work, buf + 1, sizeof(buf) - 1);
		ck_assert_uint_gt(got, 0);
		ck_assert_str_eq(int_cases[i].sign < 0 ? buf : buf + 1, int_cases[i].repr);
	}
	// Too many digits for the buffer: 0, never a partial number.
	uint32_t big[4] = {0x3fffffff, 0x3fffffff, 0x3fffffff, 1}, work[4];
	char small[8];
	ck_assert_uint_eq(pyu_int_decimal(big, 4, work, small, sizeof(small)), 0);
}
END_TEST

START_TEST(test_names_escaped)
{
	struct pyu_strbuf sb;
	char *s = NULL;
	pyu_strbuf_init(&sb, 1024);
	// ESC [ 2 J, a C1 CSI, a bidi override, an invalid byte; printable text kept.
	const char name[] = "ok\x1b[2J\xc2\x9b\xe2\x80\xae\xff\xc3\xa9";
	pyu_text_name(&sb, name, sizeof(name) - 1, REPR_CASES_DB);
	ck_assert_ptr_null(pyu_strbuf_finish(&sb, &s));
	ck_assert_str_eq(s, "ok\\x1b[2J\\x9b\\u202e\\xff\xc3\xa9");
	free(s);
	ck_assert(!pyu_unicode_printable(0x7f, 0));
	ck_assert(pyu_unicode_printable(0xe9, 0));
	ck_assert(!pyu_unicode_printable(0x110000, 0));
}
END_TEST

static Suite *reprtext_suite(void)
{
	Suite *s = suite_create("reprtext");
	TCase *tc = tcase_create("reprtext");
	tcase_add_test(tc, test_float_repr);
	tcase_add_test(tc, test_complex_repr);
	tcase_add_test(tc, test_str_repr);
	tcase_add_test(tc, test_str_kinds_and_cut);
	tcase_add_test(tc, test_bytes_repr);
	tcase_add_test(tc, test_int_decimal);
	tcase_add_test(tc, test_names_escaped);
	suite_add_tcase(s, tc);
	return s;
}

PYU_CHECK_MAIN(reprtext_suite)
