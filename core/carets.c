// carets.c - draws a frame's source lines and carets exactly as the target version's traceback
// module does. CPython parses the source segment with `ast` to place the `~~^^` anchors of
// binary operations, subscripts and (3.13+) calls; here a small tokenizer and an expression
// reader recover the same node boundaries (operator, operand ends, brackets) without a Python
// parser: parentheses, strings (f-strings too), comments and line continuations. Each version's
// algorithm is reproduced as written, quirks included (byte/character mixes, trailing-space
// shifts), chosen by the rules table. Face level: no target, no files.
#include "carets.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "widths.h"

static const struct pyu_caret_rules caret_rules[] = {
	// Checked against 3.11.2 and 3.11.7, 3.12.1, 3.13.0 and 3.13.18, 3.14.10, 3.15.2.
	{0, PYU_CARETS_LINE_ONLY, PYU_WIDTH_CHARS, false, false, "2.7-3.10"},
	{0x030B0000, PYU_CARETS_ONE_LINE, PYU_WIDTH_CHARS, false, false, "3.11.0"},
	{0x030B0700, PYU_CARETS_ONE_LINE, PYU_WIDTH_EAST_ASIAN, true, false, "3.11.7"},
	{0x030D0000, PYU_CARETS_MULTI, PYU_WIDTH_EAST_ASIAN, true, true, "3.13"},
	{0x030F0000, PYU_CARETS_MULTI, PYU_WIDTH_WLEN, true, true, "3.15"},
};

const struct pyu_caret_rules *pyu_caret_rules_for(uint64_t hexversion)
{
	size_t n = sizeof(caret_rules) / sizeof(caret_rules[0]);
	const struct pyu_caret_rules *r = &caret_rules[0];
	for (size_t i = 1; i < n; i++)
		if (hexversion >= caret_rules[i].since)
			r = &caret_rules[i];
	return r;
}

// ---- allocation: everything of one rendering is freed at its end ----------------------------

#define ARENA_MAX_BLOCKS 64u // allocations of one rendering (it makes about 20)

struct arena {
	void *blocks[ARENA_MAX_BLOCKS];
	size_t n;
	bool failed;
};

static void *arena_alloc(struct arena *a, size_t count, size_t size)
{
	if (a->failed || a->n >= ARENA_MAX_BLOCKS || (count && size > SIZE_MAX / count)) {
		a->failed = true;
		return NULL;
	}
	void *p = calloc(count ? count : 1, size);
	if (!p) {
		a->failed = true;
		return NULL;
	}
	a->blocks[a->n++] = p;
	return p;
}

static void arena_free(struct arena *a)
{
	for (size_t i = 0; i < a->n; i++)
		free(a->blocks[i]);
	a->n = 0;
}

// ---- Python strings: code points --------------------------------------------------------

struct ustr {
	const uint32_t *s;
	size_t n;
};

// str.isspace() for one character.
static bool u_space(uint32_t c)
{
	return (c >= 0x09 && c <= 0x0D) || (c >= 0x1C && c <= 0x20) || c == 0x85 || c == 0xA0 ||
	       c == 0x1680 || (c >= 0x2000 && c <= 0x200A) || c == 0x2028 || c == 0x2029 ||
	       c == 0x202F || c == 0x205F || c == 0x3000;
}

static size_t utf8_len(uint32_t c)
{
	return c < 0x80 ? 1 : c < 0x800 ? 2 : c < 0x10000 ? 3 : 4;
}

static struct ustr u_slice(struct ustr s, int64_t from, int64_t to) // s[from:to], from/to >= 0
{
	size_t a = from < 0 ? 0 : (size_t)from, b = to < 0 ? 0 : (size_t)to;
	if (b > s.n)
		b = s.n;
	if (a > b)
		a = b;
	return (struct ustr){s.s + a, b - a};
}

static struct ustr u_lstrip(struct ustr s)
{
	while (s.n && u_space(s.s[0]))
		s.s++, s.n--;
	return s;
}

static struct ustr u_rstrip(struct ustr s)
{
	while (s.n && u_space(s.s[s.n - 1]))
		s.n--;
	return s;
}

static struct ustr u_strip(struct ustr s)
{
	return u_rstrip(u_lstrip(s));
}

static bool u_ascii(struct ustr s)
{
	for (size_t i = 0; i < s.n; i++)
		if (s.s[i] >= 0x80)
			return false;
	return true;
}

// _byte_offset_to_character_offset(s, off): the characters in s.encode()[:off] decoded with
// "replace" (a character cut in the middle counts as one U+FFFD).
static int64_t u_b2c(struct ustr s, int64_t off)
{
	int64_t bytes = 0;
	for (size_t i = 0; i < s.n; i++) {
		if (bytes >= off)
			return (int64_t)i;
		bytes += (int64_t)utf8_len(s.s[i]);
		if (bytes > off)
			return (int64_t)i + 1;
	}
	return (int64_t)s.n;
}

static size_t cp_width(uint32_t c, enum pyu_caret_width mode)
{
	if (mode == PYU_WIDTH_WLEN) {
		if (c < 128)
			return 1;
		if (pyu_cp_in(pyu_combining_ranges, pyu_combining_ranges_count, c) ||
		    pyu_cp_in(pyu_format_ranges, pyu_format_ranges_count, c))
			return 0;
	}
	return pyu_cp_in(pyu_wide_ranges, pyu_wide_ranges_count, c) ? 2 : 1;
}

