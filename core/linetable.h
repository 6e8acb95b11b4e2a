// linetable.h - pure decoders of CPython's line-number tables: co_lnotab (2.7, 3.6-3.9),
// co_linetable (3.10, PEP 626) and the location table (3.11+, PEP 657). They work on a byte
// buffer already copied out of the target; nothing here reads target memory or allocates.
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

struct pyu_location {
	int32_t line, end_line;     // PYU_NO_LINE when none
	int32_t column, end_column; // PYU_NO_COLUMN when none; 0-based UTF-8 byte offsets
};

struct pyu_linetable {
	const uint8_t *buf;
	size_t len;
	int32_t firstlineno;
	enum pyu_linetable_format format;
	uint64_t code_len; // bytecode length in bytes (3.11+: 2 x code units); ends the last range
};

// One range of a table: bytecode bytes [start, end) share @loc.
struct pyu_line_range {
	uint64_t start, end;
	struct pyu_location loc;
};

// Status of a decode step.
enum pyu_lt_status {
	PYU_LT_OK = 0,
	PYU_LT_END = 1,     // iteration finished cleanly
	PYU_LT_CORRUPT = 2, // the table is malformed (truncated entry, endless varint, ...)
};

// Location of the instruction at byte offset @offset (a negative offset means "before the
// first instruction" and gives co_firstlineno, as CPython does). An offset past the end of the
// table gives PYU_NO_LINE. Returns PYU_LT_CORRUPT when the table is malformed before
// reaching @offset; *ret is then unchanged.
enum pyu_lt_status pyu_linetable_lookup(const struct pyu_linetable *lt, int64_t offset,
					struct pyu_location *ret);

// Iterator over every range of a table, in bytecode order. Zero-length ranges are skipped.
struct pyu_linetable_iter {
	const struct pyu_linetable *lt;
	size_t pos;          // next byte of buf
	uint64_t addr;       // bytecode byte offset where the next range starts
	int32_t line;        // running line
	// private decoder state (linetable.c may change these freely)
	int32_t pending_line;
	bool started;
	bool done;
};
void pyu_linetable_iter_init(struct pyu_linetable_iter *it, const struct pyu_linetable *lt);
// Produces the next range into *ret. Returns PYU_LT_END when done, PYU_LT_CORRUPT on a malformed
// table (iteration then stops for good).
enum pyu_lt_status pyu_linetable_next(struct pyu_linetable_iter *it, struct pyu_line_range *ret);

#endif
