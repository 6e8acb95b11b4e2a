// check_format.c - the formatters on hand-built snapshots: exact py-bt text and JSON (escaping,
// null fields, error frames, limits), source lines with carets (non-ASCII, wide characters,
// multi-line ranges, missing files), py-line with its table, py-list; plus the string builder
// and the source-file reader they rest on.
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "checkmain.h"
#include "source.h"
#include "stacks.h"
#include "strbuf.h"

#define NOL PYU_NO_LINE
#define NOC PYU_NO_COLUMN

// A source file in a fresh temporary directory; the path is static per test process.
static char tmpdir[64];
static char *make_file(const char *name, const char *text, size_t len)
{
	if (!tmpdir[0]) {
		strcpy(tmpdir, "/tmp/pyu-check-format-XXXXXX");
		ck_assert_ptr_nonnull(mkdtemp(tmpdir));
	}
	char *path = malloc(strlen(tmpdir) + strlen(name) + 2);
	sprintf(path, "%s/%s", tmpdir, name);
	FILE *f = fopen(path, "wb");
	ck_assert_ptr_nonnull(f);
	ck_assert_uint_eq(fwrite(text, 1, len, f), len);
	fclose(f);
	return path;
}
#define MAKE_FILE(name, lit) make_file(name, lit, sizeof(lit) - 1)

static void remove_file(char *path)
{
	unlink(path);
	free(path);
}

// Replaces every "@" in @tmpl with @path (expected outputs name the temporary files).
static char *subst(const char *tmpl, const char *path)
{
	static char out[8192];
	size_t o = 0;
	for (const char *p = tmpl; *p && o < sizeof(out) - 256; p++) {
		if (*p == '@') {
			o += (size_t)snprintf(out + o, sizeof(out) - o, "%s", path);
		} else {
			out[o++] = *p;
		}
	}
	out[o] = '\0';
	return out;
}

// Compares long texts; on a mismatch prints both in full (Check truncates its messages).
#define expect_str(got, want) expect_str_at(__LINE__, got, want)
static void expect_str_at(int line, const char *got, const char *want)
{
	if (strcmp(got, want)) {
		fprintf(stderr, "line %d: got:\n%s\n--- want:\n%s\n---\n", line, got, want);
		ck_abort_msg("output differs (line %d)", line);
	}
}

static struct pyu_location loc(int32_t line, int32_t end_line, int32_t col, int32_t end_col)
{
	struct pyu_location l = {line, end_line, col, end_col};
	return l;
}

static struct pyu_frame_info pyframe(int32_t code, struct pyu_location l, int64_t off,
				     uint64_t addr)
{
	struct pyu_frame_info f = {PYU_FRAME_PYTHON, code, l, off, addr, NULL};
	return f;
}

static struct pyu_frame_info errframe(uint64_t addr, char *reason)
{
	struct pyu_frame_info f = {PYU_FRAME_ERROR, -1, {NOL, NOL, NOC, NOC}, -1, addr, reason};
	return f;
}

static struct pyu_thread_info thread(uint64_t id, int64_t tid, int32_t gil, char *name,
				     struct pyu_frame_info *frames, uint32_t n)
{
	struct pyu_thread_info t = {id, tid, gil, 0, 0x1000, name, frames, n};
	return t;
}

static struct pyu_stacks snapshot(const char *version, uint64_t hex, struct pyu_code_info *codes,
				  uint32_t ncodes, struct pyu_thread_info *threads, uint32_t nthreads)
{
	struct pyu_stacks s;
	memset(&s, 0, sizeof(s));
	snprintf(s.version, sizeof(s.version), "%s", version);
	s.hexversion = hex;
	s.codes = codes;
	s.code_count = ncodes;
	s.threads = threads;
	s.thread_count = nthreads;
	return s;
}

static struct pyu_code_info code(uint64_t addr, char *name, char *qualname, char *file,
				 int32_t first)
{
	struct pyu_code_info c = {addr, name, qualname, file, first, PYU_LOCATIONS_311, NULL, 0, 0};
	return c;
}

static char *bt(const struct pyu_stacks *s, uint32_t thread, uint32_t flags, uint32_t limit)
{
	char *out = NULL;
	struct pyu_error *err = pyu_format_bt(s, thread, flags, limit, &out);
	if (err)
		ck_abort_msg("pyu_format_bt failed: %s", pyu_error_message(err));
	return out;
}

static const char X_PY[] = "import os\n"
			   "\n"
			   "class C:\n"
			   "    def f(self, a):\n"
			   "        return foo(a,\n"
			   "                   2)\n"
			   "    x = [1, 2]\n"
			   "main()\n";

