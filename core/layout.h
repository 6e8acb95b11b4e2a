// layout.h - what the walker knows about one CPython minor version: struct sizes, field offsets
// and behaviour switches. One const table per version lives in layouts/pyXY.c (generated from
// DWARF by tools/gen-layouts); 3.13+ tables are rebuilt at attach from the target's own
// _Py_DebugOffsets (layout.c) and cross-checked against the static one. The walker reads these
// fields and never tests version numbers.
#ifndef PYU_LAYOUT_H
#define PYU_LAYOUT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "error.h"
#include "linetable.h"

// An offset the version does not have.
#define PYU_NO_FIELD (-1)

// Largest struct the walker copies into a local buffer; every size in a layout must fit.
#define PYU_LAYOUT_MAX_STRUCT 4096

// How a thread state leads to its innermost frame.
enum pyu_frame_source {
	PYU_FRAME_FROM_TSTATE_FRAME,   // tstate->frame: a PyFrameObject (2.7 - 3.10)
	PYU_FRAME_FROM_CFRAME,         // tstate->cframe->current_frame (3.11, 3.12)
	PYU_FRAME_FROM_CURRENT_FRAME,  // tstate->current_frame (3.13+)
};

// What the frame chain is made of.
enum pyu_frame_chain {
	PYU_CHAIN_FRAME_OBJECT,      // PyFrameObject linked by f_back, f_code, f_lasti
	PYU_CHAIN_INTERPRETER_FRAME, // _PyInterpreterFrame linked by previous, instruction pointer
};

// How the instruction position is stored.
enum pyu_lasti_kind {
	PYU_LASTI_BYTES,      // int f_lasti = byte offset (2.7 - 3.9)
	PYU_LASTI_CODE_UNITS, // int f_lasti = 2-byte code-unit index (3.10)
	PYU_LASTI_POINTER,    // prev_instr / instr_ptr minus the start of co_code_adaptive (3.11+)
};

// When a frame's stored line number overrides the line table.
enum pyu_lineno_rule {
	PYU_LINENO_IF_TRACED,          // f_trace != NULL => f_lineno (2.7 - 3.9)
	PYU_LINENO_IF_NONZERO,         // f_lineno != 0 => f_lineno (3.10)
	PYU_LINENO_FRAME_OBJ_NONZERO,  // frame_obj && frame_obj->f_lineno > 0 => it (3.11+)
};

// How the holder of the GIL is found.
enum pyu_gil_rule {
	PYU_GIL_UNKNOWN,
	PYU_GIL_CURRENT_SYMBOL,  // the global _PyThreadState_Current (2.7, 3.6)
	PYU_GIL_RUNTIME_CURRENT, // _PyRuntime.gilstate.tstate_current (3.7 - 3.11)
	PYU_GIL_INTERP_STRUCT,   // *(interp + ceval_gil): locked && last_holder (3.12+)
};

// How a thread's Python frames are matched to the native frames that run them (native.c).
enum pyu_native_placement {
	PYU_PLACE_BY_EVAL_SYMBOL, // one call of @eval_function per Python frame (2.7 - 3.10)
	PYU_PLACE_BY_CFRAME,      // each eval call keeps a _PyCFrame on the C stack; the oldest
	                          // frame of its run has is_entry set (3.11)
	PYU_PLACE_BY_ENTRY_FRAME, // each eval call links a C-stack frame (owner >=
	                          // owner_first_foreign) below the frames it runs (3.12+)
};

// How str objects are stored.
enum pyu_str_kind {
	PYU_STR_PY2,    // 2.7: PyStringObject (bytes) and PyUnicodeObject (Py_UNICODE *)
	PYU_STR_PEP393, // 3.3+: compact / legacy unicode with a kind
};

struct pyu_layout {
	const char *name;     // "3.12"
	uint32_t version_hex; // major.minor as PY_VERSION_HEX with micro/level 0 (0x030c0000)

	// Behaviour.
	enum pyu_frame_source frame_source;
	enum pyu_frame_chain chain;
	enum pyu_lasti_kind lasti;
	enum pyu_lineno_rule lineno_rule;
	enum pyu_linetable_format linetable;
	enum pyu_gil_rule gil;
	enum pyu_str_kind str;
	bool has_qualname;          // code objects carry co_qualname (3.11+)
	bool skip_incomplete;       // hide frames before _co_firsttraceable (3.11+)
	int32_t owner_generator;    // owner value of frames inside generators; -1 none
	int32_t owner_first_foreign;// owner >= this is not a Python frame (3.12+: 3); -1 none
	uint64_t stackref_mask;     // low tag bits of f_executable (3.14+: 3); 0 = plain pointer
	bool chain_ends_at_base_frame; // 3.15: the walk must reach tstate->base_frame
	bool trace_refs_in_debug;   // Py_DEBUG implies Py_TRACE_REFS: objects grow 16 bytes
	                            // at the front (2.7 - 3.7)
	enum pyu_native_placement native_placement;
	const char *eval_function;  // the eval loop's symbol, where builds export it

