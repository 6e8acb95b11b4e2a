// format_tasks.c - py-tasks / `pyunwind tasks`: the asyncio tasks of a snapshot (tasks.c) as
// text (each task's header, what it awaits and who awaits it, its stack as py-bt prints
// frames), as the await graph drawn as a tree (cycles marked), or as the JSON document of the
// README. Face layer: formats what the Model returns.
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "format.h"
#include "source.h"
#include "strbuf.h"
#include "tasks.h"
#include "include/pyunwind.h"

// Depth of the drawn tree (a deeper await chain is cut with a line saying so).
#define TREE_DEPTH_MAX 256

static bool shown(const struct pyu_stacks *s, const struct pyu_task *t, int32_t thread,
		  uint32_t flags)
{
	(void)s;
	return (flags & PYU_FMT_ALL) || thread < 0 || t->thread == thread;
}

// "Task 0x... "name"" (no newline).
static void task_label(struct pyu_strbuf *sb, const struct pyu_task *t)
{
	pyu_strbuf_printf(sb, "Task 0x%" PRIx64, t->address);
	if (t->name) {
		pyu_strbuf_puts(sb, " \"");
		pyu_strbuf_text(sb, t->name, strlen(t->name));
		pyu_strbuf_putc(sb, '"');
	}
}

static void thread_words(struct pyu_strbuf *sb, const struct pyu_stacks *s, int32_t thread,
			 const char *word)
{
	if (thread < 0 || (uint32_t)thread >= s->thread_count) {
		pyu_strbuf_puts(sb, "no running loop");
		return;
	}
	const struct pyu_thread_info *th = &s->threads[thread];
	pyu_strbuf_printf(sb, "%s 0x%" PRIx64, word, th->thread_id);
	if (th->native_thread_id >= 0)
		pyu_strbuf_printf(sb, " (tid %" PRId64 ")", th->native_thread_id);
}

static void await_words(struct pyu_strbuf *sb, const struct pyu_tasks *ts,
			const struct pyu_await *a)
{
	if (a->task >= 0) {
		task_label(sb, &ts->items[a->task]);
	} else {
		pyu_strbuf_text(sb, a->type ? a->type : "?", a->type ? strlen(a->type) : 1);
		pyu_strbuf_printf(sb, " at 0x%" PRIx64, a->address);
	}
	if (a->via != PYU_VIA_DIRECT)
		pyu_strbuf_printf(sb, " (%s)", pyu_await_via_name(a->via));
}

static void text_task(struct pyu_strbuf *sb, const struct pyu_stacks *s,
		      const struct pyu_tasks *ts, const struct pyu_task *t, uint32_t flags,
		      struct pyu_source_cache *cache)
{
	task_label(sb, t);
	if (t->error) {
		pyu_strbuf_puts(sb, ": <error: ");
		pyu_strbuf_text(sb, t->error, strlen(t->error));
		pyu_strbuf_puts(sb, ">\n");
		return;
	}
	pyu_strbuf_printf(sb, " %s, ", pyu_task_state_name(t->state));
	thread_words(sb, s, t->thread, "thread");
	pyu_strbuf_puts(sb, ":\n");
	for (uint32_t k = 0; k < t->awaiting_count; k++) {
		pyu_strbuf_puts(sb, "    awaiting ");
		await_words(sb, ts, &t->awaiting[k]);
		pyu_strbuf_putc(sb, '\n');
	}
	for (uint32_t k = 0; k < t->awaited_by_count; k++) {
		pyu_strbuf_puts(sb, "    awaited by ");
		task_label(sb, &ts->items[t->awaited_by[k]]);
		pyu_strbuf_putc(sb, '\n');
	}
	if (!t->frame_count && (t->state == PYU_TASK_PENDING || t->state == PYU_TASK_RUNNING))
		pyu_strbuf_puts(sb, "    (no coroutine frames)\n");
	for (uint32_t i = 0; i < t->frame_count; i++) {
		pyu_format_text_frame(sb, s, &t->frames[i], i, flags, cache);
		if (flags & PYU_FMT_LOCALS)
			pyu_format_text_frame_locals(sb, s, &t->frames[i]);
	}
	if (t->frames_omitted)
		pyu_strbuf_printf(sb, "(%u more outer coroutine frame%s not shown: limit %u)\n",
				  t->frames_omitted, t->frames_omitted == 1 ? "" : "s",
				  PYU_TASK_FRAMES_MAX);
}