START_TEST(test_bt_text_source_and_carets)
{
	char *path = MAKE_FILE("x.py", X_PY);
	struct pyu_code_info codes[] = {code(0x5000, "f", "C.f", path, 4),
					code(0x6000, "<module>", "<module>", path, 1)};
	struct pyu_frame_info frames[] = {
		pyframe(0, loc(5, 6, 15, 21), 24, 0x7000), // multi-line: carets to end of line
		pyframe(0, loc(5, 5, 15, 18), 20, 0x7100), // "foo"
		pyframe(1, loc(8, 8, 0, 6), 10, 0x7200),   // whole line: no carets
		pyframe(1, loc(7, 7, 4, 5), 12, 0x7300),   // "x"
		pyframe(1, loc(7, 7, NOC, NOC), 14, 0x7400),
		pyframe(1, loc(NOL, NOL, NOC, NOC), 16, 0x7500),
	};
	struct pyu_thread_info threads[] = {
		thread(0x7f0c1a2b3740, 4242, 1, "MainThread", frames, 6)};
	struct pyu_stacks s = snapshot("3.12.1", 0x030c01f0, codes, 2, threads, 1);
	char *out = bt(&s, 0, PYU_FMT_SOURCE, 0);
	expect_str(out, subst("Thread 0x7f0c1a2b3740 (tid 4242), holds the GIL:\n"
				    "#0  File \"@\", line 5, in C.f\n"
				    "        return foo(a,\n"
				    "               ^^^^^^\n"
				    "#1  File \"@\", line 5, in C.f\n"
				    "        return foo(a,\n"
				    "               ^^^\n"
				    "#2  File \"@\", line 8, in <module>\n"
				    "        main()\n"
				    "#3  File \"@\", line 7, in <module>\n"
				    "        x = [1, 2]\n"
				    "        ^\n"
				    "#4  File \"@\", line 7, in <module>\n"
				    "        x = [1, 2]\n"
				    "#5  File \"@\", line ?, in <module>\n",
				    path));
	free(out);
	out = bt(&s, 0, 0, 2);
	expect_str(out, subst("Thread 0x7f0c1a2b3740 (tid 4242), holds the GIL:\n"
				    "#0  File \"@\", line 5, in C.f\n"
				    "#1  File \"@\", line 5, in C.f\n"
				    "(4 more frames not shown: limit 2)\n",
				    path));
	free(out);
	// The thread's name with --locals alone (names are read on first use; plain text must
	// not depend on what was formatted before it).
	out = bt(&s, 0, PYU_FMT_LOCALS, 1);
	ck_assert_msg(!strncmp(out, "Thread 0x7f0c1a2b3740 (tid 4242) \"MainThread\", holds the "
			       "GIL:\n", 62), "no name with --locals:\n%s", out);
	free(out);
	remove_file(path);
}
END_TEST

// A deep recursion repeats one code object at one location: formatting keeps what it made for
// the last location of each code object. Frames alternating between locations, or with the
// same line but another instruction, must each still print their own.
START_TEST(test_repeated_frames)
{
	char *path = MAKE_FILE("rep.py", X_PY);
	struct pyu_code_info codes[] = {code(0x5000, "f", "C.f", path, 4),
					code(0x6000, "<module>", "<module>", path, 1)};
	enum { N = 105 };
	static struct pyu_frame_info frames[N];
	// Mostly "foo" at offset 20; every 7th the whole call at 24; every 11th "foo" at 22
	// (same location, another instruction); the last one <module>.
	for (int i = 0; i < N - 1; i++) {
		if (i % 7 == 3)
			frames[i] = pyframe(0, loc(5, 6, 15, 21), 24, 0x7000 + 0x100 * (uint64_t)i);
		else
			frames[i] = pyframe(0, loc(5, 5, 15, 18), i % 11 == 5 ? 22 : 20,
					    0x7000 + 0x100 * (uint64_t)i);
	}
	frames[N - 1] = pyframe(1, loc(8, 8, 0, 6), 10, 0xf000);
	struct pyu_thread_info threads[] = {thread(0x1000, 7, 1, NULL, frames, N)};
	struct pyu_stacks s = snapshot("3.12.1", 0x030c01f0, codes, 2, threads, 1);

	static char want[64 << 10];
	size_t w = (size_t)snprintf(want, sizeof(want), "Thread 0x1000 (tid 7), holds the GIL:\n");
	// As traceback folds them: the first three frames of the run on line 5 (one file, one
	// name: the instruction does not count), then how many more.
	for (int i = 0; i < 3; i++)
		w += (size_t)snprintf(want + w, sizeof(want) - w,
				      "#%-2d File \"%s\", line 5, in C.f\n"
				      "        return foo(a,\n"
				      "               %s\n",
				      i, path, i % 7 == 3 ? "^^^^^^" : "^^^");
	w += (size_t)snprintf(want + w, sizeof(want) - w,
			      "    [Previous line repeated %d more times]\n", N - 1 - 3);
	snprintf(want + w, sizeof(want) - w,
		 "#%d File \"%s\", line 8, in <module>\n        main()\n", N - 1, path);
	char *out = bt(&s, 0, PYU_FMT_SOURCE, 0);
	expect_str(out, want);
	free(out);
	// A limit counts the folded frames too: 3 shown, 7 folded, the rest not shown.
	w = (size_t)snprintf(want, sizeof(want), "Thread 0x1000 (tid 7), holds the GIL:\n");
	for (int i = 0; i < 3; i++)
		w += (size_t)snprintf(want + w, sizeof(want) - w,
				      "#%-2d File \"%s\", line 5, in C.f\n", i, path);
	snprintf(want + w, sizeof(want) - w, "    [Previous line repeated 7 more times]\n"
		 "(%d more frames not shown: limit 10)\n", N - 10);
	out = bt(&s, 0, 0, 10);
	expect_str(out, want);
	free(out);
	// 2.7's traceback folds nothing: every frame is printed.
	s.hexversion = 0x020712f0;
	out = bt(&s, 0, 0, 0);
	for (int i = 0; i < N - 1; i++) {
		char line[64];
		snprintf(line, sizeof(line), "\n#%-2d File ", i);
		ck_assert_msg(strstr(out, line), "frame %d missing", i);
	}
	ck_assert_ptr_null(strstr(out, "repeated"));
	free(out);
	s.hexversion = 0x030c01f0;
	// Frames shown with their locals are not folded either: each frame's are its own.
	out = bt(&s, 0, PYU_FMT_LOCALS, 0);
	for (int i = 0; i < N; i++) {
		char line[64];
		snprintf(line, sizeof(line), "\n#%-2d File ", i);
		ck_assert_msg(strstr(out, line), "frame %d missing with locals", i);
	}
	ck_assert_ptr_null(strstr(out, "repeated"));
	free(out);

	out = bt(&s, 0, PYU_FMT_JSON, 0);
	const char *p = out;
	for (int i = 0; i < N; i++) {
		char frame[512];
		if (i == N - 1)
			snprintf(frame, sizeof(frame),
				 "{\"kind\": \"python\", \"function\": \"<module>\", \"qualname\": "
				 "\"<module>\", \"file\": \"%s\", \"line\": 8, \"end_line\": 8, "
				 "\"column\": 0, \"end_column\": 6, \"instruction_offset\": 10, "
				 "\"code_address\": \"0x6000\", \"frame_address\": \"0xf000\"}",
				 path);
		else
			snprintf(frame, sizeof(frame),
				 "{\"kind\": \"python\", \"function\": \"f\", \"qualname\": \"C.f\", "
				 "\"file\": \"%s\", \"line\": 5, \"end_line\": %d, \"column\": 15, "
				 "\"end_column\": %d, \"instruction_offset\": %d, \"code_address\": "
				 "\"0x5000\", \"frame_address\": \"0x%x\"}",
				 path, i % 7 == 3 ? 6 : 5, i % 7 == 3 ? 21 : 18,
				 i % 7 == 3 ? 24 : i % 11 == 5 ? 22 : 20, 0x7000 + 0x100 * i);
		const char *at = strstr(p, frame);
		ck_assert_msg(at != NULL, "frame %d not found in order: %s", i, frame);
		p = at + strlen(frame);
	}
	free(out);
	remove_file(path);
}
END_TEST

