// main.c - the pyunwind command line: Python stacks of a live process or a core file without a
// debugger, for scripted triage and for testing the core alone. Prints exactly what the
// debugger commands print (the core formats it). A live process is held still with ptrace
// (PTRACE_SEIZE + PTRACE_INTERRUPT on every thread, no signal the program could see) while it
// is read, and released afterwards.
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <inttypes.h>
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
#include "target.h"

#define MAX_PATH_MAPS 64

static const char usage[] =
	"usage: pyunwind bt   [options] [--locals] PID | COREFILE [EXECUTABLE]\n"
	"       pyunwind line [options] [--frame N] [--table] PID | COREFILE [EXECUTABLE]\n"
	"       pyunwind list [options] [--frame N] [--range FIRST,LAST] PID | COREFILE [EXECUTABLE]\n"
	"       pyunwind locals [options] [--frame N] PID | COREFILE [EXECUTABLE]\n"
	"       pyunwind print [options] [--frame N] NAME[.ATTR...] PID | COREFILE [EXECUTABLE]\n"
	"       pyunwind tasks [options] [--tree] [--locals] PID | COREFILE [EXECUTABLE]\n"
	"       pyunwind heap [options] [--top N] [--min-size SIZE] [--biggest N] [--retained]\n"
	"                     PID | COREFILE [EXECUTABLE]\n"
	"       pyunwind heap [--json] --referrers ADDR PID | COREFILE [EXECUTABLE]\n"
	"       pyunwind heap [--json] [--retained] --path ADDR PID | COREFILE [EXECUTABLE]\n"
	"       pyunwind triage [--json] [-j N] CORE|DIR ...   (see pyunwind triage --help)\n"
	"       pyunwind --version\n"
	"\n"
	"Prints the Python stacks of a live process (PID) or of an ELF core file, as the py-bt,\n"
	"py-line, py-list, py-locals and py-print debugger commands do; tasks: the asyncio tasks,\n"
	"their coroutine stacks and who awaits whom, as py-tasks does; heap: the objects the\n"
	"collector tracks and those they refer to, per type, with their sizes, as py-heap does\n"
	"(a progress bar on stderr when it is a terminal; Ctrl-C stops the census and prints what\n"
	"it counted, marked partial, with exit status 130).\n"
	"\n"
	"  --all              bt, tasks: every thread (the default for bt and tasks)\n"
	"  --thread TID       only the thread with this kernel tid (or pthread id, 0x...)\n"
	"  --json             bt, locals, print, tasks, heap: JSON instead of text\n"
	"  --tree             tasks: the await graph as a tree (cycles marked)\n"
	"  --top N            heap: the N types with the most bytes (default 25; 0: every type;\n"
	"                     --json: every type unless given)\n"
	"  --min-size SIZE    heap: leave out types with fewer bytes in all (K, M, G, T)\n"
	"  --biggest N        heap: also the N largest objects (address, bytes, type, repr)\n"
	"  --referrers ADDR   heap: the objects that refer to the object at ADDR, and how\n"
	"  --path ADDR        heap: a shortest chain of references from a root (module,\n"
	"                     frame local, exception) to ADDR, as a Python expression\n"
	"  --retained         heap: the bytes each row's type, each largest object (or the\n"
	"                     --path object) keeps alive: what would be freed without it\n"
	"  --locals           bt: each frame's locals, each thread's name and exception;\n"
	"                     tasks: each coroutine frame's locals\n"
	"  --max-depth N      values: containers nested deeper print as ...\n"
	"  --max-items N      values: elements shown per container\n"
	"  --max-chars N      values: characters shown of a str or bytes\n"
	"  --max-digits N     values: decimal digits of an int before a short form\n"
	"  --max-repr N       values: bytes of one repr\n"
	"  --limit N          bt: at most N frames per thread\n"
	"  --no-source        bt: no source lines or carets\n"
	"  --native           bt: native frames too, with each Python frame placed inside the\n"
	"                     native frame that runs it (the interpreter's own frames hidden)\n"
	"  --native-all       bt: the same, keeping every native frame\n"
	"  --frame N          line, list, locals, print: Python frame #N of the thread (default 0,\n"
	"                     innermost)\n"
	"  --table            line: also the frame's whole decoded line table\n"
	"  --range A,B        list: lines A to B instead of 5 around the current one\n"
	"  --path-map FROM=TO read files the target names FROM... from TO... here (repeatable)\n"
	"  --sysroot DIR      read a file the target names /P from DIR/P (a copy of its root)\n"
	"  --search-path DIRS also look for the target's files as DIR/NAME in these\n"
	"                     colon-separated directories (repeatable); files are always\n"
	"                     checked by build ID, and fetched through debuginfod when\n"
	"                     $DEBUGINFOD_URLS names servers\n"
	"  --cwd DIR          the target's working directory: relative file names (a script\n"
	"                     started as `python app.py`) are read from DIR/NAME (default for a\n"
	"                     live process: its own; a core has none)\n"
	"  --no-stop          do not stop a live process while reading it\n"
	"  --max-unpacked SIZE  a compressed core: unpack at most SIZE bytes (K, M, G, T;\n"
	"                     default $PYUNWIND_MAX_UNPACKED or 16G)\n"
	"  --stats            print read counters and timing to stderr\n"
	"\n"
	"line, list, locals and print default to the thread that crashed (core files) or holds\n"
	"the GIL.\n"
	"Exit status: 0 ok, 1 error, 2 usage, 3 not a Python process, 4 unsupported version.\n";

