// check_native.c - the merge of native and Python frames (native.c) on hand-built snapshots:
// placement by C-stack markers (3.11+) and by the eval loop's symbol (older), inline frames,
// cut stacks and count mismatches (never an interleaving), hiding the interpreter's plumbing.
#include <check.h>
#include <stdlib.h>
#include <string.h>

#include "checkmain.h"
#include "include/pyunwind.h"
#include "native.h"

// A snapshot with one thread of @n Python frames whose markers are @markers (0 = none).
static struct pyu_stacks *snapshot(enum pyu_native_placement how, const uint64_t *markers,
				   uint32_t n)
{
	struct pyu_stacks *s = calloc(1, sizeof(*s));
	ck_assert_ptr_nonnull(s);
	s->placement = how;
	strcpy(s->eval_function, "_PyEval_EvalFrameDefault");
	s->threads = calloc(1, sizeof(*s->threads));
	ck_assert_ptr_nonnull(s->threads);
	s->thread_count = 1;
	struct pyu_thread_info *th = &s->threads[0];
	th->frames = calloc(n ? n : 1, sizeof(*th->frames));
	th->frame_count = n;
	for (uint32_t i = 0; i < n; i++) {
		th->frames[i].kind = PYU_FRAME_PYTHON;
		th->frames[i].code = -1;
		th->frames[i].entry_marker = markers ? markers[i] : 0;
	}
	return s;
}

static void native(struct pyu_stacks *s, uint64_t sp, uint64_t cfa, const char *fn,
		   const char *lib)
{
	ck_assert_ptr_null(pyu_stacks_add_native_frame(s, 0, 0x1000 + sp, sp, cfa, fn, lib,
						       NULL, -1));
}

// The merge as a string: "P0" for Python frame 0, "N3" for native frame 3, space-separated.
static void merged(struct pyu_stacks *s, bool keep_all, bool want_merged, const char *want)
{
	struct pyu_merge m;
	ck_assert_ptr_null(pyu_merge_thread(s, &s->threads[0], keep_all, &m));
	char got[512] = "";
	for (uint32_t i = 0; i < m.count; i++) {
		char one[16];
		snprintf(one, sizeof(one), "%s%c%u", i ? " " : "", m.items[i].python ? 'P' : 'N',
			 m.items[i].index);
		strcat(got, one);
	}
	ck_assert_msg(m.merged == want_merged, "merged %d (%s), wanted %d", m.merged, m.reason,
		      want_merged);
	ck_assert_str_eq(got, want);
	pyu_merge_release(&m);
}

// 3.12+: callback <- qsort (libc) <- caller, each run held by the eval frame holding its marker.
START_TEST(test_entry_frames)
{
	uint64_t markers[] = {0x7000 + 0x150, 0x7000 + 0x550, 0x7000 + 0x550};
	struct pyu_stacks *s = snapshot(PYU_PLACE_BY_ENTRY_FRAME, markers, 3);
	native(s, 0x7000, 0, "futex_wait", "libc.so.6");                 // N0
	native(s, 0x7100, 0, NULL, "python3");                           // N1 eval (callback)
	native(s, 0x7200, 0, "_PyObject_Call", "python3");               // N2 plumbing
	native(s, 0x7300, 0, "qsort", "libc.so.6");                      // N3
	native(s, 0x7400, 0, "PyCFuncPtr_call", "_ctypes.so");           // N4
	native(s, 0x7500, 0, NULL, "python3");                           // N5 eval (caller)
	native(s, 0x7600, 0, "main", "python3");                         // N6
	native(s, 0x7700, 0, "_start", "python3");                       // N7
	merged(s, false, true, "N0 P0 N3 N4 P1 P2 N6 N7");
	merged(s, true, true, "N0 P0 N1 N2 N3 N4 P1 P2 N5 N6 N7");
	char *text = NULL;
	ck_assert_ptr_null(pyu_format_native_frame(s, 0, 6, &text));
	ck_assert_str_eq(text, "");
	pyu_free(text);
	pyu_stacks_destroy(s);
}
END_TEST

// Inline frames share their caller's stack range: the real (outermost) frame runs the Python
// frames; given cfas overlap the same way.
START_TEST(test_inline_frames)
{
	uint64_t markers[] = {0x8180};
	struct pyu_stacks *s = snapshot(PYU_PLACE_BY_ENTRY_FRAME, markers, 1);
	native(s, 0x8000, 0x8100, "read", "libc.so.6");
	native(s, 0x8100, 0x8200, "inlined_helper", "python3");
	native(s, 0x8100, 0x8200, "_PyEval_EvalFrameDefault", "python3");
	native(s, 0x8200, 0x8300, "main", "python3");
	native(s, 0x8300, 0x8400, "_start", "python3");
	merged(s, false, true, "N0 N1 P0 N3 N4");
	pyu_stacks_destroy(s);
}
END_TEST

