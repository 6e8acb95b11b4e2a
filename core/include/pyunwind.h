// pyunwind.h - the one public header of libpyunwind: Python stacks read from a target's memory.
// Everything behind these functions is hidden; the debugger adapters bind this file with ctypes,
// so it uses only opaque handles, fixed-width integers, uint64_t addresses and C strings.
#ifndef PYUNWIND_H
#define PYUNWIND_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define PYU_PUBLIC __attribute__((visibility("default")))

// Bumped whenever a signature or a documented behaviour below changes; both adapters refuse to
// load a library whose pyu_abi_version() differs from the number they were written for.
#define PYU_ABI_VERSION 9

PYU_PUBLIC uint32_t pyu_abi_version(void);

// ---- errors ------------------------------------------------------------------------------
// Functions that can fail return a struct pyu_error * (NULL on success). The caller owns it and
// releases it with pyu_error_destroy(); destroying the static out-of-memory error is harmless.
struct pyu_error;
// Cannot fail. The string is owned by @err.
PYU_PUBLIC const char *pyu_error_message(const struct pyu_error *err);
// One of enum pyu_error_code.
PYU_PUBLIC int32_t pyu_error_code(const struct pyu_error *err);
PYU_PUBLIC void pyu_error_destroy(struct pyu_error *err);

enum pyu_error_code {
	PYU_ERR_OK = 0,
	PYU_ERR_NOMEM = 1,
	PYU_ERR_IO = 2,          // could not open/read a file or process
	PYU_ERR_FAULT = 3,       // target memory not readable / not in the core
	PYU_ERR_FORMAT = 4,      // malformed ELF, core or line table
	PYU_ERR_NOT_PYTHON = 5,  // no CPython interpreter found in the target
	PYU_ERR_UNSUPPORTED = 6, // a CPython version or build we have no layout for
	PYU_ERR_CORRUPT = 7,     // interpreter structures that fail validation
	PYU_ERR_ARGUMENT = 8,    // bad argument from the caller
	PYU_ERR_NOT_FOUND = 9,   // no such thread / frame
};

// Strings returned to the caller are allocated by the library and released with pyu_free().
PYU_PUBLIC void pyu_free(void *p);

// ---- targets -----------------------------------------------------------------------------
// A target is an address space plus what is known of it: mapped files and thread ids.
struct pyu_target;

// A live local process. Needs permission to read its memory (ptrace rules); the process should
// be stopped (a debugger has it stopped) for a consistent picture.
PYU_PUBLIC struct pyu_error *pyu_target_open_pid(int32_t pid, struct pyu_target **ret);

// An ELF core file. @executable may be NULL (taken from the core's NT_FILE/PRPSINFO notes).
// Pages the core omits are read from the mapped files on disk.
PYU_PUBLIC struct pyu_error *pyu_target_open_core(const char *core_path, const char *executable,
						  struct pyu_target **ret);
// The same, for a core that may be compressed (gzip, zstd, xz: unpacked to an unnamed file in
// $TMPDIR that nothing outlives): at most @max_unpacked bytes are unpacked, and not much more
// than the unpacked ELF headers promise. @max_unpacked 0 means $PYUNWIND_MAX_UNPACKED (a size:
// digits and K, M, G or T) or, without it, 16 GiB. pyu_target_open_core() is this with 0.
PYU_PUBLIC struct pyu_error *pyu_target_open_core_limited(const char *core_path,
							  const char *executable,
							  uint64_t max_unpacked,
							  struct pyu_target **ret);

// Holding a live process still while it is read, as the CLI does: every thread seized and
// interrupted with ptrace (PTRACE_SEIZE + PTRACE_INTERRUPT: no signal the program can see),
// repeated while new threads appear, then waited for (at most two seconds). The calling thread
// is then their tracer, as pyu_stacks_unwind_native() needs for a live process: release from
// the same thread. Threads that cannot be held (no permission, gone, past 8,192) are left
// running; a process a debugger already traces is left to it. *ret is set even when no thread
// was held (pyu_hold_count() 0). Fails only for a pid <= 0 (PYU_ERR_ARGUMENT) or out of memory.
struct pyu_hold;
PYU_PUBLIC struct pyu_error *pyu_process_hold(int32_t pid, struct pyu_hold **ret);
// How many threads @h holds. Cannot fail.
PYU_PUBLIC uint32_t pyu_hold_count(const struct pyu_hold *h);
// Lets the threads of @h run again, each given back the signal it had stopped for, and frees
// @h (NULL: nothing). Cannot fail.
PYU_PUBLIC void pyu_process_release(struct pyu_hold *h);

