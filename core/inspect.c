// inspect.c - values shown with a snapshot: the per-snapshot value reader, thread names
// (threading._active[ident]._name) and handled exceptions (the tstate->exc_info chain as
// sys.exc_info() walks it; 2.7/3.6: the thread state's exc_type/exc_value), locals with reprs,
// and name lookup for py-print. Every loop over target data is bounded; anything unreadable
// leaves a field empty instead of failing the whole.
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "inspect.h"
#include "objects.h"
#include "runtime.h"
#include "strbuf.h"
#include "tracebacks.h"
#include "value_layout.h"
#include "values.h"

// Stack items of sys.exc_info()'s chain walked at most (generators nest them).
#define PYU_EXC_CHAIN_MAX 4096
// Code points of a thread name.
#define PYU_THREAD_NAME_MAX 4096
// Parts of a py-print path.
#define PYU_PATH_PARTS_MAX 64

struct pyu_inspect {
	struct pyu_value_limits limits;
	struct pyu_values *values;
	struct pyu_error *values_error; // why no reader could be made (kept, reported each time)
	bool thread_values_read;
	struct pyu_locals_cache *names; // code objects' slot names (made on first use)
};

struct pyu_error *pyu_inspect_create(struct pyu_inspect **ret)
{
	struct pyu_inspect *in = calloc(1, sizeof(*in));
	if (!in)
		return &pyu_error_nomem;
	pyu_value_limits_default(&in->limits);
	*ret = in;
	return NULL;
}

static void drop_values(struct pyu_inspect *in)
{
	pyu_values_destroy(in->values);
	in->values = NULL;
	pyu_error_destroy(in->values_error);
	in->values_error = NULL;
}

void pyu_inspect_destroy(struct pyu_inspect *in)
{
	if (!in)
		return;
	drop_values(in);
	pyu_locals_cache_destroy(in->names);
	free(in);
}

struct pyu_error *pyu_inspect_set_limit(struct pyu_inspect *in, uint32_t which, uint64_t value)
{
	struct pyu_value_limits def;
	pyu_value_limits_default(&def);
	uint32_t *field, dflt;
	switch (which) {
	case PYU_LIMIT_DEPTH: field = &in->limits.depth, dflt = def.depth; break;
	case PYU_LIMIT_ITEMS: field = &in->limits.items, dflt = def.items; break;
	case PYU_LIMIT_CHARS: field = &in->limits.chars, dflt = def.chars; break;
	case PYU_LIMIT_DIGITS: field = &in->limits.digits, dflt = def.digits; break;
	case PYU_LIMIT_OUTPUT: field = &in->limits.output, dflt = def.output; break;
	default:
		return pyu_error_create(PYU_ERR_ARGUMENT, "unknown limit %u", which);
	}
	uint32_t v = !value ? dflt : value > UINT32_MAX ? UINT32_MAX : (uint32_t)value;
	if (*field != v) {
		*field = v;
		drop_values(in); // remade with the new bounds on next use
	}
	return NULL;
}

// The current line of the frame at @frame among the snapshot's threads (@arg), -1 when none
// runs it.
static int64_t snapshot_frame_line(void *arg, uint64_t frame)
{
	const struct pyu_stacks *s = arg;
	for (uint32_t i = 0; i < s->thread_count; i++)
		for (uint32_t j = 0; j < s->threads[i].frame_count; j++) {
			const struct pyu_frame_info *f = &s->threads[i].frames[j];
			if (f->kind == PYU_FRAME_PYTHON && f->frame_address == frame)
				return f->loc.line == PYU_NO_LINE ? -1 : f->loc.line;
		}
	return -1;
}

struct pyu_error *pyu_stacks_values(const struct pyu_stacks *s, struct pyu_values **ret)
{
	struct pyu_inspect *in = s->inspect;
	if (!in || !s->runtime)
		return pyu_error_create(PYU_ERR_ARGUMENT, "the snapshot has no runtime");
	if (!in->values && !in->values_error) {
		pyu_target_prefetch_late(s->target);
		in->values_error = pyu_values_create(s->target, s->runtime, &in->limits,
						     &in->values);
		if (!in->values_error)
			pyu_values_set_frame_lines(in->values, snapshot_frame_line, (void *)s);
	}
	if (in->values_error) {
		const struct pyu_error *e = in->values_error;
		return pyu_error_create(e->code, "%s", pyu_error_message(e));
	}
	*ret = in->values;
	return NULL;
}

