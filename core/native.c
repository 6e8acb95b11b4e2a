// native.c - a thread's native frames (handed in by a debugger adapter or unwound by the CLI)
// and their merge with its Python frames. The decision is made from data only: each Python
// frame's C-stack marker (the entry frame of 3.12+, the _PyCFrame of 3.11, recorded by the
// walker) must lie inside the stack range [sp, cfa) of one native frame, the eval call that
// runs it; older versions have one eval-loop call per Python frame, known by its symbol. When
// the two sides do not fit together the merge says why and nothing is interleaved.
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cython.h"
#include "include/pyunwind.h"
#include "native.h"
#include "runtime.h"
#include "unwind.h"

// ---- the interpreter's plumbing -------------------------------------------------------------

// Prefixes of functions that only move a call from one place to the next inside the
// interpreter; the Python frames around them say what is going on. A name alone never hides a
// frame: only one in the interpreter's own image (pyu_merge_thread) is plumbing.
static const char *const plumbing_prefixes[] = {
	"_Py", "PyEval_", "PyObject_Call", "PyObject_Vectorcall", "PyVectorcall_",
	"PyCFunction_Call", "PyFunction_", "_TAIL_CALL_", "method_vectorcall", "cfunction_call",
	"call_function", "fast_function", "function_code_fastcall", "do_call_core",
	"slot_tp_call", "ext_do_call", "function_call", "instancemethod_call", "method_call",
	"call_trampoline", "vectorcall_",
};

bool pyu_native_is_plumbing(const char *function)
{
	if (!function)
		return false;
	if (strstr(function, "vectorcall"))
		return true;
	for (size_t i = 0; i < sizeof(plumbing_prefixes) / sizeof(plumbing_prefixes[0]); i++)
		if (!strncmp(function, plumbing_prefixes[i], strlen(plumbing_prefixes[i])))
			return true;
	return false;
}

// @function is @want or a part of it the compiler split off ("_PyEval_EvalFrameDefault.cold").
static bool is_function(const char *function, const char *want)
{
	size_t n = strlen(want);
	return function && n && !strncmp(function, want, n) &&
	       (function[n] == '\0' || function[n] == '.');
}

// ---- adding native frames (public) ------------------------------------------------------------

static struct pyu_error *thread_of(struct pyu_stacks *s, uint32_t thread,
				   struct pyu_thread_info **ret)
{
	if (!s)
		return pyu_error_create(PYU_ERR_ARGUMENT, "no stacks");
	if (thread >= s->thread_count)
		return pyu_error_create(PYU_ERR_NOT_FOUND, "no thread #%u (the target has %u)",
					thread, s->thread_count);
	*ret = &s->threads[thread];
	return NULL;
}

static void free_native(struct pyu_native_frame *f)
{
	free(f->function);
	free(f->library);
	free(f->file);
	if (f->cython)
		pyu_cython_frame_clear(f->cython);
	free(f->cython);
}

static void clear_native(struct pyu_thread_info *th)
{
	for (uint32_t k = 0; k < th->native_count; k++)
		free_native(&th->native[k]);
	free(th->native);
	free(th->native_error);
	th->native = NULL;
	th->native_count = th->native_cap = th->native_stack_frames = 0;
	th->native_error = NULL;
	th->native_known = false;
}

PYU_PUBLIC struct pyu_error *pyu_stacks_clear_native(struct pyu_stacks *s, uint32_t thread)
{
	struct pyu_thread_info *th = NULL;
	struct pyu_error *err = thread_of(s, thread, &th);
	if (err)
		return err;
	clear_native(th);
	return NULL;
}

static char *dup_or_null(const char *text, bool *failed)
{
	if (!text || !*text)
		return NULL;
	char *copy = strdup(text);
	if (!copy)
		*failed = true;
	return copy;
}

// What native frame @f is to Cython: its Python-level name and .pyx line (cython.c).
static struct pyu_error *add_cython(struct pyu_stacks *s, struct pyu_native_frame *f)
{
	if (!s->cython_files && !(s->cython_files = pyu_cython_files_create(s->target)))
		return &pyu_error_nomem;
	f->cython = calloc(1, sizeof(*f->cython));
	if (!f->cython)
		return &pyu_error_nomem;
	return pyu_cython_resolve(s->cython_files, f->function, f->library, f->file, f->line,
				  f->cython);
}