// traceback._display_width(line, offset): an ASCII line answers @offset itself (even past its
// end); 3.15's _wlen also drops ANSI escape sequences and counts ^Z twice.
static int64_t u_width(struct ustr line, int64_t offset, enum pyu_caret_width mode)
{
	if (mode == PYU_WIDTH_CHARS || (mode == PYU_WIDTH_EAST_ASIAN && u_ascii(line)))
		return offset;
	struct ustr s = u_slice(line, 0, offset);
	int64_t w = 0;
	for (size_t i = 0; i < s.n; i++) {
		if (mode == PYU_WIDTH_WLEN && s.s[i] == 0x1A) {
			w += 2;
			continue;
		}
		if (mode == PYU_WIDTH_WLEN && s.s[i] == 0x1B && i + 1 < s.n && s.s[i + 1] == '[') {
			size_t j = i + 2; // \x1b\[[ -@]*[A-~]
			while (j < s.n && s.s[j] >= 0x20 && s.s[j] <= 0x40)
				j++;
			if (j < s.n && s.s[j] >= 0x41 && s.s[j] <= 0x7E) {
				i = j;
				continue;
			}
		}
		w += (int64_t)cp_width(s.s[i], mode);
	}
	return w;
}

int64_t pyu_carets_width(const uint32_t *cp, size_t n, enum pyu_caret_width mode)
{
	return u_width((struct ustr){cp, n}, (int64_t)n, mode);
}

static struct ustr decode(struct arena *a, const char *bytes, size_t n, bool add_newline)
{
	uint32_t *cp = arena_alloc(a, n + 2, sizeof(*cp));
	size_t k = 0;
	if (!cp)
		return (struct ustr){NULL, 0};
	for (size_t i = 0; i < n;)
		i += pyu_utf8_next((const unsigned char *)bytes + i, n - i, &cp[k++]);
	if (add_newline)
		cp[k++] = '\n';
	return (struct ustr){cp, k};
}

// ---- tokens -------------------------------------------------------------------------------

#define TOKEN_MAX_NESTING 200u // brackets open at once (CPython's parser allows 200)
#define FSTRING_MAX_NESTING 8u // f-strings inside f-strings

enum tok_kind { TK_NAME, TK_KEYWORD, TK_NUMBER, TK_STRING, TK_OP, TK_NEWLINE };

struct tok {
	enum tok_kind kind;
	char op[4];   // TK_OP, TK_KEYWORD (first 3 chars do not suffice: see keyword)
	int keyword;  // index into keywords[] for TK_KEYWORD
	size_t start, end; // code-point indices into the text
	size_t match; // brackets: index of the partner token
};

struct toks {
	struct tok *t;
	size_t n;
};

static const char *const keywords[] = {
	"False", "None", "True", "and", "as", "assert", "async", "await", "break", "class",
	"continue", "def", "del", "elif", "else", "except", "finally", "for", "from", "global",
	"if", "import", "in", "is", "lambda", "nonlocal", "not", "or", "pass", "raise", "return",
	"try", "while", "with", "yield",
};
enum { KW_FALSE, KW_NONE, KW_TRUE, KW_AWAIT = 7, KW_FOR = 17, KW_RETURN = 30 };

static const char *const operators[] = { // longest first
	"**=", "//=", ">>=", "<<=", "...", "**", "//", "<<", ">>", "<=", ">=", "==", "!=", "->",
	":=", "+=", "-=", "*=", "/=", "%=", "&=", "|=", "^=", "@=", "+", "-", "*", "/", "%", "@",
	"&", "|", "^", "~", "<", ">", "(", ")", "[", "]", "{", "}", ",", ":", ";", ".", "=",
};

static bool ident_start(uint32_t c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' ||
	       (c >= 0x80 && !u_space(c));
}

static bool ident_char(uint32_t c)
{
	return ident_start(c) || (c >= '0' && c <= '9');
}

static bool is_digit(uint32_t c)
{
	return c >= '0' && c <= '9';
}

static uint32_t lower(uint32_t c)
{
	return c >= 'A' && c <= 'Z' ? c + 32 : c;
}

// Whether s[from:to] is a string prefix; *fmt: an f- or t-string.
static bool string_prefix(struct ustr s, size_t from, size_t to, bool *fmt)
{
	bool r = false, b = false, u = false, f = false;
	if (to - from > 2)
		return false;
	for (size_t i = from; i < to; i++) {
		uint32_t c = lower(s.s[i]);
		bool *flag = c == 'r' ? &r : c == 'b' ? &b : c == 'u' ? &u : c == 'f' || c == 't' ? &f : NULL;
		if (!flag || *flag)
			return false;
		*flag = true;
	}
	if ((u && (r || b || f)) || (b && f))
		return false;
	*fmt = f;
	return true;
}

static bool scan_string(struct ustr s, size_t *i, bool fmt, unsigned depth);

// Scans the code of an f-string replacement field from *i (after its '{') through its '}'.
static bool scan_field(struct ustr s, size_t *i, unsigned depth)
{
	unsigned nest = 0;
	while (*i < s.n) {
		uint32_t c = s.s[*i];
		if (c == '\'' || c == '"') {
			if (!scan_string(s, i, false, depth + 1))
				return false;
			continue;
		}
		if (ident_start(c)) {
			size_t from = *i;
			while (*i < s.n && ident_char(s.s[*i]))
				(*i)++;
			bool fmt = false;
			if (*i < s.n && (s.s[*i] == '\'' || s.s[*i] == '"') &&
			    string_prefix(s, from, *i, &fmt) && !scan_string(s, i, fmt, depth + 1))
				return false;
			continue;
		}
		if (c == '(' || c == '[' || c == '{')
			nest++;
		else if ((c == ')' || c == ']') && nest)
			nest--;
		else if (c == '}') {
			if (!nest) {
				(*i)++;
				return true;
			}
			nest--;
		} else if (c == ':' && !nest) { // format spec: literal text with nested fields
			(*i)++;
			while (*i < s.n && s.s[*i] != '}') {
				if (s.s[*i] == '{') {
					(*i)++;
					if (depth >= FSTRING_MAX_NESTING || !scan_field(s, i, depth + 1))
						return false;
				} else {
					(*i)++;
				}
			}
			continue;
		}
		(*i)++;
	}
	return false;
}