// A stack the unwinder lost early: the markers above it lie in no frame - not merged, both
// sides kept. The outermost frame with no cfa must not take everything above it.
START_TEST(test_cut_stack)
{
	uint64_t markers[] = {0x9150, 0x9950};
	struct pyu_stacks *s = snapshot(PYU_PLACE_BY_ENTRY_FRAME, markers, 2);
	native(s, 0x9000, 0, "futex_wait", "libc.so.6");
	native(s, 0x9100, 0, "_PyEval_EvalFrameDefault", "python3");
	native(s, 0x9200, 0, NULL, "libffi.so");
	merged(s, false, false, "P0 P1 N0 N2");
	pyu_stacks_destroy(s);
}
END_TEST

// A thread's frames in one call: strings by number, and a stack pointer of 0 taken from the cfa
// of the nearest stack frame inner to it (an inlined or artificial frame has none of its own).
START_TEST(test_frames_in_one_call)
{
	uint64_t markers[] = {0x8180, 0x8350};
	struct pyu_stacks *s = snapshot(PYU_PLACE_BY_ENTRY_FRAME, markers, 2);
	const char *strings[] = {"read", "libc.so.6", "inlined_helper", "python3",
				 "_PyEval_EvalFrameDefault", "tail", "main"};
	enum { READ = 1, LIBC, HELPER, PYTHON3, EVAL, TAIL, MAIN };
#define F(pc, sp, cfa, kind, fn, lib) {pc, sp, cfa, 0, kind, fn, lib, 0}
	uint64_t frames[][PYU_NATIVE_FIELDS] = {
		F(0x1000, 0x8000, 0x8100, 0, READ, LIBC),                   // N0
		F(0x1100, 0, 0x8200, PYU_NATIVE_INLINE, HELPER, PYTHON3),     // N1 [0x8100, 0x8200)
		F(0x1200, 0, 0x8200, 0, EVAL, PYTHON3),                      // N2 [0x8100, 0x8200)
		F(0x1300, 0, 0x8200, PYU_NATIVE_ARTIFICIAL, TAIL, PYTHON3),   // N3 [0x8200, 0x8200)
		F(0x1400, 0, 0x8400, 0, EVAL, PYTHON3),                      // N4 [0x8200, 0x8400)
		F(0x1500, 0, 0, 0, MAIN, PYTHON3),                           // N5 [0x8400, ...)
	};
#undef F
	ck_assert_ptr_null(pyu_stacks_set_native_frames(s, 0, &frames[0][0], 6, strings, 7));
	const struct pyu_thread_info *th = &s->threads[0];
	ck_assert_uint_eq(th->native_count, 6);
	uint64_t want_sp[] = {0x8000, 0x8100, 0x8100, 0x8200, 0x8200, 0x8400};
	for (uint32_t k = 0; k < 6; k++)
		ck_assert_uint_eq(th->native[k].sp, want_sp[k]);
	ck_assert_str_eq(th->native[2].function, "_PyEval_EvalFrameDefault");
	ck_assert_str_eq(th->native[0].library, "libc.so.6");
	ck_assert_ptr_null(th->native[0].file);
	ck_assert_int_eq(th->native[0].line, -1);
	ck_assert(th->native[1].inlined && th->native[3].artificial && !th->native[4].inlined);
	merged(s, true, true, "N0 N1 P0 N2 P1 N4 N5"); // an artificial frame is never shown

	// Handed in again, the frames replace those before; a bad record leaves none.
	frames[1][PYU_NATIVE_FUNCTION] = 8; // past the 7 strings
	struct pyu_error *bad = pyu_stacks_set_native_frames(s, 0, &frames[0][0], 6, strings, 7);
	ck_assert_ptr_nonnull(bad);
	ck_assert_int_eq(pyu_error_code(bad), PYU_ERR_ARGUMENT);
	pyu_error_destroy(bad);
	ck_assert_uint_eq(th->native_count, 0);
	ck_assert(!th->native_known);
	frames[1][PYU_NATIVE_FUNCTION] = HELPER;
	frames[1][PYU_NATIVE_KIND] = 9; // no such kind
	bad = pyu_stacks_set_native_frames(s, 0, &frames[0][0], 6, strings, 7);
	ck_assert_ptr_nonnull(bad);
	pyu_error_destroy(bad);
	ck_assert_uint_eq(th->native_count, 0);
	bad = pyu_stacks_set_native_frames(s, 1, &frames[0][0], 6, strings, 7); // no thread #1
	ck_assert_int_eq(pyu_error_code(bad), PYU_ERR_NOT_FOUND);
	pyu_error_destroy(bad);
	bad = pyu_stacks_set_native_frames(s, 0, NULL, 6, strings, 7);
	ck_assert_int_eq(pyu_error_code(bad), PYU_ERR_ARGUMENT);
	pyu_error_destroy(bad);
	ck_assert_ptr_null(pyu_stacks_set_native_frames(s, 0, NULL, 0, NULL, 0));
	ck_assert_uint_eq(th->native_count, 0);
	pyu_stacks_destroy(s);
}
END_TEST

