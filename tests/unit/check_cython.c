// check_cython.c - Cython frames (cython.c): the roles and names of Cython's C symbols, the
// markers of generated C files, the def that encloses a .pyx line, resolving a frame from the
// DWARF line / a C file on disk / the symbol alone, and how the merge shows and hides them
// (wrappers, helpers). Symbol names are Cython 0.29's and 3.1's own (checked on generated files).
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "checkmain.h"
#include "cython.h"
#include "include/pyunwind.h"
#include "native.h"

START_TEST(test_roles)
{
	ck_assert_int_eq(pyu_cython_role("__pyx_pf_5cymod_outer"), PYU_CYTHON_FUNCTION);
	ck_assert_int_eq(pyu_cython_role("__pyx_pw_5cymod_1outer"), PYU_CYTHON_WRAPPER);
	ck_assert_int_eq(pyu_cython_role("__pyx_f_5cymod_inner"), PYU_CYTHON_FUNCTION);
	ck_assert_int_eq(pyu_cython_role("__pyx_gb_5cymod_4generator"), PYU_CYTHON_FUNCTION);
	ck_assert_int_eq(pyu_cython_role("__pyx_fuse_0__pyx_f_5cymod_add"), PYU_CYTHON_FUNCTION);
	ck_assert_int_eq(pyu_cython_role("__pyx_pymod_exec_cymod"), PYU_CYTHON_FUNCTION);
	ck_assert_int_eq(pyu_cython_role("__Pyx_Coroutine_SendEx"), PYU_CYTHON_HELPER);
	ck_assert_int_eq(pyu_cython_role("__pyx_tp_new_5cymod_Klass"), PYU_CYTHON_HELPER);
	ck_assert_int_eq(pyu_cython_role("_PyEval_EvalFrameDefault"), PYU_CYTHON_NONE);
	ck_assert_int_eq(pyu_cython_role(NULL), PYU_CYTHON_NONE);
}
END_TEST

static void decoded_as(const char *symbol, const char *hint, const char *module,
		       const char *qualname, const char *name)
{
	char m[PYU_CYTHON_NAME_MAX], q[PYU_CYTHON_NAME_MAX], n[PYU_CYTHON_NAME_MAX];
	ck_assert_msg(pyu_cython_decode(symbol, hint, m, q, n), "%s not decoded", symbol);
	ck_assert_str_eq(m, module);
	ck_assert_str_eq(q, qualname);
	ck_assert_str_eq(n, name);
}

static void decoded(const char *symbol, const char *module, const char *qualname,
		    const char *name)
{
	decoded_as(symbol, NULL, module, qualname, name);
	decoded_as(symbol, "cymod", module, qualname, name);
}

START_TEST(test_decode)
{
	decoded("__pyx_pf_5cymod_outer", "cymod", "outer", "outer");
	decoded("__pyx_pw_5cymod_1outer", "cymod", "outer", "outer");
	decoded("__pyx_pf_5cymod_5crash", "cymod", "crash", "crash");
	decoded("__pyx_pf_5cymod_2generate", "cymod", "generate", "generate");
	decoded("__pyx_pf_5cymod_5Klass_method", "cymod", "Klass.method", "method");
	decoded("__pyx_pw_5cymod_5Klass_1method", "cymod", "Klass.method", "method");
	decoded("__pyx_f_5cymod_inner.isra.0", "cymod", "inner", "inner");
	decoded("__pyx_fuse_1__pyx_f_5cymod_add", "cymod", "add", "add");
	decoded("__pyx_gb_5cymod_4generator", "cymod", "<generator>", "<generator>");
	decoded("__pyx_gb_5cymod_5Klass_2generator1", "cymod", "Klass.<generator>", "<generator>");
	decoded("__pyx_lambda_funcdef_5cymod_lambda", "cymod", "<lambda>", "<lambda>");
	// Cython's usual lambda body names neither module nor scope: the module is the extension's
	decoded_as("__pyx_lambda_funcdef_lambda", "cymod", "cymod", "<lambda>", "<lambda>");
	decoded_as("__pyx_lambda_funcdef_lambda1", NULL, "", "<lambda>", "<lambda>");
	decoded("__pyx_pymod_exec_cymod", "cymod", "<module>", "<module>");
	decoded("__pyx_pf_5cymod_7__pyx_unpickle_Klass", "cymod", "__pyx_unpickle_Klass",
		"__pyx_unpickle_Klass");
	// a package: the module's parts run up to the extension's own name
	decoded_as("__pyx_pf_3pkg_3mod_5Klass_2meth", "mod", "pkg.mod", "Klass.meth", "meth");
	decoded_as("__pyx_pf_3pkg_3mod_5Klass_2meth", NULL, "pkg", "mod.Klass.meth", "meth");
	char m[PYU_CYTHON_NAME_MAX], q[PYU_CYTHON_NAME_MAX], n[PYU_CYTHON_NAME_MAX];
	ck_assert(!pyu_cython_decode("__pyx_pf_", NULL, m, q, n));
	ck_assert(!pyu_cython_decode("__pyx_pf_5cymod_", NULL, m, q, n));
	ck_assert(!pyu_cython_decode("__pyx_pf_99999cymod_x", NULL, m, q, n));
	ck_assert(!pyu_cython_decode("__Pyx_Generator_Next", NULL, m, q, n));
	ck_assert(!pyu_cython_decode(NULL, NULL, m, q, n));
	char longname[PYU_CYTHON_NAME_MAX * 2];
	snprintf(longname, sizeof(longname), "__pyx_pf_5cymod_%0*d", PYU_CYTHON_NAME_MAX + 10, 0);
	memset(longname + strlen("__pyx_pf_5cymod_"), 'x', PYU_CYTHON_NAME_MAX + 10);
	ck_assert(!pyu_cython_decode(longname, NULL, m, q, n));
}
END_TEST