// ---- thread names and exceptions ----------------------------------------------------------

static bool is_none(struct pyu_values *v, uint64_t addr)
{
	char *name = NULL;
	struct pyu_error *err = pyu_value_type_name(v, addr, &name);
	bool none = !err && !strcmp(name, "NoneType");
	pyu_error_destroy(err);
	free(name);
	return none;
}

// Frames at the bottom of a thread looked at for threading.py's (a Thread's thread starts in
// _bootstrap, _bootstrap_inner, run) or a module body's, and threads looked at.
#define THREADING_FRAMES 4
#define THREADING_THREADS 64
#define THREADING_TRIES 8 // frames whose globals are looked into

static bool is_threading_file(const char *file)
{
	static const char name[] = "threading.py";
	size_t n = file ? strlen(file) : 0, k = sizeof(name) - 1;
	return n >= k && !strcmp(file + n - k, name) && (n == k || file[n - k - 1] == '/');
}

// Whether the str object @name reads "threading". Cannot fail.
static bool names_threading(const struct pyu_stacks *s, uint64_t name)
{
	char *text = NULL;
	struct pyu_error *err = pyu_read_str(s->target, &s->runtime->layout, name, 64, &text);
	bool ok = !err && !strcmp(text, "threading");
	pyu_error_destroy(err);
	free(text);
	return ok;
}

// threading._active from the globals @globals of frame @f when they are the threading module's
// own (threading.py's code) or hold it (a module body's, as __main__'s that imported it); 0
// when not. Cannot fail.
static uint64_t active_from_globals(const struct pyu_stacks *s, struct pyu_values *v,
				    const struct pyu_code_info *c, uint64_t globals)
{
	uint64_t name = 0, module = 0, active = 0;
	struct pyu_error *err;
	if (is_threading_file(c->filename)) {
		err = pyu_dict_get_str(v, globals, "__name__", &name);
		if (!err && names_threading(s, name))
			err = pyu_dict_get_str(v, globals, "_active", &active);
	} else {
		err = pyu_dict_get_str(v, globals, "threading", &module);
		if (!err)
			err = pyu_object_getattr(v, module, "__name__", &name, NULL);
		if (!err && names_threading(s, name))
			err = pyu_object_getattr(v, module, "_active", &active, NULL);
	}
	uint64_t ret = err ? 0 : active;
	pyu_error_destroy(err);
	return ret;
}

// threading._active found from a frame at the bottom of a thread of the interpreter at @interp
// (threading.py's, or a module body's that imported threading): so found without sys.modules,
// whose keys' pages (41 of them, at half a microsecond each, for 61 modules) were most of what
// thread names cost. 0 when no such frame. Cannot fail.
static uint64_t active_from_frames(const struct pyu_stacks *s, struct pyu_values *v,
				   uint64_t interp)
{
	const struct pyu_layout *l = &s->runtime->layout;
	int32_t off = l->chain == PYU_CHAIN_FRAME_OBJECT ? l->frame.f_globals : l->iframe.f_globals;
	if (off == PYU_NO_FIELD)
		return 0;
	uint32_t tries = 0;
	for (uint32_t i = 0, seen = 0; i < s->thread_count && seen < THREADING_THREADS &&
				       tries < THREADING_TRIES; i++) {
		const struct pyu_thread_info *th = &s->threads[i];
		if (th->interp_address != interp || !th->frame_count)
			continue;
		seen++;
		for (uint32_t k = 0; k < THREADING_FRAMES && k < th->frame_count &&
				    tries < THREADING_TRIES; k++) {
			const struct pyu_frame_info *f = &th->frames[th->frame_count - 1 - k];
			if (f->kind != PYU_FRAME_PYTHON || f->code < 0 ||
			    (uint32_t)f->code >= s->code_count)
				continue;
			const struct pyu_code_info *c = &s->codes[f->code];
			if (!is_threading_file(c->filename) &&
			    (!c->name || strcmp(c->name, "<module>") != 0))
				continue;
			tries++;
			uint64_t globals = 0, active = 0;
			struct pyu_error *err = pyu_target_read_u64(s->target, f->frame_address +
								    (uint64_t)off, &globals);
			if (!err && globals)
				active = active_from_globals(s, v, c, globals);
			pyu_error_destroy(err);
			if (active)
				return active;
		}
	}
	return 0;
}

