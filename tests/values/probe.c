// probe.c - the end-to-end tests' window on the value reader (core/values.h): opens a live
// process or a core, finds the interpreter, and answers one request per input line:
//   repr ADDR | type ADDR | attrs ADDR | getattr ADDR NAME | dictget ADDR KEY
// (ADDR in hex) with one output line: "OK <hex of the text> <t|->" (t: a bound cut it) or
// "ERR <hex of the message>". Hex keeps any byte the reader writes intact for the comparison,
// which is done by tests/e2e/test_values.py against what the target reported about itself.
// Links build/libpyunwind.a (internal API); not installed.
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "runtime.h"
#include "strbuf.h"
#include "target.h"
#include "values.h"

static void put_hex(const char *s, size_t n)
{
	for (size_t i = 0; i < n; i++)
		printf("%02x", (unsigned char)s[i]);
}

static void reply_err(struct pyu_error *err)
{
	const char *m = pyu_error_message(err);
	printf("ERR ");
	put_hex(m, strlen(m));
	printf("\n");
	pyu_error_destroy(err);
}

struct attrs_out {
	struct pyu_values *v;
	struct pyu_strbuf *sb;
	bool *cut;
	int n;
};

static bool attr_visit(void *arg, uint64_t key, uint64_t value)
{
	struct attrs_out *a = arg;
	if (a->n++)
		pyu_strbuf_puts(a->sb, ", ");
	pyu_value_repr(a->v, key, a->sb, a->cut);
	pyu_strbuf_puts(a->sb, ": ");
	pyu_value_repr(a->v, value, a->sb, a->cut);
	return true;
}

int main(int argc, char **argv)
{
	struct pyu_target *t = NULL;
	struct pyu_error *err;
	if (argc == 3 && strcmp(argv[1], "--pid") == 0)
		err = pyu_target_open_pid(atoi(argv[2]), &t);
	else if (argc == 5 && strcmp(argv[1], "--core") == 0 && strcmp(argv[3], "--exe") == 0)
		err = pyu_target_open_core(argv[2], argv[4], &t);
	else {
		fprintf(stderr, "usage: probe --pid PID | --core CORE --exe EXE  < requests\n");
		return 2;
	}
	if (err) {
		fprintf(stderr, "probe: %s\n", pyu_error_message(err));
		return 1;
	}
	static struct pyu_runtime rt;
	struct pyu_values *v = NULL;
	if ((err = pyu_runtime_find(t, &rt)) != NULL ||
	    (err = pyu_values_create(t, &rt, NULL, &v)) != NULL) {
		fprintf(stderr, "probe: %s\n", pyu_error_message(err));
		return 1;
	}
	char line[4096];
	while (fgets(line, sizeof(line), stdin)) {
		char op[16], name[1024] = "";
		uint64_t addr;
		if (sscanf(line, "%15s %" SCNx64 " %1023s", op, &addr, name) < 2) {
			printf("ERR %s\n", "626164");
			continue;
		}
		struct pyu_strbuf sb;
		pyu_strbuf_init(&sb, PYU_STRBUF_MAX);
		bool cut = false;
		err = NULL;
		if (strcmp(op, "repr") == 0) {
			pyu_value_repr(v, addr, &sb, &cut);
		} else if (strcmp(op, "type") == 0) {
			char *tn = NULL;
			if (!(err = pyu_value_type_name(v, addr, &tn)))
				pyu_strbuf_puts(&sb, tn);
			free(tn);
		} else if (strcmp(op, "attrs") == 0) {
			struct attrs_out a = {v, &sb, &cut, 0};
			pyu_strbuf_putc(&sb, '{');
			err = pyu_object_attrs_foreach(v, addr, attr_visit, &a);
			pyu_strbuf_putc(&sb, '}');
		} else if (strcmp(op, "getattr") == 0) {
			uint64_t val;
			const char *where = NULL;
			if (!(err = pyu_object_getattr(v, addr, name, &val, &where))) {
				pyu_strbuf_printf(&sb, "%s ", where);
				pyu_value_repr(v, val, &sb, &cut);
			}
		} else if (strcmp(op, "dictget") == 0) {
			uint64_t val;
			char *end;
			long long k = strtoll(name, &end, 10);
			if (*end == '\0' && end != name)
				err = pyu_dict_get_int(v, addr, k, &val);
			else
				err = pyu_dict_get_str(v, addr, name, &val);
			if (!err)
				pyu_value_repr(v, val, &sb, &cut);
		} else {
			err = pyu_error_create(PYU_ERR_ARGUMENT, "unknown request %s", op);
		}
		if (err) {
			pyu_strbuf_release(&sb);
			reply_err(err);
			continue;
		}
		printf("OK ");
		put_hex(sb.buf ? sb.buf : "", sb.len);
		printf(" %s\n", cut ? "t" : "-");
		pyu_strbuf_release(&sb);
	}
	pyu_values_destroy(v);
	pyu_target_destroy(t);
	return 0;
}
