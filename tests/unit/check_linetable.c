// check_linetable.c - the line-table decoders on hand-built byte arrays: the worked examples of
// cpython-internals.md section 6.4 (bytes the real interpreters produced), every 3.11+ entry
// kind, CPython's edge rules, and corrupt or truncated input.
#include <string.h>

#include "checkmain.h"
#include "linetable.h"

#define NL PYU_NO_LINE
#define NC PYU_NO_COLUMN

static struct pyu_linetable table(enum pyu_linetable_format fmt, const uint8_t *buf, size_t len,
				  int32_t firstlineno, uint64_t code_len)
{
	return (struct pyu_linetable){ .buf = buf, .len = len, .firstlineno = firstlineno,
				       .format = fmt, .code_len = code_len };
}
#define TABLE(fmt, bytes, first, code_len) table(fmt, bytes, sizeof(bytes), first, code_len)

// Asserts that both lookups give @line/@end_line/@col/@end_col at byte @offset.
static void expect_at(const struct pyu_linetable *lt, int64_t offset, int32_t line,
		      int32_t end_line, int32_t col, int32_t end_col)
{
	struct pyu_location got;
	ck_assert_int_eq(pyu_linetable_lookup(lt, offset, &got), PYU_LT_OK);
	ck_assert_msg(got.line == line && got.end_line == end_line && got.column == col &&
			      got.end_column == end_col,
		      "offset %lld: got (%d, %d, %d, %d), want (%d, %d, %d, %d)", (long long)offset,
		      got.line, got.end_line, got.column, got.end_column, line, end_line, col, end_col);
}

static void expect_line(const struct pyu_linetable *lt, int64_t offset, int32_t line)
{
	expect_at(lt, offset, line, line, NC, NC);
}

// The decoded form agrees with pyu_linetable_lookup() at every offset from -3 to past the end,
// status included.
static void expect_decoded_agrees(const struct pyu_linetable *lt, uint64_t last)
{
	struct pyu_line_range ranges[256];
	struct pyu_linetable_decoded d;
	size_t cap = pyu_linetable_max_ranges(lt);
	ck_assert_uint_le(cap, 256);
	int st = pyu_linetable_decode(lt, ranges, cap, &d);
	ck_assert(st == PYU_LT_OK || st == PYU_LT_CORRUPT);
	for (size_t i = 0; i < d.n; i++) {
		ck_assert_uint_lt(ranges[i].start, ranges[i].end);
		ck_assert_uint_eq(ranges[i].start, i ? ranges[i - 1].end : 0);
	}
	for (int64_t off = -3; off <= (int64_t)last + 4; off++) {
		struct pyu_location a = { 1, 2, 3, 4 }, b = { 1, 2, 3, 4 };
		int sa = pyu_linetable_lookup(lt, off, &a);
		int sb = pyu_linetable_decoded_lookup(&d, off, &b);
		ck_assert_int_eq(sa, sb);
		ck_assert_mem_eq(&a, &b, sizeof(a));
	}
}

START_TEST(test_lnotab_27)
{
	// def f(a): b = a + 1 / while b > 10: b -= 3 / return (b,\n a)  on 2.7.18
	static const uint8_t t[] = { 0x00, 0x01, 0x0a, 0x01, 0x0f, 0x01, 0x0e, 0x01, 0x03, 0x01 };
	struct pyu_linetable lt = TABLE(PYU_LNOTAB_UNSIGNED, t, 1, 46);
	expect_line(&lt, -1, 1);
	expect_line(&lt, 0, 2);
	expect_line(&lt, 9, 2);
	expect_line(&lt, 10, 3);
	expect_line(&lt, 25, 4);
	expect_line(&lt, 39, 5);
	expect_line(&lt, 41, 5);
	expect_line(&lt, 42, 6);
	expect_line(&lt, 45, 6);
	expect_line(&lt, 1000, 6); // PyCode_Addr2Line has no "no line" before 3.10
	expect_decoded_agrees(&lt, 46);

	// Big jump: +255 then +46 (unsigned steps)
	static const uint8_t big[] = { 0x00, 0x01, 0x06, 0xff, 0x00, 0x2e };
	lt = TABLE(PYU_LNOTAB_UNSIGNED, big, 1, 10);
	expect_line(&lt, 5, 2);
	expect_line(&lt, 6, 303);
	expect_decoded_agrees(&lt, 10);
}
END_TEST

