// unwind.c - native stacks with elfutils' libdwfl: a live process through ptrace (the caller
// holds it stopped), a core file through its notes and the files it maps. Each frame is named
// from the ELF symbols and, when the file has DWARF, given its source line. Memory layer: no
// Python here; native.c decides what the frames mean.
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "target_impl.h"
#include "unwind.h"

#ifndef PYU_HAVE_LIBDW

struct pyu_error *pyu_target_unwind(struct pyu_target *t, pyu_unwind_fn fn, void *arg)
{
	(void)t, (void)fn, (void)arg;
	return pyu_error_create(PYU_ERR_UNSUPPORTED,
				"native frames need elfutils (libdw), which this build lacks");
}

#else

#include <elfutils/libdwfl.h>
#include <gelf.h>

// The DWARF number of the stack pointer register.
#if defined(__x86_64__)
#define SP_REGNO 7
#elif defined(__aarch64__)
#define SP_REGNO 31
#else
#error "no stack pointer register number for this architecture"
#endif

// What a pc names (function, library, source line), remembered for the whole unwind: the
// threads of one process return into the same few hundred call sites, and elfutils looks a
// symbol up by scanning the whole symbol table (a file with DWARF and a full .symtab, like a
// pyenv libpython, made that most of the cost). Strings belong to the Dwfl, which outlives
// the cache. Direct-mapped: a collision replaces the older entry.
#define NAME_CACHE 4096u

struct named_pc {
	Dwarf_Addr pc; // 0: empty
	const char *function, *library, *file;
	int64_t line;
};

struct walk {
	Dwfl *dwfl;
	struct named_pc *names; // NAME_CACHE entries; NULL when out of memory (no caching)
	pyu_unwind_fn fn;
	void *arg;
	struct pyu_error *err;   // from @fn: stops everything
	int64_t tid;
	uint32_t frames;
};

static char *debuginfo_path; // libdwfl's default search path; never written

static const Dwfl_Callbacks proc_callbacks = {
	.find_elf = dwfl_linux_proc_find_elf,
	.find_debuginfo = dwfl_standard_find_debuginfo,
	.debuginfo_path = &debuginfo_path,
};

static const Dwfl_Callbacks core_callbacks = {
	.find_elf = dwfl_build_id_find_elf,
	.find_debuginfo = dwfl_standard_find_debuginfo,
	.debuginfo_path = &debuginfo_path,
};

static int frame_cb(Dwfl_Frame *state, void *arg)
{
	struct walk *w = arg;
	Dwarf_Addr pc;
	bool activation;
	// A pc of 0 is where an unwinder that lost its way ends, not a frame.
	if (w->frames >= PYU_UNWIND_MAX_FRAMES || !dwfl_frame_pc(state, &pc, &activation) || !pc)
		return DWARF_CB_ABORT;
	Dwarf_Word sp = 0;
	if (dwfl_frame_reg(state, SP_REGNO, &sp) != 0)
		sp = 0;
	// A return address points after the call: look up the call itself.
	Dwarf_Addr lookup = activation ? pc : pc - 1;
	struct pyu_unwound f = {w->tid, pc, sp, NULL, NULL, NULL, -1, NULL};
	struct named_pc *slot = w->names ? &w->names[(lookup ^ (lookup >> 12)) % NAME_CACHE]
					 : NULL;
	if (slot && slot->pc == lookup) {
		f.function = slot->function;
		f.library = slot->library;
		f.file = slot->file;
		f.line = slot->line;
		w->frames++;
		w->err = w->fn(w->arg, &f);
		return w->err ? DWARF_CB_ABORT : DWARF_CB_OK;
	}
	Dwfl_Module *mod = dwfl_addrmodule(w->dwfl, lookup);
	if (mod) {
		GElf_Off off;
		GElf_Sym sym;
		f.function = dwfl_module_addrinfo(mod, lookup, &off, &sym, NULL, NULL, NULL);
		f.library = dwfl_module_info(mod, NULL, NULL, NULL, NULL, NULL, NULL, NULL);
		Dwfl_Line *line = dwfl_module_getsrc(mod, lookup);
		int lineno = 0;
		const char *file = line ? dwfl_lineinfo(line, NULL, &lineno, NULL, NULL, NULL) : NULL;
		if (file && lineno > 0) {
			f.file = file;
			f.line = lineno;
		}
	}
	if (slot)
		*slot = (struct named_pc){lookup, f.function, f.library, f.file, f.line};
	w->frames++;
	w->err = w->fn(w->arg, &f);
	return w->err ? DWARF_CB_ABORT : DWARF_CB_OK;
}

