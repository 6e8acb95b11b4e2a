// check_carets.c - the caret renderer (carets.c) as a pure function: one case per rule set,
// with the text each version's own traceback module prints for it (taken from 3.10.13, 3.11.2,
// 3.11.7, 3.12.1, 3.13.0, 3.14.10, 3.15.2), and inputs no traceback would be given (bad
// positions, broken text) that must still give bounded, sane output. The whole-corpus
// comparison with every interpreter is tests/carets/run.
#include <stdlib.h>
#include <string.h>

#include "carets.h"
#include "checkmain.h"

#define NOC PYU_NO_COLUMN

static char *render(uint64_t hex, const char *const *lines, size_t count, int32_t line,
		    int32_t end_line, int32_t col, int32_t end_col)
{
	size_t lens[16];
	for (size_t i = 0; i < count; i++)
		lens[i] = strlen(lines[i]);
	struct pyu_location loc = {line, end_line, col, end_col};
	struct pyu_strbuf sb;
	pyu_strbuf_init(&sb, PYU_STRBUF_MAX);
	pyu_carets_render(pyu_caret_rules_for(hex), lines, lens, count, &loc, "", &sb);
	char *out = NULL;
	ck_assert_ptr_null(pyu_strbuf_finish(&sb, &out));
	return out;
}

#define EXPECT(hex, lines, l, el, c, ec, want)                                                \
	do {                                                                                 \
		char *got_ = render(hex, lines, sizeof(lines) / sizeof(lines[0]), l, el, c, ec); \
		ck_assert_str_eq(got_, want);                                                \
		free(got_);                                                                  \
	} while (0)

START_TEST(test_versions)
{
	const char *binop[] = {"    x = a + b  "};
	EXPECT(0x030A0DF0, binop, 1, 1, NOC, NOC, "x = a + b\n");
	const char *binop2[] = {"    x = a + b"};
	EXPECT(0x030B02F0, binop2, 1, 1, 8, 13, "x = a + b\n    ~~^~~\n");
	const char *sub[] = {"    x = d[k][0]"};
	EXPECT(0x030B02F0, sub, 1, 1, 8, 15, "x = d[k][0]\n    ~~~~^^^\n");
	// 数据: two characters, six bytes, four columns (3.11.7 counts the columns)
	const char *wide[] = {"    x = 数据 + 1"};
	EXPECT(0x030B07F0, wide, 1, 1, 8, 18, "x = 数据 + 1\n    ~~~~~^~~\n");
	const char *tabs[] = {"\tx = d[\ta\t]"};
	EXPECT(0x030B07F0, tabs, 1, 1, 5, 12, "x = d[\ta\t]\n    ~^^^^^~\n");
	// 3.12: a call covering the whole line has no caret line; parentheses skipped
	const char *call[] = {"    f(a)"};
	EXPECT(0x030C01F0, call, 1, 1, 4, 8, "f(a)\n");
	const char *paren[] = {"    (a) + b"};
	EXPECT(0x030C01F0, paren, 1, 1, 4, 11, "(a) + b\n~~~~^~~\n");
	// 3.13: calls are anchored and keep their caret line, except `x = f(...)`
	const char *call2[] = {"    f(A())"};
	EXPECT(0x030D00F0, call2, 1, 1, 4, 10, "f(A())\n~^^^^^\n");
	const char *assign[] = {"    x = f(a)"};
	EXPECT(0x030D00F0, assign, 1, 1, 8, 12, "x = f(a)\n");
	const char *multi[] = {"    x = f(", "        a,", "        b,", "        c,",
			       "        d,", "        e,", "        g,", "    )"};
	EXPECT(0x030D00F0, multi, 1, 8, 8, 5, "x = f(\n    a,\n...<4 lines>...\n    g,\n)\n");
	const char *multi2[] = {"    y = (a", "         + b)"};
	EXPECT(0x030E0AF0, multi2, 1, 2, 9, 12, "y = (a\n     ~\n     + b)\n     ^~~\n");
	// a combining accent takes no column from 3.15 on
	const char *comb[] = {"    f(\"e\xcc\x81\") + 1"};
	EXPECT(0x030E0AF0, comb, 1, 1, 4, 17, "f(\"e\xcc\x81\") + 1\n~~~~~~~~^~~\n");
	EXPECT(0x030F02F0, comb, 1, 1, 4, 17, "f(\"e\xcc\x81\") + 1\n~~~~~~~^~~\n");
}
END_TEST

START_TEST(test_rules_table)
{
	ck_assert_int_eq(pyu_caret_rules_for(0x02070000)->layout, PYU_CARETS_LINE_ONLY);
	ck_assert_int_eq(pyu_caret_rules_for(0x030A0DF0)->layout, PYU_CARETS_LINE_ONLY);
	ck_assert_int_eq(pyu_caret_rules_for(0x030B00F0)->layout, PYU_CARETS_ONE_LINE);
	ck_assert_int_eq(pyu_caret_rules_for(0x030B00F0)->width, PYU_WIDTH_CHARS);
	ck_assert_int_eq(pyu_caret_rules_for(0x030C00F0)->width, PYU_WIDTH_EAST_ASIAN);
	ck_assert(pyu_caret_rules_for(0x030D00F0)->call_anchors);
	ck_assert_int_eq(pyu_caret_rules_for(0x030F00A0)->width, PYU_WIDTH_WLEN);
}
END_TEST

// Positions and text no compiler would produce: bounded output, no crash (ASan run).
START_TEST(test_nonsense)
{
	static const uint64_t versions[] = {0x030A0000, 0x030B02F0, 0x030C01F0, 0x030D00F0,
					    0x030F02F0};
	const char *lines[] = {"    f(a + [b, (c", "\xff\xfe  ) + \"unterminated", "",
			       "  x = y[1:2, ...]  # ( [", "\\"};
	const int32_t pos[][4] = {
		{1, 1, 100, 200}, {1, 1, 9, 2},   {1, 0, 4, 8},      {2, 1, 0, 3},
		{1, 5, 0, 1},     {1, 5, 4, 100}, {3, 3, 0, 0},      {1, 1, -7, 3},
		{0, 2, 0, 4},     {1, 9, 4, 2},   {1, 1, NOC, NOC},  {4, 4, 6, 17},
		{1, 1000000, 4, 2}, {5, 5, 0, 1}, {2, 2, 0, 40},     {1, 2, 4, 5},
	};
	for (size_t v = 0; v < sizeof(versions) / sizeof(versions[0]); v++) {
		for (size_t i = 0; i < sizeof(pos) / sizeof(pos[0]); i++) {
			size_t first = pos[i][0] >= 1 ? (size_t)pos[i][0] - 1 : 0;
			size_t count = first < 5 ? 5 - first : 0;
			char *out = render(versions[v], lines + first, count, pos[i][0], pos[i][1],
					   pos[i][2], pos[i][3]);
			ck_assert_uint_lt(strlen(out), 4096);
			free(out);
		}
	}
}
END_TEST

static Suite *carets_suite(void)
{
	Suite *s = suite_create("carets");
	TCase *tc = tcase_create("carets");
	tcase_add_test(tc, test_versions);
	tcase_add_test(tc, test_rules_table);
	tcase_add_test(tc, test_nonsense);
	suite_add_tcase(s, tc);
	return s;
}

PYU_CHECK_MAIN(carets_suite)
