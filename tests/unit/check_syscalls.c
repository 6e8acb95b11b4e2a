// check_syscalls.c - the system call tables (syscalls.c) and what a thread's header and JSON
// say it is doing (activity.c, format.c).
#include <stdlib.h>
#include <string.h>

#include "activity.h"
#include "checkmain.h"
#include "include/pyunwind.h"
#include "stacks.h"
#include "syscalls.h"

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

static char *bt(struct pyu_stacks *s, uint32_t flags)
{
	char *out = NULL;
	struct pyu_error *err = pyu_format_bt(s, 0, flags | PYU_FMT_ALL, 0, &out);
	ck_assert_ptr_null(err);
	return out;
}

START_TEST(test_headers_and_json)
{
	struct pyu_thread_info threads[3];
	memset(threads, 0, sizeof(threads));
	for (int i = 0; i < 3; i++) {
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
	for (int i = 0; i < 3; i++)
		threads[i].activity_read = true; // given here: no target to read it from
	struct pyu_stacks s;
	memset(&s, 0, sizeof(s));
	snprintf(s.version, sizeof(s.version), "3.12.1");
	s.hexversion = 0x030c01f0;
	s.threads = threads;
	s.thread_count = 3;
	char *out = bt(&s, 0);
	ck_assert_str_eq(out, "Python 3.12.1, 3 threads\n\n"
			 "Thread 0x100 (tid 10): waiting on a lock (futex), 1.23 s CPU\n"
			 "    (no Python frames)\n\n"
			 "Thread 0x101 (tid 11): SIGSEGV (fault address 0x0), 0.01 s CPU\n"
			 "    (no Python frames)\n\n"
			 "Thread 0x102 (tid 12): in a system call (system call 999)\n"
			 "    (no Python frames)\n");
	free(out);
	out = bt(&s, PYU_FMT_JSON);
	ck_assert_ptr_nonnull(strstr(out, "\"syscall\": \"futex\", \"state\": \"waiting on a lock\", "
				     "\"signal\": null, \"fault_address\": null, "
				     "\"cpu_seconds\": 1.23456789,"));
	ck_assert_ptr_nonnull(strstr(out, "\"syscall\": null, \"state\": \"running\", "
				     "\"signal\": \"SIGSEGV\", \"fault_address\": \"0x0\", "
				     "\"cpu_seconds\": 0.005,"));
	ck_assert_ptr_nonnull(strstr(out, "\"syscall\": \"999\", \"state\": \"in a system call\", "
				     "\"signal\": null, \"fault_address\": null, "
				     "\"cpu_seconds\": null,"));
	free(out);
}
END_TEST

static Suite *syscalls_suite(void)
{
	Suite *s = suite_create("syscalls");
	TCase *tc = tcase_create("syscalls");
	tcase_add_test(tc, test_names_and_kinds);
	tcase_add_test(tc, test_headers_and_json);
	suite_add_tcase(s, tc);
	return s;
}

PYU_CHECK_MAIN(syscalls_suite)
