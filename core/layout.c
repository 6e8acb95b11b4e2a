// layout.c - choosing a static layout table by version, validating a layout against the
// walker's buffers, and building a 3.13+ layout from the target's own _Py_DebugOffsets (whose
// field list differs per minor version: each one is spelled out below). No target access here:
// the caller reads the block.
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include "layout.h"

const struct pyu_layout *pyu_layout_for_version(uint32_t version_hex)
{
	static const struct pyu_layout *const all[] = {
		&pyu_layout_py27,  &pyu_layout_py36,  &pyu_layout_py37,  &pyu_layout_py38,
		&pyu_layout_py39,  &pyu_layout_py310, &pyu_layout_py311, &pyu_layout_py312,
		&pyu_layout_py313, &pyu_layout_py314, &pyu_layout_py315,
	};
	for (size_t i = 0; i < sizeof(all) / sizeof(all[0]); i++)
		if ((all[i]->version_hex >> 16) == (version_hex >> 16))
			return all[i];
	return NULL;
}

// An 8-byte field at @off must lie inside a struct of @size bytes that the walker copies.
static bool field_ok(int32_t off, int32_t size, int32_t width)
{
	return off == PYU_NO_FIELD || (off >= 0 && size > 0 && off + width <= size);
}

struct pyu_error *pyu_layout_validate(const struct pyu_layout *l)
{
	const int32_t max = PYU_LAYOUT_MAX_STRUCT;
	struct {
		const char *name;
		int32_t off, size, width;
	} checks[] = {
		{"tstate.next", l->tstate.next, l->tstate.size, 8},
		{"tstate.interp", l->tstate.interp, l->tstate.size, 8},
		{"tstate.frame", l->tstate.frame, l->tstate.size, 8},
		{"tstate.cframe", l->tstate.cframe, l->tstate.size, 8},
		{"tstate.current_frame", l->tstate.current_frame, l->tstate.size, 8},
		{"tstate.base_frame", l->tstate.base_frame, l->tstate.size, 8},
		{"tstate.thread_id", l->tstate.thread_id, l->tstate.size, 8},
		{"tstate.native_thread_id", l->tstate.native_thread_id, l->tstate.size, 8},
		{"tstate.datastack_chunk", l->tstate.datastack_chunk, l->tstate.size, 8},
		{"tstate.datastack_top", l->tstate.datastack_top, l->tstate.size, 8},
		{"tstate.c_profilefunc", l->tstate.c_profilefunc, l->tstate.size, 8},
		{"tstate.c_tracefunc", l->tstate.c_tracefunc, l->tstate.size, 8},
		{"frame.f_back", l->frame.f_back, l->frame.size, 8},
		{"frame.f_code", l->frame.f_code, l->frame.size, 8},
		{"frame.f_trace", l->frame.f_trace, l->frame.size, 8},
		{"frame.f_lasti", l->frame.f_lasti, l->frame.size, 4},
		{"frame.f_lineno", l->frame.f_lineno, l->frame.size, 4},
		{"iframe.code", l->iframe.code, l->iframe.size, 8},
		{"iframe.previous", l->iframe.previous, l->iframe.size, 8},
		{"iframe.frame_obj", l->iframe.frame_obj, l->iframe.size, 8},
		{"iframe.instr_ptr", l->iframe.instr_ptr, l->iframe.size, 8},
		{"iframe.owner", l->iframe.owner, l->iframe.size, 1},
		{"iframe.tlbc_index", l->iframe.tlbc_index, l->iframe.size, 4},
		{"iframe.is_entry", l->iframe.is_entry, l->iframe.size, 1},
		{"code.ob_size", l->code.ob_size, l->code.size, 8},
		{"code.firstlineno", l->code.firstlineno, l->code.size, 4},
		{"code.filename", l->code.filename, l->code.size, 8},
		{"code.name", l->code.name, l->code.size, 8},
		{"code.qualname", l->code.qualname, l->code.size, 8},
		{"code.linetable", l->code.linetable, l->code.size, 8},
		{"code.code", l->code.code, l->code.size, 8},
		{"code.firsttraceable", l->code.firsttraceable, l->code.size, 4},
		{"code.framesize", l->code.framesize, l->code.size, 4},
		{"code.version", l->code.version, l->code.size, 4},
		{"code.tlbc", l->code.tlbc, l->code.size, 8},
		// co_code_adaptive is the start of the inline bytecode: at most the header size.
		{"code.code_adaptive", l->code.code_adaptive, l->code.size + 1, 0},
		{"unicode.length", l->unicode.length, max, 8},
		{"unicode.state", l->unicode.state, max, 4},
		{"unicode.data", l->unicode.data, max, 8},
		{"ob_type", l->ob_type, max, 8},
		{"ob_size", l->ob_size, max, 8},
		{"type_tp_name", l->type_tp_name, max, 8},
		{"type_tp_flags", l->type_tp_flags, max, 8},
		{"bytes_sval", l->bytes_sval, max, 0},
		{"tuple_item", l->tuple_item, max, 8},
		{"cell_ref", l->cell_ref, max, 8},
		{"frame.f_localsplus", l->frame.f_localsplus, l->frame.size + 1, 0},
		{"frame.f_locals", l->frame.f_locals, l->frame.size, 8},
		{"frame.f_globals", l->frame.f_globals, l->frame.size, 8},
		{"frame.f_builtins", l->frame.f_builtins, l->frame.size, 8},
		{"iframe.localsplus", l->iframe.localsplus, l->iframe.size + 1, 0},
		{"iframe.f_locals", l->iframe.f_locals, l->iframe.size, 8},
		{"iframe.f_globals", l->iframe.f_globals, l->iframe.size, 8},
		{"iframe.f_builtins", l->iframe.f_builtins, l->iframe.size, 8},
		{"code.argcount", l->code.argcount, l->code.size, 4},
		{"code.kwonlyargcount", l->code.kwonlyargcount, l->code.size, 4},
		{"code.flags", l->code.flags, l->code.size, 4},
		{"code.nlocals", l->code.nlocals, l->code.size, 4},
		{"code.nlocalsplus", l->code.nlocalsplus, l->code.size, 4},
		{"code.varnames", l->code.varnames, l->code.size, 8},
		{"code.cellvars", l->code.cellvars, l->code.size, 8},
		{"code.freevars", l->code.freevars, l->code.size, 8},
		{"code.localsplusnames", l->code.localsplusnames, l->code.size, 8},
		{"code.localspluskinds", l->code.localspluskinds, l->code.size, 8},
		// Read one by one from thread states and stack items.
		{"exc.tstate_info", l->exc.tstate_info, max, 8},
		{"exc.tstate_type", l->exc.tstate_type, max, 8},
		{"exc.tstate_value", l->exc.tstate_value, max, 8},
		{"exc.item_type", l->exc.item_type, max, 8},
		{"exc.item_value", l->exc.item_value, max, 8},
		{"exc.item_previous", l->exc.item_previous, max, 8},
	};
	int32_t sizes[] = {l->tstate.size, l->frame.size, l->iframe.size, l->code.size};
	for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++)
		if (sizes[i] > max)
			return pyu_error_create(PYU_ERR_CORRUPT,
						"layout %s: a struct size of %" PRId32
						" bytes exceeds the walker's %" PRId32 "-byte buffer",
						l->name, sizes[i], max);
	for (size_t i = 0; i < sizeof(checks) / sizeof(checks[0]); i++)
		if (!field_ok(checks[i].off, checks[i].size, checks[i].width))
			return pyu_error_create(PYU_ERR_CORRUPT,
						"layout %s: field %s at offset %" PRId32
						" lies outside its %" PRId32 "-byte struct",
						l->name, checks[i].name, checks[i].off,
						checks[i].size);
	if (l->ob_type == PYU_NO_FIELD || l->code.filename == PYU_NO_FIELD ||
	    l->code.name == PYU_NO_FIELD || l->code.firstlineno == PYU_NO_FIELD ||
	    l->code.linetable == PYU_NO_FIELD || l->tstate.next == PYU_NO_FIELD ||
	    l->tstate.thread_id == PYU_NO_FIELD || l->interp.threads_head == PYU_NO_FIELD)
		return pyu_error_create(PYU_ERR_CORRUPT, "layout %s lacks a required field",
					l->name);
	if (l->chain == PYU_CHAIN_FRAME_OBJECT &&
	    (l->frame.f_back == PYU_NO_FIELD || l->frame.f_code == PYU_NO_FIELD ||
	     l->frame.f_lasti == PYU_NO_FIELD))
		return pyu_error_create(PYU_ERR_CORRUPT, "layout %s lacks frame-object fields",
					l->name);
	if (l->chain == PYU_CHAIN_INTERPRETER_FRAME &&
	    (l->iframe.code == PYU_NO_FIELD || l->iframe.previous == PYU_NO_FIELD ||
	     l->iframe.instr_ptr == PYU_NO_FIELD || l->iframe.owner == PYU_NO_FIELD ||
	     l->code.code_adaptive == PYU_NO_FIELD || l->code.ob_size == PYU_NO_FIELD))
		return pyu_error_create(PYU_ERR_CORRUPT,
					"layout %s lacks interpreter-frame fields", l->name);
	return NULL;
}

