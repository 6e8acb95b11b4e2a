// format.c - turns a stacks snapshot into what py-bt, py-line and py-list print: traceback-style
// text (with source lines and 3.11+ carets) or the JSON document. Both debuggers and the CLI
// print exactly this text. Reads source files from disk (source.c), never target memory.
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "carets.h"
#include "cython.h"
#include "format.h"
#include "include/pyunwind.h"
#include "inspect.h"
#include "linetable.h"
#include "native.h"
#include "source.h"
#include "stacks.h"
#include "strbuf.h"
#include "triage.h"
#include "values.h"

#define PYU_MAX_TABLE_RANGES 1000000u // bound on the ranges py-line --table prints
#define SOURCE_INDENT "        "     // source lines sit 4 columns right of "File"

static const struct pyu_code_info *code_of(const struct pyu_stacks *s,
					   const struct pyu_frame_info *f)
{
	if (f->kind != PYU_FRAME_PYTHON || f->code < 0 || (uint32_t)f->code >= s->code_count)
		return NULL;
	return &s->codes[f->code];
}

static const char *display_name(const struct pyu_code_info *c)
{
	if (c->qualname)
		return c->qualname;
	return c->name ? c->name : "???";
}

static void put_text(struct pyu_strbuf *sb, const char *s)
{
	pyu_strbuf_text(sb, s, strlen(s));
}

// ---- source lines and carets ------------------------------------------------------------

static bool is_space(char c)
{
	return c == ' ' || c == '\t' || c == '\f' || c == '\v' || c == '\r' || c == '\n';
}

