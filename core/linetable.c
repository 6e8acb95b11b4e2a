// linetable.c - decoders of CPython's line-number tables (see linetable.h). Pure functions over
// a byte buffer: no target access, no allocation, no global state. Every byte is read through
// a bounds check, every loop ends at the end of the buffer, and running values are kept in
// 64 bits and rejected as corrupt once they leave the int32 range CPython itself uses.
#include "linetable.h"

enum iter_state {
	ITER_RUNNING,
	ITER_TAIL_DONE, // <= 3.9: the range after the last pair has been produced
	ITER_END,
	ITER_CORRUPT,
};

// The longest varint accepted: 6 bytes carry 36 bits, more than any value CPython writes
// (it decodes into an unsigned int); longer ones are corrupt, which also bounds the loop.
#define VARINT_MAX_BYTES 6

static bool line_in_range(int64_t line)
{
	// INT32_MIN is reserved for PYU_NO_LINE.
	return line > INT32_MIN && line <= INT32_MAX;
}

static struct pyu_location line_only(int32_t line)
{
	return (struct pyu_location){ line, line, PYU_NO_COLUMN, PYU_NO_COLUMN };
}

void pyu_linetable_iter_init(struct pyu_linetable_iter *it, const struct pyu_linetable *lt)
{
	*it = (struct pyu_linetable_iter){ .lt = lt, .line = lt->firstlineno, .state = ITER_RUNNING };
}

static enum pyu_lt_status fail(struct pyu_linetable_iter *it)
{
	it->state = ITER_CORRUPT;
	return PYU_LT_CORRUPT;
}

static enum pyu_lt_status emit(struct pyu_linetable_iter *it, uint64_t units_bytes,
			       struct pyu_location loc, struct pyu_line_range *ret)
{
	if (units_bytes > UINT64_MAX - it->addr)
		return fail(it);
	ret->start = it->addr;
	ret->end = it->addr + units_bytes;
	ret->loc = loc;
	it->addr = ret->end;
	return PYU_LT_OK;
}

// co_lnotab: "from address A on, the line is L". A pair with a non-zero address step closes
// the range that started at the previous address, with the line before the pair's line step.
static enum pyu_lt_status next_lnotab(struct pyu_linetable_iter *it, struct pyu_line_range *ret)
{
	const struct pyu_linetable *lt = it->lt;
	bool is_signed = lt->format == PYU_LNOTAB_SIGNED;

	while (it->state == ITER_RUNNING && lt->len - it->pos >= 2) {
		uint8_t addr_step = lt->buf[it->pos];
		uint8_t line_step = lt->buf[it->pos + 1];
		it->pos += 2;
		int64_t line = it->line;
		it->line += is_signed ? (int64_t)(int8_t)line_step : (int64_t)line_step;
		if (!line_in_range(it->line))
			return fail(it);
		if (addr_step)
			return emit(it, addr_step, line_only((int32_t)line), ret);
	}
	if (it->state == ITER_RUNNING) {
		if (it->pos != lt->len) // a dangling half pair
			return fail(it);
		it->state = ITER_TAIL_DONE;
		if (it->addr < lt->code_len)
			return emit(it, lt->code_len - it->addr, line_only((int32_t)it->line), ret);
	}
	it->state = ITER_END;
	return PYU_LT_END;
}

// 3.10 co_linetable: (length, line delta) pairs; delta -128 = no line, running line kept.
static enum pyu_lt_status next_310(struct pyu_linetable_iter *it, struct pyu_line_range *ret)
{
	const struct pyu_linetable *lt = it->lt;

	while (lt->len - it->pos >= 2) {
		uint8_t length = lt->buf[it->pos];
		int8_t delta = (int8_t)lt->buf[it->pos + 1];
		it->pos += 2;
		int32_t line = PYU_NO_LINE;
		if (delta != -128) {
			it->line += delta;
			if (!line_in_range(it->line))
				return fail(it);
			// co_lines() gives None for any negative line.
			if (it->line >= 0)
				line = (int32_t)it->line;
		}
		if (length)
			return emit(it, length, line_only(line), ret);
	}
	if (it->pos != lt->len)
		return fail(it);
	it->state = ITER_END;
	return PYU_LT_END;
}