// Reads @len bytes at @addr into @buf; returns how many bytes were read (0 on failure).
// A callback that raises in Python returns 0 through ctypes, which reads as failure.
typedef uint64_t (*pyu_read_fn)(void *arg, uint64_t addr, void *buf, uint64_t len);

// A target read through a debugger. @arg is passed back to @read; the caller keeps @read and
// @arg alive for the life of the target. Describe the address space with
// pyu_target_add_mapping() and pyu_target_add_thread() before pyu_stacks_collect().
PYU_PUBLIC struct pyu_error *pyu_target_open_callback(pyu_read_fn read, void *arg,
						      struct pyu_target **ret);

// What a read of @t costs, as measured for its backend: @read_us microseconds a read and
// @kib_us a KiB read. Where bytes are dear (lldb's reads through lldb-server: about 70 us a
// read and 20 us a KiB), a miss reads only the sectors it needs instead of a page (the
// largest power of two from 512 bytes whose bytes cost no more than a read: 2 KiB there), and
// reads of several pieces take in only gaps cheaper than a read. 0, 0 restores the
// default (bytes cheap: whole pages, gaps of up to two pages read). Cannot fail.
PYU_PUBLIC void pyu_target_set_read_cost(struct pyu_target *t, uint32_t read_us,
					 uint32_t kib_us);

// Declares that [@start, @end) maps @path at file offset @offset. @path may name a file that
// is not on this machine (the mapping then only helps to name things).
PYU_PUBLIC struct pyu_error *pyu_target_add_mapping(struct pyu_target *t, uint64_t start,
						    uint64_t end, uint64_t offset,
						    uint32_t writable, const char *path);
// Declares a thread of the target by kernel thread id.
PYU_PUBLIC struct pyu_error *pyu_target_add_thread(struct pyu_target *t, int64_t tid);
// The registers, as gdb and lldb name them (space-separated), that say which system call a
// thread is in and with which arguments: "orig_rax rdi rsi rdx r10 r8 r9" on x86-64; "" for an
// architecture pyunwind has no table for. Static string. Cannot fail.
PYU_PUBLIC const char *pyu_target_syscall_registers(const struct pyu_target *t);
// Hands in those registers of thread @tid as the debugger read them, in that order (@count of
// them; fewer than all: the arguments, or the program counter after them, are unknown), so
// that py-bt can say what a thread of a callback target is doing. A live process or core
// target reads its own (/proc, the core's notes) and ignores these.
PYU_PUBLIC struct pyu_error *pyu_target_set_thread_registers(struct pyu_target *t, int64_t tid,
							     const uint64_t *values,
							     uint32_t count);
// Hands in the target's auxiliary vector as the debugger read it (gdb's `info auxv`): @count
// (type, value) pairs in @pairs. For a target whose debugger gives no mapping list (a remote
// stub, such as qemu-user's): its files are then named from the dynamic linker's list in its
// memory, found from AT_PHDR (or AT_BASE) and AT_EXECFN, and looked for under the sysroot, in
// the search directories and where they are. Does nothing for a live process or core target.
PYU_PUBLIC struct pyu_error *pyu_target_set_auxv(struct pyu_target *t, const uint64_t *pairs,
						 uint32_t count);
// Files named @from (a path prefix) in the target are read from @to on this machine: for a core
// from another machine or container. Applies to mappings added afterwards and to core notes.
PYU_PUBLIC struct pyu_error *pyu_target_add_path_map(struct pyu_target *t, const char *from,
						     const char *to);
// Where the target's files are looked for on this machine, as gdb's `set sysroot` and
// `set solib-search-path` do: a file the target names /P is read from @dir/P (a copy of the
// crashed machine's root); a path map matching /P still wins. Search directories are tried,
// in the order added, as DIR/BASENAME when the file is missing or another build, and then
// debuginfod (elfutils' client, the servers of $DEBUGINFOD_URLS, its cache) by build ID.
// A file is used only when its GNU build ID equals the target's (when the target's copy of
// the file's first page shows one); else the stack is read from the target's memory alone.
PYU_PUBLIC struct pyu_error *pyu_target_set_sysroot(struct pyu_target *t, const char *dir);
PYU_PUBLIC struct pyu_error *pyu_target_add_search_dir(struct pyu_target *t, const char *dir);
// The target's working directory, as the target names it (a path map or the sysroot then
// applies): the source of code compiled under a relative file name ("app.py", started as
// `python app.py`) is read from @dir/NAME. A live process opened by pid uses its own
// (/proc/PID/cwd) unless this is set; a core or a callback target has none until set.
PYU_PUBLIC struct pyu_error *pyu_target_set_cwd(struct pyu_target *t, const char *dir);
PYU_PUBLIC void pyu_target_destroy(struct pyu_target *t);