	// _PyRuntimeState (3.7+; -1 before).
	struct {
		int32_t interpreters_head;
		int32_t interpreters_main; // the main interpreter (last on the list); checks a
		                           // _PyRuntime found by scanning memory
		int32_t tstate_current;  // gilstate.tstate_current (3.7 - 3.11)
	} runtime;

	// PyInterpreterState.
	struct {
		int32_t size;        // bytes spanning the fields used (fields are read one by one)
		int32_t next;
		int32_t threads_head;
		int32_t id;          // int64_t id; -1 before 3.7
		int32_t ceval_gil;   // pointer to the GIL struct (3.12+)
		int32_t gil_locked;  // offsets inside the GIL struct (3.12+)
		int32_t gil_holder;
		int32_t modules;     // dict *: sys.modules (3.12+: imports.modules)
	} interp;

	// PyThreadState.
	struct {
		int32_t size;
		int32_t next;
		int32_t interp;
		int32_t frame;          // PyFrameObject * (<= 3.10)
		int32_t cframe;         // _PyCFrame * (3.11, 3.12)
		int32_t cframe_current; // offset of current_frame inside _PyCFrame
		int32_t cframe_previous; // offset of previous inside _PyCFrame (3.11, 3.12)
		int32_t current_frame;  // _PyInterpreterFrame * (3.13+)
		int32_t base_frame;     // pointer to the sentinel base frame (3.15)
		int32_t thread_id;      // unsigned long pthread id
		int32_t native_thread_id; // unsigned long kernel tid (3.11+ in this table)
		int32_t datastack_chunk;  // _PyStackChunk * of the newest chunk (3.11+)
		int32_t datastack_top;    // PyObject ** first free slot of that chunk (3.11+)
		int32_t c_profilefunc;    // the thread's profile and trace functions (NULL: none)
		int32_t c_tracefunc;
	} tstate;

	// PyFrameObject (whole chain <= 3.10; on 3.11+ only the lazily made wrapper).
	struct {
		int32_t size;
		int32_t f_back;
		int32_t f_code;
		int32_t f_trace;
		int32_t f_lasti;   // int
		int32_t f_lineno;  // int
		int32_t f_localsplus; // start of the fast-locals slots (<= 3.10)
		int32_t f_locals;  // dict * or NULL (<= 3.10)
		int32_t f_globals;
		int32_t f_builtins;
	} frame;

	// _PyInterpreterFrame (3.11+).
	struct {
		int32_t size;
		int32_t code;      // f_code / f_executable
		int32_t previous;
		int32_t frame_obj;
		int32_t instr_ptr; // prev_instr / instr_ptr
		int32_t owner;     // char
		int32_t tlbc_index; // int32: which bytecode copy instr_ptr points into (3.14t+)
		int32_t localsplus; // start of the local slots (3.14+: tagged stack references)
		int32_t f_locals;   // dict * of module and class bodies, else NULL
		int32_t f_globals;
		int32_t f_builtins;
		int32_t is_entry;  // bool: first frame of an eval call (3.11)
	} iframe;

	// PyCodeObject.
	struct {
		int32_t size;
		int32_t ob_size;        // 3.11+: code units in co_code_adaptive; -1 before
		int32_t firstlineno;    // int
		int32_t filename;
		int32_t name;
		int32_t qualname;
		int32_t linetable;      // co_lnotab / co_linetable (bytes or 2.7 str)
		int32_t code;           // co_code bytes object (<= 3.10)
		int32_t code_adaptive;  // inline bytecode (3.11+)
		int32_t firsttraceable; // int, code-unit index (3.11+)
		int32_t framesize;      // int co_framesize, in 8-byte slots (3.11+)
		int32_t version;        // uint32 co_version (3.12+): a number each new code
					// object of an interpreter takes from its counter, never
					// given twice (0 once the counter ran out)
		int32_t tlbc;           // _PyCodeArray *co_tlbc: per-thread bytecode copies (3.14t+)
		int32_t argcount;       // int, positional parameters (3.8+: positional-only too)
		int32_t kwonlyargcount; // int; -1 on 2.7
		int32_t flags;          // int co_flags (CO_OPTIMIZED, CO_VARARGS, CO_VARKEYWORDS)
		int32_t nlocals;        // int: co_varnames slots (<= 3.10)
		int32_t nlocalsplus;    // int: named slots of localsplus (3.11+)
		int32_t varnames;       // tuple of str (<= 3.10)
		int32_t cellvars;
		int32_t freevars;
		int32_t localsplusnames; // tuple of str (3.11+)
		int32_t localspluskinds; // bytes, one kind byte per slot (3.11+)
	} code;

