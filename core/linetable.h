// linetable.h - pure decoders of CPython's line-number tables: co_lnotab (2.7, 3.6-3.9),
// co_linetable (3.10, PEP 626) and the location table (3.11+, PEP 657). They work on a byte
// buffer already copied out of the target; nothing here reads target memory or allocates.
// Every offset in this API is in BYTES of bytecode on every version (a 3.10 frame's f_lasti and
// a 3.11+ instruction index count 2-byte code units: the caller multiplies by 2).
//
// Two ways to look up:
//  - pyu_linetable_lookup(): one offset, decodes from the start (O(table), no storage);
//  - pyu_linetable_decode() once per code object into caller-supplied storage (size it with
//    pyu_linetable_max_ranges()), then pyu_linetable_decoded_lookup() per offset (binary
//    search, O(log ranges)). Both give identical answers for every offset, corrupt tables
//    included. Use the decoded form when one code object is asked many times (deep recursion):
//
//	size_t cap = pyu_linetable_max_ranges(&lt);         // table length + 1
//	struct pyu_line_range *r = malloc(cap * sizeof(*r)); // the caller owns the storage
//	struct pyu_linetable_decoded d;
//	if (r && pyu_linetable_decode(&lt, r, cap, &d) != PYU_LT_NOSPACE)
//		... pyu_linetable_decoded_lookup(&d, offset, &loc) for every frame of the code ...
//
//    The decoded form holds no pointer into lt.buf, so the table copy may be freed after.
#ifndef PYU_LINETABLE_H
#define PYU_LINETABLE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

enum pyu_linetable_format {
	PYU_LNOTAB_UNSIGNED, // 2.7: (addr delta u8, line delta u8)
	PYU_LNOTAB_SIGNED,   // 3.6-3.9: (addr delta u8, line delta s8)
	PYU_LINETABLE_310,   // 3.10: (length u8, line delta s8; -128 = no line), bytes
	PYU_LOCATIONS_311,   // 3.11+: PEP 657 entries over 2-byte code units
};

#define PYU_NO_LINE INT32_MIN   // the instruction has no line (3.10+)
#define PYU_NO_COLUMN INT32_MIN // the instruction has no column (3.11+), or < 3.11

// What CPython reports for one instruction: co_positions() on 3.11+, co_lines() on 3.10,
// PyCode_Addr2Line() before. Before 3.11 end_line == line and both columns are PYU_NO_COLUMN.
// Like CPython, 3.10 reports any negative line as no line and 3.11+ reports a value of -1 in
// any of the four fields as none (the long form's column 0 encodes "unknown" and comes out as
// PYU_NO_COLUMN).
struct pyu_location {
	int32_t line, end_line;     // PYU_NO_LINE when none
	int32_t column, end_column; // PYU_NO_COLUMN when none; 0-based UTF-8 byte offsets
};

struct pyu_linetable {
	const uint8_t *buf;
	size_t len;
	int32_t firstlineno;
	enum pyu_linetable_format format;
	uint64_t code_len; // bytecode length in bytes; ends the last range of a co_lnotab (<= 3.9)
};

// One range of a table: bytecode bytes [start, end) share @loc. start < end always.
struct pyu_line_range {
	uint64_t start, end;
	struct pyu_location loc;
};

// Status of a decode step.
enum pyu_lt_status {
	PYU_LT_OK = 0,
	PYU_LT_END = 1,     // iteration finished cleanly
	PYU_LT_CORRUPT = 2, // the table is malformed (truncated entry, endless varint, line out
			    // of int32 range, odd-length pair table, ...)
	PYU_LT_NOSPACE = 3, // pyu_linetable_decode(): more ranges than the caller's storage
};

// Location of the instruction at byte offset @offset, exactly as CPython reports it:
//  - a negative offset gives co_firstlineno (as PyCode_Addr2Line does), columns none;
//  - an offset past the last range gives PYU_NO_LINE on 3.10+, and on <= 3.9 the line after
//    the whole table (PyCode_Addr2Line has no "no line" there).
// Returns PYU_LT_OK, or PYU_LT_CORRUPT when the table is malformed before reaching @offset;
// *ret is then unchanged. Never reads outside [buf, buf + len).
enum pyu_lt_status pyu_linetable_lookup(const struct pyu_linetable *lt, int64_t offset,
					struct pyu_location *ret);

// Iterator over every range of a table, in bytecode order: ranges are contiguous from byte 0
// and never empty (zero-length table entries only move the running line). On <= 3.9 the last
// range ends at code_len (or at the table's last address if that is larger); on 3.10+ the
// ranges cover exactly what the table covers, as co_lines()/co_positions() do. Each 3.11+
// table entry is one range (no merging), so `py-line --table` can show the table as it is.
struct pyu_linetable_iter {
	const struct pyu_linetable *lt;
	size_t pos;    // next byte of buf
	uint64_t addr; // bytecode byte offset where the next range starts
	int64_t line;  // running line (co_firstlineno + deltas so far)
	// private decoder state (linetable.c may change it freely)
	int state;
};
// Cannot fail.
void pyu_linetable_iter_init(struct pyu_linetable_iter *it, const struct pyu_linetable *lt);
// Produces the next range into *ret. Returns PYU_LT_END when done, PYU_LT_CORRUPT on a malformed
// table (iteration then stops for good; every range produced before is valid). On any status
// but PYU_LT_OK, *ret is unchanged.
enum pyu_lt_status pyu_linetable_next(struct pyu_linetable_iter *it, struct pyu_line_range *ret);

// A table decoded once for repeated lookups. The ranges live in the caller's storage, which
// must outlive this struct; nothing here points into the table bytes.
struct pyu_linetable_decoded {
	const struct pyu_line_range *ranges;
	size_t n;
	struct pyu_location before;   // negative offsets
	struct pyu_location past_end; // offsets at or past the end of the last range
	bool corrupt;                 // the table broke after ranges[n-1]: offsets past it fail
};

// An upper bound on the number of ranges of @lt (len + 1), cheap: no decoding. Cannot fail.
size_t pyu_linetable_max_ranges(const struct pyu_linetable *lt);

// Decodes all of @lt into @ranges (room for @cap) and fills *ret. Returns PYU_LT_OK; or
// PYU_LT_CORRUPT when the table is malformed: *ret then holds the ranges before the damage
// (lookups inside them are valid, later ones fail exactly as pyu_linetable_lookup() does); or
// PYU_LT_NOSPACE when @cap is too small, with *ret unchanged. @cap >=
// pyu_linetable_max_ranges(@lt) never gives PYU_LT_NOSPACE.
enum pyu_lt_status pyu_linetable_decode(const struct pyu_linetable *lt,
					struct pyu_line_range *ranges, size_t cap,
					struct pyu_linetable_decoded *ret);

// Same answer as pyu_linetable_lookup() on the table @d was decoded from, in O(log n).
// Returns PYU_LT_OK, or PYU_LT_CORRUPT (offset past the good part of a corrupt table) with *ret
// unchanged.
enum pyu_lt_status pyu_linetable_decoded_lookup(const struct pyu_linetable_decoded *d,
						int64_t offset, struct pyu_location *ret);

#endif
