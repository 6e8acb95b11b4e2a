// check_layout.c - the per-version tables and the _Py_DebugOffsets parser: every static table
// passes validation; blocks carrying the values the real 3.13.0, 3.14.10 and 3.15.2 builds
// store reproduce the static tables (3.13's was generated from DWARF, so this cross-checks the
// generator against the documented debug offsets); changed, out-of-bounds, truncated and
// unknown-version blocks give notes or clear errors.
#include <stdio.h>

#include "checkmain.h"
#include "layout.h"

#include "dbgoffsets.h"

// Overwrites word @word of a block, for targeted corruption.
static void set_word(uint8_t *buf, size_t word, uint64_t v)
{
	memcpy(buf + 8 * word, &v, 8);
}

START_TEST(test_static_tables_validate)
{
	const struct pyu_layout *all[] = {
		&pyu_layout_py27,  &pyu_layout_py36,  &pyu_layout_py37,  &pyu_layout_py38,
		&pyu_layout_py39,  &pyu_layout_py310, &pyu_layout_py311, &pyu_layout_py312,
		&pyu_layout_py313, &pyu_layout_py314, &pyu_layout_py315,
	};
	for (size_t i = 0; i < sizeof(all) / sizeof(all[0]); i++) {
		struct pyu_error *err = pyu_layout_validate(all[i]);
		ck_assert_msg(err == NULL, "%s: %s", all[i]->name, pyu_error_message(err));
		ck_assert_ptr_eq(pyu_layout_for_version(all[i]->version_hex | 0x0af0), all[i]);
		struct pyu_layout copy = *all[i];
		pyu_layout_apply_trace_refs(&copy);
		ck_assert_int_eq(copy.ob_type, all[i]->ob_type + 16);
		ck_assert_int_eq(copy.tstate.next, all[i]->tstate.next); // not an object
		err = pyu_layout_validate(&copy);
		ck_assert_msg(err == NULL, "%s+trace refs: %s", all[i]->name,
			      pyu_error_message(err));
	}
	ck_assert_ptr_null(pyu_layout_for_version(0x030500f0));
	ck_assert_ptr_null(pyu_layout_for_version(0x031000f0));
	ck_assert_ptr_null(pyu_layout_for_version(0x020600f0));
	// Facts the walker depends on, spot-checked against the internals doc.
	ck_assert_int_eq(pyu_layout_py27.code.firstlineno, 96);
	ck_assert_int_eq(pyu_layout_py310.frame.f_lasti, 96);
	ck_assert_int_eq(pyu_layout_py311.tstate.cframe_current, 8);
	ck_assert_int_eq(pyu_layout_py312.tstate.cframe_current, 0);
	ck_assert_int_eq(pyu_layout_py312.code.code_adaptive, 192);
	ck_assert_int_eq(pyu_layout_py311.runtime.tstate_current, 576);
	ck_assert_int_eq(pyu_layout_py37.runtime.tstate_current, 1480);
	ck_assert_int_eq(pyu_layout_py36.unicode.ascii_size, 48);
}
END_TEST