// Which extension module nameless frame @f runs in, when its file says (cython.c): the file
// the target maps at its pc, read here through the target's path maps.
static struct pyu_error *add_module(struct pyu_stacks *s, struct pyu_native_frame *f)
{
	if (!s->cython_files && !(s->cython_files = pyu_cython_files_create(s->target)))
		return &pyu_error_nomem;
	const struct pyu_mapping *m = s->target && f->pc
		? pyu_target_find_mapping(s->target, f->pc) : NULL;
	if (m && m->path && m->local_path)
		f->module = pyu_cython_module_of(s->cython_files, m->path, m->local_path);
	else if (!m && f->library[0] == '/')
		f->module = pyu_cython_module_of(s->cython_files, f->library, f->library);
	return NULL;
}

PYU_PUBLIC struct pyu_error *pyu_stacks_add_native_frame(struct pyu_stacks *s, uint32_t thread,
							 uint64_t pc, uint64_t sp, uint64_t cfa,
							 const char *function,
							 const char *library, const char *file,
							 int64_t line)
{
	struct pyu_thread_info *th = NULL;
	struct pyu_error *err = thread_of(s, thread, &th);
	if (err)
		return err;
	if (th->native_count >= PYU_MAX_NATIVE_FRAMES)
		return pyu_error_create(PYU_ERR_ARGUMENT, "more than %d native frames in a thread",
					PYU_MAX_NATIVE_FRAMES);
	if (th->native_count == th->native_cap) {
		uint32_t n = th->native_cap ? th->native_cap * 2 : 32;
		struct pyu_native_frame *grown = realloc(th->native, n * sizeof(*grown));
		if (!grown)
			return &pyu_error_nomem;
		th->native = grown;
		th->native_cap = n;
	}
	// The library by the path the target maps it from, whoever unwound: a debugger may name
	// it as the loader asked for it (lldb: /lib/x86_64-linux-gnu/libffi.so.8, a link to the
	// file the process maps, /usr/lib/x86_64-linux-gnu/libffi.so.8.1.2), a core's module
	// list by a short name; every front end and source shows the same full path. A return
	// address of an outer frame may lie just past its call: the call is looked up.
	uint64_t at = th->native_count && pc ? pc - 1 : pc;
	const struct pyu_mapping *m = s->target && at ? pyu_target_find_mapping(s->target, at)
						      : NULL;
	if (m && m->path && m->path[0] == '/')
		library = m->path;
	bool failed = false;
	struct pyu_native_frame f = {pc, sp, cfa, dup_or_null(function, &failed),
				     dup_or_null(library, &failed), dup_or_null(file, &failed),
				     file && *file && line > 0 ? line : -1,
				     th->native_stack_frames, false, false, NULL, NULL};
	if (!failed && pyu_cython_role(function) != PYU_CYTHON_NONE)
		err = add_cython(s, &f);
	else if (!failed && !f.function && f.library)
		err = add_module(s, &f);
	if (failed || err) {
		free_native(&f);
		return err ? err : &pyu_error_nomem;
	}
	th->native[th->native_count++] = f;
	th->native_stack_frames++; // until said otherwise (pyu_stacks_set_native_kind)
	th->native_known = true;
	return NULL;
}

PYU_PUBLIC struct pyu_error *pyu_stacks_set_native_kind(struct pyu_stacks *s, uint32_t thread,
							uint32_t kind)
{
	struct pyu_thread_info *th = NULL;
	struct pyu_error *err = thread_of(s, thread, &th);
	if (err)
		return err;
	if (!th->native_count)
		return pyu_error_create(PYU_ERR_ARGUMENT, "no native frame to mark");
	if (kind != PYU_NATIVE_INLINE && kind != PYU_NATIVE_ARTIFICIAL)
		return pyu_error_create(PYU_ERR_ARGUMENT, "unknown native frame kind %u", kind);
	struct pyu_native_frame *f = &th->native[th->native_count - 1];
	if (!f->inlined && !f->artificial)
		th->native_stack_frames--;
	f->inlined = kind == PYU_NATIVE_INLINE;
	f->artificial = kind == PYU_NATIVE_ARTIFICIAL;
	return NULL;
}

