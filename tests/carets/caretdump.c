// caretdump.c - runs the caret renderer (core/carets.c) over cases read from stdin, for the
// differential test against each interpreter's own traceback module (tests/carets/run).
// Input, per case:  HEXVERSION LINE END_LINE COLUMN END_COLUMN COUNT   (-1 = none)
//                   then COUNT source lines
// Output, per case: what pyu_carets_render appends (no indent), then a line "\x01".
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "carets.h"

#define MAX_CASE_LINES 2000

int main(void)
{
	static char *lines[MAX_CASE_LINES];
	static size_t lens[MAX_CASE_LINES];
	char *buf = NULL;
	size_t cap = 0;
	ssize_t got;
	while ((got = getline(&buf, &cap, stdin)) > 0) {
		uint64_t hex;
		long long l, el, c, ec;
		size_t count;
		if (sscanf(buf, "%" SCNx64 " %lld %lld %lld %lld %zu", &hex, &l, &el, &c, &ec, &count) != 6 ||
		    count > MAX_CASE_LINES) {
			fprintf(stderr, "caretdump: bad case line: %s", buf);
			return 2;
		}
		for (size_t i = 0; i < count; i++) {
			got = getline(&buf, &cap, stdin);
			if (got < 0)
				return 2;
			if (got && buf[got - 1] == '\n')
				got--;
			lines[i] = malloc((size_t)got + 1);
			if (!lines[i])
				return 2;
			memcpy(lines[i], buf, (size_t)got);
			lens[i] = (size_t)got;
		}
		struct pyu_location loc = {
			l < 0 ? PYU_NO_LINE : (int32_t)l, el < 0 ? PYU_NO_LINE : (int32_t)el,
			c < 0 ? PYU_NO_COLUMN : (int32_t)c, ec < 0 ? PYU_NO_COLUMN : (int32_t)ec};
		struct pyu_strbuf sb;
		pyu_strbuf_init(&sb, PYU_STRBUF_MAX);
		pyu_carets_render(pyu_caret_rules_for(hex), (const char *const *)lines, lens, count,
				  &loc, "", &sb);
		char *text = NULL;
		struct pyu_error *err = pyu_strbuf_finish(&sb, &text);
		if (err) {
			fprintf(stderr, "caretdump: %s\n", pyu_error_message(err));
			return 1;
		}
		fputs(text, stdout);
		fputs("\x01\n", stdout);
		free(text);
		for (size_t i = 0; i < count; i++)
			free(lines[i]);
	}
	free(buf);
	return 0;
}