// Every thread's frames in one call: a thread refused (a bad record) gets the reason as its
// native error and the others keep theirs; a thread the snapshot lacks is passed over. The
// kernel tids of several threads looked up at once.
START_TEST(test_threads_in_one_call)
{
	struct pyu_stacks *s = snapshot(PYU_PLACE_BY_ENTRY_FRAME, NULL, 0);
	struct pyu_thread_info *more = realloc(s->threads, 2 * sizeof(*more));
	ck_assert_ptr_nonnull(more);
	memset(&more[1], 0, sizeof(more[1]));
	s->threads = more;
	s->thread_count = 2;
	s->threads[0].native_thread_id = 700;
	s->threads[1].native_thread_id = 701;
	int64_t tids[] = {701, 5, 700, 0};
	int32_t found[4] = {9, 9, 9, 9};
	pyu_stacks_find_threads(s, tids, 4, found);
	ck_assert_int_eq(found[0], 1);
	ck_assert_int_eq(found[1], -1);
	ck_assert_int_eq(found[2], 0);
	ck_assert_int_eq(found[3], -1);

	const char *strings[] = {"read", "libc.so.6"};
	uint64_t frames[][PYU_NATIVE_FIELDS] = {
		{0x1000, 0x8000, 0, 0, 0, 1, 2, 0}, // thread 0
		{0x1100, 0x8100, 0, 0, 0, 1, 2, 0},
		{0x2000, 0x9000, 0, 0, 0, 3, 2, 0}, // thread 1: string 3 of 2
		{0x3000, 0xa000, 0, 0, 0, 1, 2, 0}, // thread 7: not in the snapshot
	};
	uint32_t threads[] = {0, 1, 7}, counts[] = {2, 1, 1};
	ck_assert_ptr_null(pyu_stacks_set_native_threads(s, threads, counts, 3, &frames[0][0],
							 strings, 2));
	ck_assert_uint_eq(s->threads[0].native_count, 2);
	ck_assert_uint_eq(s->threads[0].native[1].sp, 0x8100);
	ck_assert_str_eq(s->threads[0].native[1].function, "read");
	ck_assert_ptr_null(s->threads[0].native_error);
	ck_assert_uint_eq(s->threads[1].native_count, 0);
	ck_assert_ptr_nonnull(s->threads[1].native_error);
	ck_assert_ptr_nonnull(strstr(s->threads[1].native_error, "string"));

	// Bad arguments set nothing.
	struct pyu_error *bad = pyu_stacks_set_native_threads(s, threads, counts, 1, NULL,
							      strings, 2);
	ck_assert_int_eq(pyu_error_code(bad), PYU_ERR_ARGUMENT);
	pyu_error_destroy(bad);
	ck_assert_uint_eq(s->threads[0].native_count, 2);
	bad = pyu_stacks_set_native_threads(s, NULL, counts, 1, &frames[0][0], strings, 2);
	ck_assert_int_eq(pyu_error_code(bad), PYU_ERR_ARGUMENT);
	pyu_error_destroy(bad);
	ck_assert_ptr_null(pyu_stacks_set_native_threads(s, NULL, NULL, 0, NULL, NULL, 0));
	pyu_stacks_destroy(s);
}
END_TEST

