// syscalls.c - the architecture table and what each waiting system call means (syscalls.h).
// Names by number come from the generated syscalls_ARCH.c files.
#include <stddef.h>
#include <string.h>

#include "syscalls.h"

extern const char *const pyu_syscalls_x86_64[];
extern const uint32_t pyu_syscalls_x86_64_count;
extern const char *const pyu_syscalls_aarch64[];
extern const uint32_t pyu_syscalls_aarch64_count;

#define NT_PRSTATUS 1
#define PR_REG PYU_PRSTATUS_REGS
// x86-64's struct user_regs_struct: r15 r14 r13 r12 rbp rbx r11 r10 r9 r8 rax rcx rdx rsi rdi
// orig_rax rip cs eflags rsp ss fs_base gs_base ds es fs gs, 8 bytes each.
#define X86_64_REG(i) {NT_PRSTATUS, PR_REG + 8 * (i), 8}
// aarch64's struct user_pt_regs: x0 - x30, sp, pc, pstate, 8 bytes each.
#define AARCH64_REG(i) {NT_PRSTATUS, PR_REG + 8 * (i), 8}
// DWARF's x86-64 registers 0-16 (rax rdx rcx rbx rsi rdi rbp rsp r8-r15, then rip as the
// return address column) as words of user_regs_struct.
static const uint8_t x86_64_dwarf[] = {10, 12, 11, 5, 13, 14, 4, 19, 9, 8, 7, 6, 3, 2, 1, 0, 16};
// DWARF's aarch64 registers 0-31 (x0-x30, sp): user_pt_regs in the same order.
static const uint8_t aarch64_dwarf[] = {0,  1,  2,  3,  4,  5,  6,  7,  8,  9,  10,
					11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21,
					22, 23, 24, 25, 26, 27, 28, 29, 30, 31};
// aarch64's system call instruction, svc #0, as it lies in memory (little-endian).
static const uint8_t aarch64_svc[] = {0x01, 0x00, 0x00, 0xd4};

// x86-64: `mov $imm32, %eax` (b8 imm32) right before `syscall` (0f 05), as the C libraries'
// wrappers of the waits compile to.
static int64_t x86_64_call_before_pc(const uint8_t *c)
{
	if (c[0] != 0xb8 || c[5] != 0x0f || c[6] != 0x05)
		return -1;
	return (int64_t)((uint32_t)c[1] | (uint32_t)c[2] << 8 | (uint32_t)c[3] << 16 |
			 (uint32_t)c[4] << 24);
}

static const struct pyu_arch arches[] = {
	{
		.e_machine = 62, // EM_X86_64
		.name = "x86-64",
		.syscall_nr = X86_64_REG(15),                     // orig_rax
		.args = {X86_64_REG(14), X86_64_REG(13), X86_64_REG(12), // rdi rsi rdx
			 X86_64_REG(7), X86_64_REG(9), X86_64_REG(8)},    // r10 r8 r9
		.pc = X86_64_REG(16),                             // rip
		.restart_nr = 219,                                // restart_syscall
		.call_code_len = 7,
		.call_before_pc = x86_64_call_before_pc,
		.debugger_registers = "orig_rax rdi rsi rdx r10 r8 r9 rip",
		.names = pyu_syscalls_x86_64,
		.name_count = &pyu_syscalls_x86_64_count,
		.dwarf_sp = 7, // rsp
		.dwarf_regs = x86_64_dwarf,
		.dwarf_reg_count = sizeof(x86_64_dwarf),
		.pc_word = 16,
	},
	{
		.e_machine = 183, // EM_AARCH64
		.name = "aarch64",
		// x8 holds the number and x0 - x5 the arguments, but only while the thread is in
		// the call (the registers say nothing of it otherwise): the instruction before pc
		// must be svc.
		.syscall_nr = AARCH64_REG(8),
		.args = {AARCH64_REG(0), AARCH64_REG(1), AARCH64_REG(2), AARCH64_REG(3),
			 AARCH64_REG(4), AARCH64_REG(5)},
		.debugger_registers = "",
		.names = pyu_syscalls_aarch64,
		.name_count = &pyu_syscalls_aarch64_count,
		.pc = AARCH64_REG(32),
		.restart_nr = 128, // restart_syscall (no call_before_pc: the call is not in the code)
		.dwarf_sp = 31,
		.syscall_insn = aarch64_svc,
		.syscall_insn_len = sizeof(aarch64_svc),
		.signed_return_addresses = true, // PAC (Armv8.3), as Debian's -mbranch-protection
		.dwarf_lr = 30,                  // x30
		.dwarf_regs = aarch64_dwarf,
		.dwarf_reg_count = sizeof(aarch64_dwarf),
		.pc_word = 32,
	},
};

const struct pyu_arch *pyu_arch_by_machine(uint16_t e_machine)
{
	for (size_t i = 0; i < sizeof(arches) / sizeof(arches[0]); i++)
		if (arches[i].e_machine == e_machine)
			return &arches[i];
	return NULL;
}

const struct pyu_arch *pyu_arch_host(void)
{
#if defined(__x86_64__)
	return pyu_arch_by_machine(62);
#elif defined(__aarch64__)
	return pyu_arch_by_machine(183);
#else
	return NULL;
#endif
}

const char *pyu_syscall_name(const struct pyu_arch *arch, int64_t nr)
{
	if (!arch || nr < 0 || (uint64_t)nr >= *arch->name_count)
		return NULL;
	return arch->names[nr];
}

