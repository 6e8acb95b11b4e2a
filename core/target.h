// target.h - the address space of a target, as the rest of the core sees it: checked reads
// through a small page cache, the list of mapped files, and the thread ids. A live process, a
// core file and a debugger callback differ only in the backend that fills a struct pyu_target.
#ifndef PYU_TARGET_H
#define PYU_TARGET_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "error.h"
#include "syscalls.h"

struct pyu_mapping {
	uint64_t start, end; // [start, end) in the target
	uint64_t offset;     // file offset of start
	bool writable;
	bool readable, executable; // from /proc/PID/maps or PT_LOAD p_flags; true for callbacks
	char *path;          // as the target names it; NULL for anonymous memory. Pseudo-files
	                     // of a live process ("[heap]", "[stack]", "[vdso]") keep their name.
	char *local_path;    // where to read that file here (after path maps); NULL if none
	bool local_path_fixed; // local_path chosen by the backend (a live process's deleted or
	                       // replaced file, another mount namespace); a path map matching
	                       // @path still overrides it
	// A live process's file as its maps line names it, compared with the file here only when
	// first needed (pyu_target_file_matches): most mapped files (libc, locales) never are.
	uint64_t inode;
	uint32_t dev_major, dev_minor;
	bool deleted;        // the maps line said " (deleted)"
	uint8_t local_check; // enum pyu_local_check
};

// How pyu_target_file_matches() tells whether a mapping's local file is the target's.
enum pyu_local_check {
	PYU_LOCAL_COMPARE, // by build ID (cores, debugger callbacks, files found through path maps)
	PYU_LOCAL_PENDING, // a live process's file, not looked at yet
	PYU_LOCAL_SAME,    // the very file the live process maps (same device and inode)
};

// Backend: reads up to @len bytes at @addr. Returns the number of bytes read (a short count
// means the rest is unreadable). Must not fail for a partially readable range in a way that
// hides the readable prefix.
typedef uint64_t (*pyu_backend_read_fn)(struct pyu_target *t, uint64_t addr, void *buf,
					 uint64_t len);

// Reads exactly @len bytes at @addr. Reads go through a direct-mapped cache of 4 KiB pages
// (256 per target); reads of 64 KiB or more go to the backend directly. Each page touched
// counts once, as a backend read (pyu_target_backend_reads) or a cached one. On error
// (PYU_ERR_FAULT naming the first unreadable address), @buf contents are unspecified.
struct pyu_error *pyu_target_read(struct pyu_target *t, uint64_t addr, void *buf, size_t len);
// Typed little-endian reads. On error, *ret is unchanged.
struct pyu_error *pyu_target_read_u64(struct pyu_target *t, uint64_t addr, uint64_t *ret);
struct pyu_error *pyu_target_read_u32(struct pyu_target *t, uint64_t addr, uint32_t *ret);
struct pyu_error *pyu_target_read_u8(struct pyu_target *t, uint64_t addr, uint8_t *ret);
// Reads bytes up to @max or a NUL, whichever first; *ret is NUL-terminated, malloc'd. A
// string that ends right before unreadable memory still reads. On error (PYU_ERR_FAULT when
// memory ends before a NUL or @max), *ret is unchanged.
struct pyu_error *pyu_target_read_cstr(struct pyu_target *t, uint64_t addr, size_t max,
				       char **ret);
// The name the program was started by, as the target's memory holds it (the auxiliary
// vector's AT_EXECFN; a core's NT_AUXV), malloc'd; NULL when unknown or out of memory. When
// @phdr is not NULL, *phdr is where the program's headers are (AT_PHDR; 0: unknown).
char *pyu_target_exec_name(struct pyu_target *t, uint64_t *phdr);