static const char *const limit_options[] = {
	// Indexed by enum pyu_limit.
	NULL, "--max-depth", "--max-items", "--max-chars", "--max-digits", "--max-repr",
};
#define LIMIT_COUNT (sizeof(limit_options) / sizeof(limit_options[0]))

struct options {
	const char *command;
	bool json, source, stop, stats, table, has_thread, locals, native, native_all, tree;
	uint64_t limits[LIMIT_COUNT]; // 0 = default
	const char *path;             // print: NAME[.ATTR...]
	uint32_t limit, frame;
	uint32_t top;          // heap: rows shown (0 all)
	bool has_top;
	uint64_t min_size;     // heap: smallest type total shown
	uint32_t biggest;      // heap: largest objects shown
	uint64_t referrers;    // heap: the object whose referrers are shown (0: the census)
	uint64_t path_to;      // heap: the object a chain from a root is shown to (0: none)
	bool retained;         // heap: retained sizes (dominators)
	uint64_t thread; // tid or pthread id
	uint64_t max_unpacked; // 0: the library's default
	int64_t first, last;
	const char *maps[MAX_PATH_MAPS];
	int map_count;
	const char *sysroot;
	const char *cwd;
	const char *search[MAX_PATH_MAPS];
	int search_count;
	const char *target, *executable;
};

static int usage_error(const char *fmt, const char *arg)
{
	fprintf(stderr, "pyunwind: ");
	fprintf(stderr, fmt, arg);
	fprintf(stderr, "\n%s", usage);
	return 2;
}

static bool parse_u64(const char *s, uint64_t *ret)
{
	if (!s || !*s || *s == '-')
		return false;
	char *end;
	errno = 0;
	unsigned long long v = strtoull(s, &end, 0);
	if (errno || *end)
		return false;
	*ret = v;
	return true;
}

// The options only some commands take (the others go with every command); one a command
// does not take is a usage error, never silently ignored.
static const struct {
	const char *option, *commands; // commands: space-separated
} option_commands[] = {
	{"--all", "bt tasks"},
	{"--json", "bt locals print tasks heap"},
	{"--tree", "tasks"},
	{"--locals", "bt tasks"},
	{"--native", "bt"},
	{"--native-all", "bt"},
	{"--no-source", "bt tasks"},
	{"--table", "line"},
	{"--limit", "bt"},
	{"--frame", "line list locals print"},
	{"--range", "list"},
	{"--top", "heap"},
	{"--min-size", "heap"},
	{"--biggest", "heap"},
	{"--referrers", "heap"},
	{"--path", "heap"},
	{"--retained", "heap"},
	{"--max-", "bt locals print tasks"}, // every --max-* value limit
};