START_TEST(test_lnotab_signed)
{
	static const uint8_t t36[] = { 0x00, 0x01, 0x08, 0x01, 0x0a, 0x01, 0x0c, 0x01, 0x02, 0x01 };
	struct pyu_linetable lt = TABLE(PYU_LNOTAB_SIGNED, t36, 1, 36);
	expect_line(&lt, 0, 2);
	expect_line(&lt, 8, 3);
	expect_line(&lt, 18, 4);
	expect_line(&lt, 30, 5);
	expect_line(&lt, 32, 6);
	expect_decoded_agrees(&lt, 36);

	// 3.8/3.9: the last pair steps the line back by one.
	static const uint8_t t38[] = { 0x00, 0x01, 0x08, 0x01, 0x08, 0x01, 0x0a,
				       0x01, 0x02, 0x01, 0x02, 0xff };
	lt = TABLE(PYU_LNOTAB_SIGNED, t38, 1, 34);
	expect_line(&lt, 16, 4);
	expect_line(&lt, 26, 5);
	expect_line(&lt, 28, 6);
	expect_line(&lt, 30, 5);
	expect_line(&lt, 33, 5);
	expect_decoded_agrees(&lt, 34);
	// Read unsigned, the same bytes are wrong: this is why the format has two variants.
	lt.format = PYU_LNOTAB_UNSIGNED;
	expect_line(&lt, 30, 261);

	// 3.6-3.9 big jump: +127, +127, +47 with zero address steps.
	static const uint8_t big[] = { 0x00, 0x01, 0x04, 0x7f, 0x00, 0x7f, 0x00, 0x2f };
	lt = TABLE(PYU_LNOTAB_SIGNED, big, 1, 8);
	expect_line(&lt, 3, 2);
	expect_line(&lt, 4, 303);
	expect_decoded_agrees(&lt, 8);

	// The table ends exactly at code_len, then steps the line: past the end gets that line.
	static const uint8_t tail[] = { 0x04, 0x01, 0x00, 0x05 };
	lt = TABLE(PYU_LNOTAB_SIGNED, tail, 10, 4);
	expect_line(&lt, 3, 10);
	expect_line(&lt, 4, 16);
	expect_decoded_agrees(&lt, 4);

	// Empty table: everything is co_firstlineno.
	lt = (struct pyu_linetable){ .firstlineno = 7, .format = PYU_LNOTAB_SIGNED, .code_len = 6 };
	expect_line(&lt, 0, 7);
	expect_line(&lt, 5, 7);
	expect_line(&lt, 6, 7);
	expect_decoded_agrees(&lt, 6);
}
END_TEST

