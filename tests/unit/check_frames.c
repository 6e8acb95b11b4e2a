// check_frames.c - the thread and frame walker on synthetic interpreters built from each
// version's layout table: chains of PyFrameObjects (3.10) and of _PyInterpreterFrames (3.11 -
// 3.15, with shim frames, tagged pointers and 3.15's base frame), 1,000-deep recursion through
// one code object, and damage: cycles, truncated chains, bad code objects, instruction
// pointers outside the code, the depth limit, cyclic and unreadable thread lists.
#include <stdio.h>

#include "checkmain.h"
#include "fakepy.h"

static void expect_py(const struct pyu_stacks *s, const struct pyu_frame_info *f,
		      const char *name, int32_t line, int64_t offset)
{
	ck_assert_int_eq(f->kind, PYU_FRAME_PYTHON);
	ck_assert_str_eq(s->codes[f->code].name, name);
	ck_assert_int_eq(f->loc.line, line);
	ck_assert_int_eq(f->instruction_offset, offset);
}

static void expect_err(const struct pyu_frame_info *f, const char *part)
{
	ck_assert_int_eq(f->kind, PYU_FRAME_ERROR);
	ck_assert_msg(strstr(f->reason, part), "reason: %s", f->reason);
}

static const uint32_t versions[] = {0x020712f0, 0x03060ff0, 0x030912f0, 0x030a0df0,
				    0x030b07f0, 0x030c01f0, 0x030d00f0, 0x030e0af0, 0x030f02f0};
#define NVERSIONS (sizeof(versions) / sizeof(versions[0]))

// main <- f(unit 1) <- g(unit 3), in every version, with a shim frame where the version has
// them, a thread id and the GIL held by the thread.
START_TEST(test_basic_chain)
{
	uint32_t v = versions[_i];
	struct fake_py p;
	fp_init(&p, v);
	const struct pyu_layout *l = p.l;
	uint64_t cm = fp_code(&p, "<module>", 1, 8);
	uint64_t cf = fp_code(&p, "f", 10, 8);
	uint64_t cg = fp_code(&p, "g", 20, 8);
	uint64_t base = 0;
	uint64_t ts = fp_thread(&p, 0x7f0000001000, 4242);
	if (l->chain_ends_at_base_frame) {
		base = fp_frame(&p, 0x100, 0, 0, 3);
		fm_u64(&p.m, ts + (uint64_t)l->tstate.base_frame, base);
	}
	uint64_t fm = fp_frame(&p, cm, 5, base, 0);
	uint64_t below_f = fm;
	if (l->owner_first_foreign >= 0) // a C call between <module> and f
		below_f = fp_frame(&p, 0x100, 0, fm, (uint8_t)l->owner_first_foreign);
	uint64_t ff = fp_frame(&p, cf, 1, below_f, 0);
	uint64_t fg = fp_frame(&p, cg, 3, ff, 0);
	fp_set_top(&p, ts, fg);
	if (p.gil) {
		fm_u32(&p.m, p.gil + (uint64_t)l->interp.gil_locked, 1);
		fm_u64(&p.m, p.gil + (uint64_t)l->interp.gil_holder, ts);
	} else if (p.rt.tstate_current_addr) {
		fm_u64(&p.m, p.rt.tstate_current_addr, ts);
	}
	if (l->tstate.native_thread_id == PYU_NO_FIELD) {
		// Before 3.11 the kernel tid comes from glibc's struct pthread, if it is known.
		uint64_t pthread = fm_alloc(&p.m, 0x400);
		fm_u64(&p.m, ts + (uint64_t)l->tstate.thread_id, pthread);
		fm_u32(&p.m, pthread + 0x2d0, 4242);
		ck_assert_ptr_null(pyu_target_add_thread(p.m.t, 4242));
	}
	struct pyu_stacks *s = fp_collect(&p);
	ck_assert_uint_eq(s->thread_count, 1);
	const struct pyu_thread_info *th = &s->threads[0];
	ck_assert_msg(th->frame_count == 3, "%s: %u frames", l->name, th->frame_count);
	expect_py(s, &th->frames[0], "g", 24, 6);
	expect_py(s, &th->frames[1], "f", 12, 2);
	expect_py(s, &th->frames[2], "<module>", 7, 10);
	ck_assert_int_eq(th->frames[0].frame_address, fg);
	ck_assert_str_eq(s->codes[th->frames[0].code].filename, "/src/app.py");
	if (l->has_qualname)
		ck_assert_str_eq(s->codes[th->frames[0].code].qualname, "Q.g");
	else
		ck_assert_ptr_null(s->codes[th->frames[0].code].qualname);
	ck_assert_int_eq(th->native_thread_id, 4242);
	ck_assert_int_eq(th->holds_gil, l->gil == PYU_GIL_CURRENT_SYMBOL ? -1 : 1);
	ck_assert_uint_eq(th->tstate_address, ts);
	ck_assert_uint_eq(s->code_count, 3);
	pyu_stacks_destroy(s);
	fm_destroy(&p.m);
}
END_TEST

// 1,000 frames through one function: one code object read, every frame reported.
START_TEST(test_deep_recursion)
{
	struct fake_py p;
	fp_init(&p, versions[_i]);
	uint64_t code = fp_code(&p, "rec", 1, 4);
	uint64_t ts = fp_thread(&p, 1, 1);
	uint64_t f = 0;
	for (int i = 0; i < 1000; i++)
		f = fp_frame(&p, code, 2, f, 0);
	fp_set_top(&p, ts, f);
	struct pyu_stacks *s = fp_collect(&p);
	ck_assert_uint_eq(s->threads[0].frame_count, 1000);
	ck_assert_uint_eq(s->code_count, 1);
	for (int i = 0; i < 1000; i++)
		expect_py(s, &s->threads[0].frames[i], "rec", 4, 4);
	pyu_stacks_destroy(s);
	fm_destroy(&p.m);
}
END_TEST

