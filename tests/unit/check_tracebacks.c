// check_tracebacks.c - reading a handled exception's traceback (tracebacks.c) from synthetic
// interpreters of each version: Python entries take tb_lineno or, where the interpreter left it
// to be computed (-1), the line table at tb_lasti; Cython's entries (.pyx code, an empty or
// fake line table) take tb_lineno, else the frame's f_lineno, else co_firstlineno, never the
// line table; damage (unreadable frames, a cyclic chain) ends the list with the reason.
#include "checkmain.h"
#include "fakepy.h"
#include "cython.h"
#include "tracebacks.h"
#include "value_layout.h"

static const uint32_t versions[] = {0x020712f0, 0x03060ff0, 0x030a0df0, 0x030b07f0,
				    0x030c01f0, 0x030d00f0, 0x030e0af0, 0x030f02f0};
#define NVERSIONS (sizeof(versions) / sizeof(versions[0]))

// A frame object running @code, with f_lineno @lineno (its interpreter frame on 3.11+).
static uint64_t frame_object(struct fake_py *p, const struct pyu_value_layout *vl, uint64_t code,
			     int32_t lineno)
{
	struct fakemem *m = &p->m;
	const struct pyu_layout *l = p->l;
	uint64_t f = fm_alloc(m, (size_t)l->frame.size);
	if (vl->frame_iframe != PYU_NO_FIELD) {
		uint64_t iframe = fp_iframe_at(p, fm_alloc(m, (size_t)l->iframe.size), code, 0, 0,
					       0);
		fm_u64(m, f + (uint64_t)vl->frame_iframe, iframe);
	} else {
		fm_u64(m, f + (uint64_t)l->frame.f_code, code);
	}
	fm_u32(m, f + (uint64_t)l->frame.f_lineno, (uint32_t)lineno);
	return f;
}

static uint64_t tb_entry(struct fake_py *p, const struct pyu_value_layout *vl, uint64_t frame,
			 int32_t lasti, int32_t lineno, uint64_t next)
{
	struct fakemem *m = &p->m;
	uint64_t tb = fm_alloc(m, 64);
	fm_u64(m, tb + (uint64_t)vl->tb.next, next);
	fm_u64(m, tb + (uint64_t)vl->tb.frame, frame);
	fm_u32(m, tb + (uint64_t)vl->tb.lasti, (uint32_t)lasti);
	fm_u32(m, tb + (uint64_t)vl->tb.lineno, (uint32_t)lineno);
	return tb;
}

// Code made by Cython's __Pyx_AddTraceback: named after the .pyx, its firstlineno the error
// line; the line table fp_code writes would say otherwise at any offset.
static uint64_t cython_code(struct fake_py *p, const char *name, int32_t firstlineno)
{
	uint64_t code = fp_code(p, name, firstlineno, 4);
	fm_u64(&p->m, code + (uint64_t)p->l->code.filename, fm_str(&p->m, "cymod.pyx"));
	return code;
}

static void expect(const struct pyu_tb_entry *e, const char *file, const char *function,
		   int64_t line, enum pyu_tb_line_from from, bool cython)
{
	ck_assert_str_eq(e->file, file);
	ck_assert_str_eq(e->function, function);
	ck_assert_int_eq(e->line, line);
	ck_assert_int_eq(e->line_from, from);
	ck_assert_int_eq(e->cython, cython);
}