START_TEST(test_carets_non_ascii)
{
	// "é" is 2 bytes, "名" 3 bytes and two columns wide.
	char *path = MAKE_FILE("ü.py", "def g():\n"
				       "    café = 名前(é, b)\n"
				       "\tyield  x  \n");
	struct pyu_code_info codes[] = {code(0x5000, "g", "g", path, 1)};
	struct pyu_frame_info frames[] = {
		// 名前(é, b): bytes 12..26; characters 11..19
		pyframe(0, loc(2, 2, 12, 25), 2, 0x10),
		// é alone: bytes 19..21
		pyframe(0, loc(2, 2, 19, 21), 4, 0x20),
		// x after a tab: traceback strips the tab; its trailing spaces shift the carets left
		pyframe(0, loc(3, 3, 8, 9), 6, 0x30),
	};
	struct pyu_thread_info threads[] = {thread(1, -1, -1, NULL, frames, 3)};
	struct pyu_stacks s = snapshot("3.11.7", 0x030b07f0, codes, 1, threads, 1);
	char *out = bt(&s, 0, PYU_FMT_SOURCE, 0);
	expect_str(out, subst("Thread 0x1:\n"
				    "#0  File \"@\", line 2, in g\n"
				    "        café = 名前(é, b)\n"
				    "               ^^^^^^^^^^\n"
				    "#1  File \"@\", line 2, in g\n"
				    "        café = 名前(é, b)\n"
				    "                    ^\n"
				    "#2  File \"@\", line 3, in g\n"
				    "        yield  x\n"
				    "             ^\n",
				    path));
	free(out);
	remove_file(path);
}
END_TEST

START_TEST(test_missing_and_pseudo_files)
{
	struct pyu_code_info codes[] = {
		code(0x1, "f", NULL, "/nonexistent/dir/x.py", 1),
		code(0x2, "<module>", NULL, "<string>", 1),
		code(0x3, "g", NULL, NULL, 1),
	};
	struct pyu_frame_info frames[] = {pyframe(0, loc(3, 3, NOC, NOC), 6, 0x10),
					  pyframe(1, loc(1, 1, NOC, NOC), 0, 0x20),
					  pyframe(2, loc(9, 9, NOC, NOC), 0, 0x30)};
	struct pyu_thread_info threads[] = {thread(0x10, 77, 0, NULL, frames, 3)};
	struct pyu_stacks s = snapshot("3.9.18", 0x030912f0, codes, 3, threads, 1);
	char *out = bt(&s, 0, PYU_FMT_SOURCE, 0);
	expect_str(out, "Thread 0x10 (tid 77):\n"
			      "#0  File \"/nonexistent/dir/x.py\", line 3, in f\n"
			      "#1  File \"<string>\", line 1, in <module>\n"
			      "#2  File \"???\", line 9, in g\n");
	free(out);
}
END_TEST

