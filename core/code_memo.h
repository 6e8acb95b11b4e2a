// code_memo.h - what the code objects of a live process's earlier snapshots held, given again
// to a later snapshot only when the code object is provably the same one (code_memo.c).
#ifndef PYU_CODE_MEMO_H
#define PYU_CODE_MEMO_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "layout.h"
#include "stacks.h"

struct pyu_code_memo;

// NULL when @l has no co_version (before 3.12: nothing tells a code object from a new one at
// the same address without reading its names again) or out of memory.
struct pyu_code_memo *pyu_code_memo_create(const struct pyu_layout *l);
void pyu_code_memo_destroy(struct pyu_code_memo *m);

// A new snapshot begins: the code objects the last one used become the ones worth reading
// first (pyu_code_memo_recent).
void pyu_code_memo_begin(struct pyu_code_memo *m);

// The code object at @addr whose header (layout.code.size bytes) was just read as @hdr: when
// the memo holds it with the same co_version (not 0) and the same header fields its copy
// came from, fills *@ci (strings and table newly allocated, the caller's) and
// *@firsttraceable and returns true. False otherwise (nothing filled), or out of memory.
bool pyu_code_memo_get(struct pyu_code_memo *m, uint64_t addr, const uint8_t *hdr,
		       struct pyu_code_info *ci, int32_t *firsttraceable);

// Keeps a copy of @ci, read from the code object at @addr with header @hdr. Cannot fail:
// what cannot be kept (out of memory, version 0, over the memo's bounds) is not.
void pyu_code_memo_put(struct pyu_code_memo *m, uint64_t addr, const uint8_t *hdr,
		       const struct pyu_code_info *ci, int32_t firsttraceable);

// Where the instruction at byte @offset of the code object at @addr is, when this snapshot
// found that code object the same (pyu_code_memo_get or _put) and an earlier lookup noted it.
bool pyu_code_memo_locate(const struct pyu_code_memo *m, uint64_t addr, int64_t offset,
			  struct pyu_location *loc);
// Notes the location of an instruction of a code object this snapshot found the same (else
// nothing). Cannot fail.
void pyu_code_memo_note_location(struct pyu_code_memo *m, uint64_t addr, int64_t offset,
				 struct pyu_location loc);

// Up to @max addresses of the code objects the previous snapshot used, into @addrs: their
// headers are worth one gathered read before the walk. Returns how many.
size_t pyu_code_memo_recent(const struct pyu_code_memo *m, uint64_t *addrs, size_t max);

#endif
