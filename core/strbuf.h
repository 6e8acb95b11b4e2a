// strbuf.h - a bounded, growable string builder for the formatters, with UTF-8 sanitising and
// JSON string escaping. Appends never fail individually: the first failure (out of memory, or
// the output growing past its bound) is remembered and reported once by pyu_strbuf_finish().
#ifndef PYU_STRBUF_H
#define PYU_STRBUF_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "error.h"

#define PYU_STRBUF_MAX (64u << 20) // default bound on one formatted output

struct pyu_strbuf {
	char *buf;
	size_t len, cap, max;
	bool nomem, too_long;
};

// Starts an empty builder that refuses to grow past @max bytes. Cannot fail.
void pyu_strbuf_init(struct pyu_strbuf *sb, size_t max);
// Releases the buffer; the builder is empty afterwards. Cannot fail.
void pyu_strbuf_release(struct pyu_strbuf *sb);
// Hands the NUL-terminated text to *ret (caller frees), or returns the error that made an
// append fail (and releases the buffer). On error, *ret is unchanged.
struct pyu_error *pyu_strbuf_finish(struct pyu_strbuf *sb, char **ret);

// Makes room for @n more bytes at once (a document whose size can be told in advance grows
// in one allocation, not by doubling: each doubling copies, and touches fresh memory). A hint:
// past the bound or out of memory it does nothing, and the appends that follow fail as usual.
// Cannot fail.
void pyu_strbuf_reserve(struct pyu_strbuf *sb, size_t n);
void pyu_strbuf_append(struct pyu_strbuf *sb, const char *s, size_t n);
// Room for up to @n more bytes written in place (several pieces for the price of one bounds
// check): where they go, or NULL when the builder has failed (past its bound, out of memory).
// pyu_strbuf_commit() then counts the @n (at most as many as asked for) written there.
// Cannot fail otherwise.
char *pyu_strbuf_room_grow(struct pyu_strbuf *sb, size_t n);
static inline char *pyu_strbuf_room(struct pyu_strbuf *sb, size_t n)
{
	if (!sb->nomem && !sb->too_long && sb->cap - sb->len > n && n <= sb->max - sb->len)
		return sb->buf + sb->len; // the builder never holds more than its bound
	return pyu_strbuf_room_grow(sb, n);
}
static inline void pyu_strbuf_commit(struct pyu_strbuf *sb, size_t n)
{
	if (sb->nomem || sb->too_long || !sb->buf || n >= sb->cap - sb->len)
		return; // not room that pyu_strbuf_room() gave
	sb->len += n;
	sb->buf[sb->len] = '\0';
}
void pyu_strbuf_puts(struct pyu_strbuf *sb, const char *s);
void pyu_strbuf_putc(struct pyu_strbuf *sb, char c);
void pyu_strbuf_repeat(struct pyu_strbuf *sb, char c, size_t n);
// Numbers without printf (the formatters' hot path): decimal, and "0x" + lowercase hex as
// printf's "0x%" PRIx64 gives it.
void pyu_strbuf_i64(struct pyu_strbuf *sb, int64_t v);
void pyu_strbuf_u64(struct pyu_strbuf *sb, uint64_t v);
void pyu_strbuf_hex(struct pyu_strbuf *sb, uint64_t v);
// @v as lowercase hex digits, no prefix, at @out, which has room for 16: returns the end.
char *pyu_hex_digits(char *out, uint64_t v);
void pyu_strbuf_printf(struct pyu_strbuf *sb, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

// Appends @n bytes of @s as printable UTF-8: invalid sequences become U+FFFD, C0 controls
// (except tab) and DEL become \xNN, so names from the target cannot garble a terminal.
void pyu_strbuf_text(struct pyu_strbuf *sb, const char *s, size_t n);
// Appends @s (@n bytes) as a quoted JSON string: quotes, backslashes and controls escaped,
// invalid UTF-8 replaced by U+FFFD. A NULL @s appends `null`.
void pyu_strbuf_json_string(struct pyu_strbuf *sb, const char *s, size_t n);
// The same for a NUL-terminated string (NULL gives `null`).
void pyu_strbuf_json_cstr(struct pyu_strbuf *sb, const char *s);

// Decodes one UTF-8 character from @s (@n > 0 bytes). Returns the bytes consumed (>= 1) and
// stores the code point in *cp; an ill-formed sequence consumes its maximal valid prefix (at
// least one byte) and gives U+FFFD, as Python's "replace" error handler does. Cannot fail.
size_t pyu_utf8_next(const unsigned char *s, size_t n, uint32_t *cp);
// Number of characters Python sees in the first @byte_offset bytes of @s (@n bytes), decoding
// with replacement; offsets past @n count the whole string. Cannot fail.
size_t pyu_utf8_chars(const char *s, size_t n, size_t byte_offset);

#endif
