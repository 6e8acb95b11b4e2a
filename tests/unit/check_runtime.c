// check_runtime.c - finding the interpreter when no ELF file helps: the _Py_DebugOffsets cookie
// in writable memory (a whole pyu_stacks_collect() through it, version strings with pre-release
// suffixes), a 2.7 - 3.12 interpreter found by scanning the writable data of the file that names
// its version (and damaged ones that must not be), and the errors: nothing found (each failed step named), a cookie of a version whose
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
	ck_assert_uint_eq(s->note_count, 3);
	ck_assert_msg(strstr(s->notes[0], "cookie"), "%s", s->notes[0]);
	ck_assert_msg(strstr(s->notes[1], "read from memory alone"), "%s", s->notes[1]);
	ck_assert_str_eq(s->notes[2], "memory read from a read callback");
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

// A minimal shared object in target memory exporting _PyRuntime, found when no mapping names a
// file; with its hash table as DT_HASH (@gnu false) or DT_GNU_HASH. @damage breaks one field of
// the image, which must then be ignored (the cookie still finds the runtime).
static void image_case(bool gnu, int damage)
{
	struct fake_py p;
	fp_init(&p, 0x030e0af0);
	uint8_t block[PYU_DEBUG_OFFSETS_MAX];
	size_t len = make_block(block, dbg_314, sizeof(dbg_314) / 8);
	uint64_t runtime = fm_alloc(&p.m, 4096);
	fm_put(&p.m, runtime, block, len);
	fm_u64(&p.m, runtime + 808, p.interp);
	uint64_t code = fp_code(&p, "f", 10, 4);
	fp_set_top(&p, fp_thread(&p, 7, 8), fp_frame(&p, code, 1, 0, 0));

	uint64_t img = (fm_alloc(&p.m, 0x6000) + 0xfff) & ~0xfffull;
	struct fakemem *m = &p.m;
	uint8_t eh[64] = "\177ELF\2\1\1";
	uint16_t type = 3, phentsize = 56, phnum = damage == 1 ? 999 : 2;
	uint64_t phoff = 64;
	memcpy(eh + 16, &type, 2);
	memcpy(eh + 32, &phoff, 8);
	memcpy(eh + 54, &phentsize, 2);
	memcpy(eh + 56, &phnum, 2);
	fm_put(m, img, eh, sizeof(eh));
	fm_u32(m, img + 64, 1);                 // PT_LOAD, vaddr 0
	fm_u64(m, img + 64 + 40, 0x4000);
	fm_u32(m, img + 120, 2);                // PT_DYNAMIC
	fm_u64(m, img + 120 + 16, 0x200);
	fm_u64(m, img + 120 + 40, 16 * 5);
	uint64_t dyn[] = {5, img + 0x400, 6, img + 0x300, 10, damage == 2 ? 1ull << 40 : 16,
			  gnu ? 0x6ffffef5 : 4, img + 0x600, 0, 0};
	fm_put(m, img + 0x200, dyn, sizeof(dyn));
	uint8_t sym[24] = {0};
	uint32_t name = 1;
	uint16_t shndx = 1;
	uint64_t value = runtime - img;
	memcpy(sym, &name, 4);
	sym[4] = 0x11;
	memcpy(sym + 6, &shndx, 2);
	memcpy(sym + 8, &value, 8);
	fm_put(m, img + 0x300 + 24, sym, sizeof(sym));
	fm_put(m, img + 0x400, "\0_PyRuntime\0", 13);
	if (gnu) {
		uint32_t h[] = {1, 1, 1, 6, 0, 0, 1, 0x1234 | 1}; // 1 bucket, bloom, chain
		fm_put(m, img + 0x600, h, sizeof(h));
	} else {
		uint32_t h[] = {1, 2, 1, 0, 0};
		fm_put(m, img + 0x600, h, sizeof(h));
	}
	// The same memory, seen through mappings that name no files; the image starts one.
	pyu_target_destroy(m->t);
	ck_assert_ptr_null(pyu_target_open_callback(fm_read, m, &m->t));
	ck_assert_ptr_null(pyu_target_add_mapping(m->t, FM_BASE, img, 0, 1, NULL));
	ck_assert_ptr_null(pyu_target_add_mapping(m->t, img, FM_BASE + FM_SIZE, 0, 1, NULL));

	struct pyu_stacks *s = NULL;
	struct pyu_error *err = pyu_stacks_collect(m->t, &s);
	ck_assert_msg(err == NULL, "%s", pyu_error_message(err));
	ck_assert_str_eq(s->version, "3.14.10");
	ck_assert_uint_eq(s->thread_count, 1);
	ck_assert_uint_eq(s->threads[0].frame_count, 1);
	ck_assert_msg(strstr(s->notes[0], damage ? "cookie" : "symbol _PyRuntime in the ELF image"),
		      "%s", s->notes[0]);
	pyu_stacks_destroy(s);
	fm_destroy(m);
}