// Memory a debugger wrote while the target stood still (lldb's `memory write`, `expression`,
// a script's SBProcess.WriteMemory: lldb's stop id does not change): after
// pyu_target_track_reads(@t), every read that reaches the backend is remembered (where, how
// long, a hash of the bytes; at most 65,536 reads and 256 MiB), and
// pyu_target_memory_changed() reads all of it again and sets *@ret to 1 when any byte differs
// or is no longer readable (or more was read than is remembered), else 0. A snapshot taken
// from @t is stale when it says 1. Call track_reads before the first read.
PYU_PUBLIC void pyu_target_track_reads(struct pyu_target *t);
PYU_PUBLIC struct pyu_error *pyu_target_memory_changed(struct pyu_target *t, uint32_t *ret);

// Counters for `make bench`: reads that reached the backend (process, core file or callback)
// and reads answered by the page cache.
PYU_PUBLIC uint64_t pyu_target_backend_reads(const struct pyu_target *t);
PYU_PUBLIC uint64_t pyu_target_cached_reads(const struct pyu_target *t);

// ---- stacks ------------------------------------------------------------------------------
// A snapshot of every thread's Python stack, taken once; formatting functions read from it
// (and from the target, for line tables and source files).
struct pyu_stacks;

// Finds the interpreter and walks every thread. Fails only when no Python stack at all can be
// produced (not a Python process, unsupported version); unreadable frames and threads become
// error frames inside the snapshot instead.
PYU_PUBLIC struct pyu_error *pyu_stacks_collect(struct pyu_target *t, struct pyu_stacks **ret);
PYU_PUBLIC void pyu_stacks_destroy(struct pyu_stacks *s);

PYU_PUBLIC uint32_t pyu_stacks_thread_count(const struct pyu_stacks *s);
// Index of the thread whose kernel tid is @native_tid or, failing that, whose pthread id is
// @pthread_id (either may be 0 for unknown); -1 when none matches.
PYU_PUBLIC int32_t pyu_stacks_find_thread(const struct pyu_stacks *s, int64_t native_tid,
					  uint64_t pthread_id);
// pyu_stacks_find_thread() of each of @n kernel tids at once (no pthread ids): ret[i] for
// tids[i]. One call for a debugger's every thread. Cannot fail (does nothing for NULLs).
PYU_PUBLIC void pyu_stacks_find_threads(const struct pyu_stacks *s, const int64_t *tids,
					uint32_t n, int32_t *ret);
// Number of frames of thread @thread (error frames included); 0 for a bad index.
PYU_PUBLIC uint32_t pyu_stacks_frame_count(const struct pyu_stacks *s, uint32_t thread);

// ---- the snapshot as values, for bindings that build objects from it ------------------------
// Integers absent in the target (no line, no column, no native id...) read as PYU_ABSENT.
#define PYU_ABSENT INT64_MIN
// The interpreter's version ("3.14.0"; owned by the snapshot), its hex version
// (sys.hexversion), and its build: bit 0 a debug build, bit 1 free-threaded.
PYU_PUBLIC const char *pyu_stacks_version(const struct pyu_stacks *s);
PYU_PUBLIC uint64_t pyu_stacks_hexversion(const struct pyu_stacks *s);
PYU_PUBLIC uint32_t pyu_stacks_build_flags(const struct pyu_stacks *s);
// Thread @thread: thread_id (threading.get_ident()), native_thread_id, holds_gil (1, 0),
// interpreter_id, tstate_address, frame_count, and the thread it continues (index + 1: the
// same OS thread in an interpreter this one called into; 0 when none). Fills @out[0..n) (n at
// most PYU_THREAD_FIELDS); returns how many were filled, 0 for a bad index.
#define PYU_THREAD_FIELDS 7u
PYU_PUBLIC uint32_t pyu_stacks_thread_fields(const struct pyu_stacks *s, uint32_t thread,
					     int64_t *out, uint32_t n);
