// check_objects.c - bounded str/bytes/int readers on synthetic memory: every PEP 393 kind,
// compact and legacy strings, garbage above the state byte, 2.7 str and unicode, and the
// failures: not a str, absurd lengths, bad kinds, unreadable payloads.
#include "checkmain.h"
#include "fakemem.h"

static void expect_str(struct fakemem *m, uint64_t addr, const char *want)
{
	char *s = NULL;
	struct pyu_error *err = pyu_read_str(m->t, m->l, addr, 1000, &s);
	ck_assert_msg(err == NULL, "%s", pyu_error_message(err));
	ck_assert_str_eq(s, want);
	free(s);
}

static void expect_fail(struct fakemem *m, uint64_t addr, int32_t code, const char *part)
{
	char *s = NULL;
	struct pyu_error *err = pyu_read_str(m->t, m->l, addr, 1000, &s);
	ck_assert_ptr_nonnull(err);
	ck_assert_int_eq(pyu_error_code(err), code);
	ck_assert_msg(strstr(pyu_error_message(err), part), "%s", pyu_error_message(err));
	ck_assert_ptr_null(s);
	pyu_error_destroy(err);
}

START_TEST(test_pep393_kinds)
{
	const struct pyu_layout *layouts[] = {&pyu_layout_py36, &pyu_layout_py311,
					      &pyu_layout_py312, &pyu_layout_py314};
	for (size_t i = 0; i < 4; i++) {
		struct fakemem m;
		fm_init(&m, layouts[i]);
		expect_str(&m, fm_str(&m, "hello"), "hello");
		expect_str(&m, fm_str(&m, ""), "");
		uint32_t latin[] = {'c', 0xe9, 'f'};
		expect_str(&m, fm_str_cps(&m, latin, 3), "c\xc3\xa9" "f");
		uint32_t ucs2[] = {0x434, 0x51fd, 0xd800}; // lone surrogate: 3-byte sequence
		expect_str(&m, fm_str_cps(&m, ucs2, 3), "\xd0\xb4\xe5\x87\xbd\xed\xa0\x80");
		uint32_t ucs4[] = {'x', 0x1f600};
		expect_str(&m, fm_str_cps(&m, ucs4, 2), "x\xf0\x9f\x98\x80");
		fm_destroy(&m);
	}
}
END_TEST

START_TEST(test_pep393_legacy)
{
	struct fakemem m;
	fm_init(&m, &pyu_layout_py310);
	const struct pyu_layout *l = m.l;
	uint64_t data = fm_alloc(&m, 8);
	uint16_t units[] = {0x3b1, 0x3b2};
	fm_put(&m, data, units, sizeof(units));
	uint64_t o = fm_alloc(&m, 128);
	fm_u64(&m, o + (uint64_t)l->ob_type, m.str_type);
	fm_u64(&m, o + (uint64_t)l->unicode.length, 2);
	fm_u32(&m, o + (uint64_t)l->unicode.state, 2u << 2 | 1u << 7); // kind 2, not compact
	fm_u64(&m, o + (uint64_t)l->unicode.data, data);
	expect_str(&m, o, "\xce\xb1\xce\xb2");
	// The data pointer leads nowhere.
	fm_u64(&m, o + (uint64_t)l->unicode.data, 0x10);
	expect_fail(&m, o, PYU_ERR_FAULT, "characters");
	fm_destroy(&m);
}
END_TEST

START_TEST(test_str_failures)
{
	struct fakemem m;
	fm_init(&m, &pyu_layout_py312);
	const struct pyu_layout *l = m.l;
	expect_fail(&m, 0, PYU_ERR_CORRUPT, "NULL");
	expect_fail(&m, fm_bytes(&m, "ab", 2), PYU_ERR_CORRUPT, "not a str");
	uint64_t s = fm_str(&m, "abc");
	fm_u64(&m, s + (uint64_t)l->unicode.length, 1ull << 40);
	expect_fail(&m, s, PYU_ERR_CORRUPT, "length");
	fm_u64(&m, s + (uint64_t)l->unicode.length, (uint64_t)-5);
	expect_fail(&m, s, PYU_ERR_CORRUPT, "length");
	s = fm_str(&m, "abc");
	fm_u32(&m, s + (uint64_t)l->unicode.state, 3u << 2 | 1u << 5);
	expect_fail(&m, s, PYU_ERR_CORRUPT, "kind");
	fm_u32(&m, s + (uint64_t)l->unicode.state, 2u << 2 | 1u << 5 | 1u << 6);
	expect_fail(&m, s, PYU_ERR_CORRUPT, "ASCII");
	expect_fail(&m, 0x20, PYU_ERR_FAULT, "0x20");
	// Longer than the caller's cap.
	char *out = NULL;
	struct pyu_error *err = pyu_read_str(m.t, l, fm_str(&m, "abcdef"), 3, &out);
	ck_assert_int_eq(pyu_error_code(err), PYU_ERR_CORRUPT);
	pyu_error_destroy(err);
	// A string whose payload runs off the end of readable memory.
	uint64_t end = fm_str(&m, "0123456789");
	m.limit = end + (uint64_t)l->unicode.ascii_size + 4;
	pyu_target_flush_cache(m.t);
	expect_fail(&m, end, PYU_ERR_FAULT, "characters");
	fm_destroy(&m);
}
END_TEST