void pyu_layout_apply_trace_refs(struct pyu_layout *l)
{
	int32_t *obj_fields[] = {
		&l->frame.size, &l->frame.f_back, &l->frame.f_code, &l->frame.f_trace,
		&l->frame.f_lasti, &l->frame.f_lineno, &l->code.size, &l->code.ob_size,
		&l->code.firstlineno, &l->code.filename, &l->code.name, &l->code.qualname,
		&l->code.linetable, &l->code.code, &l->code.code_adaptive, &l->code.firsttraceable,
		&l->code.framesize, &l->code.version, &l->code.tlbc, &l->code.argcount, &l->code.kwonlyargcount,
		&l->code.flags, &l->code.nlocals, &l->code.nlocalsplus, &l->code.varnames,
		&l->code.cellvars, &l->code.freevars, &l->code.localsplusnames,
		&l->code.localspluskinds, &l->frame.f_localsplus, &l->frame.f_locals,
		&l->frame.f_globals, &l->frame.f_builtins, &l->cell_ref,
		&l->ob_type, &l->ob_size, &l->type_tp_name, &l->type_tp_flags, &l->bytes_sval,
		&l->tuple_item, &l->unicode.length, &l->unicode.state, &l->unicode.ascii_size,
		&l->unicode.compact_size, &l->unicode.data,
	};
	for (size_t i = 0; i < sizeof(obj_fields) / sizeof(obj_fields[0]); i++)
		if (*obj_fields[i] != PYU_NO_FIELD)
			*obj_fields[i] += 16;
}

