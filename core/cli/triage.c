// triage.c - `pyunwind triage [--json] [-j N] CORE|DIR ...`: opens many core files at once (in
// worker threads; library handles are independent) and groups them by crash signature. Text: a
// table of signatures, most frequent first; --json: one document per core (JSON Lines), in the
// order the cores were named. A core that cannot be read is a row with its error, never the end
// of the run; the exit status says whether any core failed. Progress goes to stderr, only when
// stderr is a terminal.
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "cli.h"
#include "include/pyunwind.h"
#include "stacks.h"
#include "strbuf.h"
#include "target.h"
#include "triage.h"

#define MAX_JOBS 64
#define MAX_CORES 10000000u  // files one run looks at
#define MAX_DEPTH 32         // directory levels searched below each DIR
#define MAX_PATH_MAPS 64
#define TOP_FRAMES 3         // frames the text table shows per signature
#define FRAME_COLUMN 48      // width of the frames column (longer entries are cut)
#define PROGRESS_MS 100

static const char triage_usage[] =
	"usage: pyunwind triage [--json] [-j N] [--path-map FROM=TO] CORE|DIR ...\n"
	"\n"
	"Reads every core file given (directories are searched for ELF cores and gzip, zstd\n"
	"or xz compressed ones, systemd-coredump's included) and groups the crashes by\n"
	"signature: a hash of the crashing thread's Python functions and file names.\n"
	"Cores a debugger wrote (gdb's gcore) record no crash: they are grouped apart.\n"
	"\n"
	"  --json             one JSON document per core (JSON Lines) instead of the table\n"
	"  -j, --jobs N       read N cores at once (default: the number of CPUs)\n"
	"  --path-map FROM=TO read files the cores name FROM... from TO... here (repeatable)\n"
	"\n"
	"Exit status: 0 every core read, 1 some core failed, 2 usage.\n";

struct result {
	bool done, ok;
	int32_t code;        // pyu_error_code when !ok
	char *message;       // error message when !ok
	char *json;          // the document (ok or not), one line
	char version[32];
	int32_t signal;      // of a crash; 0 for none
	bool no_crash;       // a core a debugger wrote, or one whose signal is no crash
	struct pyu_signature sig;
};

struct run {
	char **paths;
	size_t count, cap;
	struct result *results;
	const char *maps[MAX_PATH_MAPS];
	int map_count;
	bool json, progress;
	pthread_mutex_t lock;
	size_t next;       // next core to hand to a worker
	size_t finished;   // cores done
	size_t printed;    // --json: documents written (in order)
	long start_ms, last_progress_ms;
	bool oom;
};

static long now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000L + ts.tv_nsec / 1000000L;
}

static int triage_usage_error(const char *what, const char *arg)
{
	fprintf(stderr, "pyunwind triage: %s%s\n%s", what, arg ? arg : "", triage_usage);
	return 2;
}

static bool add_path(struct run *r, const char *path)
{
	if (r->count >= MAX_CORES)
		return true; // bounded; the rest are not looked at
	if (r->count == r->cap) {
		size_t cap = r->cap ? r->cap * 2 : 256;
		char **p = realloc(r->paths, cap * sizeof(*p));
		if (!p)
			return false;
		r->paths = p, r->cap = cap;
	}
	char *copy = strdup(path);
	if (!copy)
		return false;
	r->paths[r->count++] = copy;
	return true;
}

// A file a directory search takes: an ELF file, or gzip, zstd or xz data (a compressed core).
static bool looks_like_core(const char *path)
{
	unsigned char m[6] = {0};
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
	if (fd < 0)
		return false;
	ssize_t n = read(fd, m, sizeof(m));
	close(fd);
	if (n >= 4 && !memcmp(m, "\x7f" "ELF", 4))
		return true;
	if (n >= 2 && m[0] == 0x1f && m[1] == 0x8b)
		return true;
	if (n >= 4 && !memcmp(m, "\x28\xb5\x2f\xfd", 4))
		return true;
	return n >= 6 && !memcmp(m, "\xfd" "7zXZ\0", 6);
}

