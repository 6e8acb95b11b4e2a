// check_view.c - the snapshot as plain values (view.c), on hand-built snapshots: thread and
// frame fields with absent values, error frames and their reasons, code objects' names,
// batches of frames, a recursion's runs of frames and their comparison with kept rows, the
// interpreter's version and build, and bad indexes.
#include <stdlib.h>
#include <string.h>

#include "checkmain.h"
#include "stacks.h"

static struct pyu_frame_info frame(int32_t code, int32_t line, int32_t col, int64_t off,
				   uint64_t addr)
{
	struct pyu_frame_info f = {PYU_FRAME_PYTHON, code, {line, line, col, col + 3}, off, addr,
				   NULL};
	return f;
}

START_TEST(test_fields)
{
	struct pyu_code_info codes[] = {
		{0xc0de0, "f", "C.f", "/x.py", 3, PYU_LOCATIONS_311, NULL, 0, 0},
		{0xc0de8, "<module>", NULL, "/y.py", 1, PYU_LOCATIONS_311, NULL, 0, 0},
	};
	struct pyu_frame_info frames[400];
	for (uint32_t i = 0; i < 400; i++)
		frames[i] = frame(i % 2, (int32_t)(10 + i), 4, 2 * i, 0x7000 + 0x50 * i);
	frames[1].loc = (struct pyu_location){PYU_NO_LINE, PYU_NO_LINE, PYU_NO_COLUMN,
					      PYU_NO_COLUMN};
	frames[1].instruction_offset = -1;
	frames[2] = (struct pyu_frame_info){PYU_FRAME_ERROR, -1, {0, 0, 0, 0}, -1, 0x9000,
					    (char *)"frame at 0x9000 not in core"};
	frames[3].code = 9; // out of range: an error frame, as the documents show it
	struct pyu_thread_info threads[2] = {
		{.thread_id = 0x7f00, .native_thread_id = 42, .holds_gil = 1, .interpreter_id = 0,
		 .tstate_address = 0x5000, .frames = frames, .frame_count = 400},
		{.thread_id = 0x7f01, .native_thread_id = -1, .holds_gil = -1,
		 .interpreter_id = -1, .tstate_address = 0x5100, .inner = 1},
	};
	struct pyu_stacks s;
	memset(&s, 0, sizeof(s));
	strcpy(s.version, "3.12.1");
	s.hexversion = 0x030c01f0;
	s.debug_build = true;
	s.codes = codes;
	s.code_count = 2;
	s.threads = threads;
	s.thread_count = 2;

	ck_assert_str_eq(pyu_stacks_version(&s), "3.12.1");
	ck_assert_uint_eq(pyu_stacks_hexversion(&s), 0x030c01f0);
	ck_assert_uint_eq(pyu_stacks_build_flags(&s), 1);
	int64_t t[PYU_THREAD_FIELDS + 2];
	ck_assert_uint_eq(pyu_stacks_thread_fields(&s, 0, t, PYU_THREAD_FIELDS + 2),
			  PYU_THREAD_FIELDS);
	int64_t want0[] = {0x7f00, 42, 1, 0, 0x5000, 400, 0};
	ck_assert_mem_eq(t, want0, sizeof(want0));
	ck_assert_uint_eq(pyu_stacks_thread_fields(&s, 1, t, PYU_THREAD_FIELDS),
			  PYU_THREAD_FIELDS);
	int64_t want1[] = {0x7f01, PYU_ABSENT, PYU_ABSENT, PYU_ABSENT, 0x5100, 0, 1};
	ck_assert_mem_eq(t, want1, sizeof(want1));
	ck_assert_uint_eq(pyu_stacks_thread_fields(&s, 2, t, PYU_THREAD_FIELDS), 0);
	ck_assert_uint_eq(pyu_stacks_thread_fields(NULL, 0, t, PYU_THREAD_FIELDS), 0);
	ck_assert_uint_eq(pyu_stacks_thread_fields(&s, 0, t, 2), 2); // a prefix only

	int64_t *f = malloc(400 * PYU_FRAME_FIELDS * sizeof(*f));
	ck_assert_ptr_nonnull(f);
	// In batches, as a binding reads them; the last one short.
	uint32_t got = 0;
	while (got < 400) {
		uint32_t n = pyu_stacks_frame_fields(&s, 0, got, 150, f + got * PYU_FRAME_FIELDS);
		ck_assert_uint_eq(n, 400 - got < 150 ? 400 - got : 150);
		got += n;
	}
	ck_assert_uint_eq(pyu_stacks_frame_fields(&s, 0, 400, 1, f), 0);
	ck_assert_uint_eq(pyu_stacks_frame_fields(&s, 1, 0, 1, f), 0);
	int64_t w0[] = {0, 0, 10, 10, 4, 7, 0, 0x7000};
	ck_assert_mem_eq(f, w0, sizeof(w0));
	int64_t w1[] = {0, 1, PYU_ABSENT, PYU_ABSENT, PYU_ABSENT, PYU_ABSENT, PYU_ABSENT, 0x7050};
	ck_assert_mem_eq(f + PYU_FRAME_FIELDS, w1, sizeof(w1));
	int64_t w2[] = {1, -1, PYU_ABSENT, PYU_ABSENT, PYU_ABSENT, PYU_ABSENT, PYU_ABSENT, 0x9000};
	ck_assert_mem_eq(f + 2 * PYU_FRAME_FIELDS, w2, sizeof(w2));
	ck_assert_int_eq(f[3 * PYU_FRAME_FIELDS], 1);
	int64_t w399[] = {0, 1, 409, 409, 4, 7, 798, 0x7000 + 0x50 * 399};
	ck_assert_mem_eq(f + 399 * PYU_FRAME_FIELDS, w399, sizeof(w399));
	free(f);
	ck_assert_ptr_null(pyu_stacks_frame_reason(&s, 0, 0));
	ck_assert_str_eq(pyu_stacks_frame_reason(&s, 0, 2), "frame at 0x9000 not in core");
	ck_assert_str_eq(pyu_stacks_frame_reason(&s, 0, 3), "no code object");
	ck_assert_ptr_null(pyu_stacks_frame_reason(&s, 0, 400));

	ck_assert_uint_eq(pyu_stacks_code_count(&s), 2);
	ck_assert_str_eq(pyu_stacks_code_string(&s, 0, 0), "f");
	ck_assert_str_eq(pyu_stacks_code_string(&s, 0, 1), "C.f");
	ck_assert_str_eq(pyu_stacks_code_string(&s, 0, 2), "/x.py");
	ck_assert_ptr_null(pyu_stacks_code_string(&s, 1, 1));
	ck_assert_ptr_null(pyu_stacks_code_string(&s, 0, 3));
	ck_assert_ptr_null(pyu_stacks_code_string(&s, 2, 0));
	ck_assert_uint_eq(pyu_stacks_code_address(&s, 1), 0xc0de8);
	ck_assert_uint_eq(pyu_stacks_code_address(&s, 2), 0);
}
END_TEST

