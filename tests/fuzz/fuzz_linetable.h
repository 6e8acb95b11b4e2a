// fuzz_linetable.h - the libFuzzer body shared by the per-format targets (fuzz_*.c define
// FUZZ_FORMAT and include this). Input: 4 bytes firstlineno, 2 bytes code_len, then the table.
// Besides ASan/UBSan catching any read outside the table, it checks invariants and traps
// when one breaks: statuses are only OK/END/CORRUPT; ranges are non-empty, contiguous from 0
// and fewer than pyu_linetable_max_ranges(); pyu_linetable_decode() never runs out of that
// room; pyu_linetable_lookup() and the decoded form agree with the iterator at both ends of
// every range, before the start and past the end (status included), and the decoded form at
// every offset.
#include <stdlib.h>
#include <string.h>

#include "linetable.h"

#define EVERY_OFFSET_LIMIT 4096

#define REQUIRE(cond)                                                                        \
	do {                                                                                 \
		if (!(cond))                                                                 \
			__builtin_trap();                                                    \
	} while (0)

static bool same(const struct pyu_location *a, const struct pyu_location *b)
{
	return !memcmp(a, b, sizeof(*a));
}

// Both lookups at @offset give @want (or both fail as corrupt when @want is NULL).
static void agree(const struct pyu_linetable *lt, const struct pyu_linetable_decoded *d,
		  int64_t offset, const struct pyu_location *want)
{
	struct pyu_location a, b;
	enum pyu_lt_status sa = pyu_linetable_lookup(lt, offset, &a);
	enum pyu_lt_status sb = pyu_linetable_decoded_lookup(d, offset, &b);
	REQUIRE(sa == sb);
	REQUIRE(sa == PYU_LT_OK || sa == PYU_LT_CORRUPT);
	if (sa == PYU_LT_OK)
		REQUIRE(same(&a, &b));
	if (want) {
		REQUIRE(sa == PYU_LT_OK);
		REQUIRE(same(&a, want));
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size < 6)
		return 0;
	int32_t firstlineno;
	uint16_t code_len;
	memcpy(&firstlineno, data, 4);
	memcpy(&code_len, data + 4, 2);
	// A copy of exactly the table's size, so ASan flags any read past it.
	size_t len = size - 6;
	uint8_t *buf = malloc(len ? len : 1);
	REQUIRE(buf);
	memcpy(buf, data + 6, len);
	struct pyu_linetable lt = { .buf = buf, .len = len, .firstlineno = firstlineno,
				    .format = FUZZ_FORMAT, .code_len = code_len };

	size_t cap = pyu_linetable_max_ranges(&lt);
	struct pyu_line_range *ranges = malloc((cap ? cap : 1) * sizeof(*ranges));
	REQUIRE(ranges);
	struct pyu_linetable_iter it;
	struct pyu_line_range r;
	enum pyu_lt_status st;
	size_t n = 0;
	uint64_t end = 0;
	pyu_linetable_iter_init(&it, &lt);
	while ((st = pyu_linetable_next(&it, &r)) == PYU_LT_OK) {
		REQUIRE(n < cap);
		REQUIRE(r.start == end && r.start < r.end);
		ranges[n++] = r;
		end = r.end;
	}
	REQUIRE(st == PYU_LT_END || st == PYU_LT_CORRUPT);
	REQUIRE(pyu_linetable_next(&it, &r) == st); // sticky

	struct pyu_linetable_decoded d;
	struct pyu_line_range *dr = malloc((cap ? cap : 1) * sizeof(*dr));
	REQUIRE(dr);
	enum pyu_lt_status ds = pyu_linetable_decode(&lt, dr, cap, &d);
	REQUIRE(ds == (st == PYU_LT_END ? PYU_LT_OK : PYU_LT_CORRUPT));
	REQUIRE(d.n == n && d.corrupt == (st == PYU_LT_CORRUPT));
	REQUIRE(!n || !memcmp(dr, ranges, n * sizeof(*dr)));

	struct pyu_location first = { firstlineno, firstlineno, PYU_NO_COLUMN, PYU_NO_COLUMN };
	agree(&lt, &d, -1, &first);
	agree(&lt, &d, INT64_MIN, &first);
	for (size_t i = 0; i < n; i++) {
		agree(&lt, &d, (int64_t)ranges[i].start, &ranges[i].loc);
		agree(&lt, &d, (int64_t)ranges[i].end - 1, &ranges[i].loc);
	}
	// Every offset through the decoded form (binary search) against the iterator's ranges;
	// a stride past EVERY_OFFSET_LIMIT keeps the run rate up.
	uint64_t stride = end / EVERY_OFFSET_LIMIT + 1;
	for (uint64_t off = 0, i = 0; off < end; off += stride) {
		while (ranges[i].end <= off)
			i++;
		struct pyu_location got;
		REQUIRE(pyu_linetable_decoded_lookup(&d, (int64_t)off, &got) == PYU_LT_OK);
		REQUIRE(same(&got, &ranges[i].loc));
	}
	// Past the last range: corrupt if the table broke, else the format's past-end rule.
	agree(&lt, &d, (int64_t)end, NULL);
	agree(&lt, &d, (int64_t)end + 1000, NULL);
	if (st == PYU_LT_END && lt.format >= PYU_LINETABLE_310) {
		struct pyu_location none = { PYU_NO_LINE, PYU_NO_LINE, PYU_NO_COLUMN, PYU_NO_COLUMN };
		agree(&lt, &d, (int64_t)end, &none);
	}
	free(dr);
	free(ranges);
	free(buf);
	return 0;
}
