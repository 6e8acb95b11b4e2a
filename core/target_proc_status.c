// target_proc_status.c - what a live process's threads are doing, from /proc/PID/task/TID:
// `syscall` (the call a thread is blocked in and its arguments, or "running"; `wchan` too for
// a timed wait the kernel resumes through its restart call) and `schedstat`
// (its CPU time in nanoseconds; `stat`'s clock ticks where that file says nothing).
// Each file costs three system calls (open, read, close), and on a process of 100 threads they
// cost more than reading all the stacks: a batch of threads keeps its files open until all are
// read, then closes them by runs of descriptors (close_range), a system call per run.
#include "target_proc.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "syscalls.h"

#define STATUS_BATCH 32u // threads whose files are open at once: at most 3 files each

struct open_files {
	int fd[3 * STATUS_BATCH];
	unsigned count;
};

// Closes every descriptor of @files: sorted, each run of consecutive numbers with one
// close_range (every number of a run is ours, so no one else's descriptor is closed), one by
// one where the kernel has no close_range.
static void close_files(struct open_files *files)
{
	int *fd = files->fd;
	unsigned n = files->count;
	for (unsigned i = 1; i < n; i++) { // insertion sort: they were opened mostly ascending
		int v = fd[i];
		unsigned j = i;
		for (; j > 0 && fd[j - 1] > v; j--)
			fd[j] = fd[j - 1];
		fd[j] = v;
	}
	for (unsigned i = 0; i < n;) {
		unsigned end = i + 1;
		while (end < n && fd[end] == fd[end - 1] + 1)
			end++;
		bool closed = false;
#ifdef SYS_close_range
		if (end - i > 1)
			closed = syscall(SYS_close_range, (unsigned)fd[i], (unsigned)fd[end - 1], 0u) == 0;
#endif
		for (unsigned k = i; k < end && !closed; k++)
			close(fd[k]);
		i = end;
	}
	files->count = 0;
}

// Opens /proc/PID/task/TID/@name (relative to /proc/PID/task, kept open: fewer path
// components to look up per file) and reads it into @buf (NUL-terminated). The descriptor is
// kept in @files for close_files() (called first when @files is full, or when the process has
// no descriptor left). False when the file cannot be opened or is empty.
// The files read here are one record that the kernel makes whole at the first read: a read
// shorter than asked for is the end, not the read to EOF a second call would be.
static bool read_task_file(struct proc_backend *p, struct open_files *files, int64_t tid,
			   const char *name, char *buf, size_t len)
{
	if (p->task_fd < 0) {
		char dir[48];
		snprintf(dir, sizeof(dir), "/proc/%d/task", (int)p->pid);
		p->task_fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		if (p->task_fd < 0)
			return false;
	}
	char path[64]; // "TID/NAME", made by hand: snprintf was a third of the instructions here
	size_t n = 0, name_len = strlen(name);
	char digits[20];
	for (uint64_t v = (uint64_t)tid; v || !n; v /= 10)
		digits[n++] = (char)('0' + v % 10);
	if (n + 1 + name_len >= sizeof(path))
		return false;
	for (size_t i = 0; i < n; i++)
		path[i] = digits[n - 1 - i];
	path[n] = '/';
	memcpy(path + n + 1, name, name_len + 1);
	if (files->count == sizeof(files->fd) / sizeof(files->fd[0]))
		close_files(files);
	int fd = openat(p->task_fd, path, O_RDONLY | O_CLOEXEC);
	if (fd < 0 && (errno == EMFILE || errno == ENFILE) && files->count) {
		close_files(files); // a host near its limit: the batch's own are what can go
		fd = openat(p->task_fd, path, O_RDONLY | O_CLOEXEC);
	}
	if (fd < 0)
		return false;
	files->fd[files->count++] = fd;
	size_t got = 0;
	while (got + 1 < len) {
		size_t want = len - 1 - got;
		ssize_t r = read(fd, buf + got, want);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			break;
		got += (size_t)r;
		if ((size_t)r < want)
			break;
	}
	buf[got] = '\0';
	return got > 0;
}