static int compare_names(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

// Adds the cores under @dir, each directory's entries in name order.
static bool search_dir(struct run *r, const char *dir, int depth)
{
	DIR *d = opendir(dir);
	if (!d)
		return add_path(r, dir); // becomes a row with the reason
	char **names = NULL;
	size_t n = 0, cap = 0;
	bool ok = true;
	struct dirent *e;
	while (ok && (e = readdir(d))) {
		if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
			continue;
		if (n == cap) {
			cap = cap ? cap * 2 : 64;
			char **p = realloc(names, cap * sizeof(*p));
			if (!p) {
				ok = false;
				break;
			}
			names = p;
		}
		if (!(names[n] = strdup(e->d_name)))
			ok = false;
		else
			n++;
	}
	closedir(d);
	if (n)
		qsort(names, n, sizeof(*names), compare_names);
	for (size_t i = 0; i < n; i++) {
		char *path = NULL;
		if (ok && asprintf(&path, "%s%s%s", dir, dir[strlen(dir) - 1] == '/' ? "" : "/",
				   names[i]) < 0) {
			ok = false;
			path = NULL;
		}
		struct stat st;
		if (ok && lstat(path, &st) == 0) {
			if (S_ISDIR(st.st_mode) && depth < MAX_DEPTH)
				ok = search_dir(r, path, depth + 1);
			else if (S_ISREG(st.st_mode) && looks_like_core(path))
				ok = add_path(r, path);
		}
		free(path);
		free(names[i]);
	}
	free(names);
	return ok;
}

static char *error_document(const char *path, int32_t code, const char *message)
{
	static const char *const names[] = {
		"ok", "nomem", "io", "fault", "format", "not_python", "unsupported", "corrupt",
		"argument", "not_found",
	};
	struct pyu_strbuf sb;
	pyu_strbuf_init(&sb, PYU_STRBUF_MAX);
	pyu_strbuf_puts(&sb, "{\"pyunwind\": 1, \"path\": ");
	pyu_strbuf_json_cstr(&sb, path);
	pyu_strbuf_printf(&sb, ", \"ok\": false, \"error\": {\"code\": %" PRId32 ", \"name\": ",
			  code);
	pyu_strbuf_json_cstr(&sb, code >= 0 && (size_t)code < sizeof(names) / sizeof(names[0])
					  ? names[code] : "unknown");
	pyu_strbuf_puts(&sb, ", \"message\": ");
	pyu_strbuf_json_cstr(&sb, message);
	pyu_strbuf_puts(&sb, "}}\n");
	char *out = NULL;
	struct pyu_error *err = pyu_strbuf_finish(&sb, &out);
	if (err)
		pyu_error_destroy(err);
	return out;
}

// Records @err (released) as the result, with what the target knows is wrong with the core as
// a whole (it is truncated, say), which often explains the error.
static void fail_result(struct result *res, struct pyu_error *err, const struct pyu_target *t)
{
	const char *notice = t ? pyu_target_notice(t) : NULL;
	res->ok = false;
	res->code = pyu_error_code(err);
	if (notice && strstr(pyu_error_message(err), notice)) // collect's errors say it already
		notice = NULL;
	if (!notice || asprintf(&res->message, "%s (%s)", pyu_error_message(err), notice) < 0)
		res->message = strdup(pyu_error_message(err));
	pyu_error_destroy(err);
}

static void triage_one(const struct run *r, const char *path, struct result *res)
{
	struct pyu_target *t = NULL;
	struct pyu_stacks *s = NULL;
	struct pyu_error *err = pyu_target_open_core(path, NULL, &t);
	for (int i = 0; !err && i < r->map_count; i++) {
		char *from = strdup(r->maps[i]);
		if (!from) {
			err = &pyu_error_nomem;
			break;
		}
		char *eq = strchr(from, '=');
		*eq = '\0';
		err = pyu_target_add_path_map(t, from, eq + 1);
		free(from);
	}
	if (!err)
		err = pyu_stacks_collect(t, &s);
	char *doc = NULL;
	if (!err)
		err = pyu_format_triage(s, path, &doc);
	if (!err && r->json) {
		res->json = strdup(doc);
		if (!res->json)
			err = &pyu_error_nomem;
	}
	if (!err && !r->json)
		err = pyu_signature_compute(s, pyu_stacks_crash_thread(s), &res->sig);
	if (!err) {
		res->ok = true;
		snprintf(res->version, sizeof(res->version), "%s", s->version);
		struct pyu_crash crash;
		bool crashed = pyu_target_crash(t, &crash) && pyu_crash_is_crash(&crash);
		res->signal = crashed ? crash.signal : 0;
		res->no_crash = !crashed;
	} else {
		fail_result(res, err, t);
		if (r->json)
			res->json = error_document(path, res->code, res->message);
	}
	pyu_free(doc);
	pyu_stacks_destroy(s);
	pyu_target_destroy(t);
}

static void show_progress(struct run *r, bool last)
{
	long now = now_ms();
	if (!last && now - r->last_progress_ms < PROGRESS_MS)
		return;
	r->last_progress_ms = now;
	double secs = (double)(now - r->start_ms) / 1000.0;
	double rate = secs > 0 ? (double)r->finished / secs : 0.0;
	if (last) {
		fputs("\r\033[K", stderr);
		return;
	}
	long eta = rate > 0 ? (long)((double)(r->count - r->finished) / rate + 0.5) : -1;
	fprintf(stderr, "\r\033[Ktriage: %zu/%zu cores, %.1f cores/s, ETA ", r->finished, r->count,
		rate);
	if (eta < 0)
		fputs("?", stderr);
	else
		fprintf(stderr, "%ld:%02ld", eta / 60, eta % 60);
	fflush(stderr);
}

static void *worker(void *arg)
{
	struct run *r = arg;
	for (;;) {
		pthread_mutex_lock(&r->lock);
		size_t i = r->next < r->count ? r->next++ : r->count;
		pthread_mutex_unlock(&r->lock);
		if (i == r->count)
			return NULL;
		struct result res = {0};
		triage_one(r, r->paths[i], &res);
		pthread_mutex_lock(&r->lock);
		res.done = true;
		r->results[i] = res;
		r->finished++;
		// --json streams: print every document whose predecessors are all done.
		while (r->json && r->printed < r->count && r->results[r->printed].done) {
			struct result *p = &r->results[r->printed++];
			if (p->json)
				fputs(p->json, stdout);
			else
				r->oom = true;
			free(p->json);
			p->json = NULL;
		}
		if (r->json)
			fflush(stdout);
		if (r->progress)
			show_progress(r, false);
		pthread_mutex_unlock(&r->lock);
	}
}

// ---- the text table ------------------------------------------------------------------------

struct group {
	uint64_t hash;
	size_t first, count; // first: index of the example core
	bool no_crash;       // cores without a crash group apart from crashes, listed after them
};

static int compare_groups(const void *a, const void *b)
{
	const struct group *x = a, *y = b;
	if (x->no_crash != y->no_crash)
		return x->no_crash ? 1 : -1;
	if (x->count != y->count)
		return x->count > y->count ? -1 : 1;
	return x->first < y->first ? -1 : x->first > y->first;
}

static int compare_hash(const void *a, const void *b)
{
	const struct group *x = a, *y = b;
	if (x->no_crash != y->no_crash)
		return x->no_crash ? 1 : -1;
	if (x->hash != y->hash)
		return x->hash < y->hash ? -1 : 1;
	return x->first < y->first ? -1 : x->first > y->first;
}

// Prints @s cut to @width bytes (at a UTF-8 character boundary, "..." marking the cut), padded
// to @width when @pad.
static void print_cell(const char *s, size_t width, bool pad)
{
	size_t n = strlen(s);
	if (n > width) {
		n = width - 3;
		while (n > 0 && ((unsigned char)s[n] & 0xc0) == 0x80)
			n--;
		printf("%.*s...%*s", (int)n, s, pad ? (int)(width - 3 - n) : 0, "");
		return;
	}
	printf("%s%*s", s, pad ? (int)(width - n) : 0, "");
}

#define ROW "%7s  %-16s  %-7s  %-8s  " // count, signature, signal, Python; then frames, example
#define ROW_INDENT (7 + 2 + 16 + 2 + 7 + 2 + 8 + 2)

static bool print_table(const struct run *r)
{
	size_t ok = 0, groups = 0;
	for (size_t i = 0; i < r->count; i++)
		ok += r->results[i].ok;
	struct group *g = ok ? calloc(ok, sizeof(*g)) : NULL;
	if (ok && !g)
		return false;
	// Sort (no crash, hash, first) triples, then merge equal ones into groups.
	size_t n = 0, no_crash = 0;
	for (size_t i = 0; i < r->count; i++)
		if (r->results[i].ok) {
			g[n++] = (struct group){r->results[i].sig.hash, i, 1, r->results[i].no_crash};
			no_crash += r->results[i].no_crash;
		}
	if (n)
		qsort(g, n, sizeof(*g), compare_hash);
	for (size_t i = 0; i < n; i++) {
		if (groups && g[groups - 1].hash == g[i].hash &&
		    g[groups - 1].no_crash == g[i].no_crash)
			g[groups - 1].count++;
		else
			g[groups++] = g[i];
	}
	if (groups)
		qsort(g, groups, sizeof(*g), compare_groups);
	printf("%zu core%s: %zu read in %zu signature group%s, %zu failed", r->count,
	       r->count == 1 ? "" : "s", ok, groups, groups == 1 ? "" : "s", r->count - ok);
	if (no_crash)
		printf("; %zu with no crash (written by a debugger)", no_crash);
	putchar('\n');
	for (size_t k = 0; k < groups; k++) {
		if (k == 0 || g[k].no_crash != g[k - 1].no_crash) {
			if (g[k].no_crash)
				printf("\nNo crash: cores a debugger wrote (gdb's gcore), by the stack "
				       "of the thread holding the GIL, else the first thread:\n");
			printf("\n" ROW "%-*s  EXAMPLE\n", "COUNT", "SIGNATURE", "SIGNAL", "PYTHON",
			       FRAME_COLUMN, "TOP FRAMES (innermost first)");
		}
		const struct result *ex = &r->results[g[k].first];
		const char *sig = pyu_signal_name(ex->signal);
		char signum[16];
		if (!sig && ex->signal > 0) {
			snprintf(signum, sizeof(signum), "%" PRId32, ex->signal);
			sig = signum;
		}
		uint32_t shown = ex->sig.frame_count < TOP_FRAMES ? ex->sig.frame_count : TOP_FRAMES;
		char count[32], hash[32];
		snprintf(count, sizeof(count), "%zu", g[k].count);
		snprintf(hash, sizeof(hash), "%016" PRIx64, g[k].hash);
		printf(ROW, count, hash, sig ? sig : g[k].no_crash ? "none" : "-", ex->version);
		print_cell(shown ? ex->sig.frames[0] : "(no Python frames)", FRAME_COLUMN, true);
		printf("  %s\n", r->paths[g[k].first]);
		for (uint32_t i = 1; i < shown; i++) {
			printf("%*s", ROW_INDENT, "");
			print_cell(ex->sig.frames[i], FRAME_COLUMN, false);
			putchar('\n');
		}
		if (ex->sig.frame_count > shown)
			printf("%*s(%u more)\n", ROW_INDENT, "", ex->sig.frame_count - shown);
	}
	if (ok < r->count)
		printf("\nFailed:\n");
	for (size_t i = 0; i < r->count; i++) {
		const struct result *res = &r->results[i];
		if (!res->ok)
			printf("  %s: %s\n", r->paths[i], res->message ? res->message : "out of memory");
	}
	free(g);
	return true;
}

int pyu_cli_triage(int argc, char **argv)
{
	struct run r = {0};
	long jobs = sysconf(_SC_NPROCESSORS_ONLN);
	int rc = 0;
	char **inputs = calloc((size_t)argc, sizeof(*inputs));
	size_t input_count = 0;
	if (!inputs) {
		fprintf(stderr, "pyunwind triage: out of memory\n");
		return 1;
	}
	for (int i = 1; i < argc && !rc; i++) {
		const char *a = argv[i], *next = i + 1 < argc ? argv[i + 1] : NULL;
		if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
			fputs(triage_usage, stdout);
			free(inputs);
			return 0;
		} else if (!strcmp(a, "--json")) {
			r.json = true;
		} else if (!strcmp(a, "-j") || !strcmp(a, "--jobs")) {
			char *end = NULL;
			long v = next ? strtol(next, &end, 10) : 0;
			if (!next || *end || v < 1 || v > MAX_JOBS)
				rc = triage_usage_error("-j needs a number from 1 to 64, got ",
							next ? next : "nothing");
			jobs = v, i++;
		} else if (!strcmp(a, "--path-map")) {
			if (!next || !strchr(next, '=') || next[0] == '=')
				rc = triage_usage_error("--path-map needs FROM=TO, got ",
							next ? next : "nothing");
			else if (r.map_count == MAX_PATH_MAPS)
				rc = triage_usage_error("too many --path-map options", NULL);
			else
				r.maps[r.map_count++] = next, i++;
		} else if (a[0] == '-' && a[1]) {
			rc = triage_usage_error("unknown option ", a);
		} else {
			inputs[input_count++] = argv[i];
		}
	}
	if (!rc && !input_count)
		rc = triage_usage_error("no core file or directory given", NULL);
	bool ok = true;
	for (size_t i = 0; !rc && ok && i < input_count; i++) {
		struct stat st;
		if (stat(inputs[i], &st) == 0 && S_ISDIR(st.st_mode))
			ok = search_dir(&r, inputs[i], 0);
		else
			ok = add_path(&r, inputs[i]); // named files are read whatever they hold
	}
	free(inputs);
	if (!rc && !ok) {
		fprintf(stderr, "pyunwind triage: out of memory\n");
		rc = 1;
	}
	if (!rc && r.count) {
		r.results = calloc(r.count, sizeof(*r.results));
		if (!r.results) {
			fprintf(stderr, "pyunwind triage: out of memory\n");
			rc = 1;
		}
	}
	if (!rc) {
		if (jobs < 1)
			jobs = 1;
		if ((size_t)jobs > r.count)
			jobs = r.count ? (long)r.count : 1;
		if (jobs > MAX_JOBS)
			jobs = MAX_JOBS;
		r.progress = isatty(STDERR_FILENO);
		r.start_ms = now_ms();
		pthread_mutex_init(&r.lock, NULL);
		pthread_t threads[MAX_JOBS];
		long started = 0;
		for (; started < jobs; started++)
			if (pthread_create(&threads[started], NULL, worker, &r) != 0)
				break;
		if (started == 0)
			worker(&r); // no thread could start: do the work here
		for (long i = 0; i < started; i++)
			pthread_join(threads[i], NULL);
		if (r.progress)
			show_progress(&r, true);
		pthread_mutex_destroy(&r.lock);
		if (!r.json && !print_table(&r))
			r.oom = true;
		for (size_t i = 0; i < r.count; i++)
			if (!r.results[i].ok)
				rc = 1;
		if (r.oom) {
			fprintf(stderr, "pyunwind triage: out of memory\n");
			rc = 1;
		}
		if (fflush(stdout) != 0)
			rc = 1;
	}
	for (size_t i = 0; i < r.count; i++) {
		if (r.results) {
			free(r.results[i].message);
			free(r.results[i].json);
			pyu_signature_release(&r.results[i].sig);
		}
		free(r.paths[i]);
	}
	free(r.results);
	free(r.paths);
	return rc;
}
