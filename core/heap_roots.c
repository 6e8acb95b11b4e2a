// heap_roots.c - the roots a heap walk starts from (heap_roots.h): modules of each
// interpreter's sys.modules, frame locals of every thread, exceptions being handled. Reads
// dicts and reprs through the snapshot's value reader; every list it makes is bounded.
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "heap.h"
#include "heap_roots.h"
#include "inspect.h"
#include "locals.h"
#include "runtime.h"
#include "strbuf.h"
#include "tasks.h"
#include "values.h"

#define ROOT_ERRORS_MAX 8
#define KEY_REPR_MAX 256

static void root_error(struct pyu_heap_roots *r, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

static void root_error(struct pyu_heap_roots *r, const char *fmt, ...)
{
	if (r->error_count == ROOT_ERRORS_MAX)
		return;
	if (!r->errors && !(r->errors = calloc(ROOT_ERRORS_MAX, sizeof(*r->errors))))
		return;
	char msg[512];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	if ((r->errors[r->error_count] = strdup(msg)) != NULL)
		r->error_count++;
}

void pyu_heap_roots_clear(struct pyu_heap_roots *r)
{
	if (!r)
		return;
	for (uint32_t i = 0; i < r->count; i++) {
		free(r->items[i].name);
		free(r->items[i].expr);
		free(r->items[i].local);
	}
	free(r->items);
	free(r->addrs);
	for (uint32_t i = 0; i < r->error_count; i++)
		free(r->errors[i]);
	free(r->errors);
	memset(r, 0, sizeof(*r));
}

// Appends a root; @name and @expr are copied, @local too when not NULL. False: out of memory.
static bool add_root(struct pyu_heap_roots *r, const struct pyu_heap_root *root)
{
	if (r->count == PYU_HEAP_MAX_ROOTS) {
		r->dropped++;
		return true;
	}
	if (r->count == r->cap) {
		uint32_t cap = r->cap ? r->cap * 2 : 64;
		struct pyu_heap_root *grown = realloc(r->items, cap * sizeof(*grown));
		if (!grown)
			return false;
		r->items = grown;
		r->cap = cap;
	}
	struct pyu_heap_root *it = &r->items[r->count];
	*it = *root;
	it->name = strdup(root->name);
	it->expr = strdup(root->expr);
	it->local = root->local ? strdup(root->local) : NULL;
	if (!it->name || !it->expr || (root->local && !it->local)) {
		free(it->name);
		free(it->expr);
		free(it->local);
		return false;
	}
	r->count++;
	return true;
}

struct module_walk {
	struct pyu_heap_roots *r;
	struct pyu_values *v;
	uint32_t interp;
	bool oom;
};

static bool visit_module(void *arg, uint64_t key, uint64_t value)
{
	struct module_walk *w = arg;
	struct pyu_strbuf kb;
	char *krepr = NULL;
	pyu_strbuf_init(&kb, KEY_REPR_MAX);
	pyu_value_repr(w->v, key, &kb, NULL);
	pyu_error_destroy(pyu_strbuf_finish(&kb, &krepr));
	if (!krepr) {
		w->oom = true;
		return false;
	}
	char expr[KEY_REPR_MAX + 32], name[KEY_REPR_MAX + 64];
	snprintf(expr, sizeof(expr), "sys.modules[%s]", krepr);
	if (w->interp)
		snprintf(name, sizeof(name), "%s of interpreter #%u", expr, w->interp);
	else
		snprintf(name, sizeof(name), "%s", expr);
	free(krepr);
	struct pyu_heap_root root = {.addr = value, .kind = PYU_ROOT_MODULE, .name = name,
				     .expr = expr, .frame = -1};
	if (!add_root(w->r, &root)) {
		w->oom = true;
		return false;
	}
	return true;
}

// Every module of every interpreter's sys.modules. False: out of memory.
static bool collect_modules(struct pyu_stacks *s, struct pyu_values *v, struct pyu_heap_roots *r)
{
	const struct pyu_runtime *rt = s->runtime;
	const struct pyu_layout *l = &rt->layout;
	if (l->interp.modules == PYU_NO_FIELD) {
		root_error(r, "sys.modules: not in the layout of CPython %s", l->name);
		return true;
	}
	uint64_t interp = 0;
	struct pyu_error *err = pyu_target_read_u64(s->target, rt->interp_head_addr, &interp);
	for (uint32_t i = 0; !err && interp && i < PYU_MAX_INTERPRETERS; i++) {
		uint64_t modules = 0;
		err = pyu_target_read_u64(s->target, interp + (uint64_t)l->interp.modules, &modules);
		if (err)
			break;
		struct module_walk w = {r, v, i, false};
		if (modules) {
			struct pyu_error *e = pyu_dict_foreach(v, modules, visit_module, &w);
			if (w.oom) {
				pyu_error_destroy(e);
				return false;
			}
			if (e) {
				root_error(r, "sys.modules of interpreter #%u at 0x%" PRIx64 ": %s", i,
					   modules, pyu_error_message(e));
				pyu_error_destroy(e);
			}
		}
		err = pyu_target_read_u64(s->target, interp + (uint64_t)l->interp.next, &interp);
	}
	if (err) {
		root_error(r, "the interpreter list: %s", pyu_error_message(err));
		pyu_error_destroy(err);
	}
	return true;
}

struct dict_walk {
	struct pyu_heap_roots *r;
	const struct pyu_heap_root *base;
	bool oom;
};

// Each local of one frame. False: out of memory.
static bool collect_frame(struct pyu_stacks *s, uint32_t ti, uint32_t fi,
			  struct pyu_heap_roots *r)
{
	const struct pyu_thread_info *th = &s->threads[ti];
	const struct pyu_frame_info *f = &th->frames[fi];
	if (f->kind != PYU_FRAME_PYTHON || f->code < 0 || (uint32_t)f->code >= s->code_count)
		return true;
	struct pyu_locals ls;
	struct pyu_error *err = pyu_frame_locals(s->target, &s->runtime->layout, NULL,
						 f->frame_address, s->codes[f->code].address,
						 PYU_LOCALS_MAX, &ls);
	if (err) {
		root_error(r, "the locals of frame #%u of thread 0x%" PRIx64 ": %s", fi,
			   th->thread_id, pyu_error_message(err));
		pyu_error_destroy(err);
		return true;
	}
	char name[PYU_LOCAL_NAME_MAX + 96];
	bool ok = true;
	for (uint32_t k = 0; ok && k < ls.count; k++) {
		snprintf(name, sizeof(name), "local '%s' of frame #%u of thread 0x%" PRIx64,
			 ls.items[k].name, fi, th->thread_id);
		struct pyu_heap_root root = {.addr = ls.items[k].address, .kind = PYU_ROOT_LOCAL,
					     .name = name, .expr = ls.items[k].name, .thread = ti,
					     .frame = (int32_t)fi, .frame_address = f->frame_address,
					     .local = ls.items[k].name};
		ok = add_root(r, &root);
	}
	// A module body's locals are its globals, which sys.modules reaches; a class body's or
	// exec()'s locals dict is a root of its own.
	if (ok && ls.dict && ls.dict != ls.globals) {
		snprintf(name, sizeof(name), "the locals of frame #%u of thread 0x%" PRIx64, fi,
			 th->thread_id);
		struct pyu_heap_root root = {.addr = ls.dict, .kind = PYU_ROOT_LOCALS, .name = name,
					     .expr = "locals()", .thread = ti, .frame = (int32_t)fi,
					     .frame_address = f->frame_address};
		ok = add_root(r, &root);
	}
	pyu_locals_clear(&ls);
	return ok;
}

// Each local of frame #@fi of the suspended task @task. False: out of memory.
static bool collect_task_frame(struct pyu_stacks *s, const struct pyu_task *task, uint32_t fi,
			       struct pyu_heap_roots *r)
{
	const struct pyu_frame_info *f = &task->frames[fi];
	if (f->kind != PYU_FRAME_PYTHON || f->code < 0 || (uint32_t)f->code >= s->code_count)
		return true;
	const struct pyu_code_info *code = &s->codes[f->code];
	const struct pyu_layout *l = &s->runtime->layout;
	int32_t flags = 0;
	struct pyu_error *err = pyu_target_read(s->target, code->address + (uint64_t)l->code.flags,
						&flags, 4);
	struct pyu_locals ls;
	if (!err)
		err = pyu_frame_locals(s->target, l, NULL, f->frame_address, code->address,
				       PYU_LOCALS_MAX, &ls);
	char tname[160];
	if (task->name)
		snprintf(tname, sizeof(tname), "task '%.120s'", task->name);
	else
		snprintf(tname, sizeof(tname), "task at 0x%" PRIx64, task->address);
	if (err) {
		root_error(r, "the locals of frame #%u of %s: %s", fi, tname, pyu_error_message(err));
		pyu_error_destroy(err);
		return true;
	}
	const char *fname = code->qualname ? code->qualname : code->name ? code->name : "?";
	char name[2 * PYU_LOCAL_NAME_MAX + 512];
	bool ok = true;
	for (uint32_t k = 0; ok && k < ls.count; k++) {
		snprintf(name, sizeof(name), "local '%s' of %s %s() (frame #%u of %s)",
			 ls.items[k].name, pyu_heap_frame_kind_name(pyu_heap_frame_kind(flags)),
			 fname, fi, tname);
		struct pyu_heap_root root = {.addr = ls.items[k].address, .kind = PYU_ROOT_TASK_LOCAL,
					     .name = name, .expr = ls.items[k].name,
					     .frame = (int32_t)fi, .frame_address = f->frame_address,
					     .local = ls.items[k].name};
		ok = add_root(r, &root);
	}
	pyu_locals_clear(&ls);
	return ok;
}

// The locals of every suspended asyncio task's coroutine chain (the running task's frames are
// its thread's). False: out of memory.
static bool collect_tasks(struct pyu_stacks *s, struct pyu_heap_roots *r)
{
	struct pyu_tasks *ts = NULL;
	struct pyu_error *err = pyu_tasks_collect(s, &ts);
	if (err) {
		bool oom = err == &pyu_error_nomem;
		if (!oom && pyu_error_code(err) != PYU_ERR_UNSUPPORTED)
			root_error(r, "asyncio tasks: %s", pyu_error_message(err));
		pyu_error_destroy(err);
		return !oom;
	}
	bool ok = true;
	for (uint32_t i = 0; ok && i < ts->count; i++) {
		const struct pyu_task *task = &ts->items[i];
		if (task->error || task->state != PYU_TASK_PENDING)
			continue;
		for (uint32_t fi = 0; ok && fi < task->frame_count; fi++)
			ok = collect_task_frame(s, task, fi, r);
	}
	pyu_tasks_destroy(ts);
	return ok;
}

struct pyu_error *pyu_heap_roots_collect(struct pyu_stacks *s, struct pyu_heap_roots *ret)
{
	if (!s || !s->runtime)
		return pyu_error_create(PYU_ERR_ARGUMENT, "no snapshot");
	struct pyu_values *v;
	struct pyu_error *err = pyu_stacks_values(s, &v);
	if (err)
		return err;
	struct pyu_heap_roots r;
	memset(&r, 0, sizeof(r));
	bool ok = collect_modules(s, v, &r);
	for (uint32_t ti = 0; ok && ti < s->thread_count; ti++)
		for (uint32_t fi = 0; ok && fi < s->threads[ti].frame_count; fi++)
			ok = collect_frame(s, ti, fi, &r);
	if (ok)
		ok = collect_tasks(s, &r);
	if (ok)
		pyu_stacks_read_thread_values(s);
	for (uint32_t ti = 0; ok && ti < s->thread_count; ti++) {
		const struct pyu_thread_info *th = &s->threads[ti];
		if (!th->exc_address)
			continue;
		char name[96];
		snprintf(name, sizeof(name), "the exception handled in thread 0x%" PRIx64,
			 th->thread_id);
		struct pyu_heap_root root = {.addr = th->exc_address, .kind = PYU_ROOT_EXCEPTION,
					     .name = name, .expr = "sys.exc_info()[1]", .thread = ti,
					     .frame = -1};
		ok = add_root(&r, &root);
	}
	if (ok && r.count && !(r.addrs = malloc(r.count * sizeof(*r.addrs))))
		ok = false;
	if (!ok) {
		pyu_heap_roots_clear(&r);
		return &pyu_error_nomem;
	}
	for (uint32_t i = 0; i < r.count; i++)
		r.addrs[i] = r.items[i].addr;
	*ret = r;
	return NULL;
}