// ---- _Py_DebugOffsets ---------------------------------------------------------------------
// Each block is a sequence of uint64_t; these lists name them in order (the 8-byte cookie
// counts as the first word). Taken from the internals doc, section 2.4.

static const char *const fields_313[] = {
	"cookie", "version", "free_threaded",
	"runtime_state.size", "runtime_state.finalizing", "runtime_state.interpreters_head",
	"interpreter_state.size", "interpreter_state.id", "interpreter_state.next",
	"interpreter_state.threads_head", "interpreter_state.gc",
	"interpreter_state.imports_modules", "interpreter_state.sysdict",
	"interpreter_state.builtins", "interpreter_state.ceval_gil",
	"interpreter_state.gil_runtime_state", "interpreter_state.gil_runtime_state_enabled",
	"interpreter_state.gil_runtime_state_locked",
	"interpreter_state.gil_runtime_state_holder",
	"thread_state.size", "thread_state.prev", "thread_state.next", "thread_state.interp",
	"thread_state.current_frame", "thread_state.thread_id", "thread_state.native_thread_id",
	"thread_state.datastack_chunk", "thread_state.status",
	"interpreter_frame.size", "interpreter_frame.previous", "interpreter_frame.executable",
	"interpreter_frame.instr_ptr", "interpreter_frame.localsplus", "interpreter_frame.owner",
	"code_object.size", "code_object.filename", "code_object.name", "code_object.qualname",
	"code_object.linetable", "code_object.firstlineno", "code_object.argcount",
	"code_object.localsplusnames", "code_object.localspluskinds",
	"code_object.co_code_adaptive",
	"pyobject.size", "pyobject.ob_type",
	"type_object.size", "type_object.tp_name", "type_object.tp_repr", "type_object.tp_flags",
	"tuple_object.size", "tuple_object.ob_item", "tuple_object.ob_size",
	"list_object.size", "list_object.ob_item", "list_object.ob_size",
	"dict_object.size", "dict_object.ma_keys", "dict_object.ma_values",
	"float_object.size", "float_object.ob_fval",
	"long_object.size", "long_object.lv_tag", "long_object.ob_digit",
	"bytes_object.size", "bytes_object.ob_size", "bytes_object.ob_sval",
	"unicode_object.size", "unicode_object.state", "unicode_object.length",
	"unicode_object.asciiobject_size",
	"gc.size", "gc.collecting",
	NULL,
};

static const char *const fields_314[] = {
	"cookie", "version", "free_threaded",
	"runtime_state.size", "runtime_state.finalizing", "runtime_state.interpreters_head",
	"interpreter_state.size", "interpreter_state.id", "interpreter_state.next",
	"interpreter_state.threads_head", "interpreter_state.threads_main", "interpreter_state.gc",
	"interpreter_state.imports_modules", "interpreter_state.sysdict",
	"interpreter_state.builtins", "interpreter_state.ceval_gil",
	"interpreter_state.gil_runtime_state", "interpreter_state.gil_runtime_state_enabled",
	"interpreter_state.gil_runtime_state_locked",
	"interpreter_state.gil_runtime_state_holder",
	"interpreter_state.code_object_generation", "interpreter_state.tlbc_generation",
	"thread_state.size", "thread_state.prev", "thread_state.next", "thread_state.interp",
	"thread_state.current_frame", "thread_state.thread_id", "thread_state.native_thread_id",
	"thread_state.datastack_chunk", "thread_state.status",
	"interpreter_frame.size", "interpreter_frame.previous", "interpreter_frame.executable",
	"interpreter_frame.instr_ptr", "interpreter_frame.localsplus", "interpreter_frame.owner",
	"interpreter_frame.stackpointer", "interpreter_frame.tlbc_index",
	"code_object.size", "code_object.filename", "code_object.name", "code_object.qualname",
	"code_object.linetable", "code_object.firstlineno", "code_object.argcount",
	"code_object.localsplusnames", "code_object.localspluskinds",
	"code_object.co_code_adaptive", "code_object.co_tlbc",
	"pyobject.size", "pyobject.ob_type",
	"type_object.size", "type_object.tp_name", "type_object.tp_repr", "type_object.tp_flags",
	"tuple_object.size", "tuple_object.ob_item", "tuple_object.ob_size",
	"list_object.size", "list_object.ob_item", "list_object.ob_size",
	"set_object.size", "set_object.used", "set_object.table", "set_object.mask",
	"dict_object.size", "dict_object.ma_keys", "dict_object.ma_values",
	"float_object.size", "float_object.ob_fval",
	"long_object.size", "long_object.lv_tag", "long_object.ob_digit",
	"bytes_object.size", "bytes_object.ob_size", "bytes_object.ob_sval",
	"unicode_object.size", "unicode_object.state", "unicode_object.length",
	"unicode_object.asciiobject_size",
	"gc.size", "gc.collecting",
	"gen_object.size", "gen_object.gi_name", "gen_object.gi_iframe",
	"gen_object.gi_frame_state",
	"llist_node.next", "llist_node.prev",
	"debugger_support.eval_breaker", "debugger_support.remote_debugger_support",
	"debugger_support.remote_debugging_enabled", "debugger_support.debugger_pending_call",
	"debugger_support.debugger_script_path", "debugger_support.debugger_script_path_size",
	NULL,
};