// The mappings, sorted by start address. Cannot fail.
size_t pyu_target_mapping_count(const struct pyu_target *t);
// Whether the mappings known are only the lowest of a live process's (its open read the start
// of the map alone): pyu_target_mapping_count reads the rest. Cannot fail.
bool pyu_target_mappings_partial(const struct pyu_target *t);
// How many mappings are known now (pyu_target_mapping(t, i) below it), without reading the
// rest or a stale map again. Cannot fail.
// Whether @m maps the executable of a live process, as /proc/PID/exe reaches it (the very
// file the process runs), and that file's identity (elf.h) in *@ret. False for other targets
// and mappings, or when the open could not look at it.
struct pyu_file_id;
bool pyu_target_exe_id(const struct pyu_target *t, const struct pyu_mapping *m,
		       struct pyu_file_id *ret);
size_t pyu_target_known_mapping_count(const struct pyu_target *t);
const struct pyu_mapping *pyu_target_mapping(const struct pyu_target *t, size_t i);
// The mapping containing @addr, or NULL.
const struct pyu_mapping *pyu_target_find_mapping(const struct pyu_target *t, uint64_t addr);

// Kernel thread ids known to the target (from /proc/PID/task, NT_PRSTATUS or the debugger).
size_t pyu_target_thread_count(const struct pyu_target *t);
int64_t pyu_target_thread(const struct pyu_target *t, size_t i);
// Whether @tid is a thread id of the target. A live process's threads are not listed again
// for an id its last listing held, even at a later snapshot: this checks that an id read from
// the target's memory (glibc's thread descriptor) names a thread of it at all, and a thread
// that ended has that id cleared by the kernel as it ends. Any other id lists them again.
// Cannot fail (false when the list cannot be read).
bool pyu_target_has_thread(const struct pyu_target *t, int64_t tid);

// How the process a core was taken of ended, from the notes of its first thread (the one the
// kernel dumped for: NT_PRSTATUS's pr_cursig, NT_SIGINFO's si_signo/si_code/si_addr).
struct pyu_crash {
	int64_t tid;          // kernel tid of the core's first thread
	int32_t signal;       // 0 when the core records none (e.g. gcore of a running process)
	int32_t code;         // si_code; meaningful when has_code
	uint64_t address;     // si_addr of a fault signal; meaningful when has_address
	bool has_code, has_address;
	// Written by a debugger, not by the kernel for a dying process (gdb's gcore: a note owned
	// by "GDB", section headers, which the kernel never writes): signal then is only how the
	// debugger stopped the thread (SIGSTOP of an attach, SIGTRAP of a breakpoint).
	bool by_debugger;
};
// Whether @c records a crash: a kernel's core of a process a signal ended, not a debugger's
// core and not a signal that stops or is ignored by default (which cannot dump a core).
bool pyu_crash_is_crash(const struct pyu_crash *c);
// Fills *ret and returns true for a core file whose first thread's status was read; returns
// false (and leaves *ret unchanged) for live processes, callback targets and cores without an
// NT_PRSTATUS. Cannot fail.
bool pyu_target_crash(const struct pyu_target *t, struct pyu_crash *ret);

// What a thread of the target is doing, as far as the target tells: the system call it is in
// (live: /proc/PID/task/TID/syscall; core: its NT_PRSTATUS registers; a debugger's target: the
// registers the debugger read, pyu_target_set_thread_registers) and its CPU time (live:
// /proc/PID/task/TID/schedstat, or stat; core: NT_PRSTATUS pr_utime + pr_stime).
#define PYU_SYSCALL_UNKNOWN INT64_MIN
struct pyu_thread_status {
	int64_t syscall;   // the number of the system call the thread is in; -1: none (it runs
			   // or was stopped in user code); PYU_SYSCALL_UNKNOWN when not known
	uint64_t args[6];  // that call's arguments; meaningful when has_args
	bool has_args;
	bool has_pc;
	uint64_t pc;       // the thread's program counter; meaningful when has_pc
	// Live, a thread in the architecture's restart call: the kernel function it sleeps in
	// (/proc/PID/task/TID/wchan, "futex_do_wait"); "" when not read.
	char wchan[48];
	int64_t cpu_ns;    // user + system CPU time in nanoseconds; -1 when not known
};
// Fills *ret for thread @tid (unknown parts marked as such: a thread the target does not know
// gets every field unknown). A live process should be stopped (else running threads read as
// in no system call). Cannot fail.
void pyu_target_thread_status(struct pyu_target *t, int64_t tid, struct pyu_thread_status *ret);
// As pyu_target_thread_status for each of the @count threads @tids, into @ret[i]: cheaper
// than one call a thread (a live process's files are closed together). Cannot fail.
void pyu_target_thread_statuses(struct pyu_target *t, const int64_t *tids, size_t count,
				struct pyu_thread_status *ret);