// ---- the tree ---------------------------------------------------------------------------

struct tree {
	struct pyu_strbuf *sb;
	const struct pyu_stacks *s;
	const struct pyu_tasks *ts;
	uint8_t *state;      // per task: 0 not drawn, 1 on the current path, 2 drawn
	char prefix[4 * TREE_DEPTH_MAX + 16];
};

static void tree_line_words(struct tree *tr, const struct pyu_task *t)
{
	task_label(tr->sb, t);
	if (t->error) {
		pyu_strbuf_puts(tr->sb, " <error: ");
		pyu_strbuf_text(tr->sb, t->error, strlen(t->error));
		pyu_strbuf_putc(tr->sb, '>');
		return;
	}
	pyu_strbuf_printf(tr->sb, " %s", pyu_task_state_name(t->state));
	if (t->frame_count) {
		pyu_strbuf_puts(tr->sb, " at ");
		pyu_format_text_location(tr->sb, tr->s, &t->frames[0]);
	}
}

static void tree_node(struct tree *tr, uint32_t index, size_t depth)
{
	const struct pyu_task *t = &tr->ts->items[index];
	tree_line_words(tr, t);
	pyu_strbuf_putc(tr->sb, '\n');
	tr->state[index] = 1;
	size_t plen = strlen(tr->prefix);
	for (uint32_t k = 0; k < t->awaiting_count; k++) {
		const struct pyu_await *a = &t->awaiting[k];
		bool last = k + 1 == t->awaiting_count;
		pyu_strbuf_puts(tr->sb, tr->prefix);
		pyu_strbuf_puts(tr->sb, last ? "└── " : "├── ");
		if (a->via != PYU_VIA_DIRECT)
			pyu_strbuf_printf(tr->sb, "(%s) ", pyu_await_via_name(a->via));
		if (a->task < 0) {
			pyu_strbuf_text(tr->sb, a->type ? a->type : "?", a->type ? strlen(a->type) : 1);
			pyu_strbuf_printf(tr->sb, " at 0x%" PRIx64 "\n", a->address);
			continue;
		}
		const struct pyu_task *to = &tr->ts->items[a->task];
		if (tr->state[a->task] == 1) {
			task_label(tr->sb, to);
			pyu_strbuf_puts(tr->sb, " (cycle: awaits a task above)\n");
			continue;
		}
		if (tr->state[a->task] == 2) {
			task_label(tr->sb, to);
			pyu_strbuf_puts(tr->sb, " (shown above)\n");
			continue;
		}
		if (depth + 1 >= TREE_DEPTH_MAX) {
			task_label(tr->sb, to);
			pyu_strbuf_printf(tr->sb, " (tree depth limit of %d reached)\n", TREE_DEPTH_MAX);
			continue;
		}
		strcat(tr->prefix, last ? "    " : "│   ");
		tree_node(tr, (uint32_t)a->task, depth + 1);
		tr->prefix[plen] = '\0';
	}
	tr->state[index] = 2;
}

static struct pyu_error *text_tree(struct pyu_strbuf *sb, const struct pyu_stacks *s,
				   const struct pyu_tasks *ts, int32_t thread, uint32_t flags)
{
	struct tree tr = {sb, s, ts, calloc(ts->count ? ts->count : 1, 1), ""};
	if (!tr.state)
		return &pyu_error_nomem;
	// Roots: tasks nobody awaits; then whatever is left is only reachable through a cycle.
	for (int pass = 0, roots = 0; pass < 2; pass++) {
		for (uint32_t i = 0; i < ts->count; i++) {
			const struct pyu_task *t = &ts->items[i];
			if (tr.state[i] || !shown(s, t, thread, flags) || (!pass && t->awaited_by_count))
				continue;
			if (roots++)
				pyu_strbuf_putc(sb, '\n');
			if (pass)
				pyu_strbuf_puts(sb, "(in a cycle of awaits, awaited by no task outside "
						"it)\n");
			tree_node(&tr, i, 0);
		}
	}
	free(tr.state);
	return NULL;
}