// Scans a string literal whose opening quote is at *i; *i ends after the closing quote.
static bool scan_string(struct ustr s, size_t *i, bool fmt, unsigned depth)
{
	if (depth > FSTRING_MAX_NESTING)
		return false;
	uint32_t q = s.s[*i];
	bool triple = *i + 2 < s.n && s.s[*i + 1] == q && s.s[*i + 2] == q;
	*i += triple ? 3 : 1;
	while (*i < s.n) {
		uint32_t c = s.s[*i];
		if (c == '\\') {
			*i += 2;
			continue;
		}
		if (c == '\n' && !triple)
			return false;
		if (c == q && (!triple || (*i + 2 < s.n && s.s[*i + 1] == q && s.s[*i + 2] == q))) {
			*i += triple ? 3 : 1;
			return true;
		}
		if (fmt && c == '{') {
			if (*i + 1 < s.n && s.s[*i + 1] == '{') {
				*i += 2;
				continue;
			}
			(*i)++;
			if (!scan_field(s, i, depth))
				return false;
			continue;
		}
		(*i)++;
	}
	return false;
}

// Splits @s into tokens. @statements: a newline outside brackets ends a statement (a
// TK_NEWLINE token); otherwise the text is read as inside parentheses. Returns false on text
// Python's tokenizer rejects (or out of memory).
static bool tokenize(struct arena *a, struct ustr s, bool statements, struct toks *ret)
{
	struct tok *t = arena_alloc(a, s.n + 1, sizeof(*t));
	size_t *stack = arena_alloc(a, TOKEN_MAX_NESTING, sizeof(*stack));
	size_t n = 0, depth = 0, i = 0;
	if (!t || !stack)
		return false;
	while (i < s.n) {
		uint32_t c = s.s[i];
		size_t from = i;
		if (c == ' ' || c == '\t' || c == '\f') {
			i++;
			continue;
		}
		if (c == '#') {
			while (i < s.n && s.s[i] != '\n')
				i++;
			continue;
		}
		if (c == '\\') {
			if (i + 1 < s.n && s.s[i + 1] != '\n')
				return false;
			i += 2;
			continue;
		}
		if (c == '\n') {
			if (statements && !depth && n && t[n - 1].kind != TK_NEWLINE)
				t[n++] = (struct tok){.kind = TK_NEWLINE, .start = i, .end = i + 1};
			i++;
			continue;
		}
		struct tok tk = {.start = from};
		if (ident_start(c)) {
			while (i < s.n && ident_char(s.s[i]))
				i++;
			bool fmt = false;
			if (i < s.n && (s.s[i] == '\'' || s.s[i] == '"') && string_prefix(s, from, i, &fmt)) {
				if (!scan_string(s, &i, fmt, 0))
					return false;
				tk.kind = TK_STRING;
			} else {
				tk.kind = TK_NAME;
				for (size_t k = 0; k < sizeof(keywords) / sizeof(keywords[0]); k++) {
					size_t len = strlen(keywords[k]), j = 0;
					while (j < len && from + j < i && s.s[from + j] == (uint8_t)keywords[k][j])
						j++;
					if (j == len && i - from == len) {
						tk.kind = TK_KEYWORD;
						tk.keyword = (int)k;
					}
				}
			}
		} else if (is_digit(c) || (c == '.' && i + 1 < s.n && is_digit(s.s[i + 1]))) {
			tk.kind = TK_NUMBER;
			if (c == '0' && i + 1 < s.n && s.s[i + 1] < 0x80 && s.s[i + 1] &&
			    strchr("xXoObB", (int)s.s[i + 1])) {
				i += 2;
				while (i < s.n && (ident_char(s.s[i]) && s.s[i] < 0x80))
					i++;
			} else {
				while (i < s.n && (is_digit(s.s[i]) || s.s[i] == '_'))
					i++;
				if (i < s.n && s.s[i] == '.')
					for (i++; i < s.n && (is_digit(s.s[i]) || s.s[i] == '_');)
						i++;
				if (i < s.n && (s.s[i] == 'e' || s.s[i] == 'E')) {
					size_t j = i + 1;
					if (j < s.n && (s.s[j] == '+' || s.s[j] == '-'))
						j++;
					if (j < s.n && is_digit(s.s[j]))
						for (i = j; i < s.n && (is_digit(s.s[i]) || s.s[i] == '_');)
							i++;
				}
				if (i < s.n && (s.s[i] == 'j' || s.s[i] == 'J'))
					i++;
			}
		} else if (c == '\'' || c == '"') {
			if (!scan_string(s, &i, false, 0))
				return false;
			tk.kind = TK_STRING;
		} else {
			const char *op = NULL;
			for (size_t k = 0; k < sizeof(operators) / sizeof(operators[0]) && !op; k++) {
				size_t len = strlen(operators[k]), j = 0;
				while (j < len && i + j < s.n && s.s[i + j] == (uint8_t)operators[k][j])
					j++;
				if (j == len)
					op = operators[k];
			}
			if (!op)
				return false;
			tk.kind = TK_OP;
			strcpy(tk.op, op);
			i += strlen(op);
			if (strchr("([{", op[0]) && !op[1]) {
				if (depth >= TOKEN_MAX_NESTING)
					return false;
				stack[depth++] = n;
			} else if (strchr(")]}", op[0]) && !op[1]) {
				if (!depth)
					return false;
				size_t open = stack[--depth];
				char want = op[0] == ')' ? '(' : op[0] == ']' ? '[' : '{';
				if (t[open].op[0] != want)
					return false;
				t[open].match = n;
				tk.match = open;
			}
		}
		tk.end = i;
		t[n++] = tk;
	}
	if (depth)
		return false;
	ret->t = t;
	ret->n = n;
	return true;
}