// A chain far deeper than the old cap of 10,000 frames is read whole, to its entry frame:
// only a cycle or PYU_MAX_FRAMES (far above any recursion limit) stops a walk.
START_TEST(test_deep_chain)
{
	enum { DEEP = 30005 };
	ck_assert_int_gt(PYU_MAX_FRAMES, 30 * DEEP);
	struct fake_py p;
	fp_init(&p, 0x030c01f0);
	uint64_t code = fp_code(&p, "rec", 1, 4), entry = fp_code(&p, "main", 1, 4);
	uint64_t ts = fp_thread(&p, 1, 1);
	uint64_t f = fp_frame(&p, entry, 2, 0, 0);
	for (int i = 1; i < DEEP; i++)
		f = fp_frame(&p, code, 2, f, 0);
	fp_set_top(&p, ts, f);
	struct pyu_stacks *s = fp_collect(&p);
	ck_assert_uint_eq(s->threads[0].frame_count, DEEP);
	expect_py(s, &s->threads[0].frames[0], "rec", 4, 4);
	expect_py(s, &s->threads[0].frames[DEEP - 1], "main", 4, 4);
	pyu_stacks_destroy(s);
	fm_destroy(&p.m);
}
END_TEST

// Past the depth bound the thread's outermost frames (its entry point) are still read, after
// an error frame saying exactly how many links were left out; a chain whose end cannot be
// reached past the bound (here a cycle) ends at the bound.
START_TEST(test_bound_keeps_entry)
{
	enum { DEEP = 300, BOUND = 100 };
	for (int cyclic = 0; cyclic < 2; cyclic++) {
		struct fake_py p;
		fp_init(&p, versions[_i]);
		uint64_t code = fp_code(&p, "rec", 1, 4), entry = fp_code(&p, "main", 1, 4);
		uint64_t ts = fp_thread(&p, 1, 1);
		uint64_t f = fp_frame(&p, entry, 2, 0, 0), outermost = f, middle = 0;
		for (int i = 1; i < DEEP; i++) {
			f = fp_frame(&p, code, 2, f, 0);
			if (i == DEEP / 2)
				middle = f;
		}
		const struct pyu_layout *l = p.l;
		if (cyclic)
			fm_u64(&p.m, outermost + (uint64_t)(l->chain == PYU_CHAIN_FRAME_OBJECT
							 ? l->frame.f_back : l->iframe.previous),
			       middle);
		fp_set_top(&p, ts, f);
		struct pyu_stacks *s = fp_collect_bounded(&p, BOUND);
		const struct pyu_thread_info *th = &s->threads[0];
		for (int i = 0; i < BOUND; i++)
			expect_py(s, &th->frames[i], "rec", 4, 4);
		if (cyclic) {
			ck_assert_uint_eq(th->frame_count, BOUND + 1);
			expect_err(&th->frames[BOUND], "depth limit of 100 frames");
		} else {
			ck_assert_uint_eq(th->frame_count, BOUND + 1 + PYU_TAIL_FRAMES);
			expect_err(&th->frames[BOUND], "136 frame links left out past the depth "
				   "bound of 100 frames; the outermost 64 follow");
			for (uint32_t i = BOUND + 1; i < th->frame_count - 1; i++)
				expect_py(s, &th->frames[i], "rec", 4, 4);
			expect_py(s, &th->frames[th->frame_count - 1], "main", 4, 4);
		}
		pyu_stacks_destroy(s);
		fm_destroy(&p.m);
	}
}
END_TEST

// f3 -> f2 -> f1 -> f2 ...: the walk stops with a cycle frame after a bounded number of steps.
START_TEST(test_cycle)
{
	struct fake_py p;
	fp_init(&p, versions[_i]);
	uint64_t code = fp_code(&p, "loop", 1, 4);
	uint64_t ts = fp_thread(&p, 1, 1);
	uint64_t f1 = fp_frame(&p, code, 1, 0, 0);
	uint64_t f2 = fp_frame(&p, code, 1, f1, 0);
	uint64_t f3 = fp_frame(&p, code, 1, f2, 0);
	const struct pyu_layout *l = p.l;
	fm_u64(&p.m, f1 + (uint64_t)(l->chain == PYU_CHAIN_FRAME_OBJECT ? l->frame.f_back
									 : l->iframe.previous), f2);
	fp_set_top(&p, ts, f3);
	struct pyu_stacks *s = fp_collect(&p);
	const struct pyu_thread_info *th = &s->threads[0];
	ck_assert_uint_lt(th->frame_count, 10);
	expect_err(&th->frames[th->frame_count - 1], "cycle");
	pyu_stacks_destroy(s);
	fm_destroy(&p.m);
}
END_TEST

