// tasks.c - asyncio tasks read from target memory (tasks.h). Where the tasks are: the module
// asyncio.tasks keeps them in _all_tasks (3.7 - 3.11), _scheduled_tasks and _eager_tasks
// (3.12+; from 3.14 only tasks of the pure-Python Task), and 3.14+ link every C task into a
// list of the thread that made it (or of the interpreter, once that thread is gone), found
// through the .AsyncioDebug offsets. A task is read field by field when its type derives from
// the C Task (offsets in layouts/tasks_pyXY.c), else through its attributes. A suspended task's
// stack is its coroutine's frame, then each awaited coroutine's, as CPython's _PyGen_yf finds
// them; the running task's stack is its thread's frames down to its coroutine. Every list and
// chain is bounded and checked for cycles; an object that is not a task becomes an error entry.
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "asyncio_offsets.h"
#include "bytes.h"
#include "inspect.h"
#include "locals.h"
#include "objects.h"
#include "runtime.h"
#include "task_layout.h"
#include "tasks.h"
#include "value_layout.h"
#include "values.h"

#define NAME_MAX_CHARS 4096   // code points of a task name
#define TYPE_SETS_MAX 64      // interpreters whose asyncio types are told apart

const char *pyu_task_state_name(enum pyu_task_state state)
{
	switch (state) {
	case PYU_TASK_PENDING: return "pending";
	case PYU_TASK_RUNNING: return "running";
	case PYU_TASK_DONE: return "done";
	case PYU_TASK_CANCELLED: return "cancelled";
	}
	return "pending";
}

const char *pyu_await_via_name(enum pyu_await_via via)
{
	switch (via) {
	case PYU_VIA_DIRECT: return "await";
	case PYU_VIA_GATHER: return "gather";
	case PYU_VIA_TASKGROUP: return "taskgroup";
	}
	return "await";
}

// The asyncio types of one interpreter (3.12+ make them per module instance).
struct type_set {
	uint64_t c_task, c_future, py_task, py_future;
};

// Open-addressing set of addresses -> index.
struct addr_map {
	uint64_t *keys;
	uint32_t *values;
	size_t slots, used;
};

struct ctx {
	struct pyu_stacks *s;
	struct pyu_target *t;
	const struct pyu_layout *l;
	struct pyu_task_layout tl;
	struct pyu_values *v;
	struct pyu_walk w;
	bool lv_tag;
	bool have_lists;             // 3.14+ per-thread task lists (debug offsets or table)
	struct type_set types[TYPE_SETS_MAX];
	uint32_t type_sets;
	struct pyu_tasks *ts;
	struct addr_map index;       // task address -> index in ts->items
	uint64_t *running;           // tasks that are the current task of their loop
	size_t running_count, running_cap;
	uint64_t (*loops)[2];        // loop -> thread index (3.14 running loops)
	size_t loop_count, loop_cap;
};

static void add_string(char ***list, uint32_t *count, const char *fmt, va_list ap)
{
	char msg[1024];
	vsnprintf(msg, sizeof(msg), fmt, ap);
	if (*count >= 4096)
		return; // bounded: a damaged target must not grow the result without end
	char **grown = realloc(*list, (*count + 1) * sizeof(*grown));
	if (!grown)
		return;
	*list = grown;
	char *copy = strdup(msg);
	if (copy)
		(*list)[(*count)++] = copy;
}