// Whether the file still looks like the source @c was compiled from: the line at
// co_firstlineno of a named function or class defines that name (or is a decorator, or holds
// the lambda). Files edited after the program started otherwise show the wrong lines. Code the
// compiler made without a name of its own on that line passes on what that line must hold:
// 3.14+'s __annotate__ of a function or class starts on its def or class line, a module's on
// line 1. True when it cannot tell (module code, comprehensions, <genexpr>, non-ASCII names,
// unreadable files).
static bool is_ident_char(char ch)
{
	return (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') ||
	       ch == '_' || (unsigned char)ch >= 0x80;
}

static bool has_word(const char *s, size_t n, const char *word)
{
	size_t w = strlen(word);
	for (size_t i = 0; w && i + w <= n; i++)
		if (!memcmp(s + i, word, w) && (i == 0 || !is_ident_char(s[i - 1])) &&
		    (i + w == n || !is_ident_char(s[i + w])))
			return true;
	return false;
}

static bool source_matches(struct pyu_source_cache *cache, const struct pyu_code_info *c)
{
	const char *name = c->name, *text;
	size_t n;
	if (!name || !c->filename)
		return true;
	bool lambda = !strcmp(name, "<lambda>");
	if (name[0] == '<' && !lambda)
		return true;
	for (const char *p = name; *p; p++)
		if ((unsigned char)*p >= 0x80)
			return true;
	if (!pyu_source_line(cache, c->filename, c->firstlineno, &text, &n))
		return pyu_source_line_count(cache, c->filename) < 0; // readable but too short
	while (n && is_space(*text))
		text++, n--;
	if (n && text[0] == '@')
		return true;
	if (lambda)
		return has_word(text, n, "lambda");
	if (!strcmp(name, "__annotate__"))
		return c->firstlineno == 1 || has_word(text, n, "def") ||
		       has_word(text, n, "class");
	return has_word(text, n, name) && (has_word(text, n, "def") || has_word(text, n, "class"));
}

// Appends the source lines and caret lines the target's own traceback module prints for a frame
// at @loc (carets.c), or nothing when the file is not readable here.
static void render_source(struct pyu_strbuf *sb, struct pyu_source_cache *cache,
			  const struct pyu_caret_rules *rules, const struct pyu_code_info *c,
			  const struct pyu_location *loc, const char *indent, bool check);

// The source lines of @loc in @c's file with their carets, as render_source makes them; a
// code position shown before (another thread, another frame of a recursion) is copied from
// the cache's memo. The rules are one per document, so the code and location are the key.
static void source_with_carets(struct pyu_strbuf *sb, struct pyu_source_cache *cache,
			       const struct pyu_caret_rules *rules, const struct pyu_code_info *c,
			       const struct pyu_location *loc)
{
	const uint64_t key[4] = {c->address, (uint64_t)(uint32_t)loc->line,
				 (uint64_t)(uint32_t)loc->end_line,
				 (uint64_t)(uint32_t)loc->column << 32 | (uint32_t)loc->end_column};
	const char *text;
	size_t len;
	if (pyu_source_memo_find(cache, key, &text, &len)) {
		pyu_strbuf_append(sb, text, len);
		return;
	}
	size_t start = sb->len;
	bool was_ok = !sb->nomem && !sb->too_long;
	render_source(sb, cache, rules, c, loc, SOURCE_INDENT, true);
	if (was_ok && !sb->nomem && !sb->too_long && sb->len >= start)
		pyu_source_memo_store(cache, key, sb->buf ? sb->buf + start : "", sb->len - start);
}

// @indent goes before each line; @check: whether to look for signs of an edited file first.
static void render_source(struct pyu_strbuf *sb, struct pyu_source_cache *cache,
			  const struct pyu_caret_rules *rules, const struct pyu_code_info *c,
			  const struct pyu_location *loc, const char *indent, bool check)
{
	const char *file = c->filename;
	if (!file || loc->line == PYU_NO_LINE)
		return;
	if (pyu_source_line_count(cache, file) < 0) {
		if (pyu_source_needs_cwd(cache, file)) {
			pyu_strbuf_puts(sb, indent);
			pyu_strbuf_puts(sb, "(source not shown: the file name is relative to the "
				       "target's working directory, not known here: give it with --cwd "
				       "DIR)\n");
		}
		return;
	}
	const char *first;
	size_t first_len;
	if ((check && !source_matches(cache, c)) ||
	    (loc->line >= 1 && !pyu_source_line(cache, file, loc->line, &first, &first_len))) {
		pyu_strbuf_puts(sb, indent);
		pyu_strbuf_puts(sb, "(source not shown: the file has changed since this code was "
				"compiled)\n");
		return;
	}
	static const char *const none = "";
	const char *lines[PYU_CARETS_MAX_LINES];
	size_t lens[PYU_CARETS_MAX_LINES];
	int64_t last = loc->end_line == PYU_NO_LINE || loc->end_line < loc->line ? loc->line
										  : loc->end_line;
	size_t count = 0;
	for (int64_t n = loc->line; n <= last && count < PYU_CARETS_MAX_LINES; n++, count++) {
		lines[count] = none; // line 0 reads as empty, as linecache gives it
		lens[count] = 0;
		if (n >= 1 && !pyu_source_line(cache, file, n, &lines[count], &lens[count]))
			break; // past the end: the renderer reads the rest as empty
	}
	pyu_carets_render(rules, lines, lens, count, loc, indent, sb);
}

// ---- a handled exception, as traceback.format_exception prints it ------------------------
// Its lines, each after EXC_INDENT, are what the target's own traceback.format_exception()
// returns for the exception: the chain of causes and contexts, each with "Traceback (most
// recent call last):", the entries with their source and carets, and the exception's line;
// exception groups in their boxes (3.11+). Each piece follows the traceback module's code.

#define EXC_INDENT "      "  // under "    handling ..."
#define EXC_GROUP_DEPTH 10u  // the traceback module's max_group_depth
#define EXC_REPEAT_CUTOFF 3  // its _RECURSIVE_CUTOFF: identical entries shown before a count

struct exc_print {
	struct pyu_strbuf *sb;
	const struct pyu_stacks *s;
	const struct pyu_thread_info *th;
	struct pyu_source_cache *cache;
	const struct pyu_caret_rules *rules;
	uint32_t depth;  // _ExceptionPrintContext.exception_group_depth
	bool need_close; // and its need_close
};

// What _ctx.emit puts before each line: the group indent and margin ('|', or '+' for the
// top group's header), after EXC_INDENT. @buf holds at least 64 bytes.
static const char *exc_prefix(const struct exc_print *p, char margin, char *buf)
{
	size_t n = strlen(EXC_INDENT);
	memcpy(buf, EXC_INDENT, n);
	for (uint32_t i = 0; i < p->depth && i <= EXC_GROUP_DEPTH + 2; i++) {
		buf[n++] = ' ';
		buf[n++] = ' ';
	}
	if (p->depth) {
		buf[n++] = margin;
		buf[n++] = ' ';
	}
	buf[n] = '\0';
	return buf;
}

// Emits @text (lines split at '\n', a last '\n' ending the last line) as _ctx.emit does:
// every line after the prefix; an empty line outside any group without it.
static void exc_emit(struct exc_print *p, char margin, const char *text)
{
	char buf[64];
	const char *prefix = exc_prefix(p, margin, buf);
	while (*text) {
		const char *nl = strchr(text, '\n');
		size_t len = nl ? (size_t)(nl - text) : strlen(text);
		if (len || p->depth)
			pyu_strbuf_puts(p->sb, prefix);
		pyu_strbuf_text(p->sb, text, len);
		pyu_strbuf_putc(p->sb, '\n');
		text += len + (nl ? 1 : 0);
	}
}

// The line of traceback entry @e as the traceback prints it: 3.11+ co_positions()' line at
// tb_lasti, else tb_lineno (or the line table where 3.12+ left it to be computed).
static int64_t entry_line(const struct exc_print *p, const struct pyu_tb_entry *e)
{
	if (p->rules->layout != PYU_CARETS_LINE_ONLY && e->loc.line != PYU_NO_LINE &&
	    e->loc.line > 0 && !e->cython)
		return e->loc.line;
	return e->line;
}

// One entry: "  File ..., line N, in F" and its source lines and carets.
static void exc_entry(struct exc_print *p, const struct pyu_tb_entry *e)
{
	char buf[64];
	const char *prefix = exc_prefix(p, '|', buf);
	struct pyu_strbuf *sb = p->sb;
	int64_t line = entry_line(p, e);
	pyu_strbuf_puts(sb, prefix);
	pyu_strbuf_puts(sb, "  File \"");
	put_text(sb, e->file ? e->file : "?");
	pyu_strbuf_putc(sb, '"');
	if (line >= 0) {
		pyu_strbuf_puts(sb, ", line ");
		pyu_strbuf_i64(sb, line);
	} else if (e->line_from == PYU_TB_LINE_NO_LINE && p->s->hexversion >= 0x030C0000) {
		// 3.12+ compute tb_lineno when asked, None for an instruction without a line,
		// and the traceback module prints that (older versions stored a number; a line
		// not read here is left out)
		pyu_strbuf_puts(sb, ", line None");
	}
	pyu_strbuf_puts(sb, ", in ");
	put_text(sb, e->function ? e->function : "?");
	pyu_strbuf_putc(sb, '\n');
	if (line < 1 || !e->file)
		return;
	struct pyu_location loc = {(int32_t)line, (int32_t)line, PYU_NO_COLUMN, PYU_NO_COLUMN};
	if (p->rules->layout != PYU_CARETS_LINE_ONLY && e->loc.line == line &&
	    e->loc.column != PYU_NO_COLUMN && e->loc.end_column != PYU_NO_COLUMN)
		loc = e->loc;
	const struct pyu_code_info c = {.address = e->code, .name = e->function,
					.filename = e->file, .firstlineno = e->firstlineno};
	char indent[72];
	snprintf(indent, sizeof(indent), "%s    ", prefix);
	render_source(sb, p->cache, p->rules, &c, &loc, indent, !e->cython);
}

// StackSummary.format(): the entries, a run of more than three identical ones (file, line,
// function) cut short with "[Previous line repeated N more times]" (3.x).
static void exc_stack(struct exc_print *p, const struct pyu_traceback *tb)
{
	bool collapse = !p->s->hexversion || p->s->hexversion >= 0x03060000;
	const struct pyu_tb_entry *last = NULL;
	uint32_t count = 0;
	char line[96];
	for (uint32_t i = 0; i <= tb->count; i++) {
		const struct pyu_tb_entry *e = i < tb->count ? &tb->entries[i] : NULL;
		bool same = e && last && e->file && last->file && e->function && last->function &&
			    !strcmp(e->file, last->file) && !strcmp(e->function, last->function) &&
			    entry_line(p, e) == entry_line(p, last);
		if (!same) {
			if (collapse && count > EXC_REPEAT_CUTOFF) {
				uint32_t more = count - EXC_REPEAT_CUTOFF;
				snprintf(line, sizeof(line), "  [Previous line repeated %u more "
					 "time%s]\n", more, more > 1 ? "s" : "");
				exc_emit(p, '|', line);
			}
			last = e;
			count = 0;
		}
		if (!e)
			break;
		count++;
		if (collapse && count > EXC_REPEAT_CUTOFF)
			continue;
		exc_entry(p, e);
	}
	if (tb->error) {
		char buf[64];
		pyu_strbuf_puts(p->sb, exc_prefix(p, '|', buf));
		pyu_strbuf_puts(p->sb, "  (traceback cut: ");
		put_text(p->sb, tb->error);
		pyu_strbuf_puts(p->sb, ")\n");
	}
}

static const struct pyu_traceback *node_tb(const struct exc_print *p, uint32_t i)
{
	return i == 0 ? &p->th->exc_tb : &p->th->exc_chain.nodes[i].tb;
}

// Why an exception's str() is not shown (text: inside <...>; JSON: message_error).
#define EXC_STR_NOT_SHOWN "str() not shown: a class written in Python defines __str__"

// format_exception_only(): "Type: text", or "Type" alone for an empty text.
static void exc_only(struct exc_print *p, const struct pyu_exc_node *n)
{
	struct pyu_strbuf line;
	if (n->syntax)
		exc_emit(p, '|', n->syntax);
	pyu_strbuf_init(&line, PYU_STRBUF_MAX);
	pyu_strbuf_puts(&line, n->type ? n->type : "<unreadable exception type>");
	if (!n->text) {
		pyu_strbuf_puts(&line, ": <" EXC_STR_NOT_SHOWN ">");
	} else if (n->text[0]) {
		pyu_strbuf_puts(&line, ": ");
		pyu_strbuf_puts(&line, n->text);
	}
	char *text = NULL;
	struct pyu_error *err = pyu_strbuf_finish(&line, &text);
	if (err) {
		pyu_error_destroy(err);
		exc_emit(p, '|', "<exception line not shown: out of memory>");
		return;
	}
	exc_emit(p, '|', text);
	free(text);
	if (n->notes)
		exc_emit(p, '|', n->notes);
}

static void exc_format(struct exc_print *p, int32_t node);

// The part of TracebackException.format() that draws an exception group @n (node @i).
static void exc_group(struct exc_print *p, uint32_t i, const struct pyu_exc_node *n)
{
	bool top = p->depth == 0;
	if (top)
		p->depth++;
	const struct pyu_traceback *tb = node_tb(p, i);
	if (tb->count) {
		exc_emit(p, top ? '+' : '|', "Exception Group Traceback (most recent call last):");
		exc_stack(p, tb);
	}
	exc_only(p, n);
	uint32_t total = n->member_total;
	uint32_t shown = total <= PYU_EXC_GROUP_WIDTH ? total : PYU_EXC_GROUP_WIDTH + 1;
	p->need_close = false;
	for (uint32_t k = 0; k < shown; k++) {
		bool last = k == shown - 1, truncated = k >= PYU_EXC_GROUP_WIDTH;
		if (last)
			p->need_close = true;
		pyu_strbuf_puts(p->sb, EXC_INDENT);
		for (uint32_t d = 0; d < p->depth; d++)
			pyu_strbuf_puts(p->sb, "  ");
		pyu_strbuf_puts(p->sb, k == 0 ? "+-" : "  ");
		if (truncated)
			pyu_strbuf_puts(p->sb, "+---------------- ... ----------------\n");
		else
			pyu_strbuf_printf(p->sb, "+---------------- %u ----------------\n", k + 1);
		p->depth++;
		if (!truncated) {
			int32_t m = k < n->member_count ? n->members[k] : -1;
			if (m >= 0)
				exc_format(p, m);
			else
				exc_emit(p, '|', "<exception not read>");
		} else {
			char buf[96];
			uint32_t rest = total - PYU_EXC_GROUP_WIDTH;
			snprintf(buf, sizeof(buf), "and %u more exception%s", rest,
				 rest > 1 ? "s" : "");
			exc_emit(p, '|', buf);
		}
		if (last && p->need_close) {
			pyu_strbuf_puts(p->sb, EXC_INDENT);
			for (uint32_t d = 0; d < p->depth; d++)
				pyu_strbuf_puts(p->sb, "  ");
			pyu_strbuf_puts(p->sb, "+------------------------------------\n");
			p->need_close = false;
		}
		p->depth--;
	}
	if (top)
		p->depth = 0;
}

// TracebackException.format(): the chain that ends in node @node, oldest first.
static void exc_format(struct exc_print *p, int32_t node)
{
	const struct pyu_exc_chain *c = &p->th->exc_chain;
	int32_t order[PYU_EXC_NODES_MAX];
	bool caused[PYU_EXC_NODES_MAX];
	uint32_t n = 0;
	// Each node is some other's cause or context at most once: the walk ends within the
	// node count.
	for (int32_t i = node; i >= 0 && (uint32_t)i < c->count && n < PYU_EXC_NODES_MAX;) {
		const struct pyu_exc_node *e = &c->nodes[i];
		order[n] = i;
		caused[n] = e->cause >= 0;
		n++;
		i = e->cause >= 0 ? e->cause : !e->suppress_context ? e->context : -1;
	}
	for (uint32_t k = n; k-- > 0;) {
		const struct pyu_exc_node *e = &c->nodes[order[k]];
		if (k + 1 < n)
			exc_emit(p, '|', caused[k]
				 ? "\nThe above exception was the direct cause of the following "
				   "exception:\n\n"
				 : "\nDuring handling of the above exception, another exception "
				   "occurred:\n\n");
		if (!e->group) {
			const struct pyu_traceback *tb = node_tb(p, (uint32_t)order[k]);
			if (tb->count) {
				exc_emit(p, '|', "Traceback (most recent call last):");
				exc_stack(p, tb);
			}
			exc_only(p, e);
		} else if (p->depth > EXC_GROUP_DEPTH) {
			exc_emit(p, '|', "... (max_group_depth is 10)");
		} else {
			exc_group(p, (uint32_t)order[k], e);
		}
	}
}

// The handled exception of @th with what format_exception shows with it, each line after
// EXC_INDENT; its traceback alone (entries, source) when the chain could not be read.
static void text_exception(struct pyu_strbuf *sb, const struct pyu_stacks *s,
			   const struct pyu_thread_info *th, struct pyu_source_cache *cache)
{
	struct exc_print p = {sb, s, th, cache, pyu_caret_rules_for(s->hexversion), 0, false};
	if (th->exc_chain.count) {
		exc_format(&p, 0);
	} else if (th->exc_tb.count) {
		exc_emit(&p, '|', "Traceback (most recent call last):");
		exc_stack(&p, &th->exc_tb);
	}
	if (th->exc_chain.error) {
		pyu_strbuf_puts(sb, EXC_INDENT "(exceptions not shown: ");
		put_text(sb, th->exc_chain.error);
		pyu_strbuf_puts(sb, ")\n");
	}
}

// ---- frames repeat ----------------------------------------------------------------------
// What a Python frame prints, but for its number (text) or its frame address and locals
// (JSON), depends only on its code object and location: a deep recursion prints the same text a
// thousand times, and making it (source lines, carets, escaping) is most of formatting. Each
// code object has MEMO_WAYS memos, for the last locations asked: a recursion's frames are at
// two (the call that recursed, and the one that went on), one after the other in every thread.

#define MEMO_WAYS 2

struct frame_memo {
	bool valid;
	struct pyu_location loc;
	int64_t offset; // the instruction offset (JSON has it)
	char *text;
	size_t len;
};

struct frame_memos {
	struct frame_memo *m; // MEMO_WAYS per code object of the snapshot; NULL: no memo (no memory)
	uint8_t *next;        // per code object: which of its memos to replace next
	uint32_t count;
};

static void memos_init(struct frame_memos *fm, const struct pyu_stacks *s)
{
	fm->count = s->code_count;
	fm->m = fm->count ? calloc(fm->count, MEMO_WAYS * sizeof(*fm->m)) : NULL;
	fm->next = fm->m ? calloc(fm->count, sizeof(*fm->next)) : NULL;
	if (!fm->m || !fm->next) {
		free(fm->m);
		free(fm->next);
		fm->m = NULL;
		fm->next = NULL;
		fm->count = 0;
	}
}

static void memos_release(struct frame_memos *fm)
{
	for (size_t i = 0; i < (size_t)fm->count * MEMO_WAYS; i++)
		free(fm->m[i].text);
	free(fm->m);
	free(fm->next);
	fm->m = NULL;
	fm->next = NULL;
	fm->count = 0;
}

static bool same_location(const struct pyu_location *a, const struct pyu_location *b)
{
	return a->line == b->line && a->end_line == b->end_line && a->column == b->column &&
	       a->end_column == b->end_column;
}

// A memo of frame @f's code object that holds the text for @f's location: appended to @sb,
// true. Otherwise false, and *@slot is where to keep the text about to be made (NULL when
// there is no memo for it).
static const struct frame_memo *memo_find(struct frame_memos *fm, const struct pyu_frame_info *f,
					  struct frame_memo **slot)
{
	*slot = NULL;
	if (!fm || f->code < 0 || (uint32_t)f->code >= fm->count)
		return NULL;
	struct frame_memo *ways = &fm->m[(size_t)f->code * MEMO_WAYS];
	for (unsigned w = 0; w < MEMO_WAYS; w++) {
		struct frame_memo *m = &ways[w];
		if (m->valid && m->offset == f->instruction_offset &&
		    same_location(&m->loc, &f->loc))
			return m;
	}
	uint8_t *next = &fm->next[f->code];
	*slot = &ways[*next];
	*next = (uint8_t)((*next + 1) % MEMO_WAYS);
	return NULL;
}

static bool memo_put(struct pyu_strbuf *sb, struct frame_memos *fm, const struct pyu_frame_info *f,
		     struct frame_memo **slot)
{
	const struct frame_memo *m = memo_find(fm, f, slot);
	if (m)
		pyu_strbuf_append(sb, m->text, m->len);
	return m != NULL;
}

// Keeps what @sb got since @at in @m (if any) for the frame @f. Failing to keep it only costs
// time later.
static void memo_keep(struct frame_memo *m, const struct pyu_strbuf *sb, size_t at,
		      const struct pyu_frame_info *f)
{
	if (!m || sb->nomem || sb->too_long || sb->len < at)
		return;
	size_t len = sb->len - at;
	char *text = malloc(len ? len : 1);
	if (!text)
		return;
	memcpy(text, sb->buf + at, len);
	free(m->text);
	*m = (struct frame_memo){true, f->loc, f->instruction_offset, text, len};
}

// ---- text -------------------------------------------------------------------------------

static void put_int_or(struct pyu_strbuf *sb, int64_t v, bool absent, const char *none)
{
	if (absent)
		pyu_strbuf_puts(sb, none);
	else
		pyu_strbuf_printf(sb, "%" PRId64, v);
}

// The signal's name ("SIGSEGV"), or "signal N" for one without a name here.
static void put_signal(struct pyu_strbuf *sb, int32_t sig)
{
	const char *name = pyu_signal_name(sig);
	if (name)
		pyu_strbuf_puts(sb, name);
	else
		pyu_strbuf_printf(sb, "signal %d", sig);
}

// @ns nanoseconds as printf("%.2f") prints (double)@ns / 1e9: rounded to centiseconds by
// integers. Below 2^52 ns the double lies within 5e-10 of the exact value, and a value that is
// no tie lies at least 1e-9 from the half-centisecond, so both round alike. An exact tie (the
// double falls just above or below it) and larger figures are left to printf.
static void put_centiseconds(struct pyu_strbuf *sb, int64_t ns)
{
	if (ns < 0 || ns >= (INT64_C(1) << 52) || ns % 10000000 == 5000000) {
		pyu_strbuf_printf(sb, "%.2f", (double)ns / 1e9);
		return;
	}
	int64_t cs = (ns + 5000000) / 10000000;
	pyu_strbuf_i64(sb, cs / 100);
	const char frac[3] = {'.', (char)('0' + cs % 100 / 10), (char)('0' + cs % 10)};
	pyu_strbuf_append(sb, frac, sizeof(frac));
}

// @ns nanoseconds (>= 0) in seconds, exactly: the whole seconds, then up to nine decimals
// without trailing zeros ("0", "0.5", "12.000301").
static void put_seconds(struct pyu_strbuf *sb, int64_t ns)
{
	uint64_t u = ns < 0 ? 0 : (uint64_t)ns, frac = u % 1000000000u;
	pyu_strbuf_u64(sb, u / 1000000000u);
	if (!frac)
		return;
	char digits[10] = {'.'};
	for (size_t i = 9; i >= 1; i--, frac /= 10)
		digits[i] = (char)('0' + frac % 10);
	size_t n = sizeof(digits);
	while (digits[n - 1] == '0')
		n--;
	pyu_strbuf_append(sb, digits, n);
}

// " SIGSEGV (fault address 0x0), waiting on a lock (futex), 0.12 s CPU": what the thread's
// header says it is doing; only what is known (nothing at all for a target that says nothing).
static void text_activity(struct pyu_strbuf *sb, const struct pyu_activity *a)
{
	const char *sep = " ";
	if (a->signal > 0) {
		pyu_strbuf_puts(sb, sep);
		put_signal(sb, a->signal);
		if (a->has_fault_address)
			pyu_strbuf_printf(sb, " (fault address 0x%" PRIx64 ")", a->fault_address);
		sep = ", ";
	}
	const char *words = pyu_state_words(a->state);
	// A thread that received a fatal signal outside any system call was running: its signal
	// says more than "running" does.
	if (words && !(a->signal > 0 && a->state == PYU_STATE_RUNNING)) {
		pyu_strbuf_puts(sb, sep);
		pyu_strbuf_puts(sb, words);
		if (pyu_in_syscall(a)) {
			if (a->restarted_name) {
				pyu_strbuf_puts(sb, " (");
				pyu_strbuf_puts(sb, a->restarted_name);
				pyu_strbuf_puts(sb, ", restarted)");
			} else if (a->syscall_name) {
				pyu_strbuf_puts(sb, " (");
				pyu_strbuf_puts(sb, a->syscall_name);
				pyu_strbuf_putc(sb, ')');
			} else
				pyu_strbuf_printf(sb, " (system call %" PRId64 ")", a->syscall);
		}
		sep = ", ";
	}
	if (a->has_cpu) {
		pyu_strbuf_puts(sb, sep);
		put_centiseconds(sb, a->cpu_ns);
		pyu_strbuf_puts(sb, " s CPU");
	}
}

static void text_thread_header(struct pyu_strbuf *sb, const struct pyu_stacks *s,
			       const struct pyu_thread_info *th, uint32_t flags,
			       struct pyu_source_cache *cache)
{
	pyu_strbuf_puts(sb, "Thread ");
	pyu_strbuf_hex(sb, th->thread_id);
	if (th->native_thread_id >= 0) {
		pyu_strbuf_puts(sb, " (tid ");
		pyu_strbuf_i64(sb, th->native_thread_id);
		pyu_strbuf_putc(sb, ')');
	}
	// The name with --locals alone, as documented: names are read on first use (by JSON or
	// --locals), and the text of one snapshot must not depend on what was asked of it before.
	if (th->name && (flags & PYU_FMT_LOCALS)) {
		pyu_strbuf_puts(sb, " \"");
		put_text(sb, th->name);
		pyu_strbuf_putc(sb, '"');
	}
	if (th->holds_gil == 1)
		pyu_strbuf_puts(sb, ", holds the GIL");
	pyu_strbuf_putc(sb, ':');
	text_activity(sb, pyu_thread_activity(s, (uint32_t)(th - s->threads)));
	pyu_strbuf_putc(sb, '\n');
	if ((flags & PYU_FMT_LOCALS) && th->exc_repr) {
		pyu_strbuf_puts(sb, "    handling ");
		put_text(sb, th->exc_repr);
		pyu_strbuf_putc(sb, '\n');
		text_exception(sb, s, th, cache);
	}
}

// "name = repr" lines of a frame's locals, each after @indent; a line saying why when they
// cannot be read.
static void text_locals(struct pyu_strbuf *sb, const struct pyu_stacks *s,
			const struct pyu_frame_info *f, const char *indent)
{
	struct pyu_shown_locals sl;
	struct pyu_error *err = pyu_frame_info_shown_locals(s, f, &sl);
	if (err) {
		pyu_strbuf_puts(sb, indent);
		pyu_strbuf_puts(sb, "<locals not readable: ");
		put_text(sb, pyu_error_message(err));
		pyu_strbuf_puts(sb, ">\n");
		pyu_error_destroy(err);
		return;
	}
	for (uint32_t i = 0; i < sl.count; i++) {
		pyu_strbuf_puts(sb, indent);
		put_text(sb, sl.items[i].name);
		pyu_strbuf_puts(sb, " = ");
		put_text(sb, sl.items[i].repr);
		pyu_strbuf_putc(sb, '\n');
	}
	if (sl.truncated)
		pyu_strbuf_printf(sb, "%s(more locals not shown: limit %u)\n", indent,
				  PYU_LOCALS_MAX);
	pyu_shown_locals_clear(&sl);
}

// "#N  " padded to four columns, at least one space after the number.
static void frame_number(struct pyu_strbuf *sb, uint32_t i)
{
	if (i < 100) { // "#7  ", "#42 ": most frames of most stacks, made without a loop
		const char two[4] = {'#', (char)('0' + i / 10), (char)('0' + i % 10), ' '};
		const char one[4] = {'#', (char)('0' + i), ' ', ' '};
		pyu_strbuf_append(sb, i < 10 ? one : two, 4);
		return;
	}
	char num[16]; // "#" + up to 10 digits, padded with spaces to 4 (at least one space)
	size_t digits = 1, n;
	for (uint32_t x = i / 10; x; x /= 10)
		digits++;
	num[0] = '#';
	for (size_t k = digits; k > 0; k--, i /= 10)
		num[k] = (char)('0' + i % 10);
	n = digits + 1;
	do
		num[n++] = ' ';
	while (n < 4);
	pyu_strbuf_append(sb, num, n);
}

static void text_error_frame(struct pyu_strbuf *sb, const struct pyu_frame_info *f)
{
	pyu_strbuf_puts(sb, "<error: ");
	if (f->frame_address)
		pyu_strbuf_printf(sb, "frame at 0x%" PRIx64 ": ", f->frame_address);
	put_text(sb, f->reason ? f->reason : "unreadable frame");
	pyu_strbuf_puts(sb, ">\n");
}

// "File ..., line N, in name" of a Python frame, without the frame number or a newline.
static void text_location_words(struct pyu_strbuf *sb, const struct pyu_code_info *c,
				const struct pyu_frame_info *f)
{
	pyu_strbuf_puts(sb, "File \"");
	put_text(sb, c->filename ? c->filename : "???");
	pyu_strbuf_puts(sb, "\", line ");
	put_int_or(sb, f->loc.line, f->loc.line == PYU_NO_LINE, "?");
	pyu_strbuf_puts(sb, ", in ");
	put_text(sb, display_name(c));
}

// The "File ..., line N, in name" line of a Python frame (without the frame number).
static void text_location(struct pyu_strbuf *sb, const struct pyu_code_info *c,
			  const struct pyu_frame_info *f)
{
	text_location_words(sb, c, f);
	pyu_strbuf_putc(sb, '\n');
}

// Frame @i of @thread, shown as "#@number" (a stack through nested interpreters numbers on).
static void text_frame(struct pyu_strbuf *sb, const struct pyu_stacks *s, uint32_t thread,
		       uint32_t i, uint32_t number, uint32_t flags, struct pyu_source_cache *cache,
		       struct frame_memos *memos)
{
	const struct pyu_frame_info *f = &s->threads[thread].frames[i];
	frame_number(sb, number);
	const struct pyu_code_info *c = code_of(s, f);
	if (!c) {
		text_error_frame(sb, f);
		return;
	}
	struct frame_memo *slot;
	if (!memo_put(sb, memos, f, &slot)) {
		size_t at = sb->len;
		text_location(sb, c, f);
		if (flags & PYU_FMT_SOURCE)
			source_with_carets(sb, cache, pyu_caret_rules_for(s->hexversion), c,
					   &f->loc);
		memo_keep(slot, sb, at, f);
	}
	if (flags & PYU_FMT_LOCALS)
		text_locals(sb, s, f, "    ");
}

// Repeated frames folded as the target's traceback module folds them (StackSummary.format,
// 3.6+; 2.7's prints every frame): of a run of frames with the same file, line and function
// name, the first REPEAT_CUTOFF are shown and the rest said in one line. Not with the frames'
// locals (PYU_FMT_LOCALS): they differ frame to frame, and were asked for.
#define REPEAT_CUTOFF 3
#define FIRST_FOLDING 0x03060000u

static bool folds(const struct pyu_stacks *s, uint32_t flags)
{
	return s->hexversion >= FIRST_FOLDING && !(flags & PYU_FMT_LOCALS);
}

struct fold {
	bool on;        // the target's traceback folds
	const struct pyu_code_info *code; // of the current run; NULL: no run (an error frame)
	int32_t line;
	uint32_t count; // frames of the run so far
};

static void fold_flush(struct pyu_strbuf *sb, struct fold *fo)
{
	if (fo->on && fo->count > REPEAT_CUTOFF) {
		uint32_t more = fo->count - REPEAT_CUTOFF;
		pyu_strbuf_printf(sb, "    [Previous line repeated %u more time%s]\n", more,
				  more == 1 ? "" : "s");
	}
	*fo = (struct fold){.on = fo->on};
}

static bool same_text(const char *a, const char *b)
{
	return a && b && strcmp(a, b) == 0;
}

// Whether frame @f (code @c, NULL for an error frame) is to be shown, or folded into the run
// of frames like it before it (the line saying so printed when the run ends, fold_flush).
static bool fold_shows(struct pyu_strbuf *sb, struct fold *fo, const struct pyu_code_info *c,
		       const struct pyu_frame_info *f)
{
	if (!fo->on)
		return true;
	bool same = c && fo->code && f->loc.line != PYU_NO_LINE && f->loc.line == fo->line &&
		    (c == fo->code || (same_text(c->filename, fo->code->filename) &&
				       same_text(c->name, fo->code->name)));
	if (!same) {
		fold_flush(sb, fo);
		fo->code = f->loc.line != PYU_NO_LINE ? c : NULL;
		fo->line = f->loc.line;
	}
	return ++fo->count <= REPEAT_CUTOFF;
}

// A thread's stack; a thread nested through interpreters goes on with each caller's frames
// after a line naming the switch ("--- interpreter 1 → 0 ---"), numbered on.
static void text_thread(struct pyu_strbuf *sb, const struct pyu_stacks *s, uint32_t thread,
			uint32_t flags, uint32_t limit, struct pyu_source_cache *cache,
			struct frame_memos *memos)
{
	const struct pyu_thread_info *th = &s->threads[thread];
	const struct pyu_thread_info *outermost = th; // the one whose thread ids are its own
	for (uint32_t k = 0; outermost->outer && outermost->outer <= s->thread_count &&
			     k < s->thread_count; k++)
		outermost = &s->threads[outermost->outer - 1];
	text_thread_header(sb, s, outermost, flags, cache);
	if (!th->frame_count && !th->outer)
		pyu_strbuf_puts(sb, "    (no Python frames)\n");
	uint32_t number = 0, hidden = 0, cur = thread;
	const struct pyu_thread_info *prev = NULL;
	struct fold fo = {.on = folds(s, flags)};
	for (uint32_t hop = 0; hop <= s->thread_count; hop++) {
		const struct pyu_thread_info *t = &s->threads[cur];
		if (prev && !hidden) {
			fold_flush(sb, &fo);
			pyu_strbuf_puts(sb, "--- interpreter ");
			put_int_or(sb, prev->interpreter_id, prev->interpreter_id < 0, "?");
			pyu_strbuf_puts(sb, " \xe2\x86\x92 "); // →
			put_int_or(sb, t->interpreter_id, t->interpreter_id < 0, "?");
			pyu_strbuf_puts(sb, " ---\n");
		}
		for (uint32_t i = 0; i < t->frame_count; i++) {
			if (limit && number >= limit) {
				if (!hidden++)
					fold_flush(sb, &fo);
			} else if (fold_shows(sb, &fo, code_of(s, &t->frames[i]), &t->frames[i])) {
				text_frame(sb, s, cur, i, number++, flags, cache, memos);
			} else {
				number++;
			}
		}
		prev = t;
		if (!t->outer || t->outer > s->thread_count)
			break;
		cur = t->outer - 1;
	}
	fold_flush(sb, &fo);
	if (hidden)
		pyu_strbuf_printf(sb, "(%u more frame%s not shown: limit %u)\n", hidden,
				  hidden == 1 ? "" : "s", limit);
}

// "native #K  0x... in FUNCTION () at FILE:LINE from LIBRARY": K is the frame's number (its
// place among the frames that are not made up for tail calls).
static void text_native_frame(struct pyu_strbuf *sb, const struct pyu_native_frame *f)
{
	pyu_strbuf_printf(sb, "native #%u  0x%016" PRIx64 " in ", f->number, f->pc);
	put_text(sb, f->function ? f->function : "??");
	pyu_strbuf_puts(sb, " ()");
	if (f->file) {
		pyu_strbuf_puts(sb, " at ");
		put_text(sb, f->file);
		if (f->line > 0)
			pyu_strbuf_printf(sb, ":%" PRId64, f->line);
	}
	if (f->library) {
		pyu_strbuf_puts(sb, " from ");
		put_text(sb, f->library);
	}
	const struct pyu_cython_module *mod = f->module;
	if (mod && mod->name && (mod->cython || !mod->symbols)) {
		pyu_strbuf_puts(sb, mod->cython ? " [Cython module " : " [extension module ");
		put_text(sb, mod->name);
		if (mod->source) {
			pyu_strbuf_puts(sb, " from ");
			put_text(sb, mod->source);
		}
		if (!mod->symbols)
			pyu_strbuf_puts(sb, "; no symbols: debuginfod or a -dbgsym "
					    "package would name it");
		pyu_strbuf_putc(sb, ']');
	}
	pyu_strbuf_putc(sb, '\n');
}

// "File "F", line N, in QUALNAME" of a Cython frame ("line ?" and why when there is none); when
// no file is known, "in QUALNAME (module M)".
static void text_cython_words(struct pyu_strbuf *sb, const struct pyu_cython_frame *cy)
{
	if (cy->file) {
		pyu_strbuf_puts(sb, "File \"");
		put_text(sb, cy->file);
		pyu_strbuf_puts(sb, "\", line ");
		put_int_or(sb, cy->line, cy->line <= 0, "?");
		pyu_strbuf_puts(sb, ", in ");
		put_text(sb, cy->qualname ? cy->qualname : "???");
	} else {
		pyu_strbuf_puts(sb, "in ");
		put_text(sb, cy->qualname ? cy->qualname : "???");
		if (cy->module) {
			pyu_strbuf_puts(sb, " (module ");
			put_text(sb, cy->module);
			pyu_strbuf_putc(sb, ')');
		}
	}
}

// "cython #K  File "cymod.pyx", line 9, in inner", then its source line; a frame without a line
// says why, and names its C function and library.
static void text_cython_frame(struct pyu_strbuf *sb, const struct pyu_native_frame *f,
			      uint32_t flags, struct pyu_source_cache *cache)
{
	const struct pyu_cython_frame *cy = f->cython;
	pyu_strbuf_printf(sb, "cython #%u  ", f->number);
	text_cython_words(sb, cy);
	if (cy->line_from == PYU_CYTHON_LINE_NONE) {
		pyu_strbuf_puts(sb, " [");
		put_text(sb, f->function ? f->function : "??");
		if (f->library) {
			pyu_strbuf_puts(sb, " from ");
			put_text(sb, f->library);
		}
		pyu_strbuf_puts(sb, "; no line: ");
		put_text(sb, cy->why ? cy->why : "unknown");
		pyu_strbuf_putc(sb, ']');
	}
	pyu_strbuf_putc(sb, '\n');
	const char *text;
	size_t len;
	if ((flags & PYU_FMT_SOURCE) && cy->file && cy->line > 0 &&
	    pyu_source_line(cache, cy->file, cy->line, &text, &len)) {
		while (len && (*text == ' ' || *text == '\t')) {
			text++;
			len--;
		}
		pyu_strbuf_puts(sb, SOURCE_INDENT);
		pyu_strbuf_text(sb, text, len);
		pyu_strbuf_putc(sb, '\n');
	}
}

// py-bt --native: the merged stack (see native.c), or both sides apart with the reason.
static struct pyu_error *text_thread_native(struct pyu_strbuf *sb, const struct pyu_stacks *s,
					    uint32_t thread, uint32_t flags, uint32_t limit,
					    struct pyu_source_cache *cache, struct frame_memos *memos)
{
	const struct pyu_thread_info *th = &s->threads[thread];
	struct pyu_merge m;
	struct pyu_error *err = pyu_merge_thread(s, th, flags & PYU_FMT_NATIVE_ALL, &m);
	if (err)
		return err;
	text_thread_header(sb, s, th, flags, cache);
	if (!m.merged) {
		pyu_strbuf_puts(sb, "(native and Python frames not merged: ");
		put_text(sb, m.reason);
		pyu_strbuf_puts(sb, "; both shown apart)\n");
	}
	uint32_t shown = limit && limit < m.count ? limit : m.count;
	struct fold fo = {.on = folds(s, flags)};
	for (uint32_t i = 0; i < shown; i++) {
		const struct pyu_merge_item *it = &m.items[i];
		if (!it->python)
			fold_flush(sb, &fo); // a native frame between ends a run
		if (it->python) {
			const struct pyu_frame_info *f = &th->frames[it->index];
			if (fold_shows(sb, &fo, code_of(s, f), f))
				text_frame(sb, s, thread, it->index, it->index, flags, cache,
					   memos);
		} else if (it->cython)
			text_cython_frame(sb, &th->native[it->index], flags, cache);
		else
			text_native_frame(sb, &th->native[it->index]);
	}
	fold_flush(sb, &fo);
	if (shown < m.count)
		pyu_strbuf_printf(sb, "(%u more frame%s not shown: limit %u)\n", m.count - shown,
				  m.count - shown == 1 ? "" : "s", limit);
	pyu_merge_release(&m);
	return NULL;
}

static void text_version(struct pyu_strbuf *sb, const struct pyu_stacks *s)
{
	pyu_strbuf_puts(sb, "Python ");
	put_text(sb, s->version);
	if (s->debug_build && s->free_threaded)
		pyu_strbuf_puts(sb, " (debug build, free-threaded)");
	else if (s->debug_build)
		pyu_strbuf_puts(sb, " (debug build)");
	else if (s->free_threaded)
		pyu_strbuf_puts(sb, " (free-threaded)");
	pyu_strbuf_printf(sb, ", %u thread%s\n", s->thread_count, s->thread_count == 1 ? "" : "s");
}

static void text_errors(struct pyu_strbuf *sb, const struct pyu_stacks *s)
{
	for (uint32_t i = 0; i < s->error_count; i++) {
		pyu_strbuf_puts(sb, "<error: ");
		put_text(sb, s->errors[i] ? s->errors[i] : "?");
		pyu_strbuf_puts(sb, ">\n");
	}
}

// ---- JSON -------------------------------------------------------------------------------

static void json_int_or_null(struct pyu_strbuf *sb, int64_t v, bool absent)
{
	if (absent)
		pyu_strbuf_append(sb, "null", 4);
	else
		pyu_strbuf_i64(sb, v);
}

// The JSON of each code object's names ("function", "qualname", "file"), escaped once per
// document: a deep recursion repeats one code object a thousand times.
struct json_codes {
	struct pyu_strbuf text;
	uint32_t *off, *len; // per code index; len 0 = not made yet
	uint32_t count;
	struct frame_memos memos;
};

static void json_code_fields(struct pyu_strbuf *sb, const struct pyu_code_info *c)
{
	pyu_strbuf_puts(sb, ", \"function\": ");
	pyu_strbuf_json_cstr(sb, c->name);
	pyu_strbuf_puts(sb, ", \"qualname\": ");
	pyu_strbuf_json_cstr(sb, c->qualname);
	pyu_strbuf_puts(sb, ", \"file\": ");
	pyu_strbuf_json_cstr(sb, c->filename);
}

static void json_codes_put(struct pyu_strbuf *sb, struct json_codes *jc, int32_t index,
			   const struct pyu_code_info *c)
{
	if (!jc || index < 0 || (uint32_t)index >= jc->count) {
		json_code_fields(sb, c);
		return;
	}
	if (jc->len[index] == 0) {
		size_t at = jc->text.len;
		json_code_fields(&jc->text, c);
		if (jc->text.nomem || jc->text.too_long || jc->text.len - at > UINT32_MAX ||
		    at > UINT32_MAX) {
			json_code_fields(sb, c);
			return;
		}
		jc->off[index] = (uint32_t)at;
		jc->len[index] = (uint32_t)(jc->text.len - at);
	}
	pyu_strbuf_append(sb, jc->text.buf + jc->off[index], jc->len[index]);
}

static void json_addr(struct pyu_strbuf *sb, uint64_t addr)
{
	pyu_strbuf_putc(sb, '"');
	pyu_strbuf_hex(sb, addr);
	pyu_strbuf_putc(sb, '"');
}

// ", \"locals\": [...]" of a frame (and "locals_error" when they cannot be read).
static void json_locals(struct pyu_strbuf *sb, const struct pyu_stacks *s,
			const struct pyu_frame_info *f, bool alone)
{
	struct pyu_shown_locals sl;
	struct pyu_error *err = pyu_frame_info_shown_locals(s, f, &sl);
	if (!alone)
		pyu_strbuf_puts(sb, ", \"locals\": ");
	if (err) {
		pyu_strbuf_puts(sb, "[]");
		if (!alone) {
			pyu_strbuf_puts(sb, ", \"locals_error\": ");
			pyu_strbuf_json_cstr(sb, pyu_error_message(err));
		}
		pyu_error_destroy(err);
		return;
	}
	pyu_strbuf_putc(sb, '[');
	for (uint32_t i = 0; i < sl.count; i++) {
		const struct pyu_shown_local *x = &sl.items[i];
		pyu_strbuf_puts(sb, i ? ",\n      {\"name\": " : "\n      {\"name\": ");
		pyu_strbuf_json_cstr(sb, x->name);
		pyu_strbuf_puts(sb, ", \"kind\": ");
		pyu_strbuf_json_cstr(sb, pyu_local_kind_name(x->kind));
		pyu_strbuf_puts(sb, ", \"type\": ");
		pyu_strbuf_json_cstr(sb, x->type);
		pyu_strbuf_puts(sb, ", \"repr\": ");
		pyu_strbuf_json_cstr(sb, x->repr);
		pyu_strbuf_puts(sb, ", \"address\": ");
		json_addr(sb, x->address);
		if (x->truncated)
			pyu_strbuf_puts(sb, ", \"truncated\": true");
		pyu_strbuf_putc(sb, '}');
	}
	pyu_strbuf_putc(sb, ']');
	if (sl.truncated && !alone)
		pyu_strbuf_puts(sb, ", \"locals_truncated\": true");
	pyu_shown_locals_clear(&sl);
}

static void json_frame_location(struct pyu_strbuf *sb, const struct pyu_code_info *c,
				const struct pyu_frame_info *f, struct json_codes *jc);

// What goes before a frame in a list: nothing (a frame alone), the first's, the others'.
enum json_sep { SEP_NONE, SEP_FIRST, SEP_NEXT };
static const char sep_next[] = ",\n    "; // the first's is the same without its comma
static const char frame_address_key[] = ", \"frame_address\": \"0x";

// Keeps @pre (@pre_len bytes) and what @sb got since @at in @m (if any) for the frame @f.
// Failing to keep it only costs time later.
static void memo_keep_after(struct frame_memo *m, const char *pre, size_t pre_len,
			    const struct pyu_strbuf *sb, size_t at, const struct pyu_frame_info *f)
{
	if (!m || sb->nomem || sb->too_long || sb->len < at)
		return;
	size_t len = sb->len - at;
	char *text = malloc(pre_len + len + 1);
	if (!text)
		return;
	memcpy(text, pre, pre_len);
	memcpy(text + pre_len, sb->buf + at, len);
	free(m->text);
	*m = (struct frame_memo){true, f->loc, f->instruction_offset, text, pre_len + len};
}

// Frame @f after @sep (with PYU_FMT_LOCALS, its locals too).
static void json_frame(struct pyu_strbuf *sb, const struct pyu_stacks *s,
		       const struct pyu_frame_info *f, uint32_t flags, struct json_codes *jc,
		       enum json_sep sep)
{
	const struct pyu_code_info *c = code_of(s, f);
	// SEP_FIRST's separator is SEP_NEXT's after its comma
	const char *sep_text = sep == SEP_NONE ? "" : sep_next + (sep == SEP_FIRST);
	size_t sep_len = sep == SEP_NONE ? 0 : sizeof(sep_next) - 1 - (sep == SEP_FIRST);
	if (!c) {
		pyu_strbuf_append(sb, sep_text, sep_len);
		pyu_strbuf_puts(sb, "{\"kind\": \"error\", \"reason\": ");
		pyu_strbuf_json_cstr(sb, f->reason ? f->reason
					    : f->kind == PYU_FRAME_ERROR ? "unreadable frame"
									  : "no code object");
		pyu_strbuf_printf(sb, ", \"address\": \"0x%" PRIx64 "\"}", f->frame_address);
		return;
	}
	// This runs once per frame of a document, and a deep stack repeats a few locations: a
	// memo holds the separator, the location's text and the frame address's key (made once),
	// copied with the address in one write.
	struct frame_memo *slot;
	const struct frame_memo *m = memo_find(jc && sep != SEP_NONE ? &jc->memos : NULL, f, &slot);
	char *p, *q;
	if (m) {
		size_t skip = sep == SEP_FIRST; // the comma
		if (!(p = pyu_strbuf_room(sb, m->len - skip + 16 + 2)))
			return;
		memcpy(p, m->text + skip, m->len - skip);
		q = p + m->len - skip;
	} else {
		pyu_strbuf_append(sb, sep_text, sep_len);
		size_t at = sb->len;
		json_frame_location(sb, c, f, jc);
		pyu_strbuf_append(sb, frame_address_key, sizeof(frame_address_key) - 1);
		memo_keep_after(slot, sep_next, sizeof(sep_next) - 1, sb, at, f);
		if (!(p = q = pyu_strbuf_room(sb, 16 + 2)))
			return;
	}
	q = pyu_hex_digits(q, f->frame_address);
	*q++ = '"';
	if (!(flags & PYU_FMT_LOCALS)) {
		*q++ = '}';
		pyu_strbuf_commit(sb, (size_t)(q - p));
		return;
	}
	pyu_strbuf_commit(sb, (size_t)(q - p));
	json_locals(sb, s, f, false);
	pyu_strbuf_putc(sb, '}');
}

// A Python frame's JSON from its start to its code address: what frames of one code object at
// one location share.
static void json_frame_location(struct pyu_strbuf *sb, const struct pyu_code_info *c,
				const struct pyu_frame_info *f, struct json_codes *jc)
{
	const struct pyu_location *l = &f->loc;
	pyu_strbuf_puts(sb, "{\"kind\": \"python\"");
	json_codes_put(sb, jc, f->code, c);
	pyu_strbuf_puts(sb, ", \"line\": ");
	json_int_or_null(sb, l->line, l->line == PYU_NO_LINE);
	pyu_strbuf_puts(sb, ", \"end_line\": ");
	json_int_or_null(sb, l->end_line, l->end_line == PYU_NO_LINE);
	pyu_strbuf_puts(sb, ", \"column\": ");
	json_int_or_null(sb, l->column, l->column == PYU_NO_COLUMN);
	pyu_strbuf_puts(sb, ", \"end_column\": ");
	json_int_or_null(sb, l->end_column, l->end_column == PYU_NO_COLUMN);
	pyu_strbuf_puts(sb, ", \"instruction_offset\": ");
	json_int_or_null(sb, f->instruction_offset, f->instruction_offset < 0);
	pyu_strbuf_puts(sb, ", \"code_address\": ");
	json_addr(sb, c->address);
}

void pyu_format_json_exception(struct pyu_strbuf *sb, const struct pyu_thread_info *th)
{
	if (!th || !th->exc_repr) {
		pyu_strbuf_puts(sb, "null");
		return;
	}
	pyu_strbuf_puts(sb, "{\"type\": ");
	pyu_strbuf_json_cstr(sb, th->exc_type);
	pyu_strbuf_puts(sb, ", \"repr\": ");
	pyu_strbuf_json_cstr(sb, th->exc_repr);
	pyu_strbuf_puts(sb, ", \"address\": ");
	json_addr(sb, th->exc_address);
	if (th->exc_truncated)
		pyu_strbuf_puts(sb, ", \"truncated\": true");
	// what the exception line says after "Type: " (str(exc) and the suggestion the traceback
	// module adds), as the text shows it; null with the reason when it is not known
	const struct pyu_exc_node *n0 = th->exc_chain.count ? &th->exc_chain.nodes[0] : NULL;
	pyu_strbuf_puts(sb, ", \"message\": ");
	pyu_strbuf_json_cstr(sb, n0 ? n0->text : NULL);
	pyu_strbuf_puts(sb, ", \"message_error\": ");
	pyu_strbuf_json_cstr(sb, !n0 ? "the exception could not be read"
			     : !n0->text ? EXC_STR_NOT_SHOWN : NULL);
	static const char *const line_from[] = {
		[PYU_TB_LINE_NONE] = NULL, [PYU_TB_LINE_TB_LINENO] = "tb_lineno",
		[PYU_TB_LINE_F_LINENO] = "f_lineno", [PYU_TB_LINE_FIRSTLINENO] = "co_firstlineno",
		[PYU_TB_LINE_BYTECODE] = "bytecode", [PYU_TB_LINE_NO_LINE] = "bytecode",
	};
	pyu_strbuf_puts(sb, ", \"traceback\": [");
	for (uint32_t i = 0; i < th->exc_tb.count; i++) {
		const struct pyu_tb_entry *e = &th->exc_tb.entries[i];
		pyu_strbuf_puts(sb, i ? ", {\"file\": " : "{\"file\": ");
		pyu_strbuf_json_cstr(sb, e->file);
		pyu_strbuf_puts(sb, ", \"line\": ");
		json_int_or_null(sb, e->line, e->line < 0);
		// co_positions() at tb_lasti, as the traceback module takes them (3.11+)
		const struct pyu_location *l = &e->loc;
		bool pos = l->line != PYU_NO_LINE && !e->cython;
		pyu_strbuf_puts(sb, ", \"end_line\": ");
		json_int_or_null(sb, l->end_line, !pos || l->end_line == PYU_NO_LINE);
		pyu_strbuf_puts(sb, ", \"column\": ");
		json_int_or_null(sb, l->column, !pos || l->column == PYU_NO_COLUMN);
		pyu_strbuf_puts(sb, ", \"end_column\": ");
		json_int_or_null(sb, l->end_column, !pos || l->end_column == PYU_NO_COLUMN);
		pyu_strbuf_puts(sb, ", \"line_from\": ");
		pyu_strbuf_json_cstr(sb, line_from[e->line_from]);
		pyu_strbuf_puts(sb, ", \"function\": ");
		pyu_strbuf_json_cstr(sb, e->function);
		pyu_strbuf_puts(sb, e->cython ? ", \"cython\": true}" : ", \"cython\": false}");
	}
	pyu_strbuf_puts(sb, "], \"traceback_error\": ");
	pyu_strbuf_json_cstr(sb, th->exc_tb.error);
	pyu_strbuf_putc(sb, '}');
}

// "syscall", "restarted", "state", "signal", "fault_address", "cpu_seconds" of a thread (README).
static void json_activity(struct pyu_strbuf *sb, const struct pyu_activity *a)
{
	pyu_strbuf_puts(sb, ", \"syscall\": ");
	if (!pyu_in_syscall(a)) {
		pyu_strbuf_puts(sb, "null");
	} else if (a->syscall_name) {
		pyu_strbuf_json_cstr(sb, a->syscall_name);
	} else {
		char nr[32];
		snprintf(nr, sizeof(nr), "%" PRId64, a->syscall);
		pyu_strbuf_json_cstr(sb, nr);
	}
	pyu_strbuf_puts(sb, ", \"restarted\": ");
	pyu_strbuf_json_cstr(sb, a->restarted_name);
	pyu_strbuf_puts(sb, ", \"state\": ");
	pyu_strbuf_json_cstr(sb, pyu_state_words(a->state));
	pyu_strbuf_puts(sb, ", \"signal\": ");
	if (a->signal > 0) {
		char name[32];
		const char *known = pyu_signal_name(a->signal);
		snprintf(name, sizeof(name), "signal %d", a->signal);
		pyu_strbuf_json_cstr(sb, known ? known : name);
	} else {
		pyu_strbuf_puts(sb, "null");
	}
	pyu_strbuf_puts(sb, ", \"fault_address\": ");
	if (a->signal > 0 && a->has_fault_address)
		json_addr(sb, a->fault_address);
	else
		pyu_strbuf_puts(sb, "null");
	pyu_strbuf_puts(sb, ", \"cpu_seconds\": ");
	if (a->has_cpu)
		put_seconds(sb, a->cpu_ns);
	else
		pyu_strbuf_puts(sb, "null");
}

// Everything of a thread's JSON object before its frames.
static void json_thread_head(struct pyu_strbuf *sb, const struct pyu_stacks *s,
			     const struct pyu_thread_info *th, uint32_t omitted)
{
	pyu_strbuf_puts(sb, "  {\"thread_id\": ");
	pyu_strbuf_u64(sb, th->thread_id);
	pyu_strbuf_puts(sb, ", \"native_thread_id\": ");
	json_int_or_null(sb, th->native_thread_id, th->native_thread_id < 0);
	pyu_strbuf_puts(sb, ", \"holds_gil\": ");
	pyu_strbuf_puts(sb, th->holds_gil == 1 ? "true" : th->holds_gil == 0 ? "false" : "null");
	pyu_strbuf_puts(sb, ", \"name\": ");
	pyu_strbuf_json_cstr(sb, th->name);
	pyu_strbuf_puts(sb, ", \"exception\": ");
	pyu_format_json_exception(sb, th);
	pyu_strbuf_puts(sb, ", \"interpreter_id\": ");
	json_int_or_null(sb, th->interpreter_id, th->interpreter_id < 0);
	// the same OS thread in a nested interpreter: this stack goes on from that thread state's
	if (th->inner && th->inner <= s->thread_count)
		pyu_strbuf_printf(sb, ", \"continues\": \"0x%" PRIx64 "\"",
				  s->threads[th->inner - 1].tstate_address);
	else
		pyu_strbuf_puts(sb, ", \"continues\": null");
	json_activity(sb, pyu_thread_activity(s, (uint32_t)(th - s->threads)));
	pyu_strbuf_puts(sb, ", \"tstate_address\": ");
	json_addr(sb, th->tstate_address);
	pyu_strbuf_puts(sb, ", \"frames_omitted\": ");
	pyu_strbuf_u64(sb, omitted);
	pyu_strbuf_puts(sb, ",\n");
}

static void json_native_frame(struct pyu_strbuf *sb, const struct pyu_native_frame *f,
			      uint32_t level)
{
	pyu_strbuf_puts(sb, "{\"kind\": \"native\", \"function\": ");
	pyu_strbuf_json_cstr(sb, f->function);
	pyu_strbuf_puts(sb, ", \"library\": ");
	pyu_strbuf_json_cstr(sb, f->library);
	pyu_strbuf_printf(sb, ", \"pc\": \"0x%" PRIx64 "\", \"file\": ", f->pc);
	pyu_strbuf_json_cstr(sb, f->file);
	pyu_strbuf_puts(sb, ", \"line\": ");
	json_int_or_null(sb, f->line, f->line <= 0);
	// a nameless frame of an extension module: which module, Cython's or not, with symbols
	const struct pyu_cython_module *mod = f->module && f->module->name ? f->module : NULL;
	if (mod) {
		pyu_strbuf_puts(sb, ", \"extension_module\": ");
		pyu_strbuf_json_cstr(sb, mod->name);
		pyu_strbuf_printf(sb, ", \"cython\": %s, \"module_source\": ",
				  mod->cython ? "true" : "false");
		pyu_strbuf_json_cstr(sb, mod->source);
		pyu_strbuf_printf(sb, ", \"symbols\": %s", mod->symbols ? "true" : "false");
	}
	pyu_strbuf_printf(sb, ", \"level\": %u, \"debugger_level\": %u}", f->number, level);
}

static const char *const line_from_names[] = {
	[PYU_CYTHON_LINE_NONE] = NULL,
	[PYU_CYTHON_LINE_DWARF] = "dwarf",
	[PYU_CYTHON_LINE_C_FILE] = "c_file",
};

// A Cython function: its Python-level name, .pyx file and line, where the line came from
// ("line_from": "dwarf", "c_file" or null with "no_line_reason"), and the C side.
static void json_cython_frame(struct pyu_strbuf *sb, const struct pyu_native_frame *f,
			      uint32_t level)
{
	const struct pyu_cython_frame *cy = f->cython;
	pyu_strbuf_puts(sb, "{\"kind\": \"cython\", \"function\": ");
	pyu_strbuf_json_cstr(sb, cy->function);
	pyu_strbuf_puts(sb, ", \"qualname\": ");
	pyu_strbuf_json_cstr(sb, cy->qualname);
	pyu_strbuf_puts(sb, ", \"module\": ");
	pyu_strbuf_json_cstr(sb, cy->module);
	pyu_strbuf_puts(sb, ", \"file\": ");
	pyu_strbuf_json_cstr(sb, cy->file);
	pyu_strbuf_puts(sb, ", \"line\": ");
	json_int_or_null(sb, cy->line, cy->line <= 0);
	pyu_strbuf_puts(sb, ", \"line_from\": ");
	pyu_strbuf_json_cstr(sb, line_from_names[cy->line_from]);
	pyu_strbuf_puts(sb, ", \"no_line_reason\": ");
	pyu_strbuf_json_cstr(sb, cy->line_from == PYU_CYTHON_LINE_NONE ? cy->why : NULL);
	pyu_strbuf_puts(sb, ", \"name_from\": ");
	pyu_strbuf_json_cstr(sb, cy->name_from_source ? "source" : "symbol");
	pyu_strbuf_puts(sb, ", \"c_function\": ");
	pyu_strbuf_json_cstr(sb, f->function);
	pyu_strbuf_puts(sb, ", \"c_file\": ");
	pyu_strbuf_json_cstr(sb, cy->line_from == PYU_CYTHON_LINE_DWARF ? NULL : f->file);
	pyu_strbuf_puts(sb, ", \"c_line\": ");
	json_int_or_null(sb, f->line, f->line <= 0 || cy->line_from == PYU_CYTHON_LINE_DWARF);
	pyu_strbuf_puts(sb, ", \"library\": ");
	pyu_strbuf_json_cstr(sb, f->library);
	pyu_strbuf_printf(sb, ", \"pc\": \"0x%" PRIx64 "\", \"level\": %u, \"debugger_level\": %u}",
			  f->pc, f->number, level);
}

// --native: "frames" is the merged stack; when the sides do not fit, "frames" keeps the Python
// frames, "native_frames" the native ones and "merge_error" says why (null when merged).
static struct pyu_error *json_thread_native(struct pyu_strbuf *sb, const struct pyu_stacks *s,
					    uint32_t thread, uint32_t flags, uint32_t limit,
					    struct json_codes *jc)
{
	const struct pyu_thread_info *th = &s->threads[thread];
	struct pyu_merge m;
	struct pyu_error *err = pyu_merge_thread(s, th, flags & PYU_FMT_NATIVE_ALL, &m);
	if (err)
		return err;
	uint32_t shown = limit && limit < m.count ? limit : m.count;
	uint32_t omitted = 0, listed = 0;
	for (uint32_t i = shown; i < m.count; i++)
		if (m.merged || m.items[i].python)
			omitted++;
	json_thread_head(sb, s, th, omitted);
	pyu_strbuf_puts(sb, "   \"merge_error\": ");
	pyu_strbuf_json_cstr(sb, m.merged ? NULL : m.reason);
	pyu_strbuf_puts(sb, ",\n   \"frames\": [");
	for (uint32_t i = 0; i < shown; i++) {
		const struct pyu_merge_item *it = &m.items[i];
		if (!m.merged && !it->python)
			continue;
		enum json_sep sep = listed++ ? SEP_NEXT : SEP_FIRST;
		if (it->python) {
			json_frame(sb, s, &th->frames[it->index], flags, jc, sep);
			continue;
		}
		pyu_strbuf_puts(sb, sep == SEP_NEXT ? ",\n    " : "\n    ");
		if (it->cython)
			json_cython_frame(sb, &th->native[it->index], it->index);
		else
			json_native_frame(sb, &th->native[it->index], it->index);
	}
	pyu_strbuf_puts(sb, "]");
	if (!m.merged) {
		pyu_strbuf_puts(sb, ",\n   \"native_frames\": [");
		uint32_t k = 0;
		for (uint32_t i = 0; i < m.count; i++) {
			if (m.items[i].python)
				continue;
			pyu_strbuf_puts(sb, k++ ? ",\n    " : "\n    ");
			if (m.items[i].cython)
				json_cython_frame(sb, &th->native[m.items[i].index],
						  m.items[i].index);
			else
				json_native_frame(sb, &th->native[m.items[i].index],
						  m.items[i].index);
		}
		pyu_strbuf_puts(sb, "]");
	}
	pyu_strbuf_puts(sb, "}");
	pyu_merge_release(&m);
	return NULL;
}

static void json_thread(struct pyu_strbuf *sb, const struct pyu_stacks *s, uint32_t thread,
			uint32_t flags, uint32_t limit, struct json_codes *jc)
{
	const struct pyu_thread_info *th = &s->threads[thread];
	uint32_t shown = limit && limit < th->frame_count ? limit : th->frame_count;
	json_thread_head(sb, s, th, th->frame_count - shown);
	pyu_strbuf_puts(sb, "   \"frames\": [");
	for (uint32_t i = 0; i < shown; i++)
		json_frame(sb, s, &th->frames[i], flags, jc, i ? SEP_NEXT : SEP_FIRST);
	pyu_strbuf_puts(sb, "]}");
}

// The threads [first, first + count), or with @chain thread @first and the thread states that
// continue its stack (one OS thread through nested interpreters).
static struct pyu_error *json_document(struct pyu_strbuf *sb, const struct pyu_stacks *s,
				       uint32_t first, uint32_t count, bool chain, uint32_t flags,
				       uint32_t limit)
{
	struct pyu_error *err = NULL;
	pyu_strbuf_puts(sb, "{\"pyunwind\": 1,\n \"python\": {\"version\": ");
	pyu_strbuf_json_cstr(sb, s->version);
	pyu_strbuf_printf(sb, ", \"hexversion\": %" PRIu64 ", \"debug_build\": %s, "
			  "\"free_threaded\": %s},\n \"threads\": [",
			  s->hexversion, s->debug_build ? "true" : "false",
			  s->free_threaded ? "true" : "false");
	struct json_codes jc = {.count = s->code_count};
	pyu_strbuf_init(&jc.text, PYU_STRBUF_MAX);
	if (jc.count) {
		jc.off = malloc(jc.count * sizeof(*jc.off));
		jc.len = calloc(jc.count, sizeof(*jc.len));
	}
	struct json_codes *use = jc.off && jc.len ? &jc : NULL;
	memos_init(&jc.memos, s);
	for (uint32_t i = 0, t = first; i < count; i++) {
		pyu_strbuf_puts(sb, i ? ",\n" : "\n");
		if (flags & PYU_FMT_NATIVE) {
			if ((err = json_thread_native(sb, s, first + i, flags, limit, use)))
				break;
			continue;
		}
		json_thread(sb, s, chain ? t : first + i, flags, limit, use);
		if (chain) {
			uint32_t outer = s->threads[t].outer;
			if (!outer || outer > s->thread_count || i + 1 >= s->thread_count)
				break;
			t = outer - 1;
			count++;
		}
	}
	free(jc.off);
	free(jc.len);
	pyu_strbuf_release(&jc.text);
	memos_release(&jc.memos);
	if (err)
		return err;
	pyu_strbuf_puts(sb, "],\n \"errors\": [");
	for (uint32_t i = 0; i < s->error_count; i++) {
		if (i)
			pyu_strbuf_puts(sb, ", ");
		pyu_strbuf_json_cstr(sb, s->errors[i] ? s->errors[i] : "?");
	}
	// Notes say how the interpreter was found and what was worked around (for triage).
	pyu_strbuf_puts(sb, "],\n \"notes\": [");
	for (uint32_t i = 0; i < s->note_count; i++) {
		if (i)
			pyu_strbuf_puts(sb, ", ");
		pyu_strbuf_json_cstr(sb, s->notes[i] ? s->notes[i] : "?");
	}
	pyu_strbuf_puts(sb, "]}\n");
	return NULL;
}

// ---- public -----------------------------------------------------------------------------

static struct pyu_error *check_thread(const struct pyu_stacks *s, uint32_t thread)
{
	if (!s)
		return pyu_error_create(PYU_ERR_ARGUMENT, "no stacks");
	if (thread >= s->thread_count)
		return pyu_error_create(PYU_ERR_NOT_FOUND, "no thread #%u (the target has %u)",
					thread, s->thread_count);
	return NULL;
}

static struct pyu_error *check_frame(const struct pyu_stacks *s, uint32_t thread, uint32_t frame)
{
	struct pyu_error *err = check_thread(s, thread);
	if (err)
		return err;
	if (frame >= s->threads[thread].frame_count)
		return pyu_error_create(PYU_ERR_NOT_FOUND,
					"no Python frame #%u in this thread (it has %u)", frame,
					s->threads[thread].frame_count);
	return NULL;
}

// About how long py-bt's document for threads [@first, @first + @count) will be: a little
// more than it will be, for plain frames (each frame's fixed text and its code's names; a
// source line and carets taken as 160 bytes). Locals and native frames are not counted: the
// buffer grows for them as usual. Cannot fail.
static size_t estimate_bt(const struct pyu_stacks *s, uint32_t first, uint32_t count,
			  uint32_t flags)
{
	bool json = flags & PYU_FMT_JSON;
	size_t *code_len = s->code_count ? calloc(s->code_count, sizeof(*code_len)) : NULL;
	size_t total = 4096;
	for (uint32_t i = first; i < first + count && i < s->thread_count; i++) {
		const struct pyu_thread_info *th = &s->threads[i];
		total += json ? 512 : 128;
		for (uint32_t k = 0; k < th->frame_count; k++) {
			int32_t c = th->frames[k].code;
			size_t n = json ? 256 : 64;
			if (!json && (flags & PYU_FMT_SOURCE))
				n += 160;
			if (code_len && c >= 0 && (uint32_t)c < s->code_count) {
				const struct pyu_code_info *ci = &s->codes[c];
				if (!code_len[c])
					code_len[c] = 1 + (ci->filename ? strlen(ci->filename) : 0) +
						      (ci->name ? strlen(ci->name) : 0) +
						      (json && ci->qualname ? strlen(ci->qualname) : 0);
				n += code_len[c];
			}
			total += n;
		}
		if (total > (64u << 20)) // a hint, not a promise: past this, grow as needed
			break;
	}
	free(code_len);
	return total;
}

PYU_PUBLIC struct pyu_error *pyu_format_bt(const struct pyu_stacks *s, uint32_t thread,
					   uint32_t flags, uint32_t limit, char **ret)
{
	bool all = flags & PYU_FMT_ALL;
	if (!s)
		return pyu_error_create(PYU_ERR_ARGUMENT, "no stacks");
	if (!all) {
		struct pyu_error *err = check_thread(s, thread);
		if (err)
			return err;
	}
	uint32_t first = all ? 0 : thread, count = all ? s->thread_count : 1;
	struct pyu_strbuf sb;
	pyu_strbuf_init(&sb, PYU_STRBUF_MAX);
	pyu_strbuf_reserve(&sb, estimate_bt(s, first, count, flags));
	if (flags & (PYU_FMT_JSON | PYU_FMT_LOCALS))
		pyu_stacks_read_thread_values(s);
	// What the threads do, for their headers: read together (a nested thread state's own,
	// whose header is its outermost one's, is read too)
	pyu_read_activities(s, first, count);
	struct pyu_error *err = NULL;
	if (flags & PYU_FMT_JSON) {
		err = json_document(&sb, s, first, count, !all, flags, limit);
		if (err) {
			pyu_strbuf_release(&sb);
			return err;
		}
		return pyu_strbuf_finish(&sb, ret);
	}
	struct pyu_source_cache *cache = pyu_source_cache_create(s->target);
	struct frame_memos memos;
	memos_init(&memos, s);
	if (all)
		text_version(&sb, s);
	for (uint32_t i = 0, printed = 0; i < count && !err; i++) {
		if (all && s->threads[first + i].inner && !(flags & PYU_FMT_NATIVE))
			continue; // shown after the thread state it continues
		if (printed++ || all)
			pyu_strbuf_putc(&sb, '\n');
		if (flags & PYU_FMT_NATIVE)
			err = text_thread_native(&sb, s, first + i, flags, limit, cache, &memos);
		else
			text_thread(&sb, s, first + i, flags, limit, cache, &memos);
	}
	memos_release(&memos);
	if (err) {
		pyu_source_cache_destroy(cache);
		pyu_strbuf_release(&sb);
		return err;
	}
	if (s->error_count)
		pyu_strbuf_putc(&sb, '\n');
	text_errors(&sb, s);
	pyu_source_cache_destroy(cache);
	return pyu_strbuf_finish(&sb, ret);
}

static void put_cell(struct pyu_strbuf *sb, int width, int64_t v, bool absent)
{
	if (absent)
		pyu_strbuf_printf(sb, " %*s", width, "-");
	else
		pyu_strbuf_printf(sb, " %*" PRId64, width, v);
}

static const char *format_name(enum pyu_linetable_format f)
{
	switch (f) {
	case PYU_LNOTAB_UNSIGNED: return "co_lnotab, unsigned";
	case PYU_LNOTAB_SIGNED: return "co_lnotab";
	case PYU_LINETABLE_310: return "co_linetable, PEP 626";
	case PYU_LOCATIONS_311: return "locations, PEP 657";
	}
	return "unknown format";
}

// Every range of the code object's table; the one holding @offset marked "->".
static void text_table(struct pyu_strbuf *sb, const struct pyu_code_info *c, int64_t offset)
{
	struct pyu_linetable lt = {c->table, c->table_len, c->firstlineno, c->format, c->code_len};
	pyu_strbuf_printf(sb,
			  "Line table (%s), firstlineno %d, %" PRIu64 " bytes of bytecode, %zu "
			  "bytes of table:\n",
			  format_name(c->format), c->firstlineno, c->code_len, c->table_len);
	pyu_strbuf_puts(sb, "     start    end   line end_line column end_column\n");
	struct pyu_linetable_iter it;
	pyu_linetable_iter_init(&it, &lt);
	struct pyu_line_range r;
	enum pyu_lt_status st = PYU_LT_OK;
	uint32_t n = 0;
	for (; n < PYU_MAX_TABLE_RANGES; n++) {
		st = pyu_linetable_next(&it, &r);
		if (st != PYU_LT_OK)
			break;
		bool here = offset >= 0 && (uint64_t)offset >= r.start && (uint64_t)offset < r.end;
		pyu_strbuf_puts(sb, here ? "  ->" : "    ");
		put_cell(sb, 6, (int64_t)r.start, false);
		put_cell(sb, 6, (int64_t)r.end, false);
		put_cell(sb, 6, r.loc.line, r.loc.line == PYU_NO_LINE);
		put_cell(sb, 8, r.loc.end_line, r.loc.end_line == PYU_NO_LINE);
		put_cell(sb, 6, r.loc.column, r.loc.column == PYU_NO_COLUMN);
		put_cell(sb, 10, r.loc.end_column, r.loc.end_column == PYU_NO_COLUMN);
		pyu_strbuf_putc(sb, '\n');
	}
	if (st == PYU_LT_CORRUPT)
		pyu_strbuf_printf(sb, "<error: line table corrupt after %u ranges>\n", n);
	else if (n == PYU_MAX_TABLE_RANGES)
		pyu_strbuf_printf(sb, "<error: stopped after %u ranges>\n", n);
}

// The line table of @c as JSON: its header and every range decoded, [start, end, line,
// end_line, column, end_column] (byte offsets into the bytecode; null where CPython has none).
static void json_table(struct pyu_strbuf *sb, const struct pyu_code_info *c,
		       const struct pyu_frame_info *f)
{
	struct pyu_linetable lt = {c->table, c->table_len, c->firstlineno, c->format, c->code_len};
	pyu_strbuf_puts(sb, "{\"format\": ");
	pyu_strbuf_json_cstr(sb, format_name(c->format));
	pyu_strbuf_printf(sb, ", \"firstlineno\": %d, \"code_length\": %" PRIu64
			  ", \"table_length\": %zu, \"code_address\": ", c->firstlineno,
			  c->code_len, c->table_len);
	json_addr(sb, c->address);
	pyu_strbuf_puts(sb, ", \"frame_address\": ");
	json_addr(sb, f->frame_address);
	pyu_strbuf_puts(sb, ", \"instruction_offset\": ");
	json_int_or_null(sb, f->instruction_offset, f->instruction_offset < 0);
	pyu_strbuf_puts(sb, ", \"ranges\": [");
	struct pyu_linetable_iter it;
	pyu_linetable_iter_init(&it, &lt);
	struct pyu_line_range r;
	enum pyu_lt_status st = PYU_LT_OK;
	uint32_t n = 0;
	for (; n < PYU_MAX_TABLE_RANGES; n++) {
		st = pyu_linetable_next(&it, &r);
		if (st != PYU_LT_OK)
			break;
		pyu_strbuf_printf(sb, "%s[%" PRIu64 ", %" PRIu64 ", ", n ? ", " : "",
				  (uint64_t)r.start, (uint64_t)r.end);
		json_int_or_null(sb, r.loc.line, r.loc.line == PYU_NO_LINE);
		pyu_strbuf_puts(sb, ", ");
		json_int_or_null(sb, r.loc.end_line, r.loc.end_line == PYU_NO_LINE);
		pyu_strbuf_puts(sb, ", ");
		json_int_or_null(sb, r.loc.column, r.loc.column == PYU_NO_COLUMN);
		pyu_strbuf_puts(sb, ", ");
		json_int_or_null(sb, r.loc.end_column, r.loc.end_column == PYU_NO_COLUMN);
		pyu_strbuf_putc(sb, ']');
	}
	pyu_strbuf_puts(sb, "], \"error\": ");
	if (st == PYU_LT_CORRUPT)
		pyu_strbuf_printf(sb, "\"line table corrupt after %u ranges\"", n);
	else if (n == PYU_MAX_TABLE_RANGES)
		pyu_strbuf_printf(sb, "\"stopped after %u ranges\"", n);
	else
		pyu_strbuf_puts(sb, "null");
	pyu_strbuf_puts(sb, "}\n");
}

PYU_PUBLIC struct pyu_error *pyu_format_line(const struct pyu_stacks *s, uint32_t thread,
					     uint32_t frame, uint32_t flags, char **ret)
{
	struct pyu_error *err = check_frame(s, thread, frame);
	if (err)
		return err;
	const struct pyu_frame_info *f = &s->threads[thread].frames[frame];
	const struct pyu_code_info *c = code_of(s, f);
	struct pyu_strbuf sb;
	pyu_strbuf_init(&sb, PYU_STRBUF_MAX);
	if (flags & PYU_FMT_JSON) {
		if (!c) {
			pyu_strbuf_release(&sb);
			return pyu_error_create(PYU_ERR_NOT_FOUND, "frame #%u could not be read: %s",
						frame, f->reason ? f->reason : "no code object");
		}
		json_table(&sb, c, f);
		return pyu_strbuf_finish(&sb, ret);
	}
	frame_number(&sb, frame);
	if (!c) {
		text_error_frame(&sb, f);
		return pyu_strbuf_finish(&sb, ret);
	}
	text_location(&sb, c, f);
	struct pyu_source_cache *cache = pyu_source_cache_create(s->target);
	source_with_carets(&sb, cache, pyu_caret_rules_for(s->hexversion), c, &f->loc);
	pyu_source_cache_destroy(cache);
	const struct pyu_location *l = &f->loc;
	pyu_strbuf_puts(&sb, "    line ");
	put_int_or(&sb, l->line, l->line == PYU_NO_LINE, "None");
	pyu_strbuf_puts(&sb, ", end_line ");
	put_int_or(&sb, l->end_line, l->end_line == PYU_NO_LINE, "None");
	pyu_strbuf_puts(&sb, ", column ");
	put_int_or(&sb, l->column, l->column == PYU_NO_COLUMN, "None");
	pyu_strbuf_puts(&sb, ", end_column ");
	put_int_or(&sb, l->end_column, l->end_column == PYU_NO_COLUMN, "None");
	pyu_strbuf_puts(&sb, "\n    instruction_offset ");
	put_int_or(&sb, f->instruction_offset, f->instruction_offset < 0, "None");
	pyu_strbuf_printf(&sb, ", code object 0x%" PRIx64 ", frame 0x%" PRIx64 "\n", c->address,
			  f->frame_address);
	if (flags & PYU_FMT_TABLE)
		text_table(&sb, c, f->instruction_offset);
	return pyu_strbuf_finish(&sb, ret);
}

#define PYU_LIST_CONTEXT 5 // lines before and after the current one

PYU_PUBLIC struct pyu_error *pyu_format_list(const struct pyu_stacks *s, uint32_t thread,
					     uint32_t frame, int64_t first, int64_t last,
					     char **ret)
{
	struct pyu_error *err = check_frame(s, thread, frame);
	if (err)
		return err;
	const struct pyu_frame_info *f = &s->threads[thread].frames[frame];
	const struct pyu_code_info *c = code_of(s, f);
	if (!c)
		return pyu_error_create(PYU_ERR_NOT_FOUND, "frame #%u could not be read: %s", frame,
					f->reason ? f->reason : "no code object");
	if ((first || last) && (first < 1 || last < first))
		return pyu_error_create(PYU_ERR_ARGUMENT, "bad line range %" PRId64 ",%" PRId64,
					first, last);
	int64_t current = f->loc.line != PYU_NO_LINE ? f->loc.line : c->firstlineno;
	if (!first && !last) {
		first = current > PYU_LIST_CONTEXT ? current - PYU_LIST_CONTEXT : 1;
		last = current + PYU_LIST_CONTEXT;
	}
	struct pyu_source_cache *cache = pyu_source_cache_create(s->target);
	int64_t count = c->filename ? pyu_source_line_count(cache, c->filename) : -1;
	if (count < 0) {
		pyu_source_cache_destroy(cache);
		return pyu_error_create(PYU_ERR_IO, "source file \"%s\" is not readable here",
					c->filename ? c->filename : "???");
	}
	if (first > count) {
		pyu_source_cache_destroy(cache);
		return pyu_error_create(PYU_ERR_NOT_FOUND,
					"line %" PRId64 " is past the end of \"%s\" (%" PRId64
					" lines; has the file changed?)",
					first, c->filename, count);
	}
	if (last > count)
		last = count;
	char num[24];
	int width = snprintf(num, sizeof(num), "%" PRId64, last) + 1;
	if (width < 4)
		width = 4;
	struct pyu_strbuf sb;
	pyu_strbuf_init(&sb, PYU_STRBUF_MAX);
	if (!source_matches(cache, c))
		pyu_strbuf_puts(&sb, "(the file has changed since this code was compiled: its lines "
				     "may not be the ones running)\n");
	for (int64_t i = first; i <= last; i++) {
		const char *text;
		size_t n;
		if (!pyu_source_line(cache, c->filename, i, &text, &n))
			break;
		snprintf(num, sizeof(num), "%s%" PRId64, i == current ? ">" : "", i);
		pyu_strbuf_printf(&sb, "%*s    ", width, num);
		pyu_strbuf_text(&sb, text, n);
		pyu_strbuf_putc(&sb, '\n');
	}
	pyu_source_cache_destroy(cache);
	return pyu_strbuf_finish(&sb, ret);
}

PYU_PUBLIC struct pyu_error *pyu_format_locals(const struct pyu_stacks *s, uint32_t thread,
					       uint32_t frame, uint32_t flags, char **ret)
{
	struct pyu_error *err = check_frame(s, thread, frame);
	if (err)
		return err;
	struct pyu_strbuf sb;
	pyu_strbuf_init(&sb, PYU_STRBUF_MAX);
	if (flags & PYU_FMT_JSON) {
		json_locals(&sb, s, &s->threads[thread].frames[frame], true);
		pyu_strbuf_putc(&sb, '\n');
		return pyu_strbuf_finish(&sb, ret);
	}
	struct pyu_shown_locals sl;
	err = pyu_frame_shown_locals(s, thread, frame, &sl);
	if (err) {
		pyu_strbuf_release(&sb);
		return err;
	}
	if (!sl.count)
		pyu_strbuf_puts(&sb, "(no locals)\n");
	for (uint32_t i = 0; i < sl.count; i++) {
		put_text(&sb, sl.items[i].name);
		pyu_strbuf_puts(&sb, " = ");
		put_text(&sb, sl.items[i].repr);
		pyu_strbuf_putc(&sb, '\n');
	}
	if (sl.truncated)
		pyu_strbuf_printf(&sb, "(more locals not shown: limit %u)\n", PYU_LOCALS_MAX);
	pyu_shown_locals_clear(&sl);
	return pyu_strbuf_finish(&sb, ret);
}

PYU_PUBLIC struct pyu_error *pyu_format_print(const struct pyu_stacks *s, uint32_t thread,
					      uint32_t frame, const char *path, uint32_t flags,
					      char **ret)
{
	struct pyu_error *err = check_frame(s, thread, frame);
	if (err)
		return err;
	char *where = NULL;
	uint64_t addr = 0;
	struct pyu_values *v;
	err = pyu_frame_lookup(s, thread, frame, path, &where, &addr);
	if (!err)
		err = pyu_stacks_values(s, &v);
	if (err) {
		free(where);
		return err;
	}
	struct pyu_strbuf repr, sb;
	pyu_strbuf_init(&repr, PYU_STRBUF_MAX);
	pyu_value_repr(v, addr, &repr, NULL);
	char *text = NULL;
	err = pyu_strbuf_finish(&repr, &text);
	if (err) {
		free(where);
		return err;
	}
	pyu_strbuf_init(&sb, PYU_STRBUF_MAX);
	if (flags & PYU_FMT_JSON) {
		pyu_strbuf_puts(&sb, "{\"found\": ");
		pyu_strbuf_json_cstr(&sb, where);
		pyu_strbuf_puts(&sb, ", \"repr\": ");
		pyu_strbuf_json_cstr(&sb, text);
		pyu_strbuf_puts(&sb, ", \"address\": ");
		json_addr(&sb, addr);
		pyu_strbuf_puts(&sb, "}\n");
	} else {
		put_text(&sb, where);
		pyu_strbuf_puts(&sb, " = ");
		put_text(&sb, text);
		pyu_strbuf_putc(&sb, '\n');
	}
	free(where);
	free(text);
	return pyu_strbuf_finish(&sb, ret);
}

PYU_PUBLIC struct pyu_error *pyu_format_native_frame(const struct pyu_stacks *s, uint32_t thread,
						     uint32_t level, char **ret)
{
	struct pyu_error *err = check_thread(s, thread);
	if (err)
		return err;
	const struct pyu_thread_info *th = &s->threads[thread];
	struct pyu_merge m;
	err = pyu_merge_thread(s, th, false, &m);
	if (err)
		return err;
	struct pyu_strbuf sb;
	pyu_strbuf_init(&sb, PYU_STRBUF_MAX);
	bool first = true;
	for (uint32_t i = 0; m.merged && i < th->frame_count; i++) {
		const struct pyu_code_info *c = code_of(s, &th->frames[i]);
		if (m.runner[i] != (int32_t)level || !c)
			continue;
		pyu_strbuf_puts(&sb, first ? "[Python: " : "; ");
		first = false;
		text_location_words(&sb, c, &th->frames[i]);
	}
	if (!first)
		pyu_strbuf_putc(&sb, ']');
	for (uint32_t i = 0; i < m.count; i++) {
		const struct pyu_merge_item *it = &m.items[i];
		if (it->cython && it->index == level) {
			pyu_strbuf_puts(&sb, first ? "[Cython: " : " [Cython: ");
			text_cython_words(&sb, th->native[level].cython);
			pyu_strbuf_putc(&sb, ']');
		}
	}
	pyu_merge_release(&m);
	return pyu_strbuf_finish(&sb, ret);
}

// ---- pieces other formatters reuse (format.h) ---------------------------------------------

void pyu_format_json_frame(struct pyu_strbuf *sb, const struct pyu_stacks *s,
			   const struct pyu_frame_info *f)
{
	json_frame(sb, s, f, 0, NULL, SEP_NONE);
}

void pyu_format_json_frame_locals(struct pyu_strbuf *sb, const struct pyu_stacks *s,
				  const struct pyu_frame_info *f)
{
	json_frame(sb, s, f, PYU_FMT_LOCALS, NULL, SEP_NONE);
}

void pyu_format_text_frame_locals(struct pyu_strbuf *sb, const struct pyu_stacks *s,
				  const struct pyu_frame_info *f)
{
	if (code_of(s, f))
		text_locals(sb, s, f, "    ");
}

void pyu_format_text_frame(struct pyu_strbuf *sb, const struct pyu_stacks *s,
			   const struct pyu_frame_info *f, uint32_t number, uint32_t flags,
			   struct pyu_source_cache *cache)
{
	frame_number(sb, number);
	const struct pyu_code_info *c = code_of(s, f);
	if (!c) {
		text_error_frame(sb, f);
		return;
	}
	text_location(sb, c, f);
	if (flags & PYU_FMT_SOURCE)
		source_with_carets(sb, cache, pyu_caret_rules_for(s->hexversion), c, &f->loc);
}

void pyu_format_text_location(struct pyu_strbuf *sb, const struct pyu_stacks *s,
			      const struct pyu_frame_info *f)
{
	const struct pyu_code_info *c = code_of(s, f);
	if (c)
		text_location_words(sb, c, f);
	else
		text_error_frame(sb, f);
}

// ---- a Cython frame selected (py-line, py-list, py-locals, py-print) -------------------------

// Where a Cython frame's locals are, said plainly: C variables of its native frame, which the
// debugger reads when the module has DWARF (its frame then has a source file).
static void cython_locals_text(struct pyu_strbuf *sb, const struct pyu_native_frame *f,
			       uint32_t level)
{
	const struct pyu_cython_frame *cy = f->cython;
	pyu_strbuf_printf(sb, "cython #%u (", f->number);
	put_text(sb, cy->qualname ? cy->qualname : "???");
	pyu_strbuf_puts(sb, ") is a Cython function: its locals are C variables of its native "
			    "frame, not Python objects, so py-locals cannot list them. ");
	if (f->file)
		pyu_strbuf_printf(sb, "The debugger reads them: `frame %u` then `info locals` (gdb), "
				      "`frame select %u` then `frame variable` (lldb); a local NAME "
				      "is the C variable __pyx_v_NAME (some may be optimized out).",
				  level, level);
	else
		pyu_strbuf_puts(sb, "Its module has no debug information (DWARF), so the debugger "
				    "cannot read them either: a build with -g, or its debug symbols "
				    "installed, would have them.");
}

// Lines @first..@last (0, 0: around its line) of the .pyx Cython frame @cy runs, the current
// line marked ">".
static struct pyu_error *cython_listing(struct pyu_strbuf *sb, const struct pyu_stacks *s,
					const struct pyu_cython_frame *cy, uint32_t number,
					int64_t first, int64_t last)
{
	if (!cy->file || cy->line <= 0)
		return pyu_error_create(PYU_ERR_NOT_FOUND, "cython #%u (%s) has no .pyx line: %s",
					number, cy->qualname ? cy->qualname : "???",
					cy->why ? cy->why : "unknown");
	if ((first || last) && (first < 1 || last < first))
		return pyu_error_create(PYU_ERR_ARGUMENT, "bad line range %" PRId64 ",%" PRId64,
					first, last);
	if (!first && !last) {
		first = cy->line > PYU_LIST_CONTEXT ? cy->line - PYU_LIST_CONTEXT : 1;
		last = cy->line + PYU_LIST_CONTEXT;
	}
	struct pyu_source_cache *cache = pyu_source_cache_create(s->target);
	int64_t count = pyu_source_line_count(cache, cy->file);
	struct pyu_error *err = NULL;
	if (count < 0)
		err = pyu_error_create(PYU_ERR_IO, "source file \"%s\" is not readable here",
				       cy->file);
	else if (first > count)
		err = pyu_error_create(PYU_ERR_NOT_FOUND,
				       "line %" PRId64 " is past the end of \"%s\" (%" PRId64
				       " lines; has the file changed?)", first, cy->file, count);
	if (err) {
		pyu_source_cache_destroy(cache);
		return err;
	}
	if (last > count)
		last = count;
	char num[24];
	int width = snprintf(num, sizeof(num), "%" PRId64, last) + 1;
	if (width < 4)
		width = 4;
	for (int64_t i = first; i <= last; i++) {
		const char *text;
		size_t n;
		if (!pyu_source_line(cache, cy->file, i, &text, &n))
			break;
		snprintf(num, sizeof(num), "%s%" PRId64, i == cy->line ? ">" : "", i);
		pyu_strbuf_printf(sb, "%*s    ", width, num);
		pyu_strbuf_text(sb, text, n);
		pyu_strbuf_putc(sb, '\n');
	}
	pyu_source_cache_destroy(cache);
	return NULL;
}

PYU_PUBLIC struct pyu_error *pyu_format_cython_frame(const struct pyu_stacks *s, uint32_t thread,
						     uint32_t level, uint32_t what, int64_t first,
						     int64_t last, uint32_t flags, char **ret)
{
	struct pyu_error *err = check_thread(s, thread);
	if (err)
		return err;
	const struct pyu_thread_info *th = &s->threads[thread];
	const struct pyu_native_frame *f = level < th->native_count ? &th->native[level] : NULL;
	if (!f || !f->cython || (f->cython->role != PYU_CYTHON_FUNCTION &&
				 f->cython->role != PYU_CYTHON_WRAPPER))
		return pyu_error_create(PYU_ERR_NOT_FOUND,
					"native frame #%u of this thread runs no Cython function",
					level);
	const struct pyu_cython_frame *cy = f->cython;
	struct pyu_strbuf sb;
	pyu_strbuf_init(&sb, PYU_STRBUF_MAX);
	if (what == PYU_TASK_LINE) {
		struct pyu_source_cache *cache = pyu_source_cache_create(s->target);
		text_cython_frame(&sb, f, flags, cache);
		pyu_source_cache_destroy(cache);
		pyu_strbuf_puts(&sb, "    module ");
		put_text(&sb, cy->module ? cy->module : "?");
		pyu_strbuf_puts(&sb, ", C function ");
		put_text(&sb, f->function ? f->function : "??");
		if (f->file) {
			pyu_strbuf_puts(&sb, " at ");
			put_text(&sb, f->file);
			if (f->line > 0)
				pyu_strbuf_printf(&sb, ":%" PRId64, f->line);
		}
		if (f->library) {
			pyu_strbuf_puts(&sb, " from ");
			put_text(&sb, f->library);
		}
		pyu_strbuf_printf(&sb, " (the debugger's frame %u)\n", level);
	} else if (what == PYU_TASK_LIST) {
		err = cython_listing(&sb, s, cy, f->number, first, last);
	} else if (what == PYU_TASK_LOCALS && (flags & PYU_FMT_JSON)) {
		struct pyu_strbuf why;
		pyu_strbuf_init(&why, PYU_STRBUF_MAX);
		cython_locals_text(&why, f, level);
		char *text = NULL;
		err = pyu_strbuf_finish(&why, &text);
		if (!err) {
			pyu_strbuf_printf(&sb, "{\"kind\": \"cython\", \"level\": %u, "
					  "\"debugger_level\": %u, \"function\": ", f->number, level);
			pyu_strbuf_json_cstr(&sb, cy->qualname);
			pyu_strbuf_puts(&sb, ", \"locals\": null, \"reason\": ");
			pyu_strbuf_json_cstr(&sb, text);
			pyu_strbuf_puts(&sb, "}\n");
		}
		free(text);
	} else if (what == PYU_TASK_LOCALS) {
		cython_locals_text(&sb, f, level);
		pyu_strbuf_putc(&sb, '\n');
	} else if (what == PYU_TASK_PRINT) {
		struct pyu_strbuf why;
		pyu_strbuf_init(&why, PYU_STRBUF_MAX);
		cython_locals_text(&why, f, level);
		char *text = NULL;
		err = pyu_strbuf_finish(&why, &text);
		if (!err)
			err = pyu_error_create(PYU_ERR_NOT_FOUND, "%s", text);
		free(text);
	} else {
		err = pyu_error_create(PYU_ERR_ARGUMENT, "unknown request %u for a Cython frame",
				       what);
	}
	if (err) {
		pyu_strbuf_release(&sb);
		return err;
	}
	return pyu_strbuf_finish(&sb, ret);
}