START_TEST(test_lines)
{
	struct fake_py p;
	fp_init(&p, versions[_i]);
	const struct pyu_value_layout *vl = pyu_value_layout_for_version(versions[_i]);
	ck_assert_ptr_nonnull(vl);
	uint64_t run = fp_code(&p, "run", 10, 8); // unit k is line 11 + k
	uint64_t outer = cython_code(&p, "cymod.boom_outer", 72);
	uint64_t boom = cython_code(&p, "cymod.boom", 67);
	uint64_t deep = cython_code(&p, "cymod.deep", 30);
	// innermost last, as extract_tb lists them
	uint64_t t4 = tb_entry(&p, vl, frame_object(&p, vl, deep, 0), 6, -1, 0);
	uint64_t t3 = tb_entry(&p, vl, frame_object(&p, vl, boom, 68), 6, -1, t4);
	uint64_t t2 = tb_entry(&p, vl, frame_object(&p, vl, outer, 72), 6, 72, t3);
	uint64_t t1 = tb_entry(&p, vl, frame_object(&p, vl, run, 0), 6, -1, t2);
	uint64_t t0 = tb_entry(&p, vl, frame_object(&p, vl, run, 0), 2, 12, t1);
	struct pyu_traceback tb;
	ck_assert_ptr_null(pyu_traceback_read(p.m.t, p.l, vl, t0, &tb));
	ck_assert_ptr_null(tb.error);
	ck_assert_uint_eq(tb.count, 5);
	expect(&tb.entries[0], "/src/app.py", "run", 12, PYU_TB_LINE_TB_LINENO, false);
	expect(&tb.entries[1], "/src/app.py", "run", 14, PYU_TB_LINE_BYTECODE, false);
	expect(&tb.entries[2], "cymod.pyx", "cymod.boom_outer", 72, PYU_TB_LINE_TB_LINENO, true);
	// f_lineno as Cython set it, not the table (14) nor co_firstlineno
	expect(&tb.entries[3], "cymod.pyx", "cymod.boom", 68, PYU_TB_LINE_F_LINENO, true);
	expect(&tb.entries[4], "cymod.pyx", "cymod.deep", 30, PYU_TB_LINE_FIRSTLINENO, true);
	pyu_traceback_clear(&tb);
	fm_destroy(&p.m);
}
END_TEST

START_TEST(test_damage)
{
	struct fake_py p;
	fp_init(&p, versions[_i]);
	const struct pyu_value_layout *vl = pyu_value_layout_for_version(versions[_i]);
	uint64_t run = fp_code(&p, "run", 10, 8);
	// an entry whose frame is not in memory ends the list after the entries before it
	uint64_t bad = tb_entry(&p, vl, 0xdead000, 0, 5, 0);
	uint64_t t0 = tb_entry(&p, vl, frame_object(&p, vl, run, 0), 2, 12, bad);
	struct pyu_traceback tb;
	ck_assert_ptr_null(pyu_traceback_read(p.m.t, p.l, vl, t0, &tb));
	ck_assert_uint_eq(tb.count, 1);
	ck_assert_ptr_nonnull(tb.error);
	ck_assert_msg(strstr(tb.error, "frame object at 0xdead000"), "%s", tb.error);
	pyu_traceback_clear(&tb);
	// a cycle stops at the bound
	uint64_t loop = tb_entry(&p, vl, frame_object(&p, vl, run, 0), 2, 12, 0);
	fm_u64(&p.m, loop + (uint64_t)vl->tb.next, loop);
	ck_assert_ptr_null(pyu_traceback_read(p.m.t, p.l, vl, loop, &tb));
	ck_assert_uint_eq(tb.count, PYU_TB_MAX);
	ck_assert_msg(strstr(tb.error, "more than"), "%s", tb.error);
	pyu_traceback_clear(&tb);
	// an unreadable first entry: nothing, and why
	ck_assert_ptr_null(pyu_traceback_read(p.m.t, p.l, vl, 0x10, &tb));
	ck_assert_uint_eq(tb.count, 0);
	ck_assert_ptr_nonnull(tb.error);
	pyu_traceback_clear(&tb);
	fm_destroy(&p.m);
}
END_TEST

START_TEST(test_is_cython_file)
{
	ck_assert(pyu_cython_is_pyx_file("/a/cymod.pyx"));
	ck_assert(pyu_cython_is_pyx_file("cymod.pxd"));
	ck_assert(pyu_cython_is_pyx_file("inc.pxi"));
	ck_assert(!pyu_cython_is_pyx_file("/a/cymod.py"));
	ck_assert(!pyu_cython_is_pyx_file("pyx"));
	ck_assert(!pyu_cython_is_pyx_file(NULL));
}
END_TEST

static Suite *tracebacks_suite(void)
{
	Suite *s = suite_create("tracebacks");
	TCase *tc = tcase_create("tracebacks");
	tcase_add_loop_test(tc, test_lines, 0, NVERSIONS);
	tcase_add_loop_test(tc, test_damage, 0, NVERSIONS);
	tcase_add_test(tc, test_is_cython_file);
	suite_add_tcase(s, tc);
	return s;
}

PYU_CHECK_MAIN(tracebacks_suite)
