// siphash.c - SipHash-c-d over a byte buffer (siphash.h), from the algorithm's paper: four
// 64-bit words of state keyed by (k0, k1), each little-endian 8-byte word of input mixed in by
// @c rounds, the last word holding the length's low byte on top, then @d rounds.
#include "siphash.h"

#include "bytes.h"

static inline uint64_t rotl(uint64_t x, unsigned b)
{
	return (x << b) | (x >> (64 - b));
}

struct sip {
	uint64_t v0, v1, v2, v3;
};

static inline void sip_round(struct sip *s)
{
	s->v0 += s->v1;
	s->v1 = rotl(s->v1, 13) ^ s->v0;
	s->v0 = rotl(s->v0, 32);
	s->v2 += s->v3;
	s->v3 = rotl(s->v3, 16) ^ s->v2;
	s->v0 += s->v3;
	s->v3 = rotl(s->v3, 21) ^ s->v0;
	s->v2 += s->v1;
	s->v1 = rotl(s->v1, 17) ^ s->v2;
	s->v2 = rotl(s->v2, 32);
}

static inline void sip_word(struct sip *s, uint64_t m, unsigned c)
{
	s->v3 ^= m;
	for (unsigned i = 0; i < c; i++)
		sip_round(s);
	s->v0 ^= m;
}

uint64_t pyu_siphash(unsigned c, unsigned d, uint64_t k0, uint64_t k1, const uint8_t *buf,
		     size_t len)
{
	struct sip s = {k0 ^ 0x736f6d6570736575ull, k1 ^ 0x646f72616e646f6dull,
			k0 ^ 0x6c7967656e657261ull, k1 ^ 0x7465646279746573ull};
	size_t whole = len & ~(size_t)7;
	for (size_t i = 0; i < whole; i += 8)
		sip_word(&s, pyu_get_u64(buf + i, 0), c);
	uint64_t last = (uint64_t)len << 56;
	for (size_t i = whole; i < len; i++)
		last |= (uint64_t)buf[i] << (8 * (i - whole));
	sip_word(&s, last, c);
	s.v2 ^= 0xff;
	for (unsigned i = 0; i < d; i++)
		sip_round(&s);
	return s.v0 ^ s.v1 ^ s.v2 ^ s.v3;
}