// ---- JSON -------------------------------------------------------------------------------

static void json_task(struct pyu_strbuf *sb, const struct pyu_stacks *s,
		      const struct pyu_tasks *ts, const struct pyu_task *t, uint32_t flags)
{
	pyu_strbuf_printf(sb, "  {\"address\": \"0x%" PRIx64 "\", \"name\": ", t->address);
	pyu_strbuf_json_cstr(sb, t->name);
	pyu_strbuf_puts(sb, ", \"state\": ");
	pyu_strbuf_json_cstr(sb, t->error ? NULL : pyu_task_state_name(t->state));
	const struct pyu_thread_info *th = t->thread >= 0 && (uint32_t)t->thread < s->thread_count
						   ? &s->threads[t->thread] : NULL;
	if (th) {
		pyu_strbuf_printf(sb, ", \"thread_id\": %" PRIu64 ", \"native_thread_id\": ",
				  th->thread_id);
		if (th->native_thread_id >= 0)
			pyu_strbuf_printf(sb, "%" PRId64, th->native_thread_id);
		else
			pyu_strbuf_puts(sb, "null");
	} else {
		pyu_strbuf_puts(sb, ", \"thread_id\": null, \"native_thread_id\": null");
	}
	if (t->loop)
		pyu_strbuf_printf(sb, ", \"loop\": \"0x%" PRIx64 "\"", t->loop);
	else
		pyu_strbuf_puts(sb, ", \"loop\": null");
	pyu_strbuf_puts(sb, ", \"error\": ");
	pyu_strbuf_json_cstr(sb, t->error);
	pyu_strbuf_puts(sb, ",\n   \"awaiting\": [");
	for (uint32_t k = 0; k < t->awaiting_count; k++) {
		const struct pyu_await *a = &t->awaiting[k];
		pyu_strbuf_printf(sb, "%s{\"kind\": \"%s\", \"address\": \"0x%" PRIx64 "\", \"via\": "
				  "\"%s\", \"type\": ", k ? ", " : "", a->task >= 0 ? "task" : "future",
				  a->address, pyu_await_via_name(a->via));
		pyu_strbuf_json_cstr(sb, a->type);
		pyu_strbuf_putc(sb, '}');
	}
	pyu_strbuf_puts(sb, "],\n   \"awaited_by\": [");
	for (uint32_t k = 0; k < t->awaited_by_count; k++)
		pyu_strbuf_printf(sb, "%s\"0x%" PRIx64 "\"", k ? ", " : "",
				  ts->items[t->awaited_by[k]].address);
	pyu_strbuf_printf(sb, "],\n   \"frames_omitted\": %u, \"frames\": [", t->frames_omitted);
	for (uint32_t i = 0; i < t->frame_count; i++) {
		pyu_strbuf_puts(sb, i ? ",\n    " : "\n    ");
		if (flags & PYU_FMT_LOCALS)
			pyu_format_json_frame_locals(sb, s, &t->frames[i]);
		else
			pyu_format_json_frame(sb, s, &t->frames[i]);
	}
	pyu_strbuf_puts(sb, "]}");
}

static void json_strings(struct pyu_strbuf *sb, const char *key, char **list, uint32_t n,
			 char **more, uint32_t more_n)
{
	pyu_strbuf_printf(sb, ",\n \"%s\": [", key);
	for (uint32_t i = 0; i < n + more_n; i++) {
		if (i)
			pyu_strbuf_puts(sb, ", ");
		const char *x = i < n ? list[i] : more[i - n];
		pyu_strbuf_json_cstr(sb, x ? x : "?");
	}
	pyu_strbuf_putc(sb, ']');
}