// A recursion's frames (the same fields, addresses apart), as a binding's comparison sees
// them: pyu_stacks_frame_fields gives each its own fields, and pyu_stacks_frames_match says
// how many, from the first, equal the rows kept, code indexes read through the keys given.
START_TEST(test_runs_and_match)
{
	struct pyu_code_info codes[] = {
		{0xc0de0, "rec", NULL, "/x.py", 3, PYU_LOCATIONS_311, NULL, 0, 0},
		{0xc0de8, "main", NULL, "/x.py", 1, PYU_LOCATIONS_311, NULL, 0, 0},
	};
	enum { N = 300 };
	struct pyu_frame_info frames[N];
	for (uint32_t i = 0; i < N; i++)
		frames[i] = frame(0, 7, 4, 20, 0x7000 + 0x50 * i);
	frames[100] = frame(0, 8, 4, 22, 0x7000 + 0x50 * 100); // another line inside the run
	frames[N - 1] = frame(1, 2, 0, 6, 0x9000);
	struct pyu_thread_info threads[1] = {
		{.thread_id = 1, .tstate_address = 0x5000, .frames = frames, .frame_count = N},
	};
	struct pyu_stacks s;
	memset(&s, 0, sizeof(s));
	s.codes = codes;
	s.code_count = 2;
	s.threads = threads;
	s.thread_count = 1;
	int64_t *f = malloc(N * PYU_FRAME_FIELDS * sizeof(*f));
	ck_assert_ptr_nonnull(f);
	ck_assert_uint_eq(pyu_stacks_frame_fields(&s, 0, 0, N, f), N);
	for (uint32_t i = 0; i < N; i++) {
		int64_t want[] = {0, i == N - 1, i == 100 ? 8 : i == N - 1 ? 2 : 7,
				  i == 100 ? 8 : i == N - 1 ? 2 : 7, i == N - 1 ? 0 : 4,
				  i == N - 1 ? 3 : 7, i == 100 ? 22 : i == N - 1 ? 6 : 20,
				  i == N - 1 ? 0x9000 : 0x7000 + 0x50 * i};
		ck_assert_mem_eq(f + i * PYU_FRAME_FIELDS, want, sizeof(want));
	}
	// Keys as a binding keeps them: the code index replaced by its own key.
	int64_t code_keys[] = {41, 42};
	for (uint32_t i = 0; i < N; i++)
		f[i * PYU_FRAME_FIELDS + 1] = code_keys[f[i * PYU_FRAME_FIELDS + 1]];
	ck_assert_uint_eq(pyu_stacks_frames_match(&s, 0, 0, N, f, code_keys, 2), N);
	ck_assert_uint_eq(pyu_stacks_frames_match(&s, 0, 0, N + 5, f, code_keys, 2), N);
	ck_assert_uint_eq(pyu_stacks_frames_match(&s, 0, 150, 10, f + 150 * PYU_FRAME_FIELDS,
						  code_keys, 2), 10);
	// A code object not the one kept, or not known to the caller: no match from there.
	int64_t other[] = {41, 43}, unknown[] = {41, -1};
	ck_assert_uint_eq(pyu_stacks_frames_match(&s, 0, 0, N, f, other, 2), N - 1);
	ck_assert_uint_eq(pyu_stacks_frames_match(&s, 0, 0, N, f, unknown, 2), N - 1);
	ck_assert_uint_eq(pyu_stacks_frames_match(&s, 0, 0, N, f, code_keys, 1), N - 1);
	// One field of one frame in the run, or past it, differs.
	f[200 * PYU_FRAME_FIELDS + 6]++;
	ck_assert_uint_eq(pyu_stacks_frames_match(&s, 0, 0, N, f, code_keys, 2), 200);
	f[200 * PYU_FRAME_FIELDS + 6]--;
	f[101 * PYU_FRAME_FIELDS + 7] += 8;
	ck_assert_uint_eq(pyu_stacks_frames_match(&s, 0, 0, N, f, code_keys, 2), 101);
	f[101 * PYU_FRAME_FIELDS + 7] -= 8;
	f[100 * PYU_FRAME_FIELDS + 2] = 7; // the line of the frame before it
	ck_assert_uint_eq(pyu_stacks_frames_match(&s, 0, 0, N, f, code_keys, 2), 100);
	// An error frame never matches; bad threads and indexes match nothing.
	frames[5] = (struct pyu_frame_info){PYU_FRAME_ERROR, -1, {0, 0, 0, 0}, -1, 0x7190, NULL};
	ck_assert_uint_eq(pyu_stacks_frames_match(&s, 0, 0, 50, f, code_keys, 2), 5);
	ck_assert_uint_eq(pyu_stacks_frames_match(&s, 1, 0, 1, f, code_keys, 2), 0);
	ck_assert_uint_eq(pyu_stacks_frames_match(&s, 0, N, 1, f, code_keys, 2), 0);
	ck_assert_uint_eq(pyu_stacks_frames_match(NULL, 0, 0, 1, f, code_keys, 2), 0);
	ck_assert_uint_eq(pyu_stacks_frames_match(&s, 0, 0, 1, NULL, code_keys, 2), 0);
	free(f);
}
END_TEST

static Suite *view_suite(void)
{
	Suite *s = suite_create("view");
	TCase *tc = tcase_create("fields");
	tcase_add_test(tc, test_fields);
	tcase_add_test(tc, test_runs_and_match);
	suite_add_tcase(s, tc);
	return s;
}

PYU_CHECK_MAIN(view_suite)
