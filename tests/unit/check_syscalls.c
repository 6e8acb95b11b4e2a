// check_syscalls.c - the system call tables (syscalls.c), what a thread's header and JSON
// say it is doing (activity.c, format.c), and a live process's threads read in batches
// (target_proc_status.c).
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "activity.h"
#include "checkmain.h"
#include "include/pyunwind.h"
#include "stacks.h"
#include "syscalls.h"
#include "target.h"

START_TEST(test_names_and_kinds)
{
	const struct pyu_arch *x86 = pyu_arch_by_machine(62);
	ck_assert_ptr_nonnull(x86);
	ck_assert_str_eq(pyu_syscall_name(x86, 202), "futex");
	ck_assert_str_eq(pyu_syscall_name(x86, 0), "read");
	ck_assert_str_eq(pyu_syscall_name(x86, 230), "clock_nanosleep");
	ck_assert_ptr_null(pyu_syscall_name(x86, -1));
	ck_assert_ptr_null(pyu_syscall_name(x86, 1000000));
	ck_assert_ptr_null(pyu_syscall_name(NULL, 0));
	ck_assert_ptr_null(pyu_arch_by_machine(0));
	ck_assert_int_eq(pyu_syscall_wait_kind("futex", NULL), PYU_WAIT_LOCK);
	ck_assert_int_eq(pyu_syscall_wait_kind("read", NULL), PYU_WAIT_IO);
	ck_assert_int_eq(pyu_syscall_wait_kind("clock_nanosleep", NULL), PYU_WAIT_SLEEP);
	ck_assert_int_eq(pyu_syscall_wait_kind("wait4", NULL), PYU_WAIT_OTHER);
	ck_assert_int_eq(pyu_syscall_wait_kind(NULL, NULL), PYU_WAIT_OTHER);
	// select(0, NULL, NULL, NULL, &timeout) is time.sleep() of Python 2.7 - 3.10; poll(fds,
	// 0, timeout) the same; with descriptors they wait for I/O.
	uint64_t none[6] = {0, 0, 0, 0, 0x7ffc0000, 0}, some[6] = {4, 0x7ffc0000, 0, 0, 0, 0};
	ck_assert_int_eq(pyu_syscall_wait_kind("pselect6", none), PYU_WAIT_SLEEP);
	ck_assert_int_eq(pyu_syscall_wait_kind("select", some), PYU_WAIT_IO);
	uint64_t poll_none[6] = {0x7ffc0000, 0, 1000, 0, 0, 0};
	ck_assert_int_eq(pyu_syscall_wait_kind("poll", poll_none), PYU_WAIT_SLEEP);
	ck_assert_int_eq(pyu_syscall_wait_kind("poll", some), PYU_WAIT_IO);
}
END_TEST