// The target's architecture (a core's e_machine, else this machine's), or NULL when it is one
// the system call tables do not know. Cannot fail.
const struct pyu_arch *pyu_target_arch(const struct pyu_target *t);

// Applies the path maps (and an executable given to pyu_target_open_core) to a path the target
// names; malloc'd result, NULL when out of memory. A relative path is first joined to the
// target's working directory: the one pyu_target_set_cwd() gave, else a live process's own
// (/proc/PID/cwd, read through that link); left as it is when neither is known.
char *pyu_target_local_path(const struct pyu_target *t, const char *path);
// Whether pyu_target_local_path() knows what a relative path is relative to. Cannot fail.
bool pyu_target_cwd_known(const struct pyu_target *t);

// The lowest mapping whose path (as the target names it) or local path equals @path and whose
// file offset is 0, or NULL. Used to find where an ELF file is loaded.
const struct pyu_mapping *pyu_target_find_file_mapping(const struct pyu_target *t,
							const char *path);

// Whether @m's local file is the file the target maps, as far as can be told: false only
// when the target's copy of the file's first page and the local file both carry a GNU build
// ID and the two differ (a core from another machine, a library rebuilt since). Judged once
// per local file. Cores never read pages from a file that does not match. Cannot fail: when
// it cannot tell (no build IDs, out of memory) the answer is true.
bool pyu_target_file_matches(struct pyu_target *t, const struct pyu_mapping *m);

// Records that @m's local file is not the target's build after all (what it says about the
// target proved wrong, though no build ID could be compared): pyu_target_file_matches() then
// answers false for it and no page is read from it. Cannot fail (out of memory: ignored).
void pyu_target_distrust_file(struct pyu_target *t, const struct pyu_mapping *m);

// Something the user should know about the target as a whole, to add to errors (e.g. "the
// core file is truncated: ..."), or NULL. Owned by @t. Cannot fail.
const char *pyu_target_notice(const struct pyu_target *t);

// Parses a size: digits and an optional K, M, G or T (powers of 1024; "GiB", "GB" also do).
// On failure (not a size, too large), *ret is unchanged.
bool pyu_parse_size(const char *text, uint64_t *ret);

// Where the target's memory comes from, for notes and triage: "the live process",
// "the core file" or "a read callback" (a debugger's own memory reads). A static string.
// Cannot fail.
const char *pyu_target_source(const struct pyu_target *t);

// A hint: [@addr, @addr+@len) will be read soon. Reads the pages of it not in the cache in as
// few backend reads as possible (whole pages; nothing beyond PYU_PREFETCH_MAX bytes). Cannot
// fail: what cannot be read is left to the reads themselves.
#define PYU_PREFETCH_MAX (512u << 10)
void pyu_target_prefetch(struct pyu_target *t, uint64_t addr, uint64_t len);

// A hint: the pages holding [@addrs[i], @addrs[i] + @size) will be read soon (objects a table
// points to, scattered over the heap; 0 stands for none and is skipped). With a backend that
// gathers (a live process) the pages not in the cache are read in one system call per 128 of
// them; through a debugger's reads (a callback target), as a few contiguous spans; from a
// core file, nothing is done. Cannot fail: what cannot be read is left to the reads.
void pyu_target_prefetch_scattered(struct pyu_target *t, const uint64_t *addrs, size_t n,
				   size_t size);