// threading._active of the interpreter at @interp, or 0. Cannot fail.
static uint64_t threading_active(const struct pyu_stacks *s, struct pyu_values *v,
				 uint64_t interp)
{
	const struct pyu_layout *l = &s->runtime->layout;
	uint64_t modules = 0, module = 0, active = 0;
	if (!interp)
		return 0;
	if ((active = active_from_frames(s, v, interp)) != 0)
		return active;
	if (l->interp.modules == PYU_NO_FIELD)
		return 0;
	struct pyu_error *err = pyu_target_read_u64(s->target, interp + (uint64_t)l->interp.modules,
						    &modules);
	if (!err && modules)
		err = pyu_dict_get_str(v, modules, "threading", &module);
	if (!err && module)
		err = pyu_object_getattr(v, module, "_active", &active, NULL);
	uint64_t ret = err ? 0 : active;
	pyu_error_destroy(err);
	return ret;
}

// The name object of the Thread object @thread, or 0 (none found). Cannot fail.
static uint64_t thread_name_object(struct pyu_values *v, uint64_t thread)
{
	uint64_t name = 0;
	if (!thread)
		return 0;
	// 3.x keeps the name in _name; 2.7's private __name is mangled.
	struct pyu_error *err = pyu_object_getattr(v, thread, "_name", &name, NULL);
	if (err && pyu_error_code(err) == PYU_ERR_NOT_FOUND) {
		pyu_error_destroy(err);
		err = pyu_object_getattr(v, thread, "_Thread__name", &name, NULL);
	}
	uint64_t ret = err ? 0 : name;
	pyu_error_destroy(err);
	return ret;
}

// The str object @name (0: none) into th->name. Cannot fail.
static void read_thread_name(const struct pyu_stacks *s, uint64_t name, struct pyu_thread_info *th)
{
	char *text = NULL;
	if (!name)
		return;
	struct pyu_error *err = pyu_read_str(s->target, &s->runtime->layout, name,
					     PYU_THREAD_NAME_MAX, &text);
	if (!err) {
		free(th->name);
		th->name = text;
	}
	pyu_error_destroy(err);
}

// Objects of many threads, read one after another: their first bytes' pages in gathered reads
// first (live processes), so that a hundred threads cost a few system calls, not hundreds.
#define THREAD_OBJECT_BYTES 256 // a Thread object's head and (3.11+) its inline values
#define THREAD_NAME_BYTES 128   // a str's head and a short name

// The exception object sys.exc_info() would give in the thread, or 0. Cannot fail.
static uint64_t handled_exception(const struct pyu_stacks *s, struct pyu_values *v,
				  const struct pyu_thread_info *th)
{
	const struct pyu_layout *l = &s->runtime->layout;
	struct pyu_target *t = s->target;
	uint64_t value = 0, type = 0;
	struct pyu_error *err = NULL;
	if (l->exc.tstate_info != PYU_NO_FIELD) {
		uint64_t item = 0;
		err = pyu_target_read_u64(t, th->tstate_address + (uint64_t)l->exc.tstate_info, &item);
		// The topmost item whose exception is set, like _PyErr_GetTopmostException().
		for (uint32_t n = 0; !err && item && n < PYU_EXC_CHAIN_MAX; n++) {
			value = type = 0;
			err = pyu_target_read_u64(t, item + (uint64_t)l->exc.item_value, &value);
			if (!err && l->exc.item_type != PYU_NO_FIELD)
				err = pyu_target_read_u64(t, item + (uint64_t)l->exc.item_type,
							  &type);
			if (err)
				break;
			uint64_t set = l->exc.item_type != PYU_NO_FIELD ? type : value;
			if (set && !is_none(v, set))
				break;
			value = 0;
			err = pyu_target_read_u64(t, item + (uint64_t)l->exc.item_previous, &item);
		}
	} else if (l->exc.tstate_type != PYU_NO_FIELD && l->exc.tstate_value != PYU_NO_FIELD) {
		err = pyu_target_read_u64(t, th->tstate_address + (uint64_t)l->exc.tstate_type,
					  &type);
		if (!err)
			err = pyu_target_read_u64(t, th->tstate_address +
						  (uint64_t)l->exc.tstate_value, &value);
		if (!err && (!type || is_none(v, type)))
			value = 0;
	}
	if (err) {
		pyu_error_destroy(err);
		return 0;
	}
	return value && !is_none(v, value) ? value : 0;
}