// ---- expressions: which node CPython's ast would put at the top, and its parts ----------------

static bool is_op(const struct tok *t, const char *op)
{
	return t->kind == TK_OP && !strcmp(t->op, op);
}

static bool is_kw(const struct tok *t, int kw)
{
	return t->kind == TK_KEYWORD && t->keyword == kw;
}

// Whether tokens [a, b) are one parenthesized expression that ast reports without its
// parentheses: not a tuple (a comma inside), not a generator expression, not empty.
static bool is_group(const struct toks *tk, size_t a, size_t b)
{
	if (b < a + 3 || !is_op(&tk->t[a], "(") || tk->t[a].match != b - 1)
		return false;
	for (size_t i = a + 1; i < b - 1; i++) {
		const struct tok *t = &tk->t[i];
		if (is_op(t, ",") || is_kw(t, KW_FOR))
			return false;
		if (t->kind == TK_OP && strchr("([{", t->op[0]) && !t->op[1])
			i = t->match;
	}
	return true;
}

static void unwrap(const struct toks *tk, size_t *a, size_t *b)
{
	while (is_group(tk, *a, *b))
		(*a)++, (*b)--;
}

// Level of a binary operator (1 = '|' ... 7 = '**'), 0 for anything else.
static int binop_level(const struct tok *t)
{
	static const char *const ops[] = {"|", "^", "&", "<<", ">>", "+", "-", "*", "/", "//", "%",
					  "@", "**"};
	static const int level[] = {1, 2, 3, 4, 4, 5, 5, 6, 6, 6, 6, 6, 7};
	if (t->kind != TK_OP)
		return 0;
	for (size_t i = 0; i < sizeof(ops) / sizeof(ops[0]); i++)
		if (!strcmp(t->op, ops[i]))
			return level[i];
	return 0;
}

enum expr_kind { EXPR_OTHER, EXPR_BINOP, EXPR_SUBSCRIPT, EXPR_CALL };

struct expr {
	enum expr_kind kind;
	size_t a, b;     // the expression's tokens (parentheses around it removed)
	size_t op;       // EXPR_BINOP: the root operator's token
	size_t bracket;  // EXPR_SUBSCRIPT, EXPR_CALL: the last trailer's opening bracket
};

// Reads tokens [a, b) as one expression (primaries with trailers, unary and binary operators)
// and says whether its top node is a binary operation, a subscript or a call. Anything else
// (comparisons, boolean operators, tuples, lambdas, ...) or text that is not an expression is
// EXPR_OTHER.
static struct expr analyze(const struct toks *tk, size_t a, size_t b)
{
	struct expr e = {EXPR_OTHER, a, b, 0, 0};
	unwrap(tk, &e.a, &e.b);
	if (e.a >= e.b)
		return e;
	bool expect_operand = true, prefixed = false, unary = false;
	int min_level = 99;
	enum expr_kind trailer = EXPR_OTHER;
	size_t i = e.a;
	while (i < e.b) {
		const struct tok *t = &tk->t[i];
		if (expect_operand) {
			if ((t->kind == TK_OP && (!strcmp(t->op, "+") || !strcmp(t->op, "-") ||
						  !strcmp(t->op, "~"))) ||
			    is_kw(t, KW_AWAIT)) {
				if (i == e.a)
					prefixed = true, unary = !is_kw(t, KW_AWAIT);
				i++;
				continue;
			}
			if (t->kind == TK_NAME || t->kind == TK_NUMBER || is_kw(t, KW_NONE) ||
			    is_kw(t, KW_TRUE) || is_kw(t, KW_FALSE) || is_op(t, "...")) {
				i++;
			} else if (t->kind == TK_STRING) {
				while (i < e.b && tk->t[i].kind == TK_STRING)
					i++;
			} else if (t->kind == TK_OP && strchr("([{", t->op[0]) && !t->op[1]) {
				i = t->match + 1;
			} else {
				return e;
			}
			expect_operand = false;
			trailer = EXPR_OTHER;
			continue;
		}
		int level = binop_level(t);
		if (is_op(t, "(") || is_op(t, "[")) {
			trailer = t->op[0] == '(' ? EXPR_CALL : EXPR_SUBSCRIPT;
			e.bracket = i;
			i = t->match + 1;
		} else if (is_op(t, ".") && i + 1 < e.b && tk->t[i + 1].kind == TK_NAME) {
			trailer = EXPR_OTHER;
			i += 2;
		} else if (level) {
			// '**' groups to the right (the first is the top), the others to the left
			if (level < min_level || (level == min_level && level != 7)) {
				min_level = level;
				e.op = i;
			}
			expect_operand = true;
			i++;
		} else {
			return e;
		}
	}
	if (expect_operand)
		return e;
	if (min_level < 99) {
		// a leading unary operator binds looser than '**' only
		if (!(unary && min_level == 7))
			e.kind = EXPR_BINOP;
		return e;
	}
	if (!prefixed)
		e.kind = trailer;
	return e;
}

// Where a node made of tokens [a, b) starts and ends (ast positions leave out parentheses
// around a whole expression).
static size_t node_start(const struct toks *tk, size_t a, size_t b)
{
	unwrap(tk, &a, &b);
	return tk->t[a].start;
}

static size_t node_end(const struct toks *tk, size_t a, size_t b)
{
	unwrap(tk, &a, &b);
	return tk->t[b - 1].end;
}

// Line and UTF-8 column (what ast reports) of each code-point index of a text.
struct where {
	size_t *line, *bcol;
};