// The wait a thread in restart_syscall resumes, from the code before its PC: the
// `mov $NR, %eax; syscall` of glibc's futex and poll wrappers (bytes of Debian's libc), and
// what does not say (another instruction before the call, a register move, too few bytes).
START_TEST(test_restarted_call)
{
	const struct pyu_arch *x86 = pyu_arch_by_machine(62);
	ck_assert_int_eq(x86->restart_nr, 219);
	ck_assert_str_eq(pyu_syscall_name(x86, x86->restart_nr), "restart_syscall");
	static const uint8_t futex[] = {0x45, 0x31, 0xc0, 0xb8, 0xca, 0x00, 0x00, 0x00, 0x0f, 0x05};
	static const uint8_t poll[] = {0xb8, 0x07, 0x00, 0x00, 0x00, 0x0f, 0x05};
	static const uint8_t moved[] = {0x48, 0x89, 0xf8, 0x4c, 0x89, 0xd2, 0x0f, 0x05}; // mov %rdi,%rax
	static const uint8_t not_call[] = {0xb8, 0xca, 0x00, 0x00, 0x00, 0x90, 0x90};
	static const uint8_t huge[] = {0xb8, 0xff, 0xff, 0xff, 0x7f, 0x0f, 0x05};
	ck_assert_int_eq(pyu_syscall_before_pc(x86, futex, sizeof(futex)), 202);
	ck_assert_int_eq(pyu_syscall_before_pc(x86, poll, sizeof(poll)), 7);
	ck_assert_int_eq(pyu_syscall_before_pc(x86, moved, sizeof(moved)), -1);
	ck_assert_int_eq(pyu_syscall_before_pc(x86, not_call, sizeof(not_call)), -1);
	ck_assert_int_eq(pyu_syscall_before_pc(x86, huge, sizeof(huge)), -1);
	ck_assert_int_eq(pyu_syscall_before_pc(x86, poll, 6), -1);
	ck_assert_int_eq(pyu_syscall_before_pc(NULL, poll, sizeof(poll)), -1);
	// Newer glibc makes every call through one trampoline (the number in a register): the
	// arguments still say which wait it was (registers of Debian unstable's Python threads).
	uint64_t futex_args[6] = {0x7fbfdc8274c0, 0x89, 0, 0x7fbfdc827480, 0, 0xffffffff};
	uint64_t poll_args[6] = {0x7fbfdcb104b0, 1, 300000, 0, 0, 0};
	uint64_t clock_args[6] = {1, 0, 0x7ffee61acdb0, 0, 0, 0};
	uint64_t odd_args[6] = {3, 7, 0, 0, 0, 0};
	ck_assert_str_eq(pyu_syscall_restarted_by_args(futex_args), "futex");
	ck_assert_str_eq(pyu_syscall_restarted_by_args(poll_args), "poll");
	ck_assert_str_eq(pyu_syscall_restarted_by_args(clock_args), "clock_nanosleep");
	ck_assert_ptr_null(pyu_syscall_restarted_by_args(odd_args));
	ck_assert_ptr_null(pyu_syscall_restarted_by_args(NULL));
	ck_assert_str_eq(pyu_syscall_of_wchan("futex_do_wait", futex_args), "futex");
	ck_assert_str_eq(pyu_syscall_of_wchan("poll_schedule_timeout.constprop.0", NULL), "poll");
	ck_assert_str_eq(pyu_syscall_of_wchan("hrtimer_nanosleep", clock_args), "clock_nanosleep");
	ck_assert_ptr_null(pyu_syscall_of_wchan("do_signal_stop", NULL));
	ck_assert(pyu_syscall_restartable("futex"));
	ck_assert(pyu_syscall_restartable("poll"));
	ck_assert(pyu_syscall_restartable("nanosleep"));
	ck_assert(pyu_syscall_restartable("clock_nanosleep"));
	ck_assert(!pyu_syscall_restartable("read"));
	ck_assert(!pyu_syscall_restartable("pselect6")); // resumed as itself
	ck_assert(!pyu_syscall_restartable("restart_syscall"));
	ck_assert(!pyu_syscall_restartable(NULL));
}
END_TEST

static char *bt(struct pyu_stacks *s, uint32_t flags)
{
	char *out = NULL;
	struct pyu_error *err = pyu_format_bt(s, 0, flags | PYU_FMT_ALL, 0, &out);
	ck_assert_ptr_null(err);
	return out;
}