static bool command_takes(const char *command, const char *option)
{
	if (!strcmp(option, "--max-unpacked"))
		return true; // a core's, not a value's, limit
	for (size_t i = 0; i < sizeof(option_commands) / sizeof(option_commands[0]); i++) {
		const char *opt = option_commands[i].option;
		size_t n = strlen(opt);
		if (opt[n - 1] == '-' ? strncmp(option, opt, n) : strcmp(option, opt))
			continue;
		size_t len = strlen(command);
		for (const char *p = option_commands[i].commands; *p;) {
			size_t w = strcspn(p, " ");
			if (w == len && !strncmp(p, command, len))
				return true;
			p += w + (p[w] == ' ');
		}
		return false;
	}
	return true;
}

// Returns 0 to go on, 2 after a usage error, -1 after printing the help.
static int parse_args(int argc, char **argv, struct options *o)
{
	memset(o, 0, sizeof(*o));
	o->source = o->stop = true;
	if (argc < 2)
		return usage_error("%s", "no command");
	o->command = argv[1];
	if (strcmp(o->command, "bt") && strcmp(o->command, "line") && strcmp(o->command, "list") &&
	    strcmp(o->command, "locals") && strcmp(o->command, "print") &&
	    strcmp(o->command, "tasks") && strcmp(o->command, "heap"))
		return usage_error("unknown command '%s'", o->command);
	bool print = !strcmp(o->command, "print");
	int positional = 0;
	for (int i = 2; i < argc; i++) {
		const char *a = argv[i];
		const char *next = i + 1 < argc ? argv[i + 1] : NULL;
		uint64_t v;
		if (a[0] == '-' && a[1] == '-' && !command_takes(o->command, a)) {
			fprintf(stderr, "pyunwind: %s does not take %s\n", o->command, a);
			return 2;
		}
		if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
			fputs(usage, stdout);
			return -1;
		} else if (!strcmp(a, "--all")) {
			o->has_thread = false;
		} else if (!strcmp(a, "--json")) {
			o->json = true;
		} else if (!strcmp(a, "--locals")) {
			o->locals = true;
		} else if (!strcmp(a, "--tree")) {
			o->tree = true;
		} else if (!strcmp(a, "--native")) {
			o->native = true;
		} else if (!strcmp(a, "--native-all")) {
			o->native = o->native_all = true;
		} else if (!strcmp(a, "--no-source")) {
			o->source = false;
		} else if (!strcmp(a, "--no-stop")) {
			o->stop = false;
		} else if (!strcmp(a, "--stats")) {
			o->stats = true;
		} else if (!strcmp(a, "--table")) {
			o->table = true;
		} else if (!strcmp(a, "--limit")) {
			if (!parse_u64(next, &v) || v > UINT32_MAX)
				return usage_error("--limit needs a number, got '%s'", next ? next : "");
			o->limit = (uint32_t)v, i++;
		} else if (!strcmp(a, "--top")) {
			if (!parse_u64(next, &v) || v > UINT32_MAX)
				return usage_error("--top needs a number, got '%s'", next ? next : "");
			o->top = (uint32_t)v, o->has_top = true, i++;
		} else if (!strcmp(a, "--biggest")) {
			if (!parse_u64(next, &v) || v > 100000)
				return usage_error("--biggest needs a number up to 100000, got '%s'",
						   next ? next : "");
			o->biggest = (uint32_t)v, i++;
		} else if (!strcmp(a, "--referrers")) {
			if (!parse_u64(next, &v) || v == 0)
				return usage_error("--referrers needs an object's address (0x...), "
						   "got '%s'", next ? next : "");
			o->referrers = v, i++;
		} else if (!strcmp(a, "--path")) {
			if (!parse_u64(next, &v) || v == 0)
				return usage_error("--path needs an object's address (0x...), got '%s'",
						   next ? next : "");
			o->path_to = v, i++;
		} else if (!strcmp(a, "--retained")) {
			o->retained = true;
		} else if (!strcmp(a, "--min-size")) {
			if (!pyu_parse_size(next, &v))
				return usage_error("--min-size needs a size (digits and K, M, G or T), "
						   "got '%s'", next ? next : "");
			o->min_size = v, i++;
		} else if (!strcmp(a, "--max-unpacked")) {
			if (!pyu_parse_size(next, &v) || v == 0)
				return usage_error("--max-unpacked needs a size (digits and K, M, G "
						   "or T), got '%s'", next ? next : "");
			o->max_unpacked = v, i++;
		} else if (!strcmp(a, "--frame")) {
			if (!parse_u64(next, &v) || v > UINT32_MAX)
				return usage_error("--frame needs a number, got '%s'", next ? next : "");
			o->frame = (uint32_t)v, i++;
		} else if (!strcmp(a, "--thread")) {
			if (!parse_u64(next, &v))
				return usage_error("--thread needs a thread id, got '%s'",
						   next ? next : "");
			o->thread = v, o->has_thread = true, i++;
		} else if (!strcmp(a, "--range")) {
			long long f, l;
			char tail;
			if (!next || sscanf(next, "%lld,%lld%c", &f, &l, &tail) != 2 || f < 1 || l < f)
				return usage_error("--range needs FIRST,LAST, got '%s'", next ? next : "");
			o->first = f, o->last = l, i++;
		} else if (!strcmp(a, "--sysroot")) {
			if (!next || !*next)
				return usage_error("%s", "--sysroot needs a directory");
			o->sysroot = next, i++;
		} else if (!strcmp(a, "--cwd")) {
			if (!next || !*next)
				return usage_error("%s", "--cwd needs a directory");
			o->cwd = next, i++;
		} else if (!strcmp(a, "--search-path")) {
			if (!next || !*next)
				return usage_error("%s", "--search-path needs directories");
			if (o->search_count == MAX_PATH_MAPS)
				return usage_error("%s", "too many --search-path options");
			o->search[o->search_count++] = next, i++;
		} else if (!strcmp(a, "--path-map")) {
			if (!next || !strchr(next, '=') || next[0] == '=')
				return usage_error("--path-map needs FROM=TO, got '%s'", next ? next : "");
			if (o->map_count == MAX_PATH_MAPS)
				return usage_error("%s", "too many --path-map options");
			o->maps[o->map_count++] = next, i++;
		} else if (!strncmp(a, "--max-", 6)) {
			size_t k = 1;
			while (k < LIMIT_COUNT && strcmp(a, limit_options[k]))
				k++;
			if (k == LIMIT_COUNT)
				return usage_error("unknown option '%s'", a);
			if (!parse_u64(next, &v) || v == 0 || v > UINT32_MAX)
				return usage_error("%s needs a number of at least 1", a);
			o->limits[k] = v, i++;
		} else if (a[0] == '-' && a[1]) {
			return usage_error("unknown option '%s'", a);
		} else if (print && !o->path) {
			o->path = a;
		} else if (positional == 0) {
			o->target = a, positional++;
		} else if (positional == 1) {
			o->executable = a, positional++;
		} else {
			return usage_error("unexpected argument '%s'", a);
		}
	}
	if (print && !o->path)
		return usage_error("%s", "print needs a NAME[.ATTR...]");
	if (!o->target)
		return usage_error("%s", "no PID or core file given");
	return 0;
}

