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

#endif
