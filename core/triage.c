// triage.c - the crash of a core as `pyunwind triage` reports it: the crashing thread (the
// core's first thread, matched to its Python thread state), the signal and fault address, the
// crash signature, and the one-line JSON document per core. Reads only the snapshot and what
// the target recorded of the crash; decodes nothing itself.
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "format.h"
#include "include/pyunwind.h"
#include "inspect.h"
#include "stacks.h"
#include "strbuf.h"
#include "target.h"
#include "triage.h"

#define FNV_OFFSET 0xcbf29ce484222325ull
#define FNV_PRIME 0x100000001b3ull
#define SIGNATURE_VERSION "pyunwind-signature-1\n"

static const char *const signal_names[] = {
	NULL,      "SIGHUP",  "SIGINT",    "SIGQUIT", "SIGILL",    "SIGTRAP", "SIGABRT",
	"SIGBUS",  "SIGFPE",  "SIGKILL",   "SIGUSR1", "SIGSEGV",   "SIGUSR2", "SIGPIPE",
	"SIGALRM", "SIGTERM", "SIGSTKFLT", "SIGCHLD", "SIGCONT",   "SIGSTOP", "SIGTSTP",
	"SIGTTIN", "SIGTTOU", "SIGURG",    "SIGXCPU", "SIGXFSZ",   "SIGVTALRM", "SIGPROF",
	"SIGWINCH", "SIGIO",  "SIGPWR",    "SIGSYS",
};

const char *pyu_signal_name(int32_t sig)
{
	if (sig <= 0 || (size_t)sig >= sizeof(signal_names) / sizeof(signal_names[0]))
		return NULL;
	return signal_names[sig];
}

PYU_PUBLIC int32_t pyu_stacks_crash_thread(const struct pyu_stacks *s)
{
	if (!s)
		return -1;
	struct pyu_crash crash;
	bool core = s->target && pyu_target_crash(s->target, &crash);
	if (core && pyu_crash_is_crash(&crash))
		return crash.tid > 0 ? pyu_stacks_find_thread(s, crash.tid, 0) : -1;
	// A live process, a debugger's target or a core a debugger wrote: no thread crashed; the
	// GIL holder is running, else the thread the core names first (the debugger's selected).
	for (uint32_t i = 0; i < s->thread_count; i++)
		if (s->threads[i].holds_gil == 1)
			return (int32_t)i;
	if (core && crash.tid > 0) {
		int32_t first = pyu_stacks_find_thread(s, crash.tid, 0);
		if (first >= 0)
			return first;
	}
	return s->thread_count ? 0 : -1;
}

static uint64_t fnv1a(uint64_t h, const char *p, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		h ^= (unsigned char)p[i];
		h *= FNV_PRIME;
	}
	return h;
}

static const char *basename_of(const char *path)
{
	const char *slash = strrchr(path, '/');
	return slash ? slash + 1 : path;
}

void pyu_signature_release(struct pyu_signature *sig)
{
	for (uint32_t i = 0; i < sig->frame_count; i++)
		free(sig->frames[i]);
	free(sig->frames);
	sig->frames = NULL;
	sig->frame_count = 0;
}

struct pyu_error *pyu_signature_compute(const struct pyu_stacks *s, int32_t thread,
					struct pyu_signature *ret)
{
	struct pyu_signature sig = {.hash = fnv1a(FNV_OFFSET, SIGNATURE_VERSION,
						  strlen(SIGNATURE_VERSION))};
	const struct pyu_thread_info *th =
		thread >= 0 && (uint32_t)thread < s->thread_count ? &s->threads[thread] : NULL;
	uint32_t n = th ? th->frame_count : 0;
	if (n > PYU_SIGNATURE_MAX_FRAMES)
		n = PYU_SIGNATURE_MAX_FRAMES;
	if (n) {
		sig.frames = calloc(n, sizeof(*sig.frames));
		if (!sig.frames)
			return &pyu_error_nomem;
	}
	for (uint32_t i = 0; i < n; i++) {
		const struct pyu_frame_info *f = &th->frames[i];
		if (f->kind != PYU_FRAME_PYTHON || f->code < 0 || (uint32_t)f->code >= s->code_count)
			continue;
		const struct pyu_code_info *c = &s->codes[f->code];
		const char *name = c->qualname ? c->qualname : c->name ? c->name : "???";
		char *entry = NULL;
		if (asprintf(&entry, "%s (%s)", name, c->filename ? basename_of(c->filename) : "???") <
		    0) {
			pyu_signature_release(&sig);
			return &pyu_error_nomem;
		}
		if (sig.frame_count && !strcmp(sig.frames[sig.frame_count - 1], entry)) {
			free(entry); // a recursion counts once, however deep
			continue;
		}
		sig.frames[sig.frame_count++] = entry;
		sig.hash = fnv1a(sig.hash, entry, strlen(entry));
		sig.hash = fnv1a(sig.hash, "\n", 1);
	}
	*ret = sig;
	return NULL;
}