// String @k of a frame's record (0: none), or false when @k is past @strings.
static bool record_string(const char *const *strings, uint32_t string_count, uint64_t k,
			  const char **ret)
{
	if (k > string_count)
		return false;
	*ret = k ? strings[k - 1] : NULL;
	return true;
}

PYU_PUBLIC struct pyu_error *pyu_stacks_set_native_frames(struct pyu_stacks *s, uint32_t thread,
							  const uint64_t *frames, uint32_t count,
							  const char *const *strings,
							  uint32_t string_count)
{
	struct pyu_thread_info *th = NULL;
	struct pyu_error *err = thread_of(s, thread, &th);
	if (err)
		return err;
	if ((count && !frames) || (string_count && !strings))
		return pyu_error_create(PYU_ERR_ARGUMENT, "no native frames given");
	if (count > PYU_MAX_NATIVE_FRAMES)
		return pyu_error_create(PYU_ERR_ARGUMENT, "more than %d native frames in a thread",
					PYU_MAX_NATIVE_FRAMES);
	clear_native(th);
	uint64_t base = 0; // where the stack of the next frame out starts, when its sp is not given
	for (uint32_t k = 0; k < count; k++) {
		const uint64_t *f = frames + (size_t)k * PYU_NATIVE_FIELDS;
		const char *function = NULL, *library = NULL, *file = NULL;
		uint64_t sp = f[PYU_NATIVE_SP] ? f[PYU_NATIVE_SP] : base;
		uint64_t line = f[PYU_NATIVE_LINE], kind = f[PYU_NATIVE_KIND];
		if (!record_string(strings, string_count, f[PYU_NATIVE_FUNCTION], &function) ||
		    !record_string(strings, string_count, f[PYU_NATIVE_LIBRARY], &library) ||
		    !record_string(strings, string_count, f[PYU_NATIVE_FILE], &file))
			err = pyu_error_create(PYU_ERR_ARGUMENT,
					       "native frame %u names string past the %u given", k,
					       string_count);
		else if (kind > PYU_NATIVE_ARTIFICIAL)
			err = pyu_error_create(PYU_ERR_ARGUMENT, "unknown native frame kind %" PRIu64,
					       kind);
		else
			err = pyu_stacks_add_native_frame(s, thread, f[PYU_NATIVE_PC], sp,
							  f[PYU_NATIVE_CFA], function, library, file,
							  line && line <= INT64_MAX ? (int64_t)line : -1);
		if (!err && kind)
			err = pyu_stacks_set_native_kind(s, thread, (uint32_t)kind);
		if (err) {
			clear_native(th);
			return err;
		}
		// Inlined and artificial frames have no stack of their own: the frames around them
		// share it.
		if (kind != PYU_NATIVE_INLINE && kind != PYU_NATIVE_ARTIFICIAL)
			base = f[PYU_NATIVE_CFA];
		else if (!base)
			base = sp;
	}
	return NULL;
}

PYU_PUBLIC struct pyu_error *pyu_stacks_set_native_threads(struct pyu_stacks *s,
							   const uint32_t *threads,
							   const uint32_t *counts, uint32_t n,
							   const uint64_t *frames,
							   const char *const *strings,
							   uint32_t string_count)
{
	if (!s)
		return pyu_error_create(PYU_ERR_ARGUMENT, "no stacks");
	if (n && (!threads || !counts))
		return pyu_error_create(PYU_ERR_ARGUMENT, "no threads given");
	size_t at = 0; // frames of the threads before
	for (uint32_t k = 0; k < n; k++) {
		if (counts[k] > PYU_MAX_NATIVE_FRAMES)
			return pyu_error_create(PYU_ERR_ARGUMENT, "more than %d native frames in "
						"a thread", PYU_MAX_NATIVE_FRAMES);
		at += counts[k]; // at most 2^32 threads of 2^23 frames: no overflow
	}
	if (at && !frames)
		return pyu_error_create(PYU_ERR_ARGUMENT, "no native frames given");
	at = 0;
	for (uint32_t k = 0; k < n; k++) {
		struct pyu_error *err = pyu_stacks_set_native_frames(
			s, threads[k], counts[k] ? frames + at * PYU_NATIVE_FIELDS : NULL, counts[k],
			strings, string_count);
		at += counts[k];
		if (!err)
			continue;
		if (err == &pyu_error_nomem)
			return err;
		struct pyu_error *e = pyu_stacks_set_native_error(s, threads[k],
								  pyu_error_message(err));
		pyu_error_destroy(err);
		if (e && pyu_error_code(e) != PYU_ERR_NOT_FOUND)
			return e; // out of memory
		pyu_error_destroy(e); // a thread the snapshot does not have
	}
	return NULL;
}

