// source.h - source lines of the files a target's frames name, read from this machine's disk
// (after the target's path maps), for tracebacks and py-list. Each file is read once per cache
// and indexed by line; bounded in size and count. Bytes are handed out as they are in the file
// (the formatters repair invalid UTF-8): Python 2 and PEP 263 encodings are shown as UTF-8.
#ifndef PYU_SOURCE_H
#define PYU_SOURCE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "target.h"

#define PYU_SOURCE_MAX_BYTES (64u << 20) // a file is read up to this size
#define PYU_SOURCE_MAX_FILES 16u         // files kept open in one cache

struct pyu_source_cache;

// A cache that maps paths through @t (which may be NULL: paths used as they are).
// Returns NULL when out of memory; every function below accepts a NULL cache and then finds
// nothing.
struct pyu_source_cache *pyu_source_cache_create(struct pyu_target *t);
void pyu_source_cache_destroy(struct pyu_source_cache *c);

// Line @line (1-based) of the file the target calls @path, without its line ending (a UTF-8
// byte-order mark is removed from line 1). *ret points into the cache and stays valid until
// the cache is destroyed. Returns false, leaving *ret unchanged, when the file is not readable
// here (missing, not a regular file, a pseudo-name like "<string>") or has no such line.
bool pyu_source_line(struct pyu_source_cache *c, const char *path, int64_t line,
		     const char **ret, size_t *ret_len);
// Whether @path names a file relative to the target's working directory, which the target
// does not know (a core without pyu_target_set_cwd): its source cannot be found. Cannot fail.
bool pyu_source_needs_cwd(const struct pyu_source_cache *c, const char *path);
// Number of lines of the file, or -1 when it is not readable. Cannot fail otherwise.
int64_t pyu_source_line_count(struct pyu_source_cache *c, const char *path);

// Text made from the source (a line with its carets, say) kept under a caller's key, so a dump
// that shows the same code position in many threads renders it once. Find: true with the
// text (valid until the next store or the cache's end) when the key was stored. Store: keeps
// a copy of @text (at most PYU_SOURCE_MEMO_BYTES; longer text is not kept); replaces what
// held the key's slot. Cannot fail (out of memory: nothing is kept).
#define PYU_SOURCE_MEMO_BYTES 4096u
bool pyu_source_memo_find(struct pyu_source_cache *c, const uint64_t key[4], const char **text,
			  size_t *len);
void pyu_source_memo_store(struct pyu_source_cache *c, const uint64_t key[4], const char *text,
			   size_t len);

#endif