static void check_matches(const uint64_t *vals, size_t n, const struct pyu_layout *want)
{
	uint8_t buf[PYU_DEBUG_OFFSETS_MAX];
	size_t len = make_block(buf, vals, n);
	struct pyu_layout l;
	bool ft = true;
	char notes[512] = "x";
	struct pyu_error *err = pyu_layout_from_debug_offsets(buf, len, &l, &ft, notes,
							      sizeof(notes));
	ck_assert_msg(err == NULL, "%s: %s", want->name, pyu_error_message(err));
	ck_assert_msg(notes[0] == '\0', "%s: unexpected notes: %s", want->name, notes);
	ck_assert(!ft);
	ck_assert_str_eq(l.name, want->name);
	ck_assert_int_eq(l.runtime.interpreters_head, want->runtime.interpreters_head);
	ck_assert_int_eq(l.interp.threads_head, want->interp.threads_head);
	ck_assert_int_eq(l.interp.next, want->interp.next);
	ck_assert_int_eq(l.interp.gil_locked, want->interp.gil_locked);
	ck_assert_int_eq(l.interp.gil_holder, want->interp.gil_holder);
	ck_assert_int_eq(l.tstate.current_frame, want->tstate.current_frame);
	ck_assert_int_eq(l.tstate.base_frame, want->tstate.base_frame);
	ck_assert_int_eq(l.tstate.thread_id, want->tstate.thread_id);
	ck_assert_int_eq(l.tstate.native_thread_id, want->tstate.native_thread_id);
	ck_assert_int_ne(l.tstate.c_tracefunc, PYU_NO_FIELD);
	ck_assert_int_eq(l.tstate.c_tracefunc, want->tstate.c_tracefunc);
	ck_assert_int_eq(l.tstate.c_profilefunc, want->tstate.c_profilefunc);
	ck_assert_int_eq(l.iframe.owner, want->iframe.owner);
	ck_assert_int_eq(l.iframe.size, want->iframe.size);
	ck_assert_int_eq(l.code.code_adaptive, want->code.code_adaptive);
	ck_assert_int_eq(l.code.qualname, want->code.qualname);
	ck_assert_int_eq(l.tuple_item, want->tuple_item);
	ck_assert_int_eq(l.unicode.ascii_size, want->unicode.ascii_size);
	ck_assert_int_eq(l.unicode.data, want->unicode.data);
	ck_assert_int_eq(l.stackref_mask, want->stackref_mask);
	ck_assert_ptr_null(pyu_layout_validate(&l));
}

START_TEST(test_debug_offsets_match_static)
{
	check_matches(dbg_313, sizeof(dbg_313) / 8, &pyu_layout_py313);
	check_matches(dbg_314, sizeof(dbg_314) / 8, &pyu_layout_py314);
	check_matches(dbg_315, sizeof(dbg_315) / 8, &pyu_layout_py315);
	ck_assert_uint_eq(sizeof(dbg_313), 584);
	ck_assert_uint_eq(sizeof(dbg_314), 760);
	ck_assert_uint_eq(sizeof(dbg_315), 888);
}
END_TEST

START_TEST(test_debug_offsets_prefer_target)
{
	uint8_t buf[PYU_DEBUG_OFFSETS_MAX];
	size_t len = make_block(buf, dbg_314, sizeof(dbg_314) / 8);
	set_word(buf, 26, 96); // thread_state.current_frame: 72 -> 96
	struct pyu_layout l;
	char notes[512];
	struct pyu_error *err = pyu_layout_from_debug_offsets(buf, len, &l, NULL, notes,
							      sizeof(notes));
	ck_assert_ptr_null(err);
	ck_assert_int_eq(l.tstate.current_frame, 96);
	ck_assert_msg(strstr(notes, "thread_state.current_frame"), "%s", notes);
	// The thread state moved: the static table's unpublished fields are not trusted.
	ck_assert_int_eq(l.tstate.c_tracefunc, PYU_NO_FIELD);
	ck_assert_int_eq(l.tstate.c_profilefunc, PYU_NO_FIELD);
	// Free-threaded flag.
	set_word(buf, 2, 1);
	bool ft = false;
	ck_assert_ptr_null(pyu_layout_from_debug_offsets(buf, len, &l, &ft, NULL, 0));
	ck_assert(ft);
}
END_TEST

static void expect_error(uint8_t *buf, size_t len, int32_t code, const char *part)
{
	struct pyu_layout l;
	memset(&l, 0x5a, sizeof(l));
	struct pyu_layout before = l;
	struct pyu_error *err = pyu_layout_from_debug_offsets(buf, len, &l, NULL, NULL, 0);
	ck_assert_ptr_nonnull(err);
	ck_assert_int_eq(pyu_error_code(err), code);
	ck_assert_msg(strstr(pyu_error_message(err), part), "%s", pyu_error_message(err));
	ck_assert_mem_eq(&l, &before, sizeof(l)); // untouched on error
	pyu_error_destroy(err);
}