// Frames [@first, @first + @count) of @thread, innermost first, PYU_FRAME_FIELDS integers
// each: kind (0 a Python frame, 1 an error frame), the code object's index (see below; -1 for
// an error frame), line, end_line, column, end_column, instruction_offset, frame_address.
// Returns the number of frames filled (fewer past the end; 0 for a bad thread).
#define PYU_FRAME_FIELDS 8u
PYU_PUBLIC uint32_t pyu_stacks_frame_fields(const struct pyu_stacks *s, uint32_t thread,
					    uint32_t first, uint32_t count, int64_t *out);
// How many of frames [@first, @first + @count) of @thread, from @first on, are Python frames
// whose PYU_FRAME_FIELDS fields (as pyu_stacks_frame_fields gives them, the code index i
// replaced by @code_keys[i]; an index of @ncode_keys or more, or a negative key, never
// matches) equal @keys, PYU_FRAME_FIELDS each: a caller that kept a thread's frames so finds
// them unchanged without copying them out. Cannot fail (0 for a bad thread).
PYU_PUBLIC uint32_t pyu_stacks_frames_match(const struct pyu_stacks *s, uint32_t thread,
					    uint32_t first, uint32_t count, const int64_t *keys,
					    const int64_t *code_keys, uint32_t ncode_keys);
// Why error frame @frame of @thread could not be read; NULL for a Python frame or a bad index.
// Owned by the snapshot.
PYU_PUBLIC const char *pyu_stacks_frame_reason(const struct pyu_stacks *s, uint32_t thread,
					       uint32_t frame);
// The code objects the snapshot's frames run (index from pyu_stacks_frame_fields): their
// count; the name (@which 0), qualified name (1: NULL before 3.11) and file name (2), UTF-8,
// owned by the snapshot (NULL for a bad index); the address.
PYU_PUBLIC uint32_t pyu_stacks_code_count(const struct pyu_stacks *s);
PYU_PUBLIC const char *pyu_stacks_code_string(const struct pyu_stacks *s, uint32_t code,
					      uint32_t which);
PYU_PUBLIC uint64_t pyu_stacks_code_address(const struct pyu_stacks *s, uint32_t code);
// The name of @thread (threading's name), read from the target with every thread's on first
// use; NULL when unknown. Owned by the snapshot.
PYU_PUBLIC const char *pyu_stacks_thread_name(struct pyu_stacks *s, uint32_t thread);
// What @thread is doing (read from the target with every thread's on first use): the system
// call it is blocked in (its number), the fatal signal it received, the fault address, its
// CPU time in nanoseconds, each PYU_ABSENT when none or unknown. Fills @out[0..n) (n at most
// PYU_ACTIVITY_FIELDS); returns how many, 0 for a bad index.
#define PYU_ACTIVITY_FIELDS 4u
PYU_PUBLIC uint32_t pyu_stacks_thread_activity(struct pyu_stacks *s, uint32_t thread,
					       int64_t *out, uint32_t n);
// The same in words: the system call's name (@which 0), the state ("waiting on a lock",
// "running"; 1), the signal's name ("SIGSEGV"; 2); NULL when unknown or none. Static strings.
PYU_PUBLIC const char *pyu_stacks_thread_activity_text(struct pyu_stacks *s, uint32_t thread,
						       uint32_t which);
// The address of the exception sys.exc_info() gives in @thread (0 when none or unknown).
PYU_PUBLIC uint64_t pyu_stacks_thread_exception(struct pyu_stacks *s, uint32_t thread);

// Output flags.
#define PYU_FMT_JSON 0x1u     // the JSON document of the stacks (see README)
#define PYU_FMT_SOURCE 0x2u   // text: add the source line (and carets on 3.11+)
#define PYU_FMT_TABLE 0x4u    // py-line: add the whole decoded line table
#define PYU_FMT_ALL 0x8u      // py-bt: every thread, not just @thread
#define PYU_FMT_LOCALS 0x10u  // py-bt: each frame's locals; threads' names and exceptions

// Bounds on the values shown (reprs of locals, exceptions, py-print).
enum pyu_limit {
	PYU_LIMIT_DEPTH = 1,  // containers nested deeper print as `...`
	PYU_LIMIT_ITEMS = 2,  // elements shown per container
	PYU_LIMIT_CHARS = 3,  // characters shown of a str or bytes
	PYU_LIMIT_DIGITS = 4, // decimal digits of an int before a short form
	PYU_LIMIT_OUTPUT = 5, // bytes of one repr
};
// Sets one bound for every value formatted from @s from now on; 0 restores its default.
// Fails with PYU_ERR_ARGUMENT for an unknown limit.
PYU_PUBLIC struct pyu_error *pyu_stacks_set_limit(struct pyu_stacks *s, uint32_t which,
						  uint64_t value);