static void json_crash(struct pyu_strbuf *sb, const struct pyu_stacks *s, int32_t thread)
{
	struct pyu_crash crash;
	bool dumped = s->target && pyu_target_crash(s->target, &crash);
	bool core = dumped && pyu_crash_is_crash(&crash); // the signal fields: a crash's only
	const struct pyu_thread_info *th = thread >= 0 ? &s->threads[thread] : NULL;
	pyu_strbuf_printf(sb, "\"crash\": {\"crashed\": %s, \"written_by\": %s, ",
			  core ? "true" : "false",
			  !dumped ? "null" : crash.by_debugger ? "\"debugger\"" : "\"kernel\"");
	pyu_strbuf_puts(sb, "\"native_thread_id\": ");
	if (core && crash.tid > 0)
		pyu_strbuf_printf(sb, "%" PRId64, crash.tid);
	else if (th && th->native_thread_id >= 0)
		pyu_strbuf_printf(sb, "%" PRId64, th->native_thread_id);
	else
		pyu_strbuf_puts(sb, "null");
	pyu_strbuf_puts(sb, ", \"thread_id\": ");
	if (th)
		pyu_strbuf_printf(sb, "%" PRIu64, th->thread_id);
	else
		pyu_strbuf_puts(sb, "null");
	pyu_strbuf_printf(sb, ", \"python_thread\": %s, \"signal\": ", th ? "true" : "false");
	if (core && crash.signal > 0)
		pyu_strbuf_printf(sb, "%" PRId32, crash.signal);
	else
		pyu_strbuf_puts(sb, "null");
	pyu_strbuf_puts(sb, ", \"signal_name\": ");
	pyu_strbuf_json_cstr(sb, core ? pyu_signal_name(crash.signal) : NULL);
	pyu_strbuf_puts(sb, ", \"signal_code\": ");
	if (core && crash.signal > 0 && crash.has_code)
		pyu_strbuf_printf(sb, "%" PRId32, crash.code);
	else
		pyu_strbuf_puts(sb, "null");
	pyu_strbuf_puts(sb, ", \"fault_address\": ");
	if (core && crash.has_address)
		pyu_strbuf_printf(sb, "\"0x%" PRIx64 "\"", crash.address);
	else
		pyu_strbuf_puts(sb, "null");
	pyu_strbuf_puts(sb, "}");
}

static void json_strings(struct pyu_strbuf *sb, char *const *list, uint32_t count)
{
	pyu_strbuf_putc(sb, '[');
	for (uint32_t i = 0; i < count; i++) {
		if (i)
			pyu_strbuf_puts(sb, ", ");
		pyu_strbuf_json_cstr(sb, list[i] ? list[i] : "?");
	}
	pyu_strbuf_putc(sb, ']');
}

PYU_PUBLIC struct pyu_error *pyu_format_triage(const struct pyu_stacks *s, const char *path,
					       char **ret)
{
	if (!s || !ret)
		return pyu_error_create(PYU_ERR_ARGUMENT, "no stacks");
	int32_t thread = pyu_stacks_crash_thread(s);
	struct pyu_signature sig;
	struct pyu_error *err = pyu_signature_compute(s, thread, &sig);
	if (err)
		return err;
	struct pyu_strbuf sb;
	pyu_strbuf_init(&sb, PYU_STRBUF_MAX);
	pyu_strbuf_puts(&sb, "{\"pyunwind\": 1, \"path\": ");
	pyu_strbuf_json_cstr(&sb, path);
	pyu_strbuf_puts(&sb, ", \"ok\": true, \"error\": null, \"python\": {\"version\": ");
	pyu_strbuf_json_cstr(&sb, s->version);
	pyu_strbuf_printf(&sb, ", \"hexversion\": %" PRIu64 ", \"debug_build\": %s, "
			  "\"free_threaded\": %s}, \"thread_count\": %u, ",
			  s->hexversion, s->debug_build ? "true" : "false",
			  s->free_threaded ? "true" : "false", s->thread_count);
	json_crash(&sb, s, thread);
	pyu_strbuf_printf(&sb, ", \"signature\": \"%016" PRIx64 "\", \"signature_frames\": ",
			  sig.hash);
	json_strings(&sb, sig.frames, sig.frame_count);
	// The exception the crashing thread was handling (an except block), as bt --json has it.
	pyu_stacks_read_thread_values(s);
	const struct pyu_thread_info *th = thread >= 0 ? &s->threads[thread] : NULL;
	pyu_strbuf_puts(&sb, ", \"exception\": ");
	pyu_format_json_exception(&sb, th);
	pyu_strbuf_puts(&sb, ", \"frames\": [");
	for (uint32_t i = 0; th && i < th->frame_count; i++) {
		if (i)
			pyu_strbuf_puts(&sb, ", ");
		pyu_format_json_frame(&sb, s, &th->frames[i]);
	}
	pyu_strbuf_puts(&sb, "], \"errors\": ");
	json_strings(&sb, s->errors, s->error_count);
	pyu_strbuf_puts(&sb, ", \"notes\": ");
	json_strings(&sb, s->notes, s->note_count);
	pyu_strbuf_puts(&sb, "}\n");
	pyu_signature_release(&sig);
	return pyu_strbuf_finish(&sb, ret);
}
