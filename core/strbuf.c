// strbuf.c - the formatters' string builder: bounded growth, sticky failure, UTF-8 repair and
// JSON escaping. Nothing here reads the target.
#include "strbuf.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void pyu_strbuf_init(struct pyu_strbuf *sb, size_t max)
{
	memset(sb, 0, sizeof(*sb));
	sb->max = max;
}

void pyu_strbuf_release(struct pyu_strbuf *sb)
{
	free(sb->buf);
	sb->buf = NULL;
	sb->len = sb->cap = 0;
}

struct pyu_error *pyu_strbuf_finish(struct pyu_strbuf *sb, char **ret)
{
	if (sb->nomem || sb->too_long) {
		pyu_strbuf_release(sb);
		if (sb->nomem)
			return &pyu_error_nomem;
		return pyu_error_create(PYU_ERR_ARGUMENT, "output longer than %zu bytes; use a limit",
					sb->max);
	}
	if (!sb->buf) {
		sb->buf = malloc(1);
		if (!sb->buf)
			return &pyu_error_nomem;
		sb->buf[0] = '\0';
	}
	*ret = sb->buf;
	sb->buf = NULL;
	sb->len = sb->cap = 0;
	return NULL;
}

// Makes room for @n more bytes plus the NUL. Returns false (and marks the builder failed)
// when that would pass the bound or memory runs out.
static bool reserve(struct pyu_strbuf *sb, size_t n)
{
	if (sb->nomem || sb->too_long)
		return false;
	if (n > sb->max || sb->len > sb->max - n) {
		sb->too_long = true;
		return false;
	}
	size_t need = sb->len + n + 1;
	if (need <= sb->cap)
		return true;
	size_t cap = sb->cap ? sb->cap : 256;
	while (cap < need)
		cap *= 2;
	char *p = realloc(sb->buf, cap);
	if (!p) {
		sb->nomem = true;
		return false;
	}
	sb->buf = p;
	sb->cap = cap;
	return true;
}

void pyu_strbuf_reserve(struct pyu_strbuf *sb, size_t n)
{
	if (sb->nomem || sb->too_long || n > sb->max || sb->len > sb->max - n)
		return;
	size_t need = sb->len + n + 1;
	if (need <= sb->cap)
		return;
	char *p = realloc(sb->buf, need);
	if (!p)
		return;
	sb->buf = p;
	sb->cap = need;
}

void pyu_strbuf_append(struct pyu_strbuf *sb, const char *s, size_t n)
{
	if (!reserve(sb, n))
		return;
	memcpy(sb->buf + sb->len, s, n);
	sb->len += n;
	sb->buf[sb->len] = '\0';
}

char *pyu_strbuf_room_grow(struct pyu_strbuf *sb, size_t n)
{
	return reserve(sb, n) ? sb->buf + sb->len : NULL;
}

void pyu_strbuf_i64(struct pyu_strbuf *sb, int64_t v)
{
	char tmp[24];
	size_t at = sizeof(tmp);
	uint64_t u = v < 0 ? 0 - (uint64_t)v : (uint64_t)v;
	do {
		tmp[--at] = (char)('0' + u % 10);
		u /= 10;
	} while (u);
	if (v < 0)
		tmp[--at] = '-';
	pyu_strbuf_append(sb, tmp + at, sizeof(tmp) - at);
}

void pyu_strbuf_u64(struct pyu_strbuf *sb, uint64_t v)
{
	char tmp[24];
	size_t at = sizeof(tmp);
	do {
		tmp[--at] = (char)('0' + v % 10);
		v /= 10;
	} while (v);
	pyu_strbuf_append(sb, tmp + at, sizeof(tmp) - at);
}

char *pyu_hex_digits(char *out, uint64_t v)
{
	static const char pairs[] =
		"000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f"
		"202122232425262728292a2b2c2d2e2f303132333435363738393a3b3c3d3e3f"
		"404142434445464748494a4b4c4d4e4f505152535455565758595a5b5c5d5e5f"
		"606162636465666768696a6b6c6d6e6f707172737475767778797a7b7c7d7e7f"
		"808182838485868788898a8b8c8d8e8f909192939495969798999a9b9c9d9e9f"
		"a0a1a2a3a4a5a6a7a8a9aaabacadaeafb0b1b2b3b4b5b6b7b8b9babbbcbdbebf"
		"c0c1c2c3c4c5c6c7c8c9cacbcccdcecfd0d1d2d3d4d5d6d7d8d9dadbdcdddedf"
		"e0e1e2e3e4e5e6e7e8e9eaebecedeeeff0f1f2f3f4f5f6f7f8f9fafbfcfdfeff";
	// How many digits first (the highest set bit), then two at a time, each where it belongs:
	// no second copy. v | 1: zero has one digit.
	unsigned n = (unsigned)(64 - __builtin_clzll(v | 1) + 3) / 4;
	char *end = out + n;
	for (; n >= 2; n -= 2, v >>= 8)
		memcpy(out + n - 2, pairs + 2 * (v & 0xff), 2);
	if (n)
		out[0] = pairs[2 * v + 1];
	return end;
}

void pyu_strbuf_hex(struct pyu_strbuf *sb, uint64_t v)
{
	char *p = pyu_strbuf_room(sb, 18);
	if (!p)
		return;
	p[0] = '0';
	p[1] = 'x';
	pyu_strbuf_commit(sb, (size_t)(pyu_hex_digits(p + 2, v) - p));
}

void pyu_strbuf_puts(struct pyu_strbuf *sb, const char *s)
{
	pyu_strbuf_append(sb, s, strlen(s));
}

void pyu_strbuf_putc(struct pyu_strbuf *sb, char c)
{
	pyu_strbuf_append(sb, &c, 1);
}

