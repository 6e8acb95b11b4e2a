// nesting.c - one OS thread that runs code in several interpreters has a thread state in each
// (sub-interpreters, 3.12+): their stacks are one stack, the innermost interpreter's frames
// first. Each thread state's outermost entry frame sits on the C stack of the thread that
// runs it, deeper (lower) for a later call, and threads' stacks do not overlap: sorted by
// that address, the thread states of one OS thread are neighbours, ending with the thread's
// own outermost one. That one is found by the ids it claims (the highest entry frame of all
// thread states naming that thread); the ids of the others are not trusted (3.12 runs code in
// an interpreter on the thread state that created it, whichever thread runs it). Model level:
// reads nothing.
#include "nesting.h"

#include <stdlib.h>

#include "runtime.h"

static bool same_os_thread(const struct pyu_thread_info *a, const struct pyu_thread_info *b)
{
	if (a->native_thread_id > 0 && b->native_thread_id > 0)
		return a->native_thread_id == b->native_thread_id;
	return a->thread_id && a->thread_id == b->thread_id;
}

// Whether @i has the highest entry frame of the thread states naming its OS thread.
static bool is_anchor(const struct pyu_stacks *s, uint32_t i)
{
	const struct pyu_thread_info *a = &s->threads[i];
	for (uint32_t j = 0; j < s->thread_count; j++)
		if (j != i && s->threads[j].entry_frame > a->entry_frame &&
		    same_os_thread(a, &s->threads[j]))
			return false;
	return true;
}

static int cmp_i64(const void *a, const void *b)
{
	int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
	return x < y ? -1 : x > y;
}

// Whether every thread state names an OS thread by its native id, each a different one: then
// each is its OS thread's only one, and there is nothing to join (the common case; checking
// each against all the others was a twentieth of a 100-thread snapshot's instructions).
static bool all_apart(const struct pyu_stacks *s)
{
	if (s->thread_count > PYU_NESTING_MAX_STATES)
		return false;
	int64_t *ids = malloc((s->thread_count ? s->thread_count : 1) * sizeof(*ids));
	uint32_t n = 0;
	bool apart = ids != NULL;
	for (uint32_t i = 0; apart && i < s->thread_count; i++) {
		if (!s->threads[i].entry_frame)
			continue;
		apart = s->threads[i].native_thread_id > 0;
		ids[n++] = s->threads[i].native_thread_id;
	}
	if (apart)
		qsort(ids, n, sizeof(ids[0]), cmp_i64);
	for (uint32_t k = 1; apart && k < n; k++)
		apart = ids[k] != ids[k - 1];
	free(ids);
	return apart;
}

void pyu_link_nested(struct pyu_stacks *s)
{
	uint32_t order[PYU_NESTING_MAX_STATES], n = 0;
	if (all_apart(s))
		return;
	for (uint32_t i = 0; i < s->thread_count; i++) {
		if (!s->threads[i].entry_frame)
			continue;
		if (n == PYU_NESTING_MAX_STATES) {
			pyu_stacks_add_note(s, "more than %u thread states: nested interpreters not "
					    "joined", PYU_NESTING_MAX_STATES);
			return;
		}
		order[n++] = i;
	}
	for (uint32_t k = 1; k < n; k++) // insertion sort by entry frame, lowest first
		for (uint32_t m = k; m > 0 && s->threads[order[m - 1]].entry_frame >
						s->threads[order[m]].entry_frame; m--) {
			uint32_t t = order[m];
			order[m] = order[m - 1];
			order[m - 1] = t;
		}
	uint32_t run = 0; // first thread state of the current OS thread's run
	for (uint32_t k = 0; k < n; k++) {
		if (!is_anchor(s, order[k]))
			continue;
		for (uint32_t m = run; m < k; m++) {
			s->threads[order[m]].outer = order[m + 1] + 1;
			s->threads[order[m + 1]].inner = order[m] + 1;
		}
		run = k + 1;
	}
}
