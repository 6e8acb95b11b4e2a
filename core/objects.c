// objects.c - bounded readers of str, bytes and int objects in target memory. Each object
// header is copied once into a local buffer and its fields taken out with memcpy; the payload is
// read only after its length passed the caller's cap.
#include <inttypes.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "bytes.h"
#include "objects.h"

// Bytes of header read in one go: enough for every layout's unicode/bytes header, and for the
// data of short compact strings, which follows the header directly.
#define HEADER_READ 128

size_t pyu_utf8_put(uint32_t cp, char *out)
{
	if (cp > 0x10ffff)
		cp = 0xfffd;
	if (cp < 0x80) {
		out[0] = (char)cp;
		return 1;
	}
	if (cp < 0x800) {
		out[0] = (char)(0xc0 | (cp >> 6));
		out[1] = (char)(0x80 | (cp & 0x3f));
		return 2;
	}
	if (cp < 0x10000) {
		out[0] = (char)(0xe0 | (cp >> 12));
		out[1] = (char)(0x80 | ((cp >> 6) & 0x3f));
		out[2] = (char)(0x80 | (cp & 0x3f));
		return 3;
	}
	out[0] = (char)(0xf0 | (cp >> 18));
	out[1] = (char)(0x80 | ((cp >> 12) & 0x3f));
	out[2] = (char)(0x80 | ((cp >> 6) & 0x3f));
	out[3] = (char)(0x80 | (cp & 0x3f));
	return 4;
}

struct pyu_error *pyu_object_type_flags(struct pyu_target *t, const struct pyu_layout *l,
					uint64_t addr, uint64_t *ret)
{
	uint64_t type, flags;
	struct pyu_error *err = pyu_target_read_u64(t, addr + (uint64_t)l->ob_type, &type);
	if (!err)
		err = pyu_target_read_u64(t, type + (uint64_t)l->type_tp_flags, &flags);
	if (err)
		return pyu_error_wrap(err, "reading the type of the object at 0x%" PRIx64, addr);
	*ret = flags;
	return NULL;
}

// Reads @len bytes at @addr; when they lie inside @hdr (read from @base), copies from there.
static struct pyu_error *read_payload(struct pyu_target *t, const uint8_t *hdr, uint64_t base,
				      size_t hdr_len, uint64_t addr, void *buf, size_t len)
{
	if (addr >= base && addr - base <= hdr_len && len <= hdr_len - (addr - base)) {
		memcpy(buf, hdr + (addr - base), len);
		return NULL;
	}
	return pyu_target_read(t, addr, buf, len);
}

// Encodes @n code points of width @kind (1, 2 or 4 bytes, little-endian) as UTF-8.
static char *encode_units(const uint8_t *data, size_t n, unsigned kind)
{
	char *out = malloc(n * 4 + 1);
	if (!out)
		return NULL;
	size_t o = 0;
	for (size_t i = 0; i < n; i++) {
		uint32_t cp;
		if (kind == 1) {
			cp = data[i];
		} else if (kind == 2) {
			uint16_t u;
			memcpy(&u, data + 2 * i, 2);
			cp = u;
		} else {
			memcpy(&cp, data + 4 * i, 4);
		}
		o += pyu_utf8_put(cp, out + o);
	}
	out[o] = '\0';
	return out;
}

static bool valid_utf8(const uint8_t *s, size_t n)
{
	for (size_t i = 0; i < n;) {
		uint8_t c = s[i];
		size_t need = c < 0x80 ? 0 : (c & 0xe0) == 0xc0 ? 1 : (c & 0xf0) == 0xe0 ? 2
			: (c & 0xf8) == 0xf0 ? 3 : 4;
		if (need == 4 || c == 0xc0 || c == 0xc1 || i + need >= n)
			return false;
		for (size_t k = 1; k <= need; k++)
			if ((s[i + k] & 0xc0) != 0x80)
				return false;
		i += need + 1;
	}
	return true;
}

// 2.7 str: bytes; passed through when they are UTF-8, otherwise read as latin-1.
static struct pyu_error *read_py2_str(struct pyu_target *t, const struct pyu_layout *l,
				      uint64_t addr, size_t max_chars, char **ret)
{
	uint8_t *bytes;
	size_t n;
	struct pyu_error *err = pyu_read_bytes(t, l, addr, max_chars, &bytes, &n);
	if (err)
		return err;
	if (valid_utf8(bytes, n)) {
		*ret = (char *)bytes;
		return NULL;
	}
	char *out = encode_units(bytes, n, 1);
	free(bytes);
	if (!out)
		return &pyu_error_nomem;
	*ret = out;
	return NULL;
}