START_TEST(test_linetable_310)
{
	static const uint8_t t[] = { 0x08, 0x01, 0x08, 0x01, 0x08, 0x01, 0x08,
				     0xff, 0x02, 0x02, 0x02, 0x01, 0x04, 0xff };
	struct pyu_linetable lt = TABLE(PYU_LINETABLE_310, t, 1, 40);
	expect_line(&lt, -4, 1);
	expect_line(&lt, 0, 2);
	expect_line(&lt, 8, 3);
	expect_line(&lt, 16, 4);
	expect_line(&lt, 24, 3);
	expect_line(&lt, 32, 5);
	expect_line(&lt, 34, 6);
	expect_line(&lt, 36, 5);
	expect_line(&lt, 39, 5);
	expect_line(&lt, 40, NL); // past the end: no line
	expect_decoded_agrees(&lt, 40);

	// A generator expression: [0,2) has no line (-128), the running line is kept.
	static const uint8_t gen[] = { 0x02, 0x80, 0x1e, 0x00 };
	lt = TABLE(PYU_LINETABLE_310, gen, 7, 32);
	expect_line(&lt, 0, NL);
	expect_line(&lt, 1, NL);
	expect_line(&lt, 2, 7);
	expect_line(&lt, 31, 7);
	expect_line(&lt, 32, NL);
	expect_decoded_agrees(&lt, 32);

	// Zero-length entries carry pure line jumps.
	static const uint8_t big[] = { 0x04, 0x01, 0x00, 0x7f, 0x00, 0x7f, 0x04, 0x2f };
	lt = TABLE(PYU_LINETABLE_310, big, 1, 8);
	expect_line(&lt, 3, 2);
	expect_line(&lt, 4, 303);
	expect_decoded_agrees(&lt, 8);
	struct pyu_linetable_iter it;
	struct pyu_line_range r;
	pyu_linetable_iter_init(&it, &lt);
	ck_assert_int_eq(pyu_linetable_next(&it, &r), PYU_LT_OK);
	ck_assert(r.start == 0 && r.end == 4 && r.loc.line == 2);
	ck_assert_int_eq(pyu_linetable_next(&it, &r), PYU_LT_OK);
	ck_assert(r.start == 4 && r.end == 8 && r.loc.line == 303);
	ck_assert_int_eq(pyu_linetable_next(&it, &r), PYU_LT_END);
	ck_assert_int_eq(pyu_linetable_next(&it, &r), PYU_LT_END);

	// co_lines() reports any negative line as None; line 0 is a line.
	static const uint8_t neg[] = { 0x02, 0x00, 0x02, 0xfe, 0x02, 0x02 };
	lt = TABLE(PYU_LINETABLE_310, neg, 1, 6);
	expect_line(&lt, 0, 1);
	expect_line(&lt, 2, NL);
	expect_line(&lt, 4, 1);
	lt.firstlineno = 0;
	expect_line(&lt, 0, 0);
}
END_TEST

// 3.11.7 bytes for the example function (27 code units).
static const uint8_t t311[] = {
	0x80, 0x00, 0xd8, 0x08, 0x09, 0x88, 0x41, 0x89, 0x05, 0x80, 0x41, 0xd8, 0x0a, 0x0b,
	0x88, 0x62, 0x8a, 0x26, 0x88, 0x26, 0xd8, 0x08, 0x09, 0x88, 0x51, 0x89, 0x06, 0x88,
	0x01, 0xf0, 0x03, 0x00, 0x0b, 0x0c, 0x88, 0x62, 0x8a, 0x26, 0x88, 0x26, 0xe0, 0x0c,
	0x0d, 0xd8, 0x0c, 0x0d, 0xf0, 0x03, 0x01, 0x0c, 0x0f, 0xf0, 0x00, 0x01, 0x05, 0x0f,
};

START_TEST(test_locations_311_example)
{
	struct pyu_linetable lt = TABLE(PYU_LOCATIONS_311, t311, 1, 54);
	expect_at(&lt, -1, 1, 1, NC, NC);
	expect_at(&lt, 0, 1, 1, 0, 0);       // 80 00: RESUME on the def line
	expect_at(&lt, 2, 2, 2, 8, 9);       // d8 08 09: one-line +1
	expect_at(&lt, 4, 2, 2, 12, 13);     // 88 41
	expect_at(&lt, 6, 2, 2, 8, 13);      // 89 05: 2 units
	expect_at(&lt, 9, 2, 2, 8, 13);      // odd byte offset inside the second unit
	expect_at(&lt, 10, 2, 2, 4, 5);      // 80 41
	expect_at(&lt, 12, 3, 3, 10, 11);    // d8 0a 0b
	expect_at(&lt, 34, 3, 3, 10, 11);    // f0 03 00 0b 0c: long, line -1 back to 3
	expect_at(&lt, 46, 5, 5, 12, 13);    // e0 0c 0d: one-line +2
	expect_at(&lt, 48, 6, 6, 12, 13);    // d8 0c 0d
	expect_at(&lt, 50, 5, 6, 11, 14);    // f0 03 01 0c 0f: spans two lines
	expect_at(&lt, 52, 5, 6, 4, 14);     // f0 00 01 05 0f
	expect_at(&lt, 54, NL, NL, NC, NC);  // past the table
	expect_decoded_agrees(&lt, 54);

	// Big jump: svarint 5a 09 = 602 -> +301.
	static const uint8_t big[] = { 0x80, 0x00, 0xd8, 0x08, 0x09, 0x80, 0x41, 0xf0,
				       0x5a, 0x09, 0x00, 0x0c, 0x0d, 0x80, 0x48 };
	lt = TABLE(PYU_LOCATIONS_311, big, 1, 10);
	expect_at(&lt, 4, 2, 2, 4, 5);
	expect_at(&lt, 6, 303, 303, 11, 12);
	expect_at(&lt, 8, 303, 303, 4, 12);
	expect_decoded_agrees(&lt, 10);
}
END_TEST

