// check_error.c - errors as values: creation, wrapping, the static out-of-memory error.
#include <string.h>

#include "checkmain.h"
#include "error.h"

START_TEST(test_create_and_wrap)
{
	struct pyu_error *err = pyu_error_create(PYU_ERR_FAULT, "address 0x%x", 0x10);
	ck_assert_int_eq(pyu_error_code(err), PYU_ERR_FAULT);
	ck_assert_str_eq(pyu_error_message(err), "address 0x10");
	err = pyu_error_wrap(err, "reading frame %d", 3);
	ck_assert_str_eq(pyu_error_message(err), "while reading frame 3: address 0x10");
	pyu_error_destroy(err);
}
END_TEST

START_TEST(test_nomem_and_null)
{
	ck_assert_str_eq(pyu_error_message(&pyu_error_nomem), "out of memory");
	ck_assert_ptr_eq(pyu_error_wrap(&pyu_error_nomem, "x"), &pyu_error_nomem);
	pyu_error_destroy(&pyu_error_nomem);
	ck_assert_int_eq(pyu_error_code(NULL), PYU_ERR_OK);
	ck_assert_ptr_null(pyu_error_wrap(NULL, "x"));
	ck_assert_uint_eq(pyu_abi_version(), PYU_ABI_VERSION);
}
END_TEST

static Suite *error_suite(void)
{
	Suite *s = suite_create("error");
	TCase *tc = tcase_create("error");
	tcase_add_test(tc, test_create_and_wrap);
	tcase_add_test(tc, test_nomem_and_null);
	suite_add_tcase(s, tc);
	return s;
}

PYU_CHECK_MAIN(error_suite)