#define PYU_FMT_NATIVE 0x20u  // py-bt: native frames merged with the Python ones (see below)
#define PYU_FMT_NATIVE_ALL 0x40u // with PYU_FMT_NATIVE: keep the interpreter's own frames

// ---- native frames -----------------------------------------------------------------------
// A thread's native stack, innermost first, as a debugger or an unwinder sees it: each frame's
// pc, stack pointer @sp and canonical frame address @cfa (the caller's stack pointer; 0 when
// unknown - the next frame's @sp is then used), and what is known of it (NULL / -1 when not).
// The snapshot copies the strings. py-bt with PYU_FMT_NATIVE places each Python frame just
// inner to the native frame that runs it; a thread with no native frames, or whose two sides do
// not fit together, prints one line saying why, then both sides apart.
PYU_PUBLIC struct pyu_error *pyu_stacks_add_native_frame(struct pyu_stacks *s, uint32_t thread,
							 uint64_t pc, uint64_t sp, uint64_t cfa,
							 const char *function,
							 const char *library, const char *file,
							 int64_t line);
// What the native frame last added to @thread is, when it is not a stack frame of its own:
// PYU_NATIVE_INLINE, a function inlined where the next outer frame runs (gdb's INLINE_FRAME,
// lldb's IsInlined()), or PYU_NATIVE_ARTIFICIAL, a frame a debugger made up for a function that
// ended in a jump to another (gdb's tail-call frames, lldb's artificial frames: never shown).
// A native frame's number ("native #K", "cython #K", JSON "level") counts the stack frames
// inner to it - calls that have a frame on the stack - so that every front end numbers it
// alike, whichever inlined or tail calls its debugger lists; the functions inlined into a
// frame share its number. JSON "debugger_level" is its level in the debugger (or the
// unwinder) that listed it: what `frame K` selects there.
#define PYU_NATIVE_INLINE 1u
#define PYU_NATIVE_ARTIFICIAL 2u
PYU_PUBLIC struct pyu_error *pyu_stacks_set_native_kind(struct pyu_stacks *s, uint32_t thread,
							uint32_t kind);
// All the native frames of @thread in one call, replacing those it had: @count records of
// PYU_NATIVE_FIELDS integers in @frames, innermost frame first, each as
// pyu_stacks_add_native_frame() and pyu_stacks_set_native_kind() take it: pc, stack pointer, cfa,
// line (0: unknown), kind (0: a stack frame), and function, library and file as numbers into
// @strings (k: strings[k - 1]; 0: unknown), so that a name repeated costs nothing. A stack
// pointer of 0 is where the frame's stack starts as unwinders see it: the cfa of the nearest
// stack frame inner to it (inlined and artificial frames have no stack of their own), or the
// innermost frame's stack pointer; so a debugger that knows each frame's cfa need give only the
// innermost frame's. On error @thread is left with no native frames.
enum pyu_native_field {
	PYU_NATIVE_PC,
	PYU_NATIVE_SP,
	PYU_NATIVE_CFA,
	PYU_NATIVE_LINE,
	PYU_NATIVE_KIND,
	PYU_NATIVE_FUNCTION,
	PYU_NATIVE_LIBRARY,
	PYU_NATIVE_FILE,
	PYU_NATIVE_FIELDS
};
PYU_PUBLIC struct pyu_error *pyu_stacks_set_native_frames(struct pyu_stacks *s, uint32_t thread,
							  const uint64_t *frames, uint32_t count,
							  const char *const *strings,
							  uint32_t string_count);
// pyu_stacks_set_native_frames() of @n threads in one call: threads[k] takes counts[k] frames,
// those of the threads before it coming first in @frames. A thread whose frames are refused
// gets the reason as its native error (pyu_stacks_set_native_error) and the others go on.
// Fails only for bad arguments (then nothing is set) or out of memory.
PYU_PUBLIC struct pyu_error *pyu_stacks_set_native_threads(struct pyu_stacks *s,
							   const uint32_t *threads,
							   const uint32_t *counts, uint32_t n,
							   const uint64_t *frames,
							   const char *const *strings,
							   uint32_t string_count);