START_TEST(test_locations_every_kind)
{
	// Short forms 0-9, each 1 unit: col = code*8 + high nibble, end = col + low nibble.
	for (int code = 0; code <= 9; code++) {
		uint8_t t[] = { (uint8_t)(0x80 | code << 3), 0x35 };
		struct pyu_linetable lt = TABLE(PYU_LOCATIONS_311, t, 10, 2);
		expect_at(&lt, 0, 10, 10, code * 8 + 3, code * 8 + 8);
	}
	// One-line forms 10-12: line += code - 10, columns as bytes; 8 units (n - 1 = 7).
	for (int code = 10; code <= 12; code++) {
		uint8_t t[] = { (uint8_t)(0x80 | code << 3 | 7), 0x7e, 0x7f };
		struct pyu_linetable lt = TABLE(PYU_LOCATIONS_311, t, 10, 16);
		expect_at(&lt, 0, 10 + code - 10, 10 + code - 10, 126, 127);
		expect_at(&lt, 15, 10 + code - 10, 10 + code - 10, 126, 127);
		expect_at(&lt, 16, NL, NL, NC, NC);
	}
	// 13: no columns, svarint line delta (03 = -1, 04 = +2).
	static const uint8_t nocol[] = { 0xe8, 0x04, 0xe9, 0x03 };
	struct pyu_linetable lt = TABLE(PYU_LOCATIONS_311, nocol, 10, 6);
	expect_at(&lt, 0, 12, 12, NC, NC);
	expect_at(&lt, 2, 11, 11, NC, NC);
	expect_at(&lt, 4, 11, 11, NC, NC);
	expect_decoded_agrees(&lt, 6);
	// 14: long form; column 0 encodes "unknown" (co_positions gives None), independently
	// for start and end; multi-byte varints (6d 04 = 301 -> column 300).
	static const uint8_t lng[] = { 0xf0, 0x00, 0x00, 0x00, 0x05, 0xf0, 0x00,
				       0x02, 0x03, 0x00, 0xf0, 0x02, 0x00, 0x6d, 0x04, 0x6e, 0x04 };
	lt = TABLE(PYU_LOCATIONS_311, lng, 10, 6);
	expect_at(&lt, 0, 10, 10, NC, 4);
	expect_at(&lt, 2, 10, 12, 2, NC);
	expect_at(&lt, 4, 11, 11, 300, 301);
	expect_decoded_agrees(&lt, 6);
	// 15: no location at all; the running line is kept for the next entry.
	static const uint8_t none[] = { 0xd0, 0x01, 0x02, 0xfa, 0x80, 0x00 };
	lt = TABLE(PYU_LOCATIONS_311, none, 10, 12);
	expect_at(&lt, 0, 10, 10, 1, 2);
	expect_at(&lt, 2, NL, NL, NC, NC);
	expect_at(&lt, 7, NL, NL, NC, NC);
	expect_at(&lt, 8, 10, 10, 0, 0);
	expect_decoded_agrees(&lt, 12);
	// CPython reports a line of -1 as None (0 stays 0), and -2 as -2.
	static const uint8_t minus[] = { 0xe8, 0x00, 0xe8, 0x03, 0xe8, 0x03 };
	lt = TABLE(PYU_LOCATIONS_311, minus, 0, 6);
	expect_at(&lt, 0, 0, 0, NC, NC);
	expect_at(&lt, 2, NL, NL, NC, NC);
	expect_at(&lt, 4, -2, -2, NC, NC);
	// Empty table: no line anywhere but before the start.
	lt = (struct pyu_linetable){ .firstlineno = 3, .format = PYU_LOCATIONS_311, .code_len = 4 };
	expect_at(&lt, -1, 3, 3, NC, NC);
	expect_at(&lt, 0, NL, NL, NC, NC);
	expect_decoded_agrees(&lt, 4);
}
END_TEST

