// stacks.h - the snapshot that pyu_stacks_collect() produces and the formatters read: threads,
// their frames, and the code objects those frames run (each read and decoded once, then shared
// by every frame that runs it - a 1,000-deep recursion reads its code object once).
#ifndef PYU_STACKS_H
#define PYU_STACKS_H

#include <stdbool.h>
#include <stdint.h>

#include "activity.h"
#include "layout.h"
#include "linetable.h"
#include "target.h"
#include "tracebacks.h"

// A code object as read from the target. Strings are UTF-8, NUL-terminated, owned.
struct pyu_code_info {
	uint64_t address;
	char *name;
	char *qualname;  // NULL before 3.11
	char *filename;
	int32_t firstlineno;
	enum pyu_linetable_format format;
	uint8_t *table;  // copy of co_lnotab / co_linetable (owned)
	size_t table_len;
	uint64_t code_len; // bytecode length in bytes
	// When set, the names and the table lie in this one allocation (code_memo.c's copies:
	// one malloc a code object a snapshot rather than four), freed with it alone.
	void *block;
};

// Frees what @ci owns (its strings and table, or the block holding them).
void pyu_code_info_free(struct pyu_code_info *ci);

// Frame arrays of destroyed snapshots, kept for the walks after them (stacks.c): a fresh
// handle's 100 threads made and freed 100 arrays of 64 frames, and the heap they took was
// given back to the system and faulted in again every handle. pyu_frames_take: one (its
// room in *cap), or NULL (*cap 0). pyu_frames_give: @frames (room @cap) kept or freed.
// Neither can fail.
struct pyu_frame_info *pyu_frames_take(uint32_t *cap);
void pyu_frames_give(struct pyu_frame_info *frames, uint32_t cap);

enum pyu_frame_kind {
	PYU_FRAME_PYTHON,
	PYU_FRAME_ERROR, // could not be read; @reason says why, @frame_address where
};

struct pyu_frame_info {
	enum pyu_frame_kind kind;
	int32_t code;                // index into pyu_stacks.codes; -1 for error frames
	struct pyu_location loc;     // line/end_line/column/end_column (PYU_NO_* when absent)
	int64_t instruction_offset;  // byte offset, as frame.f_lasti reports it in Python; -1 none
	uint64_t frame_address;
	char *reason;                // error frames: owned message
	// Where the eval-loop call that runs this frame keeps its marker on the C stack: 3.12+ its
	// entry frame, 3.11 its _PyCFrame; 0 when unknown or the version has none (native.c).
	uint64_t entry_marker;
};

struct pyu_cython_frame;
struct pyu_cython_module;

// A native frame of a thread, as the debugger or the CLI's unwinder saw it. Strings are owned;
// NULL when unknown.
struct pyu_native_frame {
	uint64_t pc;
	uint64_t sp;   // the frame's stack pointer
	uint64_t cfa;  // its canonical frame address (the caller's sp); 0 when unknown
	char *function;
	char *library;
	char *file;
	int64_t line;  // -1 when unknown
	// The frame's number as every front end shows it ("native #K"): the stack frames inner
	// to it (an inlined function shares the number of the frame it is inlined in). The index
	// in the thread's list is the level of the debugger (or unwinder) that listed it.
	uint32_t number;
	bool inlined;    // a function inlined where the next outer frame runs
	bool artificial; // a frame for a function that ended in a jump (a tail call), made up by
			 // a debugger from DWARF call sites: never shown (not every one makes them)
	struct pyu_cython_frame *cython; // what it is to Cython (cython.h); NULL when nothing; owned
	// A nameless frame's extension module (cython.h): which module, whether Cython's and
	// whether it has symbols; borrowed from the snapshot's cython_files; NULL when none.
	const struct pyu_cython_module *module;
};

struct pyu_thread_info {
	uint64_t thread_id;         // pthread id = threading.get_ident()
	int64_t native_thread_id;   // kernel tid; -1 when unknown
	int32_t holds_gil;          // 1, 0, or -1 when unknown
	int64_t interpreter_id;     // 0 for the main interpreter; -1 unknown
	uint64_t tstate_address;
	char *name;                 // NULL when unknown (read with values: JSON, --locals)
	struct pyu_frame_info *frames; // innermost first
	uint32_t frame_count;
	uint32_t frame_cap;            // room in frames, as the walk made it (frames.c)
	// Set when the walk made the frames (frames.c), which counts in error_frames those it
	// gave a reason: then a snapshot's check and its destruction look at no other frame.
	bool walked;
	uint32_t error_frames;
	uint64_t interp_address;    // the PyInterpreterState the thread state belongs to
	// The exception sys.exc_info() gives in the thread (pyu_stacks_read_thread_values):
	uint64_t exc_address;       // 0 when none / unknown
	char *exc_type;             // type name, owned
	char *exc_repr;             // owned
	bool exc_truncated;
	struct pyu_traceback exc_tb; // its traceback, outermost entry first (as extract_tb)
	struct pyu_exc_chain exc_chain; // it (node 0, whose traceback is exc_tb) and the
				    // exceptions format_exception shows with it
	struct pyu_native_frame *native; // innermost first (pyu_stacks_add_native_frame)
	uint32_t native_count, native_cap;
	uint32_t native_stack_frames; // of them, stack frames (neither inlined nor made up)
	bool native_known;          // native frames were given (possibly none)
	char *native_error;         // why they could not be had; owned, NULL when none
	uint64_t entry_frame;       // 3.12+: the outermost entry frame, which the C stack holds
				    // (the deeper a thread's C stack, the lower); 0 unknown
	// The same OS thread in several interpreters (nesting.c), as thread index + 1, 0 = none:
	uint32_t inner;             // this stack continues the one of thread state #inner - 1,
				    // which runs code in an interpreter this one called into
	uint32_t outer;             // the stack of #outer - 1 continues this one
	struct pyu_activity activity; // what its OS thread is doing: read on demand, only
	bool activity_read;           // through pyu_thread_activity() (activity.c)
};

struct pyu_runtime;
struct pyu_inspect;
struct pyu_code_cache;

struct pyu_stacks {
	struct pyu_target *target;  // not owned; must outlive the snapshot
	char version[32];           // "3.14.0", from the hex version
	uint64_t hexversion;
	bool debug_build;
	bool free_threaded;
	struct pyu_code_info *codes;
	uint32_t code_count;
	struct pyu_thread_info *threads;
	uint32_t thread_count;
	char **errors;              // problems that are not tied to one frame (owned strings)
	uint32_t error_count;
	char **notes;               // how the interpreter was found, debug-offset mismatches,
	uint32_t note_count;        // chains continued past missing entry frames (owned strings)
	struct pyu_runtime *runtime; // the interpreter found (owned), for reading values later
	struct pyu_inspect *inspect; // value state made on demand (owned; inspect.h)
	struct pyu_code_cache *code_cache; // the code objects read (owned), for later walks
	                            // (asyncio task stacks) that add frames to the snapshot
	struct pyu_cython_files *cython_files; // files read for Cython frames, made on demand (owned)
	enum pyu_native_placement placement; // how Python frames are matched to native ones
	char eval_function[64];     // the eval loop's symbol for this version
	pyu_progress_fn progress;   // pyu_stacks_set_progress(); NULL: none
	void *progress_arg;
};

#endif
