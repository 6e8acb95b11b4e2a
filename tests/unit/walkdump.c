// walkdump.c - a debugging driver for the core walker: opens a PID or a core file, collects the
// snapshot and prints it as JSON in the schema (the fields the core fills), plus
// backend-read counts. Used by tests/unit/walk_real (the real-interpreter walk check) and by hand.
//   walkdump PID | CORE [EXECUTABLE]
//   walkdump --anonymous PID   the process through a read callback whose mappings name no
//                              files, as a remote debugger target may (in-memory ELF route)
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <unistd.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "stacks.h"

static void json_str(const char *s)
{
	if (!s) {
		fputs("null", stdout);
		return;
	}
	putchar('"');
	for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
		if (*p == '"' || *p == '\\')
			printf("\\%c", *p);
		else if (*p < 0x20)
			printf("\\u%04x", *p);
		else
			putchar(*p);
	}
	putchar('"');
}

static void json_int(int32_t v, int32_t none)
{
	if (v == none)
		fputs("null", stdout);
	else
		printf("%" PRId32, v);
}

static uint64_t mem_read(void *arg, uint64_t addr, void *buf, uint64_t len)
{
	ssize_t n = pread(*(int *)arg, buf, len, (off_t)addr);
	return n > 0 ? (uint64_t)n : 0;
}

// A callback target over /proc/PID/mem with the process's mappings but no file names.
static struct pyu_error *open_anonymous(int32_t pid, int *fd, struct pyu_target **ret)
{
	struct pyu_target *real, *t;
	struct pyu_error *err = pyu_target_open_pid(pid, &real);
	if (err)
		return err;
	char path[64];
	snprintf(path, sizeof(path), "/proc/%d/mem", (int)pid);
	*fd = open(path, O_RDONLY);
	err = *fd < 0 ? pyu_error_create(PYU_ERR_IO, "cannot open %s", path)
		      : pyu_target_open_callback(mem_read, fd, &t);
	for (size_t i = 0; !err && i < pyu_target_mapping_count(real); i++) {
		const struct pyu_mapping *m = pyu_target_mapping(real, i);
		err = pyu_target_add_mapping(t, m->start, m->end, m->offset, m->writable, NULL);
	}
	for (size_t i = 0; !err && i < pyu_target_thread_count(real); i++)
		err = pyu_target_add_thread(t, pyu_target_thread(real, i));
	pyu_target_destroy(real);
	if (!err)
		*ret = t;
	return err;
}

int main(int argc, char **argv)
{
	int fd = -1;
	if (argc < 2) {
		fprintf(stderr, "usage: walkdump PID | CORE [EXECUTABLE]\n");
		return 2;
	}
	struct pyu_target *t;
	struct pyu_error *err;
	char *end;
	long pid = strtol(argv[1], &end, 10);
	if (!strcmp(argv[1], "--anonymous") && argc > 2)
		err = open_anonymous((int32_t)atol(argv[2]), &fd, &t);
	else if (*end == '\0')
		err = pyu_target_open_pid((int32_t)pid, &t);
	else
		err = pyu_target_open_core(argv[1], argc > 2 ? argv[2] : NULL, &t);
	if (err) {
		fprintf(stderr, "walkdump: %s\n", pyu_error_message(err));
		return 1;
	}
	struct timespec t0, t1;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	struct pyu_stacks *s;
	err = pyu_stacks_collect(t, &s);
	clock_gettime(CLOCK_MONOTONIC, &t1);
	if (err) {
		fprintf(stderr, "walkdump: %s\n", pyu_error_message(err));
		pyu_target_destroy(t);
		return 1;
	}
	uint64_t frames = 0;
	printf("{\"pyunwind\": 1, \"python\": {\"version\": \"%s\", \"hexversion\": %" PRIu64
	       ", \"debug_build\": %s, \"free_threaded\": %s},\n \"threads\": [",
	       s->version, s->hexversion, s->debug_build ? "true" : "false",
	       s->free_threaded ? "true" : "false");
	for (uint32_t i = 0; i < s->thread_count; i++) {
		const struct pyu_thread_info *th = &s->threads[i];
		printf("%s\n  {\"thread_id\": %" PRIu64 ", \"native_thread_id\": ", i ? "," : "",
		       th->thread_id);
		if (th->native_thread_id < 0)
			fputs("null", stdout);
		else
			printf("%" PRId64, th->native_thread_id);
		printf(", \"holds_gil\": %s, \"interpreter_id\": %" PRId64 ", \"frames\": [",
		       th->holds_gil < 0 ? "null" : th->holds_gil ? "true" : "false",
		       th->interpreter_id);
		for (uint32_t k = 0; k < th->frame_count; k++) {
			const struct pyu_frame_info *f = &th->frames[k];
			frames++;
			printf("%s\n   {", k ? "," : "");
			if (f->kind == PYU_FRAME_ERROR) {
				fputs("\"kind\": \"error\", \"reason\": ", stdout);
				json_str(f->reason);
				printf(", \"address\": \"0x%" PRIx64 "\"}", f->frame_address);
				continue;
			}
			const struct pyu_code_info *c = &s->codes[f->code];
			fputs("\"kind\": \"python\", \"function\": ", stdout);
			json_str(c->name);
			fputs(", \"qualname\": ", stdout);
			json_str(c->qualname);
			fputs(", \"file\": ", stdout);
			json_str(c->filename);
			fputs(", \"line\": ", stdout);
			json_int(f->loc.line, PYU_NO_LINE);
			fputs(", \"end_line\": ", stdout);
			json_int(f->loc.end_line, PYU_NO_LINE);
			fputs(", \"column\": ", stdout);
			json_int(f->loc.column, PYU_NO_COLUMN);
			fputs(", \"end_column\": ", stdout);
			json_int(f->loc.end_column, PYU_NO_COLUMN);
			printf(", \"instruction_offset\": %" PRId64 ", \"code_address\": \"0x%" PRIx64
			       "\", \"frame_address\": \"0x%" PRIx64 "\"}",
			       f->instruction_offset, c->address, f->frame_address);
		}
		fputs("]}", stdout);
	}
	fputs("],\n \"errors\": [", stdout);
	for (uint32_t i = 0; i < s->error_count; i++) {
		fputs(i ? ", " : "", stdout);
		json_str(s->errors[i]);
	}
	fputs("],\n \"notes\": [", stdout);
	for (uint32_t i = 0; i < s->note_count; i++) {
		fputs(i ? ", " : "", stdout);
		json_str(s->notes[i]);
	}
	double ms = (double)(t1.tv_sec - t0.tv_sec) * 1e3 + (double)(t1.tv_nsec - t0.tv_nsec) / 1e6;
	printf("],\n \"stats\": {\"frames\": %" PRIu64 ", \"backend_reads\": %" PRIu64
	       ", \"cached_reads\": %" PRIu64 ", \"ms\": %.3f}}\n",
	       frames, pyu_target_backend_reads(t), pyu_target_cached_reads(t), ms);
	pyu_stacks_destroy(s);
	pyu_target_destroy(t);
	if (fd >= 0)
		close(fd);
	return 0;
}