static void add_error(struct ctx *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void add_error(struct ctx *c, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	add_string(&c->ts->errors, &c->ts->error_count, fmt, ap);
	va_end(ap);
}

static void add_note(struct ctx *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void add_note(struct ctx *c, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	add_string(&c->ts->notes, &c->ts->note_count, fmt, ap);
	va_end(ap);
}

// ---- address map ----------------------------------------------------------------------------

static size_t map_slot(const struct addr_map *m, uint64_t key)
{
	size_t i = (size_t)((key * 0x9e3779b97f4a7c15ull) >> 32) & (m->slots - 1);
	while (m->keys[i] && m->keys[i] != key)
		i = (i + 1) & (m->slots - 1);
	return i;
}

static int32_t map_get(const struct addr_map *m, uint64_t key)
{
	if (!m->slots || !key)
		return -1;
	size_t i = map_slot(m, key);
	return m->keys[i] == key ? (int32_t)m->values[i] : -1;
}

static struct pyu_error *map_put(struct addr_map *m, uint64_t key, uint32_t value)
{
	if ((m->used + 1) * 2 > m->slots) {
		struct addr_map n = {0};
		n.slots = m->slots ? m->slots * 2 : 256;
		n.keys = calloc(n.slots, sizeof(*n.keys));
		n.values = calloc(n.slots, sizeof(*n.values));
		if (!n.keys || !n.values) {
			free(n.keys);
			free(n.values);
			return &pyu_error_nomem;
		}
		for (size_t i = 0; i < m->slots; i++) {
			if (!m->keys[i])
				continue;
			size_t j = map_slot(&n, m->keys[i]);
			n.keys[j] = m->keys[i];
			n.values[j] = m->values[i];
		}
		n.used = m->used;
		free(m->keys);
		free(m->values);
		*m = n;
	}
	size_t i = map_slot(m, key);
	if (!m->keys[i])
		m->used++;
	m->keys[i] = key;
	m->values[i] = value;
	return NULL;
}

static void map_free(struct addr_map *m)
{
	free(m->keys);
	free(m->values);
	memset(m, 0, sizeof(*m));
}

// ---- small readers ------------------------------------------------------------------------

// type(obj).__name__ equals @name. Cannot fail (unreadable: false).
static bool type_named(struct ctx *c, uint64_t obj, const char *name)
{
	char *n = NULL;
	struct pyu_error *err = pyu_value_type_name(c->v, obj, &n);
	bool same = !err && strcmp(n, name) == 0;
	pyu_error_destroy(err);
	free(n);
	return same;
}

static bool derives_any(struct ctx *c, uint64_t obj, bool c_side, bool task)
{
	uint64_t type;
	struct pyu_error *err = pyu_object_type(c->v, obj, &type);
	if (err) {
		pyu_error_destroy(err);
		return false;
	}
	for (uint32_t i = 0; i < c->type_sets; i++) {
		const struct type_set *ts = &c->types[i];
		uint64_t base = c_side ? (task ? ts->c_task : ts->c_future)
				       : (task ? ts->py_task : ts->py_future);
		if (base && pyu_type_derives(c->v, type, base))
			return true;
	}
	return false;
}

static bool is_c_task(struct ctx *c, uint64_t obj)
{
	return derives_any(c, obj, true, true);
}

static bool is_task(struct ctx *c, uint64_t obj)
{
	return derives_any(c, obj, true, true) || derives_any(c, obj, false, true);
}

static struct pyu_error *read_u64(struct ctx *c, uint64_t addr, int32_t off, uint64_t *ret)
{
	if (off == PYU_NO_FIELD)
		return pyu_error_create(PYU_ERR_UNSUPPORTED, "field absent in this version");
	return pyu_target_read_u64(c->t, addr + (uint64_t)(int64_t)off, ret);
}

static struct pyu_error *read_i32(struct ctx *c, uint64_t addr, int32_t off, int32_t *ret)
{
	uint32_t u;
	if (off == PYU_NO_FIELD)
		return pyu_error_create(PYU_ERR_UNSUPPORTED, "field absent in this version");
	struct pyu_error *err = pyu_target_read_u32(c->t, addr + (uint64_t)(int64_t)off, &u);
	if (!err)
		*ret = (int32_t)u;
	return err;
}

// A task attribute of a pure-Python Task (0 for None). On error, *ret is unchanged.
static struct pyu_error *attr(struct ctx *c, uint64_t obj, const char *name, uint64_t *ret)
{
	uint64_t a;
	struct pyu_error *err = pyu_object_getattr(c->v, obj, name, &a, NULL);
	if (err)
		return err;
	*ret = pyu_object_is_none(c->v, a) ? 0 : a;
	return NULL;
}

// ---- finding tasks ------------------------------------------------------------------------

static struct pyu_error *add_task_entry(struct ctx *c, uint64_t addr, const char *error)
{
	struct pyu_tasks *ts = c->ts;
	if (map_get(&c->index, addr) >= 0)
		return NULL;
	if (ts->count >= PYU_TASKS_MAX) {
		if (ts->count == PYU_TASKS_MAX) {
			add_error(c, "more than %u tasks: the rest are left out", PYU_TASKS_MAX);
			ts->count++; // marks the error as given; undone at the end
		}
		return NULL;
	}
	if ((ts->count & (ts->count - 1)) == 0) {
		uint32_t cap = ts->count ? ts->count * 2 : 16;
		struct pyu_task *items = realloc(ts->items, cap * sizeof(*items));
		if (!items)
			return &pyu_error_nomem;
		ts->items = items;
	}
	struct pyu_task *task = &ts->items[ts->count];
	memset(task, 0, sizeof(*task));
	task->address = addr;
	task->thread = -1;
	if (error && !(task->error = strdup(error)))
		return &pyu_error_nomem;
	struct pyu_error *err = map_put(&c->index, addr, ts->count);
	if (err) {
		free(task->error);
		return err;
	}
	ts->count++;
	return NULL;
}

// A candidate found on a list: a task, or an error entry saying what it is instead.
static struct pyu_error *add_candidate(struct ctx *c, uint64_t addr, const char *where)
{
	if (!addr || map_get(&c->index, addr) >= 0)
		return NULL;
	if (is_task(c, addr))
		return add_task_entry(c, addr, NULL);
	char msg[256];
	snprintf(msg, sizeof(msg), "the object at 0x%" PRIx64 " on %s is not a Task (freed?)",
		 addr, where);
	return add_task_entry(c, addr, msg);
}

struct set_visit {
	struct ctx *c;
	bool weak;   // elements are weak references to tasks
	const char *where;
	struct pyu_error *err;
};

static bool visit_set_item(void *arg, uint64_t item)
{
	struct set_visit *sv = arg;
	uint64_t task = item;
	if (sv->weak) {
		struct pyu_error *err = read_u64(sv->c, item, sv->c->tl.weakref_object, &task);
		if (err) {
			pyu_error_destroy(err);
			return true;
		}
		if (!task || pyu_object_is_none(sv->c->v, task))
			return true; // the task is gone; its weak reference not yet dropped
	}
	sv->err = add_candidate(sv->c, task, sv->where);
	return sv->err == NULL || sv->err != &pyu_error_nomem;
}

// The tasks in asyncio.tasks.@name of the interpreter whose modules dict is @modules: a set,
// or a WeakSet (its .data: a set of weak references).
static struct pyu_error *tasks_in_module_set(struct ctx *c, uint64_t module, const char *name)
{
	uint64_t obj, data;
	struct pyu_error *err = pyu_object_getattr(c->v, module, name, &obj, NULL);
	if (err) { // this version keeps its tasks elsewhere
		pyu_error_destroy(err);
		return NULL;
	}
	char where[64];
	snprintf(where, sizeof(where), "asyncio.tasks.%s", name);
	struct set_visit sv = {c, false, where, NULL};
	if (type_named(c, obj, "WeakSet")) {
		err = pyu_object_getattr(c->v, obj, "data", &data, NULL);
		if (err) {
			add_error(c, "%s: %s", where, pyu_error_message(err));
			pyu_error_destroy(err);
			return NULL;
		}
		sv.weak = true;
		obj = data;
	}
	err = pyu_set_foreach(c->v, obj, visit_set_item, &sv);
	if (sv.err == &pyu_error_nomem) {
		pyu_error_destroy(err);
		return sv.err;
	}
	pyu_error_destroy(sv.err);
	if (err) {
		add_error(c, "%s at 0x%" PRIx64 ": %s", where, obj, pyu_error_message(err));
		pyu_error_destroy(err);
	}
	return NULL;
}

struct pyu_error *pyu_llist_foreach(struct pyu_target *t, uint64_t head, uint32_t max,
				    bool (*visit)(void *arg, uint64_t node), void *arg)
{
	uint64_t node, saved = head, power = 1, steps = 0;
	struct pyu_error *err = pyu_target_read_u64(t, head, &node);
	for (uint32_t n = 0; !err && node != head; n++) {
		if (!node)
			return pyu_error_create(PYU_ERR_CORRUPT, "the list at 0x%" PRIx64 " ends in "
						"a NULL link after %" PRIu32 " nodes", head, n);
		if (n >= max)
			return pyu_error_create(PYU_ERR_CORRUPT, "the list at 0x%" PRIx64 " is longer "
						"than %" PRIu32 " nodes", head, max);
		if (node == saved) // Brent: a loop that does not come back to the head
			return pyu_error_create(PYU_ERR_CORRUPT, "the list at 0x%" PRIx64 " loops at "
						"0x%" PRIx64 " without coming back to its head", head,
						node);
		if (++steps == power) {
			saved = node;
			power *= 2;
			steps = 0;
		}
		if (!visit(arg, node))
			return NULL;
		err = pyu_target_read_u64(t, node, &node);
	}
	return err ? pyu_error_wrap(err, "the list at 0x%" PRIx64, head) : NULL;
}

struct list_visit {
	struct ctx *c;
	const char *where;
	struct pyu_error *err;
};

static bool visit_list_node(void *arg, uint64_t node)
{
	struct list_visit *lv = arg;
	lv->err = add_candidate(lv->c, node - (uint64_t)lv->c->tl.task.node, lv->where);
	return !lv->err;
}

// A 3.14+ task list: struct llist_node {next, prev} heads, linked through each task's node.
static struct pyu_error *tasks_in_list(struct ctx *c, uint64_t head, const char *where)
{
	struct list_visit lv = {c, where, NULL};
	struct pyu_error *err = pyu_llist_foreach(c->t, head, PYU_TASKS_MAX, visit_list_node, &lv);
	if (lv.err) {
		pyu_error_destroy(err);
		return lv.err;
	}
	if (err) {
		add_error(c, "the task list of %s: %s", where, pyu_error_message(err));
		pyu_error_destroy(err);
	}
	return NULL;
}

// The asyncio types of the interpreter whose sys.modules is @modules.
static void learn_types(struct ctx *c, uint64_t modules)
{
	if (c->type_sets >= TYPE_SETS_MAX)
		return;
	struct type_set ts = {0};
	uint64_t mod;
	struct {
		const char *module, *name;
		uint64_t *out;
	} want[] = {
		{"_asyncio", "Task", &ts.c_task},
		{"_asyncio", "Future", &ts.c_future},
		{"asyncio.tasks", "_PyTask", &ts.py_task},
		{"asyncio.futures", "_PyFuture", &ts.py_future},
	};
	for (size_t i = 0; i < sizeof(want) / sizeof(want[0]); i++) {
		struct pyu_error *err = pyu_dict_get_str(c->v, modules, want[i].module, &mod);
		if (!err)
			err = pyu_object_getattr(c->v, mod, want[i].name, want[i].out, NULL);
		pyu_error_destroy(err);
	}
	// Without the C accelerator, asyncio.tasks.Task is the pure-Python class itself.
	if (!ts.py_task) {
		struct pyu_error *err = pyu_dict_get_str(c->v, modules, "asyncio.tasks", &mod);
		if (!err)
			err = pyu_object_getattr(c->v, mod, "Task", &ts.py_task, NULL);
		pyu_error_destroy(err);
	}
	if (ts.c_task || ts.py_task)
		c->types[c->type_sets++] = ts;
}

struct dict_visit {
	struct ctx *c;
	struct pyu_error *err;
};

static struct pyu_error *push_running(struct ctx *c, uint64_t task)
{
	if (c->running_count == c->running_cap) {
		size_t n = c->running_cap ? c->running_cap * 2 : 16;
		if (n > PYU_TASKS_MAX)
			return NULL;
		uint64_t *r = realloc(c->running, n * sizeof(*r));
		if (!r)
			return &pyu_error_nomem;
		c->running = r;
		c->running_cap = n;
	}
	c->running[c->running_count++] = task;
	return NULL;
}

static bool visit_current(void *arg, uint64_t key, uint64_t value)
{
	(void)key;
	struct dict_visit *dv = arg;
	dv->err = push_running(dv->c, value);
	return !dv->err;
}

static struct pyu_error *push_loop(struct ctx *c, uint64_t loop, uint32_t thread)
{
	if (c->loop_count == c->loop_cap) {
		size_t n = c->loop_cap ? c->loop_cap * 2 : 16;
		uint64_t (*l)[2] = realloc(c->loops, n * sizeof(*l));
		if (!l)
			return &pyu_error_nomem;
		c->loops = l;
		c->loop_cap = n;
	}
	c->loops[c->loop_count][0] = loop;
	c->loops[c->loop_count][1] = thread;
	c->loop_count++;
	return NULL;
}

// Every task of interpreter @interp: the module sets, its current-task dict and its types.
static struct pyu_error *scan_interpreter(struct ctx *c, uint64_t interp)
{
	uint64_t modules = 0, module = 0, current = 0;
	if (c->l->interp.modules == PYU_NO_FIELD)
		return NULL;
	struct pyu_error *err = pyu_target_read_u64(c->t, interp + (uint64_t)c->l->interp.modules,
						    &modules);
	if (!err && modules)
		learn_types(c, modules);
	if (!err && modules)
		err = pyu_dict_get_str(c->v, modules, "asyncio.tasks", &module);
	if (err || !module) {
		// No asyncio imported in this interpreter: no tasks, and not an error.
		bool absent = !err || pyu_error_code(err) == PYU_ERR_NOT_FOUND;
		if (!absent)
			add_error(c, "sys.modules of the interpreter at 0x%" PRIx64 ": %s", interp,
				  pyu_error_message(err));
		pyu_error_destroy(err);
		return NULL;
	}
	static const char *const sets[] = {"_all_tasks", "_scheduled_tasks", "_eager_tasks"};
	for (size_t i = 0; i < sizeof(sets) / sizeof(sets[0]); i++)
		if ((err = tasks_in_module_set(c, module, sets[i])) != NULL)
			return err;
	err = pyu_object_getattr(c->v, module, "_current_tasks", &current, NULL);
	if (!err) {
		struct dict_visit dv = {c, NULL};
		err = pyu_dict_foreach(c->v, current, visit_current, &dv);
		if (dv.err) {
			pyu_error_destroy(err);
			return dv.err;
		}
	}
	if (err && pyu_error_code(err) != PYU_ERR_NOT_FOUND)
		add_error(c, "asyncio.tasks._current_tasks: %s", pyu_error_message(err));
	pyu_error_destroy(err);
	return NULL;
}

// The running loop of the thread whose state is at @ts, whatever the loop's class (asyncio's,
// uvloop's ...): 3.13+ keep it in the thread state; before, the C accelerator keeps it in the
// thread state's dict, in a holder (3.7 - 3.11) or as is (3.12). 0 when none. On error, *ret
// is unchanged.
static struct pyu_error *running_loop(struct ctx *c, uint64_t ts, uint64_t *ret)
{
	uint64_t loop = 0, dict = 0;
	struct pyu_error *err;
	if (c->tl.tstate.running_loop != PYU_NO_FIELD) {
		if ((err = read_u64(c, ts, c->tl.tstate.running_loop, &loop)) != NULL)
			return err;
		*ret = loop && !pyu_object_is_none(c->v, loop) ? loop : 0;
		return NULL;
	}
	if ((err = read_u64(c, ts, c->tl.tstate.dict, &dict)) != NULL)
		return err;
	if (dict)
		err = pyu_dict_get_str(c->v, dict, "__asyncio_running_event_loop__", &loop);
	if (err && pyu_error_code(err) == PYU_ERR_NOT_FOUND) {
		pyu_error_destroy(err);
		err = NULL;
		loop = 0;
	}
	if (!err && loop && type_named(c, loop, "_RunningLoopHolder"))
		err = read_u64(c, loop, c->tl.running_holder_loop, &loop);
	if (err)
		return err;
	*ret = loop && !pyu_object_is_none(c->v, loop) ? loop : 0;
	return NULL;
}

// Every thread's running loop, so that a task's loop gives its thread.
static struct pyu_error *scan_running_loops(struct ctx *c)
{
	for (uint32_t i = 0; i < c->s->thread_count; i++) {
		const struct pyu_thread_info *th = &c->s->threads[i];
		uint64_t loop = 0;
		struct pyu_error *err = running_loop(c, th->tstate_address, &loop);
		if (!err && loop)
			err = push_loop(c, loop, i);
		if (err == &pyu_error_nomem)
			return err;
		if (err)
			add_error(c, "the running loop of thread 0x%" PRIx64 ": %s", th->thread_id,
				  pyu_error_message(err));
		pyu_error_destroy(err);
	}
	return NULL;
}

// 3.14+: each thread's task list and running task; each interpreter's list.
static struct pyu_error *scan_lists(struct ctx *c)
{
	struct pyu_stacks *s = c->s;
	char where[96];
	for (uint32_t i = 0; i < s->thread_count; i++) {
		const struct pyu_thread_info *th = &s->threads[i];
		uint64_t ts = th->tstate_address, task = 0;
		struct pyu_error *err = read_u64(c, ts, c->tl.tstate.running_task, &task);
		if (!err && task)
			err = push_running(c, task);
		if (err == &pyu_error_nomem)
			return err;
		pyu_error_destroy(err);
		snprintf(where, sizeof(where), "thread 0x%" PRIx64, th->thread_id);
		if ((err = tasks_in_list(c, ts + (uint64_t)c->tl.tstate.tasks_head, where)))
			return err;
	}
	for (uint32_t i = 0; i < s->thread_count; i++) {
		uint64_t interp = s->threads[i].interp_address;
		bool seen = false;
		for (uint32_t k = 0; k < i && !seen; k++)
			seen = s->threads[k].interp_address == interp;
		if (seen || !interp || c->tl.interp_tasks_head == PYU_NO_FIELD)
			continue;
		snprintf(where, sizeof(where), "the interpreter at 0x%" PRIx64, interp);
		struct pyu_error *err = tasks_in_list(c, interp + (uint64_t)c->tl.interp_tasks_head,
						      where);
		if (err)
			return err;
	}
	return NULL;
}

// ---- one task -----------------------------------------------------------------------------

// "Task-N" for a name kept as an int (3.12+ make the str on first get_name()).
static char *read_name(struct ctx *c, uint64_t obj)
{
	char *text = NULL;
	if (!obj)
		return NULL;
	if (type_named(c, obj, "str")) {
		struct pyu_error *err = pyu_read_str(c->t, c->l, obj, NAME_MAX_CHARS, &text);
		pyu_error_destroy(err);
		return text;
	}
	if (type_named(c, obj, "int")) {
		int64_t n;
		struct pyu_error *err = pyu_read_int(c->t, c->l, obj, c->lv_tag, &n);
		char buf[32];
		if (!err) {
			snprintf(buf, sizeof(buf), "Task-%" PRId64, n);
			text = strdup(buf);
		}
		pyu_error_destroy(err);
	}
	return text;
}

struct task_fields {
	uint64_t loop, coro, waiter, name;
	int32_t state; // as fut_state
};

static struct pyu_error *read_task_fields(struct ctx *c, uint64_t addr, struct task_fields *f)
{
	const struct pyu_task_layout *tl = &c->tl;
	struct pyu_error *err;
	memset(f, 0, sizeof(*f));
	if (is_c_task(c, addr)) {
		err = read_u64(c, addr, tl->fut.loop, &f->loop);
		if (!err)
			err = read_i32(c, addr, tl->fut.state, &f->state);
		if (!err)
			err = read_u64(c, addr, tl->task.coro, &f->coro);
		if (!err)
			err = read_u64(c, addr, tl->task.fut_waiter, &f->waiter);
		if (!err && tl->task.name != PYU_NO_FIELD)
			err = read_u64(c, addr, tl->task.name, &f->name);
		if (!err && f->waiter && pyu_object_is_none(c->v, f->waiter))
			f->waiter = 0;
		return err;
	}
	uint64_t state = 0;
	err = attr(c, addr, "_loop", &f->loop);
	if (!err)
		err = attr(c, addr, "_coro", &f->coro);
	if (!err)
		err = attr(c, addr, "_fut_waiter", &f->waiter);
	if (!err)
		err = attr(c, addr, "_state", &state);
	if (!err) {
		struct pyu_error *e2 = attr(c, addr, "_name", &f->name);
		pyu_error_destroy(e2); // 3.7 has no names
	}
	char *text = NULL;
	if (!err)
		err = pyu_read_str(c->t, c->l, state, 64, &text);
	if (!err)
		f->state = !strcmp(text, "CANCELLED") ? tl->fut_cancelled
			 : !strcmp(text, "FINISHED") ? tl->fut_finished : tl->fut_pending;
	free(text);
	return err;
}

static int32_t loop_thread(struct ctx *c, uint64_t loop)
{
	if (!loop)
		return -1;
	for (size_t i = 0; i < c->loop_count; i++)
		if (c->loops[i][0] == loop)
			return (int32_t)c->loops[i][1];
	// BaseEventLoop._thread_id: threading.get_ident() of the thread running it, else None.
	uint64_t id = 0;
	int64_t ident;
	struct pyu_error *err = attr(c, loop, "_thread_id", &id);
	if (!err && id)
		err = pyu_read_int(c->t, c->l, id, c->lv_tag, &ident);
	bool found = !err && id;
	pyu_error_destroy(err);
	if (!found)
		return -1;
	for (uint32_t i = 0; i < c->s->thread_count; i++)
		if (c->s->threads[i].thread_id == (uint64_t)ident && !c->s->threads[i].outer)
			return (int32_t)i;
	return -1;
}

// Where the frame of the generator or coroutine at @gen is; 0 when it has none (finished).
static struct pyu_error *gen_frame(struct ctx *c, uint64_t gen, uint64_t *ret)
{
	if (c->tl.gen.iframe != PYU_NO_FIELD) {
		*ret = gen + (uint64_t)c->tl.gen.iframe;
		return NULL;
	}
	return read_u64(c, gen, c->tl.gen.frame, ret);
}

// The object the suspended generator/coroutine at @gen (frame at @frame) awaits, as
// _PyGen_yf finds it; 0 when none. *live is set false when the generator has no frame left or
// is not suspended. On error, outputs are unspecified.
static struct pyu_error *awaited_object(struct ctx *c, uint64_t gen, uint64_t frame, bool *live,
					uint64_t *ret)
{
	const struct pyu_task_layout *tl = &c->tl;
	const struct pyu_layout *l = c->l;
	struct pyu_error *err = NULL;
	*ret = 0;
	*live = frame != 0;
	if (!frame)
		return NULL;
	if (tl->yf_rule == PYU_YF_LASTI_BYTES || tl->yf_rule == PYU_YF_LASTI_UNITS) {
		int32_t lasti = -1, depth = 0;
		uint64_t code, co_code, top = 0;
		uint8_t op;
		err = read_i32(c, frame, l->frame.f_lasti, &lasti);
		if (!err && tl->yf_rule == PYU_YF_LASTI_BYTES)
			err = read_u64(c, frame, tl->frame.stacktop, &top);
		if (!err && tl->yf_rule == PYU_YF_LASTI_BYTES && !top)
			*live = false; // f_stacktop NULL: the frame is running or finished
		if (err || !*live || lasti < 0)
			return err;
		uint64_t at = tl->yf_rule == PYU_YF_LASTI_BYTES ? (uint64_t)lasti + 2
								: 2 * ((uint64_t)lasti + 1);
		err = read_u64(c, frame, l->frame.f_code, &code);
		if (!err)
			err = read_u64(c, code, l->code.code, &co_code);
		if (!err)
			err = pyu_target_read_u8(c->t, co_code + (uint64_t)l->bytes_sval + at, &op);
		if (err || op != tl->yield_from_op)
			return err;
		if (tl->yf_rule == PYU_YF_LASTI_UNITS) {
			err = read_i32(c, frame, tl->frame.stackdepth, &depth);
			if (!err)
				err = read_u64(c, frame, tl->frame.valuestack, &top);
			if (err || depth <= 0)
				return err;
			top += 8 * (uint64_t)depth;
		}
		return pyu_target_read_u64(c->t, top - 8, ret);
	}
	uint8_t st;
	err = pyu_target_read_u8(c->t, gen + (uint64_t)tl->gen.frame_state, &st);
	if (err)
		return err;
	int32_t state = (int8_t)st;
	if (state >= tl->state_cleared) {
		*live = false;
		return NULL;
	}
	if (tl->yf_rule == PYU_YF_RESUME_ARG) {
		uint64_t ip;
		uint8_t unit[2];
		if (state != tl->state_suspended)
			return NULL;
		err = read_u64(c, frame, l->iframe.instr_ptr, &ip);
		if (!err)
			err = pyu_target_read(c->t, ip + 2, unit, 2);
		if (err)
			return err;
		bool resume = false;
		for (int i = 0; i < 3; i++)
			resume |= tl->resume_ops[i] >= 0 && unit[0] == tl->resume_ops[i];
		if (!resume || unit[1] < 2)
			return NULL;
	} else if (state != tl->state_yield_from && state != tl->state_yield_from_locked) {
		return NULL;
	}
	uint64_t slot;
	if (tl->iframe.stackpointer != PYU_NO_FIELD) {
		uint64_t sp;
		err = read_u64(c, frame, tl->iframe.stackpointer, &sp);
		slot = sp + (uint64_t)(8 * (int64_t)tl->stack_slot);
	} else {
		int32_t top = 0;
		err = read_i32(c, frame, tl->iframe.stacktop, &top);
		if (!err && (top <= 0 || top > (1 << 20)))
			return NULL;
		slot = frame + (uint64_t)l->iframe.localsplus + 8 * ((uint64_t)top - 1);
	}
	if (!err)
		err = pyu_target_read_u64(c->t, slot, ret);
	if (!err)
		*ret &= ~l->stackref_mask;
	return err;
}

static struct pyu_error *push_await(struct pyu_task *task, uint64_t addr, enum pyu_await_via via,
				    const char *type)
{
	if (task->awaiting_count >= PYU_TASK_AWAITS_MAX)
		return NULL;
	if ((task->awaiting_count & (task->awaiting_count - 1)) == 0) {
		uint32_t cap = task->awaiting_count ? task->awaiting_count * 2 : 4;
		struct pyu_await *a = realloc(task->awaiting, cap * sizeof(*a));
		if (!a)
			return &pyu_error_nomem;
		task->awaiting = a;
	}
	struct pyu_await *a = &task->awaiting[task->awaiting_count];
	a->address = addr;
	a->task = -1;
	a->via = via;
	a->type = type ? strdup(type) : NULL;
	if (type && !a->type)
		return &pyu_error_nomem;
	task->awaiting_count++;
	return NULL;
}

// The frames of thread @thread down to (and including) the frame at @coro_frame; false when
// that frame is not on the thread's stack.
static struct pyu_error *running_frames(struct ctx *c, uint32_t thread, uint64_t coro_frame,
					struct pyu_task *task, bool *found)
{
	const struct pyu_thread_info *th = &c->s->threads[thread];
	*found = false;
	for (uint32_t k = 0; k < th->frame_count; k++) {
		if (th->frames[k].frame_address != coro_frame || th->frames[k].kind != PYU_FRAME_PYTHON)
			continue;
		task->frames = calloc(k + 1, sizeof(*task->frames));
		if (!task->frames)
			return &pyu_error_nomem;
		for (uint32_t i = 0; i <= k; i++) {
			task->frames[i] = th->frames[i];
			task->frames[i].reason = NULL;
			if (th->frames[i].reason && !(task->frames[i].reason = strdup(th->frames[i].reason)))
				return &pyu_error_nomem;
			task->frame_count = i + 1;
		}
		*found = true;
		return NULL;
	}
	return NULL;
}

// Appends an error frame saying why the chain at @addr was not followed further.
static struct pyu_error *push_chain_error(struct pyu_thread_info *acc, uint64_t addr,
					  const char *msg)
{
	struct pyu_frame_info *frames = realloc(acc->frames,
						(acc->frame_count + 1) * sizeof(*frames));
	if (!frames)
		return &pyu_error_nomem;
	acc->frames = frames;
	struct pyu_frame_info *f = &frames[acc->frame_count];
	memset(f, 0, sizeof(*f));
	f->kind = PYU_FRAME_ERROR;
	f->code = -1;
	f->loc = (struct pyu_location){PYU_NO_LINE, PYU_NO_LINE, PYU_NO_COLUMN, PYU_NO_COLUMN};
	f->instruction_offset = -1;
	f->frame_address = addr;
	if (!(f->reason = strdup(msg)))
		return &pyu_error_nomem;
	acc->frame_count++;
	return NULL;
}

// Keeps the last (innermost) @keep frames of @acc, which holds a chain outermost first, and
// counts the others in *omitted. Cannot fail.
static void drop_outer_frames(struct pyu_thread_info *acc, uint32_t keep, uint32_t *omitted)
{
	if (acc->frame_count <= keep)
		return;
	uint32_t drop = acc->frame_count - keep;
	for (uint32_t k = 0; k < drop; k++)
		free(acc->frames[k].reason);
	memmove(acc->frames, acc->frames + drop, keep * sizeof(*acc->frames));
	acc->frame_count = keep;
	*omitted += drop;
}

// The awaitable objects of async generators hold no frame: what they drive is the generator.
// Its address into *ret, or 0 (@obj is not one of them, or drives nothing).
static struct pyu_error *awaitable_target(struct ctx *c, uint64_t obj, const char *type,
					  uint64_t *ret)
{
	int32_t off = !strcmp(type, "async_generator_asend") ? c->tl.agen.asend_gen
		    : !strcmp(type, "async_generator_athrow") ? c->tl.agen.athrow_gen
		    : !strcmp(type, "anext_awaitable") ? c->tl.agen.anext_wrapped : PYU_NO_FIELD;
	*ret = 0;
	if (off == PYU_NO_FIELD)
		return NULL;
	return read_u64(c, obj, off, ret);
}

// The suspended task's coroutine chain, outermost first into @acc: each coroutine's,
// generator's and async generator's frame, through what each awaits (an async generator
// through the asend / athrow / anext awaitable that drives it). Keeps the innermost
// PYU_TASK_FRAMES_MAX frames and counts the others in *omitted; a chain that loops or is
// longer than PYU_AWAIT_CHAIN_MAX links ends in an error frame. Fails only for out of memory.
static struct pyu_error *coroutine_chain(struct ctx *c, uint64_t coro,
					 struct pyu_thread_info *acc, uint32_t *omitted)
{
	uint64_t obj = coro, saved = 0, power = 1, steps = 0;
	char msg[160];
	*omitted = 0;
	for (uint32_t n = 0; obj; n++) {
		if (n >= PYU_AWAIT_CHAIN_MAX) {
			snprintf(msg, sizeof(msg), "await chain longer than %u links: not followed "
				 "further", PYU_AWAIT_CHAIN_MAX);
			return push_chain_error(acc, obj, msg);
		}
		if (obj == saved) {
			snprintf(msg, sizeof(msg), "the await chain loops at 0x%" PRIx64, obj);
			return push_chain_error(acc, obj, msg);
		}
		if (++steps == power) {
			saved = obj;
			power *= 2;
			steps = 0;
		}
		char *type = NULL;
		struct pyu_error *err = pyu_value_type_name(c->v, obj, &type);
		if (err) {
			pyu_error_destroy(err);
			return NULL;
		}
		uint64_t driven = 0;
		err = awaitable_target(c, obj, type, &driven);
		bool gen = !strcmp(type, "coroutine") || !strcmp(type, "generator") ||
			   !strcmp(type, "async_generator");
		free(type);
		if (err || driven) {
			pyu_error_destroy(err);
			obj = driven;
			continue;
		}
		if (!gen)
			return NULL; // a FutureIter or another awaitable: the task's waiter says more
		uint64_t frame = 0, next = 0;
		bool live = false;
		err = gen_frame(c, obj, &frame);
		if (!err)
			err = awaited_object(c, obj, frame, &live, &next);
		if (err) {
			pyu_error_destroy(err);
			next = 0; // its frame below still shows where it is
		}
		if (!frame || (!live && !next))
			return NULL;
		struct pyu_frame_start st = {0};
		st.first = frame;
		st.traced = true; // a frame object's f_lineno stands if set
		uint32_t before = acc->frame_count;
		err = pyu_walk_frames(&c->w, &st, NULL, acc);
		if (err)
			return err;
		// A suspended frame has no caller; should the walk have gone further (a frame
		// running after all), keep only its first frame.
		for (uint32_t k = before + 1; k < acc->frame_count; k++)
			free(acc->frames[k].reason);
		if (acc->frame_count > before + 1)
			acc->frame_count = before + 1;
		if (acc->frame_count >= 2 * PYU_TASK_FRAMES_MAX)
			drop_outer_frames(acc, PYU_TASK_FRAMES_MAX, omitted);
		obj = next;
	}
	return NULL;
}

struct seq_visit {
	struct ctx *c;
	struct pyu_task *task;
	enum pyu_await_via via;
	struct pyu_error *err;
};

static bool visit_awaited(void *arg, uint64_t item)
{
	struct seq_visit *sv = arg;
	char *type = NULL;
	bool task = is_task(sv->c, item);
	if (!task) {
		struct pyu_error *e = pyu_value_type_name(sv->c->v, item, &type);
		pyu_error_destroy(e);
	}
	sv->err = push_await(sv->task, item, sv->via, task ? NULL : type ? type : "?");
	free(type);
	return !sv->err;
}

// TaskGroup.__aexit__ (3.13+: _aexit) in the innermost frame: the group's tasks.
static struct pyu_error *taskgroup_tasks(struct ctx *c, struct pyu_task *task, bool *found)
{
	*found = false;
	if (!task->frame_count || task->frames[0].kind != PYU_FRAME_PYTHON)
		return NULL;
	const struct pyu_code_info *ci = &c->s->codes[task->frames[0].code];
	if (!ci->qualname || (strcmp(ci->qualname, "TaskGroup.__aexit__") &&
			      strcmp(ci->qualname, "TaskGroup._aexit")))
		return NULL;
	struct pyu_locals ls = {0};
	struct pyu_error *err = pyu_frame_locals(c->t, c->l, NULL, task->frames[0].frame_address,
						 ci->address, 0, &ls);
	uint64_t self = 0, tasks = 0;
	for (uint32_t i = 0; !err && i < ls.count; i++)
		if (!strcmp(ls.items[i].name, "self"))
			self = ls.items[i].address;
	pyu_locals_clear(&ls);
	if (!err && self)
		err = pyu_object_getattr(c->v, self, "_tasks", &tasks, NULL);
	if (err || !self) {
		pyu_error_destroy(err);
		return NULL;
	}
	struct seq_visit sv = {c, task, PYU_VIA_TASKGROUP, NULL};
	err = pyu_set_foreach(c->v, tasks, visit_awaited, &sv);
	pyu_error_destroy(err);
	*found = true;
	return sv.err;
}

static struct pyu_error *read_task(struct ctx *c, uint32_t index)
{
	struct pyu_task *task = &c->ts->items[index];
	struct task_fields f;
	struct pyu_error *err = read_task_fields(c, task->address, &f);
	if (err) {
		char msg[512];
		snprintf(msg, sizeof(msg), "%s", pyu_error_message(err));
		pyu_error_destroy(err);
		return (task->error = strdup(msg)) ? NULL : &pyu_error_nomem;
	}
	task->loop = f.loop;
	task->name = read_name(c, f.name);
	task->state = f.state == c->tl.fut_cancelled ? PYU_TASK_CANCELLED
		    : f.state == c->tl.fut_finished ? PYU_TASK_DONE : PYU_TASK_PENDING;
	for (size_t i = 0; i < c->running_count && task->state == PYU_TASK_PENDING; i++)
		if (c->running[i] == task->address)
			task->state = PYU_TASK_RUNNING;
	task->thread = loop_thread(c, f.loop);
	if (task->state == PYU_TASK_DONE || task->state == PYU_TASK_CANCELLED || !f.coro)
		return NULL;
	uint64_t coro_frame = 0;
	if (task->state == PYU_TASK_RUNNING) {
		bool found = false;
		err = gen_frame(c, f.coro, &coro_frame);
		for (uint32_t i = 0; !err && !found && i < c->s->thread_count; i++)
			if (task->thread < 0 || (uint32_t)task->thread == i)
				err = running_frames(c, i, coro_frame, task, &found);
		if (err == &pyu_error_nomem)
			return err;
		pyu_error_destroy(err);
		return NULL;
	}
	struct pyu_thread_info acc = {0};
	uint32_t omitted = 0;
	err = coroutine_chain(c, f.coro, &acc, &omitted);
	drop_outer_frames(&acc, PYU_TASK_FRAMES_MAX, &omitted);
	task->frames_omitted = omitted;
	// Innermost first.
	for (uint32_t i = 0; i < acc.frame_count / 2; i++) {
		struct pyu_frame_info x = acc.frames[i];
		acc.frames[i] = acc.frames[acc.frame_count - 1 - i];
		acc.frames[acc.frame_count - 1 - i] = x;
	}
	task->frames = acc.frames;
	task->frame_count = acc.frame_count;
	if (err)
		return err;
	bool group = false;
	if ((err = taskgroup_tasks(c, task, &group)) != NULL || group)
		return err;
	if (!f.waiter)
		return NULL;
	if (is_task(c, f.waiter))
		return push_await(task, f.waiter, PYU_VIA_DIRECT, NULL);
	if (type_named(c, f.waiter, "_GatheringFuture")) {
		uint64_t children = 0;
		err = attr(c, f.waiter, "_children", &children);
		if (!err && children) {
			struct seq_visit sv = {c, task, PYU_VIA_GATHER, NULL};
			err = pyu_sequence_foreach(c->v, children, visit_awaited, &sv);
			pyu_error_destroy(err);
			return sv.err;
		}
		pyu_error_destroy(err);
	}
	struct seq_visit sv = {c, task, PYU_VIA_DIRECT, NULL};
	visit_awaited(&sv, f.waiter);
	return sv.err;
}

struct registered_visit {
	struct ctx *c;
	uint64_t awaited;   // the task the set is of
	struct pyu_error *err;
};

// @waiter awaits the task registered_visit.awaited: an edge of the waiter's, unless it has it.
static bool visit_registered(void *arg, uint64_t waiter)
{
	struct registered_visit *rv = arg;
	int32_t i = map_get(&rv->c->index, waiter);
	if (i < 0)
		return true; // a future or an object that is no task we know: no edge between tasks
	struct pyu_task *w = &rv->c->ts->items[i];
	if (w->error || w->state != PYU_TASK_PENDING)
		return true;
	for (uint32_t k = 0; k < w->awaiting_count; k++)
		if (w->awaiting[k].address == rv->awaited)
			return true;
	rv->err = push_await(w, rv->awaited, PYU_VIA_DIRECT, NULL);
	return !rv->err;
}

// 3.14+: the edges asyncio records in each task's awaited-by field (one waiter, or a set of
// them), beyond those read from the waiters themselves: what staggered_race, asyncio.wait and
// future_add_to_awaited_by() register. Entries removed from the set are skipped.
static struct pyu_error *registered_edges(struct ctx *c)
{
	const struct pyu_task_layout *tl = &c->tl;
	for (uint32_t i = 0; i < c->ts->count; i++) {
		struct pyu_task *task = &c->ts->items[i];
		uint64_t by = 0;
		uint8_t is_set = 0;
		struct pyu_error *err;
		if (task->error)
			continue;
		if (is_c_task(c, task->address)) {
			if (tl->fut.awaited_by == PYU_NO_FIELD)
				return NULL; // before 3.14: not recorded
			err = read_u64(c, task->address, tl->fut.awaited_by, &by);
			if (!err && by)
				err = pyu_target_read_u8(c->t, task->address +
							 (uint64_t)tl->fut.awaited_by_is_set, &is_set);
		} else {
			err = attr(c, task->address, "_Future__asyncio_awaited_by", &by);
			if (err && pyu_error_code(err) == PYU_ERR_NOT_FOUND) {
				pyu_error_destroy(err); // a version that does not record them
				continue;
			}
			is_set = 1;
		}
		struct registered_visit rv = {c, task->address, NULL};
		if (!err && by && is_set)
			err = pyu_set_foreach(c->v, by, visit_registered, &rv);
		else if (!err && by)
			visit_registered(&rv, by);
		if (rv.err) {
			pyu_error_destroy(err);
			return rv.err;
		}
		if (err) {
			add_error(c, "who awaits task 0x%" PRIx64 ": %s", task->address,
				  pyu_error_message(err));
			pyu_error_destroy(err);
		}
	}
	return NULL;
}

// awaiting -> task indexes, and the reverse edges.
static struct pyu_error *link_tasks(struct ctx *c)
{
	struct pyu_tasks *ts = c->ts;
	for (uint32_t i = 0; i < ts->count; i++) {
		struct pyu_task *task = &ts->items[i];
		for (uint32_t k = 0; k < task->awaiting_count; k++) {
			struct pyu_await *a = &task->awaiting[k];
			a->task = map_get(&c->index, a->address);
			if (a->task < 0 || !a->address)
				continue;
			struct pyu_task *to = &ts->items[a->task];
			bool dup = false;
			for (uint32_t j = 0; j < to->awaited_by_count && !dup; j++)
				dup = to->awaited_by[j] == i;
			if (dup)
				continue;
			uint32_t *by = realloc(to->awaited_by, (to->awaited_by_count + 1) * sizeof(*by));
			if (!by)
				return &pyu_error_nomem;
			to->awaited_by = by;
			to->awaited_by[to->awaited_by_count++] = i;
		}
	}
	return NULL;
}

// 3.14+: the table's task and thread-state fields from the target's .AsyncioDebug block.
static void apply_asyncio_offsets(struct ctx *c)
{
	struct pyu_asyncio_offsets o;
	struct pyu_error *err = pyu_asyncio_offsets_find(c->t, &o);
	if (err) {
		// The thread-state fields are the same in release and debug builds; the interpreter
		// state's are not, so its list (tasks of threads that are gone) is left unread.
		add_note(c, "asyncio debug offsets: %s; the threads' task lists are read with the "
			 "built-in table for %s, the interpreter's is not read",
			 pyu_error_message(err), c->tl.name);
		pyu_error_destroy(err);
		c->tl.interp_tasks_head = PYU_NO_FIELD;
		return;
	}
	struct {
		int32_t *field;
		uint64_t value;
		const char *name;
	} f[] = {
		{&c->tl.task.name, o.task_name, "task_name"},
		{&c->tl.task.coro, o.task_coro, "task_coro"},
		{&c->tl.task.node, o.task_node, "task_node"},
		{&c->tl.fut.awaited_by, o.task_awaited_by, "task_awaited_by"},
		{&c->tl.fut.awaited_by_is_set, o.task_awaited_by_is_set, "task_awaited_by_is_set"},
		{&c->tl.interp_tasks_head, o.interp_tasks_head, "interpreter asyncio_tasks_head"},
		{&c->tl.tstate.running_loop, o.tstate_running_loop, "asyncio_running_loop"},
		{&c->tl.tstate.running_task, o.tstate_running_task, "asyncio_running_task"},
		{&c->tl.tstate.tasks_head, o.tstate_tasks_head, "thread asyncio_tasks_head"},
	};
	char diffs[512] = "";
	for (size_t i = 0; i < sizeof(f) / sizeof(f[0]); i++) {
		if (*f[i].field != (int32_t)f[i].value) {
			size_t n = strlen(diffs);
			snprintf(diffs + n, sizeof(diffs) - n, "%s%s %" PRId32 " -> %" PRIu64,
				 n ? ", " : "", f[i].name, *f[i].field, f[i].value);
		}
		*f[i].field = (int32_t)f[i].value;
	}
	add_note(c, "asyncio debug offsets from %s%s%s", o.where, diffs[0] ? "; differ from the "
		 "built-in table: " : "", diffs);
}

static void shift_object_fields(struct pyu_task_layout *tl, int32_t shift)
{
	int32_t *f[] = {&tl->fut.loop, &tl->fut.state, &tl->fut.awaited_by,
			&tl->fut.awaited_by_is_set, &tl->task.fut_waiter, &tl->task.coro,
			&tl->task.name, &tl->task.node, &tl->futureiter_future, &tl->weakref_object,
			&tl->gen.frame, &tl->gen.iframe, &tl->gen.frame_state, &tl->frame.stacktop,
			&tl->frame.valuestack, &tl->frame.stackdepth, &tl->agen.asend_gen,
			&tl->agen.athrow_gen, &tl->agen.anext_wrapped, &tl->running_holder_loop};
	for (size_t i = 0; i < sizeof(f) / sizeof(f[0]); i++)
		if (*f[i] != PYU_NO_FIELD)
			*f[i] += shift;
}

void pyu_tasks_destroy(struct pyu_tasks *ts)
{
	if (!ts)
		return;
	for (uint32_t i = 0; i < ts->count; i++) {
		struct pyu_task *t = &ts->items[i];
		free(t->name);
		for (uint32_t k = 0; k < t->frame_count; k++)
			free(t->frames[k].reason);
		free(t->frames);
		for (uint32_t k = 0; k < t->awaiting_count; k++)
			free(t->awaiting[k].type);
		free(t->awaiting);
		free(t->awaited_by);
		free(t->error);
	}
	free(ts->items);
	for (uint32_t i = 0; i < ts->error_count; i++)
		free(ts->errors[i]);
	free(ts->errors);
	for (uint32_t i = 0; i < ts->note_count; i++)
		free(ts->notes[i]);
	free(ts->notes);
	free(ts);
}

struct pyu_error *pyu_tasks_collect(struct pyu_stacks *s, struct pyu_tasks **ret)
{
	if (!s || !s->runtime || !s->code_cache)
		return pyu_error_create(PYU_ERR_ARGUMENT, "the snapshot has no runtime");
	const struct pyu_runtime *rt = s->runtime;
	const struct pyu_task_layout *tl = pyu_task_layout_for_version(rt->layout.version_hex);
	const struct pyu_value_layout *vl = pyu_value_layout_for_version(rt->layout.version_hex);
	const struct pyu_layout *base = pyu_layout_for_version(rt->layout.version_hex);
	if (!tl || !vl || !base)
		return pyu_error_create(PYU_ERR_UNSUPPORTED, "asyncio tasks are read on CPython "
					"3.7 and later, not %s", s->version);
	struct ctx c = {0};
	struct pyu_error *err = pyu_stacks_values(s, &c.v);
	if (err)
		return err;
	c.s = s;
	c.t = s->target;
	c.l = &rt->layout;
	c.tl = *tl;
	c.lv_tag = vl->int_kind == PYU_INT_LV_TAG;
	c.w = (struct pyu_walk){s->target, s->runtime, s, s->code_cache};
	int32_t shift = rt->layout.ob_type - base->ob_type; // Py_TRACE_REFS object header
	if (shift)
		shift_object_fields(&c.tl, shift);
	if (!(c.ts = calloc(1, sizeof(*c.ts))))
		return &pyu_error_nomem;
	for (uint32_t i = 0; !err && i < s->thread_count; i++) {
		uint64_t interp = s->threads[i].interp_address;
		bool seen = false;
		for (uint32_t k = 0; k < i && !seen; k++)
			seen = s->threads[k].interp_address == interp;
		if (!seen && interp)
			err = scan_interpreter(&c, interp);
	}
	// 3.14+ C tasks are on lists; without the _asyncio module loaded there are none.
	bool c_tasks = false;
	for (uint32_t i = 0; i < c.type_sets; i++)
		c_tasks |= c.types[i].c_task != 0;
	if (!err && c_tasks && c.tl.task.node != PYU_NO_FIELD) {
		apply_asyncio_offsets(&c);
		c.have_lists = c.tl.tstate.tasks_head != PYU_NO_FIELD;
	}
	if (!err && c.have_lists)
		err = scan_lists(&c);
	if (!err)
		err = scan_running_loops(&c);
	if (c.ts->count > PYU_TASKS_MAX)
		c.ts->count = PYU_TASKS_MAX;
	for (uint32_t i = 0; !err && i < c.ts->count; i++)
		if (!c.ts->items[i].error)
			err = read_task(&c, i);
	if (!err)
		err = registered_edges(&c);
	if (!err)
		err = link_tasks(&c);
	map_free(&c.index);
	free(c.running);
	free(c.loops);
	if (err) {
		pyu_tasks_destroy(c.ts);
		return err;
	}
	*ret = c.ts;
	return NULL;
}