PYU_PUBLIC struct pyu_error *pyu_stacks_set_native_error(struct pyu_stacks *s, uint32_t thread,
							 const char *message)
{
	struct pyu_thread_info *th = NULL;
	struct pyu_error *err = thread_of(s, thread, &th);
	if (err)
		return err;
	char *copy = strdup(message ? message : "unknown error");
	if (!copy)
		return &pyu_error_nomem;
	free(th->native_error);
	th->native_error = copy;
	return NULL;
}

// ---- unwinding (the CLI) ----------------------------------------------------------------------

struct unwind_state {
	struct pyu_stacks *s;
	int64_t tid;
	int32_t thread; // snapshot index of @tid; -1 when it runs no Python
};

static struct pyu_error *take_frame(void *arg, const struct pyu_unwound *f)
{
	struct unwind_state *u = arg;
	if (f->tid != u->tid) {
		u->tid = f->tid;
		u->thread = pyu_stacks_find_thread(u->s, f->tid, 0);
		if (u->thread >= 0)
			clear_native(&u->s->threads[u->thread]);
	}
	if (u->thread < 0)
		return NULL;
	if (f->error)
		return pyu_stacks_set_native_error(u->s, (uint32_t)u->thread, f->error);
	if (u->s->threads[u->thread].native_count >= PYU_MAX_NATIVE_FRAMES)
		return NULL;
	struct pyu_error *err = pyu_stacks_add_native_frame(u->s, (uint32_t)u->thread, f->pc, f->sp,
							    0, f->function, f->library, f->file,
							    f->line);
	if (!err && (f->artificial || f->inlined))
		err = pyu_stacks_set_native_kind(u->s, (uint32_t)u->thread,
						 f->artificial ? PYU_NATIVE_ARTIFICIAL
							       : PYU_NATIVE_INLINE);
	return err;
}

PYU_PUBLIC struct pyu_error *pyu_stacks_unwind_native(struct pyu_stacks *s)
{
	if (!s)
		return pyu_error_create(PYU_ERR_ARGUMENT, "no stacks");
	struct unwind_state u = {s, -1, -1};
	struct pyu_error *err = pyu_target_unwind(s->target, take_frame, &u);
	if (err && pyu_error_code(err) != PYU_ERR_IO && pyu_error_code(err) != PYU_ERR_UNSUPPORTED)
		return err;
	for (uint32_t i = 0; i < s->thread_count; i++) {
		struct pyu_thread_info *th = &s->threads[i];
		if (th->native_known || th->native_error)
			continue;
		struct pyu_error *e = pyu_stacks_set_native_error(
			s, i, err ? pyu_error_message(err) : "the unwinder did not see this thread");
		if (e) {
			pyu_error_destroy(err);
			return e;
		}
	}
	pyu_error_destroy(err);
	return NULL;
}

// ---- placing Python frames ------------------------------------------------------------------

// Whether @addr is on the stack of native frame @k: [sp, cfa), the cfa being the caller's sp
// when the unwinder did not give it. The outermost frame without a cfa holds nothing: its
// extent is unknown, and an unwinder that lost its way ends there (a cut stack must not
// swallow every Python frame above it).
static bool frame_holds(const struct pyu_thread_info *th, uint32_t k, uint64_t addr)
{
	const struct pyu_native_frame *f = &th->native[k];
	uint64_t hi = f->cfa ? f->cfa : k + 1 < th->native_count ? th->native[k + 1].sp : f->sp;
	return f->sp && addr >= f->sp && addr < hi;
}