// The traceback of the exception @th handles (its __traceback__; 2.7: sys.exc_info()[2], kept
// by the thread state) into th->exc_tb. Cannot fail: out of memory leaves it empty.
static void read_exc_traceback(const struct pyu_stacks *s, struct pyu_values *v,
			       struct pyu_thread_info *th)
{
	const struct pyu_value_layout *vl = pyu_values_layout(v);
	uint64_t tb = 0;
	struct pyu_error *err = NULL;
	if (vl->exc_traceback != PYU_NO_FIELD)
		err = pyu_target_read_u64(s->target, th->exc_address + (uint64_t)vl->exc_traceback,
					  &tb);
	else if (vl->tstate_exc_traceback != PYU_NO_FIELD)
		err = pyu_target_read_u64(s->target, th->tstate_address +
					  (uint64_t)vl->tstate_exc_traceback, &tb);
	if (!err && tb && !is_none(v, tb))
		err = pyu_traceback_read(s->target, &s->runtime->layout, vl, tb, &th->exc_tb);
	pyu_error_destroy(err);
}

void pyu_stacks_read_thread_values(const struct pyu_stacks *s)
{
	struct pyu_values *v;
	if (!s || !s->inspect || s->inspect->thread_values_read)
		return;
	s->inspect->thread_values_read = true;
	struct pyu_error *err = pyu_stacks_values(s, &v);
	if (err) {
		pyu_error_destroy(err);
		return;
	}
	// Each thread's Thread object, from one pass over threading._active per run of threads
	// of one interpreter.
	int64_t *idents = s->thread_count ? malloc(s->thread_count * sizeof(*idents)) : NULL;
	uint64_t *objs = s->thread_count ? calloc(s->thread_count, sizeof(*objs)) : NULL;
	for (uint32_t i = 0; idents && objs && i < s->thread_count;) {
		uint64_t interp = s->threads[i].interp_address;
		uint32_t end = i;
		while (end < s->thread_count && s->threads[end].interp_address == interp) {
			uint64_t id = s->threads[end].thread_id;
			idents[end++] = id > INT64_MAX ? -1 : (int64_t)id; // -1: no thread's ident
		}
		uint64_t active = threading_active(s, v, interp);
		if (active) {
			err = pyu_dict_get_ints(v, active, idents + i, end - i, objs + i);
			pyu_error_destroy(err);
		}
		i = end;
	}
	uint64_t *names = objs ? calloc(s->thread_count, sizeof(*names)) : NULL;
	if (names) {
		pyu_target_prefetch_scattered(s->target, objs, s->thread_count, THREAD_OBJECT_BYTES);
		for (uint32_t i = 0; i < s->thread_count; i++)
			names[i] = thread_name_object(v, objs[i]);
		pyu_target_prefetch_scattered(s->target, names, s->thread_count, THREAD_NAME_BYTES);
	}
	const struct pyu_layout *l = &s->runtime->layout;
	int32_t exc_field = l->exc.tstate_info != PYU_NO_FIELD ? l->exc.tstate_info :
			    l->exc.tstate_type;
	if (objs && exc_field != PYU_NO_FIELD) { // objs: a scratch array of the right size
		for (uint32_t i = 0; i < s->thread_count; i++)
			objs[i] = s->threads[i].tstate_address + (uint64_t)exc_field;
		pyu_target_prefetch_scattered(s->target, objs, s->thread_count, 16);
	}
	for (uint32_t i = 0; i < s->thread_count; i++) {
		struct pyu_thread_info *th = &s->threads[i];
		read_thread_name(s, names ? names[i] : 0, th);
		uint64_t exc = handled_exception(s, v, th);
		if (!exc)
			continue;
		struct pyu_strbuf sb;
		pyu_strbuf_init(&sb, PYU_STRBUF_MAX);
		bool truncated = false;
		pyu_value_repr(v, exc, &sb, &truncated);
		char *repr = NULL, *type = NULL;
		err = pyu_strbuf_finish(&sb, &repr);
		if (!err)
			err = pyu_value_type_name(v, exc, &type);
		if (err) {
			pyu_error_destroy(err);
			free(repr);
			continue;
		}
		th->exc_address = exc;
		th->exc_repr = repr;
		th->exc_type = type;
		th->exc_truncated = truncated;
		read_exc_traceback(s, v, th);
		err = pyu_exc_chain_read(s->target, &s->runtime->layout, v, th->interp_address, exc,
					 &th->exc_chain);
		pyu_error_destroy(err); // out of memory: no chain, the exception alone
	}
	free(idents);
	free(objs);
	free(names);
}

