// error.h - errors as values: struct pyu_error, its constructors and wrapping.
// A function that can fail returns struct pyu_error * (NULL = success). Constructors never fail:
// when memory runs out they return the static out-of-memory error.
#ifndef PYU_ERROR_H
#define PYU_ERROR_H

#include "include/pyunwind.h"

struct pyu_error {
	int32_t code;
	char *message; // owned; NULL only for the static out-of-memory error
};

extern struct pyu_error pyu_error_nomem;

// A new error with a printf-style message. Cannot fail (returns &pyu_error_nomem instead).
struct pyu_error *pyu_error_create(int32_t code, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
// Prefixes @err's message with "while <context>: " and returns @err (or a replacement when
// memory runs out). Cannot fail.
struct pyu_error *pyu_error_wrap(struct pyu_error *err, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

// Appends a printf-style message to the NUL-terminated text in @buf (@size bytes), truncating
// silently: for notes and "what was examined" summaries. Cannot fail.
void pyu_appendf(char *buf, size_t size, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

#endif
