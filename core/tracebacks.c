// tracebacks.c - a handled exception's traceback (PyTracebackObject chain) read from target
// memory: code object name and file of each entry's frame, and its line by the rule of
// docs on Cython: Python code takes tb_lineno, or the line table at tb_lasti where the
// interpreter left tb_lineno to be computed later (3.12+); Cython's code (its frames carry an
// empty or fake line table and an offset that means nothing) takes tb_lineno, else the frame's
// f_lineno, else co_firstlineno. Every read is checked; the chain is bounded.
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "bytes.h"
#include "cython.h"
#include "linetable.h"
#include "objects.h"
#include "runtime.h"
#include "suggestions.h"
#include "tracebacks.h"
#include "values.h"

void pyu_traceback_clear(struct pyu_traceback *tb)
{
	for (uint32_t i = 0; i < tb->count; i++) {
		free(tb->entries[i].file);
		free(tb->entries[i].function);
	}
	free(tb->entries);
	free(tb->error);
	memset(tb, 0, sizeof(*tb));
}

static struct pyu_error *read_i32(struct pyu_target *t, uint64_t addr, int32_t *ret)
{
	uint32_t v;
	struct pyu_error *err = pyu_target_read_u32(t, addr, &v);
	if (!err)
		*ret = (int32_t)v;
	return err;
}

// The code object of the frame object @frame and the frame's f_lineno. On error, *code and
// *f_lineno are unchanged.
static struct pyu_error *frame_code(struct pyu_target *t, const struct pyu_layout *l,
				    const struct pyu_value_layout *vl, uint64_t frame,
				    uint64_t *code, int32_t *f_lineno)
{
	uint64_t c = 0, iframe = 0;
	int32_t lineno = 0;
	struct pyu_error *err = NULL;
	if (vl->frame_iframe != PYU_NO_FIELD && l->iframe.code != PYU_NO_FIELD) {
		err = pyu_target_read_u64(t, frame + (uint64_t)vl->frame_iframe, &iframe);
		if (!err && !iframe)
			err = pyu_error_create(PYU_ERR_CORRUPT, "frame object at 0x%" PRIx64
					       " has no interpreter frame", frame);
		if (!err)
			err = pyu_target_read_u64(t, iframe + (uint64_t)l->iframe.code, &c);
		c &= ~l->stackref_mask;
	} else if (l->frame.f_code != PYU_NO_FIELD) {
		err = pyu_target_read_u64(t, frame + (uint64_t)l->frame.f_code, &c);
	} else {
		err = pyu_error_create(PYU_ERR_UNSUPPORTED, "no way from a frame object to its code"
				       " in this version");
	}
	if (!err && l->frame.f_lineno != PYU_NO_FIELD)
		err = read_i32(t, frame + (uint64_t)l->frame.f_lineno, &lineno);
	if (!err && (!c || (c & 7)))
		err = pyu_error_create(PYU_ERR_CORRUPT, "bad code object pointer 0x%" PRIx64, c);
	if (err)
		return pyu_error_wrap(err, "reading the frame object at 0x%" PRIx64, frame);
	*code = c;
	*f_lineno = lineno;
	return NULL;
}

// The position of instruction byte offset @lasti in the code object whose fields are in @buf
// (line, end line and columns, as co_positions() gives them 3.11+; the line alone before), into
// *ret. False when the line table cannot be read or has nothing for @lasti (*ret untouched).
// Cannot fail otherwise.
static bool bytecode_position(struct pyu_target *t, const struct pyu_layout *l,
			      const uint8_t *buf, int32_t firstlineno, int64_t lasti,
			      struct pyu_location *ret)
{
	uint64_t code_len = 0;
	struct pyu_error *err = pyu_code_bytecode_len(t, l, buf, PYU_CODE_UNITS_MAX, &code_len);
	if (err) {
		pyu_error_destroy(err);
		return false;
	}
	uint8_t *table = NULL;
	size_t table_len = 0;
	err = pyu_read_bytes(t, l, pyu_get_u64(buf, l->code.linetable), PYU_TABLE_MAX, &table,
			     &table_len);
	if (err) {
		pyu_error_destroy(err);
		return false;
	}
	struct pyu_linetable lt = {table, table_len, firstlineno, l->linetable, code_len};
	struct pyu_location loc;
	enum pyu_lt_status st = pyu_linetable_lookup(&lt, lasti, &loc);
	free(table);
	if (st != PYU_LT_OK)
		return false;
	*ret = loc;
	return true;
}