// Damage in the middle of a chain: a frame whose code is not a code object, one whose
// instruction pointer is outside its code, and last a previous pointer into unreadable memory.
START_TEST(test_damaged_frames)
{
	struct fake_py p;
	fp_init(&p, versions[_i]);
	uint64_t good = fp_code(&p, "good", 1, 4);
	uint64_t ts = fp_thread(&p, 1, 1);
	uint64_t lost = 0x30000000; // beyond the fake memory
	uint64_t f1 = fp_frame(&p, good, 1, lost, 0);
	uint64_t f2 = fp_frame(&p, good, 200, f1, 0);       // outside the 4-unit code
	uint64_t f3 = fp_frame(&p, fm_str(&p.m, "x"), 1, f2, 0); // not a code object
	uint64_t f4 = fp_frame(&p, good, 2, f3, 0);
	fp_set_top(&p, ts, f4);
	struct pyu_stacks *s = fp_collect(&p);
	const struct pyu_thread_info *th = &s->threads[0];
	ck_assert_uint_eq(th->frame_count, 5);
	expect_py(s, &th->frames[0], "good", 4, 4);
	expect_err(&th->frames[1], "not a code object");
	ck_assert_uint_eq(th->frames[1].frame_address, f3);
	expect_err(&th->frames[2], "outside");
	expect_py(s, &th->frames[3], "good", 3, 2);
	expect_err(&th->frames[4], "0x30000000");
	ck_assert_uint_eq(th->frames[4].frame_address, lost);
	pyu_stacks_destroy(s);
	fm_destroy(&p.m);
}
END_TEST

// 3.15: a chain that ends in NULL before reaching the thread's base frame was torn.
START_TEST(test_base_frame_truncated)
{
	struct fake_py p;
	fp_init(&p, 0x030f02f0);
	uint64_t code = fp_code(&p, "f", 1, 4);
	uint64_t ts = fp_thread(&p, 1, 1);
	uint64_t base = fp_frame(&p, 0x100, 0, 0, 3);
	fm_u64(&p.m, ts + (uint64_t)p.l->tstate.base_frame, base);
	fp_set_top(&p, ts, fp_frame(&p, code, 1, 0, 0));
	// A second thread that runs no Python at all is fine.
	fp_thread(&p, 2, 2);
	struct pyu_stacks *s = fp_collect(&p);
	ck_assert_uint_eq(s->thread_count, 2);
	ck_assert_uint_eq(s->threads[0].frame_count, 0);
	ck_assert_uint_eq(s->threads[1].frame_count, 2);
	expect_err(&s->threads[1].frames[1], "truncated");
	pyu_stacks_destroy(s);
	fm_destroy(&p.m);
}
END_TEST

// 3.11+: frames still in their prologue are hidden (unless owned by a generator); a frame
// object's non-zero f_lineno overrides the table; 3.14 tagged ints are not code.
START_TEST(test_incomplete_and_lineno)
{
	struct fake_py p;
	fp_init(&p, 0x030e0af0);
	const struct pyu_layout *l = p.l;
	uint64_t code = fp_code(&p, "f", 10, 8);
	fm_u32(&p.m, code + (uint64_t)l->code.firsttraceable, 2);
	uint64_t ts = fp_thread(&p, 1, 1);
	uint64_t f1 = fp_frame(&p, code, 4, 0, 0);
	uint64_t fobj = fm_alloc(&p.m, 128);
	fm_u32(&p.m, fobj + (uint64_t)l->frame.f_lineno, 99);
	fm_u64(&p.m, f1 + (uint64_t)l->iframe.frame_obj, fobj);
	uint64_t f2 = fp_frame(&p, code, 1, f1, 1); // generator: shown even before RESUME
	uint64_t f3 = fp_frame(&p, code, 1, f2, 0); // incomplete: hidden
	uint64_t f4 = fp_frame(&p, 0x0f, 0, f3, 0); // tagged int in f_executable
	fm_u64(&p.m, f4 + (uint64_t)l->iframe.code, 0x1f);
	fp_set_top(&p, ts, f4);
	fm_u64(&p.m, ts + (uint64_t)l->tstate.c_tracefunc, 0x7f0000001000); // a trace function
	struct pyu_stacks *s = fp_collect(&p);
	const struct pyu_thread_info *th = &s->threads[0];
	ck_assert_uint_eq(th->frame_count, 3);
	expect_err(&th->frames[0], "tagged int");
	expect_py(s, &th->frames[1], "f", 12, 2);
	expect_py(s, &th->frames[2], "f", 99, 8);
	ck_assert_int_eq(th->frames[2].loc.column, PYU_NO_COLUMN);
	pyu_stacks_destroy(s);
	fm_destroy(&p.m);
}
END_TEST

// 3.11+: a frame reading what the frame made before it read (a recursion's: one code object,
// one instruction) is made as that one was; a frame of another code object between them, in
// its prologue and so hidden, does not make the next one run its code object.
START_TEST(test_recursion_past_hidden_frame)
{
	for (size_t v = 4; v < NVERSIONS; v++) {
		struct fake_py p;
		fp_init(&p, versions[v]);
		const struct pyu_layout *l = p.l;
		uint64_t f_code = fp_code(&p, "f", 10, 8), g_code = fp_code(&p, "g", 20, 8);
		fm_u32(&p.m, g_code + (uint64_t)l->code.firsttraceable, 2);
		uint64_t ts = fp_thread(&p, 1, 1);
		uint64_t oldest = fp_frame(&p, f_code, 4, 0, 0);
		uint64_t hidden = fp_frame(&p, g_code, 1, oldest, 0); // before RESUME: hidden
		uint64_t mid = fp_frame(&p, f_code, 4, hidden, 0);
		uint64_t top = fp_frame(&p, f_code, 4, mid, 0); // as mid: made as mid was
		fp_set_top(&p, ts, top);
		struct pyu_stacks *s = fp_collect(&p);
		const struct pyu_thread_info *th = &s->threads[0];
		ck_assert_msg(th->frame_count == 3, "version %zu: %u frames", v, th->frame_count);
		for (uint32_t k = 0; k < 3; k++) {
			expect_py(s, &th->frames[k], "f", 15, 8);
			ck_assert_uint_eq(th->frames[k].frame_address, k == 0 ? top : k == 1 ? mid
										    : oldest);
		}
		pyu_stacks_destroy(s);
		fm_destroy(&p.m);
	}
}
END_TEST

