// threads.c - interpreters and their thread states: every interpreter on the runtime's list
// (sub-interpreters too), every thread state of each, with its ids, whether it holds the GIL,
// and its frames (frames.c). Lists are bounded and checked for cycles; a thread state that
// cannot be read becomes a snapshot error and the walk goes on with the next interpreter.
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "bytes.h"
#include "runtime.h"

// glibc x86-64 keeps the kernel tid at this offset of struct pthread (checked on 2.36); the
// value is accepted only when it names one of the target's threads.
#define GLIBC_PTHREAD_TID_OFFSET 0x2d0

static int64_t derive_native_id(struct pyu_walk *w, uint64_t pthread_id)
{
	uint32_t tid;
	struct pyu_error *err = pyu_target_read_u32(w->t, pthread_id + GLIBC_PTHREAD_TID_OFFSET,
						    &tid);
	if (err) {
		pyu_error_destroy(err);
		return -1;
	}
	return pyu_target_has_thread(w->t, (int64_t)tid) ? (int64_t)tid : -1;
}

// The thread state that holds the GIL for @interp, or 0 when none / unknown (*known false).
static uint64_t gil_holder(struct pyu_walk *w, uint64_t interp, bool *known)
{
	const struct pyu_runtime *rt = w->rt;
	const struct pyu_layout *l = &rt->layout;
	uint64_t holder = 0;
	struct pyu_error *err = NULL;
	*known = false;
	if (rt->free_threaded)
		return 0; // the GIL is normally disabled: many threads may run at once
	switch (l->gil) {
	case PYU_GIL_CURRENT_SYMBOL:
	case PYU_GIL_RUNTIME_CURRENT:
		if (!rt->tstate_current_addr)
			return 0;
		err = pyu_target_read_u64(w->t, rt->tstate_current_addr, &holder);
		break;
	case PYU_GIL_INTERP_STRUCT: {
		uint64_t gil;
		uint32_t locked = 0;
		if (l->interp.ceval_gil == PYU_NO_FIELD)
			return 0;
		err = pyu_target_read_u64(w->t, interp + (uint64_t)l->interp.ceval_gil, &gil);
		if (!err)
			err = pyu_target_read_u32(w->t, gil + (uint64_t)l->interp.gil_locked, &locked);
		if (!err)
			err = pyu_target_read_u64(w->t, gil + (uint64_t)l->interp.gil_holder, &holder);
		if (!err && !locked)
			holder = 0; // last_holder keeps the previous holder after release
		break;
	}
	case PYU_GIL_UNKNOWN:
		return 0;
	}
	if (err) {
		pyu_error_destroy(err);
		return 0;
	}
	*known = true;
	return holder;
}

// Adds one thread (zeroed, ids filled by the caller) and returns it.
static struct pyu_error *add_thread(struct pyu_stacks *s, uint32_t *cap,
				    struct pyu_thread_info **ret)
{
	if (s->thread_count == *cap) {
		uint32_t n = *cap ? *cap * 2 : 8;
		struct pyu_thread_info *th = realloc(s->threads, n * sizeof(*th));
		if (!th)
			return &pyu_error_nomem;
		s->threads = th;
		*cap = n;
	}
	struct pyu_thread_info *th = &s->threads[s->thread_count++];
	memset(th, 0, sizeof(*th));
	th->native_thread_id = -1;
	th->holds_gil = -1;
	th->interpreter_id = -1;
	*ret = th;
	return NULL;
}

// Thread states read before their frames are walked: their stacks are then prefetched together
// (pyu_walk_prefetch_starts), a few gathered reads for the batch instead of reads per thread.
#define THREAD_BATCH 32

struct pending_thread {
	uint32_t index; // in w->s->threads (which may move as it grows)
	struct pyu_frame_start start;
};

static struct pyu_error *walk_pending(struct pyu_walk *w, struct pending_thread *batch,
				      unsigned *n)
{
	struct pyu_frame_start starts[THREAD_BATCH];
	struct pyu_stack_copy copies[THREAD_BATCH] = {{0}};
	for (unsigned i = 0; i < *n; i++)
		starts[i] = batch[i].start;
	pyu_walk_prefetch_starts(w, starts, copies, *n);
	unsigned count = *n;
	*n = 0;
	struct pyu_error *err = NULL;
	for (unsigned i = 0; i < count && !err; i++)
		err = pyu_walk_frames(w, &batch[i].start, &copies[i],
				      &w->s->threads[batch[i].index]);
	for (unsigned i = 0; i < count; i++)
		pyu_stack_copy_clear(&copies[i]);
	return err;
}