// ---- locals -------------------------------------------------------------------------------

void pyu_shown_locals_clear(struct pyu_shown_locals *sl)
{
	for (uint32_t i = 0; i < sl->count; i++) {
		free(sl->items[i].name);
		free(sl->items[i].type);
		free(sl->items[i].repr);
	}
	free(sl->items);
	memset(sl, 0, sizeof(*sl));
}

struct dict_walk {
	const struct pyu_stacks *s;
	struct pyu_locals *ls;
	uint32_t max;
	struct pyu_error *err;
};

// A locals dict entry: str keys only, as names (other keys cannot be names).
static bool visit_local(void *arg, uint64_t key, uint64_t value)
{
	struct dict_walk *w = arg;
	if (w->ls->count >= w->max) {
		w->ls->truncated = true;
		return false;
	}
	char *name = NULL;
	struct pyu_error *err = pyu_read_str(w->s->target, &w->s->runtime->layout, key,
					     PYU_LOCAL_NAME_MAX, &name);
	if (err) {
		pyu_error_destroy(err);
		return true;
	}
	w->err = pyu_locals_add(w->ls, name, PYU_LOCAL_DICT, value);
	free(name);
	return !w->err;
}

static struct pyu_error *frame_of(const struct pyu_stacks *s, uint32_t thread, uint32_t frame,
				  const struct pyu_frame_info **ret)
{
	if (!s || thread >= s->thread_count)
		return pyu_error_create(PYU_ERR_NOT_FOUND, "no such thread");
	const struct pyu_thread_info *th = &s->threads[thread];
	if (frame >= th->frame_count)
		return pyu_error_create(PYU_ERR_NOT_FOUND, "no Python frame #%u in this thread "
					"(it has %u)", frame, th->frame_count);
	const struct pyu_frame_info *f = &th->frames[frame];
	if (f->kind != PYU_FRAME_PYTHON || f->code < 0 || (uint32_t)f->code >= s->code_count)
		return pyu_error_create(PYU_ERR_NOT_FOUND, "frame #%u could not be read: %s",
					frame, f->reason ? f->reason : "no code object");
	*ret = f;
	return NULL;
}

// The frame's locals (a module or class body's dict walked too). On error, *ret unchanged.
static struct pyu_error *raw_locals(const struct pyu_stacks *s, struct pyu_values *v,
				    const struct pyu_frame_info *f, struct pyu_locals *ret)
{
	const struct pyu_layout *l = &s->runtime->layout;
	struct pyu_locals ls;
	struct pyu_inspect *in = s->inspect;
	if (in && !in->names)
		in->names = pyu_locals_cache_create(); // NULL: read without a cache
	struct pyu_error *err = pyu_frame_locals(s->target, l, in ? in->names : NULL,
						 f->frame_address, s->codes[f->code].address,
						 PYU_LOCALS_MAX, &ls);
	if (err)
		return err;
	if (ls.dict) {
		struct dict_walk w = {s, &ls, PYU_LOCALS_MAX, NULL};
		err = pyu_dict_foreach(v, ls.dict, visit_local, &w);
		if (!err)
			err = w.err;
		else
			pyu_error_destroy(w.err);
		if (err) {
			pyu_locals_clear(&ls);
			return pyu_error_wrap(err, "reading the locals dict at 0x%" PRIx64,
					      ls.dict);
		}
	}
	*ret = ls;
	return NULL;
}

