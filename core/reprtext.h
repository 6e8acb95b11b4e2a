// reprtext.h - the text rules of Python's repr(), as pure functions over values already copied
// out of the target: shortest round-trip floats, the quote choice and escapes of str, bytes
// and 2.7 str/unicode, ints from their 30-bit digits, and names made safe for a terminal.
// No target access, no allocation beyond the caller's strbuf.
#ifndef PYU_REPRTEXT_H
#define PYU_REPRTEXT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "strbuf.h"

// Room repr(float) ever needs, NUL included ("-2.2250738585072014e-308").
#define PYU_FLOAT_REPR_MAX 32

// Writes repr(@x) as Python prints it (shortest string that reads back as @x; fixed notation
// for exponents -4 <= e < 16, else d.ddde+XX; "inf", "-inf", "nan"). @add_dot_0: append ".0" to
// an integral fixed result, as float repr does (complex components do not). Returns the length
// written to @buf (PYU_FLOAT_REPR_MAX bytes). Cannot fail.
size_t pyu_float_repr(double x, bool add_dot_0, char *buf);

// Appends Python's repr of complex(@re, @im): "1j", "(1+2j)", "(-0+1j)", "(nan+infj)".
void pyu_complex_repr(struct pyu_strbuf *out, double re, double im);

enum pyu_text_style {
	PYU_TEXT_STR,        // 3.x str: non-printable (per the Unicode database) escaped
	PYU_TEXT_PY2_UNICODE, // 2.7 unicode: u'...', everything past 0x7e escaped
	PYU_TEXT_BYTES,      // 3.x bytes: b'...'
	PYU_TEXT_PY2_STR,    // 2.7 str: '...' with bytes past 0x7e escaped
	PYU_TEXT_BYTEARRAY,  // bytearray's b'...': as bytes, but ' is escaped whatever the quote
};

// Appends the repr of @n code units of width @kind (1, 2 or 4 bytes, little-endian) at @data
// in @style: quote choice (' unless the text has ' and no "), backslash escapes exactly as the
// interpreter writes them. @db: Unicode database index for PYU_TEXT_STR (printable.h).
// @cut: the text was truncated: the closing quote is followed by "...". Cannot fail.
void pyu_text_repr(struct pyu_strbuf *out, const uint8_t *data, size_t n, unsigned kind,
		   enum pyu_text_style style, unsigned db, bool cut);

// Appends @n bytes of UTF-8 text from the target (a type or module name) with every character
// str.isprintable() rejects written as \xNN, \uNNNN or \UNNNNNNNN and invalid UTF-8 bytes as
// \xNN, so a name cannot carry control sequences. Cannot fail.
void pyu_text_name(struct pyu_strbuf *out, const char *s, size_t n, unsigned db);

// Writes the decimal digits of the magnitude held in @n 30-bit digits (least significant
// first) into @buf (@cap bytes, NUL-terminated). Returns the number of digits, or 0 when they
// do not fit in @cap - 1 bytes. @work: @n scratch words. Cannot fail.
size_t pyu_int_decimal(const uint32_t *digits, size_t n, uint32_t *work, char *buf, size_t cap);

#endif