// A recursion's frames in a copied data-stack chunk are made in a loop of their own
// (frames.c). What it makes must be what the walk makes of the same chain read frame by frame
// (the same frames, each allocated apart): with a frame that reads otherwise in the middle,
// at the depth bound, at 3.15's base frame, and in a cycle back into the run.
enum { RUN = 160, RUN_FRAME = 128 };

// The chain of @variant (0 plain, 1 one frame at another instruction, 2 a cycle, 3 the base
// frame inside the run, 4 the depth bound inside it) in @p: RUN frames of "rec" over one of
// "main", in one data-stack chunk when @in_chunk. Its frames' addresses, oldest first, in @at.
static void recursion_chain(struct fake_py *p, bool in_chunk, int variant, uint64_t *at)
{
	const struct pyu_layout *l = p->l;
	uint64_t code = fp_code(p, "rec", 1, 4), main_code = fp_code(p, "main", 1, 4);
	fm_u32(&p->m, code + (uint64_t)l->code.framesize, RUN_FRAME / 8);
	uint64_t ts = fp_thread(p, 1, 1);
	uint64_t chunk = in_chunk ? fm_alloc(&p->m, 32 + (RUN + 1) * RUN_FRAME) : 0;
	if (in_chunk)
		fm_u64(&p->m, chunk + 8, 32 + (RUN + 1) * RUN_FRAME);
	uint64_t prev = fp_frame(p, main_code, 2, 0, 0);
	for (int i = 0; i < RUN; i++) {
		uint64_t f = in_chunk ? chunk + 32 + (uint64_t)i * RUN_FRAME
				      : fm_alloc(&p->m, RUN_FRAME);
		prev = fp_iframe_at(p, f, code, variant == 1 && i == RUN / 2 ? 3 : 2, prev, 0);
		at[i] = f;
	}
	if (variant == 2) // the oldest "rec" frame links back to the middle of the run
		fm_u64(&p->m, at[0] + (uint64_t)l->iframe.previous, at[RUN / 2]);
	if (variant == 3)
		fm_u64(&p->m, ts + (uint64_t)l->tstate.base_frame, at[RUN / 3]);
	if (in_chunk) {
		fm_u64(&p->m, ts + (uint64_t)l->tstate.datastack_chunk, chunk);
		fm_u64(&p->m, ts + (uint64_t)l->tstate.datastack_top, prev + RUN_FRAME);
	}
	fp_set_top(p, ts, prev);
}

START_TEST(test_recursion_in_chunk)
{
	for (size_t v = 4; v < NVERSIONS; v++) {
		for (int variant = 0; variant < 5; variant++) {
			struct fake_py p[2];
			uint64_t at[2][RUN];
			struct pyu_stacks *s[2];
			for (int k = 0; k < 2; k++) {
				fp_init(&p[k], versions[v]);
				if (variant == 3 && !p[k].l->chain_ends_at_base_frame)
					break;
				recursion_chain(&p[k], k == 1, variant, at[k]);
				s[k] = variant == 4 ? fp_collect_bounded(&p[k], RUN / 2 + 7)
						    : fp_collect(&p[k]);
			}
			if (variant == 3 && !p[0].l->chain_ends_at_base_frame) {
				fm_destroy(&p[0].m);
				continue;
			}
			const struct pyu_thread_info *a = &s[0]->threads[0], *b = &s[1]->threads[0];
			ck_assert_msg(a->frame_count == b->frame_count, "version %zu, case %d: %u "
				      "frames apart, %u in a chunk", v, variant, a->frame_count,
				      b->frame_count);
			ck_assert_uint_gt(a->frame_count, variant == 3 ? RUN / 2 : RUN / 2 + 7);
			for (uint32_t i = 0; i < a->frame_count; i++) {
				const struct pyu_frame_info *fa = &a->frames[i], *fb = &b->frames[i];
				ck_assert_int_eq(fa->kind, fb->kind);
				ck_assert_int_eq(fa->loc.line, fb->loc.line);
				ck_assert_int_eq(fa->instruction_offset, fb->instruction_offset);
				ck_assert_int_eq(fa->entry_marker != 0, fb->entry_marker != 0);
				if (fa->kind != PYU_FRAME_PYTHON) {
					ck_assert_str_eq(strstr(fa->reason, "frame") ? "frame" : "",
							 strstr(fb->reason, "frame") ? "frame" : "");
					continue;
				}
				ck_assert_str_eq(s[0]->codes[fa->code].name, s[1]->codes[fb->code].name);
				// The same frame of the chain: its place in the run, or "main".
				int ia = -1, ib = -1;
				for (int r = 0; r < RUN; r++) {
					ia = at[0][r] == fa->frame_address ? r : ia;
					ib = at[1][r] == fb->frame_address ? r : ib;
				}
				ck_assert_int_eq(ia, ib);
			}
			for (int k = 0; k < 2; k++) {
				pyu_stacks_destroy(s[k]);
				fm_destroy(&p[k].m);
			}
		}
	}
}
END_TEST