static void expect_corrupt_at(const struct pyu_linetable *lt, int64_t offset)
{
	struct pyu_location got = { 1, 2, 3, 4 };
	ck_assert_int_eq(pyu_linetable_lookup(lt, offset, &got), PYU_LT_CORRUPT);
	ck_assert(got.line == 1 && got.end_line == 2 && got.column == 3 && got.end_column == 4);
}

START_TEST(test_corrupt)
{
	// Truncated long entry after one good entry: the good part still answers.
	static const uint8_t trunc[] = { 0x80, 0x00, 0xf0, 0x5a };
	struct pyu_linetable lt = TABLE(PYU_LOCATIONS_311, trunc, 1, 4);
	expect_at(&lt, 0, 1, 1, 0, 0);
	expect_corrupt_at(&lt, 2);
	expect_decoded_agrees(&lt, 4);
	// A varint that never ends, then one that ends after 7 bytes (too long).
	static const uint8_t endless[] = { 0xe8, 0x7f, 0x7f, 0x7f, 0x7f, 0x7f, 0x7f, 0x7f, 0x7f };
	lt = TABLE(PYU_LOCATIONS_311, endless, 1, 2);
	expect_corrupt_at(&lt, 0);
	static const uint8_t seven[] = { 0xe8, 0x40, 0x40, 0x40, 0x40, 0x40, 0x40, 0x00 };
	lt = TABLE(PYU_LOCATIONS_311, seven, 1, 2);
	expect_corrupt_at(&lt, 0);
	// A 6-byte varint is accepted, but its 2^35 line delta is absurd.
	static const uint8_t huge[] = { 0xe8, 0x40, 0x40, 0x40, 0x40, 0x40, 0x20 };
	lt = TABLE(PYU_LOCATIONS_311, huge, 1, 2);
	expect_corrupt_at(&lt, 0);
	// Long-form column past INT32_MAX.
	static const uint8_t col[] = { 0xf0, 0x00, 0x00, 0x40, 0x40, 0x40, 0x40, 0x40, 0x20, 0x01 };
	lt = TABLE(PYU_LOCATIONS_311, col, 1, 2);
	expect_corrupt_at(&lt, 0);
	// A payload byte with bit 7 (a header where a payload belongs), a first byte without it.
	static const uint8_t payload[] = { 0xd8, 0x88, 0x09 };
	lt = TABLE(PYU_LOCATIONS_311, payload, 1, 2);
	expect_corrupt_at(&lt, 0);
	static const uint8_t nohdr[] = { 0x08, 0x00 };
	lt = TABLE(PYU_LOCATIONS_311, nohdr, 1, 2);
	expect_corrupt_at(&lt, 0);
	// Odd-length pair tables: the dangling byte is found when reached.
	static const uint8_t odd[] = { 0x08, 0x01, 0x08 };
	lt = TABLE(PYU_LINETABLE_310, odd, 1, 16);
	expect_line(&lt, 7, 2);
	expect_corrupt_at(&lt, 8);
	expect_decoded_agrees(&lt, 16);
	lt.format = PYU_LNOTAB_SIGNED;
	expect_line(&lt, 7, 1);
	expect_corrupt_at(&lt, 8);
	// Line steps that leave the int32 range.
	static const uint8_t up[] = { 0x02, 0xff, 0x02, 0xff };
	lt = TABLE(PYU_LNOTAB_UNSIGNED, up, INT32_MAX - 300, 8);
	expect_line(&lt, 0, INT32_MAX - 300);
	expect_corrupt_at(&lt, 2);
	static const uint8_t down[] = { 0x02, 0x81 };
	lt = TABLE(PYU_LINETABLE_310, down, INT32_MIN + 10, 8);
	expect_corrupt_at(&lt, 0);
	// An unknown format value.
	lt.format = (enum pyu_linetable_format)42;
	expect_corrupt_at(&lt, 0);

	// After corruption the iterator keeps saying so and leaves *ret alone.
	lt = TABLE(PYU_LOCATIONS_311, trunc, 1, 4);
	struct pyu_linetable_iter it;
	struct pyu_line_range r;
	pyu_linetable_iter_init(&it, &lt);
	ck_assert_int_eq(pyu_linetable_next(&it, &r), PYU_LT_OK);
	memset(&r, 0x5a, sizeof(r));
	ck_assert_int_eq(pyu_linetable_next(&it, &r), PYU_LT_CORRUPT);
	ck_assert_int_eq(pyu_linetable_next(&it, &r), PYU_LT_CORRUPT);
	ck_assert_uint_eq(r.start, 0x5a5a5a5a5a5a5a5aULL);
}
END_TEST