START_TEST(test_headers_and_json)
{
	struct pyu_thread_info threads[5];
	memset(threads, 0, sizeof(threads));
	for (int i = 0; i < 5; i++) {
		threads[i].thread_id = 0x100 + (uint64_t)i;
		threads[i].native_thread_id = 10 + i;
		threads[i].holds_gil = 0;
	}
	threads[0].activity = (struct pyu_activity){.state = PYU_STATE_LOCK, .syscall = 202,
						    .syscall_name = "futex", .has_cpu = true,
						    .cpu_ns = 1234567890};
	threads[1].activity = (struct pyu_activity){.state = PYU_STATE_RUNNING, .signal = 11,
						    .has_fault_address = true, .fault_address = 0,
						    .has_cpu = true, .cpu_ns = 5000000};
	threads[2].activity = (struct pyu_activity){.state = PYU_STATE_SYSCALL, .syscall = 999};
	threads[3].activity = (struct pyu_activity){.state = PYU_STATE_LOCK, .syscall = 219,
						    .syscall_name = "restart_syscall",
						    .restarted_name = "futex"};
	threads[4].activity = (struct pyu_activity){.state = PYU_STATE_RESTARTED, .syscall = 219,
						    .syscall_name = "restart_syscall"};
	for (int i = 0; i < 5; i++)
		threads[i].activity_read = true; // given here: no target to read it from
	struct pyu_stacks s;
	memset(&s, 0, sizeof(s));
	snprintf(s.version, sizeof(s.version), "3.12.1");
	s.hexversion = 0x030c01f0;
	s.threads = threads;
	s.thread_count = 5;
	char *out = bt(&s, 0);
	ck_assert_str_eq(out, "Python 3.12.1, 5 threads\n\n"
			 "Thread 0x100 (tid 10): waiting on a lock (futex), 1.23 s CPU\n"
			 "    (no Python frames)\n\n"
			 "Thread 0x101 (tid 11): SIGSEGV (fault address 0x0), 0.01 s CPU\n"
			 "    (no Python frames)\n\n"
			 "Thread 0x102 (tid 12): in a system call (system call 999)\n"
			 "    (no Python frames)\n\n"
			 "Thread 0x103 (tid 13): waiting on a lock (futex, restarted)\n"
			 "    (no Python frames)\n\n"
			 "Thread 0x104 (tid 14): in a restarted timed wait (restart_syscall)\n"
			 "    (no Python frames)\n");
	free(out);
	out = bt(&s, PYU_FMT_JSON);
	ck_assert_ptr_nonnull(strstr(out, "\"syscall\": \"restart_syscall\", \"restarted\": \"futex\", "
				     "\"state\": \"waiting on a lock\", "));
	ck_assert_ptr_nonnull(strstr(out, "\"syscall\": \"restart_syscall\", \"restarted\": null, "
				     "\"state\": \"in a restarted timed wait\", "));
	ck_assert_ptr_nonnull(strstr(out, "\"syscall\": \"futex\", \"restarted\": null, "
				     "\"state\": \"waiting on a lock\", "
				     "\"signal\": null, \"fault_address\": null, "
				     "\"cpu_seconds\": 1.23456789,"));
	ck_assert_ptr_nonnull(strstr(out, "\"syscall\": null, \"restarted\": null, "
				     "\"state\": \"running\", "
				     "\"signal\": \"SIGSEGV\", \"fault_address\": \"0x0\", "
				     "\"cpu_seconds\": 0.005,"));
	ck_assert_ptr_nonnull(strstr(out, "\"syscall\": \"999\", \"restarted\": null, "
				     "\"state\": \"in a system call\", "
				     "\"signal\": null, \"fault_address\": null, "
				     "\"cpu_seconds\": null,"));
	free(out);
}
END_TEST

// CPU times as the header prints them ("%.2f", rounded as printf rounds) and as the JSON
// gives them (every nanosecond, no trailing zeros).
START_TEST(test_cpu_times)
{
	static const struct {
		int64_t ns;
		const char *json;
	} cases[] = {
		{0, "0"}, {1, "0.000000001"}, {4999999, "0.004999999"}, {5000000, "0.005"},
		{5000001, "0.005000001"}, {994999999, "0.994999999"}, {995000000, "0.995"},
		{1000000000, "1"}, {12345678901, "12.345678901"}, {3600000000001, "3600.000000001"},
		{15000000, "0.015"}, {25000000, "0.025"}, {INT64_C(1) << 53, "9007199.254740992"},
	};
	enum { N = sizeof(cases) / sizeof(cases[0]) };
	struct pyu_thread_info threads[N];
	memset(threads, 0, sizeof(threads));
	for (size_t i = 0; i < N; i++) {
		threads[i].thread_id = 0x100 + i;
		threads[i].native_thread_id = 10 + (int64_t)i;
		threads[i].holds_gil = -1;
		threads[i].activity = (struct pyu_activity){.state = PYU_STATE_RUNNING,
							    .has_cpu = true, .cpu_ns = cases[i].ns};
		threads[i].activity_read = true;
	}
	struct pyu_stacks s;
	memset(&s, 0, sizeof(s));
	snprintf(s.version, sizeof(s.version), "3.12.1");
	s.hexversion = 0x030c01f0;
	s.threads = threads;
	s.thread_count = N;
	char *text = bt(&s, 0), *json = bt(&s, PYU_FMT_JSON);
	for (size_t i = 0; i < N; i++) {
		char want[128];
		snprintf(want, sizeof(want), "Thread 0x%zx (tid %zu): running, %.2f s CPU\n",
			 0x100 + i, 10 + i, (double)cases[i].ns / 1e9);
		ck_assert_msg(strstr(text, want), "%s not in\n%s", want, text);
		snprintf(want, sizeof(want), "\"cpu_seconds\": %s,", cases[i].json);
		ck_assert_msg(strstr(json, want), "%s not in\n%s", want, json);
	}
	free(text);
	free(json);
}
END_TEST

// ---- a live process's threads, read in batches ----------------------------------------------

