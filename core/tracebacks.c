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
#include "tracebacks.h"

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

// The line of instruction byte offset @lasti in the code object whose fields are in @buf; 0 when
// the line table gives that instruction no line, -1 when the table cannot be read. Cannot fail.
static int64_t bytecode_line(struct pyu_target *t, const struct pyu_layout *l, const uint8_t *buf,
			     int32_t firstlineno, int64_t lasti)
{
	uint64_t code_len = 0;
	struct pyu_error *err = pyu_code_bytecode_len(t, l, buf, PYU_CODE_UNITS_MAX, &code_len);
	if (err) {
		pyu_error_destroy(err);
		return -1;
	}
	uint8_t *table = NULL;
	size_t table_len = 0;
	err = pyu_read_bytes(t, l, pyu_get_u64(buf, l->code.linetable), PYU_TABLE_MAX, &table,
			     &table_len);
	if (err) {
		pyu_error_destroy(err);
		return -1;
	}
	struct pyu_linetable lt = {table, table_len, firstlineno, l->linetable, code_len};
	struct pyu_location loc;
	enum pyu_lt_status st = pyu_linetable_lookup(&lt, lasti, &loc);
	free(table);
	if (st != PYU_LT_OK)
		return -1;
	return loc.line != PYU_NO_LINE && loc.line > 0 ? loc.line : 0;
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
	e->cython = pyu_cython_is_pyx_file(e->file);
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
		int64_t line = bytecode_line(t, l, buf, firstlineno, lasti);
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
