// check_runtime.c - finding the interpreter when no ELF file helps: the _Py_DebugOffsets cookie
// in writable memory (a whole pyu_stacks_collect() through it, version strings with pre-release
// suffixes), and the errors: nothing found (each failed step named), a cookie of a version whose
// field list is unknown, a version without a table.
#include "checkmain.h"
#include "dbgoffsets.h"
#include "fakepy.h"

// A 3.14 interpreter found only through its cookie: one thread, main <- f.
START_TEST(test_cookie_collect)
{
	static const uint64_t versions[] = {0x030e0af0, 0x030e00a1, 0x030e02c3};
	static const char *const names[] = {"3.14.10", "3.14.0a1", "3.14.2rc3"};
	struct fake_py p;
	fp_init(&p, (uint32_t)versions[_i]);
	uint8_t block[PYU_DEBUG_OFFSETS_MAX];
	size_t len = make_block(block, dbg_314, sizeof(dbg_314) / 8);
	memcpy(block + 8, &versions[_i], 8);
	uint64_t runtime = fm_alloc(&p.m, 4096);
	fm_put(&p.m, runtime, block, len);
	fm_u64(&p.m, runtime + 808, p.interp);
	uint64_t code = fp_code(&p, "f", 10, 4);
	uint64_t ts = fp_thread(&p, 77, 78);
	fp_set_top(&p, ts, fp_frame(&p, code, 2, fp_frame(&p, code, 1, 0, 0), 0));
	fm_u32(&p.m, p.gil + 16, 1);
	fm_u64(&p.m, p.gil + 8, ts);

	struct pyu_stacks *s = NULL;
	struct pyu_error *err = pyu_stacks_collect(p.m.t, &s);
	ck_assert_msg(err == NULL, "%s", pyu_error_message(err));
	ck_assert_str_eq(s->version, names[_i]);
	ck_assert_uint_eq(s->hexversion, versions[_i]);
	ck_assert(!s->debug_build);
	ck_assert(!s->free_threaded);
	ck_assert_uint_eq(pyu_stacks_thread_count(s), 1);
	ck_assert_uint_eq(pyu_stacks_frame_count(s, 0), 2);
	ck_assert_uint_eq(pyu_stacks_frame_count(s, 1), 0);
	ck_assert_int_eq(pyu_stacks_find_thread(s, 78, 0), 0);
	ck_assert_int_eq(pyu_stacks_find_thread(s, 0, 77), 0);
	ck_assert_int_eq(pyu_stacks_find_thread(s, 5, 6), -1);
	const struct pyu_thread_info *th = &s->threads[0];
	ck_assert_int_eq(th->holds_gil, 1);
	ck_assert_int_eq(th->frames[0].loc.line, 13);
	ck_assert_int_eq(th->frames[1].loc.line, 12);
	ck_assert_str_eq(s->codes[th->frames[0].code].qualname, "Q.f");
	ck_assert_uint_eq(s->note_count, 1);
	ck_assert_msg(strstr(s->notes[0], "cookie"), "%s", s->notes[0]);
	pyu_stacks_destroy(s);

	struct pyu_runtime rt;
	ck_assert_ptr_null(pyu_runtime_find(p.m.t, &rt));
	ck_assert_uint_eq(rt.runtime_addr, runtime);
	ck_assert_uint_eq(rt.interp_head_addr, runtime + 808);
	ck_assert(rt.version_exact);
	ck_assert_msg(strstr(rt.notes, "cookie"), "%s", rt.notes);
	fm_destroy(&p.m);
}
END_TEST

START_TEST(test_nothing_found)
{
	struct fakemem m;
	fm_init(&m, &pyu_layout_py312);
	struct pyu_stacks *s = NULL;
	struct pyu_error *err = pyu_stacks_collect(m.t, &s);
	ck_assert_ptr_nonnull(err);
	ck_assert_ptr_null(s);
	ck_assert_int_eq(pyu_error_code(err), PYU_ERR_NOT_PYTHON);
	const char *msg = pyu_error_message(err);
	ck_assert_msg(strstr(msg, "no mapped files") && strstr(msg, "no _Py_DebugOffsets cookie"),
		      "%s", msg);
	pyu_error_destroy(err);
	err = pyu_stacks_collect(NULL, &s);
	ck_assert_int_eq(pyu_error_code(err), PYU_ERR_ARGUMENT);
	pyu_error_destroy(err);
	fm_destroy(&m);
}
END_TEST

START_TEST(test_unknown_versions)
{
	struct fakemem m;
	fm_init(&m, &pyu_layout_py315);
	uint8_t block[PYU_DEBUG_OFFSETS_MAX];
	size_t len = make_block(block, dbg_315, sizeof(dbg_315) / 8);
	uint64_t v = 0x031000a2; // 3.16.0a2
	memcpy(block + 8, &v, 8);
	fm_put(&m, fm_alloc(&m, 4096), block, len);
	struct pyu_stacks *s = NULL;
	struct pyu_error *err = pyu_stacks_collect(m.t, &s);
	ck_assert_int_eq(pyu_error_code(err), PYU_ERR_UNSUPPORTED);
	ck_assert_msg(strstr(pyu_error_message(err), "3.16"), "%s", pyu_error_message(err));
	pyu_error_destroy(err);
	fm_destroy(&m);

	struct pyu_runtime rt;
	memset(&rt, 0, sizeof(rt));
	err = pyu_runtime_init_layout(&rt, 0x030500f0, false);
	ck_assert_int_eq(pyu_error_code(err), PYU_ERR_UNSUPPORTED);
	ck_assert_msg(strstr(pyu_error_message(err), "3.5"), "%s", pyu_error_message(err));
	pyu_error_destroy(err);
	// Py_DEBUG on 2.7 - 3.7 implies Py_TRACE_REFS: objects grow at the front.
	ck_assert_ptr_null(pyu_runtime_init_layout(&rt, 0x030710f0, true));
	ck_assert_int_eq(rt.layout.ob_type, 24);
	ck_assert_int_eq(rt.layout.frame.f_back, pyu_layout_py37.frame.f_back + 16);
	ck_assert_ptr_null(pyu_runtime_init_layout(&rt, 0x030810f0, true));
	ck_assert_int_eq(rt.layout.ob_type, 8);
}
END_TEST

static Suite *runtime_suite(void)
{
	Suite *s = suite_create("runtime");
	TCase *tc = tcase_create("runtime");
	tcase_set_timeout(tc, 60);
	tcase_add_loop_test(tc, test_cookie_collect, 0, 3);
	tcase_add_test(tc, test_nothing_found);
	tcase_add_test(tc, test_unknown_versions);
	suite_add_tcase(s, tc);
	return s;
}

PYU_CHECK_MAIN(runtime_suite)