static void json_document(struct pyu_strbuf *sb, const struct pyu_stacks *s,
			  const struct pyu_tasks *ts, int32_t thread, uint32_t flags)
{
	pyu_strbuf_puts(sb, "{\"pyunwind\": 1,\n \"python\": {\"version\": ");
	pyu_strbuf_json_cstr(sb, s->version);
	pyu_strbuf_printf(sb, ", \"hexversion\": %" PRIu64 ", \"debug_build\": %s, "
			  "\"free_threaded\": %s},\n \"tasks\": [",
			  s->hexversion, s->debug_build ? "true" : "false",
			  s->free_threaded ? "true" : "false");
	uint32_t n = 0;
	for (uint32_t i = 0; i < ts->count; i++) {
		if (!shown(s, &ts->items[i], thread, flags))
			continue;
		pyu_strbuf_puts(sb, n++ ? ",\n" : "\n");
		json_task(sb, s, ts, &ts->items[i], flags);
	}
	pyu_strbuf_putc(sb, ']');
	json_strings(sb, "errors", ts->errors, ts->error_count, s->errors, s->error_count);
	json_strings(sb, "notes", ts->notes, ts->note_count, s->notes, s->note_count);
	pyu_strbuf_puts(sb, "}\n");
}

PYU_PUBLIC struct pyu_error *pyu_format_tasks(struct pyu_stacks *s, int32_t thread,
					      uint32_t flags, char **ret)
{
	if (!s || !ret)
		return pyu_error_create(PYU_ERR_ARGUMENT, "no stacks");
	if (!(flags & PYU_FMT_ALL) && (thread < 0 || (uint32_t)thread >= s->thread_count))
		return pyu_error_create(PYU_ERR_NOT_FOUND, "no thread #%d (the target has %u)",
					thread, s->thread_count);
	struct pyu_tasks *ts;
	struct pyu_error *err = pyu_tasks_collect(s, &ts);
	if (err)
		return err;
	struct pyu_strbuf sb;
	pyu_strbuf_init(&sb, PYU_STRBUF_MAX);
	if (flags & PYU_FMT_JSON) {
		json_document(&sb, s, ts, thread, flags);
		pyu_tasks_destroy(ts);
		return pyu_strbuf_finish(&sb, ret);
	}
	uint32_t n = 0, elsewhere = 0;
	for (uint32_t i = 0; i < ts->count; i++)
		shown(s, &ts->items[i], thread, flags) ? n++ : elsewhere++;
	if (flags & PYU_FMT_ALL) {
		pyu_strbuf_printf(&sb, "Python %s, %u asyncio task%s\n", s->version, n,
				  n == 1 ? "" : "s");
	} else {
		thread_words(&sb, s, thread, "Thread");
		pyu_strbuf_printf(&sb, ": %u asyncio task%s", n, n == 1 ? "" : "s");
		if (elsewhere)
			pyu_strbuf_printf(&sb, " (%u more on other threads or on no running loop: "
					  "--all)", elsewhere);
		pyu_strbuf_putc(&sb, '\n');
	}
	if (flags & PYU_FMT_TREE) {
		if (n)
			pyu_strbuf_putc(&sb, '\n');
		err = text_tree(&sb, s, ts, thread, flags);
	} else {
		struct pyu_source_cache *cache = pyu_source_cache_create(s->target);
		for (uint32_t i = 0; i < ts->count; i++) {
			if (!shown(s, &ts->items[i], thread, flags))
				continue;
			pyu_strbuf_putc(&sb, '\n');
			text_task(&sb, s, ts, &ts->items[i], flags, cache);
		}
		pyu_source_cache_destroy(cache);
	}
	for (uint32_t i = 0; !err && i < ts->error_count; i++) {
		pyu_strbuf_puts(&sb, i ? "<error: " : "\n<error: ");
		pyu_strbuf_text(&sb, ts->errors[i], strlen(ts->errors[i]));
		pyu_strbuf_puts(&sb, ">\n");
	}
	pyu_tasks_destroy(ts);
	if (err) {
		pyu_strbuf_release(&sb);
		return err;
	}
	return pyu_strbuf_finish(&sb, ret);
}

// ---- one task's frames (py-task) ---------------------------------------------------------

// The task @which names: "0x..." its address, else its name. On error, *ret is unchanged.
static struct pyu_error *find_task(const struct pyu_tasks *ts, const char *which,
				   const struct pyu_task **ret)
{
	uint64_t addr = 0;
	if (!strncmp(which, "0x", 2) || !strncmp(which, "0X", 2)) {
		char *end;
		errno = 0;
		addr = strtoull(which, &end, 16);
		if (errno || *end || end == which + 2)
			addr = 0;
	}
	const struct pyu_task *found = NULL;
	uint32_t named = 0;
	for (uint32_t i = 0; i < ts->count; i++) {
		const struct pyu_task *t = &ts->items[i];
		if (addr && t->address == addr) {
			*ret = t;
			return NULL;
		}
		if (!addr && t->name && !strcmp(t->name, which) && !named++)
			found = t;
	}
	if (named > 1)
		return pyu_error_create(PYU_ERR_ARGUMENT, "%u tasks are named '%s': give the "
					"address of one", named, which);
	if (!found)
		return pyu_error_create(PYU_ERR_NOT_FOUND, "no asyncio task %s '%s' (py-tasks "
					"--all lists them)", addr ? "at" : "named", which);
	*ret = found;
	return NULL;
}

