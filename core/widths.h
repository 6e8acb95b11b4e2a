// widths.h - code-point classes for measuring text on a terminal the way traceback.py does
// (generated tables in widths.c, from tools/gen-widths). Pure: no target access.
#ifndef PYU_WIDTHS_H
#define PYU_WIDTHS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct pyu_cp_range {
	uint32_t first, last;
};

extern const struct pyu_cp_range pyu_wide_ranges[];      // East Asian Width W or F
extern const size_t pyu_wide_ranges_count;
extern const struct pyu_cp_range pyu_combining_ranges[]; // canonical combining class != 0
extern const size_t pyu_combining_ranges_count;
extern const struct pyu_cp_range pyu_format_ranges[];    // category Cf, except U+00AD
extern const size_t pyu_format_ranges_count;

// Whether @cp lies in one of the @count sorted ranges. Cannot fail.
static inline bool pyu_cp_in(const struct pyu_cp_range *r, size_t count, uint32_t cp)
{
	size_t lo = 0, hi = count;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (cp < r[mid].first)
			hi = mid;
		else if (cp > r[mid].last)
			lo = mid + 1;
		else
			return true;
	}
	return false;
}

#endif