// A payload byte of a 3.11+ entry: present and without bit 7 (which only headers carry).
static bool read_payload(struct pyu_linetable_iter *it, uint8_t *ret)
{
	const struct pyu_linetable *lt = it->lt;
	if (it->pos >= lt->len || (lt->buf[it->pos] & 0x80))
		return false;
	*ret = lt->buf[it->pos++];
	return true;
}

// Little-endian groups of 6 bits; bit 6 says another byte follows.
static bool read_varint(struct pyu_linetable_iter *it, uint64_t *ret)
{
	uint64_t val = 0;
	for (int i = 0; i < VARINT_MAX_BYTES; i++) {
		uint8_t b;
		if (!read_payload(it, &b))
			return false;
		val |= (uint64_t)(b & 0x3f) << (6 * i);
		if (!(b & 0x40)) {
			*ret = val;
			return true;
		}
	}
	return false;
}

static bool read_svarint(struct pyu_linetable_iter *it, int64_t *ret)
{
	uint64_t u;
	if (!read_varint(it, &u))
		return false;
	*ret = (u & 1) ? -(int64_t)(u >> 1) : (int64_t)(u >> 1);
	return true;
}

// CPython turns -1 into None in co_positions()/co_lines(), whatever field it is in.
static int32_t none_if_minus1(int64_t v, int32_t none)
{
	return v == -1 ? none : (int32_t)v;
}

enum {
	CODE_ONE_LINE0 = 10,
	CODE_NO_COLUMNS = 13,
	CODE_LONG = 14,
	CODE_NONE = 15,
};

// 3.11+ location table: one entry per range of 1-8 code units.
static enum pyu_lt_status next_311(struct pyu_linetable_iter *it, struct pyu_line_range *ret)
{
	const struct pyu_linetable *lt = it->lt;

	if (it->pos >= lt->len) {
		it->state = ITER_END;
		return PYU_LT_END;
	}
	uint8_t header = lt->buf[it->pos++];
	if (!(header & 0x80))
		return fail(it);
	int code = (header >> 3) & 15;
	uint64_t bytes = 2 * (uint64_t)((header & 7) + 1);
	struct pyu_location loc;
	int64_t line = it->line, end_line, col, end_col;

	switch (code) {
	case CODE_NONE:
		loc = (struct pyu_location){ PYU_NO_LINE, PYU_NO_LINE, PYU_NO_COLUMN, PYU_NO_COLUMN };
		return emit(it, bytes, loc, ret);
	case CODE_NO_COLUMNS: {
		int64_t delta;
		if (!read_svarint(it, &delta))
			return fail(it);
		line += delta;
		end_line = line;
		col = end_col = -1;
		break;
	}
	case CODE_LONG: {
		int64_t delta;
		uint64_t end_delta, c, e;
		if (!read_svarint(it, &delta) || !read_varint(it, &end_delta) ||
		    !read_varint(it, &c) || !read_varint(it, &e))
			return fail(it);
		if (c > INT32_MAX || e > INT32_MAX || end_delta > INT32_MAX)
			return fail(it);
		line += delta;
		end_line = line + (int64_t)end_delta;
		col = (int64_t)c - 1;
		end_col = (int64_t)e - 1;
		break;
	}
	case CODE_ONE_LINE0:
	case CODE_ONE_LINE0 + 1:
	case CODE_ONE_LINE0 + 2: {
		uint8_t c, e;
		if (!read_payload(it, &c) || !read_payload(it, &e))
			return fail(it);
		line += code - CODE_ONE_LINE0;
		end_line = line;
		col = c;
		end_col = e;
		break;
	}
	default: { // short forms 0-9: same line, column in code*8 + high nibble
		uint8_t b;
		if (!read_payload(it, &b))
			return fail(it);
		end_line = line;
		col = code * 8 + (b >> 4);
		end_col = col + (b & 15);
		break;
	}
	}
	if (!line_in_range(line) || !line_in_range(end_line))
		return fail(it);
	it->line = line;
	loc.line = none_if_minus1(line, PYU_NO_LINE);
	loc.end_line = none_if_minus1(end_line, PYU_NO_LINE);
	loc.column = none_if_minus1(col, PYU_NO_COLUMN);
	loc.end_column = none_if_minus1(end_col, PYU_NO_COLUMN);
	return emit(it, bytes, loc, ret);
}

