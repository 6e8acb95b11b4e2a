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

#include <dwarf.h>
#include <elfutils/libdw.h>
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

#define NAMED_FRAMES 8u   // frames one pc names (inlined calls and the function) kept per entry
#define MAX_INLINED 64    // inlined calls listed at one pc

struct named_frame {
	const char *function, *file;
	int64_t line;
};

// The frames a pc names, innermost first: the functions inlined there, then the real one.
struct named_pc {
	Dwarf_Addr pc; // 0: empty
	const char *library;
	uint32_t count;
	struct named_frame frames[NAMED_FRAMES];
};

// A source file name made absolute (a relative one joined to its compilation directory), kept
// for the whole unwind like the Dwfl's own strings.
struct joined_path {
	struct joined_path *next;
	const char *dir, *file; // what it was made of (the Dwfl's strings)
	char path[];
};

struct walk {
	Dwfl *dwfl;
	struct named_pc *names; // NAME_CACHE entries; NULL when out of memory (no caching)
	struct joined_path *paths;
	uint32_t path_count;
	pyu_unwind_fn fn;
	void *arg;
	struct pyu_error *err;   // from @fn: stops everything
	int64_t tid;
	uint32_t frames;
	uint32_t max_frames; // per thread: PYU_UNWIND_MAX_FRAMES, of a core fewer (unwind.h)
};

// At @w's bound of frames for a thread: the thread's unwinding ends with an error saying so
// (DWARF_CB_ABORT returned), once.
static int past_bound(struct walk *w)
{
	char msg[128];
	snprintf(msg, sizeof(msg), "native stack unwound only to its %u innermost frames%s",
		 w->max_frames, w->max_frames < PYU_UNWIND_MAX_FRAMES ? " of a core" : "");
	struct pyu_unwound f = {w->tid, 0, 0, NULL, NULL, NULL, -1, msg};
	w->err = w->fn(w->arg, &f);
	return DWARF_CB_ABORT;
}

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

// The name a DIE gives its function, following DW_AT_abstract_origin (an inlined call's DIE
// names nothing itself); the linkage name when there is no plain one.
static const char *die_function(Dwarf_Die *die)
{
	Dwarf_Attribute attr;
	const char *name = dwarf_formstring(dwarf_attr_integrate(die, DW_AT_name, &attr));
	return name ? name : dwarf_formstring(dwarf_attr_integrate(die, DW_AT_linkage_name, &attr));
}

#define JOINED_PATHS_MAX 4096u // distinct relative names joined in one unwind

// @file as a full name: a relative one (a DWARF 5 line table's file in a relative directory,
// "pkg/mod.c" compiled from the directory above the package, comes out of elfutils relative)
// joined to the compilation directory of @cu, as debuggers show it. @file itself when it is
// absolute, when the unit names no directory, or when out of memory.
static const char *full_path(struct walk *w, Dwarf_Die *cu, const char *file)
{
	Dwarf_Attribute attr;
	const char *dir = file && file[0] != '/' && cu
		? dwarf_formstring(dwarf_attr(cu, DW_AT_comp_dir, &attr)) : NULL;
	if (!dir || dir[0] != '/')
		return file;
	for (struct joined_path *p = w->paths; p; p = p->next)
		if (p->file == file && p->dir == dir)
			return p->path;
	size_t n = strlen(dir) + strlen(file) + 2;
	struct joined_path *p = w->path_count < JOINED_PATHS_MAX
		? malloc(sizeof(*p) + n) : NULL;
	if (!p)
		return file;
	p->dir = dir;
	p->file = file;
	snprintf(p->path, n, "%s/%s", dir, file);
	p->next = w->paths;
	w->paths = p;
	w->path_count++;
	return p->path;
}

// Where the inlined call @die sits in its caller: DW_AT_call_file / DW_AT_call_line.
static void call_site(Dwarf_Die *cu, Dwarf_Die *die, const char **file, int64_t *line)
{
	Dwarf_Attribute attr;
	Dwarf_Word index = 0, lineno = 0;
	Dwarf_Files *files = NULL;
	size_t count = 0;
	*file = NULL;
	*line = -1;
	if (dwarf_formudata(dwarf_attr(die, DW_AT_call_file, &attr), &index) != 0 ||
	    dwarf_getsrcfiles(cu, &files, &count) != 0 || index >= count)
		return;
	*file = dwarf_filesrc(files, index, NULL, NULL);
	if (*file && dwarf_formudata(dwarf_attr(die, DW_AT_call_line, &attr), &lineno) == 0 &&
	    lineno > 0 && lineno < INT32_MAX)
		*line = (int64_t)lineno;
}

