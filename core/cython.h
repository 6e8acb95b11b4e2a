// cython.h - native frames that are Cython functions (cython.c): what a C symbol of Cython's
// means, and where the .pyx line of a frame comes from (the DWARF line a debugger or the
// unwinder gave, the generated C file's markers, or nothing but the symbol).
#ifndef PYU_CYTHON_H
#define PYU_CYTHON_H

#include <stdbool.h>
#include <stdint.h>

#include "error.h"
#include "target.h"

#define PYU_CYTHON_NAME_MAX 512      // bytes of a decoded name
#define PYU_CYTHON_FILE_MAX (64u << 20) // a generated C file or .pyx is read up to this size
#define PYU_CYTHON_FILES 16u          // files kept read in one cache
#define PYU_CYTHON_SCAN_LINES 20000u  // lines searched upwards for a marker or a def

// What a native frame is to Cython, by its C symbol.
enum pyu_cython_role {
	PYU_CYTHON_NONE,     // not Cython's
	PYU_CYTHON_FUNCTION, // a def/cdef/cpdef body, generator body, lambda, module body: shown
	PYU_CYTHON_WRAPPER,  // the argument-parsing wrapper of a def (__pyx_pw_): hidden when the
			     // body it calls is the frame just inner to it
	PYU_CYTHON_HELPER,   // Cython's runtime (__Pyx_*) and other generated plumbing: hidden
};

// Where a Cython frame's line came from.
enum pyu_cython_line_from {
	PYU_CYTHON_LINE_NONE,   // no line: @why says why
	PYU_CYTHON_LINE_DWARF,  // the DWARF line table names the .pyx (--line-directives)
	PYU_CYTHON_LINE_C_FILE, // the generated C file's `/* "file.pyx":N` marker above the C line
};

// A Cython frame as Python would see it. Strings are owned; NULL when unknown.
struct pyu_cython_frame {
	enum pyu_cython_role role;
	char *function;  // Python-level name ("method"; for a generator body its def's name)
	char *qualname;  // "Klass.method"
	char *module;    // "pkg.cymod", from the symbol (the part it names)
	char *file;      // the .pyx (.pxd, .pxi, .py compiled by Cython) as the target names it
	int64_t line;    // -1 when unknown
	enum pyu_cython_line_from line_from;
	char *why;       // with PYU_CYTHON_LINE_NONE: why there is no line
	bool name_from_source; // function/qualname come from the def enclosing the line in the
			       // .pyx (else from the symbol alone)
};

// The role of the function whose C symbol is @symbol ("__pyx_pf_5cymod_outer", suffixes the
// compiler adds like ".isra.0" allowed). Pure; cannot fail.
enum pyu_cython_role pyu_cython_role(const char *symbol);

// Decodes a Cython C symbol: *module ("cymod", "pkg.mod"), *qualname ("Klass.method") and
// *name ("method"), each into a buffer of PYU_CYTHON_NAME_MAX bytes. A scope segment
// ("5Klass_") is told from a counter ("5crash") by its length and the '_' after it; a def whose
// name has '_' exactly where such a length ends reads as a scope. The module is the segments up
// to the one equal to @module_hint (the extension's own name; may be NULL), else the first.
// Returns false when @symbol is not a decodable Cython function name. Pure.
bool pyu_cython_decode(const char *symbol, const char *module_hint, char *module, char *qualname,
		       char *name);

// Line @line's text in @text[0..len) when it is a Cython marker `/* "FILE":N` (leading blanks
// allowed): copies FILE (at most PYU_CYTHON_NAME_MAX - 1 bytes) into @file and sets *ret_line.
// Pure.
bool pyu_cython_marker(const char *text, size_t len, char *file, int64_t *ret_line);

// The qualified name of the def/cdef/cpdef/class body that line @line (1-based) of @lines
// belongs to, by indentation, into @qualname and its last part into @name (buffers of
// PYU_CYTHON_NAME_MAX). With @lambda (the frame is a lambda's), the function is the lambda on
// that line, one of its own inside that def: "DEF.<locals>.<lambda>" (a qualified name too long
// for that keeps the def's). @lines[i], @lens[i] is line i + 1. Returns false when no def
// encloses it. Pure.
bool pyu_cython_enclosing_def(const char *const *lines, const size_t *lens, uint32_t count,
			      int64_t line, bool lambda, char *qualname, char *name);

// Whether code whose co_filename is @file was made by Cython, by the name (.pyx, .pxd, .pxi);
// false for NULL. Pure.
bool pyu_cython_is_pyx_file(const char *file);

// Files read for Cython frames (generated C files, .pyx), through @t's path maps.
struct pyu_cython_files;
struct pyu_cython_files *pyu_cython_files_create(struct pyu_target *t);
void pyu_cython_files_destroy(struct pyu_cython_files *c);

// What an extension module's file says about itself, for its frames that have no name (a
// module shipped stripped, as distributions ship lxml's etree or PyYAML's _yaml).
struct pyu_cython_module {
	char *path;    // the file as the target names it (owned)
	char *name;    // "etree", from its PyInit_ export; NULL: not an extension module
	char *source;  // "src/lxml/etree.pyx", the .pyx its Cython code records; NULL unknown
	bool cython;   // Cython's runtime is in it (its "cython_runtime" string)
	bool symbols;  // it has a symbol table or DWARF, or a debug file for it is installed
};

#define PYU_CYTHON_MODULES 64u           // files examined per cache
#define PYU_CYTHON_RODATA_MAX (64u << 20) // bytes of .rodata searched for Cython's strings

// What the file the target maps as @path (read here as @local_path) is, examined once per
// cache; NULL when it cannot be told (unreadable, not ELF, out of memory, the cache full).
// Borrowed: lives as long as @files. Cannot fail otherwise.
const struct pyu_cython_module *pyu_cython_module_of(struct pyu_cython_files *files,
						     const char *path, const char *local_path);

// Resolves a native frame (its C symbol, its library, the file and line its debug information
// gives) as a Cython frame into *ret (release with pyu_cython_frame_clear). ret->role is
// PYU_CYTHON_NONE for a frame that is not Cython's. Fails only for out of memory; on error, *ret is zeroed.
struct pyu_error *pyu_cython_resolve(struct pyu_cython_files *files, const char *symbol,
				     const char *library, const char *file, int64_t line,
				     struct pyu_cython_frame *ret);
void pyu_cython_frame_clear(struct pyu_cython_frame *f);

#endif