START_TEST(test_all_threads_errors_and_escaping)
{
	struct pyu_code_info codes[] = {
		code(0xabc, "we\"ird\\\n\x01", "Q.we\"ird", "/tmp/a\tb\xff.py", 3),
		code(0xdef, "old", NULL, "/o.py", 1),
	};
	struct pyu_frame_info t0[] = {
		pyframe(0, loc(4, 5, 0, 7), 30, 0x100),
		errframe(0x7f00dead0000, "frame not in the core"),
	};
	struct pyu_frame_info t1[] = {pyframe(1, loc(2, 2, NOC, NOC), -1, 0x200)};
	struct pyu_thread_info threads[] = {
		thread(140000000000001ull, 11, 1, "Main\"Thread", t0, 2),
		thread(140000000000002ull, -1, -1, NULL, t1, 1),
		thread(3, 12, 0, NULL, NULL, 0),
	};
	char *errors[] = {"thread list ended early"};
	struct pyu_stacks s = snapshot("3.14.10", 51252896, codes, 2, threads, 3);
	s.debug_build = true;
	s.errors = errors;
	s.error_count = 1;

	char *out = bt(&s, 0, PYU_FMT_ALL | PYU_FMT_SOURCE, 0);
	expect_str(out, "Python 3.14.10 (debug build), 3 threads\n"
			      "\n"
			      "Thread 0x7f544a44c001 (tid 11), holds the GIL:\n"
			      "#0  File \"/tmp/a\tb\xEF\xBF\xBD.py\", line 4, in Q.we\"ird\n"
			      "#1  <error: frame at 0x7f00dead0000: frame not in the core>\n"
			      "\n"
			      "Thread 0x7f544a44c002:\n"
			      "#0  File \"/o.py\", line 2, in old\n"
			      "\n"
			      "Thread 0x3 (tid 12):\n"
			      "    (no Python frames)\n"
			      "\n"
			      "<error: thread list ended early>\n");
	free(out);

	out = bt(&s, 0, PYU_FMT_ALL | PYU_FMT_JSON, 0);
	ck_assert_str_eq(
		out,
		"{\"pyunwind\": 1,\n"
		" \"python\": {\"version\": \"3.14.10\", \"hexversion\": 51252896, \"debug_build\": true, "
		"\"free_threaded\": false},\n"
		" \"threads\": [\n"
		"  {\"thread_id\": 140000000000001, \"native_thread_id\": 11, \"holds_gil\": true, "
		"\"name\": \"Main\\\"Thread\", \"exception\": null, \"interpreter_id\": 0, \"continues\": null, \"syscall\": null, \"restarted\": null, \"state\": null, \"signal\": null, "
		"\"fault_address\": null, \"cpu_seconds\": null, "
		"\"tstate_address\": \"0x1000\", "
		"\"frames_omitted\": 0,\n"
		"   \"frames\": [\n"
		"    {\"kind\": \"python\", \"function\": \"we\\\"ird\\\\\\n\\u0001\", \"qualname\": "
		"\"Q.we\\\"ird\", \"file\": \"/tmp/a\\tb\xEF\xBF\xBD.py\", \"line\": 4, \"end_line\": 5, "
		"\"column\": 0, \"end_column\": 7, \"instruction_offset\": 30, \"code_address\": "
		"\"0xabc\", \"frame_address\": \"0x100\"},\n"
		"    {\"kind\": \"error\", \"reason\": \"frame not in the core\", \"address\": "
		"\"0x7f00dead0000\"}]},\n"
		"  {\"thread_id\": 140000000000002, \"native_thread_id\": null, \"holds_gil\": null, "
		"\"name\": null, \"exception\": null, \"interpreter_id\": 0, \"continues\": null, \"syscall\": null, \"restarted\": null, \"state\": null, \"signal\": null, "
		"\"fault_address\": null, \"cpu_seconds\": null, "
		"\"tstate_address\": \"0x1000\", \"frames_omitted\": 0,\n"
		"   \"frames\": [\n"
		"    {\"kind\": \"python\", \"function\": \"old\", \"qualname\": null, \"file\": "
		"\"/o.py\", \"line\": 2, \"end_line\": 2, \"column\": null, \"end_column\": null, "
		"\"instruction_offset\": null, \"code_address\": \"0xdef\", \"frame_address\": "
		"\"0x200\"}]},\n"
		"  {\"thread_id\": 3, \"native_thread_id\": 12, \"holds_gil\": false, \"name\": null, "
		"\"exception\": null, \"interpreter_id\": 0, \"continues\": null, \"syscall\": null, \"restarted\": null, \"state\": null, \"signal\": null, "
		"\"fault_address\": null, \"cpu_seconds\": null, \"tstate_address\": \"0x1000\", \"frames_omitted\": 0,\n"
		"   \"frames\": []}],\n"
		" \"errors\": [\"thread list ended early\"],\n"
		" \"notes\": []}\n");
	free(out);

	// One thread, with a limit: the JSON says how many frames were left out.
	out = bt(&s, 0, PYU_FMT_JSON, 1);
	ck_assert_ptr_nonnull(strstr(out, "\"frames_omitted\": 1,"));
	ck_assert_ptr_null(strstr(out, "\"kind\": \"error\""));
	ck_assert_ptr_null(strstr(out, "140000000000002"));
	free(out);

	// The second thread alone, in text: no version line.
	out = bt(&s, 1, 0, 0);
	expect_str(out, "Thread 0x7f544a44c002:\n#0  File \"/o.py\", line 2, in old\n"
			"\n<error: thread list ended early>\n");
	free(out);
}
END_TEST

START_TEST(test_bad_indexes)
{
	struct pyu_code_info codes[] = {code(0x1, "f", NULL, "/x.py", 1)};
	struct pyu_frame_info frames[] = {pyframe(0, loc(1, 1, NOC, NOC), 0, 0x10),
					  pyframe(7, loc(1, 1, NOC, NOC), 0, 0x20)};
	struct pyu_thread_info threads[] = {thread(1, 2, 0, NULL, frames, 2)};
	struct pyu_stacks s = snapshot("3.8.18", 0x030812f0, codes, 1, threads, 1);
	char *out = (char *)"untouched";
	struct pyu_error *err = pyu_format_bt(&s, 1, 0, 0, &out);
	ck_assert_int_eq(pyu_error_code(err), PYU_ERR_NOT_FOUND);
	expect_str(out, "untouched");
	pyu_error_destroy(err);
	err = pyu_format_line(&s, 0, 2, 0, &out);
	ck_assert_int_eq(pyu_error_code(err), PYU_ERR_NOT_FOUND);
	pyu_error_destroy(err);
	err = pyu_format_list(&s, 0, 1, 0, 0, &out); // code index out of range
	ck_assert_int_eq(pyu_error_code(err), PYU_ERR_NOT_FOUND);
	pyu_error_destroy(err);
	err = pyu_format_bt(NULL, 0, PYU_FMT_ALL, 0, &out);
	ck_assert_int_eq(pyu_error_code(err), PYU_ERR_ARGUMENT);
	pyu_error_destroy(err);
	// A frame whose code index is out of range prints as an error frame, never crashes.
	out = bt(&s, 0, 0, 0);
	expect_str(out, "Thread 0x1 (tid 2):\n"
			      "#0  File \"/x.py\", line 1, in f\n"
			      "#1  <error: frame at 0x20: unreadable frame>\n");
	free(out);
}
END_TEST

