// addrset.h - a set of 8-byte-aligned addresses, for walks that must meet each object once
// (the heap census): one bit per 8 bytes of each 64 KiB chunk of the address space an address
// fell in, the chunks found through a small open-addressing table. Objects met one after
// another lie close together, so a lookup mostly touches a bitmap word already in the CPU's
// cache, unlike a hash set of addresses (one cache and TLB miss a lookup). Memory: 1 KiB a
// chunk met (1/64 of the address range the members span) plus the table. Pure layer: no target.
#ifndef PYU_ADDRSET_H
#define PYU_ADDRSET_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "addrmap.h"

struct pyu_addrset {
	struct pyu_addrmap table; // chunk number + 1 -> index of the chunk's bitmap
	size_t chunks;         // chunks in use
	uint64_t **blocks;     // bitmaps, PYU_ADDRSET_BLOCK to a block
	size_t block_count;
	uint64_t last_key;     // the chunk looked up last (+ 1; 0: none) and its bitmap
	uint64_t *last_bits;
	uint64_t count;        // members
};

// An empty set: zero it (memset or = {0}); no allocation until the first add.

// Adds @addr (8-byte aligned). Returns 1 when added, 0 when it was a member already, -1 when
// out of memory (the set is unchanged).
int pyu_addrset_add(struct pyu_addrset *s, uint64_t addr);
// Whether @addr is a member. Cannot fail.
bool pyu_addrset_has(struct pyu_addrset *s, uint64_t addr);
// Bytes the set holds allocated. Cannot fail.
size_t pyu_addrset_bytes(const struct pyu_addrset *s);
// Frees what the set holds and empties it. Cannot fail.
void pyu_addrset_clear(struct pyu_addrset *s);

// Dense numbers for the members of a set that no longer changes: each member's number in
// [0, count), from a count per chunk and per bitmap word (a 16th of the bitmaps' size), so a
// caller can keep an array per member instead of a map of addresses.
struct pyu_addrset_rank {
	uint32_t *chunk_base;  // per chunk (in the set's chunk order): members of the chunks before
	uint16_t *word_base;   // per bitmap word: members in the chunk's words before it
};

// Numbers the members of @s as they are now (an add after it invalidates the numbers). Returns
// 0, or -1 when out of memory or past 2^32 members (*r then holds nothing).
int pyu_addrset_rank_build(const struct pyu_addrset *s, struct pyu_addrset_rank *r);
// The number of member @addr, or -1 when it is no member. Cannot fail.
int64_t pyu_addrset_rank(const struct pyu_addrset *s, const struct pyu_addrset_rank *r,
			 uint64_t addr);
// Frees the numbering. Cannot fail.
void pyu_addrset_rank_clear(struct pyu_addrset_rank *r);

#endif