START_TEST(test_markers)
{
	char file[PYU_CYTHON_NAME_MAX];
	int64_t line = 0;
	const char *t = "  /* \"cymod.pyx\":14";
	ck_assert(pyu_cython_marker(t, strlen(t), file, &line));
	ck_assert_str_eq(file, "cymod.pyx");
	ck_assert_int_eq(line, 14);
	t = "/* \"pkg/sub/mod.pyx\":7\n";
	ck_assert(pyu_cython_marker(t, strlen(t) - 1, file, &line));
	ck_assert_str_eq(file, "pkg/sub/mod.pyx");
	ck_assert_int_eq(line, 7);
	const char *bad[] = {"/* \"cymod.pyx\"", "/* \"cymod.pyx\":", "/* \"cymod.pyx\":x",
			     "// \"cymod.pyx\":3", "/* \"\":3", "/* \"cymod.pyx\":0", "x"};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		ck_assert_msg(!pyu_cython_marker(bad[i], strlen(bad[i]), file, &line), "%s", bad[i]);
}
END_TEST

static const char *const pyx[] = {
	"# cython: language_level=3",                          // 1
	"cdef inline int inner(object callback, int n) except -1:", // 2
	"    callback(n)",                                     // 3
	"",                                                    // 4
	"def outer(callback, int n):",                         // 5
	"    inner(callback, n + 1)",                          // 6
	"cdef class Klass:",                                   // 7
	"    cdef int count",                                  // 8
	"    def method(self, callback):",                     // 9
	"        if callback:",                                // 10
	"            # a comment",                             // 11
	"            callback(self.count)",                    // 12
	"        def nested():",                               // 13
	"            return 1",                                // 14
	"x = 1",                                               // 15
	"async def coro():",                                   // 16
	"\tawait x",                                           // 17
};

static void enclosing_as(int64_t line, bool lambda, const char *want_qualname,
			 const char *want_name)
{
	size_t lens[sizeof(pyx) / sizeof(pyx[0])];
	for (size_t i = 0; i < sizeof(pyx) / sizeof(pyx[0]); i++)
		lens[i] = strlen(pyx[i]);
	char q[PYU_CYTHON_NAME_MAX], n[PYU_CYTHON_NAME_MAX];
	bool found = pyu_cython_enclosing_def(pyx, lens, sizeof(pyx) / sizeof(pyx[0]), line, lambda,
					      q, n);
	if (!want_qualname) {
		ck_assert_msg(!found, "line %lld: found %s", (long long)line, q);
		return;
	}
	ck_assert_msg(found, "line %lld: no def", (long long)line);
	ck_assert_str_eq(q, want_qualname);
	ck_assert_str_eq(n, want_name);
}

static void enclosing(int64_t line, const char *want_qualname, const char *want_name)
{
	enclosing_as(line, false, want_qualname, want_name);
}