static bool all_digits(const char *s)
{
	if (!*s)
		return false;
	for (const char *p = s; *p; p++)
		if (!isdigit((unsigned char)*p))
			return false;
	return true;
}

// A live pid: all digits and /proc/PID exists.
static bool is_pid(const char *s, int32_t *ret)
{
	if (strlen(s) > 9 || !all_digits(s))
		return false;
	char path[32];
	snprintf(path, sizeof(path), "/proc/%s", s);
	struct stat st;
	if (stat(path, &st) < 0)
		return false;
	*ret = (int32_t)atoi(s);
	return *ret > 0;
}

static long now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000L + ts.tv_nsec / 1000000L;
}

// ---- running a command -------------------------------------------------------------------

static int fail(struct pyu_error *err, const char *what)
{
	int code = pyu_error_code(err);
	fprintf(stderr, "pyunwind: %s%s%s\n", what ? what : "", what ? ": " : "",
		pyu_error_message(err));
	pyu_error_destroy(err);
	return code == PYU_ERR_NOT_PYTHON ? 3 : code == PYU_ERR_UNSUPPORTED ? 4 : 1;
}

// The thread line and list show when none is named: the crashing thread of a core (its first
// NT_PRSTATUS), else the GIL holder, else the first.
static uint32_t default_thread(const struct pyu_stacks *s, bool core)
{
	if (core && pyu_target_thread_count(s->target) > 0) {
		int32_t i = pyu_stacks_find_thread(s, pyu_target_thread(s->target, 0), 0);
		if (i >= 0)
			return (uint32_t)i;
	}
	for (uint32_t i = 0; i < s->thread_count; i++)
		if (s->threads[i].holds_gil == 1)
			return i;
	return 0;
}