// 3.11+ set a frame object's f_lineno only while a trace or profile function of the frame's
// thread runs: with neither, the object is not read and the table's line stands.
START_TEST(test_lineno_only_when_traced)
{
	static const uint32_t versions_311[] = {0x030b07f0, 0x030c01f0, 0x030d00f0, 0x030e0af0,
						0x030f02f0};
	for (size_t v = 0; v < sizeof(versions_311) / sizeof(versions_311[0]); v++) {
		for (int how = 0; how < 3; how++) { // none, profile function, trace function
			struct fake_py p;
			fp_init(&p, versions_311[v]);
			const struct pyu_layout *l = p.l;
			ck_assert_int_ne(l->tstate.c_tracefunc, PYU_NO_FIELD);
			ck_assert_int_ne(l->tstate.c_profilefunc, PYU_NO_FIELD);
			uint64_t code = fp_code(&p, "f", 10, 8);
			uint64_t ts = fp_thread(&p, 1, 1);
			uint64_t f1 = fp_frame(&p, code, 4, 0, 0);
			uint64_t fobj = fm_alloc(&p.m, 128);
			fm_u32(&p.m, fobj + (uint64_t)l->frame.f_lineno, 99);
			fm_u64(&p.m, f1 + (uint64_t)l->iframe.frame_obj, fobj);
			if (how)
				fm_u64(&p.m, ts + (uint64_t)(how == 1 ? l->tstate.c_profilefunc
								    : l->tstate.c_tracefunc),
				       0x7f0000001000);
			fp_set_top(&p, ts, f1);
			struct pyu_stacks *s = fp_collect(&p);
			ck_assert_uint_eq(s->threads[0].frame_count, 1);
			expect_py(s, &s->threads[0].frames[0], "f", how ? 99 : 15, 8);
			pyu_stacks_destroy(s);
			fm_destroy(&p.m);
		}
	}
}
END_TEST

// <= 3.9: f_trace set => f_lineno; 3.10: non-zero f_lineno.
START_TEST(test_traced_frame_lineno)
{
	const uint32_t vs[] = {0x030912f0, 0x030a0df0};
	for (size_t i = 0; i < 2; i++) {
		struct fake_py p;
		fp_init(&p, vs[i]);
		const struct pyu_layout *l = p.l;
		uint64_t code = fp_code(&p, "f", 10, 8);
		uint64_t ts = fp_thread(&p, 1, 1);
		uint64_t f1 = fp_frame(&p, code, 3, 0, 0);
		uint64_t f2 = fp_frame(&p, code, 3, f1, 0);
		fm_u32(&p.m, f1 + (uint64_t)l->frame.f_lineno, 77);
		fm_u64(&p.m, f1 + (uint64_t)l->frame.f_trace, 0x1234);
		fm_u32(&p.m, f2 + (uint64_t)l->frame.f_lineno, 55); // untraced: stale on <= 3.9
		fp_set_top(&p, ts, f2);
		struct pyu_stacks *s = fp_collect(&p);
		const struct pyu_thread_info *th = &s->threads[0];
		ck_assert_uint_eq(th->frame_count, 2);
		expect_py(s, &th->frames[0], "f", l->lineno_rule == PYU_LINENO_IF_NONZERO ? 55 : 14,
			  6);
		expect_py(s, &th->frames[1], "f", 77, 6);
		pyu_stacks_destroy(s);
		fm_destroy(&p.m);
	}
}
END_TEST

// Thread lists: a cycle and an unreadable thread state become snapshot errors; several
// interpreters are all walked; the code type is recognised by structure when no symbol gave
// it.
START_TEST(test_thread_lists)
{
	struct fake_py p;
	fp_init(&p, 0x030c01f0);
	const struct pyu_layout *l = p.l;
	p.rt.types.addr[PYU_TYPE_CODE] = 0;
	uint64_t code = fp_code(&p, "f", 1, 4);
	uint64_t t1 = fp_thread(&p, 1, 1);
	uint64_t t2 = fp_thread(&p, 2, 2);
	fp_set_top(&p, t1, fp_frame(&p, code, 1, 0, 0));
	fp_set_top(&p, t2, fp_frame(&p, code, 2, 0, 0));
	fm_u64(&p.m, t1 + (uint64_t)l->tstate.next, t2); // t2 -> t1 -> t2 ...
	// A second interpreter whose only thread state is unreadable.
	uint64_t sub = fm_alloc(&p.m, 8192);
	fm_u64(&p.m, p.interp + (uint64_t)l->interp.next, sub);
	fm_u64(&p.m, sub + (uint64_t)l->interp.threads_head, 0x30000000);
	fm_u64(&p.m, sub + (uint64_t)l->interp.ceval_gil, p.gil);
	struct pyu_stacks *s = fp_collect(&p);
	ck_assert_uint_ge(s->thread_count, 2);
	ck_assert_uint_le(s->thread_count, 4);
	ck_assert_uint_eq(s->error_count, 2);
	ck_assert_msg(strstr(s->errors[0], "cycle"), "%s", s->errors[0]);
	ck_assert_msg(strstr(s->errors[1], "0x30000000"), "%s", s->errors[1]);
	expect_py(s, &s->threads[0].frames[0], "f", 4, 4); // t2, the head of the list
	ck_assert_int_eq(s->threads[0].holds_gil, 0);
	pyu_stacks_destroy(s);
	fm_destroy(&p.m);

	// The interpreter list itself loops.
	fp_init(&p, 0x030c01f0);
	fm_u64(&p.m, p.interp + (uint64_t)p.l->interp.next, p.interp);
	s = fp_collect(&p);
	ck_assert_uint_eq(s->error_count, 1);
	ck_assert_msg(strstr(s->errors[0], "cycle"), "%s", s->errors[0]);
	pyu_stacks_destroy(s);
	fm_destroy(&p.m);
}
END_TEST

