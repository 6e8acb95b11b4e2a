// syscalls.h - system calls as data: per architecture, where a thread's system call number and
// arguments sit in its registers (a core's notes, a debugger's register names) and the names of
// the numbers; for every architecture, what a call means for a thread blocked in it (a lock,
// I/O, a sleep). Pure: tables and lookups, no target access. A new architecture is one more
// row in pyu_arches (syscalls.c) and a generated name table (tools/gen-syscalls).
#ifndef PYU_SYSCALLS_H
#define PYU_SYSCALLS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define PYU_SYSCALL_ARGS 6
#define PYU_REG_NONE (-1) // a register offset for "the notes do not carry it"

// A register in a core's notes: which note (by type, of the thread it follows) and where in the
// note's descriptor; @size 4 or 8 bytes, sign-extended.
struct pyu_note_reg {
	uint32_t note;
	int32_t offset; // PYU_REG_NONE: not recorded in cores
	uint32_t size;
};

struct pyu_arch {
	uint16_t e_machine;         // ELF e_machine of the architecture's cores
	const char *name;
	struct pyu_note_reg syscall_nr;            // < 0 when the thread is in no system call
	struct pyu_note_reg args[PYU_SYSCALL_ARGS]; // as the call received them
	struct pyu_note_reg pc;                      // the thread's program counter
	// The number of the call that resumes a timed wait the kernel interrupted (a debugger's
	// attach, a signal): the thread's registers then name it, not the wait (-1: none).
	int64_t restart_nr;
	// The call number the @call_code_len bytes of code ending at a thread's PC load and make,
	// or -1 (NULL: the architecture's code is not read).
	uint32_t call_code_len;
	int64_t (*call_before_pc)(const uint8_t *code);
	// The same registers as gdb and lldb name them, space-separated: the number, then the
	// arguments, then the program counter ("" for one the debuggers do not show).
	const char *debugger_registers;
	const char *const *names; // indexed by number; NULL entries for unused numbers
	const uint32_t *name_count;
	int dwarf_sp;           // the DWARF number of the stack pointer (native unwinding)
	// When set, syscall_nr and args tell of a system call only if these bytes lie right
	// before pc (the call instruction): the architecture keeps no "not in a call" value.
	const uint8_t *syscall_insn;
	uint32_t syscall_insn_len;
	// Whether return addresses may be signed (pointer authentication): a code above the
	// address bits, which the unwinder strips before it looks a return address up; and the
	// DWARF number of the link register, which holds one too.
	bool signed_return_addresses;
	int dwarf_lr;
	// A core's register set for unwinding: DWARF register i is word dwarf_regs[i] of the
	// registers NT_PRSTATUS holds (from PYU_PRSTATUS_REGS on); the pc is word @pc_word.
	const uint8_t *dwarf_regs;
	uint32_t dwarf_reg_count;
	uint32_t pc_word;
};

// Where NT_PRSTATUS of 64-bit Linux holds the registers (struct elf_prstatus's pr_reg), and
// how many 8-byte words of them are kept (aarch64's user_pt_regs, the largest here).
#define PYU_PRSTATUS_REGS 112
#define PYU_PRSTATUS_WORDS 34

// The architecture of cores whose ELF header says @e_machine, or NULL. Cannot fail.
const struct pyu_arch *pyu_arch_by_machine(uint16_t e_machine);
// The architecture this library runs on (live processes and debuggers' targets), or NULL.
// Cannot fail.
const struct pyu_arch *pyu_arch_host(void);
// The name of system call @nr ("futex"), or NULL when @arch has none by that number.
// Cannot fail.
const char *pyu_syscall_name(const struct pyu_arch *arch, int64_t nr);

// The system call the @len bytes of code @code, which end at a thread's PC, have just made
// (the instruction that loads a constant call number, then the one that makes the call), or
// -1 when they do not say. What a thread blocked in @arch->restart_nr was waiting in: the
// kernel keeps it at the call instruction of the wait it interrupted. Cannot fail.
int64_t pyu_syscall_before_pc(const struct pyu_arch *arch, const uint8_t *code, size_t len);
// The restartable wait (pyu_syscall_restartable) whose kernel function a thread in the
// restart call sleeps in, by that function's name @wchan (/proc's wchan: "futex_do_wait",
// "poll_schedule_timeout", "hrtimer_nanosleep"); @args (NULL when unknown) tell nanosleep
// from clock_nanosleep. NULL when @wchan names none of them. Cannot fail.
const char *pyu_syscall_of_wchan(const char *wchan, const uint64_t *args);
// The restartable wait whose arguments @args (as a thread in the restart call still holds
// them) look like: a futex wait with a timeout ({uaddr, FUTEX_WAIT[_BITSET] | flags, val,
// timeout}), poll ({fds, nfds, timeout}), clock_nanosleep ({clock, flags, request}) or
// nanosleep ({request, remainder}); NULL when they fit none, or more than one. Cannot fail.
const char *pyu_syscall_restarted_by_args(const uint64_t *args);
// Whether call @name is one the kernel resumes through the restart call when a signal or a
// debugger interrupts it (a timed futex wait, poll, nanosleep, clock_nanosleep). Cannot fail.
bool pyu_syscall_restartable(const char *name);

// What a thread blocked in a system call is waiting for.
enum pyu_wait_kind {
	PYU_WAIT_OTHER, // some other system call
	PYU_WAIT_LOCK,  // a lock or condition (futex)
	PYU_WAIT_IO,    // a file, pipe or socket
	PYU_WAIT_SLEEP, // time passing
};

// The kind of wait system call @name means; @args (NULL when unknown) can turn an I/O wait on
// no file descriptors into a sleep (select(0, ...), as time.sleep() of Python 2.7 - 3.10 calls
// it). Cannot fail.
enum pyu_wait_kind pyu_syscall_wait_kind(const char *name, const uint64_t *args);

#endif
