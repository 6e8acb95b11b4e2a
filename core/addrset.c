// addrset.c - a set of aligned addresses as bitmaps over 64 KiB chunks (addrset.h).
#include <stdlib.h>
#include <string.h>

#include "addrset.h"

#define CHUNK_SHIFT 16                           // 64 KiB of address space a bitmap
#define CHUNK_WORDS ((1u << CHUNK_SHIFT) / 8 / 64) // one bit per 8 bytes: 128 words, 1 KiB
#define BLOCK_CHUNKS 1024u                       // bitmaps allocated together (1 MiB)
#define CHUNKS_MAX (1ull << 32)                  // a vals[] index is 32 bits

static uint64_t *bitmap(const struct pyu_addrset *s, uint32_t index)
{
	return s->blocks[index / BLOCK_CHUNKS] + (size_t)(index % BLOCK_CHUNKS) * CHUNK_WORDS;
}

// The bitmap of chunk @key (chunk number + 1), made when @make; NULL when absent (or out of
// memory, with @make).
static uint64_t *chunk_bits(struct pyu_addrset *s, uint64_t key, bool make)
{
	if (key == s->last_key)
		return s->last_bits;
	int64_t found = pyu_addrmap_get(&s->table, key);
	if (found >= 0) {
		s->last_key = key;
		return s->last_bits = bitmap(s, (uint32_t)found);
	}
	if (!make || s->chunks >= CHUNKS_MAX - 1)
		return NULL;
	if (s->chunks == s->block_count * BLOCK_CHUNKS) {
		uint64_t **grown = realloc(s->blocks, (s->block_count + 1) * sizeof(*grown));
		if (!grown)
			return NULL;
		s->blocks = grown;
		if (!(grown[s->block_count] = calloc(BLOCK_CHUNKS, CHUNK_WORDS * 8)))
			return NULL;
		s->block_count++;
	}
	if (pyu_addrmap_add(&s->table, key, (uint32_t)s->chunks) != 1)
		return NULL;
	s->last_key = key;
	return s->last_bits = bitmap(s, (uint32_t)s->chunks++);
}

int pyu_addrset_add(struct pyu_addrset *s, uint64_t addr)
{
	uint64_t *bits = chunk_bits(s, (addr >> CHUNK_SHIFT) + 1, true);
	if (!bits)
		return -1;
	unsigned bit = (unsigned)(addr & ((1u << CHUNK_SHIFT) - 1)) >> 3;
	uint64_t mask = 1ull << (bit & 63);
	if (bits[bit / 64] & mask)
		return 0;
	bits[bit / 64] |= mask;
	s->count++;
	return 1;
}

bool pyu_addrset_has(struct pyu_addrset *s, uint64_t addr)
{
	const uint64_t *bits = chunk_bits(s, (addr >> CHUNK_SHIFT) + 1, false);
	unsigned bit = (unsigned)(addr & ((1u << CHUNK_SHIFT) - 1)) >> 3;
	return bits && (bits[bit / 64] >> (bit & 63)) & 1;
}

size_t pyu_addrset_bytes(const struct pyu_addrset *s)
{
	return pyu_addrmap_bytes(&s->table) +
	       s->block_count * (BLOCK_CHUNKS * CHUNK_WORDS * 8 + sizeof(*s->blocks));
}

void pyu_addrset_clear(struct pyu_addrset *s)
{
	for (size_t i = 0; i < s->block_count; i++)
		free(s->blocks[i]);
	free(s->blocks);
	pyu_addrmap_clear(&s->table);
	memset(s, 0, sizeof(*s));
}

int pyu_addrset_rank_build(const struct pyu_addrset *s, struct pyu_addrset_rank *r)
{
	memset(r, 0, sizeof(*r));
	if (s->count > UINT32_MAX)
		return -1;
	r->chunk_base = malloc((s->chunks ? s->chunks : 1) * sizeof(*r->chunk_base));
	r->word_base = malloc((s->chunks ? s->chunks : 1) * CHUNK_WORDS * sizeof(*r->word_base));
	if (!r->chunk_base || !r->word_base) {
		pyu_addrset_rank_clear(r);
		return -1;
	}
	uint32_t total = 0;
	for (size_t c = 0; c < s->chunks; c++) {
		const uint64_t *bits = bitmap(s, (uint32_t)c);
		uint16_t *wb = r->word_base + c * CHUNK_WORDS;
		uint32_t in = 0; // at most 8192: fits the 16 bits
		r->chunk_base[c] = total;
		for (unsigned w = 0; w < CHUNK_WORDS; w++) {
			wb[w] = (uint16_t)in;
			in += (uint32_t)__builtin_popcountll(bits[w]);
		}
		total += in;
	}
	return 0;
}

int64_t pyu_addrset_rank(const struct pyu_addrset *s, const struct pyu_addrset_rank *r,
			 uint64_t addr)
{
	int64_t c = pyu_addrmap_get(&s->table, (addr >> CHUNK_SHIFT) + 1);
	if (c < 0 || !r->chunk_base)
		return -1;
	const uint64_t *bits = bitmap(s, (uint32_t)c);
	unsigned bit = (unsigned)(addr & ((1u << CHUNK_SHIFT) - 1)) >> 3;
	uint64_t word = bits[bit / 64], below = (1ull << (bit & 63)) - 1;
	if (!((word >> (bit & 63)) & 1))
		return -1;
	return (int64_t)r->chunk_base[c] + r->word_base[(size_t)c * CHUNK_WORDS + bit / 64] +
	       __builtin_popcountll(word & below);
}

void pyu_addrset_rank_clear(struct pyu_addrset_rank *r)
{
	free(r->chunk_base);
	free(r->word_base);
	memset(r, 0, sizeof(*r));
}