// Fills @runner by the Python frames' C-stack markers. Returns false with @reason on a mismatch.
static bool place_by_marker(const struct pyu_thread_info *th, int32_t *runner, char *reason)
{
	uint32_t k = 0, n = th->native_count;
	uint64_t prev_marker = 0;
	int32_t prev_k = -1;
	for (uint32_t i = 0; i < th->frame_count; i++) {
		uint64_t m = th->frames[i].entry_marker;
		if (!m) {
			snprintf(reason, PYU_MERGE_REASON,
				 "the eval call of Python frame #%u left no marker on the C stack "
				 "that could be read", i);
			return false;
		}
		if (m == prev_marker) {
			runner[i] = prev_k;
			continue;
		}
		while (k < n && !frame_holds(th, k, m))
			k++;
		if (k == n) {
			snprintf(reason, PYU_MERGE_REASON,
				 "the eval call of Python frame #%u (C-stack marker 0x%" PRIx64
				 ") is in none of the %u native frames%s", i, m, n,
				 prev_k < 0 ? "" : " outer to the previous one");
			return false;
		}
		// Inline frames share their caller's stack: the real (outermost) frame runs it.
		while (k + 1 < n && frame_holds(th, k + 1, m))
			k++;
		runner[i] = (int32_t)k;
		prev_k = (int32_t)k;
		prev_marker = m;
		k++;
	}
	return true;
}

// Fills @runner by the eval loop's symbol: one call per Python frame, in order.
static bool place_by_symbol(const struct pyu_stacks *s, const struct pyu_thread_info *th,
			    int32_t *runner, char *reason)
{
	uint32_t evals = 0;
	for (uint32_t k = 0; k < th->native_count; k++)
		if (is_function(th->native[k].function, s->eval_function))
			evals++;
	if (evals != th->frame_count) {
		snprintf(reason, PYU_MERGE_REASON,
			 "%u Python frames but %u native frames of %s", th->frame_count, evals,
			 s->eval_function[0] ? s->eval_function : "the eval loop");
		return false;
	}
	uint32_t i = 0;
	for (uint32_t k = 0; k < th->native_count && i < th->frame_count; k++)
		if (is_function(th->native[k].function, s->eval_function))
			runner[i++] = (int32_t)k;
	return true;
}

static struct pyu_error *push_item(struct pyu_merge *m, uint32_t *cap, bool python,
				   bool cython, uint32_t index)
{
	if (m->count == *cap) {
		uint32_t n = *cap ? *cap * 2 : 64;
		struct pyu_merge_item *grown = realloc(m->items, n * sizeof(*grown));
		if (!grown)
			return &pyu_error_nomem;
		m->items = grown;
		*cap = n;
	}
	m->items[m->count++] = (struct pyu_merge_item){python, cython, index};
	return NULL;
}

static bool same_text(const char *a, const char *b)
{
	return a && b && !strcmp(a, b);
}

// Whether native frame @k is the argument-parsing wrapper of the Cython function just inner to
// it (the body the wrapper calls, often inlined into it).
static bool wraps(const struct pyu_thread_info *th, uint32_t k)
{
	const struct pyu_cython_frame *w = th->native[k].cython, *body;
	if (!k || !(body = th->native[k - 1].cython) || body->role != PYU_CYTHON_FUNCTION)
		return false;
	return same_text(w->qualname, body->qualname) && same_text(w->module, body->module);
}

// The file mapped at @addr as the target names it; NULL when unknown.
static const char *mapped_file(const struct pyu_stacks *s, uint64_t addr)
{
	const struct pyu_mapping *m = s->target && addr
		? pyu_target_find_mapping(s->target, addr) : NULL;
	return m && m->path ? m->path : NULL;
}

// The file native frame @k of @th runs in: the target's mapping of its pc (a return address
// of an outer frame may be one past its call: the call is looked up), else the unwinder's
// library name; NULL when neither is known.
static const char *frame_image(const struct pyu_stacks *s, const struct pyu_thread_info *th,
			       uint32_t k)
{
	const struct pyu_native_frame *f = &th->native[k];
	const char *path = mapped_file(s, k && f->pc ? f->pc - 1 : f->pc);
	return path ? path : f->library;
}

// The interpreter's own files: where its state lies (by address), the file it was found in
// (by name), the file its eval calls run in.
struct interp_images {
	const char *names[3];
};

static bool in_interpreter(const struct interp_images *images, const struct pyu_stacks *s,
			   const struct pyu_thread_info *th, uint32_t k)
{
	const char *image = frame_image(s, th, k);
	for (size_t j = 0; image && j < sizeof(images->names) / sizeof(images->names[0]); j++)
		if (same_text(image, images->names[j]))
			return true;
	return false;
}