struct pyu_error *pyu_frame_shown_locals(const struct pyu_stacks *s, uint32_t thread,
					 uint32_t frame, struct pyu_shown_locals *ret)
{
	const struct pyu_frame_info *f;
	struct pyu_error *err = frame_of(s, thread, frame, &f);
	if (err)
		return err;
	return pyu_frame_info_shown_locals(s, f, ret);
}

struct pyu_error *pyu_frame_info_shown_locals(const struct pyu_stacks *s,
					      const struct pyu_frame_info *f,
					      struct pyu_shown_locals *ret)
{
	if (f->kind != PYU_FRAME_PYTHON || f->code < 0 || (uint32_t)f->code >= s->code_count)
		return pyu_error_create(PYU_ERR_NOT_FOUND, "the frame could not be read: %s",
					f->reason ? f->reason : "no code object");
	struct pyu_values *v;
	struct pyu_error *err = pyu_stacks_values(s, &v);
	if (err)
		return err;
	struct pyu_locals ls;
	err = raw_locals(s, v, f, &ls);
	if (err)
		return err;
	struct pyu_shown_locals sl = {0};
	sl.truncated = ls.truncated;
	sl.items = calloc(ls.count ? ls.count : 1, sizeof(*sl.items));
	if (!sl.items) {
		pyu_locals_clear(&ls);
		return &pyu_error_nomem;
	}
	for (uint32_t i = 0; i < ls.count && !err; i++) {
		struct pyu_shown_local *out = &sl.items[sl.count];
		struct pyu_strbuf sb;
		pyu_strbuf_init(&sb, PYU_STRBUF_MAX);
		pyu_value_repr(v, ls.items[i].address, &sb, &out->truncated);
		err = pyu_strbuf_finish(&sb, &out->repr);
		if (err)
			break;
		struct pyu_error *terr = pyu_value_type_name(v, ls.items[i].address, &out->type);
		pyu_error_destroy(terr); // the type stays unknown (NULL)
		out->name = ls.items[i].name;
		ls.items[i].name = NULL;
		out->kind = ls.items[i].kind;
		out->address = ls.items[i].address;
		sl.count++;
	}
	pyu_locals_clear(&ls);
	if (err) {
		pyu_shown_locals_clear(&sl);
		return err;
	}
	*ret = sl;
	return NULL;
}

// ---- py-print -----------------------------------------------------------------------------

static bool valid_name(const char *s, size_t n)
{
	if (!n)
		return false;
	for (size_t i = 0; i < n; i++) {
		unsigned char c = (unsigned char)s[i];
		if (!(c == '_' || c >= 0x80 || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
		      (i && c >= '0' && c <= '9')))
			return false;
	}
	return true;
}

// The builtins of a frame: f_builtins (a dict; 2.7 may hold the module), else the
// interpreter's builtins module. On error, *ret is unchanged.
static struct pyu_error *builtin_lookup(const struct pyu_stacks *s, struct pyu_values *v,
					uint64_t builtins, const char *name, uint64_t *ret)
{
	if (!builtins)
		return pyu_error_create(PYU_ERR_NOT_FOUND, "no builtins");
	struct pyu_error *err = pyu_dict_get_str(v, builtins, name, ret);
	if (err && pyu_error_code(err) != PYU_ERR_NOT_FOUND) {
		// Not a dict: a module (2.7 frames may carry the __builtin__ module).
		pyu_error_destroy(err);
		err = pyu_object_getattr(v, builtins, name, ret, NULL);
	}
	(void)s;
	return err;
}