// Records why the native frames of @thread could not be had (shown instead of them).
PYU_PUBLIC struct pyu_error *pyu_stacks_set_native_error(struct pyu_stacks *s, uint32_t thread,
							 const char *message);
// Forgets the native frames of @thread (to hand them in again).
PYU_PUBLIC struct pyu_error *pyu_stacks_clear_native(struct pyu_stacks *s, uint32_t thread);
// Unwinds every thread of a live process or core target with elfutils (the CLI's way; debuggers
// hand in their own frames instead). A live process must be stopped under ptrace by the
// caller. Threads that cannot be unwound get a native error; fails only for a target that is
// neither a process nor a core (PYU_ERR_ARGUMENT) or out of memory.
PYU_PUBLIC struct pyu_error *pyu_stacks_unwind_native(struct pyu_stacks *s);
// What native frame @level of @thread is at the Python level, for decorating a debugger's own
// backtrace: "[Python: File ..., line N, in NAME; File ...]" naming the Python frames it runs,
// innermost first, and/or "[Cython: File "x.pyx", line N, in NAME]" when it is a Cython
// function; "" when neither (or the stacks cannot be merged). *ret is for pyu_free().
PYU_PUBLIC struct pyu_error *pyu_format_native_frame(const struct pyu_stacks *s, uint32_t thread,
						     uint32_t level, char **ret);

// ---- Cython frames, selectable like Python ones -------------------------------------------
// The frames py-up and py-down step through, innermost first: each Python frame of @thread as
// its number (>= 0) and, where the thread's native frames are known and merged with its Python
// frames, each Cython function shown between them as -1 - its native level. Writes the first
// @cap into @ret (may be NULL with @cap 0) and the count of all into *ret_count. Fails only for
// a bad thread or out of memory.
PYU_PUBLIC struct pyu_error *pyu_stacks_frame_steps(const struct pyu_stacks *s, uint32_t thread,
						    int64_t *ret, uint32_t cap,
						    uint32_t *ret_count);
// What the debugger's own selection of native frame @level of @thread selects among those
// steps: the Cython function it runs (-1 - @level; Cython's argument wrapper around a function
// shown selects that function), else the innermost Python frame its eval call runs (its
// number); PYU_ABSENT when neither (the frames are not merged, or it is another native frame).
// Cannot fail.
PYU_PUBLIC int64_t pyu_stacks_level_step(const struct pyu_stacks *s, uint32_t thread,
					 uint32_t level);
// Where native frame @level of @thread runs Cython code. Strings borrowed from the snapshot;
// NULL when unknown or when the frame is not a Cython function's.
#define PYU_CYSTR_MODULE 0u     // "pkg.cymod"
#define PYU_CYSTR_FILE 1u       // the .pyx as the target names it
#define PYU_CYSTR_FUNCTION 2u   // the Python-level qualified name ("Klass.method")
#define PYU_CYSTR_C_FUNCTION 3u // its C symbol ("__pyx_pf_5cymod_outer")
#define PYU_CYSTR_LIBRARY 4u    // the extension module's file
#define PYU_CYSTR_NO_LINE 5u    // why there is no line (NULL when there is one)
PYU_PUBLIC const char *pyu_stacks_cython_string(const struct pyu_stacks *s, uint32_t thread,
						uint32_t level, uint32_t which);
// Its .pyx line: > 0, -1 when unknown, PYU_ABSENT when the frame is not a Cython function's.
PYU_PUBLIC int64_t pyu_stacks_cython_line(const struct pyu_stacks *s, uint32_t thread,
					  uint32_t level);
// py-line, py-list, py-locals, py-print on the Cython frame at native level @level: @what is
// PYU_TASK_LINE (flags PYU_FMT_SOURCE), PYU_TASK_LIST (@first, @last: 0 for around its line),
// PYU_TASK_LOCALS (flags PYU_FMT_JSON) or PYU_TASK_PRINT (an error saying where its C
// variables are). Fails with PYU_ERR_NOT_FOUND when the frame is not a Cython function's or
// its .pyx cannot be listed. *ret is for pyu_free().
PYU_PUBLIC struct pyu_error *pyu_format_cython_frame(const struct pyu_stacks *s, uint32_t thread,
						     uint32_t level, uint32_t what, int64_t first,
						     int64_t last, uint32_t flags, char **ret);

// py-bt: the stack of @thread (or every thread with PYU_FMT_ALL), innermost first, at most
// @limit frames per thread (0 = no limit). *ret is a NUL-terminated string for pyu_free().
PYU_PUBLIC struct pyu_error *pyu_format_bt(const struct pyu_stacks *s, uint32_t thread,
					   uint32_t flags, uint32_t limit, char **ret);