int64_t pyu_syscall_before_pc(const struct pyu_arch *arch, const uint8_t *code, size_t len)
{
	if (!arch || !arch->call_before_pc || len < arch->call_code_len)
		return -1;
	int64_t nr = arch->call_before_pc(code + len - arch->call_code_len);
	return nr >= 0 && (uint64_t)nr < *arch->name_count ? nr : -1;
}

// System calls a thread waits in, by name (the same on every architecture). @sleep_if_zero:
// the argument that, when 0, means no file descriptor is watched (-1: none). @restartable:
// the kernel resumes it through the restart call when interrupted (restart blocks of Linux's
// futex, poll and hrtimer sleeps).
static const struct {
	const char *name;
	enum pyu_wait_kind kind;
	int sleep_if_zero;
	bool restartable;
} waits[] = {
	{"futex", PYU_WAIT_LOCK, -1, true},
	{"futex_wait", PYU_WAIT_LOCK, -1},
	{"futex_waitv", PYU_WAIT_LOCK, -1},
	{"read", PYU_WAIT_IO, -1},
	{"readv", PYU_WAIT_IO, -1},
	{"pread64", PYU_WAIT_IO, -1},
	{"preadv", PYU_WAIT_IO, -1},
	{"preadv2", PYU_WAIT_IO, -1},
	{"write", PYU_WAIT_IO, -1},
	{"writev", PYU_WAIT_IO, -1},
	{"pwrite64", PYU_WAIT_IO, -1},
	{"recvfrom", PYU_WAIT_IO, -1},
	{"recvmsg", PYU_WAIT_IO, -1},
	{"recvmmsg", PYU_WAIT_IO, -1},
	{"sendto", PYU_WAIT_IO, -1},
	{"sendmsg", PYU_WAIT_IO, -1},
	{"accept", PYU_WAIT_IO, -1},
	{"accept4", PYU_WAIT_IO, -1},
	{"connect", PYU_WAIT_IO, -1},
	{"epoll_wait", PYU_WAIT_IO, -1},
	{"epoll_pwait", PYU_WAIT_IO, -1},
	{"epoll_pwait2", PYU_WAIT_IO, -1},
	{"poll", PYU_WAIT_IO, 1, true}, // poll(fds, nfds, timeout)
	{"ppoll", PYU_WAIT_IO, 1},
	{"select", PYU_WAIT_IO, 0},  // select(nfds, ...)
	{"pselect6", PYU_WAIT_IO, 0},
	{"io_getevents", PYU_WAIT_IO, -1},
	{"io_uring_enter", PYU_WAIT_IO, -1},
	{"nanosleep", PYU_WAIT_SLEEP, -1, true},
	{"clock_nanosleep", PYU_WAIT_SLEEP, -1, true},
	{"pause", PYU_WAIT_SLEEP, -1},
};

const char *pyu_syscall_of_wchan(const char *wchan, const uint64_t *args)
{
	if (!wchan)
		return NULL;
	if (strstr(wchan, "futex"))
		return "futex";
	if (strstr(wchan, "poll")) // poll_schedule_timeout: of the waits resumed so, poll's
		return "poll";
	if (strstr(wchan, "nanosleep")) // clock_nanosleep(clockid, flags, ...): a small first
		return args && args[0] < 64 ? "clock_nanosleep" : "nanosleep";
	return NULL;
}

#define LOW_PAGE 4096u // no pointer a wait is given points below it
#define FUTEX_FLAGS 0x180u // FUTEX_PRIVATE_FLAG | FUTEX_CLOCK_REALTIME

const char *pyu_syscall_restarted_by_args(const uint64_t *args)
{
	if (!args)
		return NULL;
	uint64_t cmd = args[1] & ~(uint64_t)FUTEX_FLAGS;
	bool futex = (cmd == 0 || (cmd == 9 && args[5] != 0)) && args[0] >= LOW_PAGE &&
		     args[0] % 4 == 0 && args[3] >= LOW_PAGE; // resumed: it had a timeout
	bool poll = args[1] <= (1u << 20) && args[2] <= INT32_MAX &&
		    (args[1] == 0 || args[0] >= LOW_PAGE);
	bool clock_sleep = args[0] < 64 && args[1] <= 1 && args[2] >= LOW_PAGE;
	bool sleep = args[0] >= LOW_PAGE && args[1] >= LOW_PAGE;
	// glibc waits with FUTEX_WAIT_BITSET and a bitset of all ones: that says futex even where
	// the same registers would make a poll() of 9 + flags descriptors.
	if (futex && cmd == 9 && args[5] == UINT32_MAX)
		return "futex";
	const char *found = NULL;
	unsigned n = 0;
	if (futex)
		found = "futex", n++;
	if (poll)
		found = "poll", n++;
	if (clock_sleep)
		found = "clock_nanosleep", n++;
	if (sleep && !poll)
		found = "nanosleep", n++;
	return n == 1 ? found : NULL;
}

bool pyu_syscall_restartable(const char *name)
{
	for (size_t i = 0; name && i < sizeof(waits) / sizeof(waits[0]); i++)
		if (strcmp(waits[i].name, name) == 0)
			return waits[i].restartable;
	return false;
}

enum pyu_wait_kind pyu_syscall_wait_kind(const char *name, const uint64_t *args)
{
	if (!name)
		return PYU_WAIT_OTHER;
	for (size_t i = 0; i < sizeof(waits) / sizeof(waits[0]); i++) {
		if (strcmp(waits[i].name, name) != 0)
			continue;
		if (waits[i].sleep_if_zero >= 0 && args && args[waits[i].sleep_if_zero] == 0)
			return PYU_WAIT_SLEEP;
		return waits[i].kind;
	}
	return PYU_WAIT_OTHER;
}