// "NR ARG1 ... ARG6 SP PC" while blocked in call NR, "-1 SP PC" in none, "running" on a CPU.
static void parse_syscall(const char *buf, struct pyu_thread_status *ret)
{
	char *end;
	errno = 0;
	long long nr = strtoll(buf, &end, 10);
	if (strncmp(buf, "running", 7) == 0) {
		ret->syscall = -1;
		return;
	}
	if (end == buf || errno != 0)
		return;
	ret->syscall = nr < 0 ? -1 : nr;
	const char *at = end;
	unsigned i = 0;
	for (; nr >= 0 && i < PYU_SYSCALL_ARGS; i++) {
		unsigned long long v = strtoull(at, &end, 16);
		if (end == at)
			break;
		ret->args[i] = v;
		at = end;
	}
	ret->has_args = i == PYU_SYSCALL_ARGS;
	if (!ret->has_args)
		return;
	strtoull(at, &end, 16); // the stack pointer
	if (end == at)
		return;
	at = end;
	unsigned long long pc = strtoull(at, &end, 16);
	if (end != at) {
		ret->pc = pc;
		ret->has_pc = true;
	}
}

// "RUNTIME_NS WAIT_NS TIMESLICES": the time on a CPU, user and system together. A kernel
// without scheduler statistics prints "0 0 0": false then, as for anything unparsable.
static bool parse_schedstat(const char *buf, struct pyu_thread_status *ret)
{
	char *end;
	errno = 0;
	unsigned long long ns = strtoull(buf, &end, 10);
	if (end == buf || errno != 0 || ns > INT64_MAX || strncmp(buf, "0 0 0", 5) == 0)
		return false;
	ret->cpu_ns = (int64_t)ns;
	return true;
}

// Fields 14 and 15 of stat (utime, stime), in clock ticks of @ticks a second.
static void parse_stat(const char *buf, long ticks, struct pyu_thread_status *ret)
{
	// The command name in parentheses may hold anything: fields start after the last ')'.
	// Fields 14 and 15 follow the 12th space after it (state, ppid, ... cmajflt first);
	// taken by hand: sscanf was most of the instructions a thread's activity cost.
	const char *at = strrchr(buf, ')');
	unsigned field = 0;
	while (at && *at && field < 12) {
		at = strchr(at + 1, ' ');
		field += at != NULL;
	}
	if (!at)
		return;
	char *end, *after;
	errno = 0;
	unsigned long long utime = strtoull(at, &end, 10), stime;
	if (end == at || *end != ' ' || errno != 0)
		return;
	stime = strtoull(end, &after, 10);
	if (after == end || errno != 0)
		return;
	if (utime + stime >= utime && utime + stime < UINT64_MAX / 1000000000u)
		ret->cpu_ns = (int64_t)((utime + stime) * (1000000000ull / (uint64_t)ticks));
}

void pyu_proc_thread_statuses(struct pyu_target *t, const int64_t *tids, size_t count,
			      struct pyu_thread_status *ret)
{
	struct proc_backend *p = t->backend_data;
	struct open_files files = {.count = 0};
	long ticks = 0; // asked for when a thread needs stat
	char buf[512];
	for (size_t i = 0; i < count; i++) {
		if (tids[i] <= 0)
			continue;
		if (read_task_file(p, &files, tids[i], "syscall", buf, sizeof(buf)))
			parse_syscall(buf, &ret[i]);
		// A timed wait the kernel resumes: where the thread sleeps says which.
		if (t->arch && ret[i].syscall == t->arch->restart_nr &&
		    read_task_file(p, &files, tids[i], "wchan", buf, sizeof(buf))) {
			size_t n = strcspn(buf, "\n");
			if (n >= sizeof(ret[i].wchan))
				n = sizeof(ret[i].wchan) - 1;
			memcpy(ret[i].wchan, buf, n);
			ret[i].wchan[n] = '\0';
		}
		if (!read_task_file(p, &files, tids[i], "schedstat", buf, sizeof(buf)) ||
		    !parse_schedstat(buf, &ret[i])) {
			if (ticks == 0)
				ticks = sysconf(_SC_CLK_TCK);
			if (ticks > 0 && read_task_file(p, &files, tids[i], "stat", buf, sizeof(buf)))
				parse_stat(buf, ticks, &ret[i]);
		}
		if ((i + 1) % STATUS_BATCH == 0)
			close_files(&files);
	}
	close_files(&files);
}