START_TEST(test_image_in_memory)
{
	image_case(false, 0);
	image_case(true, 0);
	image_case(true, 1);
	image_case(false, 2);
}
END_TEST

// ---- memory alone: the structure scan (2.7 - 3.12) --------------------------------------------

static const uint32_t scan_versions[] = {0x020712f0, 0x03060ff0, 0x030710f0, 0x030912f0,
					 0x030a0df0, 0x030b07f0, 0x030c01f0};

// A fake interpreter of @version whose runtime (or interp_head) lies in a writable mapping
// named like libpythonX.Y; decoy pointers to the interpreter sit next to the real head.
// Returns the runtime block's address.
static uint64_t scan_setup(struct fake_py *p, uint32_t version, uint64_t *code)
{
	fp_init(p, version);
	const struct pyu_layout *l = p->l;
	uint64_t runtime = p->rt.interp_head_addr -
		(l->runtime.interpreters_head != PYU_NO_FIELD ? (uint64_t)l->runtime.interpreters_head
							      : 0);
	if (l->runtime.interpreters_main != PYU_NO_FIELD)
		fm_u64(&p->m, runtime + (uint64_t)l->runtime.interpreters_main, p->interp);
	// Decoys: the auto-thread-state interpreter and a stray copy (3.7+: neighbours disagree).
	fm_u64(&p->m, runtime + 1536, p->interp);
	fm_u64(&p->m, runtime + 2000, p->interp);
	*code = fp_code(p, "f", 10, 4);
	uint64_t t1 = fp_thread(p, 7, 8), t2 = fp_thread(p, 9, 10);
	fp_set_top(p, t1, fp_frame(p, *code, 2, fp_frame(p, *code, 1, 0, 0), 0));
	fp_set_top(p, t2, fp_frame(p, *code, 3, 0, 0));
	if (l->runtime.tstate_current != PYU_NO_FIELD)
		fm_u64(&p->m, runtime + (uint64_t)l->runtime.tstate_current, t2);
	char text[64];
	int n = snprintf(text, sizeof(text), "%u.%u.%u (main, Jan  1 2024, 00:00:00) [GCC]",
			 version >> 24, (version >> 16) & 0xff, (version >> 8) & 0xff);
	fm_put(&p->m, runtime + 1024, text, (size_t)n + 1);
	char name[64];
	snprintf(name, sizeof(name), "/nonexistent/lib/libpython%u.%u.so.1.0", version >> 24,
		 (version >> 16) & 0xff);
	uint64_t page = runtime & ~0xfffull;
	ck_assert_ptr_null(pyu_target_add_mapping(p->m.t, page, page + 0x2000, 0, 1, name));
	return runtime;
}