static const char *const fields_315[] = {
	"cookie", "version", "free_threaded",
	"runtime_state.size", "runtime_state.finalizing", "runtime_state.interpreters_head",
	"interpreter_state.size", "interpreter_state.id", "interpreter_state.next",
	"interpreter_state.threads_head", "interpreter_state.threads_main", "interpreter_state.gc",
	"interpreter_state.imports_modules", "interpreter_state.sysdict",
	"interpreter_state.builtins", "interpreter_state.ceval_gil",
	"interpreter_state.gil_runtime_state", "interpreter_state.gil_runtime_state_enabled",
	"interpreter_state.gil_runtime_state_locked",
	"interpreter_state.gil_runtime_state_holder",
	"interpreter_state.code_object_generation", "interpreter_state.tlbc_generation",
	"thread_state.size", "thread_state.prev", "thread_state.next", "thread_state.interp",
	"thread_state.current_frame", "thread_state.base_frame",
	"thread_state.last_profiled_frame", "thread_state.last_profiled_frame_seq",
	"thread_state.thread_id", "thread_state.native_thread_id",
	"thread_state.datastack_chunk", "thread_state.status", "thread_state.holds_gil",
	"thread_state.gil_requested", "thread_state.current_exception", "thread_state.exc_state",
	"err_stackitem.exc_value",
	"interpreter_frame.size", "interpreter_frame.previous", "interpreter_frame.executable",
	"interpreter_frame.instr_ptr", "interpreter_frame.localsplus", "interpreter_frame.owner",
	"interpreter_frame.stackpointer", "interpreter_frame.tlbc_index",
	"code_object.size", "code_object.filename", "code_object.name", "code_object.qualname",
	"code_object.linetable", "code_object.firstlineno", "code_object.argcount",
	"code_object.localsplusnames", "code_object.localspluskinds",
	"code_object.co_code_adaptive", "code_object.co_tlbc",
	"pyobject.size", "pyobject.ob_type",
	"type_object.size", "type_object.tp_name", "type_object.tp_repr", "type_object.tp_flags",
	"type_object.tp_basicsize", "type_object.tp_dictoffset",
	"heap_type_object.size", "heap_type_object.ht_cached_keys",
	"tuple_object.size", "tuple_object.ob_item", "tuple_object.ob_size",
	"list_object.size", "list_object.ob_item", "list_object.ob_size",
	"set_object.size", "set_object.used", "set_object.table", "set_object.mask",
	"dict_object.size", "dict_object.ma_keys", "dict_object.ma_values",
	"float_object.size", "float_object.ob_fval",
	"long_object.size", "long_object.lv_tag", "long_object.ob_digit",
	"bytes_object.size", "bytes_object.ob_size", "bytes_object.ob_sval",
	"unicode_object.size", "unicode_object.state", "unicode_object.length",
	"unicode_object.asciiobject_size", "unicode_object.compactunicodeobject_size",
	"gc.size", "gc.collecting", "gc.frame", "gc.generation_stats_size",
	"gc.generation_stats",
	"gen_object.size", "gen_object.gi_name", "gen_object.gi_iframe",
	"gen_object.gi_frame_state",
	"llist_node.next", "llist_node.prev",
	"debugger_support.eval_breaker", "debugger_support.remote_debugger_support",
	"debugger_support.remote_debugging_enabled", "debugger_support.debugger_pending_call",
	"debugger_support.debugger_script_path", "debugger_support.debugger_script_path_size",
	NULL,
};