static bool locate(struct arena *a, struct ustr s, struct where *w)
{
	w->line = arena_alloc(a, s.n + 1, sizeof(size_t));
	w->bcol = arena_alloc(a, s.n + 1, sizeof(size_t));
	if (!w->line || !w->bcol)
		return false;
	size_t line = 0, bcol = 0;
	for (size_t i = 0; i <= s.n; i++) {
		w->line[i] = line;
		w->bcol[i] = bcol;
		if (i < s.n && s.s[i] == '\n')
			line++, bcol = 0;
		else if (i < s.n)
			bcol += utf8_len(s.s[i]);
	}
	return true;
}

// ---- 3.11 and 3.12: one line ---------------------------------------------------------------

struct anchors {
	int64_t left_line, left, right_line, right;
};

// _extract_caret_anchors_from_line_segment of 3.11/3.12: @seg parsed as one statement.
static bool anchors_one_line(struct arena *ar, const struct pyu_caret_rules *r, struct ustr seg,
			     struct anchors *ret)
{
	struct toks tk;
	struct where w;
	if (!seg.n || u_space(seg.s[0]) || !tokenize(ar, seg, true, &tk) || !tk.n ||
	    !locate(ar, seg, &w))
		return false;
	size_t end = 0;
	while (end < tk.n && tk.t[end].kind != TK_NEWLINE)
		end++;
	for (size_t i = end; i < tk.n; i++)
		if (tk.t[i].kind != TK_NEWLINE)
			return false; // more than one statement
	if (end && is_op(&tk.t[end - 1], ";"))
		end--;
	for (size_t i = 0; i < end; i++)
		if (is_op(&tk.t[i], ";"))
			return false;
	if (!end)
		return false;
	struct expr e = analyze(&tk, 0, end);
	if (e.kind == EXPR_BINOP) {
		int64_t left_end = (int64_t)w.bcol[node_end(&tk, e.a, e.op)];
		int64_t right_start = (int64_t)w.bcol[node_start(&tk, e.op + 1, e.b)];
		struct ustr op = u_slice(seg, u_b2c(seg, left_end), u_b2c(seg, right_start));
		int64_t op_offset = (int64_t)(op.n - u_lstrip(op).n);
		// the byte offset plus a character count, as CPython adds them
		int64_t left = left_end + op_offset, right = left + 1;
		if (op_offset + 1 < (int64_t)op.n && !u_space(op.s[op_offset + 1]))
			right++;
		while (r->skip_to_operator && left < (int64_t)seg.n &&
		       (u_space(seg.s[left]) || seg.s[left] == ')' || seg.s[left] == '#'))
			left++, right++;
		*ret = (struct anchors){0, u_b2c(seg, left), 0, u_b2c(seg, right)};
		return true;
	}
	if (e.kind == EXPR_SUBSCRIPT) {
		size_t close = tk.t[e.bracket].match;
		if (close == e.bracket + 1)
			return false;
		int64_t left = u_b2c(seg, (int64_t)w.bcol[node_end(&tk, e.a, e.bracket)]);
		int64_t right = u_b2c(seg, (int64_t)w.bcol[node_end(&tk, e.bracket + 1, close)] + 1);
		if (r->skip_to_operator) {
			while (left < (int64_t)seg.n && seg.s[left] != '[')
				left++;
			while (right < (int64_t)seg.n && seg.s[right] != ']')
				right++;
			if (right < (int64_t)seg.n)
				right++;
		}
		*ret = (struct anchors){0, left, 0, right};
		return true;
	}
	return false;
}

struct out {
	struct pyu_strbuf *sb;
	const char *indent;
};

static void put_ustr(struct out *o, struct ustr s)
{
	char buf[256];
	size_t k = 0;
	for (size_t i = 0; i < s.n; i++) {
		uint32_t c = s.s[i];
		if (k + 4 > sizeof(buf)) {
			pyu_strbuf_text(o->sb, buf, k);
			k = 0;
		}
		if (c < 0x80) {
			buf[k++] = (char)c;
		} else if (c < 0x800) {
			buf[k++] = (char)(0xC0 | (c >> 6));
			buf[k++] = (char)(0x80 | (c & 0x3F));
		} else if (c < 0x10000) {
			buf[k++] = (char)(0xE0 | (c >> 12));
			buf[k++] = (char)(0x80 | ((c >> 6) & 0x3F));
			buf[k++] = (char)(0x80 | (c & 0x3F));
		} else {
			buf[k++] = (char)(0xF0 | (c >> 18));
			buf[k++] = (char)(0x80 | ((c >> 12) & 0x3F));
			buf[k++] = (char)(0x80 | ((c >> 6) & 0x3F));
			buf[k++] = (char)(0x80 | (c & 0x3F));
		}
	}
	pyu_strbuf_text(o->sb, buf, k);
}

static void put_line(struct out *o, struct ustr s)
{
	pyu_strbuf_puts(o->sb, o->indent);
	put_ustr(o, s);
	pyu_strbuf_putc(o->sb, '\n');
}

static void repeat(struct out *o, char c, int64_t n) // Python's c * n
{
	if (n > 0)
		pyu_strbuf_repeat(o->sb, c, (size_t)n);
}

