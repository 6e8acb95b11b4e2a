// printable.h - whether repr() prints a code point as itself: Python's str.isprintable() for
// each Unicode database version the matrix's interpreters use (data in printable.c, generated
// by tools/gen-printable). Pure: no target access.
#ifndef PYU_PRINTABLE_H
#define PYU_PRINTABLE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct pyu_printable_range {
	uint32_t first, last, mask;
};

extern const struct pyu_printable_range pyu_printable_ranges[];
extern const size_t pyu_printable_range_count;
extern const unsigned pyu_printable_db_count;

// Whether code point @cp is printable in Unicode database @db (the index printable.c lists;
// value_layout.h's unicode_db). ASCII: 0x20 - 0x7e. Past U+10FFFF: false. Cannot fail.
static inline bool pyu_unicode_printable(uint32_t cp, unsigned db)
{
	if (cp < 0x80)
		return cp >= 0x20 && cp < 0x7f;
	if (cp > 0x10ffff)
		return false;
	size_t lo = 0, hi = pyu_printable_range_count;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (cp < pyu_printable_ranges[mid].first)
			hi = mid;
		else if (cp > pyu_printable_ranges[mid].last)
			lo = mid + 1;
		else
			return !((pyu_printable_ranges[mid].mask >> db) & 1);
	}
	return true;
}

#endif