struct dbg_block {
	const char *const *names;
	const uint8_t *buf;
	size_t words;
	size_t count; // of names
	size_t next;  // where the search for the next field starts: after the last one found
};

static struct dbg_block dbg_block_of(const char *const *names, const uint8_t *buf, size_t words)
{
	struct dbg_block b = {names, buf, words, 0, 0};
	while (names[b.count]) // a static table, NULL-terminated
		b.count++;
	return b;
}

// The value of field @name, or false when this version's block has no such field. Fields are
// mostly asked for in the table's order, so the search starts after the last field found and
// wraps around (a search from the start each time was 100,000 string compares a snapshot).
static bool dbg_get(struct dbg_block *b, const char *name, uint64_t *ret)
{
	size_t count = b->count;
	size_t start = b->next < count ? b->next : 0;
	for (size_t k = 0; k < count; k++) {
		size_t i = start + k < count ? start + k : start + k - count;
		if (strcmp(b->names[i], name) != 0)
			continue;
		b->next = i + 1;
		if (i >= b->words)
			return false;
		memcpy(ret, b->buf + 8 * i, 8);
		return true;
	}
	return false;
}

struct dbg_ctx {
	struct dbg_block *b;
	struct pyu_error *err;
	char *notes;
	size_t notes_len;
	const char *version;
};

static void note(struct dbg_ctx *c, const char *fmt, const char *field, int64_t a, int64_t b)
{
	if (!c->notes || c->notes_len == 0)
		return;
	size_t used = strnlen(c->notes, c->notes_len);
	if (used + 1 >= c->notes_len)
		return;
	snprintf(c->notes + used, c->notes_len - used, fmt, field, a, b);
}

// Sets *@dst from the block's @name when the value lies in [0, @limit): the offset must be
// inside its group (the group's size, read separately) and inside the walker's buffer.
// Missing fields keep the static value. A field outside its bounds is an error.
static void take(struct dbg_ctx *c, int32_t *dst, const char *name, uint64_t limit)
{
	uint64_t v;
	if (c->err || !dbg_get(c->b, name, &v))
		return;
	if (v >= limit) {
		c->err = pyu_error_create(PYU_ERR_CORRUPT,
					  "_Py_DebugOffsets of %s: %s = %" PRIu64
					  " lies outside its bound %" PRIu64,
					  c->version, name, v, limit);
		return;
	}
	if (*dst != PYU_NO_FIELD && *dst != (int32_t)v)
		note(c, "%s: debug offsets %" PRId64 ", static table %" PRId64 "; ", name,
		     (int64_t)v, *dst);
	*dst = (int32_t)v;
}

// A group's size, which bounds the offsets of its fields. Sizes must be sane.
static uint64_t group_size(struct dbg_ctx *c, const char *name, uint64_t max)
{
	uint64_t v = 0;
	if (c->err)
		return 0;
	if (!dbg_get(c->b, name, &v) || v == 0 || v > max) {
		c->err = pyu_error_create(PYU_ERR_CORRUPT,
					  "_Py_DebugOffsets of %s: %s = %" PRIu64 " is not sane",
					  c->version, name, v);
		return 0;
	}
	return v;
}

// The field list of a _Py_DebugOffsets block of @version; NULL when unknown.
static const char *const *fields_of(uint64_t version)
{
	switch (version >> 16) {
	case 0x030d: return fields_313;
	case 0x030e: return fields_314;
	case 0x030f: return fields_315;
	default: return NULL;
	}
}