START_TEST(test_scan_finds)
{
	struct fake_py p;
	uint64_t code;
	uint32_t v = scan_versions[_i];
	uint64_t runtime = scan_setup(&p, v, &code);
	const struct pyu_layout *l = p.l;
	struct pyu_runtime rt;
	struct pyu_error *err = pyu_runtime_find(p.m.t, &rt);
	ck_assert_msg(err == NULL, "%s", pyu_error_message(err));
	ck_assert_uint_eq(rt.interp_head_addr, p.rt.interp_head_addr);
	ck_assert(rt.memory_only);
	ck_assert(rt.version_exact);
	ck_assert_uint_eq(rt.version_hex, v);
	ck_assert_uint_eq(rt.types.addr[PYU_TYPE_CODE], p.m.code_type);
	if (l->gil == PYU_GIL_RUNTIME_CURRENT)
		ck_assert_uint_eq(rt.tstate_current_addr,
				  runtime + (uint64_t)l->runtime.tstate_current);
	else
		ck_assert_uint_eq(rt.tstate_current_addr, 0);
	ck_assert_msg(strstr(rt.notes, "found in memory alone"), "%s", rt.notes);

	struct pyu_stacks *s = NULL;
	err = pyu_stacks_collect(p.m.t, &s);
	ck_assert_msg(err == NULL, "%s", pyu_error_message(err));
	ck_assert_uint_eq(s->thread_count, 2);
	ck_assert_uint_eq(s->error_count, 0);
	ck_assert_uint_eq(s->threads[0].frame_count, 1); // t2, the head of the list
	ck_assert_uint_eq(s->threads[1].frame_count, 2);
	ck_assert_int_eq(s->threads[1].frames[0].loc.line, 13);
	// 2.7/3.6 keep the GIL holder in a global that only symbols locate: unknown.
	ck_assert_int_eq(s->threads[0].holds_gil, l->gil == PYU_GIL_RUNTIME_CURRENT ? 1
						  : l->gil == PYU_GIL_CURRENT_SYMBOL ? -1 : 0);
	bool noted = false;
	for (uint32_t i = 0; i < s->note_count; i++)
		noted = noted || strstr(s->notes[i], "read from memory alone");
	ck_assert(noted);
	pyu_stacks_destroy(s);
	fm_destroy(&p.m);
}
END_TEST

// Damage that must make the scan fail (never a wrong stack): the error then says what was
// scanned. 0: a thread state that does not point back; 1: a code object of a type whose size
// is not the code type's; 2: 3.7+ interpreters.main names another interpreter; 3: the second
// thread's code object has another code-shaped type than the first's; 4: no frames at all.
START_TEST(test_scan_damaged)
{
	for (int damage = 0; damage < 5; damage++) {
		struct fake_py p;
		uint64_t code;
		uint64_t runtime = scan_setup(&p, scan_versions[_i], &code);
		const struct pyu_layout *l = p.l;
		uint64_t t2, t1;
		memcpy(&t2, p.m.buf + (p.interp + (uint64_t)l->interp.threads_head - FM_BASE), 8);
		memcpy(&t1, p.m.buf + (t2 + (uint64_t)l->tstate.next - FM_BASE), 8);
		if (damage == 0) {
			fm_u64(&p.m, t1 + (uint64_t)l->tstate.interp, p.interp + 64);
		} else if (damage == 1) {
			fm_u64(&p.m, code + (uint64_t)l->ob_type, fm_type(&p.m, "code", 0));
		} else if (damage == 2) {
			if (l->runtime.interpreters_main == PYU_NO_FIELD) {
				fm_destroy(&p.m); // 2.7/3.6: no _PyRuntime to disagree
				continue;
			}
			fm_u64(&p.m, runtime + (uint64_t)l->runtime.interpreters_main, t1);
		} else if (damage == 3) {
			uint64_t other = fp_code(&p, "g", 10, 4);
			fm_u64(&p.m, other + (uint64_t)l->ob_type, fm_code_type(&p.m, "code"));
			fp_set_top(&p, t1, fp_frame(&p, other, 1, 0, 0));
		} else {
			fp_set_top(&p, t1, 0);
			fp_set_top(&p, t2, 0);
		}
		struct pyu_stacks *s = NULL;
		struct pyu_error *err = pyu_stacks_collect(p.m.t, &s);
		ck_assert_msg(err != NULL, "damage %d: found anyway", damage);
		ck_assert_int_eq(pyu_error_code(err), PYU_ERR_NOT_PYTHON);
		const char *msg = pyu_error_message(err);
		ck_assert_msg(strstr(msg, "no interpreter list that validates") &&
			      strstr(msg, "bytes of its writable data") && strstr(msg, "libpython"),
			      "damage %d: %s", damage, msg);
		pyu_error_destroy(err);
		fm_destroy(&p.m);
	}
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
	tcase_add_test(tc, test_image_in_memory);
	tcase_add_loop_test(tc, test_scan_finds, 0, sizeof(scan_versions) / sizeof(scan_versions[0]));
	tcase_add_loop_test(tc, test_scan_damaged, 0,
			    sizeof(scan_versions) / sizeof(scan_versions[0]));
	suite_add_tcase(s, tc);
	return s;
}

PYU_CHECK_MAIN(runtime_suite)