START_TEST(test_py2_strings)
{
	struct fakemem m;
	fm_init(&m, &pyu_layout_py27);
	const struct pyu_layout *l = m.l;
	m.bytes_type = fm_type(&m, "str", PYU_TPFLAGS_BYTES_SUBCLASS);
	expect_str(&m, fm_bytes(&m, "spam", 4), "spam");
	expect_str(&m, fm_bytes(&m, "\xc3\xa9", 2), "\xc3\xa9");  // UTF-8 passes through
	expect_str(&m, fm_bytes(&m, "\xe9t\xe9", 3), "\xc3\xa9t\xc3\xa9"); // latin-1 otherwise
	uint64_t utype = fm_type(&m, "unicode", PYU_TPFLAGS_UNICODE_SUBCLASS);
	uint32_t units[] = {'h', 0x1f600};
	uint64_t data = fm_alloc(&m, sizeof(units));
	fm_put(&m, data, units, sizeof(units));
	uint64_t u = fm_alloc(&m, 64);
	fm_u64(&m, u + (uint64_t)l->ob_type, utype);
	fm_u64(&m, u + (uint64_t)l->unicode.length, 2);
	fm_u64(&m, u + (uint64_t)l->unicode.data, data);
	expect_str(&m, u, "h\xf0\x9f\x98\x80");
	fm_destroy(&m);
}
END_TEST

START_TEST(test_bytes_and_int)
{
	struct fakemem m;
	fm_init(&m, &pyu_layout_py312);
	const struct pyu_layout *l = m.l;
	uint8_t *b = NULL;
	size_t n = 0;
	ck_assert_ptr_null(pyu_read_bytes(m.t, l, fm_bytes(&m, "\x01\x02\x00\x03", 4), 100, &b, &n));
	ck_assert_uint_eq(n, 4);
	ck_assert_mem_eq(b, "\x01\x02\x00\x03", 4);
	free(b);
	uint64_t big = fm_bytes(&m, "xyz", 3);
	struct pyu_error *err = pyu_read_bytes(m.t, l, big, 2, &b, &n);
	ck_assert_int_eq(pyu_error_code(err), PYU_ERR_CORRUPT);
	pyu_error_destroy(err);
	err = pyu_read_bytes(m.t, l, fm_str(&m, "s"), 10, &b, &n);
	ck_assert_int_eq(pyu_error_code(err), PYU_ERR_CORRUPT);
	pyu_error_destroy(err);
	// 3.12+ ints: lv_tag = ndigits << 3 | sign bits (0 positive, 1 zero, 2 negative).
	uint64_t i = fm_alloc(&m, 64);
	int64_t v = 0;
	fm_u64(&m, i + 16, 2u << 3 | 2);
	fm_u32(&m, i + 24, 5);
	fm_u32(&m, i + 28, 1); // -(1 << 30 | 5)
	ck_assert_ptr_null(pyu_read_int(m.t, l, i, true, &v));
	ck_assert_int_eq(v, -((1ll << 30) + 5));
	fm_u64(&m, i + 16, 1);
	ck_assert_ptr_null(pyu_read_int(m.t, l, i, true, &v));
	ck_assert_int_eq(v, 0);
	// <= 3.11: ob_size = sign * ndigits.
	fm_u64(&m, i + 16, 1);
	fm_u32(&m, i + 24, 42);
	ck_assert_ptr_null(pyu_read_int(m.t, l, i, false, &v));
	ck_assert_int_eq(v, 42);
	fm_u64(&m, i + 16, 9);
	err = pyu_read_int(m.t, l, i, false, &v);
	ck_assert_int_eq(pyu_error_code(err), PYU_ERR_CORRUPT);
	pyu_error_destroy(err);
	fm_destroy(&m);
}
END_TEST

START_TEST(test_utf8_put)
{
	char out[4];
	ck_assert_uint_eq(pyu_utf8_put(0x41, out), 1);
	ck_assert_uint_eq(pyu_utf8_put(0x7ff, out), 2);
	ck_assert_uint_eq(pyu_utf8_put(0xffff, out), 3);
	ck_assert_uint_eq(pyu_utf8_put(0x10ffff, out), 4);
	ck_assert_uint_eq(pyu_utf8_put(0x110000, out), 3); // U+FFFD
	ck_assert_mem_eq(out, "\xef\xbf\xbd", 3);
}
END_TEST

// Py_DEBUG builds of 2.7 - 3.7 carry Py_TRACE_REFS: every object field 16 bytes later.
START_TEST(test_trace_refs_objects)
{
	struct pyu_layout l36 = pyu_layout_py36, l27 = pyu_layout_py27;
	pyu_layout_apply_trace_refs(&l36);
	pyu_layout_apply_trace_refs(&l27);
	struct fakemem m;
	fm_init(&m, &l36);
	uint32_t ucs2[] = {'a', 0x3b1};
	expect_str(&m, fm_str_cps(&m, ucs2, 2), "a\xce\xb1");
	expect_str(&m, fm_str(&m, "debug"), "debug");
	fm_destroy(&m);
	fm_init(&m, &l27);
	expect_str(&m, fm_str(&m, "old"), "old");
	fm_destroy(&m);
}
END_TEST

static Suite *objects_suite(void)
{
	Suite *s = suite_create("objects");
	TCase *tc = tcase_create("objects");
	tcase_add_test(tc, test_pep393_kinds);
	tcase_add_test(tc, test_pep393_legacy);
	tcase_add_test(tc, test_str_failures);
	tcase_add_test(tc, test_py2_strings);
	tcase_add_test(tc, test_bytes_and_int);
	tcase_add_test(tc, test_utf8_put);
	tcase_add_test(tc, test_trace_refs_objects);
	suite_add_tcase(s, tc);
	return s;
}

PYU_CHECK_MAIN(objects_suite)
