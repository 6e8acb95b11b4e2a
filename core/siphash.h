// siphash.h - SipHash-c-d (Aumasson and Bernstein) over a byte buffer: what CPython hashes a
// str's bytes with (SipHash-2-4 in 3.4 - 3.10, SipHash-1-3 from 3.11), so that a dict of str
// keys read from a target is searched by hash as CPython searches it. Pure: no target access.
#ifndef PYU_SIPHASH_H
#define PYU_SIPHASH_H

#include <stddef.h>
#include <stdint.h>

// SipHash with @c compression and @d finalization rounds, keys @k0 and @k1, of the @len bytes
// at @buf. Cannot fail.
uint64_t pyu_siphash(unsigned c, unsigned d, uint64_t k0, uint64_t k1, const uint8_t *buf,
		     size_t len);

#endif