START_TEST(test_garbage_stays_in_bounds)
{
	// Every table of 1-2 bytes and a sample of 3-byte ones, in every format: never a crash
	// (the ASan build checks the reads), statuses only OK or CORRUPT.
	uint8_t *t = malloc(3);
	ck_assert_ptr_nonnull(t);
	static const struct { size_t len; uint32_t count, step; } plan[] = {
		{ 1, 1u << 8, 1 }, { 2, 1u << 16, 1 }, { 3, 1u << 24, 4099 },
	};
	for (size_t p = 0; p < sizeof(plan) / sizeof(plan[0]); p++) {
		for (uint32_t v = 0; v < plan[p].count; v += plan[p].step) {
			memcpy(t, &v, plan[p].len);
			for (int fmt = 0; fmt < 4; fmt++) {
				struct pyu_linetable lt = table(fmt, t, plan[p].len, 5, 8);
				for (int64_t off = -1; off < 20; off += 3) {
					struct pyu_location loc;
					int st = pyu_linetable_lookup(&lt, off, &loc);
					ck_assert(st == PYU_LT_OK || st == PYU_LT_CORRUPT);
				}
			}
		}
	}
	free(t);
}
END_TEST

START_TEST(test_decoded_storage)
{
	struct pyu_linetable lt = TABLE(PYU_LOCATIONS_311, t311, 1, 54);
	struct pyu_line_range ranges[64];
	struct pyu_linetable_decoded d = { .n = 99 };
	// Too little room: NOSPACE and *ret untouched.
	ck_assert_int_eq(pyu_linetable_decode(&lt, ranges, 3, &d), PYU_LT_NOSPACE);
	ck_assert_uint_eq(d.n, 99);
	ck_assert_uint_ge(pyu_linetable_max_ranges(&lt), 21);
	ck_assert_int_eq(pyu_linetable_decode(&lt, ranges, 64, &d), PYU_LT_OK);
	ck_assert_uint_eq(d.n, 21); // one range per entry, no merging
	ck_assert_uint_eq(ranges[20].end, 54);
	ck_assert(!d.corrupt);
	struct pyu_location loc;
	ck_assert_int_eq(pyu_linetable_decoded_lookup(&d, 50, &loc), PYU_LT_OK);
	ck_assert(loc.line == 5 && loc.end_line == 6 && loc.column == 11 && loc.end_column == 14);
	ck_assert_int_eq(pyu_linetable_decoded_lookup(&d, INT64_MAX, &loc), PYU_LT_OK);
	ck_assert_int_eq(loc.line, NL);
	// A table with no ranges at all.
	lt = (struct pyu_linetable){ .firstlineno = 3, .format = PYU_LINETABLE_310 };
	ck_assert_int_eq(pyu_linetable_decode(&lt, ranges, 0, &d), PYU_LT_OK);
	ck_assert_uint_eq(d.n, 0);
	ck_assert_int_eq(pyu_linetable_decoded_lookup(&d, 0, &loc), PYU_LT_OK);
	ck_assert_int_eq(loc.line, NL);
	ck_assert_int_eq(pyu_linetable_decoded_lookup(&d, -1, &loc), PYU_LT_OK);
	ck_assert_int_eq(loc.line, 3);
}
END_TEST

static Suite *linetable_suite(void)
{
	Suite *s = suite_create("linetable");
	TCase *tc = tcase_create("linetable");
	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, test_lnotab_27);
	tcase_add_test(tc, test_lnotab_signed);
	tcase_add_test(tc, test_linetable_310);
	tcase_add_test(tc, test_locations_311_example);
	tcase_add_test(tc, test_locations_every_kind);
	tcase_add_test(tc, test_corrupt);
	tcase_add_test(tc, test_garbage_stays_in_bounds);
	tcase_add_test(tc, test_decoded_storage);
	suite_add_tcase(s, tc);
	return s;
}

PYU_CHECK_MAIN(linetable_suite)