// Without a symbol for the code type, code objects are recognised by their type's structure
// (its metatype is `type`, sizes and flags as the layout says), never by tp_name, and every
// code object must then have the type learnt from the first: look-alikes fail each check.
START_TEST(test_code_type_by_structure)
{
	static const uint32_t vs[] = {0x02070000, 0x030a0000, 0x030b07f0, 0x030c01f0};
	for (size_t v = 0; v < sizeof(vs) / sizeof(vs[0]); v++) {
		struct fake_py p;
		fp_init(&p, vs[v]);
		const struct pyu_layout *l = p.l;
		p.rt.types.addr[PYU_TYPE_CODE] = 0;
		uint64_t code = fp_code(&p, "f", 1, 4);
		// Wrong sizes; a heap type; a metatype that is not `type`; a second type shaped
		// like code (not the one learnt); a type object in unreadable memory.
		uint64_t wrong_size = fp_code(&p, "wrong_size", 1, 4);
		fm_u64(&p.m, wrong_size + (uint64_t)l->ob_type, fm_type(&p.m, "code", 0));
		uint64_t heap = fp_code(&p, "heap", 1, 4);
		uint64_t heap_type = fm_code_type(&p.m, "code");
		fm_u64(&p.m, heap_type + (uint64_t)l->type_tp_flags,
		       PYU_TPFLAGS_READY | PYU_TPFLAGS_HEAPTYPE);
		fm_u64(&p.m, heap + (uint64_t)l->ob_type, heap_type);
		uint64_t meta = fp_code(&p, "meta", 1, 4);
		uint64_t meta_type = fm_code_type(&p.m, "code");
		fm_u64(&p.m, meta_type + (uint64_t)l->ob_type, p.m.str_type);
		fm_u64(&p.m, meta + (uint64_t)l->ob_type, meta_type);
		uint64_t twin = fp_code(&p, "twin", 1, 4);
		fm_u64(&p.m, twin + (uint64_t)l->ob_type, fm_code_type(&p.m, "code"));
		uint64_t lost = fp_code(&p, "lost", 1, 4);
		fm_u64(&p.m, lost + (uint64_t)l->ob_type, 0x30000000);
		uint64_t f = fp_frame(&p, code, 1, 0, 0);
		f = fp_frame(&p, code, 1, f, 0);
		f = fp_frame(&p, twin, 1, f, 0);
		f = fp_frame(&p, meta, 1, f, 0);
		f = fp_frame(&p, heap, 1, f, 0);
		f = fp_frame(&p, wrong_size, 1, f, 0);
		f = fp_frame(&p, lost, 1, f, 0);
		uint64_t ts = fp_thread(&p, 1, 1);
		fp_set_top(&p, ts, f);
		struct pyu_stacks *s = fp_collect(&p);
		struct pyu_thread_info *th = &s->threads[0];
		ck_assert_uint_eq(th->frame_count, 7);
		expect_err(&th->frames[0], "cannot read memory at 0x30000000");
		expect_err(&th->frames[1], "not a code object");
		expect_err(&th->frames[2], "not a code object");
		expect_err(&th->frames[3], "not a code object");
		// The twin is the first to pass the structure checks: its type is learnt, and
		// the later code objects, of another type, fail the consistency check (errors,
		// never frames read with a guessed type).
		expect_py(s, &th->frames[4], "twin", 3, 2);
		expect_err(&th->frames[5], "is not the code type at");
		expect_err(&th->frames[6], "is not the code type at");
		pyu_stacks_destroy(s);
		fm_destroy(&p.m);
	}
}
END_TEST

// gdb leaves thread stacks with guard regions out of its cores, and with them the entry frames
// of 3.12+: the walk continues at the Python caller found on the thread's data stack.
START_TEST(test_entry_frame_missing)
{
	struct fake_py p;
	fp_init(&p, versions[_i]);
	const struct pyu_layout *l = p.l;
	uint64_t code = fp_code(&p, "f", 10, 8);
	fm_u32(&p.m, code + (uint64_t)l->code.framesize, 16); // 128 bytes per frame
	uint64_t ts = fp_thread(&p, 1, 1);
	uint64_t chunk = fm_alloc(&p.m, 4096);
	fm_u64(&p.m, chunk + 8, 4096);
	uint64_t f0 = chunk + 24 + 8, f1 = f0 + 128, f2 = f1 + 128, f3 = f2 + 128;
	uint64_t zeroed = fm_alloc(&p.m, 128); // an entry frame whose page the core lacks
	uint64_t base = 0;
	if (l->chain_ends_at_base_frame) {
		base = fp_frame(&p, 0x100, 0, 0, 3);
		fm_u64(&p.m, ts + (uint64_t)l->tstate.base_frame, base);
	}
	fp_iframe_at(&p, f0, code, 1, 0x30000000, 0); // below it: an unreadable entry frame
	fp_iframe_at(&p, f1, code, 2, f0, 0);
	fp_iframe_at(&p, f2, code, 3, zeroed, 0);
	fp_iframe_at(&p, f3, code, 4, f2, 0);
	fm_u64(&p.m, ts + (uint64_t)l->tstate.datastack_chunk, chunk);
	fm_u64(&p.m, ts + (uint64_t)l->tstate.datastack_top, f3 + 128);
	fp_set_top(&p, ts, f3);
	struct pyu_stacks *s = fp_collect(&p);
	const struct pyu_thread_info *th = &s->threads[0];
	ck_assert_uint_eq(th->frame_count, 4);
	for (int i = 0; i < 4; i++)
		expect_py(s, &th->frames[i], "f", 15 - i, 8 - 2 * i);
	ck_assert_uint_eq(th->frames[2].frame_address, f1);
	ck_assert_uint_eq(s->error_count, 0);
	ck_assert_uint_eq(s->note_count, 1);
	ck_assert_msg(strstr(s->notes[0], "2 entry frame"), "%s", s->notes[0]);
	pyu_stacks_destroy(s);
	fm_destroy(&p.m);
}
END_TEST