static int run(const struct options *o, struct pyu_target *t, bool core)
{
	struct pyu_stacks *s = NULL;
	struct pyu_error *err = pyu_stacks_collect(t, &s);
	if (err)
		return fail(err, NULL);
	uint32_t thread = 0;
	bool all = !o->has_thread && (!strcmp(o->command, "bt") || !strcmp(o->command, "tasks"));
	if (o->has_thread) {
		int32_t i = pyu_stacks_find_thread(s, (int64_t)o->thread, o->thread);
		if (i < 0) {
			fprintf(stderr, "pyunwind: no Python thread with id %" PRIu64 "\n", o->thread);
			pyu_stacks_destroy(s);
			return 1;
		}
		thread = (uint32_t)i;
	} else if (!all) {
		thread = default_thread(s, core);
	}
	char *out = NULL;
	bool interrupted = false; // heap: Ctrl-C stopped the census (exit status 130)
	for (size_t k = 1; k < LIMIT_COUNT && !err; k++)
		err = pyu_stacks_set_limit(s, (uint32_t)k, o->limits[k]);
	if (err) {
		pyu_stacks_destroy(s);
		return fail(err, NULL);
	}
	if (!strcmp(o->command, "bt") && o->native) {
		err = pyu_stacks_unwind_native(s);
		if (err) {
			pyu_stacks_destroy(s);
			return fail(err, "native frames");
		}
	}
	if (!strcmp(o->command, "bt")) {
		uint32_t flags = (o->json ? PYU_FMT_JSON : 0) | (o->source ? PYU_FMT_SOURCE : 0) |
				 (all ? PYU_FMT_ALL : 0) | (o->locals ? PYU_FMT_LOCALS : 0) |
				 (o->native ? PYU_FMT_NATIVE : 0) |
				 (o->native_all ? PYU_FMT_NATIVE_ALL : 0);
		err = pyu_format_bt(s, thread, flags, o->limit, &out);
	} else if (!strcmp(o->command, "tasks")) {
		uint32_t flags = (o->json ? PYU_FMT_JSON : 0) | (o->source ? PYU_FMT_SOURCE : 0) |
				 (all ? PYU_FMT_ALL : 0) | (o->tree ? PYU_FMT_TREE : 0) |
				 (o->locals ? PYU_FMT_LOCALS : 0);
		err = pyu_format_tasks(s, all ? -1 : (int32_t)thread, flags, &out);
	} else if (!strcmp(o->command, "heap")) {
		uint32_t top = o->has_top ? o->top : o->json ? 0 : 25;
		uint32_t flags = (o->json ? PYU_FMT_JSON : 0) | (o->retained ? PYU_FMT_RETAINED : 0);
		pyu_cli_progress_begin(s, "heap");
		if (o->path_to)
			err = pyu_format_heap_path(s, o->path_to, flags, &out);
		else if (o->referrers)
			err = pyu_format_heap_referrers(s, o->referrers, o->json ? PYU_FMT_JSON : 0,
							&out);
		else
			err = pyu_format_heap(s, flags, top, o->min_size, o->biggest, &out);
		interrupted = pyu_cli_progress_end(s);
	} else if (!strcmp(o->command, "locals")) {
		err = pyu_format_locals(s, thread, o->frame, o->json ? PYU_FMT_JSON : 0, &out);
	} else if (!strcmp(o->command, "print")) {
		err = pyu_format_print(s, thread, o->frame, o->path, o->json ? PYU_FMT_JSON : 0,
				       &out);
	} else if (!strcmp(o->command, "line")) {
		err = pyu_format_line(s, thread, o->frame,
				      PYU_FMT_SOURCE | (o->table ? PYU_FMT_TABLE : 0), &out);
	} else {
		err = pyu_format_list(s, thread, o->frame, o->first, o->last, &out);
	}
	uint64_t frames = 0;
	for (uint32_t i = 0; i < s->thread_count; i++)
		frames += s->threads[i].frame_count;
	uint32_t threads = s->thread_count;
	pyu_stacks_destroy(s);
	if (err)
		return fail(err, NULL);
	fputs(out, stdout);
	pyu_free(out);
	if (o->stats) {
		uint64_t backend = pyu_target_backend_reads(t), cached = pyu_target_cached_reads(t);
		fprintf(stderr,
			"stats: %u threads, %" PRIu64 " frames, %" PRIu64 " backend reads, %" PRIu64
			" cached reads, %.2f backend reads per frame\n",
			threads, frames, backend, cached,
			frames ? (double)backend / (double)frames : 0.0);
	}
	if (fflush(stdout) != 0)
		return 1;
	return interrupted ? 128 + 2 : 0; // as a shell reports a command SIGINT ended
}