void pyu_strbuf_repeat(struct pyu_strbuf *sb, char c, size_t n)
{
	if (!reserve(sb, n))
		return;
	memset(sb->buf + sb->len, c, n);
	sb->len += n;
	sb->buf[sb->len] = '\0';
}

void pyu_strbuf_printf(struct pyu_strbuf *sb, const char *fmt, ...)
{
	char small[256];
	va_list ap;
	va_start(ap, fmt);
	int n = vsnprintf(small, sizeof(small), fmt, ap);
	va_end(ap);
	if (n < 0)
		return;
	if ((size_t)n < sizeof(small)) {
		pyu_strbuf_append(sb, small, (size_t)n);
		return;
	}
	if (!reserve(sb, (size_t)n))
		return;
	va_start(ap, fmt);
	vsnprintf(sb->buf + sb->len, (size_t)n + 1, fmt, ap);
	va_end(ap);
	sb->len += (size_t)n;
}

size_t pyu_utf8_next(const unsigned char *s, size_t n, uint32_t *cp)
{
	unsigned char b = s[0];
	if (b < 0x80) {
		*cp = b;
		return 1;
	}
	size_t need;
	uint32_t v;
	unsigned char lo = 0x80, hi = 0xBF; // allowed range of the second byte
	if (b >= 0xC2 && b <= 0xDF) {
		need = 1, v = b & 0x1F;
	} else if (b >= 0xE0 && b <= 0xEF) {
		need = 2, v = b & 0x0F;
		if (b == 0xE0)
			lo = 0xA0; // no overlongs
		else if (b == 0xED)
			hi = 0x9F; // no surrogates
	} else if (b >= 0xF0 && b <= 0xF4) {
		need = 3, v = b & 0x07;
		if (b == 0xF0)
			lo = 0x90;
		else if (b == 0xF4)
			hi = 0x8F; // nothing above U+10FFFF
	} else {
		*cp = 0xFFFD;
		return 1;
	}
	size_t i = 1;
	for (; i <= need; i++) {
		if (i >= n)
			break;
		unsigned char c = s[i];
		unsigned char l = i == 1 ? lo : 0x80, h = i == 1 ? hi : 0xBF;
		if (c < l || c > h)
			break;
		v = (v << 6) | (c & 0x3F);
	}
	if (i <= need) {
		*cp = 0xFFFD; // the maximal valid prefix becomes one replacement character
		return i;
	}
	*cp = v;
	return need + 1;
}

size_t pyu_utf8_chars(const char *s, size_t n, size_t byte_offset)
{
	size_t end = byte_offset < n ? byte_offset : n;
	size_t chars = 0;
	for (size_t i = 0; i < end; chars++) {
		uint32_t cp;
		i += pyu_utf8_next((const unsigned char *)s + i, end - i, &cp);
	}
	return chars;
}

static const char replacement[] = "\xEF\xBF\xBD";

void pyu_strbuf_text(struct pyu_strbuf *sb, const char *s, size_t n)
{
	const unsigned char *u = (const unsigned char *)s;
	size_t i = 0;
	while (i < n) {
		// Copy runs of plain ASCII at once.
		size_t j = i;
		while (j < n && u[j] >= 0x20 && u[j] < 0x7F)
			j++;
		pyu_strbuf_append(sb, s + i, j - i);
		i = j;
		if (i >= n)
			break;
		uint32_t cp;
		size_t k = pyu_utf8_next(u + i, n - i, &cp);
		if (cp == '\t')
			pyu_strbuf_putc(sb, '\t');
		else if (cp < 0x20 || cp == 0x7F)
			pyu_strbuf_printf(sb, "\\x%02x", (unsigned)cp);
		else if (cp == 0xFFFD)
			pyu_strbuf_append(sb, replacement, 3);
		else
			pyu_strbuf_append(sb, s + i, k);
		i += k;
	}
}

void pyu_strbuf_json_string(struct pyu_strbuf *sb, const char *s, size_t n)
{
	if (!s) {
		pyu_strbuf_puts(sb, "null");
		return;
	}
	const unsigned char *u = (const unsigned char *)s;
	pyu_strbuf_putc(sb, '"');
	size_t i = 0;
	while (i < n) {
		size_t j = i;
		while (j < n && u[j] >= 0x20 && u[j] < 0x7F && u[j] != '"' && u[j] != '\\')
			j++;
		pyu_strbuf_append(sb, s + i, j - i);
		i = j;
		if (i >= n)
			break;
		uint32_t cp;
		size_t k = pyu_utf8_next(u + i, n - i, &cp);
		switch (cp) {
		case '"': pyu_strbuf_puts(sb, "\\\""); break;
		case '\\': pyu_strbuf_puts(sb, "\\\\"); break;
		case '\n': pyu_strbuf_puts(sb, "\\n"); break;
		case '\r': pyu_strbuf_puts(sb, "\\r"); break;
		case '\t': pyu_strbuf_puts(sb, "\\t"); break;
		case '\b': pyu_strbuf_puts(sb, "\\b"); break;
		case '\f': pyu_strbuf_puts(sb, "\\f"); break;
		default:
			if (cp < 0x20 || cp == 0x7F)
				pyu_strbuf_printf(sb, "\\u%04x", (unsigned)cp);
			else if (cp == 0xFFFD)
				pyu_strbuf_append(sb, replacement, 3);
			else
				pyu_strbuf_append(sb, s + i, k);
		}
		i += k;
	}
	pyu_strbuf_putc(sb, '"');
}

void pyu_strbuf_json_cstr(struct pyu_strbuf *sb, const char *s)
{
	pyu_strbuf_json_string(sb, s, s ? strlen(s) : 0);
}