// A truncated core: the innermost frame and the whole data stack are gone. The thread must
// end with an error frame that says so, not look like a thread with no Python frames.
START_TEST(test_frame_and_data_stack_missing)
{
	struct fake_py p;
	fp_init(&p, versions[_i]);
	const struct pyu_layout *l = p.l;
	uint64_t ts = fp_thread(&p, 1, 1);
	if (l->tstate.datastack_chunk != PYU_NO_FIELD) {
		fm_u64(&p.m, ts + (uint64_t)l->tstate.datastack_chunk, 0x7f0000001000ull);
		fm_u64(&p.m, ts + (uint64_t)l->tstate.datastack_top, 0x7f0000001400ull);
	}
	fp_set_top(&p, ts, 0x7f0000001200ull);
	struct pyu_stacks *s = fp_collect(&p);
	const struct pyu_thread_info *th = &s->threads[0];
	ck_assert_uint_eq(th->frame_count, 1);
	expect_err(&th->frames[0], "0x7f0000001200");
	pyu_stacks_destroy(s);
	fm_destroy(&p.m);
}
END_TEST

// Random damage: a realistic thread (two threads, shims, 40 frames, several code objects) whose
// memory gets random bytes written over it, many times, for every layout. The walk must end
// (bounded) without touching memory it does not own (run under ASan by test-asan).
START_TEST(test_random_damage)
{
	uint64_t rng = 0x9e3779b97f4a7c15ull ^ (uint64_t)_i;
	int noticed = 0; // rounds whose damage the walk reported
	for (int round = 0; round < 40; round++) {
		struct fake_py p;
		fp_init(&p, versions[_i]);
		const struct pyu_layout *l = p.l;
		uint64_t codes[3] = {fp_code(&p, "a", 1, 16), fp_code(&p, "b", 100, 16),
				     fp_code(&p, "c", 1000, 16)};
		uint64_t lo = p.m.next;
		for (int t = 0; t < 2; t++) {
			uint64_t ts = fp_thread(&p, 100 + t, 200 + t), f = 0;
			for (int i = 0; i < 40; i++) {
				f = fp_frame(&p, codes[i % 3], (unsigned)(i % 16), f, 0);
				if (l->owner_first_foreign >= 0 && i % 7 == 0)
					f = fp_frame(&p, 0x100, 0, f, 3);
			}
			fp_set_top(&p, ts, f);
		}
		uint64_t hi = p.m.next;
		// Damage: random bytes over frames, thread states and (less often) code objects.
		for (int k = 0; k < 20; k++) {
			rng = rng * 6364136223846793005ull + 1442695040888963407ull;
			uint64_t span = (rng >> 60) < 3 ? hi - FM_BASE : hi - lo;
			uint64_t at = ((rng >> 60) < 3 ? FM_BASE : lo) + (rng >> 16) % span;
			uint8_t junk = (uint8_t)(rng >> 8);
			if ((rng >> 59) & 1) {
				uint64_t ptr = FM_BASE + (rng >> 20) % (hi - FM_BASE);
				if (at + 8 <= hi)
					fm_u64(&p.m, at & ~7ull, ptr); // a plausible pointer
			} else {
				fm_u8(&p.m, at, junk);
			}
		}
		struct pyu_stacks *s = fp_collect(&p);
		ck_assert_uint_le(s->thread_count, PYU_MAX_THREADS_WALKED);
		for (uint32_t t = 0; t < s->thread_count; t++) {
			ck_assert_uint_le(s->threads[t].frame_count, PYU_MAX_FRAMES + 1);
			for (uint32_t k = 0; k < s->threads[t].frame_count; k++) {
				const struct pyu_frame_info *f = &s->threads[t].frames[k];
				if (f->kind == PYU_FRAME_PYTHON) {
					ck_assert_int_lt(f->code, (int32_t)s->code_count);
					ck_assert_ptr_nonnull(s->codes[f->code].name);
				} else {
					ck_assert_ptr_nonnull(f->reason);
					noticed++;
				}
			}
		}
		noticed += s->error_count > 0;
		pyu_stacks_destroy(s);
		fm_destroy(&p.m);
	}
	ck_assert_int_gt(noticed, 5);
}
END_TEST

// 3.11/3.12 reach the innermost frame through a cframe on the native stack: when that is
// unreadable, the walk starts at the top of the data stack.
START_TEST(test_cframe_missing)
{
	struct fake_py p;
	fp_init(&p, 0x030c01f0);
	const struct pyu_layout *l = p.l;
	uint64_t code = fp_code(&p, "f", 10, 8);
	fm_u32(&p.m, code + (uint64_t)l->code.framesize, 16);
	uint64_t ts = fp_thread(&p, 1, 1);
	uint64_t chunk = fm_alloc(&p.m, 4096);
	uint64_t f0 = chunk + 24 + 8, f1 = f0 + 128;
	fp_iframe_at(&p, f0, code, 1, 0, 0);
	fp_iframe_at(&p, f1, code, 2, f0, 0);
	fm_u64(&p.m, ts + (uint64_t)l->tstate.datastack_chunk, chunk);
	fm_u64(&p.m, ts + (uint64_t)l->tstate.datastack_top, f1 + 128);
	fm_u64(&p.m, ts + (uint64_t)l->tstate.cframe, 0x30000000);
	struct pyu_stacks *s = fp_collect(&p);
	const struct pyu_thread_info *th = &s->threads[0];
	ck_assert_uint_eq(th->frame_count, 2);
	expect_py(s, &th->frames[0], "f", 13, 4);
	expect_py(s, &th->frames[1], "f", 12, 2);
	ck_assert_uint_eq(s->error_count, 0);
	ck_assert_uint_eq(s->note_count, 2);
	ck_assert_msg(strstr(s->notes[0], "cframe"), "%s", s->notes[0]);
	pyu_stacks_destroy(s);
	fm_destroy(&p.m);
}
END_TEST