// A hint before the reads below: @interp's id and the fields that lead to the GIL's state
// (gil_holder) and to the first thread state, in one gathered read (3.15's are on two pages),
// then those two in one more, rather than each read after the one before.
static void prefetch_gil_and_head(struct pyu_walk *w, uint64_t interp)
{
	const struct pyu_layout *l = &w->rt->layout;
	bool gil_struct = !w->rt->free_threaded && l->gil == PYU_GIL_INTERP_STRUCT &&
			  l->interp.ceval_gil != PYU_NO_FIELD;
	uint64_t fields[3] = {interp + (uint64_t)l->interp.threads_head,
			      gil_struct ? interp + (uint64_t)l->interp.ceval_gil : 0,
			      l->interp.id != PYU_NO_FIELD ? interp + (uint64_t)l->interp.id : 0};
	pyu_target_prefetch_scattered(w->t, fields, 3, 8); // 0: none
	uint64_t head = 0, gil = 0, addrs[3], lens[3];
	size_t n = 0;
	if (pyu_target_peek_u64(w->t, fields[0], &head) && head && l->tstate.size > 0) {
		addrs[n] = head;
		lens[n++] = (uint64_t)l->tstate.size;
	}
	if (gil_struct && pyu_target_peek_u64(w->t, fields[1], &gil) && gil) {
		addrs[n] = gil + (uint64_t)l->interp.gil_locked;
		lens[n++] = 4;
		addrs[n] = gil + (uint64_t)l->interp.gil_holder;
		lens[n++] = 8;
	}
	if (n > 1)
		pyu_target_prefetch_ranges(w->t, addrs, lens, n);
}

static struct pyu_error *walk_interp_threads(struct pyu_walk *w, uint64_t interp,
					     uint32_t *cap)
{
	const struct pyu_layout *l = &w->rt->layout;
	struct pyu_stacks *s = w->s;
	int64_t interp_id = -1;
	prefetch_gil_and_head(w, interp);
	if (l->interp.id != PYU_NO_FIELD) {
		uint64_t id;
		struct pyu_error *err = pyu_target_read_u64(w->t, interp + (uint64_t)l->interp.id,
							    &id);
		if (err)
			pyu_error_destroy(err);
		else
			interp_id = (int64_t)id;
	}
	uint64_t tstate;
	struct pyu_error *err = pyu_target_read_u64(w->t,
						    interp + (uint64_t)l->interp.threads_head,
						    &tstate);
	if (err) {
		pyu_stacks_add_error(s, "interpreter at 0x%" PRIx64 ": %s", interp,
				     pyu_error_message(err));
		pyu_error_destroy(err);
		return NULL;
	}
	bool gil_known;
	uint64_t holder = gil_holder(w, interp, &gil_known);
	uint64_t saved = 0, power = 1, steps = 0; // Brent's cycle check
	uint8_t buf[PYU_LAYOUT_MAX_STRUCT];
	struct pending_thread batch[THREAD_BATCH];
	unsigned pending = 0;
	for (uint32_t n = 0; tstate; n++) {
		if (n >= PYU_MAX_THREADS_WALKED) {
			pyu_stacks_add_error(s, "interpreter at 0x%" PRIx64
					     ": more than %d thread states, the rest skipped",
					     interp, PYU_MAX_THREADS_WALKED);
			break;
		}
		if (tstate == saved) {
			pyu_stacks_add_error(s, "interpreter at 0x%" PRIx64
					     ": cycle in the thread list at 0x%" PRIx64, interp,
					     tstate);
			break;
		}
		if (++steps == power) {
			saved = tstate;
			power *= 2;
			steps = 0;
		}
		err = pyu_target_read(w->t, tstate, buf, (size_t)l->tstate.size);
		if (err) {
			pyu_stacks_add_error(s, "thread state at 0x%" PRIx64 ": %s", tstate,
					     pyu_error_message(err));
			pyu_error_destroy(err);
			break;
		}
		struct pyu_thread_info *th;
		err = add_thread(s, cap, &th);
		if (err)
			return err;
		uint32_t index = s->thread_count - 1;
		th->tstate_address = tstate;
		th->interp_address = interp;
		th->interpreter_id = interp_id;
		th->thread_id = pyu_get_u64(buf, l->tstate.thread_id);
		if (l->tstate.native_thread_id != PYU_NO_FIELD)
			th->native_thread_id = (int64_t)pyu_get_u64(buf, l->tstate.native_thread_id);
		else if (th->thread_id)
			th->native_thread_id = derive_native_id(w, th->thread_id);
		th->holds_gil = gil_known ? holder == tstate : -1;
		uint64_t first = 0, base = 0;
		bool first_unknown = false;
		switch (l->frame_source) {
		case PYU_FRAME_FROM_TSTATE_FRAME:
			first = pyu_get_u64(buf, l->tstate.frame);
			break;
		case PYU_FRAME_FROM_CFRAME: {
			uint64_t cframe = pyu_get_u64(buf, l->tstate.cframe);
			if (cframe) {
				err = pyu_target_read_u64(w->t,
							  cframe + (uint64_t)l->tstate.cframe_current,
							  &first);
				if (err) {
					// The cframe lives on the native stack, which a core
					// may lack: start from the data stack instead.
					pyu_stacks_add_note(s, "thread %" PRIu64 ": cframe at 0x%"
							    PRIx64 ": %s", th->thread_id, cframe,
							    pyu_error_message(err));
					pyu_error_destroy(err);
					first = 0;
					first_unknown = true;
				}
			}
			break;
		}
		case PYU_FRAME_FROM_CURRENT_FRAME:
			first = pyu_get_u64(buf, l->tstate.current_frame);
			break;
		}
		if (l->chain_ends_at_base_frame && l->tstate.base_frame != PYU_NO_FIELD)
			base = pyu_get_u64(buf, l->tstate.base_frame);
		struct pyu_frame_start start = {first, base, 0, 0, th->thread_id, first_unknown, 0,
						true};
		if (l->tstate.c_tracefunc != PYU_NO_FIELD && l->tstate.c_profilefunc != PYU_NO_FIELD)
			start.traced = pyu_get_u64(buf, l->tstate.c_tracefunc) ||
				       pyu_get_u64(buf, l->tstate.c_profilefunc);
		if (l->frame_source == PYU_FRAME_FROM_CFRAME)
			start.cframe = pyu_get_u64(buf, l->tstate.cframe);
		if (l->tstate.datastack_chunk != PYU_NO_FIELD &&
		    l->tstate.datastack_top != PYU_NO_FIELD) {
			start.chunk = pyu_get_u64(buf, l->tstate.datastack_chunk);
			start.top = pyu_get_u64(buf, l->tstate.datastack_top);
		}
		tstate = pyu_get_u64(buf, l->tstate.next);
		batch[pending++] = (struct pending_thread){index, start};
		if (pending == THREAD_BATCH && (err = walk_pending(w, batch, &pending)) != NULL)
			return err;
	}
	return walk_pending(w, batch, &pending);
}