// Fills @e from the traceback entry at @tb; *next is the entry after it. On error, @e holds
// what was read (to be cleared by the caller) and *next is unchanged.
static struct pyu_error *read_entry(struct pyu_target *t, const struct pyu_layout *l,
				    const struct pyu_value_layout *vl, uint64_t tb,
				    struct pyu_tb_entry *e, uint64_t *next)
{
	uint64_t frame = 0, after = 0, code = 0;
	int32_t lasti = 0, tb_lineno = 0, f_lineno = 0;
	struct pyu_error *err = pyu_target_read_u64(t, tb + (uint64_t)vl->tb.next, &after);
	if (!err)
		err = pyu_target_read_u64(t, tb + (uint64_t)vl->tb.frame, &frame);
	if (!err)
		err = read_i32(t, tb + (uint64_t)vl->tb.lasti, &lasti);
	if (!err)
		err = read_i32(t, tb + (uint64_t)vl->tb.lineno, &tb_lineno);
	if (!err && (!frame || (frame & 7)))
		err = pyu_error_create(PYU_ERR_CORRUPT, "bad frame pointer 0x%" PRIx64, frame);
	if (err)
		return pyu_error_wrap(err, "reading the traceback entry at 0x%" PRIx64, tb);
	err = frame_code(t, l, vl, frame, &code, &f_lineno);
	if (err)
		return err;
	uint8_t buf[PYU_LAYOUT_MAX_STRUCT];
	if ((size_t)l->code.size > sizeof(buf))
		return pyu_error_create(PYU_ERR_UNSUPPORTED, "code objects of %" PRId32 " bytes",
					l->code.size);
	err = pyu_target_read(t, code, buf, (size_t)l->code.size);
	if (!err)
		err = pyu_read_str(t, l, pyu_get_u64(buf, l->code.filename), PYU_NAME_MAX, &e->file);
	if (!err)
		err = pyu_read_str(t, l, pyu_get_u64(buf, l->code.name), PYU_NAME_MAX,
				   &e->function);
	if (err)
		return pyu_error_wrap(err, "reading the code object at 0x%" PRIx64, code);
	int32_t firstlineno = pyu_get_i32(buf, l->code.firstlineno);
	e->code = code;
	e->firstlineno = firstlineno;
	e->cython = pyu_cython_is_pyx_file(e->file);
	// Cython's offsets mean nothing; Python code's give the position (and 3.12+ the line).
	bool have_pos = !e->cython && lasti >= 0 &&
			bytecode_position(t, l, buf, firstlineno, lasti, &e->loc);
	if (tb_lineno > 0) {
		e->line = tb_lineno;
		e->line_from = PYU_TB_LINE_TB_LINENO;
	} else if (e->cython && f_lineno > 0) {
		e->line = f_lineno;
		e->line_from = PYU_TB_LINE_F_LINENO;
	} else if (e->cython && firstlineno > 0) {
		e->line = firstlineno;
		e->line_from = PYU_TB_LINE_FIRSTLINENO;
	} else if (!e->cython) {
		int64_t line = !have_pos ? -1 : e->loc.line != PYU_NO_LINE && e->loc.line > 0
			     ? e->loc.line : 0;
		e->line = line > 0 ? line : -1;
		e->line_from = line > 0 ? PYU_TB_LINE_BYTECODE
			     : line == 0 ? PYU_TB_LINE_NO_LINE : PYU_TB_LINE_NONE;
	}
	*next = after;
	return NULL;
}

