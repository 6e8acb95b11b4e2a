// activity.h - what each thread is doing, for the thread headers of py-bt and the JSON: the
// system call it is blocked in and what that means in plain words, the fatal signal it
// received (a core's crashing thread), its CPU time. Read from the target on first use, once
// per thread (activity.c); the thread's stack says nothing of this.
#ifndef PYU_ACTIVITY_H
#define PYU_ACTIVITY_H

#include <stdbool.h>
#include <stdint.h>

enum pyu_state {
	PYU_STATE_UNKNOWN,  // the target does not say (a debugger's target without registers)
	PYU_STATE_RUNNING,  // in no system call: running (or stopped in) user code
	PYU_STATE_LOCK,     // waiting on a lock
	PYU_STATE_IO,       // waiting for I/O
	PYU_STATE_SLEEP,    // sleeping
	PYU_STATE_SYSCALL,  // in some other system call
	PYU_STATE_RESTARTED, // in a timed wait the kernel resumed, which one not known
};

// All zero: nothing known.
struct pyu_activity {
	enum pyu_state state;
	int64_t syscall;          // the call's number; meaningful when pyu_in_syscall()
	const char *syscall_name; // static; NULL when none or the number has no name here
	// A timed wait an earlier signal or attach interrupted, which the kernel resumes through
	// restart_syscall (the syscall above): the wait it resumes (its code says which, as
	// the registers no longer do; the state is that wait's); NULL when not known.
	const char *restarted_name; // static
	int32_t signal;           // the fatal signal the thread received; 0 for none
	bool has_fault_address;
	uint64_t fault_address;   // where the fault was, for SIGSEGV and the like
	bool has_cpu;
	int64_t cpu_ns;           // user + system CPU time; meaningful when has_cpu
};

// Whether @a says the thread is blocked in a system call (a number in a->syscall).
// Cannot fail.
bool pyu_in_syscall(const struct pyu_activity *a);

struct pyu_stacks;

// What thread @thread (< s->thread_count) of @s is doing, read from the target the first
// time it is asked for and kept in the snapshot (a live process's two /proc files cost more
// than its stack: a snapshot that prints no thread header reads none).
// Read once per thread, so every later call agrees. Cannot fail (what cannot be known stays
// unknown).
const struct pyu_activity *pyu_thread_activity(const struct pyu_stacks *s, uint32_t thread);

// Reads the activity of threads @first .. @first + @count - 1 of @s (clamped to the snapshot)
// that pyu_thread_activity has not read yet, in batches: what a document printing all their
// headers does first, as a live process's files cost fewer system calls read together.
// Cannot fail.
void pyu_read_activities(const struct pyu_stacks *s, uint32_t first, uint32_t count);

// "waiting on a lock", "running", ...; NULL for PYU_STATE_UNKNOWN. Cannot fail.
const char *pyu_state_words(enum pyu_state state);

#endif
