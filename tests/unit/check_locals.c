// check_locals.c - a frame's locals (locals.c) on synthetic frames of every version: arguments,
// *args, an unbound local, a cell that is an argument, a cell, a free variable, a hidden slot
// (3.11+), tagged references (3.14+); module bodies point at their dict; damaged names tuples
// and frames are errors, not crashes.
#include "checkmain.h"
#include "fakepy.h"
#include "locals.h"

static const uint32_t versions[] = {0x020712f0, 0x03060ff0, 0x030912f0, 0x030a0df0,
				    0x030b07f0, 0x030c01f0, 0x030d00f0, 0x030e0af0, 0x030f02f0};
#define NVERSIONS (sizeof(versions) / sizeof(versions[0]))

static uint64_t tuple_of(struct fake_py *p, const char *const *names, size_t n)
{
	const struct pyu_layout *l = p->l;
	uint64_t t = fm_alloc(&p->m, (size_t)l->tuple_item + 8 * n + 8);
	fm_u64(&p->m, t + (uint64_t)l->ob_size, n);
	for (size_t i = 0; i < n; i++)
		fm_u64(&p->m, t + (uint64_t)l->tuple_item + 8 * i, fm_str(&p->m, names[i]));
	return t;
}

static uint64_t cell_of(struct fake_py *p, uint64_t cell_type, uint64_t value)
{
	uint64_t c = fm_alloc(&p->m, 64);
	fm_u64(&p->m, c + (uint64_t)p->l->ob_type, cell_type);
	fm_u64(&p->m, c + (uint64_t)p->l->cell_ref, value);
	return c;
}

// 3.14+ slots are tagged: 1 is the NULL reference, bit 0 marks a deferred reference.
static uint64_t slot(const struct pyu_layout *l, uint64_t v, bool deferred)
{
	if (!l->stackref_mask)
		return v;
	return v ? v | (deferred ? 1 : 0) : 1;
}