static struct pyu_error *from_debug_offsets(const uint8_t *buf, size_t len,
					    struct pyu_layout *ret, bool *free_threaded,
					    char *notes, size_t notes_len)
{
	if (len < 24 || memcmp(buf, "xdebugpy", 8) != 0)
		return pyu_error_create(PYU_ERR_CORRUPT, "no _Py_DebugOffsets cookie");
	uint64_t version, ft;
	memcpy(&version, buf + 8, 8);
	memcpy(&ft, buf + 16, 8);
	const char *const *names = fields_of(version);
	if (!names)
		return pyu_error_create(PYU_ERR_UNSUPPORTED,
					"CPython %" PRIu64 ".%" PRIu64
					" (_Py_DebugOffsets version 0x%08" PRIx64
					"): field list unknown to this pyunwind",
					(version >> 24) & 0xff, (version >> 16) & 0xff, version);
	if (ft > 1)
		return pyu_error_create(PYU_ERR_CORRUPT,
					"_Py_DebugOffsets: free_threaded = %" PRIu64, ft);
	size_t count = 0;
	while (names[count])
		count++;
	if (len < 8 * count)
		return pyu_error_create(PYU_ERR_CORRUPT,
					"_Py_DebugOffsets: %zu bytes read, the block has %zu",
					len, 8 * count);
	const struct pyu_layout *base = pyu_layout_for_version((uint32_t)version);
	if (!base)
		return pyu_error_create(PYU_ERR_UNSUPPORTED, "no static layout for 0x%08" PRIx64,
					version);
	struct pyu_layout l = *base;
	struct dbg_block b = dbg_block_of(names, buf, count);
	struct dbg_ctx c = {&b, NULL, notes, notes_len, base->name};
	if (notes && notes_len)
		notes[0] = '\0';
	const uint64_t max = PYU_LAYOUT_MAX_STRUCT;
	// Interpreter states are read field by field, so only their own size bounds them.
	uint64_t runtime = group_size(&c, "runtime_state.size", 1u << 24);
	uint64_t interp = group_size(&c, "interpreter_state.size", 1u << 24);
	uint64_t tstate = group_size(&c, "thread_state.size", 1u << 20);
	uint64_t iframe = group_size(&c, "interpreter_frame.size", max);
	uint64_t code = group_size(&c, "code_object.size", max);
	uint64_t pyobj = group_size(&c, "pyobject.size", 64);
	uint64_t type = group_size(&c, "type_object.size", max);
	uint64_t tuple = group_size(&c, "tuple_object.size", max);
	uint64_t bytes = group_size(&c, "bytes_object.size", max);
	uint64_t uni = group_size(&c, "unicode_object.size", max);
	take(&c, &l.runtime.interpreters_head, "runtime_state.interpreters_head", runtime - 7);
	take(&c, &l.interp.next, "interpreter_state.next", interp - 7);
	take(&c, &l.interp.threads_head, "interpreter_state.threads_head", interp - 7);
	take(&c, &l.interp.id, "interpreter_state.id", interp - 7);
	take(&c, &l.interp.ceval_gil, "interpreter_state.ceval_gil", interp - 7);
	take(&c, &l.interp.modules, "interpreter_state.imports_modules", interp - 7);
	uint64_t gil_base = 0, gil_locked = 0, gil_holder = 0;
	if (!c.err && dbg_get(&b, "interpreter_state.gil_runtime_state", &gil_base) &&
	    dbg_get(&b, "interpreter_state.gil_runtime_state_locked", &gil_locked) &&
	    dbg_get(&b, "interpreter_state.gil_runtime_state_holder", &gil_holder)) {
		// Published relative to the interpreter; the walker needs them inside the GIL
		// struct that ceval.gil points to.
		if (gil_locked < gil_base || gil_holder < gil_base || gil_locked - gil_base > 256 ||
		    gil_holder - gil_base > 256) {
			c.err = pyu_error_create(PYU_ERR_CORRUPT,
						 "_Py_DebugOffsets of %s: GIL offsets not sane",
						 base->name);
		} else {
			uint64_t lk = gil_locked - gil_base, hd = gil_holder - gil_base;
			if (l.interp.gil_locked != (int32_t)lk)
				note(&c, "%s: debug offsets %" PRId64 ", static table %" PRId64 "; ",
				     "gil.locked", (int64_t)lk, l.interp.gil_locked);
			if (l.interp.gil_holder != (int32_t)hd)
				note(&c, "%s: debug offsets %" PRId64 ", static table %" PRId64 "; ",
				     "gil.holder", (int64_t)hd, l.interp.gil_holder);
			l.interp.gil_locked = (int32_t)lk;
			l.interp.gil_holder = (int32_t)hd;
		}
	}
	// The walker copies the first tstate.size bytes of a thread state; every field it uses
	// must be inside both the struct and that buffer.
	uint64_t tbound = tstate < max ? tstate : max;
	take(&c, &l.tstate.next, "thread_state.next", tbound - 7);
	take(&c, &l.tstate.interp, "thread_state.interp", tbound - 7);
	take(&c, &l.tstate.current_frame, "thread_state.current_frame", tbound - 7);
	take(&c, &l.tstate.base_frame, "thread_state.base_frame", tbound - 7);
	take(&c, &l.tstate.thread_id, "thread_state.thread_id", tbound - 7);
	take(&c, &l.tstate.native_thread_id, "thread_state.native_thread_id", tbound - 7);
	take(&c, &l.tstate.datastack_chunk, "thread_state.datastack_chunk", tbound - 7);
	take(&c, &l.iframe.previous, "interpreter_frame.previous", iframe - 7);
	take(&c, &l.iframe.code, "interpreter_frame.executable", iframe - 7);
	take(&c, &l.iframe.instr_ptr, "interpreter_frame.instr_ptr", iframe - 7);
	take(&c, &l.iframe.owner, "interpreter_frame.owner", iframe);
	take(&c, &l.iframe.localsplus, "interpreter_frame.localsplus", iframe + 1);
	take(&c, &l.code.filename, "code_object.filename", code - 7);
	take(&c, &l.code.name, "code_object.name", code - 7);
	take(&c, &l.code.qualname, "code_object.qualname", code - 7);
	take(&c, &l.code.linetable, "code_object.linetable", code - 7);
	take(&c, &l.code.firstlineno, "code_object.firstlineno", code - 3);
	take(&c, &l.code.code_adaptive, "code_object.co_code_adaptive", code + 1);
	take(&c, &l.code.argcount, "code_object.argcount", code - 3);
	take(&c, &l.code.localsplusnames, "code_object.localsplusnames", code - 7);
	take(&c, &l.code.localspluskinds, "code_object.localspluskinds", code - 7);
	// _PyErr_StackItem has no published size; it holds two or three pointers.
	take(&c, &l.exc.item_value, "err_stackitem.exc_value", 17);
	take(&c, &l.ob_type, "pyobject.ob_type", pyobj - 7);
	take(&c, &l.type_tp_name, "type_object.tp_name", type - 7);
	take(&c, &l.type_tp_flags, "type_object.tp_flags", type - 7);
	take(&c, &l.tuple_item, "tuple_object.ob_item", tuple + 1);
	take(&c, &l.ob_size, "tuple_object.ob_size", tuple - 7);
	take(&c, &l.code.ob_size, "tuple_object.ob_size", code - 7);
	take(&c, &l.bytes_sval, "bytes_object.ob_sval", bytes + 1);
	take(&c, &l.unicode.state, "unicode_object.state", uni - 3);
	take(&c, &l.unicode.length, "unicode_object.length", uni - 7);
	take(&c, &l.unicode.ascii_size, "unicode_object.asciiobject_size", uni + 1);
	take(&c, &l.unicode.compact_size, "unicode_object.compactunicodeobject_size", uni + 1);
	if (ft == 1) {
		// Thread-local bytecode copies; the fields read 0 in default builds.
		take(&c, &l.iframe.tlbc_index, "interpreter_frame.tlbc_index", iframe - 3);
		take(&c, &l.code.tlbc, "code_object.co_tlbc", code - 7);
		// 3.14t+ make `interned` a whole byte: kind, compact and ascii move up 6 bits.
		if ((version >> 16) >= 0x030e)
			l.unicode.state_shift = 6;
		// 3.14t tags deferred references with bit 0 only; 3.15t uses the default mask.
		if ((version >> 16) == 0x030e)
			l.stackref_mask = 1;
	}
	if (c.err)
		return c.err;
	// Object fields the block does not publish move with the object header (free-threaded
	// builds: 32 bytes instead of 16).
	int32_t shift = l.ob_type - base->ob_type;
	if (shift) {
		int32_t *fields[] = {&l.code.firsttraceable, &l.code.framesize, &l.code.version,
				     &l.frame.size,
				     &l.frame.f_back, &l.frame.f_trace, &l.frame.f_lineno,
				     &l.code.kwonlyargcount, &l.code.flags, &l.code.nlocals,
				     &l.code.nlocalsplus, &l.cell_ref};
		for (size_t i = 0; i < sizeof(fields) / sizeof(fields[0]); i++)
			if (*fields[i] != PYU_NO_FIELD)
				*fields[i] += shift;
		note(&c, "%s: object header %" PRId64 " bytes larger than the static table's (%"
		     PRId64 " B); static object offsets shifted; ", "pyobject.ob_type",
		     (int64_t)shift, (int64_t)base->ob_type + 8);
	}
	// PyCompactUnicodeObject = PyASCIIObject + utf8_length + utf8 (published from 3.15 on).
	uint64_t compact;
	if (!dbg_get(&b, "unicode_object.compactunicodeobject_size", &compact))
		l.unicode.compact_size = l.unicode.ascii_size + 16;
	l.unicode.data = l.unicode.compact_size;
	if (tstate > max || l.tstate.size > (int32_t)tbound)
		l.tstate.size = (int32_t)tbound;
	l.iframe.size = (int32_t)iframe;
	l.code.size = (int32_t)code;
	// The walker needs the thread-state buffer to cover every field it takes from it.
	int32_t tneed = 0;
	// The profile and trace functions are not published: the static table's, while the
	// published fields around them sit where the table has them and they fall inside the
	// thread state the target describes. Otherwise none: every frame object's f_lineno is
	// then read, as when a thread traces.
	if (l.tstate.next != base->tstate.next || l.tstate.interp != base->tstate.interp ||
	    l.tstate.current_frame != base->tstate.current_frame ||
	    l.tstate.base_frame != base->tstate.base_frame ||
	    (int64_t)l.tstate.c_profilefunc + 8 > (int64_t)tbound ||
	    (int64_t)l.tstate.c_tracefunc + 8 > (int64_t)tbound)
		l.tstate.c_profilefunc = l.tstate.c_tracefunc = PYU_NO_FIELD;
	int32_t tfields[] = {l.tstate.next, l.tstate.interp, l.tstate.current_frame,
			     l.tstate.base_frame, l.tstate.thread_id, l.tstate.native_thread_id,
			     l.tstate.datastack_chunk, l.tstate.datastack_top,
			     l.tstate.c_profilefunc, l.tstate.c_tracefunc};
	for (size_t i = 0; i < sizeof(tfields) / sizeof(tfields[0]); i++)
		if (tfields[i] + 8 > tneed)
			tneed = tfields[i] + 8;
	l.tstate.size = tneed;
	struct pyu_error *err = pyu_layout_validate(&l);
	if (err)
		return pyu_error_wrap(err, "checking the layout built from _Py_DebugOffsets");
	*ret = l;
	if (free_threaded)
		*free_threaded = ft == 1;
	return NULL;
}

