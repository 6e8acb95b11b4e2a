// carets.h - the source lines and caret lines a Python traceback shows for one frame, drawn by
// the rules of the target's own traceback module (per version, as data), from source text and
// the frame's positions. A pure function of its inputs: no target, no files, no state, so its
// output can be cached per (code object, position).
#ifndef PYU_CARETS_H
#define PYU_CARETS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "linetable.h"
#include "strbuf.h"

#define PYU_CARETS_MAX_LINES 1000u  // a range over more lines shows its first line only
#define PYU_CARETS_MAX_CHARS 65536u // a longer source line shows without carets

// How a traceback module lays a frame's source out.
enum pyu_caret_layout {
	PYU_CARETS_LINE_ONLY, // < 3.11: the first line, stripped
	PYU_CARETS_ONE_LINE,  // 3.11, 3.12: the first line and at most one caret line under it
	PYU_CARETS_MULTI,     // 3.13+: every line of the range (long ones elided), a caret line each
};

// How it counts the terminal columns of a piece of source.
enum pyu_caret_width {
	PYU_WIDTH_CHARS,      // one column per character
	PYU_WIDTH_EAST_ASIAN, // East Asian Wide/Fullwidth characters take two
	PYU_WIDTH_WLEN,       // and combining marks and format characters none (3.15)
};

struct pyu_caret_rules {
	uint64_t since;               // first hexversion these rules hold for
	enum pyu_caret_layout layout;
	enum pyu_caret_width width;
	bool skip_to_operator;        // ONE_LINE: a binary operator's anchor moves past ')', '#'
				      // and spaces; a subscript's anchors move onto its brackets
	bool call_anchors;            // calls get `~~~^^^` (callee, then arguments)
	const char *label;            // for tests and messages: "3.12"
};

// The terminal columns the traceback module counts for the @n code points at @cp
// (_display_width). Cannot fail.
int64_t pyu_carets_width(const uint32_t *cp, size_t n, enum pyu_caret_width mode);

// The rules of the traceback module of the interpreter with @hexversion. Cannot fail.
const struct pyu_caret_rules *pyu_caret_rules_for(uint64_t hexversion);

// Appends to @out what traceback.StackSummary.format() prints under a frame's "File ..." line
// for a frame at @loc: source lines and caret lines, each as @indent plus the line (with the
// traceback's own 4-space indent removed) plus '\n'. @lines[i] (@lens[i] bytes, no line
// ending, UTF-8) is source line @loc->line + i, for @count lines; lines of the range past
// @count read as empty, as linecache gives them for lines past the end of a file. Appends
// nothing when the traceback prints no source. Out of memory is recorded in @out (see
// pyu_strbuf_finish). Cannot fail otherwise.
void pyu_carets_render(const struct pyu_caret_rules *rules, const char *const *lines,
		       const size_t *lens, size_t count, const struct pyu_location *loc,
		       const char *indent, struct pyu_strbuf *out);

#endif
