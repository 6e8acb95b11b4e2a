// tracebacks.h - the traceback of a handled exception, read from target memory: each entry's
// file, function and line, outermost first, as the target's traceback.extract_tb lists them.
// Entries whose code Cython made (__Pyx_AddTraceback, line tracing: co_filename ends in
// .pyx/.pxd/.pxi) carry the line Cython recorded at run time, never one derived from their fake
// bytecode offset. Model layer: reads the target through the layouts, prints nothing.
#ifndef PYU_TRACEBACKS_H
#define PYU_TRACEBACKS_H

#include <stdbool.h>
#include <stdint.h>

#include "error.h"
#include "layout.h"
#include "linetable.h"
#include "target.h"
#include "value_layout.h"

#define PYU_TB_MAX 1024 // entries of one traceback read at most

// Where an entry's line came from.
enum pyu_tb_line_from {
	PYU_TB_LINE_NONE,        // unknown
	PYU_TB_LINE_TB_LINENO,   // tb_lineno, as the interpreter (or Cython) stored it
	PYU_TB_LINE_F_LINENO,    // Cython's code: the frame's f_lineno (tb_lineno not stored)
	PYU_TB_LINE_FIRSTLINENO, // Cython's code: co_firstlineno (the error line it was made for)
	PYU_TB_LINE_BYTECODE,    // Python code: the line table at tb_lasti (tb_lineno not stored,
				 // 3.12+ compute it lazily)
	PYU_TB_LINE_NO_LINE,     // Python code: the line table gives tb_lasti no line (3.12+'s
				 // tb_lineno is None there); line is -1
};

struct pyu_tb_entry {
	char *file;     // co_filename, owned; NULL when unreadable
	char *function; // co_name, owned; NULL when unreadable
	int64_t line;   // -1 when unknown
	enum pyu_tb_line_from line_from;
	bool cython;    // the code is Cython's (by its file name)
	uint64_t code;  // the code object's address; 0 when unreadable
	int32_t firstlineno;      // its co_firstlineno
	struct pyu_location loc;  // co_positions() at tb_lasti (line PYU_NO_LINE when the table
				  // gives none or cannot be read; columns 3.11+ only)
};

struct pyu_traceback {
	struct pyu_tb_entry *entries; // owned, outermost first
	uint32_t count;
	char *error; // owned: why the chain ended before its end (unreadable entry, too long), or
		     // NULL
};

// Reads the traceback chain that starts at the PyTracebackObject at @tb, through @l (the
// runtime's layout) and @vl (the value reader's layout), into *ret (release with
// pyu_traceback_clear). An entry that cannot be read ends the chain with ret->error set; at
// most PYU_TB_MAX entries. Fails only for out of memory; on error, *ret is zeroed.
struct pyu_error *pyu_traceback_read(struct pyu_target *t, const struct pyu_layout *l,
				     const struct pyu_value_layout *vl, uint64_t tb,
				     struct pyu_traceback *ret);
void pyu_traceback_clear(struct pyu_traceback *tb);

// ---- the chain traceback.format_exception prints ---------------------------------------

#define PYU_EXC_NODES_MAX 64   // exceptions of one chain read at most (causes, contexts,
			       // group members)
#define PYU_EXC_GROUP_WIDTH 15 // members of a group the traceback module shows
				// (max_group_width); the rest it counts

struct pyu_values;

// One exception of the chain, as TracebackException holds it.
struct pyu_exc_node {
	uint64_t address;
	char *type;  // as format_exception_only names the type, owned; NULL when unreadable
	char *text;  // str(exc), owned, UTF-8 (may hold newlines); NULL when unknown
	char *notes; // the lines its __notes__ add, each ended by '\n', owned; NULL: none
	char *syntax; // a SyntaxError's lines before "Type: text" (file, source, carets),
		      // each ended by '\n', owned; NULL for other exceptions
	struct pyu_traceback tb; // its __traceback__ (node 0: left empty, the caller has it)
	int32_t cause;   // node shown as its __cause__, -1 none
	int32_t context; // node shown as its __context__, -1 none
	bool suppress_context;   // __suppress_context__
	bool group;              // a BaseExceptionGroup
	uint32_t member_total;   // its len(exceptions)
	int32_t members[PYU_EXC_GROUP_WIDTH]; // nodes of the members shown, -1 when unread
	uint32_t member_count;
};

struct pyu_exc_chain {
	struct pyu_exc_node *nodes; // owned; nodes[0] is the exception read from
	uint32_t count;
	char *error; // owned: why the chain was cut (unreadable link, too many), or NULL
};

// Reads the exception at @exc and those format_exception shows with it - __cause__, else
// __context__ unless suppressed (3.10+'s compact form), group members - each once (as the
// traceback module's _seen set), with their tracebacks, into *ret (release with
// pyu_exc_chain_clear). 2.7 has no chain: one node. What cannot be read ends that branch and
// sets ret->error. Each exception's text ends in the suggestion its version's traceback module
// adds (suggestions.h), from the interpreter at @interp. Fails only for out of memory; on
// error, *ret is zeroed.
struct pyu_error *pyu_exc_chain_read(struct pyu_target *t, const struct pyu_layout *l,
				     struct pyu_values *v, uint64_t interp, uint64_t exc,
				     struct pyu_exc_chain *ret);
void pyu_exc_chain_clear(struct pyu_exc_chain *c);

#endif