#define WAITERS 70 // more threads than one batch of activity.c (64) or target_proc_status.c (32)
static int waiter_pipe[2];
static pthread_t waiter[WAITERS];

static void *wait_read(void *arg)
{
	(void)arg;
	char c;
	while (read(waiter_pipe[0], &c, 1) < 0 && errno == EINTR)
		;
	return NULL;
}

static int count_fds(void)
{
	DIR *d = opendir("/proc/self/fd");
	ck_assert_ptr_nonnull(d);
	int n = 0;
	struct dirent *e;
	while ((e = readdir(d)))
		n += e->d_name[0] != '.';
	closedir(d);
	return n;
}

// Starts WAITERS threads blocked in read(2) of a pipe and waits until /proc says every one is
// (its syscall file says 0); their ids into @tids.
static void start_waiters(int64_t *tids)
{
	ck_assert_int_eq(pipe(waiter_pipe), 0);
	for (int i = 0; i < WAITERS; i++)
		ck_assert_int_eq(pthread_create(&waiter[i], NULL, wait_read, NULL), 0);
	int64_t self = (int64_t)syscall(SYS_gettid);
	for (int attempt = 0; attempt < 3000; attempt++) { // 30 s
		size_t n = 0, reading = 0;
		DIR *d = opendir("/proc/self/task");
		ck_assert_ptr_nonnull(d);
		struct dirent *e;
		while ((e = readdir(d)) && n < WAITERS) {
			int64_t tid = strtoll(e->d_name, NULL, 10);
			if (tid <= 0 || tid == self)
				continue;
			tids[n++] = tid;
			char path[64], buf[64] = "";
			snprintf(path, sizeof(path), "/proc/self/task/%lld/syscall", (long long)tid);
			FILE *f = fopen(path, "r");
			if (f) {
				reading += fgets(buf, sizeof(buf), f) && !strncmp(buf, "0 ", 2);
				fclose(f);
			}
		}
		closedir(d);
		if (reading == WAITERS && n == WAITERS)
			return;
		nanosleep(&(struct timespec){0, 10000000}, NULL);
	}
	ck_abort_msg("the waiting threads did not all block in read(2)");
}

static void stop_waiters(void)
{
	char release[WAITERS] = {0};
	ck_assert_int_eq(write(waiter_pipe[1], release, sizeof(release)), WAITERS);
	for (int i = 0; i < WAITERS; i++)
		pthread_join(waiter[i], NULL);
	close(waiter_pipe[0]);
	close(waiter_pipe[1]);
}

// The thread's time on a CPU as its schedstat says, or -1 where that file says nothing.
static int64_t schedstat_ns(int64_t tid)
{
	char path[64];
	snprintf(path, sizeof(path), "/proc/self/task/%lld/schedstat", (long long)tid);
	FILE *f = fopen(path, "r");
	long long ns = -1, wait = 0, slices = 0;
	if (f) {
		if (fscanf(f, "%lld %lld %lld", &ns, &wait, &slices) != 3 ||
		    (!ns && !wait && !slices))
			ns = -1;
		fclose(f);
	}
	return ns;
}

START_TEST(test_live_batches)
{
	int64_t tids[WAITERS + 3];
	start_waiters(tids);
	size_t n = WAITERS;
	tids[n++] = 0;                  // no thread: unknown
	tids[n++] = -7;                 // no thread: unknown
	tids[n++] = 0x7ffffff0;         // no such thread: unknown
	struct pyu_target *t;
	ck_assert_ptr_null(pyu_target_open_pid(getpid(), &t));
	struct pyu_thread_status batch[WAITERS + 3], one;
	pyu_target_thread_status(t, tids[0], &one); // what the target keeps open, opened
	// Descriptors of ours between those the batch will get: closing by runs must spare them.
	int sentinel[8];
	for (int i = 0; i < 8; i++)
		ck_assert_int_ge(sentinel[i] = open("/dev/null", O_RDONLY | O_CLOEXEC), 0);
	for (int i = 0; i < 8; i += 2)
		close(sentinel[i]);
	int fds = count_fds();
	pyu_target_thread_statuses(t, tids, n, batch);
	ck_assert_int_eq(count_fds(), fds); // every file it opened is closed, and nothing else
	for (int i = 1; i < 8; i += 2)
		ck_assert_msg(fcntl(sentinel[i], F_GETFD) != -1, "descriptor %d was closed",
			      sentinel[i]);
	for (size_t i = 0; i < n; i++) {
		pyu_target_thread_status(t, tids[i], &one);
		if (i < WAITERS) {
			ck_assert_int_eq(batch[i].syscall, 0); // read
			ck_assert(batch[i].has_args);
			ck_assert_uint_eq(batch[i].args[0], (uint64_t)waiter_pipe[0]);
			ck_assert_int_ge(batch[i].cpu_ns, 0);
			// blocked all along: the same nanoseconds as the file says now
			int64_t ns = schedstat_ns(tids[i]);
			if (ns >= 0)
				ck_assert_int_eq(batch[i].cpu_ns, ns);
			ck_assert_int_eq(one.syscall, 0);
			ck_assert_int_eq(one.cpu_ns, batch[i].cpu_ns);
		} else {
			ck_assert_int_eq(batch[i].syscall, PYU_SYSCALL_UNKNOWN);
			ck_assert_int_eq(batch[i].cpu_ns, -1);
			ck_assert_int_eq(one.syscall, PYU_SYSCALL_UNKNOWN);
		}
	}
	pyu_target_destroy(t);
	ck_assert_int_eq(count_fds(), fds - 1); // and /proc/PID/task with the target
	for (int i = 1; i < 8; i += 2)
		close(sentinel[i]);
	stop_waiters();
}
END_TEST