// Markers must go outward; one missing marker, or an unreadable Python frame, stops the merge.
START_TEST(test_bad_markers)
{
	uint64_t markers[] = {0xa250, 0xa150};
	struct pyu_stacks *s = snapshot(PYU_PLACE_BY_ENTRY_FRAME, markers, 2);
	for (uint64_t sp = 0xa000; sp < 0xa500; sp += 0x100)
		native(s, sp, 0, "f", "x.so");
	merged(s, true, false, "P0 P1 N0 N1 N2 N3 N4");
	s->threads[0].frames[0].entry_marker = 0xa150;
	s->threads[0].frames[1].entry_marker = 0;
	merged(s, true, false, "P0 P1 N0 N1 N2 N3 N4");
	s->threads[0].frames[1].entry_marker = 0xa350;
	merged(s, true, true, "N0 P0 N1 N2 P1 N3 N4");
	s->threads[0].frames[1].kind = PYU_FRAME_ERROR;
	merged(s, true, false, "P0 P1 N0 N1 N2 N3 N4");
	pyu_stacks_destroy(s);
}
END_TEST

// <= 3.10: one eval call per Python frame, by symbol; a count mismatch is not merged.
START_TEST(test_eval_symbol)
{
	struct pyu_stacks *s = snapshot(PYU_PLACE_BY_EVAL_SYMBOL, NULL, 2);
	native(s, 0x100, 0, "select", "libc.so.6");
	native(s, 0x200, 0, "_PyEval_EvalFrameDefault", "libpython3.9.so");
	native(s, 0x300, 0, "_PyFunction_Vectorcall", "libpython3.9.so");
	native(s, 0x400, 0, "_PyEval_EvalFrameDefault.cold", "libpython3.9.so");
	native(s, 0x500, 0, "main", "python3.9");
	merged(s, false, true, "N0 P0 P1 N4");
	merged(s, true, true, "N0 P0 N1 N2 P1 N3 N4");
	s->threads[0].frame_count = 1;
	merged(s, false, false, "P0 N0 N4");
	pyu_stacks_destroy(s);
}
END_TEST

// No native frames (the unwinder failed): one reason, the Python frames alone.
START_TEST(test_no_native)
{
	struct pyu_stacks *s = snapshot(PYU_PLACE_BY_ENTRY_FRAME, NULL, 1);
	ck_assert_ptr_null(pyu_stacks_set_native_error(s, 0, "ptrace refused"));
	struct pyu_merge m;
	ck_assert_ptr_null(pyu_merge_thread(s, &s->threads[0], false, &m));
	ck_assert(!m.merged);
	ck_assert_ptr_nonnull(strstr(m.reason, "ptrace refused"));
	ck_assert_uint_eq(m.count, 1);
	pyu_merge_release(&m);
	struct pyu_error *err = pyu_stacks_add_native_frame(s, 7, 0, 0, 0, NULL, NULL, NULL, -1);
	ck_assert_int_eq(pyu_error_code(err), PYU_ERR_NOT_FOUND);
	pyu_error_destroy(err);
	pyu_stacks_destroy(s);
}
END_TEST

// --native hides the interpreter's own frames only: a C extension's function named like
// plumbing (_testcapi's test_pyobject_vectorcall) between two Python frames stays, and so do
// its nameless frames; the same names in the interpreter's image are hidden.
START_TEST(test_extension_vectorcall)
{
	uint64_t markers[] = {0xa150, 0xa650};
	struct pyu_stacks *s = snapshot(PYU_PLACE_BY_ENTRY_FRAME, markers, 2);
	native(s, 0xa000, 0, "futex_wait", "libc.so.6");                 // N0
	native(s, 0xa100, 0, NULL, "libpython3.12.so");                  // N1 eval (callee)
	native(s, 0xa200, 0, "_PyObject_VectorcallTstate", "libpython3.12.so"); // N2 plumbing
	native(s, 0xa300, 0, "PyObject_Vectorcall", "libpython3.12.so"); // N3 plumbing
	native(s, 0xa400, 0, "test_pyobject_vectorcall", "_testcapi.so"); // N4 the extension's
	native(s, 0xa500, 0, NULL, "_testcapi.so");                      // N5 nameless, its own
	native(s, 0xa600, 0, NULL, "libpython3.12.so");                  // N6 eval (caller)
	native(s, 0xa700, 0, "cfunction_vectorcall_O", "libpython3.12.so"); // N7 plumbing
	native(s, 0xa800, 0, "main", "python3");                         // N8
	merged(s, false, true, "N0 P0 N4 N5 P1 N8");
	merged(s, true, true, "N0 P0 N1 N2 N3 N4 N5 P1 N6 N7 N8");
	pyu_stacks_destroy(s);
}
END_TEST