// The frames @lookup names in @mod, innermost first, into @out (room for MAX_INLINED + 1):
// the functions inlined there, as debuggers list them - each at its own line, its caller at
// the call's line - then the real function (its ELF symbol). Returns how many.
static uint32_t name_frames(struct walk *w, Dwfl_Module *mod, Dwarf_Addr lookup,
			    struct named_frame *out)
{
	GElf_Off off;
	GElf_Sym sym;
	struct named_frame f = {dwfl_module_addrinfo(mod, lookup, &off, &sym, NULL, NULL, NULL),
				NULL, -1};
	Dwfl_Line *line = dwfl_module_getsrc(mod, lookup);
	int lineno = 0;
	const char *file = line ? dwfl_lineinfo(line, NULL, &lineno, NULL, NULL, NULL) : NULL;
	// dwarf_getscopes follows an inlined function into its abstract definition; the chain of
	// concrete DIEs around the innermost inlined call is dwarf_getscopes_die's.
	Dwarf_Addr bias = 0;
	Dwarf_Die *cu = dwfl_module_addrdie(mod, lookup, &bias);
	if (file && lineno > 0) {
		f.file = full_path(w, cu, file);
		f.line = lineno;
	}
	Dwarf_Die *scopes = NULL, *chain = NULL;
	int n = cu ? dwarf_getscopes(cu, lookup - bias, &scopes) : 0, m = 0;
	for (int i = 0; i < n && !chain; i++) {
		if (dwarf_tag(&scopes[i]) == DW_TAG_subprogram)
			break;
		if (dwarf_tag(&scopes[i]) == DW_TAG_inlined_subroutine &&
		    (m = dwarf_getscopes_die(&scopes[i], &chain)) <= 0)
			break;
	}
	free(scopes);
	uint32_t count = 0;
	const char *symbol = f.function;
	for (int i = 0; i < m && count < MAX_INLINED; i++) {
		int tag = dwarf_tag(&chain[i]);
		if (tag == DW_TAG_subprogram)
			break;
		if (tag != DW_TAG_inlined_subroutine)
			continue;
		f.function = die_function(&chain[i]);
		out[count++] = f;
		call_site(cu, &chain[i], &f.file, &f.line);
		f.file = full_path(w, cu, f.file);
	}
	free(chain);
	f.function = symbol;
	out[count++] = f;
	return count;
}

static int frame_cb(Dwfl_Frame *state, void *arg)
{
	struct walk *w = arg;
	Dwarf_Addr pc;
	bool activation;
	// A pc of 0 is where an unwinder that lost its way ends, not a frame.
	if (w->frames >= w->max_frames)
		return past_bound(w);
	if (!dwfl_frame_pc(state, &pc, &activation) || !pc)
		return DWARF_CB_ABORT;
	Dwarf_Word sp = 0;
	if (dwfl_frame_reg(state, SP_REGNO, &sp) != 0)
		sp = 0;
	// A return address points after the call: look up the call itself.
	Dwarf_Addr lookup = activation ? pc : pc - 1;
	struct pyu_unwound f = {w->tid, pc, sp, NULL, NULL, NULL, -1, NULL};
	struct named_pc *slot = w->names ? &w->names[(lookup ^ (lookup >> 12)) % NAME_CACHE]
					 : NULL;
	struct named_frame found[MAX_INLINED + 1] = {{NULL, NULL, -1}};
	const struct named_frame *frames = found;
	uint32_t count = 1;
	if (slot && slot->pc == lookup) {
		f.library = slot->library;
		frames = slot->frames;
		count = slot->count;
	} else {
		Dwfl_Module *mod = dwfl_addrmodule(w->dwfl, lookup);
		if (mod) {
			f.library = dwfl_module_info(mod, NULL, NULL, NULL, NULL, NULL, NULL, NULL);
			count = name_frames(w, mod, lookup, found);
		}
		if (slot && count <= NAMED_FRAMES) {
			slot->pc = lookup;
			slot->library = f.library;
			slot->count = count;
			memcpy(slot->frames, found, count * sizeof(*found));
		}
	}
	for (uint32_t i = 0; i < count; i++) {
		if (w->frames >= w->max_frames)
			return past_bound(w);
		f.function = frames[i].function;
		f.file = frames[i].file;
		f.line = frames[i].line;
		w->frames++;
		w->err = w->fn(w->arg, &f);
		if (w->err)
			return DWARF_CB_ABORT;
	}
	return DWARF_CB_OK;
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
	w.max_frames = t->live_pid ? PYU_UNWIND_MAX_FRAMES : PYU_UNWIND_MAX_CORE_FRAMES;
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
	while (w.paths) {
		struct joined_path *next = w.paths->next;
		free(w.paths);
		w.paths = next;
	}
	if (elf)
		elf_end(elf);
	return err;
}

#endif