START_TEST(test_enclosing_def)
{
	enclosing(3, "inner", "inner");
	enclosing(2, "inner", "inner");
	enclosing(6, "outer", "outer");
	enclosing(5, "outer", "outer");
	enclosing(12, "Klass.method", "method");
	enclosing(11, "Klass.method", "method");
	enclosing(14, "Klass.method.<locals>.nested", "nested");
	enclosing(8, NULL, NULL);   // a class body
	enclosing(15, NULL, NULL);  // module level
	enclosing(17, "coro", "coro");
	enclosing(0, NULL, NULL);
	enclosing(99, NULL, NULL);
	// a lambda's frame: a function of its own in the def its line is in
	enclosing_as(12, true, "Klass.method.<locals>.<lambda>", "<lambda>");
	enclosing_as(3, true, "inner.<locals>.<lambda>", "<lambda>");
	enclosing_as(15, true, NULL, NULL); // at module level: no def to name it by
}
END_TEST

// A temporary directory with a generated C file (markers) and its .pyx.
static char dir[64];

static void write_file(const char *name, const char *text)
{
	char path[256];
	snprintf(path, sizeof(path), "%s/%s", dir, name);
	FILE *f = fopen(path, "w");
	ck_assert_ptr_nonnull(f);
	fputs(text, f);
	fclose(f);
}

static void make_files(void)
{
	strcpy(dir, "/tmp/pyu-check-cython-XXXXXX");
	ck_assert_ptr_nonnull(mkdtemp(dir));
	write_file("cymod.pyx", "def outer(cb):\n    x = 1\n    cb(x)\n");
	write_file("cymod.c", "/* generated */\n"               // 1
			      "/* \"cymod.pyx\":1\n"            // 2
			      " * def outer(cb):\n"             // 3
			      " */\n"                           // 4
			      "static PyObject *f(void) {\n"    // 5
			      "  /* \"cymod.pyx\":3\n"          // 6
			      "   *     cb(x)\n"                // 7
			      "   */\n"                         // 8
			      "  call();\n"                     // 9
			      "}\n");                           // 10
}

static void remove_files(void)
{
	char path[256];
	const char *names[] = {"cymod.pyx", "cymod.c"};
	for (size_t i = 0; i < 2; i++) {
		snprintf(path, sizeof(path), "%s/%s", dir, names[i]);
		unlink(path);
	}
	rmdir(dir);
}

START_TEST(test_resolve)
{
	make_files();
	struct pyu_cython_files *files = pyu_cython_files_create(NULL);
	ck_assert_ptr_nonnull(files);
	char c[256], pyxpath[256];
	snprintf(c, sizeof(c), "%s/cymod.c", dir);
	snprintf(pyxpath, sizeof(pyxpath), "%s/cymod.pyx", dir);
	struct pyu_cython_frame f;

	// the C file's marker above line 9, the .pyx next to it, the name from its def
	ck_assert_ptr_null(pyu_cython_resolve(files, "__pyx_pf_5cymod_2outer", "/x/cymod.so",
					      c, 9, &f));
	ck_assert_int_eq(f.role, PYU_CYTHON_FUNCTION);
	ck_assert_int_eq(f.line_from, PYU_CYTHON_LINE_C_FILE);
	ck_assert_str_eq(f.file, pyxpath);
	ck_assert_int_eq(f.line, 3);
	ck_assert_str_eq(f.qualname, "outer");
	ck_assert(f.name_from_source);
	ck_assert_str_eq(f.module, "cymod");
	pyu_cython_frame_clear(&f);

	// DWARF naming the .pyx (--line-directives)
	ck_assert_ptr_null(pyu_cython_resolve(files, "__pyx_f_5cymod_x", "/x/cymod.so",
					      pyxpath, 2, &f));
	ck_assert_int_eq(f.line_from, PYU_CYTHON_LINE_DWARF);
	ck_assert_int_eq(f.line, 2);
	ck_assert_str_eq(f.qualname, "outer");
	pyu_cython_frame_clear(&f);

	// a C line above every marker; a C file that is gone; no line at all
	ck_assert_ptr_null(pyu_cython_resolve(files, "__pyx_pf_5cymod_outer", "/x/cymod.so",
					      c, 1, &f));
	ck_assert_int_eq(f.line_from, PYU_CYTHON_LINE_NONE);
	ck_assert_ptr_nonnull(strstr(f.why, "no Cython marker"));
	pyu_cython_frame_clear(&f);
	ck_assert_ptr_null(pyu_cython_resolve(files, "__pyx_pf_5cymod_outer", "/x/cymod.so",
					      "/nonexistent/cymod.c", 9, &f));
	ck_assert_int_eq(f.line_from, PYU_CYTHON_LINE_NONE);
	ck_assert_ptr_nonnull(strstr(f.why, "not readable here"));
	ck_assert_str_eq(f.qualname, "outer");
	ck_assert(!f.name_from_source);
	pyu_cython_frame_clear(&f);
	ck_assert_ptr_null(pyu_cython_resolve(files, "__pyx_pf_5cymod_5Klass_meth", "/x/cymod.so",
					      NULL, -1, &f));
	ck_assert_int_eq(f.line_from, PYU_CYTHON_LINE_NONE);
	ck_assert_ptr_null(f.file);
	ck_assert_str_eq(f.qualname, "Klass.meth");
	pyu_cython_frame_clear(&f);

	// not Cython's, and a helper
	ck_assert_ptr_null(pyu_cython_resolve(files, "qsort", "/x/cymod.so", NULL, -1, &f));
	ck_assert_int_eq(f.role, PYU_CYTHON_NONE);
	ck_assert_ptr_null(pyu_cython_resolve(files, "__Pyx_Generator_Next", "/x/cymod.so",
					      NULL, -1, &f));
	ck_assert_int_eq(f.role, PYU_CYTHON_HELPER);
	ck_assert_ptr_null(f.qualname);
	pyu_cython_files_destroy(files);
	remove_files();
}
END_TEST

