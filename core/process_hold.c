// process_hold.c - holding a live process still while it is read: every thread seized and
// interrupted with ptrace (no signal the program could see), then let go, each thread given
// back the signal it had stopped for. Memory layer: it knows nothing of Python. The CLI holds
// the process it reads so; the Python package does the same for collect(stop=True) and for
// native stacks, which elfutils unwinds only from threads this process traces.
#include <dirent.h>
#include <errno.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ptrace.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>

#include "error.h"
#include "include/pyunwind.h"

#define HOLD_MAX_THREADS 8192u // threads held at once
#define HOLD_PASSES 5          // passes over /proc/PID/task while new threads appear
#define HOLD_TIMEOUT_MS 2000   // waiting for the threads to stop

struct pyu_hold {
	uint32_t n;
	pid_t tids[HOLD_MAX_THREADS];
	int sigs[HOLD_MAX_THREADS]; // signal to hand back at detach (a signal-delivery stop)
};

static bool traced_by_someone(int32_t pid)
{
	char path[64], line[256];
	snprintf(path, sizeof(path), "/proc/%d/status", pid);
	FILE *f = fopen(path, "r");
	if (!f)
		return false;
	bool traced = false;
	for (int i = 0; i < 256 && fgets(line, sizeof(line), f); i++)
		if (!strncmp(line, "TracerPid:", 10))
			traced = atoi(line + 10) != 0;
	fclose(f);
	return traced;
}

static bool held_has(const struct pyu_hold *h, pid_t tid)
{
	for (uint32_t i = 0; i < h->n; i++)
		if (h->tids[i] == tid)
			return true;
	return false;
}

static long now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000L + ts.tv_nsec / 1000000L;
}

// Seizes and interrupts every thread it can (repeating while new threads appear).
static void seize_all(int32_t pid, struct pyu_hold *h)
{
	for (int pass = 0; pass < HOLD_PASSES; pass++) {
		char path[64];
		snprintf(path, sizeof(path), "/proc/%d/task", pid);
		DIR *d = opendir(path);
		if (!d)
			return;
		bool added = false;
		struct dirent *e;
		while ((e = readdir(d)) && h->n < HOLD_MAX_THREADS) {
			pid_t tid = (pid_t)atoi(e->d_name);
			if (tid <= 0 || held_has(h, tid))
				continue;
			if (ptrace(PTRACE_SEIZE, tid, NULL, NULL) < 0)
				continue;
			if (ptrace(PTRACE_INTERRUPT, tid, NULL, NULL) < 0) {
				ptrace(PTRACE_DETACH, tid, NULL, NULL);
				continue;
			}
			h->sigs[h->n] = 0;
			h->tids[h->n++] = tid;
			added = true;
		}
		closedir(d);
		if (!added)
			return;
	}
}

struct pyu_error *pyu_process_hold(int32_t pid, struct pyu_hold **ret)
{
	if (pid <= 0)
		return pyu_error_create(PYU_ERR_ARGUMENT, "no process %d", pid);
	struct pyu_hold *h = malloc(sizeof(*h));
	if (!h)
		return &pyu_error_nomem;
	h->n = 0;
	if (!traced_by_someone(pid)) // else a debugger has it; it decides when the process runs
		seize_all(pid, h);
	long deadline = now_ms() + HOLD_TIMEOUT_MS;
	for (uint32_t i = 0; i < h->n; i++) {
		for (;;) { // bounded by the deadline
			int status;
			pid_t r = waitpid(h->tids[i], &status, __WALL | WNOHANG);
			if (r == h->tids[i]) {
				if (WIFSTOPPED(status) && (status >> 16) != PTRACE_EVENT_STOP &&
				    WSTOPSIG(status) != SIGTRAP)
					h->sigs[i] = WSTOPSIG(status); // hand it back at detach
				break;
			}
			if ((r < 0 && errno != EINTR) || now_ms() > deadline)
				break; // gone, or not stopping: read it as it is
			struct timespec ts = {0, 200000};
			nanosleep(&ts, NULL);
		}
	}
	*ret = h;
	return NULL;
}

uint32_t pyu_hold_count(const struct pyu_hold *h)
{
	return h ? h->n : 0;
}

void pyu_process_release(struct pyu_hold *h)
{
	if (!h)
		return;
	for (uint32_t i = 0; i < h->n; i++)
		ptrace(PTRACE_DETACH, h->tids[i], NULL, (void *)(intptr_t)h->sigs[i]);
	free(h);
}
