// triage.h - what `pyunwind triage` and the Python API need to group crashes: which thread
// crashed, the signal's name, and the crash signature (a stable hash of the crashing thread's
// Python frames). The public side is pyu_stacks_crash_thread() and pyu_format_triage().
#ifndef PYU_TRIAGE_H
#define PYU_TRIAGE_H

#include <stdint.h>

#include "stacks.h"

#define PYU_SIGNATURE_MAX_FRAMES 4096u // frames a signature is made from, innermost first

// A crash signature: the FNV-1a 64-bit hash of "pyunwind-signature-1\n" followed by each entry
// of @frames and "\n". An entry is "QUALNAME (FILE BASENAME)" for each Python frame of the
// crashing thread, innermost first, error frames left out and a run of equal entries (a
// recursion) kept once: no line numbers, addresses or directories, so a rebuild, an unrelated
// edit or another install path does not split a group.
struct pyu_signature {
	uint64_t hash;
	char **frames; // owned strings
	uint32_t frame_count;
};

// Computes the signature of thread @thread (-1: no Python thread crashed, which gives the
// signature of an empty stack). On error, *ret is unchanged.
struct pyu_error *pyu_signature_compute(const struct pyu_stacks *s, int32_t thread,
					struct pyu_signature *ret);
// Releases what pyu_signature_compute() allocated. Cannot fail.
void pyu_signature_release(struct pyu_signature *sig);

// "SIGSEGV" for 11, and so on for Linux's standard signals; NULL for others. Cannot fail.
const char *pyu_signal_name(int32_t sig);

#endif