// The merge: Cython functions are items of their own kind; the wrapper of the function just
// inner to it and the helpers are hidden, a wrapper alone (its body inlined without DWARF) is
// the function; --native-all shows everything.
START_TEST(test_merge)
{
	struct pyu_stacks *s = calloc(1, sizeof(*s));
	ck_assert_ptr_nonnull(s);
	s->placement = PYU_PLACE_BY_ENTRY_FRAME;
	s->threads = calloc(1, sizeof(*s->threads));
	ck_assert_ptr_nonnull(s->threads);
	s->thread_count = 1;
	const char *fns[] = {"futex_wait", "__pyx_f_5cymod_inner", "__pyx_pf_5cymod_outer",
			     "__pyx_pw_5cymod_1outer", "__Pyx_PyObject_Call",
			     "__pyx_pw_5cymod_3other", "main"};
	for (uint64_t k = 0; k < 7; k++)
		ck_assert_ptr_null(pyu_stacks_add_native_frame(s, 0, 0x1000 + k, 0x7000 + 0x100 * k,
							       0, fns[k], "cymod.so", NULL, -1));
	struct pyu_merge m;
	ck_assert_ptr_null(pyu_merge_thread(s, &s->threads[0], false, &m));
	char got[256] = "";
	for (uint32_t i = 0; i < m.count; i++) {
		char one[16];
		snprintf(one, sizeof(one), "%s%c%u", i ? " " : "",
			 m.items[i].cython ? 'C' : m.items[i].python ? 'P' : 'N', m.items[i].index);
		strcat(got, one);
	}
	ck_assert_str_eq(got, "N0 C1 C2 C5 N6");
	pyu_merge_release(&m);
	ck_assert_ptr_null(pyu_merge_thread(s, &s->threads[0], true, &m));
	got[0] = '\0';
	for (uint32_t i = 0; i < m.count; i++) {
		char one[16];
		snprintf(one, sizeof(one), "%s%c%u", i ? " " : "",
			 m.items[i].cython ? 'C' : m.items[i].python ? 'P' : 'N', m.items[i].index);
		strcat(got, one);
	}
	ck_assert_str_eq(got, "N0 C1 C2 N3 N4 C5 N6");
	pyu_merge_release(&m);
	char *text = NULL;
	ck_assert_ptr_null(pyu_format_native_frame(s, 0, 2, &text));
	ck_assert_str_eq(text, "[Cython: in outer (module cymod)]");
	pyu_free(text);
	ck_assert_ptr_null(pyu_format_native_frame(s, 0, 3, &text));
	ck_assert_str_eq(text, "");
	pyu_free(text);
	ck_assert_ptr_null(pyu_format_bt(s, 0, PYU_FMT_NATIVE, 0, &text));
	ck_assert_ptr_nonnull(strstr(text, "cython #1  in inner (module cymod) [__pyx_f_5cymod_inner "
					   "from cymod.so; no line: no line information for "
					   "__pyx_f_5cymod_inner (no DWARF)]\n"));
	pyu_free(text);
	pyu_stacks_destroy(s);
}
END_TEST

static Suite *cython_suite(void)
{
	Suite *s = suite_create("cython");
	TCase *tc = tcase_create("cython");
	tcase_add_test(tc, test_roles);
	tcase_add_test(tc, test_decode);
	tcase_add_test(tc, test_markers);
	tcase_add_test(tc, test_enclosing_def);
	tcase_add_test(tc, test_resolve);
	tcase_add_test(tc, test_merge);
	suite_add_tcase(s, tc);
	return s;
}

PYU_CHECK_MAIN(cython_suite)