// 2.7 unicode: length and a Py_UNICODE * (4-byte units on UCS4 builds, the common kind).
static struct pyu_error *read_py2_unicode(struct pyu_target *t, const struct pyu_layout *l,
					  uint64_t addr, size_t max_chars, char **ret)
{
	uint8_t hdr[HEADER_READ];
	struct pyu_error *err = pyu_target_read(t, addr, hdr, (size_t)l->unicode.data + 8);
	if (err)
		return pyu_error_wrap(err, "reading unicode at 0x%" PRIx64, addr);
	int64_t len = (int64_t)pyu_get_u64(hdr, l->unicode.length);
	uint64_t data = pyu_get_u64(hdr, l->unicode.data);
	if (len < 0 || (uint64_t)len > max_chars)
		return pyu_error_create(PYU_ERR_CORRUPT,
					"unicode at 0x%" PRIx64 ": length %" PRId64 " out of range",
					addr, len);
	uint8_t *units = malloc((size_t)len * 4 + 1);
	if (!units)
		return &pyu_error_nomem;
	err = pyu_target_read(t, data, units, (size_t)len * 4);
	if (err) {
		free(units);
		return pyu_error_wrap(err, "reading the characters of unicode at 0x%" PRIx64, addr);
	}
	char *out = encode_units(units, (size_t)len, 4);
	free(units);
	if (!out)
		return &pyu_error_nomem;
	*ret = out;
	return NULL;
}

static struct pyu_error *read_pep393(struct pyu_target *t, const struct pyu_layout *l,
				     uint64_t addr, size_t max_chars, char **ret)
{
	uint8_t hdr[HEADER_READ];
	struct pyu_error *err = pyu_target_read(t, addr, hdr, sizeof(hdr));
	size_t hdr_len = sizeof(hdr);
	if (err) {
		// The object may end right before an unreadable page: retry with just the header.
		pyu_error_destroy(err);
		// PyASCIIObject holds length and state; the legacy data pointer is read below.
		hdr_len = (size_t)l->unicode.ascii_size;
		err = pyu_target_read(t, addr, hdr, hdr_len);
		if (err)
			return pyu_error_wrap(err, "reading str at 0x%" PRIx64, addr);
	}
	int64_t len = (int64_t)pyu_get_u64(hdr, l->unicode.length);
	uint32_t state;
	memcpy(&state, hdr + l->unicode.state, 4);
	state >>= l->unicode.state_shift;
	// Only the low byte of the state word is defined (3.14+ leave garbage above it).
	unsigned kind = (state >> 2) & 7, compact = (state >> 5) & 1, ascii = (state >> 6) & 1;
	if (len < 0 || (uint64_t)len > max_chars)
		return pyu_error_create(PYU_ERR_CORRUPT,
					"str at 0x%" PRIx64 ": length %" PRId64 " out of range",
					addr, len);
	if (kind != 1 && kind != 2 && kind != 4)
		return pyu_error_create(PYU_ERR_CORRUPT,
					"str at 0x%" PRIx64 ": unknown kind %u", addr, kind);
	if (ascii && kind != 1)
		return pyu_error_create(PYU_ERR_CORRUPT,
					"str at 0x%" PRIx64 ": ASCII with kind %u", addr, kind);
	uint64_t data;
	if (compact)
		data = addr + (uint64_t)(ascii ? l->unicode.ascii_size : l->unicode.compact_size);
	else if ((size_t)l->unicode.data + 8 <= hdr_len)
		data = pyu_get_u64(hdr, l->unicode.data);
	else if ((err = pyu_target_read_u64(t, addr + (uint64_t)l->unicode.data, &data)) != NULL)
		return pyu_error_wrap(err, "reading the data pointer of str at 0x%" PRIx64, addr);
	size_t nbytes = (size_t)len * kind;
	uint8_t small[HEADER_READ];
	uint8_t *units = nbytes <= sizeof(small) ? small : malloc(nbytes);
	if (!units)
		return &pyu_error_nomem;
	err = read_payload(t, hdr, addr, hdr_len, data, units, nbytes);
	char *out = NULL;
	if (!err) {
		out = encode_units(units, (size_t)len, kind);
		if (!out)
			err = &pyu_error_nomem;
	}
	if (units != small)
		free(units);
	if (err)
		return pyu_error_wrap(err, "reading the characters of str at 0x%" PRIx64, addr);
	*ret = out;
	return NULL;
}

struct pyu_error *pyu_read_str(struct pyu_target *t, const struct pyu_layout *l, uint64_t addr,
			       size_t max_chars, char **ret)
{
	uint64_t flags;
	if (addr == 0)
		return pyu_error_create(PYU_ERR_CORRUPT, "NULL where a str was expected");
	struct pyu_error *err = pyu_object_type_flags(t, l, addr, &flags);
	if (err)
		return err;
	if (l->str == PYU_STR_PY2) {
		if (flags & PYU_TPFLAGS_BYTES_SUBCLASS)
			return read_py2_str(t, l, addr, max_chars, ret);
		if (flags & PYU_TPFLAGS_UNICODE_SUBCLASS)
			return read_py2_unicode(t, l, addr, max_chars, ret);
	} else if (flags & PYU_TPFLAGS_UNICODE_SUBCLASS) {
		return read_pep393(t, l, addr, max_chars, ret);
	}
	return pyu_error_create(PYU_ERR_CORRUPT, "object at 0x%" PRIx64 " is not a str", addr);
}