// pyu_read_activities over a snapshot of more threads than its batch: every pending thread
// read as pyu_thread_activity reads it alone, threads without a kernel thread id unknown, a
// thread already read left as it was.
START_TEST(test_read_activities)
{
	int64_t tids[WAITERS];
	start_waiters(tids);
	enum { N = WAITERS + 2 };
	struct pyu_thread_info threads[N], alone[N];
	memset(threads, 0, sizeof(threads));
	for (uint32_t i = 0; i < N; i++)
		threads[i].native_thread_id = i < WAITERS ? tids[i] : -1;
	threads[N - 1].native_thread_id = tids[0]; // read before: kept
	threads[N - 1].activity = (struct pyu_activity){.state = PYU_STATE_SLEEP, .syscall = 35};
	threads[N - 1].activity_read = true;
	memcpy(alone, threads, sizeof(threads));
	struct pyu_stacks s, s_alone;
	memset(&s, 0, sizeof(s));
	ck_assert_ptr_null(pyu_target_open_pid(getpid(), &s.target));
	s.threads = threads;
	s.thread_count = N;
	s_alone = s;
	s_alone.threads = alone;
	pyu_read_activities(&s, 0, N);
	for (uint32_t i = 0; i < N; i++) {
		ck_assert(threads[i].activity_read);
		const struct pyu_activity *a = &threads[i].activity;
		const struct pyu_activity *b = pyu_thread_activity(&s_alone, i);
		ck_assert_int_eq(a->state, b->state);
		ck_assert_int_eq(a->syscall, b->syscall);
		ck_assert_int_eq(a->has_cpu, b->has_cpu);
		if (i < WAITERS) {
			ck_assert_int_eq(a->state, PYU_STATE_IO);
			ck_assert_str_eq(a->syscall_name, "read");
			ck_assert(a->has_cpu);
			ck_assert_int_eq(a->cpu_ns, b->cpu_ns);
		}
	}
	ck_assert_int_eq(threads[WAITERS].activity.state, PYU_STATE_UNKNOWN);
	ck_assert_int_eq(threads[N - 1].activity.state, PYU_STATE_SLEEP);
	ck_assert_int_eq(threads[N - 1].activity.syscall, 35);
	pyu_read_activities(&s, N, 5);  // past the end: nothing
	pyu_read_activities(&s, 3, 0);  // none
	pyu_target_destroy(s.target);
	stop_waiters();
}
END_TEST

static Suite *syscalls_suite(void)
{
	Suite *s = suite_create("syscalls");
	TCase *tc = tcase_create("syscalls");
	tcase_add_test(tc, test_names_and_kinds);
	tcase_add_test(tc, test_restarted_call);
	tcase_add_test(tc, test_headers_and_json);
	tcase_add_test(tc, test_cpu_times);
	tcase_set_timeout(tc, 60); // 70 threads to start and see blocked on a loaded machine
	tcase_add_test(tc, test_live_batches);
	tcase_add_test(tc, test_read_activities);
	suite_add_tcase(s, tc);
	return s;
}

PYU_CHECK_MAIN(syscalls_suite)
