// reprtext.c - Python's repr() text rules over values already copied out of the target:
// floats (shortest round-trip, Python's notation switch), complex, str/bytes quoting and
// escapes, int digits to decimal, and terminal-safe names. Pure: no target access.
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "objects.h"
#include "printable.h"
#include "reprtext.h"

static const char hexdigits[] = "0123456789abcdef";

// Parses "d.ddde[+-]XX" as written by %.*e into its digits and decimal exponent.
static size_t parse_e(const char *s, char *digits, int *exp10)
{
	size_t n = 0;
	for (; *s && *s != 'e'; s++)
		if (*s >= '0' && *s <= '9')
			digits[n++] = *s;
	*exp10 = *s == 'e' ? atoi(s + 1) : 0;
	return n;
}

// The correctly rounded @p significant digits of @ax (> 0, finite) or, when they do not read back
// as @ax, a neighbour one unit away that does (the correctly rounded digits can miss a narrower
// half-interval next to a power of two). On success stores the digits (trailing zeros kept) in
// @digits, their count in *n and the decimal exponent of the first digit in *e.
static bool digits_at(double ax, int p, char *digits, size_t *n, int *e)
{
	char tmp[64];
	snprintf(tmp, sizeof(tmp), "%.*e", p - 1, ax);
	*n = parse_e(tmp, digits, e);
	if (strtod(tmp, NULL) == ax)
		return true;
	digits[*n] = '\0';
	unsigned long long d = strtoull(digits, NULL, 10); // n = p <= 17 digits
	unsigned long long cands[2] = {d - 1, d + 1};
	for (int k = 0; k < 2; k++) {
		char c[64];
		snprintf(c, sizeof(c), "%llue%d", cands[k], *e - (p - 1));
		if (cands[k] == 0 || strtod(c, NULL) != ax)
			continue;
		char cd[32];
		size_t cn = (size_t)snprintf(cd, sizeof(cd), "%llu", cands[k]);
		if (cn != *n && cn != *n + 1 && cn + 1 != *n)
			continue;
		memcpy(digits, cd, cn);
		*e += (int)cn - p;
		*n = cn;
		return true;
	}
	return false;
}

// The shortest digit string (no trailing zeros) that reads back as @ax (> 0, finite), and the
// position of the decimal point relative to its first digit (1 = after the first digit).
static size_t shortest_digits(double ax, char *digits, int *decpt)
{
	// Digits that read back at some p < 15 (correctly rounded or a neighbour) lie on the
	// 15-digit grid too, so the 15-digit attempt (with its neighbours) succeeds whenever a
	// shorter one would: when it fails, start at 16. Most floats of a real program need 16 or
	// 17 digits, and this spares them 14 rounds of printf and strtod.
	size_t n;
	int e;
	int first = digits_at(ax, 15, digits, &n, &e) ? 1 : 16;
	for (int p = first; p <= 17; p++) {
		if (!digits_at(ax, p, digits, &n, &e))
			continue;
		while (n > 1 && digits[n - 1] == '0')
			n--;
		*decpt = e + 1;
		return n;
	}
	// Unreachable for finite doubles (17 digits always round-trip); keep a sane answer.
	char tmp[64];
	snprintf(tmp, sizeof(tmp), "%.16e", ax);
	n = parse_e(tmp, digits, &e);
	while (n > 1 && digits[n - 1] == '0')
		n--;
	*decpt = e + 1;
	return n;
}