// def f(a):
//     b = a + 1
//     while b > 10:
//         b -= 3
//     return (b,
//             a)
// compiled by CPython 3.11.7 (cpython-internals.md, 6.4); the expected ranges below are what
// that interpreter's co_positions() gives for every code unit.
static const char F_PY[] = "def f(a):\n"
			   "    b = a + 1\n"
			   "    while b > 10:\n"
			   "        b -= 3\n"
			   "    return (b,\n"
			   "            a)\n";
static uint8_t f_table_311[] = {
	0x80, 0x00, 0xd8, 0x08, 0x09, 0x88, 0x41, 0x89, 0x05, 0x80, 0x41, 0xd8, 0x0a, 0x0b,
	0x88, 0x62, 0x8a, 0x26, 0x88, 0x26, 0xd8, 0x08, 0x09, 0x88, 0x51, 0x89, 0x06, 0x88,
	0x01, 0xf0, 0x03, 0x00, 0x0b, 0x0c, 0x88, 0x62, 0x8a, 0x26, 0x88, 0x26, 0xe0, 0x0c,
	0x0d, 0xd8, 0x0c, 0x0d, 0xf0, 0x03, 0x01, 0x0c, 0x0f, 0xf0, 0x00, 0x01, 0x05, 0x0f};

START_TEST(test_line_and_table)
{
	char *path = MAKE_FILE("f.py", F_PY);
	struct pyu_code_info codes[] = {code(0xc0de, "f", "f", path, 1)};
	codes[0].table = f_table_311;
	codes[0].table_len = sizeof(f_table_311);
	codes[0].code_len = 54;
	struct pyu_frame_info frames[] = {pyframe(0, loc(5, 6, 11, 14), 50, 0xf00)};
	struct pyu_thread_info threads[] = {thread(1, 2, 1, NULL, frames, 1)};
	struct pyu_stacks s = snapshot("3.11.7", 0x030b07f0, codes, 1, threads, 1);
	char *out = NULL;
	ck_assert_ptr_null(pyu_format_line(&s, 0, 0, PYU_FMT_SOURCE, &out));
	expect_str(out, subst("#0  File \"@\", line 5, in f\n"
				    "        return (b,\n"
				    "               ^^^\n"
				    "    line 5, end_line 6, column 11, end_column 14\n"
				    "    instruction_offset 50, code object 0xc0de, frame 0xf00\n",
				    path));
	free(out);
	ck_assert_ptr_null(pyu_format_line(&s, 0, 0, PYU_FMT_SOURCE | PYU_FMT_TABLE, &out));
	expect_str(out, subst("#0  File \"@\", line 5, in f\n"
				    "        return (b,\n"
				    "               ^^^\n"
				    "    line 5, end_line 6, column 11, end_column 14\n"
				    "    instruction_offset 50, code object 0xc0de, frame 0xf00\n"
				    "Line table (locations, PEP 657), firstlineno 1, 54 bytes of "
				    "bytecode, 56 bytes of table:\n"
				    "     start    end   line end_line column end_column\n"
				    "          0      2      1        1      0          0\n"
				    "          2      4      2        2      8          9\n"
				    "          4      6      2        2     12         13\n"
				    "          6     10      2        2      8         13\n"
				    "         10     12      2        2      4          5\n"
				    "         12     14      3        3     10         11\n"
				    "         14     16      3        3     14         16\n"
				    "         16     22      3        3     10         16\n"
				    "         22     24      3        3     10         16\n"
				    "         24     26      4        4      8          9\n"
				    "         26     28      4        4     13         14\n"
				    "         28     32      4        4      8         14\n"
				    "         32     34      4        4      8          9\n"
				    "         34     36      3        3     10         11\n"
				    "         36     38      3        3     14         16\n"
				    "         38     44      3        3     10         16\n"
				    "         44     46      3        3     10         16\n"
				    "         46     48      5        5     12         13\n"
				    "         48     50      6        6     12         13\n"
				    "  ->     50     52      5        6     11         14\n"
				    "         52     54      5        6      4         14\n",
				    path));
	free(out);
	// A corrupt table: the ranges before the damage, then the reason.
	uint8_t bad[] = {0x80, 0x00, 0xf0, 0x43};
	codes[0].table = bad;
	codes[0].table_len = sizeof(bad);
	ck_assert_ptr_null(pyu_format_line(&s, 0, 0, PYU_FMT_TABLE, &out));
	ck_assert_ptr_nonnull(strstr(out, "          0      2      1        1      0          0\n"
					  "<error: line table corrupt after 1 ranges>\n"));
	free(out);
	remove_file(path);
}
END_TEST