// py-line: the location of frame @frame of @thread; with PYU_FMT_TABLE the whole table.
// PYU_FMT_JSON: the table alone as JSON, {"format", "firstlineno", "code_length",
// "table_length", "code_address", "frame_address", "instruction_offset", "ranges":
// [[start, end, line, end_line, column, end_column], ...] (bytecode byte offsets; null where
// none), "error"} (PYU_ERR_NOT_FOUND for a frame that could not be read).
PYU_PUBLIC struct pyu_error *pyu_format_line(const struct pyu_stacks *s, uint32_t thread,
					     uint32_t frame, uint32_t flags, char **ret);
// py-locals: the locals of frame @frame of @thread in the code's own order, one "name = repr"
// a line (PYU_FMT_JSON: a JSON list of {"name", "kind", "type", "repr", "address"}).
PYU_PUBLIC struct pyu_error *pyu_format_locals(const struct pyu_stacks *s, uint32_t thread,
					       uint32_t frame, uint32_t flags, char **ret);
// py-print: @path ("name" or "name.attr...") looked up in frame @frame of @thread as Python
// would (local, enclosing, global, builtin; attributes without running code), printed as
// "local 'name' = repr" (with where each attribute was found). PYU_ERR_NOT_FOUND when a part
// is missing, with a one-line message.
PYU_PUBLIC struct pyu_error *pyu_format_print(const struct pyu_stacks *s, uint32_t thread,
					      uint32_t frame, const char *path, uint32_t flags,
					      char **ret);
// py-list: source lines [@first, @last] of the file of frame @frame (0, 0 = around its line).
PYU_PUBLIC struct pyu_error *pyu_format_list(const struct pyu_stacks *s, uint32_t thread,
					     uint32_t frame, int64_t first, int64_t last,
					     char **ret);

// ---- asyncio tasks ----------------------------------------------------------------------
#define PYU_FMT_TREE 0x80u    // py-tasks: the await graph as a tree

// py-tasks: the asyncio tasks whose event loop runs on thread @thread (PYU_FMT_ALL: every
// task) - name, state, loop's thread, what each awaits and who awaits it, and the stack of
// each (a suspended task: its awaited coroutines, innermost first; the running task: its
// thread's frames down to its coroutine). PYU_FMT_JSON: the JSON document (see README);
// PYU_FMT_TREE: the await graph drawn as a tree, cycles marked; PYU_FMT_SOURCE: source lines;
// PYU_FMT_LOCALS: each frame's locals (text and JSON, as py-bt --locals shows them).
// Reads the target on every call (code objects it meets are added to @s). Fails with
// PYU_ERR_UNSUPPORTED before CPython 3.7; unreadable tasks and lists are reported inside the
// output. *ret is for pyu_free().
PYU_PUBLIC struct pyu_error *pyu_format_tasks(struct pyu_stacks *s, int32_t thread,
					      uint32_t flags, char **ret);

// What py-task asks of one frame of a task's coroutine stack.
#define PYU_TASK_SELECT 0u  // "Task 0x... "name" pending, frame #N of M:" then as LINE
#define PYU_TASK_LINE 1u    // as pyu_format_line (@flags: PYU_FMT_SOURCE, PYU_FMT_TABLE)
#define PYU_TASK_LIST 2u    // as pyu_format_list (@first, @last)
#define PYU_TASK_LOCALS 3u  // as pyu_format_locals (@flags: PYU_FMT_JSON)
#define PYU_TASK_PRINT 4u   // as pyu_format_print (@path, @flags: PYU_FMT_JSON)
// py-task: frame @frame (0 innermost) of the coroutine stack of the asyncio task @task ("0x..."
// its address, else its name), as the py-line, py-list, py-locals and py-print functions show
// a thread's frame (@what). *ret_count: the task's number of frames. Reads the tasks on every
// call. Fails with PYU_ERR_NOT_FOUND for no such task or frame (or a task without frames),
// PYU_ERR_ARGUMENT for a name several tasks have. *ret is for pyu_free().
PYU_PUBLIC struct pyu_error *pyu_format_task_frame(struct pyu_stacks *s, const char *task,
						   uint32_t frame, uint32_t what,
						   const char *path, int64_t first, int64_t last,
						   uint32_t flags, uint32_t *ret_count, char **ret);

