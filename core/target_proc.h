// target_proc.h - what the two files of the live-process backend share: target_proc.c (memory,
// mappings, thread ids) and target_proc_status.c (what each thread is doing).
#ifndef PYU_TARGET_PROC_H
#define PYU_TARGET_PROC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "target_impl.h"

struct proc_backend {
	pid_t pid;
	bool use_mem; // process_vm_readv is unavailable or refused: use /proc/PID/mem
	int mem_fd;   // -1 until first needed
	int task_fd;  // /proc/PID/task, for the threads' status files; -1 until first needed
	// The mappings replaced by the last readings of /proc/PID/maps (at most two a snapshot:
	// its start, then all of it), freed when the next snapshot begins: a read in the middle
	// of a snapshot leaves what was looked up before valid until that snapshot ends.
	struct pyu_mapping *retired[2];
	size_t retired_count[2];
};

// The target's read_statuses hook (target_impl.h) for a live process: fills @ret[i] for each
// of the @count threads @tids[i] from their /proc files; what cannot be read is left as the
// caller set it. Cannot fail.
void pyu_proc_thread_statuses(struct pyu_target *t, const int64_t *tids, size_t count,
			      struct pyu_thread_status *ret);

#endif