START_TEST(test_line_error_frame)
{
	struct pyu_frame_info frames[] = {errframe(0x40, "cycle at 0x40")};
	struct pyu_thread_info threads[] = {thread(1, 2, 1, NULL, frames, 1)};
	struct pyu_stacks s = snapshot("3.13.0", 0x030d00f0, NULL, 0, threads, 1);
	char *out = NULL;
	ck_assert_ptr_null(pyu_format_line(&s, 0, 0, PYU_FMT_TABLE, &out));
	expect_str(out, "#0  <error: frame at 0x40: cycle at 0x40>\n");
	free(out);
}
END_TEST

START_TEST(test_list)
{
	char text[4096] = "";
	for (int i = 1; i <= 20; i++)
		sprintf(text + strlen(text), i == 3 ? "def f():\n" : "line%d\n", i);
	char *path = make_file("l.py", text, strlen(text));
	struct pyu_code_info codes[] = {code(0x1, "f", NULL, path, 3),
					code(0x2, "g", NULL, "/nonexistent.py", 3)};
	struct pyu_frame_info frames[] = {pyframe(0, loc(12, 12, NOC, NOC), 0, 0x10),
					  pyframe(0, loc(2, 2, NOC, NOC), 0, 0x20),
					  pyframe(0, loc(NOL, NOL, NOC, NOC), 0, 0x30),
					  pyframe(1, loc(1, 1, NOC, NOC), 0, 0x40)};
	struct pyu_thread_info threads[] = {thread(1, 2, 1, NULL, frames, 4)};
	struct pyu_stacks s = snapshot("3.10.13", 0x030a0df0, codes, 2, threads, 1);
	char *out = NULL;
	ck_assert_ptr_null(pyu_format_list(&s, 0, 0, 0, 0, &out));
	expect_str(out, "   7    line7\n   8    line8\n   9    line9\n  10    line10\n"
			      "  11    line11\n >12    line12\n  13    line13\n  14    line14\n"
			      "  15    line15\n  16    line16\n  17    line17\n");
	free(out);
	ck_assert_ptr_null(pyu_format_list(&s, 0, 1, 0, 0, &out));
	expect_str(out, "   1    line1\n  >2    line2\n   3    def f():\n   4    line4\n"
			      "   5    line5\n   6    line6\n   7    line7\n");
	free(out);
	ck_assert_ptr_null(pyu_format_list(&s, 0, 2, 18, 30, &out)); // no line: firstlineno
	expect_str(out, "  18    line18\n  19    line19\n  20    line20\n");
	free(out);
	struct pyu_error *err = pyu_format_list(&s, 0, 0, 21, 22, &out);
	ck_assert_int_eq(pyu_error_code(err), PYU_ERR_NOT_FOUND);
	ck_assert_ptr_nonnull(strstr(pyu_error_message(err), "past the end"));
	pyu_error_destroy(err);
	err = pyu_format_list(&s, 0, 0, 5, 4, &out);
	ck_assert_int_eq(pyu_error_code(err), PYU_ERR_ARGUMENT);
	pyu_error_destroy(err);
	err = pyu_format_list(&s, 0, 3, 0, 0, &out);
	ck_assert_int_eq(pyu_error_code(err), PYU_ERR_IO);
	ck_assert_str_eq(pyu_error_message(err),
			 "source file \"/nonexistent.py\" is not readable here");
	pyu_error_destroy(err);
	remove_file(path);
}
END_TEST

START_TEST(test_changed_source)
{
	char *path = MAKE_FILE("c.py", "import os\n"
				       "x = 1\n"
				       "@decorated\n"
				       "def deco(): pass\n"
				       "class K:\n"
				       "    f = lambda: go()\n"
				       "    def method(self):\n"
				       "        return 1\n");
	struct pyu_code_info codes[] = {
		code(0x1, "g", NULL, path, 2),        // line 2 defines no g: the file changed
		code(0x2, "deco", NULL, path, 3),     // a decorator line
		code(0x3, "K", NULL, path, 5),        // a class body
		code(0x4, "<lambda>", NULL, path, 6), // a lambda
		code(0x5, "method", NULL, path, 7),
		code(0x6, "method", NULL, path, 70),  // the file got shorter
	};
	struct pyu_frame_info frames[] = {
		pyframe(0, loc(2, 2, NOC, NOC), 0, 0x10), pyframe(1, loc(4, 4, NOC, NOC), 0, 0x20),
		pyframe(2, loc(6, 6, NOC, NOC), 0, 0x30), pyframe(3, loc(6, 6, NOC, NOC), 0, 0x40),
		pyframe(4, loc(8, 8, NOC, NOC), 0, 0x50), pyframe(5, loc(9, 9, NOC, NOC), 0, 0x60),
		pyframe(4, loc(80, 80, NOC, NOC), 0, 0x70)};
	struct pyu_thread_info threads[] = {thread(1, 2, 1, NULL, frames, 7)};
	struct pyu_stacks s = snapshot("3.10.13", 0x030a0df0, codes, 6, threads, 1);
	char *out = bt(&s, 0, PYU_FMT_SOURCE, 0);
	expect_str(out, subst("Thread 0x1 (tid 2), holds the GIL:\n"
			      "#0  File \"@\", line 2, in g\n"
			      "        (source not shown: the file has changed since this code was "
			      "compiled)\n"
			      "#1  File \"@\", line 4, in deco\n"
			      "        def deco(): pass\n"
			      "#2  File \"@\", line 6, in K\n"
			      "        f = lambda: go()\n"
			      "#3  File \"@\", line 6, in <lambda>\n"
			      "        f = lambda: go()\n"
			      "#4  File \"@\", line 8, in method\n"
			      "        return 1\n"
			      "#5  File \"@\", line 9, in method\n"
			      "        (source not shown: the file has changed since this code was "
			      "compiled)\n"
			      "#6  File \"@\", line 80, in method\n"
			      "        (source not shown: the file has changed since this code was "
			      "compiled)\n",
			      path));
	free(out);
	ck_assert_ptr_null(pyu_format_list(&s, 0, 0, 1, 2, &out));
	expect_str(out, "(the file has changed since this code was compiled: its lines may not be "
			"the ones running)\n"
			"   1    import os\n"
			"  >2    x = 1\n");
	free(out);
	remove_file(path);
}
END_TEST

