// addrmap.c - a map of non-zero 64-bit keys to 32-bit values (addrmap.h).
#include <stdlib.h>
#include <string.h>

#include "addrmap.h"

#define FIRST_SLOTS 1024u

// Fibonacci hashing: the high bits of the product, so keys that differ only in their low bits
// (aligned addresses, consecutive chunk numbers) spread over the table.
static size_t slot_of(uint64_t key, size_t slots)
{
	return (size_t)((key * 0x9e3779b97f4a7c15ull) >> 32) & (slots - 1);
}

static int grow(struct pyu_addrmap *m)
{
	if (m->slots > SIZE_MAX / 2 / sizeof(uint64_t))
		return -1;
	size_t slots = m->slots ? m->slots * 2 : FIRST_SLOTS;
	uint64_t *keys = calloc(slots, sizeof(*keys));
	uint32_t *vals = malloc(slots * sizeof(*vals));
	if (!keys || !vals) {
		free(keys);
		free(vals);
		return -1;
	}
	for (size_t i = 0; i < m->slots; i++) {
		if (!m->keys[i])
			continue;
		size_t j = slot_of(m->keys[i], slots);
		while (keys[j])
			j = (j + 1) & (slots - 1);
		keys[j] = m->keys[i];
		vals[j] = m->vals[i];
	}
	free(m->keys);
	free(m->vals);
	m->keys = keys;
	m->vals = vals;
	m->slots = slots;
	return 0;
}

int64_t pyu_addrmap_get(const struct pyu_addrmap *m, uint64_t key)
{
	if (!m->slots || !key)
		return -1;
	// At most half full: an empty slot ends every probe.
	for (size_t j = slot_of(key, m->slots); m->keys[j]; j = (j + 1) & (m->slots - 1))
		if (m->keys[j] == key)
			return m->vals[j];
	return -1;
}

int pyu_addrmap_add(struct pyu_addrmap *m, uint64_t key, uint32_t val)
{
	if (!key)
		return -1;
	if (pyu_addrmap_get(m, key) >= 0)
		return 0;
	if ((m->used + 1) * 2 > m->slots && grow(m) != 0)
		return -1;
	size_t j = slot_of(key, m->slots);
	while (m->keys[j])
		j = (j + 1) & (m->slots - 1);
	m->keys[j] = key;
	m->vals[j] = val;
	m->used++;
	return 1;
}

size_t pyu_addrmap_bytes(const struct pyu_addrmap *m)
{
	return m->slots * (sizeof(*m->keys) + sizeof(*m->vals));
}

void pyu_addrmap_clear(struct pyu_addrmap *m)
{
	free(m->keys);
	free(m->vals);
	memset(m, 0, sizeof(*m));
}