size_t pyu_float_repr(double x, bool add_dot_0, char *buf)
{
	if (isnan(x))
		return (size_t)snprintf(buf, PYU_FLOAT_REPR_MAX, "nan");
	if (isinf(x))
		return (size_t)snprintf(buf, PYU_FLOAT_REPR_MAX, x < 0 ? "-inf" : "inf");
	char digits[40];
	int decpt;
	size_t n;
	if (x == 0) {
		digits[0] = '0';
		n = 1;
		decpt = 1;
	} else {
		n = shortest_digits(fabs(x), digits, &decpt);
	}
	size_t o = 0;
	if (signbit(x))
		buf[o++] = '-';
	if (decpt <= -4 || decpt > 16) {
		buf[o++] = digits[0];
		if (n > 1) {
			buf[o++] = '.';
			memcpy(buf + o, digits + 1, n - 1);
			o += n - 1;
		}
		int e = decpt - 1;
		o += (size_t)snprintf(buf + o, PYU_FLOAT_REPR_MAX - o, "e%c%02d", e < 0 ? '-' : '+',
				      e < 0 ? -e : e);
		return o;
	}
	if (decpt <= 0) {
		buf[o++] = '0';
		buf[o++] = '.';
		for (int i = 0; i < -decpt; i++)
			buf[o++] = '0';
		memcpy(buf + o, digits, n);
		o += n;
	} else if ((size_t)decpt >= n) {
		memcpy(buf + o, digits, n);
		o += n;
		for (size_t i = n; i < (size_t)decpt; i++)
			buf[o++] = '0';
		if (add_dot_0) {
			buf[o++] = '.';
			buf[o++] = '0';
		}
	} else {
		memcpy(buf + o, digits, (size_t)decpt);
		o += (size_t)decpt;
		buf[o++] = '.';
		memcpy(buf + o, digits + decpt, n - (size_t)decpt);
		o += n - (size_t)decpt;
	}
	buf[o] = '\0';
	return o;
}

void pyu_complex_repr(struct pyu_strbuf *out, double re, double im)
{
	char a[PYU_FLOAT_REPR_MAX], b[PYU_FLOAT_REPR_MAX];
	if (re == 0 && !signbit(re)) {
		pyu_float_repr(im, false, b);
		pyu_strbuf_printf(out, "%sj", b);
		return;
	}
	pyu_float_repr(re, false, a);
	pyu_float_repr(im, false, b);
	// Py_DTSF_SIGN: a '+' before anything that does not start with '-' (inf and nan too).
	pyu_strbuf_printf(out, "(%s%s%sj)", a, b[0] == '-' ? "" : "+", b);
}

static uint32_t unit_at(const uint8_t *data, size_t i, unsigned kind)
{
	if (kind == 1)
		return data[i];
	if (kind == 2)
		return (uint32_t)data[2 * i] | (uint32_t)data[2 * i + 1] << 8;
	return (uint32_t)data[4 * i] | (uint32_t)data[4 * i + 1] << 8 |
	       (uint32_t)data[4 * i + 2] << 16 | (uint32_t)data[4 * i + 3] << 24;
}

static void put_escape(struct pyu_strbuf *out, uint32_t ch)
{
	char e[12];
	if (ch <= 0xff) {
		e[0] = '\\', e[1] = 'x', e[2] = hexdigits[ch >> 4], e[3] = hexdigits[ch & 15];
		pyu_strbuf_append(out, e, 4);
	} else if (ch <= 0xffff) {
		e[0] = '\\', e[1] = 'u';
		for (int i = 0; i < 4; i++)
			e[2 + i] = hexdigits[(ch >> (12 - 4 * i)) & 15];
		pyu_strbuf_append(out, e, 6);
	} else {
		e[0] = '\\', e[1] = 'U';
		for (int i = 0; i < 8; i++)
			e[2 + i] = hexdigits[(ch >> (28 - 4 * i)) & 15];
		pyu_strbuf_append(out, e, 10);
	}
}