START_TEST(test_source_reader)
{
	char *path = MAKE_FILE("s.py", "\xEF\xBB\xBF"
				       "one\r\ntwo\rthree\n\nfive");
	struct pyu_source_cache *c = pyu_source_cache_create(NULL);
	const char *l;
	size_t n;
	ck_assert_int_eq(pyu_source_line_count(c, path), 5);
	ck_assert(pyu_source_line(c, path, 1, &l, &n));
	ck_assert_int_eq(n, 3);
	ck_assert(!memcmp(l, "one", 3));
	ck_assert(pyu_source_line(c, path, 2, &l, &n) && n == 3 && !memcmp(l, "two", 3));
	ck_assert(pyu_source_line(c, path, 3, &l, &n) && n == 5 && !memcmp(l, "three", 5));
	ck_assert(pyu_source_line(c, path, 4, &l, &n) && n == 0);
	ck_assert(pyu_source_line(c, path, 5, &l, &n) && n == 4 && !memcmp(l, "five", 4));
	ck_assert(!pyu_source_line(c, path, 6, &l, &n));
	ck_assert(!pyu_source_line(c, path, 0, &l, &n));
	ck_assert(!pyu_source_line(c, path, -1, &l, &n));
	ck_assert_int_eq(pyu_source_line_count(c, "/"), -1);          // a directory
	ck_assert_int_eq(pyu_source_line_count(c, "<stdin>"), -1);    // pseudo-name
	ck_assert_int_eq(pyu_source_line_count(c, "/nonexistent"), -1);
	// More files than the cache holds: older ones are evicted and read again.
	for (int i = 0; i < 40; i++)
		ck_assert_int_eq(pyu_source_line_count(c, i % 2 ? path : "/nonexistent"),
				 i % 2 ? 5 : -1);
	pyu_source_cache_destroy(c);
	ck_assert(!pyu_source_line(NULL, path, 1, &l, &n));
	char *empty = MAKE_FILE("e.py", "");
	c = pyu_source_cache_create(NULL);
	ck_assert_int_eq(pyu_source_line_count(c, empty), 0);
	pyu_source_cache_destroy(c);
	remove_file(empty);
	remove_file(path);
}
END_TEST

START_TEST(test_strbuf_and_utf8)
{
	struct pyu_strbuf sb;
	pyu_strbuf_init(&sb, 8);
	pyu_strbuf_puts(&sb, "12345678");
	char *out = NULL;
	ck_assert_ptr_null(pyu_strbuf_finish(&sb, &out));
	expect_str(out, "12345678");
	free(out);
	pyu_strbuf_init(&sb, 8);
	pyu_strbuf_puts(&sb, "1234");
	pyu_strbuf_printf(&sb, "%s", "56789");
	pyu_strbuf_puts(&sb, "x"); // stays failed
	out = (char *)"untouched";
	struct pyu_error *err = pyu_strbuf_finish(&sb, &out);
	ck_assert_ptr_nonnull(err);
	expect_str(out, "untouched");
	pyu_error_destroy(err);

	pyu_strbuf_init(&sb, PYU_STRBUF_MAX);
	pyu_strbuf_printf(&sb, "%0300d|", 7); // longer than the printf fast path
	const char raw[] = "a\xC3\xA9\xE2\x82\x41\xF0\x9F\x98\x80\xED\xA0\x80\xC0\xAF\x7F\x1b";
	pyu_strbuf_json_string(&sb, raw, sizeof(raw) - 1);
	pyu_strbuf_text(&sb, raw, sizeof(raw) - 1);
	ck_assert_ptr_null(pyu_strbuf_finish(&sb, &out));
	expect_str(out + 301,
			 // JSON: é kept, E2 82 (truncated) one U+FFFD, emoji kept, each byte of a
			 // surrogate and of an overlong replaced, DEL and ESC escaped.
			 "\"a\xC3\xA9\xEF\xBF\xBD" "A\xF0\x9F\x98\x80\xEF\xBF\xBD\xEF\xBF\xBD"
			 "\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD\\u007f\\u001b\""
			 "a\xC3\xA9\xEF\xBF\xBD" "A\xF0\x9F\x98\x80\xEF\xBF\xBD\xEF\xBF\xBD"
			 "\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD\\x7f\\x1b");
	free(out);
	// Character counts as Python decodes with replacement.
	ck_assert_uint_eq(pyu_utf8_chars("a\xC3\xA9z", 4, 3), 2);
	ck_assert_uint_eq(pyu_utf8_chars("a\xC3\xA9z", 4, 2), 2); // cut inside é: one U+FFFD
	ck_assert_uint_eq(pyu_utf8_chars("a\xC3\xA9z", 4, 99), 3);
	uint32_t cp;
	ck_assert_uint_eq(pyu_utf8_next((const unsigned char *)"\xF4\x90\x80\x80", 4, &cp), 1);
	ck_assert_uint_eq(cp, 0xFFFD);
	ck_assert_uint_eq(pyu_utf8_next((const unsigned char *)"\xF4\x8F\xBF\xBF", 4, &cp), 4);
	ck_assert_uint_eq(cp, 0x10FFFF);
	// Hex as printf's "0x%" PRIx64 gives it, at every digit count (odd and even).
	pyu_strbuf_init(&sb, PYU_STRBUF_MAX);
	char want[4096] = "";
	size_t wl = 0;
	for (unsigned bits = 0; bits <= 64; bits++) {
		uint64_t v = bits == 64 ? UINT64_MAX : bits ? (1ull << bits) - 1 : 0;
		pyu_strbuf_hex(&sb, v);
		pyu_strbuf_putc(&sb, ' ');
		wl += (size_t)snprintf(want + wl, sizeof(want) - wl, "0x%" PRIx64 " ", v);
		if (bits >= 4) {
			pyu_strbuf_hex(&sb, 1ull << (bits - 1));
			pyu_strbuf_putc(&sb, ' ');
			wl += (size_t)snprintf(want + wl, sizeof(want) - wl, "0x%" PRIx64 " ",
					       (uint64_t)1 << (bits - 1));
		}
	}
	ck_assert_ptr_null(pyu_strbuf_finish(&sb, &out));
	expect_str(out, want);
	free(out);
	// Room written in place: counted up to what was asked for, and nothing once failed.
	pyu_strbuf_init(&sb, 8);
	char *p = pyu_strbuf_room(&sb, 5);
	ck_assert_ptr_nonnull(p);
	memcpy(p, "abcde", 5);
	pyu_strbuf_commit(&sb, 3);
	ck_assert_ptr_null(pyu_strbuf_room(&sb, 6)); // 3 + 6 > 8
	pyu_strbuf_commit(&sb, 1);                  // no room was given: nothing counted
	err = pyu_strbuf_finish(&sb, &out);
	ck_assert_ptr_nonnull(err);
	pyu_error_destroy(err);
	pyu_strbuf_init(&sb, 8);
	p = pyu_strbuf_room(&sb, 8);
	ck_assert_ptr_nonnull(p);
	memcpy(p, "12345678", 8);
	pyu_strbuf_commit(&sb, 8);
	ck_assert_ptr_null(pyu_strbuf_finish(&sb, &out));
	expect_str(out, "12345678");
	free(out);
}
END_TEST

