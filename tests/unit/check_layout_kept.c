// check_layout_kept.c - the _Py_DebugOffsets blocks parsed, kept library-wide (layout.c), as
// the Python API uses them: from several threads at once, on more blocks than are kept.
#include <pthread.h>
#include <stdio.h>

#include "checkmain.h"
#include "layout.h"

#include "dbgoffsets.h"
#include "threads.h"

static void set_word(uint8_t *buf, size_t word, uint64_t v)
{
	memcpy(buf + 8 * word, &v, 8);
}

// The parsed blocks are kept library-wide, and the Python API parses on several threads at
// once: blocks parsed concurrently, more of them than are kept (each one evicts another), give
// every thread what a parse of the same bytes gave alone.
#define CONCURRENT_BLOCKS 6
#define CONCURRENT_THREADS 4
struct parsed {
	uint8_t buf[PYU_DEBUG_OFFSETS_MAX];
	size_t len;
	struct pyu_layout l;
	bool ft;
	char notes[512];
};
static struct parsed blocks[CONCURRENT_BLOCKS];

static void *parse_blocks(void *arg)
{
	uintptr_t seed = (uintptr_t)arg, wrong = 0;
	for (unsigned i = 0; i < 3000; i++) {
		const struct parsed *want = &blocks[(i * 7 + seed) % CONCURRENT_BLOCKS];
		struct pyu_layout l;
		bool ft = !want->ft;
		char notes[512] = "x";
		struct pyu_error *err = pyu_layout_from_debug_offsets(want->buf, want->len, &l, &ft,
								      notes, sizeof(notes));
		if (err || memcmp(&l, &want->l, sizeof(l)) != 0 || ft != want->ft ||
		    strcmp(notes, want->notes) != 0)
			wrong++;
		pyu_error_destroy(err);
	}
	return (void *)wrong;
}

START_TEST(test_debug_offsets_concurrent)
{
	struct {
		const uint64_t *vals;
		size_t n;
		size_t word;
		uint64_t value; // word 0: none changed
	} spec[CONCURRENT_BLOCKS] = {
		{dbg_313, sizeof(dbg_313) / 8, 0, 0},
		{dbg_314, sizeof(dbg_314) / 8, 0, 0},
		{dbg_315, sizeof(dbg_315) / 8, 0, 0},
		{dbg_314, sizeof(dbg_314) / 8, 26, 96}, // thread_state.current_frame moved
		{dbg_314, sizeof(dbg_314) / 8, 2, 1},   // free-threaded
		{dbg_315, sizeof(dbg_315) / 8, 26, 96},
	};
	for (size_t i = 0; i < CONCURRENT_BLOCKS; i++) {
		struct parsed *p = &blocks[i];
		p->len = make_block(p->buf, spec[i].vals, spec[i].n);
		if (spec[i].word)
			set_word(p->buf, spec[i].word, spec[i].value);
		struct pyu_error *err = pyu_layout_from_debug_offsets(p->buf, p->len, &p->l,
								      &p->ft, p->notes,
								      sizeof(p->notes));
		ck_assert_msg(err == NULL, "block %zu: %s", i, pyu_error_message(err));
	}
	ck_assert(blocks[4].ft);
	ck_assert_int_eq(blocks[3].l.tstate.current_frame, 96);
	ck_assert_msg(strstr(blocks[3].notes, "thread_state.current_frame"), "%s",
		      blocks[3].notes);
	ck_assert_uint_eq(run_threads(parse_blocks, CONCURRENT_THREADS), 0);
}
END_TEST

static Suite *layout_kept_suite(void)
{
	Suite *s = suite_create("layout_kept");
	TCase *tc = tcase_create("layout_kept");
	tcase_add_test(tc, test_debug_offsets_concurrent);
	suite_add_tcase(s, tc);
	return s;
}

PYU_CHECK_MAIN(layout_kept_suite)