void pyu_text_repr(struct pyu_strbuf *out, const uint8_t *data, size_t n, unsigned kind,
		   enum pyu_text_style style, unsigned db, bool cut)
{
	bool squote = false, dquote = false;
	for (size_t i = 0; i < n; i++) {
		uint32_t ch = unit_at(data, i, kind);
		squote |= ch == '\'';
		dquote |= ch == '"';
	}
	char quote = squote && !dquote ? '"' : '\'';
	if (style == PYU_TEXT_BYTES || style == PYU_TEXT_BYTEARRAY)
		pyu_strbuf_putc(out, 'b');
	else if (style == PYU_TEXT_PY2_UNICODE)
		pyu_strbuf_putc(out, 'u');
	pyu_strbuf_putc(out, quote);
	// Runs of characters that need no escape are appended in one go.
	char run[256];
	size_t rl = 0;
	for (size_t i = 0; i < n; i++) {
		uint32_t ch = unit_at(data, i, kind);
		const char *esc = NULL;
		bool hex = false, plain = false;
		if (ch == (uint32_t)quote || ch == '\\' ||
		    (ch == '\'' && style == PYU_TEXT_BYTEARRAY))
			esc = ch == '\\' ? "\\\\" : ch == '"' ? "\\\"" : "\\'";
		else if (ch == '\t')
			esc = "\\t";
		else if (ch == '\n')
			esc = "\\n";
		else if (ch == '\r')
			esc = "\\r";
		else if (ch < ' ' || ch == 0x7f)
			hex = true;
		else if (ch < 0x7f)
			plain = true;
		else if (style == PYU_TEXT_STR)
			plain = pyu_unicode_printable(ch, db), hex = !plain;
		else
			hex = true; // bytes, 2.7 str and 2.7 unicode escape everything past 0x7e
		if (plain) {
			if (rl + 4 > sizeof(run)) {
				pyu_strbuf_append(out, run, rl);
				rl = 0;
			}
			rl += pyu_utf8_put(ch, run + rl);
			continue;
		}
		if (rl) {
			pyu_strbuf_append(out, run, rl);
			rl = 0;
		}
		if (esc)
			pyu_strbuf_puts(out, esc);
		else if (hex)
			put_escape(out, ch);
	}
	if (rl)
		pyu_strbuf_append(out, run, rl);
	pyu_strbuf_putc(out, quote);
	if (cut)
		pyu_strbuf_puts(out, "...");
}

void pyu_text_name(struct pyu_strbuf *out, const char *s, size_t n, unsigned db)
{
	const unsigned char *u = (const unsigned char *)s;
	for (size_t i = 0; i < n;) {
		uint32_t cp;
		size_t k = pyu_utf8_next(u + i, n - i, &cp);
		bool bad = cp == 0xfffd && !(k == 3 && u[i] == 0xef && u[i + 1] == 0xbf &&
					    u[i + 2] == 0xbd);
		if (bad) {
			for (size_t j = 0; j < k; j++)
				put_escape(out, u[i + j]);
		} else if (pyu_unicode_printable(cp, db)) {
			pyu_strbuf_append(out, s + i, k);
		} else {
			put_escape(out, cp);
		}
		i += k;
	}
}

size_t pyu_int_decimal(const uint32_t *digits, size_t n, uint32_t *work, char *buf, size_t cap)
{
	if (cap < 2)
		return 0;
	size_t len = n;
	if (n)
		memcpy(work, digits, n * sizeof(*work));
	while (len && work[len - 1] == 0)
		len--;
	size_t pos = cap - 1;
	buf[pos] = '\0';
	if (len == 0) {
		buf[0] = '0';
		buf[1] = '\0';
		return 1;
	}
	while (len) {
		uint64_t rem = 0;
		for (size_t i = len; i-- > 0;) {
			uint64_t cur = rem << 30 | (work[i] & 0x3fffffff);
			work[i] = (uint32_t)(cur / 1000000000u);
			rem = cur % 1000000000u;
		}
		while (len && work[len - 1] == 0)
			len--;
		int k = 0;
		do {
			if (pos == 0)
				return 0;
			buf[--pos] = (char)('0' + rem % 10);
			rem /= 10;
			k++;
		} while (len ? k < 9 : rem != 0);
	}
	size_t count = cap - 1 - pos;
	memmove(buf, buf + pos, count + 1);
	return count;
}