static void render_one_line(struct arena *ar, const struct pyu_caret_rules *r, struct ustr line,
			    const struct pyu_location *loc, struct out *o)
{
	// @line is linecache's line: with its '\n'
	struct ustr stripped = u_strip(line);
	if (!stripped.n)
		return;
	put_line(o, stripped);
	if (r->layout == PYU_CARETS_LINE_ONLY || loc->column == PYU_NO_COLUMN ||
	    loc->end_column == PYU_NO_COLUMN)
		return;
	// len(_original_line) - len(stripped): trailing whitespace and the newline count too
	int64_t stripped_chars = (int64_t)(line.n - stripped.n);
	int64_t start = u_b2c(line, loc->column), end = u_b2c(line, loc->end_column);
	struct ustr seg = u_slice(line, start, end);
	struct anchors an;
	bool have = false;
	if (loc->end_line == loc->line)
		have = anchors_one_line(ar, r, seg, &an);
	else
		end = r->skip_to_operator ? (int64_t)u_rstrip(line).n : stripped_chars + (int64_t)stripped.n - 1;
	if (!(end - start < (int64_t)stripped.n || (have && an.right - an.left > 0)))
		return;
	pyu_strbuf_puts(o->sb, o->indent);
	if (!r->skip_to_operator) { // 3.11.0: character counts, offsets from 1
		repeat(o, ' ', start + 1 - stripped_chars);
		if (have) {
			repeat(o, '~', an.left);
			repeat(o, '^', an.right - an.left);
			repeat(o, '~', end - start - an.right);
		} else {
			repeat(o, '^', end - start);
		}
	} else {
		int64_t dp_start = u_width(line, start, r->width) + 1;
		int64_t dp_end = u_width(line, end, r->width) + 1;
		repeat(o, ' ', dp_start - stripped_chars);
		if (have) {
			int64_t dp_left = u_width(seg, an.left, r->width);
			int64_t dp_right = u_width(seg, an.right, r->width);
			repeat(o, '~', dp_left);
			repeat(o, '^', dp_right - dp_left);
			repeat(o, '~', dp_end - dp_start - dp_right);
		} else {
			repeat(o, '^', dp_end - dp_start);
		}
	}
	pyu_strbuf_putc(o->sb, '\n');
}

// ---- 3.13+: every line of the range ---------------------------------------------------------

struct lines {
	struct ustr *l;
	size_t n;
};

// Segment positions as 3.13's helpers walk them; false = CPython's helper raised.
static bool next_valid(const struct lines *ls, int64_t *line, int64_t *col)
{
	while (*line < (int64_t)ls->n && *col >= (int64_t)ls->l[*line].n)
		*col = 0, (*line)++;
	return *line < (int64_t)ls->n && *col < (int64_t)ls->l[*line].n;
}

static bool increment_until(const struct lines *ls, int64_t *line, int64_t *col, uint32_t want,
			    bool not_space_paren)
{
	for (size_t guard = 0; guard < PYU_CARETS_MAX_LINES * (size_t)PYU_CARETS_MAX_CHARS; guard++) {
		if (*line < 0 || *line >= (int64_t)ls->n || *col < 0 || *col >= (int64_t)ls->l[*line].n)
			return false;
		uint32_t ch = ls->l[*line].s[*col];
		bool stop = not_space_paren ? !u_space(ch) && ch != ')' : ch == want;
		if (ch == '\\' || ch == '#') {
			(*line)++, *col = 0;
		} else if (!stop) {
			(*col)++;
		} else {
			return true;
		}
		if (!next_valid(ls, line, col))
			return false;
	}
	return false;
}

// Splits @s at '\n' as str.splitlines() does (no empty last line after a final '\n').
static bool split_lines(struct arena *a, struct ustr s, struct lines *ret)
{
	size_t count = 1;
	for (size_t i = 0; i < s.n; i++)
		count += s.s[i] == '\n';
	ret->l = arena_alloc(a, count, sizeof(*ret->l));
	if (!ret->l)
		return false;
	ret->n = 0;
	size_t from = 0;
	for (size_t i = 0; i <= s.n; i++) {
		if (i == s.n || s.s[i] == '\n') {
			if (i < s.n || i > from)
				ret->l[ret->n++] = (struct ustr){s.s + from, i - from};
			from = i + 1;
		}
	}
	return true;
}

// A token position as (segment line, character column), like setup_positions().
static bool position(const struct lines *ls, const struct where *w, size_t index, bool force_valid,
		     int64_t *line, int64_t *col)
{
	*line = (int64_t)w->line[index];
	if (*line >= (int64_t)ls->n)
		return false;
	*col = u_b2c(ls->l[*line], (int64_t)w->bcol[index]);
	return force_valid ? next_valid(ls, line, col) : true;
}

// _extract_caret_anchors_from_line_segment of 3.13+: @seg parsed as "(\n" + seg + "\n)".
static bool anchors_multi(struct arena *ar, struct ustr seg, struct anchors *ret)
{
	struct toks tk;
	struct where w;
	struct lines ls;
	if (!tokenize(ar, seg, false, &tk) || !tk.n || !locate(ar, seg, &w) ||
	    !split_lines(ar, seg, &ls))
		return false;
	struct expr e = analyze(&tk, 0, tk.n);
	int64_t line, col, rline, rcol;
	if (e.kind == EXPR_BINOP) {
		if (!position(&ls, &w, node_end(&tk, e.a, e.op), true, &line, &col) ||
		    !increment_until(&ls, &line, &col, 0, true))
			return false;
		size_t rs = node_start(&tk, e.op + 1, e.b);
		int64_t right_line = (int64_t)w.line[rs];
		int64_t right_col = col + 1;
		if (right_line >= (int64_t)ls.n)
			return false;
		if (right_col < (int64_t)ls.l[line].n &&
		    (right_line > line || right_col < u_b2c(ls.l[right_line], (int64_t)w.bcol[rs]))) {
			uint32_t ch = ls.l[line].s[right_col];
			if (!u_space(ch) && ch != '\\' && ch != '#')
				right_col++;
		}
		*ret = (struct anchors){line, col, line, right_col};
		return true;
	}
	if (e.kind == EXPR_SUBSCRIPT || e.kind == EXPR_CALL) {
		if (!position(&ls, &w, node_end(&tk, e.a, e.bracket), true, &line, &col) ||
		    !increment_until(&ls, &line, &col, e.kind == EXPR_CALL ? '(' : '[', false) ||
		    !position(&ls, &w, tk.t[e.b - 1].end, false, &rline, &rcol))
			return false;
		*ret = (struct anchors){line, col, rline, rcol};
		return true;
	}
	return false;
}