// A thread's handled exception under its header (with locals): its traceback as the target's
// traceback module prints it: an instruction without a line as "line None" (3.12+, whose
// tb_lineno is None there); a line not read here, or on older versions, left out.
START_TEST(test_handled_exception_text)
{
	struct pyu_tb_entry entries[] = {
		{"/app/main.py", "main", 12, PYU_TB_LINE_TB_LINENO, false},
		{"/app/lib.py", "<genexpr>", -1, PYU_TB_LINE_NO_LINE, false},
		{"/app/gone.py", "g", -1, PYU_TB_LINE_NONE, false}, // its table was unreadable
	};
	struct pyu_thread_info threads[] = {thread(0x10, 7, 0, NULL, NULL, 0)};
	threads[0].exc_repr = "ValueError('x')";
	threads[0].exc_type = "ValueError";
	threads[0].exc_tb = (struct pyu_traceback){entries, 3, NULL};
	// format_exception's last line: the type and str(exc)
	struct pyu_exc_node node = {.address = 0x1000, .type = "ValueError", .text = "x",
				    .cause = -1, .context = -1};
	threads[0].exc_chain = (struct pyu_exc_chain){&node, 1, NULL};
	static const struct {
		const char *version;
		uint64_t hex;
		const char *second;
	} cases[] = {
		{"3.12.1", 0x030c01f0, "        File \"/app/lib.py\", line None, in <genexpr>\n"},
		{"3.11.7", 0x030b07f0, "        File \"/app/lib.py\", in <genexpr>\n"},
		{"2.7.18", 0x020712f0, "        File \"/app/lib.py\", in <genexpr>\n"},
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct pyu_stacks s = snapshot(cases[i].version, cases[i].hex, NULL, 0, threads, 1);
		char *out = bt(&s, 0, PYU_FMT_ALL | PYU_FMT_LOCALS, 0);
		char want[512];
		snprintf(want, sizeof(want),
			 "Thread 0x10 (tid 7):\n"
			 "    handling ValueError('x')\n"
			 "      Traceback (most recent call last):\n"
			 "        File \"/app/main.py\", line 12, in main\n%s"
			 "        File \"/app/gone.py\", in g\n"
			 "      ValueError: x\n"
			 "    (no Python frames)\n", cases[i].second);
		ck_assert_msg(strstr(out, want), "want\n%s\nin\n%s", want, out);
		free(out);
	}
}
END_TEST

static Suite *format_suite(void)
{
	Suite *s = suite_create("format");
	TCase *tc = tcase_create("format");
	tcase_add_test(tc, test_bt_text_source_and_carets);
	tcase_add_test(tc, test_repeated_frames);
	tcase_add_test(tc, test_carets_non_ascii);
	tcase_add_test(tc, test_missing_and_pseudo_files);
	tcase_add_test(tc, test_all_threads_errors_and_escaping);
	tcase_add_test(tc, test_handled_exception_text);
	tcase_add_test(tc, test_bad_indexes);
	tcase_add_test(tc, test_line_and_table);
	tcase_add_test(tc, test_line_error_frame);
	tcase_add_test(tc, test_list);
	tcase_add_test(tc, test_changed_source);
	tcase_add_test(tc, test_source_reader);
	tcase_add_test(tc, test_strbuf_and_utf8);
	suite_add_tcase(s, tc);
	return s;
}

PYU_CHECK_MAIN(format_suite)