struct pyu_error *pyu_merge_thread(const struct pyu_stacks *s, const struct pyu_thread_info *th,
				   bool keep_all, struct pyu_merge *ret)
{
	struct pyu_merge m = {0};
	uint32_t cap = 0, n = th->native_count;
	struct pyu_error *err = NULL;
	if (th->native_known)
		m.runner = malloc((th->frame_count ? th->frame_count : 1) * sizeof(*m.runner));
	if (th->native_known && !m.runner)
		return &pyu_error_nomem;
	if (!th->native_known) {
		snprintf(m.reason, sizeof(m.reason), "no native frames for this thread%s%s",
			 th->native_error ? ": " : "", th->native_error ? th->native_error : "");
	} else {
		m.merged = true;
		for (uint32_t i = 0; i < th->frame_count && m.merged; i++) {
			if (th->frames[i].kind != PYU_FRAME_PYTHON) {
				snprintf(m.reason, sizeof(m.reason),
					 "Python frame #%u could not be read", i);
				m.merged = false;
			}
		}
		if (m.merged && th->frame_count)
			m.merged = s->placement == PYU_PLACE_BY_EVAL_SYMBOL
				? place_by_symbol(s, th, m.runner, m.reason)
				: place_by_marker(th, m.runner, m.reason);
		if (!m.merged && th->native_error) { // what cut the native stack short says why
			size_t len = strlen(m.reason);
			snprintf(m.reason + len, sizeof(m.reason) - len, " (%s)", th->native_error);
		}
	}
	if (!m.merged) {
		free(m.runner);
		m.runner = NULL;
	}
	// Which native frames are the interpreter's own: those in the file that holds its state
	// (the executable or libpython) or that runs its eval calls, found by address in the
	// target's mappings (the library name the unwinder gave when the target has none). Of
	// those, eval calls, named plumbing and nameless frames (a stripped build's static
	// functions) are hidden; a C extension's frames never are, whatever their names.
	struct interp_images images = {
		{mapped_file(s, s->runtime ? s->runtime->interp_head_addr : 0),
		 s->runtime && s->runtime->image[0] ? s->runtime->image : NULL, NULL}};
	uint32_t i = 0;
	for (uint32_t k = 0; k < n && !images.names[2]; k++) {
		bool eval = is_function(th->native[k].function, s->eval_function);
		while (m.merged && i < th->frame_count && m.runner[i] <= (int32_t)k)
			eval |= m.runner[i++] == (int32_t)k;
		if (eval)
			images.names[2] = frame_image(s, th, k);
	}
	i = 0;
	if (!m.merged)
		for (; i < th->frame_count && !err; i++)
			err = push_item(&m, &cap, true, false, i);
	for (uint32_t k = 0; k < n && !err; k++) {
		const struct pyu_native_frame *f = &th->native[k];
		bool eval = is_function(f->function, s->eval_function);
		if (m.merged) {
			while (i < th->frame_count && m.runner[i] == (int32_t)k && !err) {
				eval = true;
				err = push_item(&m, &cap, true, false, i++);
			}
		}
		bool hidden = eval ||
			      ((!f->function || pyu_native_is_plumbing(f->function)) &&
			       in_interpreter(&images, s, th, k));
		bool cython = false;
		if (f->cython && f->cython->role == PYU_CYTHON_HELPER) {
			hidden = true;
		} else if (f->cython && f->cython->role == PYU_CYTHON_WRAPPER && wraps(th, k)) {
			hidden = true;
		} else if (f->cython) {
			hidden = false;
			cython = true;
		}
		if (!err && (keep_all || !hidden) && !f->artificial)
			err = push_item(&m, &cap, false, cython, k);
	}
	if (err) {
		pyu_merge_release(&m);
		return err;
	}
	*ret = m;
	return NULL;
}

void pyu_merge_release(struct pyu_merge *m)
{
	free(m->items);
	free(m->runner);
	m->items = NULL;
	m->runner = NULL;
	m->count = 0;
}

// ---- Cython frames, selectable like Python ones (public) ------------------------------------

static const struct pyu_thread_info *thread_at(const struct pyu_stacks *s, uint32_t thread)
{
	return s && thread < s->thread_count ? &s->threads[thread] : NULL;
}

