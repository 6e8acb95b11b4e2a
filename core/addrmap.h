// addrmap.h - a map from non-zero 64-bit keys (addresses, chunk numbers) to 32-bit values: open
// addressing with linear probing, grown to keep it at most half full. What the heap census
// (type addresses -> type index), its set of addresses (chunk -> bitmap) and its graphs
// (object -> node) look things up in. Pure layer: no target.
#ifndef PYU_ADDRMAP_H
#define PYU_ADDRMAP_H

#include <stddef.h>
#include <stdint.h>

struct pyu_addrmap {
	uint64_t *keys;   // 0: an empty slot
	uint32_t *vals;
	size_t slots;     // a power of two, or 0 before the first add
	size_t used;
};

// An empty map: zero it (memset or = {0}); no allocation until the first add.

// The value of @key, or -1 when @key is not in the map (0 never is). Cannot fail.
int64_t pyu_addrmap_get(const struct pyu_addrmap *m, uint64_t key);
// Adds @key -> @val unless @key is there (its value is then left as it was). Returns 1 when
// added, 0 when @key was there, -1 when out of memory or @key is 0 (the map is unchanged).
int pyu_addrmap_add(struct pyu_addrmap *m, uint64_t key, uint32_t val);
// Bytes the map holds allocated. Cannot fail.
size_t pyu_addrmap_bytes(const struct pyu_addrmap *m);
// Frees what the map holds and empties it. Cannot fail.
void pyu_addrmap_clear(struct pyu_addrmap *m);

#endif
