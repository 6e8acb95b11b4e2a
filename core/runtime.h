// runtime.h - finding the CPython interpreter in a target: where the interpreter list starts,
// which version and build it is, and the layout the walker uses for it. Also the walker's
// entry points (threads.c, frames.c, codes.c), which share the context defined here.
#ifndef PYU_RUNTIME_H
#define PYU_RUNTIME_H

#include <stdbool.h>
#include <stdint.h>

#include "layout.h"
#include "stacks.h"
#include "target.h"
#include "types.h"

#define PYU_RUNTIME_NOTES 1024

struct pyu_runtime {
	struct pyu_layout layout;   // the table the walker uses (static, adjusted or built)
	uint32_t version_hex;       // PY_VERSION_HEX; micro/level 0 when only major.minor known
	bool version_exact;         // version_hex came from Py_Version or the debug offsets
	bool debug_build;
	bool free_threaded;
	uint64_t runtime_addr;      // _PyRuntime (3.7+), 0 before
	uint64_t interp_head_addr;  // where the pointer to the first interpreter is stored
	uint64_t tstate_current_addr; // where the GIL holder's thread state pointer is; 0 none
	uint64_t gc_generation0_addr; // 2.7/3.6: &_PyGC_generation0 (the heap census's lists); 0
	uint64_t hash_secret_addr;  // &_Py_HashSecret (the keys of str hashes); 0 unknown
	struct pyu_types types;     // type addresses from symbols or learnt while finding
	bool memory_only;           // found without reading any file of the target
	char image[256];            // the file the interpreter was found in (target's name)
	char notes[PYU_RUNTIME_NOTES]; // how it was found; debug-offset mismatches
};

// Finds the interpreter: ELF symbols of the executable or libpython (.dynsym/.symtab), the
// .PyRuntime section, then the _Py_DebugOffsets cookie in writable memory. On error (each
// failed step named; PYU_ERR_NOT_PYTHON or PYU_ERR_UNSUPPORTED), *ret is unchanged.
struct pyu_error *pyu_runtime_find(struct pyu_target *t, struct pyu_runtime *ret);

// Finds a CPython 2.7 - 3.12 interpreter in memory alone (runtime_scan.c): the version from
// the names of the files the target maps, the interpreter list head by scanning their writable
// data for a structure that validates. Appends what was scanned to @errs when nothing
// validates (PYU_ERR_NOT_PYTHON). On error, *ret is unchanged.
struct pyu_error *pyu_runtime_scan(struct pyu_target *t, struct pyu_runtime *ret, char *errs,
				   size_t errs_len);

// The exact PY_VERSION_HEX of minor version @minor_hex from the sys.version text that
// Py_GetVersion() leaves in the writable data of a file named like that version; 0 when none
// is found. Cannot fail.
uint32_t pyu_version_in_memory(struct pyu_target *t, uint32_t minor_hex);

// PY_VERSION_HEX major.minor from a file name such as libpython3.6m.so.1.0, python3.14d or
// python2.7 (0 when it carries none); *debug / *ft set from the ABI flags. Cannot fail.
uint32_t pyu_version_from_name(const char *path, bool *debug, bool *ft);
// The exact PY_VERSION_HEX from the sys.version text at @addr ("3.9.18 (main, ..."), or 0 when
// unreadable or not of the minor version of @minor_hex. Cannot fail.
uint32_t pyu_version_from_text(struct pyu_target *t, uint64_t addr, uint32_t minor_hex);

// Builds the layout for a version and build: static table, trace-refs shift, validation. Used
// by pyu_runtime_find() and by tests that fake a runtime. On error, *ret is unchanged.
struct pyu_error *pyu_runtime_init_layout(struct pyu_runtime *rt, uint32_t version_hex,
					  bool debug_build);

// Walker limits.
// Frames per thread: far above any recursion a real program reaches (3.11+ recurses in Python
// without the C stack, to whatever sys.setrecursionlimit allows); a chain longer is corrupt.
// Loops are caught by cycle detection, not by this bound.
#define PYU_MAX_FRAMES 1000000
// Past that bound, the chain is followed without decoding (cycle-checked, up to
// PYU_MAX_SKIPPED links) to its end, and its PYU_TAIL_FRAMES outermost frames - the thread's
// entry point - are read after an error frame saying how many were left out between.
#define PYU_TAIL_FRAMES 64
#define PYU_MAX_SKIPPED (16u * PYU_MAX_FRAMES)
#define PYU_MAX_THREADS_WALKED 4096 // per interpreter
#define PYU_MAX_INTERPRETERS 256
#define PYU_MAX_CODES 65536        // distinct code objects per snapshot
#define PYU_NAME_MAX 4096          // code points of a function or file name
#define PYU_TABLE_MAX (4u << 20)   // bytes of a line table
#define PYU_CODE_UNITS_MAX (16u << 20)
#define PYU_COPIED_MAX (256u << 20) // bytes of names and line tables per snapshot

struct pyu_code_cache;
struct pyu_code_memo;

// State of one pyu_stacks_collect(): the target, the runtime, the snapshot being filled and the
// code objects read so far.
struct pyu_walk {
	struct pyu_target *t;
	struct pyu_runtime *rt;
	struct pyu_stacks *s;
	struct pyu_code_cache *codes;
	uint32_t max_frames; // frames read per thread before its outermost ones; 0: PYU_MAX_FRAMES
	// Frames with a frame object, whose f_lineno (set while a tracer runs) overrides the
	// line table: read for every thread at once after the walk (frames.c), since each is in
	// a frame object of its own, scattered over the heap.
	struct {
		uint64_t *addrs;  // where each f_lineno is
		uint32_t *thread; // which thread of w->s, and which of its frames
		uint32_t *frame;
		size_t n, cap;
	} linenos;
	// A live process's code objects as earlier snapshots read them (code_memo.c), checked
	// before use; NULL: every code object is read.
	struct pyu_code_memo *memo;
	// Memory for the copies of data stacks, kept with a live process's interpreter from one
	// snapshot to the next; NULL: each walk allocates its own.
	struct pyu_scratch *scratch;
};

