// fakemem.h - a synthetic target for the walker's unit tests: one contiguous buffer of target
// memory behind a callback target, a bump allocator, and builders of the CPython objects the
// walker reads (types, str, bytes, code objects), laid out by a struct pyu_layout so the same
// test can run against several versions' tables.
#ifndef PYU_FAKEMEM_H
#define PYU_FAKEMEM_H

#include <check.h>
#include <stdlib.h>
#include <string.h>

#include "layout.h"
#include "objects.h"
#include "target.h"
#include "types.h"

#define FM_BASE 0x100000ull
#define FM_SIZE (4u << 20)

struct fakemem {
	uint8_t *buf;
	uint64_t next; // bump allocator (target address)
	uint64_t limit; // reads at or past this address fail (to truncate memory)
	struct pyu_target *t;
	const struct pyu_layout *l;
	uint64_t type_type, str_type, bytes_type, code_type;
};

static inline uint64_t fm_read(void *arg, uint64_t addr, void *buf, uint64_t len)
{
	struct fakemem *m = arg;
	if (addr < FM_BASE || addr >= m->limit)
		return 0;
	uint64_t avail = m->limit - addr;
	uint64_t n = len < avail ? len : avail;
	memcpy(buf, m->buf + (addr - FM_BASE), n);
	return n;
}

static inline uint64_t fm_alloc(struct fakemem *m, size_t n)
{
	uint64_t a = (m->next + 15) & ~15ull;
	ck_assert_uint_le(a + n, FM_BASE + FM_SIZE);
	m->next = a + n;
	return a;
}

static inline void fm_put(struct fakemem *m, uint64_t addr, const void *p, size_t n)
{
	ck_assert_uint_ge(addr, FM_BASE);
	ck_assert_uint_le(addr + n, FM_BASE + FM_SIZE);
	memcpy(m->buf + (addr - FM_BASE), p, n);
	if (m->t)
		pyu_target_flush_cache(m->t); // the target caches pages it has read
}

static inline void fm_u64(struct fakemem *m, uint64_t addr, uint64_t v)
{
	fm_put(m, addr, &v, 8);
}

static inline void fm_u32(struct fakemem *m, uint64_t addr, uint32_t v)
{
	fm_put(m, addr, &v, 4);
}

static inline void fm_u8(struct fakemem *m, uint64_t addr, uint8_t v)
{
	fm_put(m, addr, &v, 1);
}

// A static type object: its type is `type` (m->type_type, whose own type is itself), it is
// ready, and it carries @name, @flags and the sizes given.
static inline uint64_t fm_type_sized(struct fakemem *m, const char *name, uint64_t flags,
				     int64_t basicsize, int64_t itemsize)
{
	uint64_t type = fm_alloc(m, 512);
	uint64_t n = fm_alloc(m, strlen(name) + 1);
	fm_put(m, n, name, strlen(name) + 1);
	fm_u64(m, type + (uint64_t)m->l->ob_type, m->type_type ? m->type_type : type);
	fm_u64(m, type + (uint64_t)m->l->type_tp_name, n);
	fm_u64(m, type + (uint64_t)m->l->type_tp_name + 8, (uint64_t)basicsize);
	fm_u64(m, type + (uint64_t)m->l->type_tp_name + 16, (uint64_t)itemsize);
	fm_u64(m, type + (uint64_t)m->l->type_tp_flags, flags | PYU_TPFLAGS_READY);
	return type;
}

static inline uint64_t fm_type(struct fakemem *m, const char *name, uint64_t flags)
{
	return fm_type_sized(m, name, flags, 16, 0);
}

// A type shaped like the code type of the layout (types.h), under another name if wanted.
static inline uint64_t fm_code_type(struct fakemem *m, const char *name)
{
	struct pyu_type_shape shape;
	ck_assert(pyu_type_shape(m->l, PYU_TYPE_CODE, &shape));
	return fm_type_sized(m, name, 0, shape.basicsize, shape.itemsize);
}

// A compact str of code points @cps (kind chosen like CPython: ascii, 1, 2 or 4 bytes).
static inline uint64_t fm_str_cps(struct fakemem *m, const uint32_t *cps, size_t n)
{
	const struct pyu_layout *l = m->l;
	uint32_t max = 0;
	for (size_t i = 0; i < n; i++)
		max = cps[i] > max ? cps[i] : max;
	unsigned kind = max < 0x100 ? 1 : max < 0x10000 ? 2 : 4;
	bool ascii = max < 0x80;
	size_t hdr = (size_t)(ascii ? l->unicode.ascii_size : l->unicode.compact_size);
	uint64_t o = fm_alloc(m, hdr + (n + 1) * kind);
	fm_u64(m, o + (uint64_t)l->ob_type, m->str_type);
	fm_u64(m, o + (uint64_t)l->unicode.length, n);
	fm_u32(m, o + (uint64_t)l->unicode.state,
	       (uint32_t)(kind << 2 | 1u << 5 | (ascii ? 1u : 0u) << 6 | 0xabcdef00u));
	for (size_t i = 0; i < n; i++)
		fm_put(m, o + hdr + i * kind, &cps[i], kind);
	return o;
}

static inline uint64_t fm_bytes(struct fakemem *m, const void *data, size_t n);

// An ASCII str (2.7: a PyStringObject).
static inline uint64_t fm_str(struct fakemem *m, const char *ascii)
{
	uint32_t cps[256];
	size_t n = strlen(ascii);
	if (m->l->str == PYU_STR_PY2)
		return fm_bytes(m, ascii, n);
	ck_assert_uint_lt(n, 256);
	for (size_t i = 0; i < n; i++)
		cps[i] = (uint8_t)ascii[i];
	return fm_str_cps(m, cps, n);
}

static inline uint64_t fm_bytes(struct fakemem *m, const void *data, size_t n)
{
	const struct pyu_layout *l = m->l;
	uint64_t o = fm_alloc(m, (size_t)l->bytes_sval + n + 1);
	fm_u64(m, o + (uint64_t)l->ob_type, m->bytes_type);
	fm_u64(m, o + (uint64_t)l->ob_size, n);
	fm_put(m, o + (uint64_t)l->bytes_sval, data, n);
	return o;
}

static inline void fm_init(struct fakemem *m, const struct pyu_layout *l)
{
	memset(m, 0, sizeof(*m));
	m->buf = calloc(1, FM_SIZE);
	ck_assert_ptr_nonnull(m->buf);
	m->next = FM_BASE + 64;
	m->limit = FM_BASE + FM_SIZE;
	m->l = l;
	ck_assert_ptr_null(pyu_target_open_callback(fm_read, m, &m->t));
	ck_assert_ptr_null(pyu_target_add_mapping(m->t, FM_BASE, FM_BASE + FM_SIZE, 0, 1, NULL));
	m->type_type = fm_type_sized(m, "type", PYU_TPFLAGS_TYPE_SUBCLASS, 880, 40);
	m->str_type = fm_type(m, "str", PYU_TPFLAGS_UNICODE_SUBCLASS);
	m->bytes_type = fm_type(m, l->str == PYU_STR_PY2 ? "str" : "bytes",
				PYU_TPFLAGS_BYTES_SUBCLASS);
	m->code_type = fm_code_type(m, "code");
}

static inline void fm_destroy(struct fakemem *m)
{
	pyu_target_destroy(m->t);
	free(m->buf);
}

#endif