// StackSummary._should_show_carets: no carets under `return f(...)` / `x = f(...)` when the
// call is the whole statement; else carets when there are anchors or the range leaves part of
// the lines out.
static bool should_show(struct arena *ar, struct ustr text, const struct lines *all,
			int64_t start, int64_t end, bool anchored)
{
	struct toks tk;
	struct where w;
	if (tokenize(ar, text, true, &tk) && locate(ar, text, &w)) {
		size_t n = 0;
		while (n < tk.n && tk.t[n].kind != TK_NEWLINE && !is_op(&tk.t[n], ";"))
			n++;
		bool indented = tk.n && w.bcol[tk.t[0].start] != 0; // IndentationError: no check
		if (!tk.n && !indented)
			return false; // nothing but comments: an empty module
		size_t va = 0, vb = n, eq = 0, eqs = 0;
		for (size_t i = 0; i < n; i++) {
			const struct tok *t = &tk.t[i];
			if (is_op(t, "="))
				eq = i, eqs++;
			if (t->kind == TK_OP && strchr("([{", t->op[0]) && !t->op[1])
				i = t->match;
		}
		bool candidate = false;
		if (is_kw(&tk.t[0], KW_RETURN) && n > 1) {
			va = 1;
			struct expr e = analyze(&tk, va, vb);
			if (e.kind == EXPR_CALL) {
				size_t fa = e.a, fb = e.bracket;
				unwrap(&tk, &fa, &fb);
				candidate = fb == fa + 1 && tk.t[fa].kind == TK_NAME;
			}
		} else if (eqs == 1 && eq > 0) {
			size_t ta = 0, tb = eq;
			unwrap(&tk, &ta, &tb);
			va = eq + 1;
			candidate = tb == ta + 1 && tk.t[ta].kind == TK_NAME && va < vb &&
				    analyze(&tk, va, vb).kind == EXPR_CALL;
		}
		if (candidate && !indented) {
			size_t s = node_start(&tk, va, vb), e = node_end(&tk, va, vb);
			if (w.line[s] == 0 && w.line[e] == all->n - 1 && (int64_t)w.bcol[s] == start &&
			    (int64_t)w.bcol[e] == end)
				return false;
		}
	}
	if (anchored)
		return true;
	return u_lstrip(u_slice(all->l[0], 0, start)).n ||
	       u_rstrip(u_slice(all->l[all->n - 1], end, (int64_t)all->l[all->n - 1].n)).n;
}

// textwrap.dedent's margin: the longest run of spaces and tabs all non-blank lines start with.
static size_t dedent_margin(const struct ustr *l, size_t n)
{
	const struct ustr *first = NULL;
	size_t margin = 0;
	for (size_t i = 0; i < n; i++) {
		if (!u_lstrip(l[i]).n)
			continue;
		if (!first) {
			first = &l[i];
			while (margin < l[i].n && (l[i].s[margin] == ' ' || l[i].s[margin] == '\t'))
				margin++;
			continue;
		}
		size_t k = 0;
		while (k < margin && k < l[i].n && l[i].s[k] == first->s[k])
			k++;
		margin = k;
	}
	return margin;
}

static struct ustr dedented(struct ustr l, size_t margin)
{
	return u_lstrip(l).n ? u_slice(l, (int64_t)margin, (int64_t)l.n) : (struct ustr){l.s, 0};
}

#define OUT_MAX_LINES 48 // at most 8 significant lines, 7 between them, a caret line each, elisions

struct result {
	struct ustr l[OUT_MAX_LINES];
	size_t n;
};