struct pyu_error *pyu_read_bytes(struct pyu_target *t, const struct pyu_layout *l, uint64_t addr,
				 size_t max, uint8_t **ret, size_t *ret_len)
{
	uint64_t flags;
	if (addr == 0)
		return pyu_error_create(PYU_ERR_CORRUPT, "NULL where bytes were expected");
	struct pyu_error *err = pyu_object_type_flags(t, l, addr, &flags);
	if (err)
		return err;
	if (!(flags & PYU_TPFLAGS_BYTES_SUBCLASS))
		return pyu_error_create(PYU_ERR_CORRUPT, "object at 0x%" PRIx64 " is not bytes",
					addr);
	uint8_t hdr[HEADER_READ];
	size_t hdr_len = (size_t)l->bytes_sval;
	err = pyu_target_read(t, addr, hdr, hdr_len);
	if (err)
		return pyu_error_wrap(err, "reading bytes at 0x%" PRIx64, addr);
	int64_t len = (int64_t)pyu_get_u64(hdr, l->ob_size);
	if (len < 0 || (uint64_t)len > max)
		return pyu_error_create(PYU_ERR_CORRUPT,
					"bytes at 0x%" PRIx64 ": size %" PRId64 " out of range",
					addr, len);
	uint8_t *out = malloc((size_t)len + 1);
	if (!out)
		return &pyu_error_nomem;
	err = pyu_target_read(t, addr + (uint64_t)l->bytes_sval, out, (size_t)len);
	if (err) {
		free(out);
		return pyu_error_wrap(err, "reading the contents of bytes at 0x%" PRIx64, addr);
	}
	out[len] = 0;
	*ret = out;
	*ret_len = (size_t)len;
	return NULL;
}

struct pyu_error *pyu_read_int(struct pyu_target *t, const struct pyu_layout *l, uint64_t addr,
			       bool lv_tag, int64_t *ret)
{
	uint8_t hdr[HEADER_READ];
	int32_t digits_off = l->ob_size + 8;
	struct pyu_error *err = pyu_target_read(t, addr, hdr, (size_t)digits_off + 3 * 4);
	if (err) {
		pyu_error_destroy(err);
		err = pyu_target_read(t, addr, hdr, (size_t)digits_off + 4);
		if (err)
			return pyu_error_wrap(err, "reading int at 0x%" PRIx64, addr);
	}
	uint64_t tag = pyu_get_u64(hdr, l->ob_size);
	int64_t ndigits;
	int sign;
	if (lv_tag) {
		ndigits = (int64_t)(tag >> 3);
		sign = 1 - (int)(tag & 3);
	} else {
		int64_t size = (int64_t)tag;
		// Negated unsigned: a corrupt INT64_MIN has no signed negation.
		uint64_t mag = size < 0 ? (uint64_t)0 - tag : tag;
		ndigits = mag > 3 ? 4 : (int64_t)mag;
		sign = size < 0 ? -1 : size > 0 ? 1 : 0;
	}
	if (ndigits > 3 || sign < -1 || sign > 1)
		return pyu_error_create(PYU_ERR_CORRUPT,
					"int at 0x%" PRIx64 " does not fit in 64 bits", addr);
	uint64_t v = 0;
	for (int64_t i = ndigits - 1; i >= 0; i--) {
		uint32_t d;
		memcpy(&d, hdr + digits_off + 4 * i, 4);
		if (d >= (1u << 30) || (v >> 33) != 0)
			return pyu_error_create(PYU_ERR_CORRUPT,
						"int at 0x%" PRIx64 " does not fit in 64 bits", addr);
		v = (v << 30) | d;
	}
	if (v > (uint64_t)INT64_MAX)
		return pyu_error_create(PYU_ERR_CORRUPT,
					"int at 0x%" PRIx64 " does not fit in 64 bits", addr);
	*ret = sign < 0 ? -(int64_t)v : (int64_t)v;
	return NULL;
}

struct pyu_error *pyu_code_bytecode_len(struct pyu_target *t, const struct pyu_layout *l,
					const uint8_t *code, uint64_t max_units, uint64_t *ret)
{
	if (l->code.ob_size != PYU_NO_FIELD) {
		int64_t units = (int64_t)pyu_get_u64(code, l->code.ob_size);
		if (units <= 0 || (uint64_t)units > max_units)
			return pyu_error_create(PYU_ERR_CORRUPT, "%" PRId64 " code units", units);
		*ret = 2 * (uint64_t)units;
		return NULL;
	}
	if (l->code.code == PYU_NO_FIELD)
		return pyu_error_create(PYU_ERR_UNSUPPORTED, "no bytecode field in this version");
	uint64_t size;
	struct pyu_error *err = pyu_target_read_u64(t, pyu_get_u64(code, l->code.code) +
						    (uint64_t)l->ob_size, &size);
	if (err)
		return pyu_error_wrap(err, "reading co_code");
	if ((int64_t)size < 0 || size > 2 * max_units)
		return pyu_error_create(PYU_ERR_CORRUPT, "co_code of %" PRId64 " bytes",
					(int64_t)size);
	*ret = size;
	return NULL;
}
