// error.c - constructors for struct pyu_error. Never allocates in a way that can lose an error:
// out of memory degrades to the static pyu_error_nomem.
#include "error.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct pyu_error pyu_error_nomem = {PYU_ERR_NOMEM, NULL};

static char *vformat(const char *fmt, va_list ap)
{
	va_list aq;
	va_copy(aq, ap);
	int n = vsnprintf(NULL, 0, fmt, aq);
	va_end(aq);
	if (n < 0)
		return NULL;
	char *s = malloc((size_t)n + 1);
	if (s)
		vsnprintf(s, (size_t)n + 1, fmt, ap);
	return s;
}

struct pyu_error *pyu_error_create(int32_t code, const char *fmt, ...)
{
	struct pyu_error *err = malloc(sizeof(*err));
	if (!err)
		return &pyu_error_nomem;
	va_list ap;
	va_start(ap, fmt);
	err->message = vformat(fmt, ap);
	va_end(ap);
	if (!err->message) {
		free(err);
		return &pyu_error_nomem;
	}
	err->code = code;
	return err;
}

struct pyu_error *pyu_error_wrap(struct pyu_error *err, const char *fmt, ...)
{
	if (!err || err == &pyu_error_nomem)
		return err;
	va_list ap;
	va_start(ap, fmt);
	char *ctx = vformat(fmt, ap);
	va_end(ap);
	if (!ctx)
		return err;
	size_t n = strlen(ctx) + strlen(err->message) + sizeof("while : ");
	char *s = malloc(n);
	if (s) {
		snprintf(s, n, "while %s: %s", ctx, err->message);
		free(err->message);
		err->message = s;
	}
	free(ctx);
	return err;
}

PYU_PUBLIC const char *pyu_error_message(const struct pyu_error *err)
{
	if (!err)
		return "success";
	if (!err->message)
		return "out of memory";
	return err->message;
}

PYU_PUBLIC int32_t pyu_error_code(const struct pyu_error *err)
{
	return err ? err->code : PYU_ERR_OK;
}

PYU_PUBLIC void pyu_error_destroy(struct pyu_error *err)
{
	if (!err || err == &pyu_error_nomem)
		return;
	free(err->message);
	free(err);
}

PYU_PUBLIC void pyu_free(void *p)
{
	free(p);
}

PYU_PUBLIC uint32_t pyu_abi_version(void)
{
	return PYU_ABI_VERSION;
}

void pyu_appendf(char *buf, size_t size, const char *fmt, ...)
{
	size_t used = strnlen(buf, size);
	if (used + 1 >= size)
		return;
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(buf + used, size - used, fmt, ap);
	va_end(ap);
}