struct pyu_error *pyu_traceback_read(struct pyu_target *t, const struct pyu_layout *l,
				     const struct pyu_value_layout *vl, uint64_t tb,
				     struct pyu_traceback *ret)
{
	struct pyu_traceback out = {0};
	memset(ret, 0, sizeof(*ret));
	if (vl->tb.next == PYU_NO_FIELD || vl->tb.frame == PYU_NO_FIELD ||
	    vl->tb.lasti == PYU_NO_FIELD || vl->tb.lineno == PYU_NO_FIELD ||
	    l->code.filename == PYU_NO_FIELD || l->code.name == PYU_NO_FIELD) {
		out.error = strdup("traceback objects are not known in this version");
		if (!out.error)
			return &pyu_error_nomem;
		*ret = out;
		return NULL;
	}
	uint32_t cap = 0;
	struct pyu_error *why = NULL;
	while (tb && !why) {
		if (out.count == PYU_TB_MAX) {
			why = pyu_error_create(PYU_ERR_CORRUPT, "more than %u entries", PYU_TB_MAX);
			break;
		}
		if (out.count == cap) {
			uint32_t n = cap ? cap * 2 : 8;
			struct pyu_tb_entry *e = realloc(out.entries, n * sizeof(*e));
			if (!e) {
				pyu_traceback_clear(&out);
				return &pyu_error_nomem;
			}
			out.entries = e;
			cap = n;
		}
		struct pyu_tb_entry *e = &out.entries[out.count];
		memset(e, 0, sizeof(*e));
		e->line = -1;
		e->loc = (struct pyu_location){PYU_NO_LINE, PYU_NO_LINE, PYU_NO_COLUMN,
					       PYU_NO_COLUMN};
		uint64_t next = 0;
		why = read_entry(t, l, vl, tb, e, &next);
		if (why) {
			free(e->file);
			free(e->function);
			break;
		}
		out.count++;
		tb = next;
	}
	if (why) {
		if (pyu_error_code(why) == PYU_ERR_NOMEM) {
			pyu_traceback_clear(&out);
			return why;
		}
		out.error = strdup(pyu_error_message(why));
		pyu_error_destroy(why);
		if (!out.error) {
			pyu_traceback_clear(&out);
			return &pyu_error_nomem;
		}
	}
	*ret = out;
	return NULL;
}

// ---- the chain ----------------------------------------------------------------------------

void pyu_exc_chain_clear(struct pyu_exc_chain *c)
{
	for (uint32_t i = 0; i < c->count; i++) {
		free(c->nodes[i].type);
		free(c->nodes[i].text);
		free(c->nodes[i].notes);
		free(c->nodes[i].syntax);
		pyu_traceback_clear(&c->nodes[i].tb);
	}
	free(c->nodes);
	free(c->error);
	memset(c, 0, sizeof(*c));
}

// Records the first reason the chain was cut. False when out of memory.
static bool chain_cut(struct pyu_exc_chain *c, struct pyu_error *why)
{
	if (!c->error)
		c->error = strdup(pyu_error_message(why));
	pyu_error_destroy(why);
	return c->error != NULL;
}

// Appends to *text what the traceback module adds after str(exc) ("Did you mean ...?"). False
// only for out of memory.
static bool append_suggestion(struct pyu_target *t, const struct pyu_layout *l,
			      struct pyu_values *v, uint64_t interp, uint64_t exc, char **text)
{
	char *more = NULL;
	if (pyu_exception_suggestion(t, l, v, interp, exc, &more))
		return false;
	if (!more[0]) {
		free(more);
		return true;
	}
	size_t a = strlen(*text), b = strlen(more);
	char *joined = realloc(*text, a + b + 1);
	if (!joined) {
		free(more);
		return false;
	}
	memcpy(joined + a, more, b + 1);
	*text = joined;
	free(more);
	return true;
}

// The node index of the exception at @exc, made now; -1 when it was seen before or is None,
// -2 when out of memory. An exception that cannot be read becomes a node without words.
static int32_t chain_node(struct pyu_target *t, const struct pyu_layout *l,
			  struct pyu_values *v, uint64_t interp, uint64_t exc, bool read_tb,
			  struct pyu_exc_chain *c)
{
	if (!exc || pyu_object_is_none(v, exc))
		return -1;
	for (uint32_t i = 0; i < c->count; i++)
		if (c->nodes[i].address == exc)
			return -1;
	if (c->count == PYU_EXC_NODES_MAX)
		return chain_cut(c, pyu_error_create(PYU_ERR_CORRUPT, "more than %u exceptions",
						     PYU_EXC_NODES_MAX)) ? -1 : -2;
	struct pyu_exc_node *n = &c->nodes[c->count];
	memset(n, 0, sizeof(*n));
	n->address = exc;
	n->cause = n->context = -1;
	uint64_t group = 0;
	struct pyu_error *err = pyu_exception_words(v, exc, &n->type, &n->text, &group,
						    &n->notes, &n->syntax);
	if (err && pyu_error_code(err) == PYU_ERR_NOMEM)
		return -2;
	if (err && !chain_cut(c, err))
		return -2;
	if (n->text && !n->syntax && !append_suggestion(t, l, v, interp, exc, &n->text))
		return -2;
	const struct pyu_value_layout *vl = pyu_values_layout(v);
	if (group && vl->exc.group_excs != PYU_NO_FIELD) {
		uint64_t size = 0;
		err = pyu_target_read_u64(t, group + (uint64_t)l->ob_size, &size);
		if (err && !chain_cut(c, err))
			return -2;
		n->group = true;
		n->member_total = size > UINT32_MAX ? UINT32_MAX : (uint32_t)size;
		for (uint32_t i = 0; i < PYU_EXC_GROUP_WIDTH; i++)
			n->members[i] = -1;
	}
	uint64_t tb = 0;
	if (read_tb && vl->exc_traceback != PYU_NO_FIELD) {
		err = pyu_target_read_u64(t, exc + (uint64_t)vl->exc_traceback, &tb);
		if (err && !chain_cut(c, err))
			return -2;
		if (!err && tb && !pyu_object_is_none(v, tb)) {
			err = pyu_traceback_read(t, l, vl, tb, &n->tb);
			if (err)
				return -2; // only for out of memory
		}
	}
	return (int32_t)c->count++;
}