// The blocks parsed last, for the life of the library. A fresh handle parses its
// interpreter's block twice (finding the runtime, keeping it for the next snapshot) and a
// sampler's next fresh handle the same block again, at 4-8% of such a handle's time. What is
// built depends on the block's own bytes alone (8 a field, by the field list of its version):
// the same bytes give the same layout back.
#define LAYOUTS_KEPT 4
#define KEPT_NOTES 1024
static struct kept_layout {
	size_t key_len; // 0: unused
	uint8_t key[PYU_DEBUG_OFFSETS_MAX];
	struct pyu_layout layout;
	bool ft;
	char notes[KEPT_NOTES];
	uint64_t last;
} kept_layouts[LAYOUTS_KEPT];
static uint64_t kept_clock;
static pthread_mutex_t kept_lock = PTHREAD_MUTEX_INITIALIZER;

// How many bytes of @buf the block's field list covers; 0 when it is no block we parse.
static size_t block_len(const uint8_t *buf, size_t len)
{
	uint64_t version;
	if (len < 24 || memcmp(buf, "xdebugpy", 8) != 0)
		return 0;
	memcpy(&version, buf + 8, 8);
	const char *const *names = fields_of(version);
	size_t count = 0;
	while (names && names[count])
		count++;
	return names && 8 * count <= len && 8 * count <= PYU_DEBUG_OFFSETS_MAX ? 8 * count : 0;
}