static void render_multi(struct arena *ar, const struct pyu_caret_rules *r, struct lines *src,
			 const struct pyu_location *loc, struct out *o)
{
	size_t k = src->n;
	struct ustr *rl = arena_alloc(ar, k, sizeof(*rl));
	struct lines all = {arena_alloc(ar, k, sizeof(struct ustr)), k};
	if (!rl || !all.l)
		return;
	for (size_t i = 0; i < k; i++)
		rl[i] = u_rstrip(src->l[i]);
	size_t margin = dedent_margin(rl, k);
	bool any = false;
	for (size_t i = 0; i < k; i++) {
		all.l[i] = dedented(rl[i], margin);
		any |= all.l[i].n > 0;
	}
	if (!any)
		return;
	if (loc->column == PYU_NO_COLUMN || loc->end_column == PYU_NO_COLUMN) {
		struct ustr first = u_strip(rl[0]);
		if (first.n)
			put_line(o, first);
		else
			pyu_strbuf_putc(o->sb, '\n');
		return;
	}
	struct ustr first = rl[0], last = rl[k - 1];
	int64_t start = u_b2c(first, loc->column), end = u_b2c(last, loc->end_column);
	int64_t dedent_chars = (int64_t)(first.n - all.l[0].n);
	start = start - dedent_chars > 0 ? start - dedent_chars : 0;
	end = end - dedent_chars > 0 ? end - dedent_chars : 0;
	int64_t dp_start = u_width(all.l[0], start, r->width);
	int64_t dp_end = u_width(all.l[k - 1], end, r->width);

	size_t total = k - 1;
	for (size_t i = 0; i < k; i++)
		total += all.l[i].n;
	uint32_t *joined = arena_alloc(ar, total + 1, sizeof(*joined));
	if (!joined)
		return;
	size_t p = 0;
	for (size_t i = 0; i < k; i++) {
		if (i)
			joined[p++] = '\n';
		memcpy(joined + p, all.l[i].s, all.l[i].n * sizeof(*joined));
		p += all.l[i].n;
	}
	struct ustr text = {joined, total};
	struct ustr seg = u_slice(text, start, (int64_t)total - ((int64_t)all.l[k - 1].n - end));

	struct anchors an = {0, 0, 0, 0};
	bool have = anchors_multi(ar, seg, &an) && an.left_line < (int64_t)k &&
		    an.right_line < (int64_t)k;
	bool show = should_show(ar, text, &all, start, end, have);

	int64_t sig_line[8];
	size_t nsig = 0;
	int64_t cand[8] = {0, (int64_t)k - 1, -1, -1, -1, -1, -1, -1};
	int64_t left_w = 0, right_w = 0;
	char primary = '^', secondary = '^';
	if (have) {
		int64_t le = an.left + (an.left_line == 0 ? start : 0);
		int64_t rs = an.right + (an.right_line == 0 ? start : 0);
		left_w = u_width(all.l[an.left_line], le, r->width);
		right_w = u_width(all.l[an.right_line], rs, r->width);
		primary = '~';
		for (int d = -1; d <= 1; d++) {
			cand[3 + d] = an.left_line + d;
			cand[6 + d] = an.right_line + d;
		}
	}
	for (size_t i = 0; i < 8; i++) { // sorted, distinct, within the range
		int64_t v = cand[i];
		if (v < 0 || v >= (int64_t)k)
			continue;
		bool dup = false;
		for (size_t j = 0; j < nsig; j++)
			dup |= sig_line[j] == v;
		if (!dup)
			sig_line[nsig++] = v;
	}
	for (size_t i = 1; i < nsig; i++)
		for (size_t j = i; j > 0 && sig_line[j - 1] > sig_line[j]; j--) {
			int64_t t = sig_line[j];
			sig_line[j] = sig_line[j - 1];
			sig_line[j - 1] = t;
		}

	struct result res = {.n = 0};
	char elide[8][48];
	size_t nelide = 0;
	for (size_t i = 0; i < nsig; i++) {
		int64_t emit[2] = {-1, sig_line[i]};
		if (i) {
			int64_t diff = sig_line[i] - sig_line[i - 1];
			if (diff == 2) {
				emit[0] = sig_line[i] - 1;
			} else if (diff > 2 && nelide < 8) {
				int len = snprintf(elide[nelide], sizeof(elide[nelide]),
						   "...<%lld lines>...", (long long)(diff - 1));
				uint32_t *u = arena_alloc(ar, (size_t)len, sizeof(*u));
				if (!u)
					return;
				for (int c = 0; c < len; c++)
					u[c] = (uint8_t)elide[nelide][c];
				nelide++;
				res.l[res.n++] = (struct ustr){u, (size_t)len};
			}
		}
		for (int x = 0; x < 2; x++) {
			int64_t ln = emit[x];
			if (ln < 0 || res.n + 2 > OUT_MAX_LINES)
				continue;
			struct ustr line = all.l[ln];
			res.l[res.n++] = line;
			if (!show)
				continue;
			int64_t spaces = (int64_t)(line.n - u_lstrip(line).n);
			int64_t count = ln == (int64_t)k - 1 ? dp_end
							     : u_width(line, (int64_t)line.n, r->width);
			uint32_t *c = arena_alloc(ar, count > 0 ? (size_t)count : 0, sizeof(*c));
			if (!c)
				return;
			for (int64_t col = 0; col < count; col++) {
				if (col < spaces || (ln == 0 && col < dp_start))
					c[col] = ' ';
				else if (have &&
					 (ln > an.left_line || (ln == an.left_line && col >= left_w)) &&
					 (ln < an.right_line || (ln == an.right_line && col < right_w)))
					c[col] = (uint32_t)secondary;
				else
					c[col] = (uint32_t)primary;
			}
			res.l[res.n++] = (struct ustr){c, count > 0 ? (size_t)count : 0};
		}
	}
	size_t out_margin = dedent_margin(res.l, res.n);
	for (size_t i = 0; i < res.n; i++)
		put_line(o, dedented(res.l[i], out_margin));
}

void pyu_carets_render(const struct pyu_caret_rules *rules, const char *const *lines,
		       const size_t *lens, size_t count, const struct pyu_location *loc,
		       const char *indent, struct pyu_strbuf *out)
{
	struct arena ar = {.n = 0};
	struct out o = {out, indent};
	if (loc->line == PYU_NO_LINE || !count)
		return;
	int64_t end_line = loc->end_line == PYU_NO_LINE ? loc->line : loc->end_line;
	int64_t span = end_line - loc->line + 1;
	bool too_long = lens[0] > PYU_CARETS_MAX_CHARS;
	if (rules->layout != PYU_CARETS_MULTI || span > (int64_t)PYU_CARETS_MAX_LINES || too_long) {
		struct ustr line = decode(&ar, lines[0], lens[0], true);
		struct pyu_location l = *loc;
		if (too_long || (rules->layout == PYU_CARETS_MULTI && span > 0))
			l.column = PYU_NO_COLUMN; // beyond our bounds: the line, no carets
		if (line.s && (rules->layout != PYU_CARETS_MULTI || span > 0))
			render_one_line(&ar, rules, line, &l, &o);
	} else if (span > 0) {
		static const uint32_t empty[1] = {0};
		struct lines src = {arena_alloc(&ar, (size_t)span, sizeof(struct ustr)), (size_t)span};
		for (size_t i = 0; src.l && i < (size_t)span; i++) {
			src.l[i] = (struct ustr){empty, 0};
			if (i < count && lens[i] > PYU_CARETS_MAX_CHARS)
				src.l = NULL;
			else if (i < count)
				src.l[i] = decode(&ar, lines[i], lens[i], false);
		}
		if (src.l && !ar.failed)
			render_multi(&ar, rules, &src, loc, &o);
	}
	if (ar.failed)
		out->nomem = true;
	arena_free(&ar);
}
