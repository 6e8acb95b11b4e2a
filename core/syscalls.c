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
// struct elf_prstatus of 64-bit Linux: the registers (pr_reg) start at byte 112.
#define PR_REG 112
// x86-64's struct user_regs_struct: r15 r14 r13 r12 rbp rbx r11 r10 r9 r8 rax rcx rdx rsi rdi
// orig_rax rip cs eflags rsp ss fs_base gs_base ds es fs gs, 8 bytes each.
#define X86_64_REG(i) {NT_PRSTATUS, PR_REG + 8 * (i), 8}
// aarch64's struct user_pt_regs: x0 - x30, sp, pc, pstate, 8 bytes each.
#define AARCH64_REG(i) {NT_PRSTATUS, PR_REG + 8 * (i), 8}
// aarch64's system call instruction, svc #0, as it lies in memory (little-endian).
static const uint8_t aarch64_svc[] = {0x01, 0x00, 0x00, 0xd4};

static const struct pyu_arch arches[] = {
	{
		.e_machine = 62, // EM_X86_64
		.name = "x86-64",
		.syscall_nr = X86_64_REG(15),                     // orig_rax
		.args = {X86_64_REG(14), X86_64_REG(13), X86_64_REG(12), // rdi rsi rdx
			 X86_64_REG(7), X86_64_REG(9), X86_64_REG(8)},    // r10 r8 r9
		.debugger_registers = "orig_rax rdi rsi rdx r10 r8 r9",
		.names = pyu_syscalls_x86_64,
		.name_count = &pyu_syscalls_x86_64_count,
		.pc = X86_64_REG(16), // rip
		.dwarf_sp = 7,        // rsp
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
		.dwarf_sp = 31,
		.syscall_insn = aarch64_svc,
		.syscall_insn_len = sizeof(aarch64_svc),
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

// System calls a thread waits in, by name (the same on every architecture). @sleep_if_zero:
// the argument that, when 0, means no file descriptor is watched (-1: none).
static const struct {
	const char *name;
	enum pyu_wait_kind kind;
	int sleep_if_zero;
} waits[] = {
	{"futex", PYU_WAIT_LOCK, -1},
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
	{"poll", PYU_WAIT_IO, 1},    // poll(fds, nfds, timeout)
	{"ppoll", PYU_WAIT_IO, 1},
	{"select", PYU_WAIT_IO, 0},  // select(nfds, ...)
	{"pselect6", PYU_WAIT_IO, 0},
	{"io_getevents", PYU_WAIT_IO, -1},
	{"io_uring_enter", PYU_WAIT_IO, -1},
	{"nanosleep", PYU_WAIT_SLEEP, -1},
	{"clock_nanosleep", PYU_WAIT_SLEEP, -1},
	{"pause", PYU_WAIT_SLEEP, -1},
};

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