// The object in the pointer field @off of the exception at @exc, 0 when none. Cannot fail
// (unreadable: 0, the cut recorded; false only for out of memory).
static bool exc_field(struct pyu_target *t, uint64_t exc, int32_t off, uint64_t *ret,
		      struct pyu_exc_chain *c)
{
	*ret = 0;
	if (off == PYU_NO_FIELD)
		return true;
	struct pyu_error *err = pyu_target_read_u64(t, exc + (uint64_t)off, ret);
	if (err) {
		*ret = 0;
		return chain_cut(c, err);
	}
	return true;
}

struct pyu_error *pyu_exc_chain_read(struct pyu_target *t, const struct pyu_layout *l,
				     struct pyu_values *v, uint64_t interp, uint64_t exc,
				     struct pyu_exc_chain *ret)
{
	struct pyu_exc_chain c = {0};
	memset(ret, 0, sizeof(*ret));
	c.nodes = calloc(PYU_EXC_NODES_MAX, sizeof(*c.nodes));
	if (!c.nodes)
		return &pyu_error_nomem;
	const struct pyu_value_layout *vl = pyu_values_layout(v);
	int32_t pending[PYU_EXC_NODES_MAX]; // nodes whose links are still to follow (a stack,
	uint32_t top = 0;                  // as the traceback module's queue)
	int32_t root = chain_node(t, l, v, interp, exc, false, &c);
	if (root == -2)
		goto nomem;
	if (root >= 0)
		pending[top++] = root;
	while (top) {
		int32_t i = pending[--top];
		uint64_t addr = c.nodes[i].address, cause = 0, context = 0, group = 0;
		uint8_t suppress = 0;
		if (!exc_field(t, addr, vl->exc.cause, &cause, &c) ||
		    !exc_field(t, addr, vl->exc.context, &context, &c))
			goto nomem;
		if (vl->exc.suppress_context != PYU_NO_FIELD) {
			struct pyu_error *err = pyu_target_read(
				t, addr + (uint64_t)vl->exc.suppress_context, &suppress, 1);
			if (err && !chain_cut(&c, err))
				goto nomem;
		}
		c.nodes[i].suppress_context = suppress != 0;
		int32_t ci = chain_node(t, l, v, interp, cause, true, &c);
		if (ci == -2)
			goto nomem;
		int32_t xi = -1;
		if (ci < 0 && !suppress && (xi = chain_node(t, l, v, interp, context, true, &c)) == -2)
			goto nomem;
		c.nodes[i].cause = ci;
		c.nodes[i].context = xi;
		int32_t made[PYU_EXC_GROUP_WIDTH];
		uint32_t nmade = 0;
		if (c.nodes[i].group && !exc_field(t, addr, vl->exc.group_excs, &group, &c))
			goto nomem;
		for (uint32_t k = 0; group && k < c.nodes[i].member_total &&
				     k < PYU_EXC_GROUP_WIDTH; k++) {
			uint64_t member = 0;
			struct pyu_error *err = pyu_target_read_u64(
				t, group + (uint64_t)l->tuple_item + 8 * k, &member);
			if (err) {
				if (!chain_cut(&c, err))
					goto nomem;
				break;
			}
			int32_t mi = chain_node(t, l, v, interp, member, true, &c);
			if (mi == -2)
				goto nomem;
			c.nodes[i].members[k] = mi;
			c.nodes[i].member_count = k + 1;
			if (mi >= 0)
				made[nmade++] = mi;
		}
		// Every node is made once and pushed once: the stack never holds more than
		// PYU_EXC_NODES_MAX entries.
		if (ci >= 0)
			pending[top++] = ci;
		if (xi >= 0)
			pending[top++] = xi;
		for (uint32_t k = 0; k < nmade; k++)
			pending[top++] = made[k];
	}
	*ret = c;
	return NULL;
nomem:
	pyu_exc_chain_clear(&c);
	return &pyu_error_nomem;
}