PYU_PUBLIC struct pyu_error *pyu_stacks_frame_steps(const struct pyu_stacks *s, uint32_t thread,
						    int64_t *ret, uint32_t cap,
						    uint32_t *ret_count)
{
	const struct pyu_thread_info *th = thread_at(s, thread);
	if (!th)
		return pyu_error_create(PYU_ERR_NOT_FOUND, "no thread #%u", thread);
	if (!ret)
		cap = 0;
	uint32_t n = 0;
	if (!th->native_known) { // the Python frames alone
		for (uint32_t i = 0; i < th->frame_count; i++, n++)
			if (n < cap)
				ret[n] = i;
		*ret_count = n;
		return NULL;
	}
	struct pyu_merge m;
	struct pyu_error *err = pyu_merge_thread(s, th, false, &m);
	if (err)
		return err;
	for (uint32_t i = 0; i < m.count; i++) {
		const struct pyu_merge_item *it = &m.items[i];
		if (!it->python && !(m.merged && it->cython))
			continue;
		if (n < cap)
			ret[n] = it->python ? (int64_t)it->index : -1 - (int64_t)it->index;
		n++;
	}
	pyu_merge_release(&m);
	*ret_count = n;
	return NULL;
}

// The Cython function native frame @level of @thread runs; NULL when it runs none.
static const struct pyu_native_frame *cython_at(const struct pyu_stacks *s, uint32_t thread,
						uint32_t level)
{
	const struct pyu_thread_info *th = thread_at(s, thread);
	if (!th || level >= th->native_count)
		return NULL;
	const struct pyu_native_frame *f = &th->native[level];
	// a wrapper shown stands for the body the compiler inlined into it (native.c's merge)
	return f->cython && (f->cython->role == PYU_CYTHON_FUNCTION ||
			     f->cython->role == PYU_CYTHON_WRAPPER) ? f : NULL;
}

PYU_PUBLIC int64_t pyu_stacks_level_step(const struct pyu_stacks *s, uint32_t thread,
					 uint32_t level)
{
	const struct pyu_thread_info *th = thread_at(s, thread);
	struct pyu_merge m;
	if (!th || !th->native_known || pyu_merge_thread(s, th, false, &m))
		return cython_at(s, thread, level) ? -1 - (int64_t)level : PYU_ABSENT;
	// A Cython function shown, or the argument wrapper hidden around the one just inner to it.
	int64_t step = PYU_ABSENT;
	const struct pyu_native_frame *f = cython_at(s, thread, level);
	for (uint32_t i = 0; f && i < m.count && step == PYU_ABSENT; i++)
		if (m.items[i].cython && m.items[i].index == level)
			step = -1 - (int64_t)level;
	for (uint32_t i = 0; f && i < m.count && step == PYU_ABSENT; i++)
		if (m.items[i].cython && m.items[i].index + 1 == level &&
		    f->cython->role == PYU_CYTHON_WRAPPER)
			step = -1 - (int64_t)m.items[i].index;
	for (uint32_t i = 0; m.merged && i < th->frame_count && step == PYU_ABSENT; i++)
		if (m.runner[i] == (int32_t)level)
			step = i;
	pyu_merge_release(&m);
	if (step == PYU_ABSENT && f)
		step = -1 - (int64_t)level;
	return step;
}

PYU_PUBLIC const char *pyu_stacks_cython_string(const struct pyu_stacks *s, uint32_t thread,
						uint32_t level, uint32_t which)
{
	const struct pyu_native_frame *f = cython_at(s, thread, level);
	if (!f)
		return NULL;
	switch (which) {
	case PYU_CYSTR_MODULE:
		return f->cython->module;
	case PYU_CYSTR_FILE:
		return f->cython->file;
	case PYU_CYSTR_FUNCTION:
		return f->cython->qualname;
	case PYU_CYSTR_C_FUNCTION:
		return f->function;
	case PYU_CYSTR_LIBRARY:
		return f->library;
	case PYU_CYSTR_NO_LINE:
		return f->cython->line_from == PYU_CYTHON_LINE_NONE ? f->cython->why : NULL;
	default:
		return NULL;
	}
}

PYU_PUBLIC int64_t pyu_stacks_cython_line(const struct pyu_stacks *s, uint32_t thread,
					  uint32_t level)
{
	const struct pyu_native_frame *f = cython_at(s, thread, level);
	if (!f)
		return PYU_ABSENT;
	return f->cython->line > 0 ? f->cython->line : -1;
}