struct pyu_error *pyu_layout_from_debug_offsets(const uint8_t *buf, size_t len,
						struct pyu_layout *ret, bool *free_threaded,
						char *notes, size_t notes_len)
{
	size_t key_len = block_len(buf, len);
	struct kept_layout found;
	bool hit = false;
	if (key_len) {
		pthread_mutex_lock(&kept_lock);
		for (size_t i = 0; i < LAYOUTS_KEPT && !hit; i++) {
			struct kept_layout *k = &kept_layouts[i];
			if (k->key_len == key_len && memcmp(k->key, buf, key_len) == 0) {
				k->last = ++kept_clock;
				found = *k;
				hit = true;
			}
		}
		pthread_mutex_unlock(&kept_lock);
	}
	if (!hit) {
		found.key_len = key_len;
		struct pyu_error *err = from_debug_offsets(buf, len, &found.layout, &found.ft,
							   found.notes, sizeof(found.notes));
		if (err)
			return err;
		if (key_len) {
			memcpy(found.key, buf, key_len);
			pthread_mutex_lock(&kept_lock);
			struct kept_layout *victim = &kept_layouts[0];
			for (size_t i = 1; i < LAYOUTS_KEPT && victim->key_len; i++)
				if (!kept_layouts[i].key_len || kept_layouts[i].last < victim->last)
					victim = &kept_layouts[i];
			found.last = ++kept_clock;
			*victim = found;
			pthread_mutex_unlock(&kept_lock);
		}
	}
	*ret = found.layout;
	if (free_threaded)
		*free_threaded = found.ft;
	if (notes && notes_len)
		snprintf(notes, notes_len, "%s", found.notes);
	return NULL;
}

bool pyu_debug_offsets_field(const uint8_t *buf, size_t len, const char *name, uint64_t *ret)
{
	if (len < 24 || memcmp(buf, "xdebugpy", 8) != 0)
		return false;
	uint64_t version;
	memcpy(&version, buf + 8, 8);
	const char *const *names;
	switch (version >> 16) {
	case 0x030d: names = fields_313; break;
	case 0x030e: names = fields_314; break;
	case 0x030f: names = fields_315; break;
	default: return false;
	}
	struct dbg_block b = dbg_block_of(names, buf, len / 8);
	return dbg_get(&b, name, ret);
}

void pyu_debug_offsets_fields(const uint8_t *buf, size_t len, const char *const *names,
			      size_t n, uint64_t *rets, bool *found)
{
	memset(found, 0, n * sizeof(*found));
	if (len < 24 || memcmp(buf, "xdebugpy", 8) != 0)
		return;
	uint64_t version;
	memcpy(&version, buf + 8, 8);
	const char *const *fields = fields_of(version);
	if (!fields)
		return;
	// One block for all: each search starts after the last field found.
	struct dbg_block b = dbg_block_of(fields, buf, len / 8);
	for (size_t i = 0; i < n; i++)
		found[i] = dbg_get(&b, names[i], &rets[i]);
}