struct pyu_error *pyu_frame_lookup(const struct pyu_stacks *s, uint32_t thread, uint32_t frame,
				   const char *path, char **ret_where, uint64_t *ret_addr)
{
	const struct pyu_frame_info *f;
	struct pyu_values *v;
	if (!path)
		return pyu_error_create(PYU_ERR_ARGUMENT, "no name given");
	const char *dot = strchr(path, '.');
	size_t first_len = dot ? (size_t)(dot - path) : strlen(path);
	uint32_t parts = 0;
	for (const char *p = path; p; parts++) {
		const char *end = strchr(p, '.');
		if (parts > PYU_PATH_PARTS_MAX)
			return pyu_error_create(PYU_ERR_ARGUMENT, "more than %d attributes in '%s'",
						PYU_PATH_PARTS_MAX, path);
		if (!valid_name(p, end ? (size_t)(end - p) : strlen(p)))
			return pyu_error_create(PYU_ERR_ARGUMENT,
						"'%s' is not a NAME[.ATTR...] path", path);
		p = end ? end + 1 : NULL;
	}
	struct pyu_error *err = frame_of(s, thread, frame, &f);
	if (!err)
		err = pyu_stacks_values(s, &v);
	if (err)
		return err;
	char *first = strndup(path, first_len);
	if (!first)
		return &pyu_error_nomem;
	struct pyu_locals ls;
	err = raw_locals(s, v, f, &ls);
	if (err) {
		free(first);
		return err;
	}
	uint64_t obj = 0;
	const char *scope = NULL;
	for (uint32_t i = 0; i < ls.count && !scope; i++) {
		if (strcmp(ls.items[i].name, first))
			continue;
		obj = ls.items[i].address;
		scope = ls.items[i].kind == PYU_LOCAL_FREE ? "enclosing" : "local";
	}
	if (!scope && ls.globals) {
		err = pyu_dict_get_str(v, ls.globals, first, &obj);
		if (!err)
			scope = "global";
		else if (pyu_error_code(err) == PYU_ERR_NOT_FOUND)
			pyu_error_destroy(err), err = NULL;
	}
	if (!scope && !err) {
		err = builtin_lookup(s, v, ls.builtins, first, &obj);
		if (!err)
			scope = "builtin";
		else if (pyu_error_code(err) == PYU_ERR_NOT_FOUND)
			pyu_error_destroy(err), err = NULL;
	}
	pyu_locals_clear(&ls);
	if (!scope && !err)
		err = pyu_error_create(PYU_ERR_NOT_FOUND, "no such name '%s' in frame #%u "
				       "(not a local, enclosing, global or builtin)", first, frame);
	if (err) {
		free(first);
		return err;
	}
	struct pyu_strbuf where;
	pyu_strbuf_init(&where, PYU_STRBUF_MAX);
	pyu_strbuf_printf(&where, "%s '", scope);
	pyu_strbuf_text(&where, first, first_len);
	pyu_strbuf_putc(&where, '\'');
	free(first);
	while (dot) { // parts were checked above: at most PYU_PATH_PARTS_MAX
		const char *attr = dot + 1;
		dot = strchr(attr, '.');
		size_t n = dot ? (size_t)(dot - attr) : strlen(attr);
		char *name = strndup(attr, n);
		if (!name) {
			err = &pyu_error_nomem;
			break;
		}
		const char *found = NULL;
		err = pyu_object_getattr(v, obj, name, &obj, &found);
		if (err && pyu_error_code(err) == PYU_ERR_NOT_FOUND) {
			pyu_error_destroy(err);
			err = pyu_error_create(PYU_ERR_NOT_FOUND,
					       "no attribute '%s' (looked in the instance and its "
					       "class dicts, without running code)", name);
		}
		if (!err) {
			pyu_strbuf_putc(&where, '.');
			pyu_strbuf_text(&where, name, n);
			pyu_strbuf_puts(&where, " (");
			pyu_strbuf_text(&where, found ? found : "?", strlen(found ? found : "?"));
			pyu_strbuf_putc(&where, ')');
		}
		free(name);
		if (err)
			break;
	}
	if (err) {
		pyu_strbuf_release(&where);
		return err;
	}
	char *text;
	err = pyu_strbuf_finish(&where, &text);
	if (err)
		return err;
	*ret_where = text;
	*ret_addr = obj;
	return NULL;
}