START_TEST(test_plumbing_names)
{
	ck_assert(pyu_native_is_plumbing("_PyEval_EvalFrameDefault"));
	ck_assert(pyu_native_is_plumbing("PyEval_EvalFrameEx"));
	ck_assert(pyu_native_is_plumbing("method_vectorcall_O"));
	ck_assert(pyu_native_is_plumbing("PyObject_Call"));
	ck_assert(pyu_native_is_plumbing("_TAIL_CALL_CALL_PY_EXACT_ARGS.llvm.123"));
	ck_assert(!pyu_native_is_plumbing("qsort"));
	ck_assert(!pyu_native_is_plumbing("builtin_sorted"));
	ck_assert(!pyu_native_is_plumbing(NULL));
}
END_TEST

// One numbering: inlined calls share the number of the frame they are inlined in, frames a
// debugger made up for tail calls are neither numbered nor shown; the steps py-up takes are
// the Python frames (a debugger level selects the innermost one its eval call runs).
START_TEST(test_numbers_and_steps)
{
	uint64_t markers[] = {0x9480};
	struct pyu_stacks *s = snapshot(PYU_PLACE_BY_ENTRY_FRAME, markers, 1);
	native(s, 0x9000, 0x9100, "futex_common64", "libc.so.6");         // N0 #0 inlined
	ck_assert_ptr_null(pyu_stacks_set_native_kind(s, 0, PYU_NATIVE_INLINE));
	native(s, 0x9000, 0x9100, "futex_common", "libc.so.6");           // N1 #0
	native(s, 0x9100, 0x9200, "do_futex_wait", "libc.so.6");          // N2 tail call
	ck_assert_ptr_null(pyu_stacks_set_native_kind(s, 0, PYU_NATIVE_ARTIFICIAL));
	native(s, 0x9100, 0x9200, "sem_wait_slow", "libc.so.6");          // N3 #1
	native(s, 0x9200, 0x9300, "lock_acquire", "mod.so");              // N4 #2
	native(s, 0x9400, 0x9500, "_PyEval_EvalFrameDefault", "python3"); // N5 #3 eval
	native(s, 0x9500, 0x9600, "main", "python3");                     // N6 #4
	const struct pyu_thread_info *th = &s->threads[0];
	const uint32_t want[] = {0, 0, 1, 1, 2, 3, 4};
	for (uint32_t k = 0; k < 7; k++)
		ck_assert_uint_eq(th->native[k].number, want[k]);
	merged(s, false, true, "N0 N1 N3 N4 P0 N6");
	merged(s, true, true, "N0 N1 N3 N4 P0 N5 N6");
	struct pyu_error *bad = pyu_stacks_set_native_kind(s, 0, 7); // unknown kind: an error
	ck_assert_ptr_nonnull(bad);
	pyu_error_destroy(bad);
	int64_t steps[4];
	uint32_t n = 0;
	ck_assert_ptr_null(pyu_stacks_frame_steps(s, 0, steps, 4, &n));
	ck_assert_uint_eq(n, 1);
	ck_assert_int_eq(steps[0], 0);
	ck_assert_int_eq(pyu_stacks_level_step(s, 0, 5), 0);          // the eval call: #0
	ck_assert_int_eq(pyu_stacks_level_step(s, 0, 4), PYU_ABSENT); // another native frame
	ck_assert_int_eq(pyu_stacks_cython_line(s, 0, 4), PYU_ABSENT);
	ck_assert_ptr_null(pyu_stacks_cython_string(s, 0, 4, PYU_CYSTR_FILE));
	char *text = NULL;
	struct pyu_error *err = pyu_format_cython_frame(s, 0, 4, PYU_TASK_LINE, 0, 0, 0, &text);
	ck_assert_ptr_nonnull(err);
	ck_assert_int_eq(pyu_error_code(err), PYU_ERR_NOT_FOUND);
	pyu_error_destroy(err);
	pyu_stacks_destroy(s);
}
END_TEST

static Suite *native_suite(void)
{
	Suite *s = suite_create("native");
	TCase *tc = tcase_create("merge");
	tcase_add_test(tc, test_entry_frames);
	tcase_add_test(tc, test_inline_frames);
	tcase_add_test(tc, test_frames_in_one_call);
	tcase_add_test(tc, test_threads_in_one_call);
	tcase_add_test(tc, test_cut_stack);
	tcase_add_test(tc, test_bad_markers);
	tcase_add_test(tc, test_eval_symbol);
	tcase_add_test(tc, test_no_native);
	tcase_add_test(tc, test_extension_vectorcall);
	tcase_add_test(tc, test_plumbing_names);
	tcase_add_test(tc, test_numbers_and_steps);
	suite_add_tcase(s, tc);
	return s;
}

PYU_CHECK_MAIN(native_suite)