enum pyu_lt_status pyu_linetable_next(struct pyu_linetable_iter *it, struct pyu_line_range *ret)
{
	if (it->state == ITER_END)
		return PYU_LT_END;
	if (it->state == ITER_CORRUPT)
		return PYU_LT_CORRUPT;
	if (it->pos > it->lt->len || (it->lt->len && !it->lt->buf))
		return fail(it);
	switch (it->lt->format) {
	case PYU_LNOTAB_UNSIGNED:
	case PYU_LNOTAB_SIGNED:
		return next_lnotab(it, ret);
	case PYU_LINETABLE_310:
		return next_310(it, ret);
	case PYU_LOCATIONS_311:
		return next_311(it, ret);
	}
	return fail(it);
}

// What an offset past every range gets, once the iterator has ended cleanly.
static struct pyu_location past_end(const struct pyu_linetable_iter *it)
{
	switch (it->lt->format) {
	case PYU_LNOTAB_UNSIGNED:
	case PYU_LNOTAB_SIGNED:
		return line_only((int32_t)it->line);
	default:
		return line_only(PYU_NO_LINE);
	}
}

enum pyu_lt_status pyu_linetable_lookup(const struct pyu_linetable *lt, int64_t offset,
					struct pyu_location *ret)
{
	if (offset < 0) {
		*ret = line_only(lt->firstlineno);
		return PYU_LT_OK;
	}
	struct pyu_linetable_iter it;
	struct pyu_line_range r;
	enum pyu_lt_status st;
	pyu_linetable_iter_init(&it, lt);
	while ((st = pyu_linetable_next(&it, &r)) == PYU_LT_OK) {
		if ((uint64_t)offset < r.end) {
			*ret = r.loc;
			return PYU_LT_OK;
		}
	}
	if (st != PYU_LT_END)
		return st;
	*ret = past_end(&it);
	return PYU_LT_OK;
}

size_t pyu_linetable_max_ranges(const struct pyu_linetable *lt)
{
	// Every range but the <= 3.9 tail consumes at least one byte of the table.
	return lt->len < SIZE_MAX ? lt->len + 1 : lt->len;
}

enum pyu_lt_status pyu_linetable_decode(const struct pyu_linetable *lt,
					struct pyu_line_range *ranges, size_t cap,
					struct pyu_linetable_decoded *ret)
{
	struct pyu_linetable_iter it;
	struct pyu_line_range r;
	enum pyu_lt_status st;
	size_t n = 0;
	pyu_linetable_iter_init(&it, lt);
	while ((st = pyu_linetable_next(&it, &r)) == PYU_LT_OK) {
		if (n == cap)
			return PYU_LT_NOSPACE;
		ranges[n++] = r;
	}
	*ret = (struct pyu_linetable_decoded){
		.ranges = ranges,
		.n = n,
		.before = line_only(lt->firstlineno),
		.past_end = st == PYU_LT_END ? past_end(&it) : line_only(PYU_NO_LINE),
		.corrupt = st != PYU_LT_END,
	};
	return st == PYU_LT_END ? PYU_LT_OK : st;
}

enum pyu_lt_status pyu_linetable_decoded_lookup(const struct pyu_linetable_decoded *d,
						int64_t offset, struct pyu_location *ret)
{
	if (offset < 0) {
		*ret = d->before;
		return PYU_LT_OK;
	}
	uint64_t q = (uint64_t)offset;
	// The last range with start <= q; ranges are sorted and contiguous from 0.
	size_t lo = 0, hi = d->n;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (d->ranges[mid].start <= q)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo > 0 && q < d->ranges[lo - 1].end) {
		*ret = d->ranges[lo - 1].loc;
		return PYU_LT_OK;
	}
	if (d->corrupt)
		return PYU_LT_CORRUPT;
	*ret = d->past_end;
	return PYU_LT_OK;
}