// Memory a walk reuses (frames.c): a sampler's snapshots then neither grow nor shrink the heap,
// which the allocator would give back to the system after each and fault in again (the page
// faults cost more than the walk). Contents mean nothing between walks.
struct pyu_scratch {
	uint8_t *data;
	size_t cap;
};
#define PYU_SCRATCH_KEPT (1u << 20) // bytes kept between snapshots; more is freed after a walk

// Reads the f_lineno of every frame noted during the walk and applies those set, then forgets
// the notes. Fails only for out of memory (the table's lines then stand).
struct pyu_error *pyu_walk_read_linenos(struct pyu_walk *w);

// Appends every thread of every interpreter to w->s. Fails only for out of memory or when the
// interpreter list cannot be read at all; unreadable threads and frames become error frames
// or snapshot errors.
struct pyu_error *pyu_walk_threads(struct pyu_walk *w);

// Where one thread's frames are.
struct pyu_frame_start {
	uint64_t first;      // innermost frame (PyFrameObject or _PyInterpreterFrame), 0 = none
	uint64_t base_frame; // 3.15: the sentinel the chain must reach; 0 otherwise
	uint64_t chunk;      // 3.12+: newest data-stack chunk, to step over unreadable entry
	uint64_t top;        // frames on the native stack (missing from some cores); 0 unknown
	uint64_t thread_id;  // for messages
	bool first_unknown;  // 3.11/3.12: the cframe was unreadable; start at the data stack's top
	uint64_t cframe;     // 3.11: tstate->cframe, the innermost eval call's _PyCFrame; 0 none
	// The thread has a trace or profile function (or the layout cannot tell). 3.11+ set a
	// frame object's f_lineno only while one of them runs on the frame's thread (and reset it
	// to 0 when it returns): without one, no frame object of the thread is read for it.
	bool traced;
};

// A thread's data-stack chunks as this snapshot read them (3.11+): the used part of each,
// copied at once, so that the walk takes the frames that live there (all but entry and
// generator frames) from memory of its own instead of reading them one by one. Only a copy of
// what the target holds now, never kept past the snapshot; empty (zeroed) is valid: every
// frame is then read from the target.
struct pyu_copied_chunk {
	uint64_t lo, hi; // [lo, hi) of the target's memory
	size_t off;      // where in data
};
struct pyu_stack_copy {
	uint8_t *data;
	struct pyu_copied_chunk *chunk;
	unsigned n, last; // chunks copied; the one the last frame was found in
	uint8_t *own;     // the allocation data lies in, when this copy must free it
};
void pyu_stack_copy_clear(struct pyu_stack_copy *c);

// Walks one thread's frame chain into @th, innermost first, taking the frames that @copy holds
// from it (NULL: none). Fails only for out of memory; everything else becomes an error frame
// (or a snapshot note when the chain was continued from the data stack past an unreadable
// entry frame).
struct pyu_error *pyu_walk_frames(struct pyu_walk *w, const struct pyu_frame_start *start,
				  struct pyu_stack_copy *copy, struct pyu_thread_info *th);

// Before walking the threads of @starts: reads what their walks will need in gathered reads
// (live processes), instead of a few reads per thread, and copies each one's data stack into
// copies[i] (zeroed by the caller; pyu_stack_copy_clear after the walk). Cannot fail: what is
// not copied is read by the walk.
void pyu_walk_prefetch_starts(struct pyu_walk *w, const struct pyu_frame_start *starts,
			      struct pyu_stack_copy *copies, size_t n);

// Index in w->s->codes of the code object at @addr, read and validated on first use. On error
// (not a code object, unreadable, absurd sizes), *ret is unchanged and nothing is cached.
struct pyu_error *pyu_code_get(struct pyu_walk *w, uint64_t addr, int32_t *ret);
// A hint before a walk: the code objects at @addrs (up to PYU_CODE_PREFETCH_MAX of the @n; 0
// and those the snapshot holds are left out), their headers in one gathered read and then
// their names and line tables in another, instead of two reads each as the walk meets them.
// Cannot fail.
#define PYU_CODE_PREFETCH_MAX 64
void pyu_code_prefetch(struct pyu_walk *w, const uint64_t *addrs, size_t n);
// The location of bytecode byte @offset of code @index, as CPython reports it (a negative
// offset gives co_firstlineno; a corrupt table gives no line). Cannot fail.
struct pyu_location pyu_code_locate(struct pyu_walk *w, int32_t index, int64_t offset);
// _co_firsttraceable of code @index (a code-unit index; 0 before 3.11). Cannot fail.
int32_t pyu_code_firsttraceable(const struct pyu_walk *w, int32_t index);

// The code cache (codes.c). @types: type addresses known so far (copied; the code type is
// learnt by structure on first use when unknown, see types.h).
struct pyu_error *pyu_code_cache_create(const struct pyu_types *types,
					struct pyu_code_cache **ret);
void pyu_code_cache_destroy(struct pyu_code_cache *c);

// Appends a snapshot-level error message (formatted); out of memory is ignored silently
// because the message is advisory. Cannot fail.
void pyu_stacks_add_error(struct pyu_stacks *s, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
// The same for an informational note (pyu_stacks.notes).
void pyu_stacks_add_note(struct pyu_stacks *s, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

#endif
