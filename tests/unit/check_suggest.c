// check_suggest.c - the closest-name search of "Did you mean ...?" (suggest.c) against what the
// interpreters' own searches answered for the same names (suggest_cases.h, generated from 3.12's
// traceback loop, 3.13's _suggestions module and 3.15's C-then-Python search), plus the rules
// written down in doc/tracebacks.md: ties, the 40-character and 750-name limits.
#include <string.h>

#include "checkmain.h"
#include "suggest.h"
#include "suggest_cases.h"

START_TEST(test_interpreters_agree)
{
	uint32_t unknown = 0, checked = 0;
	for (size_t i = 0; i < sizeof(suggest_cases) / sizeof(suggest_cases[0]); i++) {
		const struct suggest_case *c = &suggest_cases[i];
		bool unk = false;
		int32_t got = pyu_suggest_pick(c->algo, c->names, c->count, c->wrong, &unk);
		if (unk) {
			// only the Python loop, for characters past Latin-1
			ck_assert_int_ne(c->algo, PYU_SUGGEST_C);
			unknown++;
			continue;
		}
		checked++;
		ck_assert_msg(got == c->want, "case %zu (algo %d, wrong '%s', %u names): got %d, "
			      "the interpreter %d", i, (int)c->algo, c->wrong, c->count, got,
			      c->want);
	}
	ck_assert_uint_gt(checked, 500);
	ck_assert_uint_lt(unknown, checked / 10);
}
END_TEST

START_TEST(test_rules)
{
	bool unk = false;
	// a tie goes to the first name listed
	const char *tie[] = {"valy", "valx"};
	ck_assert_int_eq(pyu_suggest_pick(PYU_SUGGEST_PY, tie, 2, "valz", &unk), 0);
	ck_assert_int_eq(pyu_suggest_pick(PYU_SUGGEST_C, tie, 2, "valz", &unk), 0);
	// the wrong name itself is never suggested
	const char *self[] = {"name"};
	ck_assert_int_eq(pyu_suggest_pick(PYU_SUGGEST_C, self, 1, "name", &unk), -1);
	// past 40 characters: the Python loop gives up, the C search trims common affixes first
	const char *lng[] = {"a_very_long_variable_name_that_goes_on_and_on_x"};
	const char *w = "a_very_long_variable_name_that_goes_on_and_on_y";
	ck_assert_int_eq(pyu_suggest_pick(PYU_SUGGEST_PY, lng, 1, w, &unk), -1);
	ck_assert_int_eq(pyu_suggest_pick(PYU_SUGGEST_C, lng, 1, w, &unk), 0);
	// a case change costs half a move
	const char *cased[] = {"Counter", "countex"};
	ck_assert_int_eq(pyu_suggest_pick(PYU_SUGGEST_C, cased, 2, "counter", &unk), 0);
	ck_assert(!unk);
}
END_TEST

static Suite *suggest_suite(void)
{
	Suite *s = suite_create("suggest");
	TCase *tc = tcase_create("core");
	tcase_add_test(tc, test_interpreters_agree);
	tcase_add_test(tc, test_rules);
	suite_add_tcase(s, tc);
	return s;
}

PYU_CHECK_MAIN(suggest_suite)