int main(int argc, char **argv)
{
	if (argc > 1 && !strcmp(argv[1], "--version")) {
		printf("pyunwind ABI %u\n", pyu_abi_version());
		return 0;
	}
	if (argc > 1 && (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h"))) {
		fputs(usage, stdout);
		return 0;
	}
	if (argc > 1 && !strcmp(argv[1], "triage"))
		return pyu_cli_triage(argc - 1, argv + 1);
	struct options o;
	int rc = parse_args(argc, argv, &o);
	if (rc)
		return rc < 0 ? 0 : rc; // -1: help was asked for and printed
	long t0 = now_ms();
	struct pyu_error *err = NULL;
	int32_t pid = 0;
	bool live = is_pid(o.target, &pid);
	if (live && o.executable)
		return usage_error("%s", "an EXECUTABLE only goes with a core file");
	// Held before its mappings are read, so the picture is of one moment.
	struct pyu_hold *held = NULL;
	if (live && o.stop && (err = pyu_process_hold(pid, &held)) != NULL)
		return fail(err, o.target);
	bool holding = pyu_hold_count(held) > 0;
	struct pyu_target *t = NULL;
	err = live ? pyu_target_open_pid(pid, &t)
		   : pyu_target_open_core_limited(o.target, o.executable, o.max_unpacked, &t);
	if (err) {
		pyu_process_release(held);
		// All digits and no such file: a process that is gone (or never was), not a core.
		struct stat st;
		if (!live && all_digits(o.target) && stat(o.target, &st) < 0 && errno == ENOENT) {
			pyu_error_destroy(err);
			fprintf(stderr, "pyunwind: no process %s\n", o.target);
			return 1;
		}
		return fail(err, o.target);
	}
	for (int i = 0; i < o.map_count; i++) {
		char *from = strdup(o.maps[i]);
		if (!from) {
			rc = fail(&pyu_error_nomem, NULL);
			break;
		}
		char *eq = strchr(from, '=');
		*eq = '\0';
		err = pyu_target_add_path_map(t, from, eq + 1);
		free(from);
		if (err) {
			rc = fail(err, "--path-map");
			break;
		}
	}
	if (!rc && o.sysroot && (err = pyu_target_set_sysroot(t, o.sysroot)) != NULL)
		rc = fail(err, "--sysroot");
	if (!rc && o.cwd && (err = pyu_target_set_cwd(t, o.cwd)) != NULL)
		rc = fail(err, "--cwd");
	for (int i = 0; !rc && i < o.search_count; i++) {
		char *dirs = strdup(o.search[i]);
		if (!dirs) {
			rc = fail(&pyu_error_nomem, NULL);
			break;
		}
		for (char *save = NULL, *d = strtok_r(dirs, ":", &save); d && !rc;
		     d = strtok_r(NULL, ":", &save))
			if ((err = pyu_target_add_search_dir(t, d)) != NULL)
				rc = fail(err, "--search-path");
		free(dirs);
	}
	if (!rc)
		rc = run(&o, t, !live);
	pyu_process_release(held);
	if (o.stats)
		fprintf(stderr, "stats: %ld ms%s\n", now_ms() - t0,
			live ? (holding ? ", process held with ptrace" : ", process not stopped")
			     : "");
	pyu_target_destroy(t);
	return rc;
}
