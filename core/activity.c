// activity.c - pyu_thread_activity(): a thread's system call, fatal signal and CPU time, read
// when first asked for (a thread header printed; pyu_read_activities for all the headers of a
// document at once), not by every snapshot: from what the target
// knows of its kernel thread (target.h: /proc, a core's notes, a debugger's registers) and the
// crash a core records; the numbers named by the architecture's table (syscalls.c).
#include <stddef.h>
#include <stdint.h>

#include "error.h"

#include "activity.h"
#include "stacks.h"
#include "syscalls.h"
#include "target.h"

static enum pyu_state state_of_wait(enum pyu_wait_kind kind)
{
	switch (kind) {
	case PYU_WAIT_LOCK:
		return PYU_STATE_LOCK;
	case PYU_WAIT_IO:
		return PYU_STATE_IO;
	case PYU_WAIT_SLEEP:
		return PYU_STATE_SLEEP;
	case PYU_WAIT_OTHER:
		break;
	}
	return PYU_STATE_SYSCALL;
}

// The timed wait a thread blocked in the restart call resumes, by the call its code made at
// @st's PC (the kernel keeps the thread there, to make the call again); NULL when the code
// cannot be read or does not say, or names a call the kernel does not restart so.
static const char *restarted_wait(struct pyu_target *t, const struct pyu_arch *arch,
				  const struct pyu_thread_status *st)
{
	uint8_t code[16];
	size_t len = arch->call_code_len;
	if (!st->has_pc || len == 0 || len > sizeof(code) || st->pc < len)
		return NULL;
	struct pyu_error *err = pyu_target_read(t, st->pc - len, code, len);
	if (err) {
		pyu_error_destroy(err);
		return NULL;
	}
	const char *name = pyu_syscall_name(arch, pyu_syscall_before_pc(arch, code, len));
	return pyu_syscall_restartable(name) ? name : NULL;
}

// Fills thread @th's activity from what its kernel thread's status @st says and the crash the
// target records.
static void fill_activity(const struct pyu_stacks *s, struct pyu_thread_info *th,
			  const struct pyu_thread_status *st)
{
	struct pyu_activity *a = &th->activity;
	th->activity_read = true;
	*a = (struct pyu_activity){.state = PYU_STATE_UNKNOWN};
	a->has_cpu = st->cpu_ns >= 0;
	a->cpu_ns = a->has_cpu ? st->cpu_ns : 0;
	if (st->syscall == -1) {
		a->state = PYU_STATE_RUNNING;
	} else if (st->syscall >= 0) {
		const struct pyu_arch *arch = pyu_target_arch(s->target);
		a->syscall = st->syscall;
		a->syscall_name = pyu_syscall_name(arch, st->syscall);
		a->state = state_of_wait(pyu_syscall_wait_kind(a->syscall_name,
							       st->has_args ? st->args : NULL));
		if (arch && st->syscall == arch->restart_nr) {
			// The registers still hold the interrupted wait's arguments.
			a->restarted_name = restarted_wait(s->target, arch, st);
			if (!a->restarted_name && st->has_args)
				a->restarted_name = pyu_syscall_restarted_by_args(st->args);
			if (!a->restarted_name) // live: where the kernel says it sleeps
				a->restarted_name = pyu_syscall_of_wchan(st->wchan,
									 st->has_args ? st->args : NULL);
			a->state = a->restarted_name
				? state_of_wait(pyu_syscall_wait_kind(a->restarted_name,
						st->has_args ? st->args : NULL))
				: PYU_STATE_RESTARTED;
		}
	}
	struct pyu_crash crash;
	if (pyu_target_crash(s->target, &crash) && pyu_crash_is_crash(&crash) &&
	    crash.tid == th->native_thread_id) {
		a->signal = crash.signal;
		a->has_fault_address = crash.has_address;
		a->fault_address = crash.address;
	}
}

// Whether thread @th's activity is still to be read from the target (one without a kernel
// thread id, or of a snapshot made by hand without a target, has none: all unknown).
static bool activity_pending(const struct pyu_stacks *s, struct pyu_thread_info *th)
{
	if (th->activity_read)
		return false;
	if (th->native_thread_id > 0 && s->target)
		return true;
	th->activity_read = true;
	th->activity = (struct pyu_activity){.state = PYU_STATE_UNKNOWN};
	return false;
}

const struct pyu_activity *pyu_thread_activity(const struct pyu_stacks *s, uint32_t thread)
{
	struct pyu_thread_info *th = &s->threads[thread];
	if (activity_pending(s, th)) {
		struct pyu_thread_status st;
		pyu_target_thread_status(s->target, th->native_thread_id, &st);
		fill_activity(s, th, &st);
	}
	return &th->activity;
}

void pyu_read_activities(const struct pyu_stacks *s, uint32_t first, uint32_t count)
{
	enum { BATCH = 64 };
	int64_t tids[BATCH];
	struct pyu_thread_status st[BATCH];
	uint32_t which[BATCH];
	uint32_t end = first < s->thread_count && count <= s->thread_count - first
		? first + count : s->thread_count;
	for (uint32_t i = first; i < end;) {
		size_t n = 0;
		for (; i < end && n < BATCH; i++) {
			if (!activity_pending(s, &s->threads[i]))
				continue;
			tids[n] = s->threads[i].native_thread_id;
			which[n++] = i;
		}
		pyu_target_thread_statuses(s->target, tids, n, st);
		for (size_t k = 0; k < n; k++)
			fill_activity(s, &s->threads[which[k]], &st[k]);
	}
}

bool pyu_in_syscall(const struct pyu_activity *a)
{
	return a->state != PYU_STATE_UNKNOWN && a->state != PYU_STATE_RUNNING;
}

const char *pyu_state_words(enum pyu_state state)
{
	switch (state) {
	case PYU_STATE_RUNNING:
		return "running";
	case PYU_STATE_LOCK:
		return "waiting on a lock";
	case PYU_STATE_IO:
		return "waiting for I/O";
	case PYU_STATE_SLEEP:
		return "sleeping";
	case PYU_STATE_SYSCALL:
		return "in a system call";
	case PYU_STATE_RESTARTED:
		return "in a restarted timed wait";
	case PYU_STATE_UNKNOWN:
		break;
	}
	return NULL;
}