// A hint: the ranges [@addrs[i], @addrs[i] + @lens[i]) will be read soon (the newest data-stack
// chunks of many threads). With a backend that gathers, the pages of them not in the cache are
// read in one system call per 128 pages, at most half the cache in all (the rest is left to
// the reads); through a debugger's reads, as contiguous spans; from a core file, nothing is
// done. Cannot fail.
void pyu_target_prefetch_ranges(struct pyu_target *t, const uint64_t *addrs,
				const uint64_t *lens, size_t n);

// The little-endian u64 at @addr when the page cache holds it (true), without reading the
// target or counting a read; false (*ret unchanged) otherwise. For following pointers through
// what a prefetch brought in, to prefetch what they lead to. Cannot fail.
bool pyu_target_peek_u64(const struct pyu_target *t, uint64_t addr, uint64_t *ret);

// Long walks over much of the target's memory (the heap census): while @on, reads the
// backend can serve in place (a core file's own data, mapped into memory) are copied from
// there, past the page cache and without a system call, and counted as cached reads; other
// reads (a live process, a debugger's, pages a core left to mapped files) are as ever.
// Returns the setting before. Cannot fail.
bool pyu_target_direct(struct pyu_target *t, bool on);
// A hint during such a walk: the pages read in place so far need not stay resident (they are
// read again from the file system's cache when next needed), so the walk's memory stays
// bounded however much of a core it reads. Cannot fail.
void pyu_target_release_views(struct pyu_target *t);

// Forgets every cached page: call after a live target ran (the debugger resumed it).
// Cannot fail.
void pyu_target_flush_cache(struct pyu_target *t);

// Starts a snapshot. On a target whose memory changes (a live process, a debugger's reads),
// nothing read for an earlier snapshot is trusted: cached pages are dropped and what the
// backend lists is read again (a process's threads; its mappings once needed:
// pyu_target_reread_mappings). A core is left as it is.
// Cannot fail: a list that cannot be read again stays as it was.
void pyu_target_begin_snapshot(struct pyu_target *t);

// Notes the pages read or looked at since the snapshot began (the walk is done), when few: a
// target whose memory changes reads them first, at once, as the next snapshot begins.
// Cannot fail.
void pyu_target_note_used_pages(struct pyu_target *t);
// A hint as a snapshot first reads values (thread names, locals): a fresh handle on a live
// process whose last handle read values reads the pages those reads took in one gathered read
// (target.c, keep_uses). Cannot fail.
void pyu_target_prefetch_late(struct pyu_target *t);

// The number of snapshots begun on @t: what a layer above keeps between snapshots of a target
// whose memory changes (pyu_target_changes) must be checked again once this moved on.
// Cannot fail.
uint64_t pyu_target_snapshot(const struct pyu_target *t);
// A block an upper layer keeps with the target from one snapshot to the next (what it found
// once, to check again rather than find again): the target only holds it and releases it with
// @free_fn (replacing what was kept, releasing that). pyu_target_kept() gives it back (NULL
// when none). Cannot fail.
void pyu_target_keep(struct pyu_target *t, void *block, void (*free_fn)(void *));
void *pyu_target_kept(const struct pyu_target *t);
bool pyu_target_changes(const struct pyu_target *t);
// A live process's mappings are read again when first needed in a snapshot, not as it begins
// (pyu_target_mapping_count and pyu_target_find_mapping of an address outside them do): this
// reads them now if they were not yet in this snapshot; true when it did (what was read with
// the old ones may be worth reading again). Cannot fail: a map that cannot be read stays.
bool pyu_target_reread_mappings(struct pyu_target *t);

#endif