// ---- heap census -------------------------------------------------------------------------
// py-heap: every object the collector tracks (each generation and the permanent one, of every
// interpreter) and every object those refer to through the builtin types' references (str,
// int, bytes, untracked tuples and dicts, code objects ...), each counted once, per type
// ("module.qualname", builtins bare) and sized as sys.getsizeof() reports them (types whose
// __sizeof__ is their own: tp_basicsize + ob_size * tp_itemsize, marked), sorted by bytes; a
// header says how many objects were found and how. @top: rows shown (0 = every type);
// @min_size: types with fewer bytes in all are left out; @biggest: the N largest objects
// follow (address, type, bytes, a one-line repr). PYU_FMT_JSON: the JSON document (see
// doc/heap.md). Reads the target on every call; damaged lists end with counted errors inside
// the output. Fails with PYU_ERR_UNSUPPORTED for a version or build without collector lists.
// *ret is for pyu_free().
// PYU_FMT_RETAINED: also the bytes each of the first 64 rows' types and each of the largest
// objects retains - what would be freed if it (every object of the type) became unreachable
// from the roots (modules, frame locals, waiting tasks' coroutine locals, exceptions being
// handled): dominators over the
// object graph.
#define PYU_FMT_RETAINED 0x100u
PYU_PUBLIC struct pyu_error *pyu_format_heap(struct pyu_stacks *s, uint32_t flags, uint32_t top,
					     uint64_t min_size, uint32_t biggest, char **ret);

// Long work on a snapshot (the heap census of pyu_format_heap and pyu_format_heap_referrers)
// calls @fn now and then (every few thousand objects): @done counts the objects looked into so
// far, @total those found so far (both grow; @total is 0 while the collector's lists are still
// being walked). A non-zero return stops the work: it ends with what it had counted, marked
// partial and interrupted (doc/heap.md), as if it had finished. @fn NULL: none. @fn must not
// use the snapshot. The caller keeps @fn and @arg alive while they are set. Cannot fail.
typedef int32_t (*pyu_progress_fn)(void *arg, uint64_t done, uint64_t total);
PYU_PUBLIC void pyu_stacks_set_progress(struct pyu_stacks *s, pyu_progress_fn fn, void *arg);

// py-heap --referrers: the object at @addr (its type, getsizeof bytes, a one-line repr) and
// every object the census finds referring to it, each with how ("[3]", "['key']", ".attr",
// ".__dict__", "local x of coroutine main()" for a suspended frame), and every thread's frame
// that holds it as a local ("local x of frame #N"), as text or (PYU_FMT_JSON) JSON
// (doc/heap.md). Fails with PYU_ERR_NOT_FOUND
// when the census does not find an object at @addr, else as pyu_format_heap. *ret is for
// pyu_free().
PYU_PUBLIC struct pyu_error *pyu_format_heap_referrers(struct pyu_stacks *s, uint64_t addr,
						       uint32_t flags, char **ret);
// py-heap --path: one shortest chain of references from a root (a module of sys.modules, a
// local of a thread's frame, an exception being handled) to the object at @addr, as a Python
// expression ("sys.modules['app'].CACHE['k'][3]") and object by object, as text or
// (PYU_FMT_JSON) JSON (doc/heap.md); PYU_FMT_RETAINED adds the bytes the object retains.
// Fails with PYU_ERR_NOT_FOUND when no chain the census follows reaches it, else as
// pyu_format_heap. *ret is for pyu_free().
PYU_PUBLIC struct pyu_error *pyu_format_heap_path(struct pyu_stacks *s, uint64_t addr,
						  uint32_t flags, char **ret);

// ---- triage ------------------------------------------------------------------------------
// The thread that crashed: for a core, the Python thread of the core's first thread (the one
// the kernel dumped for), -1 when that thread runs no Python code; for a live process or a
// debugger's target, the GIL holder, else the first thread (-1 when there are none).
PYU_PUBLIC int32_t pyu_stacks_crash_thread(const struct pyu_stacks *s);
// The triage document of the snapshot, one line of JSON ending in "\n" (JSON Lines; keys in the
// README): @path (may be NULL) as "path", the Python version, the crash (thread, signal, fault
// address), the crash signature and the frames it was made from, the crashing thread's
// frames. *ret is for pyu_free().
PYU_PUBLIC struct pyu_error *pyu_format_triage(const struct pyu_stacks *s, const char *path,
					       char **ret);

#ifdef __cplusplus
}
#endif
#endif