// Free-threaded 3.14+: a frame running a thread's copy of the bytecode is located through
// co_tlbc->entries[tlbc_index]; an index past the array is an error frame.
START_TEST(test_thread_local_bytecode)
{
	struct fake_py p;
	fp_init(&p, 0x030e0af0);
	p.rt.layout.iframe.tlbc_index = 76; // unused by the fake frames
	p.rt.layout.code.tlbc = 200;
	const struct pyu_layout *l = p.l;
	uint64_t code = fp_code(&p, "f", 10, 8);
	uint64_t copy = fm_alloc(&p.m, 16);
	uint64_t array = fm_alloc(&p.m, 24);
	fm_u64(&p.m, array, 2);
	fm_u64(&p.m, array + 8, code + (uint64_t)l->code.code_adaptive);
	fm_u64(&p.m, array + 16, copy);
	fm_u64(&p.m, code + 200, array);
	uint64_t ts = fp_thread(&p, 1, 1);
	uint64_t f1 = fp_frame(&p, code, 3, 0, 0);           // copy 0: the code object's own
	uint64_t f2 = fp_frame(&p, code, 0, f1, 0);
	fm_u32(&p.m, f2 + 76, 1);
	fm_u64(&p.m, f2 + (uint64_t)l->iframe.instr_ptr, copy + 2 * 5); // unit 5 of copy 1
	uint64_t f3 = fp_frame(&p, code, 0, f2, 0);
	fm_u32(&p.m, f3 + 76, 7);                             // no such copy
	fp_set_top(&p, ts, f3);
	struct pyu_stacks *s = fp_collect(&p);
	const struct pyu_thread_info *th = &s->threads[0];
	ck_assert_uint_eq(th->frame_count, 3);
	expect_err(&th->frames[0], "copy 7 of 2");
	expect_py(s, &th->frames[1], "f", 16, 10);
	expect_py(s, &th->frames[2], "f", 14, 6);
	pyu_stacks_destroy(s);
	fm_destroy(&p.m);
}
END_TEST

// Py_DEBUG 2.7 - 3.7: frame and code objects 16 bytes larger at the front; the walk is the same.
START_TEST(test_debug_build_chain)
{
	const uint32_t vs[] = {0x020712f0, 0x03060ff0, 0x030710f0};
	struct fake_py p;
	fp_init_build(&p, vs[_i], true);
	ck_assert(p.rt.debug_build);
	ck_assert_int_eq(p.l->ob_type, 24);
	uint64_t code = fp_code(&p, "dbg", 5, 4);
	uint64_t ts = fp_thread(&p, 1, 1);
	fp_set_top(&p, ts, fp_frame(&p, code, 3, fp_frame(&p, code, 1, 0, 0), 0));
	struct pyu_stacks *s = fp_collect(&p);
	ck_assert_uint_eq(s->threads[0].frame_count, 2);
	expect_py(s, &s->threads[0].frames[0], "dbg", 9, 6);
	expect_py(s, &s->threads[0].frames[1], "dbg", 7, 2);
	pyu_stacks_destroy(s);
	fm_destroy(&p.m);
}
END_TEST

static Suite *frames_suite(void)
{
	Suite *s = suite_create("frames");
	TCase *tc = tcase_create("frames");
	tcase_set_timeout(tc, 60);
	tcase_add_loop_test(tc, test_basic_chain, 0, NVERSIONS);
	tcase_add_loop_test(tc, test_deep_recursion, 0, NVERSIONS);
	tcase_add_test(tc, test_deep_chain);
	tcase_add_loop_test(tc, test_cycle, 0, NVERSIONS);
	tcase_add_loop_test(tc, test_bound_keeps_entry, 0, NVERSIONS);
	tcase_add_loop_test(tc, test_damaged_frames, 0, NVERSIONS);
	tcase_add_test(tc, test_base_frame_truncated);
	tcase_add_test(tc, test_incomplete_and_lineno);
	tcase_add_test(tc, test_recursion_past_hidden_frame);
	tcase_add_test(tc, test_recursion_in_chunk);
	tcase_add_test(tc, test_lineno_only_when_traced);
	tcase_add_test(tc, test_traced_frame_lineno);
	tcase_add_test(tc, test_thread_lists);
	tcase_add_test(tc, test_code_type_by_structure);
	tcase_add_loop_test(tc, test_entry_frame_missing, 5, NVERSIONS); // 3.12+
	tcase_add_loop_test(tc, test_frame_and_data_stack_missing, 0, NVERSIONS);
	tcase_add_loop_test(tc, test_random_damage, 0, NVERSIONS);
	tcase_add_test(tc, test_cframe_missing);
	tcase_add_test(tc, test_thread_local_bytecode);
	tcase_add_loop_test(tc, test_debug_build_chain, 0, 3);
	suite_add_tcase(s, tc);
	return s;
}

PYU_CHECK_MAIN(frames_suite)