	// Objects.
	int32_t ob_type;          // in every PyObject
	int32_t ob_size;          // in every PyVarObject
	int32_t type_tp_name;     // PyTypeObject
	int32_t type_tp_flags;
	int32_t bytes_sval;       // PyBytesObject.ob_sval (2.7: PyStringObject.ob_sval)
	int32_t tuple_item;       // PyTupleObject.ob_item
	int32_t cell_ref;         // PyCellObject.ob_ref
	struct {
		int32_t length;       // Py_ssize_t, code points
		int32_t state;        // 32-bit bit-field word (PEP 393)
		int32_t ascii_size;   // sizeof(PyASCIIObject): compact ASCII data
		int32_t compact_size; // sizeof(PyCompactUnicodeObject): compact data
		int32_t data;         // legacy strings: data pointer (2.7: Py_UNICODE *str)
		int32_t state_shift;  // bits below `interned`'s end: 0, or 6 when interned is a
		                      // whole byte (free-threaded 3.14+)
	} unicode;

	// What sys.exc_info() reads, field by field: offsets in the thread state and in
	// _PyErr_StackItem (3.7+), whose chain starts at tstate->exc_info.
	struct {
		int32_t tstate_info;  // _PyErr_StackItem *exc_info (3.7+)
		int32_t tstate_type;  // PyObject *exc_type of the thread state (2.7, 3.6)
		int32_t tstate_value; // PyObject *exc_value of the thread state (2.7, 3.6)
		int32_t item_type;    // exc_type (3.7 - 3.10; 3.11+ keep only the value)
		int32_t item_value;
		int32_t item_previous;
	} exc;
};

// co_flags bits.
#define PYU_CO_OPTIMIZED 0x1
#define PYU_CO_VARARGS 0x4
#define PYU_CO_VARKEYWORDS 0x8

// co_localspluskinds bits (3.11+).
#define PYU_CO_FAST_HIDDEN 0x10
#define PYU_CO_FAST_LOCAL 0x20
#define PYU_CO_FAST_CELL 0x40
#define PYU_CO_FAST_FREE 0x80

// The static tables (layouts/pyXY.c).
extern const struct pyu_layout pyu_layout_py27, pyu_layout_py36, pyu_layout_py37,
	pyu_layout_py38, pyu_layout_py39, pyu_layout_py310, pyu_layout_py311, pyu_layout_py312,
	pyu_layout_py313, pyu_layout_py314, pyu_layout_py315;

// The static table for the minor version of @version_hex, or NULL. Cannot fail.
const struct pyu_layout *pyu_layout_for_version(uint32_t version_hex);

// Size of the _Py_DebugOffsets block the parser reads.
#define PYU_DEBUG_OFFSETS_MAX 2048

// Builds *ret for a 3.13+ target from its _Py_DebugOffsets block (@buf, @len bytes read from
// _PyRuntime + 0). Validates every field the walker uses against its group's size and the
// walker's buffers; fields the block lacks come from the static table of that minor version.
// Differences from the static table are appended to @notes (a NUL-terminated string of at most
// @notes_len bytes; may be NULL). Fails with PYU_ERR_UNSUPPORTED for a minor version whose
// field list is unknown, PYU_ERR_CORRUPT for a bad block. On error, *ret is unchanged.
struct pyu_error *pyu_layout_from_debug_offsets(const uint8_t *buf, size_t len,
						struct pyu_layout *ret, bool *free_threaded,
						char *notes, size_t notes_len);

// The value of the _Py_DebugOffsets field @name (e.g. "dict_object.ma_keys") in the block
// @buf (@len bytes read from _PyRuntime + 0), by the field list of the block's minor version;
// false when there is no cookie, the version is unknown or its block lacks the field. The
// value is unchecked: callers bound it. Cannot fail.
bool pyu_debug_offsets_field(const uint8_t *buf, size_t len, const char *name, uint64_t *ret);
// The same for the @n fields @names at once, into @rets[i] when @found[i] (false: as above):
// one search through the block when they are asked for in its order (one a field costs a
// search from the block's start). Cannot fail.
void pyu_debug_offsets_fields(const uint8_t *buf, size_t len, const char *const *names,
			      size_t n, uint64_t *rets, bool *found);

// Checks a layout (static or built) for offsets outside the walker's buffers. Used on every
// table at attach and by the unit tests.
struct pyu_error *pyu_layout_validate(const struct pyu_layout *l);

// Applies the Py_TRACE_REFS object header (+16 on every object field) to @l in place.
void pyu_layout_apply_trace_refs(struct pyu_layout *l);

#endif