START_TEST(test_debug_offsets_errors)
{
	uint8_t buf[PYU_DEBUG_OFFSETS_MAX];
	size_t len = make_block(buf, dbg_315, sizeof(dbg_315) / 8);
	expect_error(buf, 100, PYU_ERR_CORRUPT, "bytes read");
	expect_error(buf, 10, PYU_ERR_CORRUPT, "cookie");
	set_word(buf, 30, 5000); // thread_state.thread_id far outside the 888-byte struct
	expect_error(buf, len, PYU_ERR_CORRUPT, "thread_state.thread_id");
	len = make_block(buf, dbg_315, sizeof(dbg_315) / 8);
	set_word(buf, 39, 1u << 20); // interpreter_frame.size: absurd
	expect_error(buf, len, PYU_ERR_CORRUPT, "interpreter_frame.size");
	len = make_block(buf, dbg_315, sizeof(dbg_315) / 8);
	set_word(buf, 1, 0x031000a1); // 3.16.0a1: a field list we do not know
	expect_error(buf, len, PYU_ERR_UNSUPPORTED, "3.16");
	len = make_block(buf, dbg_315, sizeof(dbg_315) / 8);
	buf[0] = 'X';
	expect_error(buf, len, PYU_ERR_CORRUPT, "cookie");
}
END_TEST

// A free-threaded 3.14 block (values as its header implies, not measured on a live process):
// the object header is 32 bytes, frames and code objects carry bytecode-copy fields.
START_TEST(test_debug_offsets_free_threaded)
{
	uint8_t buf[PYU_DEBUG_OFFSETS_MAX];
	size_t len = make_block(buf, dbg_314, sizeof(dbg_314) / 8);
	set_word(buf, 2, 1);    // free_threaded
	set_word(buf, 38, 72);  // interpreter_frame.tlbc_index
	set_word(buf, 39, 232); // code_object.size
	set_word(buf, 48, 224); // code_object.co_code_adaptive
	set_word(buf, 49, 216); // code_object.co_tlbc
	set_word(buf, 51, 24);  // pyobject.ob_type
	set_word(buf, 50, 32);  // pyobject.size
	struct pyu_layout l;
	bool ft = false;
	char notes[512];
	struct pyu_error *err = pyu_layout_from_debug_offsets(buf, len, &l, &ft, notes,
							      sizeof(notes));
	ck_assert_msg(err == NULL, "%s", pyu_error_message(err));
	ck_assert(ft);
	ck_assert_int_eq(l.ob_type, 24);
	ck_assert_int_eq(l.iframe.tlbc_index, 72);
	ck_assert_int_eq(l.code.tlbc, 216);
	ck_assert_int_eq(l.code.code_adaptive, 224);
	ck_assert_int_eq(l.code.firsttraceable, pyu_layout_py314.code.firsttraceable + 16);
	ck_assert_int_eq(l.unicode.state_shift, 6);
	ck_assert_int_eq(l.stackref_mask, 1);
	ck_assert_msg(strstr(notes, "object header"), "%s", notes);
	// The default build of the same release has neither.
	len = make_block(buf, dbg_314, sizeof(dbg_314) / 8);
	ck_assert_ptr_null(pyu_layout_from_debug_offsets(buf, len, &l, &ft, NULL, 0));
	ck_assert(!ft);
	ck_assert_int_eq(l.iframe.tlbc_index, PYU_NO_FIELD);
	ck_assert_int_eq(l.unicode.state_shift, 0);
	ck_assert_int_eq(l.unicode.compact_size, 56);
}
END_TEST

static Suite *layout_suite(void)
{
	Suite *s = suite_create("layout");
	TCase *tc = tcase_create("layout");
	tcase_add_test(tc, test_static_tables_validate);
	tcase_add_test(tc, test_debug_offsets_match_static);
	tcase_add_test(tc, test_debug_offsets_prefer_target);
	tcase_add_test(tc, test_debug_offsets_errors);
	tcase_add_test(tc, test_debug_offsets_free_threaded);
	suite_add_tcase(s, tc);
	return s;
}

PYU_CHECK_MAIN(layout_suite)
