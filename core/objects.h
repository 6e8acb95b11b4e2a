// objects.h - bounded readers of Python objects in target memory: str (2.7 str/unicode, 3.x
// PEP 393 of every kind, compact and legacy) as UTF-8, bytes, and int. Every length read from
// the target is capped before anything is allocated or read; a value that fails its type check
// is PYU_ERR_CORRUPT. Nothing here caches or keeps state.
#ifndef PYU_OBJECTS_H
#define PYU_OBJECTS_H

#include <stddef.h>
#include <stdint.h>

#include "layout.h"
#include "target.h"

// Longest string (in code points) and bytes object (in bytes) a reader accepts.
#define PYU_STR_MAX_CHARS 65536u
#define PYU_BYTES_MAX (16u << 20)

// Type flag bits (tp_flags) used to recognise objects without knowing type addresses.
#define PYU_TPFLAGS_LONG_SUBCLASS (1ul << 24)
#define PYU_TPFLAGS_BYTES_SUBCLASS (1ul << 27) // 2.7: str
#define PYU_TPFLAGS_UNICODE_SUBCLASS (1ul << 28)

// tp_flags of the type of the object at @addr. On error, *ret is unchanged.
struct pyu_error *pyu_object_type_flags(struct pyu_target *t, const struct pyu_layout *l,
					uint64_t addr, uint64_t *ret);

// Reads the text object at @addr (3.x str; 2.7 str or unicode) as NUL-terminated UTF-8
// (malloc'd, for free()). Strings longer than @max_chars code points fail with PYU_ERR_CORRUPT
// (names and file names are never that long). Lone surrogates are encoded as 3-byte sequences,
// as Python's "surrogatepass" does. On error, *ret is unchanged.
struct pyu_error *pyu_read_str(struct pyu_target *t, const struct pyu_layout *l, uint64_t addr,
			       size_t max_chars, char **ret);

// Reads the bytes object at @addr (2.7: str) into a malloc'd buffer of *ret_len bytes (plus a
// NUL, not counted). Objects longer than @max fail with PYU_ERR_CORRUPT. On error, *ret and
// *ret_len are unchanged.
struct pyu_error *pyu_read_bytes(struct pyu_target *t, const struct pyu_layout *l, uint64_t addr,
				 size_t max, uint8_t **ret, size_t *ret_len);

// The length in bytes of the bytecode of the code object whose first l->code.size bytes are
// @code: 3.11+ its ob_size code units (two bytes each), before that the size of its co_code
// bytes object, read. Fails with PYU_ERR_CORRUPT past 2 * @max_units bytes or at none. On
// error, *ret is unchanged.
struct pyu_error *pyu_code_bytecode_len(struct pyu_target *t, const struct pyu_layout *l,
					const uint8_t *code, uint64_t max_units, uint64_t *ret);

// Reads a 3.x int (<= 3.11: ob_size digits; 3.12+: lv_tag) or a 2.7 long that fits in
// int64_t. @lv_tag selects the 3.12+ encoding. Fails with PYU_ERR_CORRUPT when it does not fit.
// On error, *ret is unchanged.
struct pyu_error *pyu_read_int(struct pyu_target *t, const struct pyu_layout *l, uint64_t addr,
			       bool lv_tag, int64_t *ret);

// Appends the UTF-8 encoding of code point @cp (U+FFFD for values past U+10FFFF) to @out, which
// must have room for 4 bytes; returns the number of bytes written (1-4). Cannot fail.
size_t pyu_utf8_put(uint32_t cp, char *out);

#endif