static struct pyu_error *walk_interpreters(struct pyu_walk *w);

struct pyu_error *pyu_walk_threads(struct pyu_walk *w)
{
	struct pyu_error *err = walk_interpreters(w);
	// Also after an error: the frames found before it stand, and so do their lines.
	struct pyu_error *lerr = pyu_walk_read_linenos(w);
	if (!err)
		return lerr;
	pyu_error_destroy(lerr);
	return err;
}

static struct pyu_error *walk_interpreters(struct pyu_walk *w)
{
	uint64_t interp;
	struct pyu_error *err = pyu_target_read_u64(w->t, w->rt->interp_head_addr, &interp);
	if (err)
		return pyu_error_wrap(err, "reading the interpreter list head at 0x%" PRIx64,
				      w->rt->interp_head_addr);
	uint32_t cap = w->s->thread_count;
	uint64_t saved = 0, power = 1, steps = 0;
	for (uint32_t n = 0; interp; n++) {
		if (n >= PYU_MAX_INTERPRETERS) {
			pyu_stacks_add_error(w->s, "more than %d interpreters, the rest skipped",
					     PYU_MAX_INTERPRETERS);
			break;
		}
		if (interp == saved) {
			pyu_stacks_add_error(w->s, "cycle in the interpreter list at 0x%" PRIx64,
					     interp);
			break;
		}
		if (++steps == power) {
			saved = interp;
			power *= 2;
			steps = 0;
		}
		err = walk_interp_threads(w, interp, &cap);
		if (err)
			return err;
		uint64_t next;
		err = pyu_target_read_u64(w->t, interp + (uint64_t)w->rt->layout.interp.next, &next);
		if (err) {
			pyu_stacks_add_error(w->s, "interpreter at 0x%" PRIx64 ": %s", interp,
					     pyu_error_message(err));
			pyu_error_destroy(err);
			break;
		}
		interp = next;
	}
	return NULL;
}