PYU_PUBLIC struct pyu_error *pyu_format_task_frame(struct pyu_stacks *s, const char *task,
						   uint32_t frame, uint32_t what,
						   const char *path, int64_t first, int64_t last,
						   uint32_t flags, uint32_t *ret_count, char **ret)
{
	if (!s || !task || !ret || !ret_count || what > PYU_TASK_PRINT ||
	    (what == PYU_TASK_PRINT && !path))
		return pyu_error_create(PYU_ERR_ARGUMENT, "bad arguments");
	struct pyu_tasks *ts;
	struct pyu_error *err = pyu_tasks_collect(s, &ts);
	if (err)
		return err;
	const struct pyu_task *t = NULL;
	err = find_task(ts, task, &t);
	if (!err && t->error)
		err = pyu_error_create(PYU_ERR_CORRUPT, "task 0x%" PRIx64 " could not be read: %s",
				       t->address, t->error);
	if (!err && !t->frame_count)
		err = pyu_error_create(PYU_ERR_NOT_FOUND, "task 0x%" PRIx64 " has no coroutine "
				       "frames (it is %s)", t->address, pyu_task_state_name(t->state));
	if (!err && frame >= t->frame_count)
		err = pyu_error_create(PYU_ERR_NOT_FOUND, "no frame #%u in task 0x%" PRIx64
				       " (it has %u)", frame, t->address, t->frame_count);
	// The task's frames lent to the snapshot as one more thread for the length of the call,
	// so that every command on a thread's frame works on them.
	struct pyu_thread_info *grown = NULL;
	if (!err && !(grown = realloc(s->threads, (s->thread_count + 1) * sizeof(*grown))))
		err = &pyu_error_nomem;
	if (err) {
		pyu_tasks_destroy(ts);
		return err;
	}
	s->threads = grown;
	uint32_t idx = s->thread_count;
	struct pyu_thread_info *pt = &s->threads[idx];
	memset(pt, 0, sizeof(*pt));
	pt->native_thread_id = -1;
	pt->holds_gil = -1;
	pt->interpreter_id = -1;
	pt->frames = t->frames;
	pt->frame_count = t->frame_count;
	if (t->thread >= 0 && (uint32_t)t->thread < s->thread_count)
		pt->interp_address = s->threads[t->thread].interp_address;
	s->thread_count++;
	char *text = NULL;
	switch (what) {
	case PYU_TASK_SELECT:
	case PYU_TASK_LINE:
		err = pyu_format_line(s, idx, frame, flags, &text);
		break;
	case PYU_TASK_LIST:
		err = pyu_format_list(s, idx, frame, first, last, &text);
		break;
	case PYU_TASK_LOCALS:
		err = pyu_format_locals(s, idx, frame, flags, &text);
		break;
	default:
		err = pyu_format_print(s, idx, frame, path, flags, &text);
		break;
	}
	s->thread_count--;
	memset(pt, 0, sizeof(*pt));
	if (!err && what == PYU_TASK_SELECT) {
		struct pyu_strbuf sb;
		pyu_strbuf_init(&sb, PYU_STRBUF_MAX);
		task_label(&sb, t);
		pyu_strbuf_printf(&sb, " %s, frame #%u of %u:\n", pyu_task_state_name(t->state),
				  frame, t->frame_count);
		pyu_strbuf_puts(&sb, text);
		pyu_free(text);
		text = NULL;
		err = pyu_strbuf_finish(&sb, &text);
	}
	*ret_count = t->frame_count;
	pyu_tasks_destroy(ts);
	if (err) {
		pyu_free(text);
		return err;
	}
	*ret = text;
	return NULL;
}