// def f(a, b, *args): x (never bound), y = ...; b and c are captured by an inner function,
// fv comes from an enclosing one.
START_TEST(test_every_kind)
{
	struct fake_py p;
	fp_init(&p, versions[_i]);
	const struct pyu_layout *l = p.l;
	struct fakemem *m = &p.m;
	uint64_t cell_type = fm_type(m, "cell", 0);
	uint64_t code = fp_code(&p, "f", 10, 8);
	uint64_t a = 0xa000, b = 0xb000, args = 0xa7a0, y = 0x7000, c = 0xc000, fv = 0xf000;
	uint64_t frame;
	fm_u32(m, code + (uint64_t)l->code.argcount, 2);
	if (l->code.kwonlyargcount != PYU_NO_FIELD)
		fm_u32(m, code + (uint64_t)l->code.kwonlyargcount, 0);
	fm_u32(m, code + (uint64_t)l->code.flags, PYU_CO_OPTIMIZED | PYU_CO_VARARGS);
	if (l->chain == PYU_CHAIN_FRAME_OBJECT) {
		const char *var[] = {"a", "b", "args", "x", "y"}, *cellv[] = {"b", "c"},
			   *freev[] = {"fv"};
		fm_u64(m, code + (uint64_t)l->code.varnames, tuple_of(&p, var, 5));
		fm_u64(m, code + (uint64_t)l->code.cellvars, tuple_of(&p, cellv, 2));
		fm_u64(m, code + (uint64_t)l->code.freevars, tuple_of(&p, freev, 1));
		fm_u32(m, code + (uint64_t)l->code.nlocals, 5);
		// The frame object grows by its slots.
		frame = fm_alloc(m, (size_t)l->frame.f_localsplus + 8 * 8);
		fm_u64(m, frame + (uint64_t)l->frame.f_code, code);
		uint64_t slots[] = {a, l->str == PYU_STR_PY2 ? b : 0, args, 0, y,
				    cell_of(&p, cell_type, b), cell_of(&p, cell_type, c),
				    cell_of(&p, cell_type, fv)};
		fm_put(m, frame + (uint64_t)l->frame.f_localsplus, slots, sizeof(slots));
	} else {
		const char *names[] = {"a", "b", "args", "x", "y", "c", "fv", "h"};
		uint8_t kinds[] = {0x20, 0x60, 0x20, 0x20, 0x20, 0x40, 0x80, 0x30};
		fm_u64(m, code + (uint64_t)l->code.localsplusnames, tuple_of(&p, names, 8));
		fm_u64(m, code + (uint64_t)l->code.localspluskinds, fm_bytes(m, kinds, 8));
		fm_u32(m, code + (uint64_t)l->code.nlocalsplus, 8);
		frame = fm_alloc(m, (size_t)l->iframe.localsplus + 8 * 8);
		fp_iframe_at(&p, frame, code, 1, 0, 0);
		uint64_t slots[] = {slot(l, a, true), slot(l, cell_of(&p, cell_type, b), false),
				    slot(l, args, true), slot(l, 0, false), slot(l, y, false),
				    slot(l, cell_of(&p, cell_type, c), true),
				    slot(l, cell_of(&p, cell_type, fv), false), slot(l, 0x4444, false)};
		fm_put(m, frame + (uint64_t)l->iframe.localsplus, slots, sizeof(slots));
	}
	struct pyu_locals ls;
	struct pyu_error *err = pyu_frame_locals(m->t, l, NULL, frame, code, 0, &ls);
	ck_assert_msg(!err, "%s: %s", l->name, pyu_error_message(err));
	const char *want_names[] = {"a", "b", "args", "y", "c", "fv"};
	enum pyu_local_kind want_kinds[] = {PYU_LOCAL_ARGUMENT, PYU_LOCAL_ARGUMENT,
					    PYU_LOCAL_ARGUMENT, PYU_LOCAL_LOCAL, PYU_LOCAL_CELL,
					    PYU_LOCAL_FREE};
	uint64_t want_values[] = {a, b, args, y, c, fv};
	ck_assert_msg(ls.count == 6, "%s: %u locals", l->name, ls.count);
	for (uint32_t i = 0; i < 6; i++) {
		ck_assert_str_eq(ls.items[i].name, want_names[i]);
		ck_assert_int_eq(ls.items[i].kind, want_kinds[i]);
		ck_assert_uint_eq(ls.items[i].address, want_values[i]);
	}
	ck_assert(!ls.truncated);
	ck_assert_uint_eq(ls.dict, 0);
	pyu_locals_clear(&ls);
	// With a cache: the same locals; the second time the names come from the cache (the
	// code's names tuple is gone from memory by then).
	struct pyu_locals_cache *cache = pyu_locals_cache_create();
	ck_assert_ptr_nonnull(cache);
	int32_t names_off = l->chain == PYU_CHAIN_FRAME_OBJECT ? l->code.varnames
							       : l->code.localsplusnames;
	uint64_t names_tuple = 0;
	ck_assert_ptr_null(pyu_target_read_u64(m->t, code + (uint64_t)names_off, &names_tuple));
	for (int round = 0; round < 2; round++) {
		err = pyu_frame_locals(m->t, l, cache, frame, code, 0, &ls);
		ck_assert_msg(!err, "%s: %s", l->name, pyu_error_message(err));
		ck_assert_uint_eq(ls.count, 6);
		for (uint32_t i = 0; i < 6; i++) {
			ck_assert_str_eq(ls.items[i].name, want_names[i]);
			ck_assert_int_eq(ls.items[i].kind, want_kinds[i]);
			ck_assert_uint_eq(ls.items[i].address, want_values[i]);
		}
		pyu_locals_clear(&ls);
		fm_u64(m, code + (uint64_t)names_off, 0x10); // unreadable from now on
	}
	pyu_locals_cache_destroy(cache);
	fm_u64(m, code + (uint64_t)names_off, names_tuple);
	// A bound on the items cuts and says so.
	ck_assert_ptr_null(pyu_frame_locals(m->t, l, NULL, frame, code, 2, &ls));
	ck_assert_uint_eq(ls.count, 2);
	ck_assert(ls.truncated);
	pyu_locals_clear(&ls);
	// A names tuple claiming a million items is refused.
	uint64_t names = fm_alloc(m, 64);
	fm_u64(m, names + (uint64_t)l->ob_size, 1000000);
	fm_u64(m, code + (uint64_t)(l->chain == PYU_CHAIN_FRAME_OBJECT ? l->code.varnames
									 : l->code.localsplusnames),
	       names);
	err = pyu_frame_locals(m->t, l, NULL, frame, code, 0, &ls);
	ck_assert_ptr_nonnull(err);
	ck_assert_int_eq(pyu_error_code(err), PYU_ERR_CORRUPT);
	pyu_error_destroy(err);
	// An unreadable frame is an error.
	err = pyu_frame_locals(m->t, l, NULL, 0x10, code, 0, &ls);
	ck_assert_ptr_nonnull(err);
	pyu_error_destroy(err);
	fm_destroy(m);
}
END_TEST

// A module body keeps its locals in a dict: the frame points at it, nothing else is listed.
START_TEST(test_module_body)
{
	struct fake_py p;
	fp_init(&p, versions[_i]);
	const struct pyu_layout *l = p.l;
	struct fakemem *m = &p.m;
	uint64_t code = fp_code(&p, "<module>", 1, 8);
	uint64_t frame = fp_frame(&p, code, 1, 0, 0);
	fm_u32(m, code + (uint64_t)l->code.flags, 0x40);
	bool objects = l->chain == PYU_CHAIN_FRAME_OBJECT;
	fm_u64(m, frame + (uint64_t)(objects ? l->frame.f_locals : l->iframe.f_locals), 0xd1c7);
	fm_u64(m, frame + (uint64_t)(objects ? l->frame.f_globals : l->iframe.f_globals), 0x6106);
	struct pyu_locals ls;
	ck_assert_ptr_null(pyu_frame_locals(m->t, l, NULL, frame, code, 0, &ls));
	ck_assert_uint_eq(ls.count, 0);
	ck_assert_uint_eq(ls.dict, 0xd1c7);
	ck_assert_uint_eq(ls.globals, 0x6106);
	pyu_locals_clear(&ls);
	fm_destroy(m);
}
END_TEST

static Suite *locals_suite(void)
{
	Suite *s = suite_create("locals");
	TCase *tc = tcase_create("locals");
	tcase_add_loop_test(tc, test_every_kind, 0, NVERSIONS);
	tcase_add_loop_test(tc, test_module_body, 0, NVERSIONS);
	suite_add_tcase(s, tc);
	return s;
}

PYU_CHECK_MAIN(locals_suite)