static int thread_cb(Dwfl_Thread *thread, void *arg)
{
	struct walk *w = arg;
	w->tid = dwfl_thread_tid(thread);
	w->frames = 0;
	int rc = dwfl_thread_getframes(thread, frame_cb, w);
	if (w->err)
		return DWARF_CB_ABORT;
	// An unwinder stops with an error at the outermost frame; only a thread with no frame
	// at all failed.
	if (rc != 0 && w->frames == 0) {
		struct pyu_unwound f = {w->tid, 0, 0, NULL, NULL, NULL, -1, dwfl_errmsg(-1)};
		w->err = w->fn(w->arg, &f);
		if (w->err)
			return DWARF_CB_ABORT;
	}
	return DWARF_CB_OK;
}

static struct pyu_error *dwfl_failure(const char *what)
{
	return pyu_error_create(PYU_ERR_IO, "elfutils could not %s: %s", what, dwfl_errmsg(-1));
}

struct pyu_error *pyu_target_unwind(struct pyu_target *t, pyu_unwind_fn fn, void *arg)
{
	if (!t || !fn || (!t->live_pid && t->core_fd < 0))
		return pyu_error_create(PYU_ERR_ARGUMENT,
					"native frames are unwound only in live processes and cores");
	struct walk w = {0};
	w.fn = fn;
	w.arg = arg;
	Elf *elf = NULL;
	struct pyu_error *err = NULL;
	if (t->live_pid) {
		w.dwfl = dwfl_begin(&proc_callbacks);
		if (!w.dwfl)
			return dwfl_failure("start");
		dwfl_report_begin(w.dwfl);
		if (dwfl_linux_proc_report(w.dwfl, t->live_pid) != 0)
			err = dwfl_failure("read the process's mappings");
		else if (dwfl_report_end(w.dwfl, NULL, NULL) != 0)
			err = dwfl_failure("list the process's modules");
		else if (dwfl_linux_proc_attach(w.dwfl, t->live_pid, true) != 0)
			err = dwfl_failure("attach to the process (it must be held stopped)");
	} else {
		elf_version(EV_CURRENT);
		elf = elf_begin(t->core_fd, ELF_C_READ_MMAP, NULL);
		w.dwfl = elf ? dwfl_begin(&core_callbacks) : NULL;
		if (!w.dwfl) {
			if (elf)
				elf_end(elf);
			return pyu_error_create(PYU_ERR_IO, "elfutils could not open the core: %s",
						elf_errmsg(-1));
		}
		dwfl_report_begin(w.dwfl);
		if (dwfl_core_file_report(w.dwfl, elf, t->exe_local_path) < 0)
			err = dwfl_failure("read the core's mappings");
		else if (dwfl_report_end(w.dwfl, NULL, NULL) != 0)
			err = dwfl_failure("list the core's modules");
		else if (dwfl_core_file_attach(w.dwfl, elf) < 0)
			err = dwfl_failure("read the core's threads");
	}
	if (!err)
		w.names = calloc(NAME_CACHE, sizeof(*w.names)); // NULL: each pc looked up afresh
	if (!err && dwfl_getthreads(w.dwfl, thread_cb, &w) != 0 && !w.err)
		err = dwfl_failure("list the threads");
	if (w.err) {
		pyu_error_destroy(err);
		err = w.err;
	}
	dwfl_end(w.dwfl);
	free(w.names);
	if (elf)
		elf_end(elf);
	return err;
}

#endif
