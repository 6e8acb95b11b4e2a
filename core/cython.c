// cython.c - Cython functions among a thread's native frames. Cython compiles a def into a C
// function named after it (__pyx_pf_5cymod_outer), never entering the interpreter's frame chain,
// so the native stack is the only place a running Cython call exists. This file says which C
// symbols are Cython's, decodes their names, and finds the .pyx line a frame executes: the
// DWARF line itself when it names the .pyx (--line-directives), else the marker
// `/* "cymod.pyx":N` that Cython writes above each statement of the generated C file, read from
// this machine's disk through the target's path maps. With a line, the name is the def that
// encloses it in the .pyx (Python's own qualname rules); without, the symbol's. No target
// memory is read here.
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cython.h"
#include "elf.h"

// ---- symbols ----------------------------------------------------------------------------------

struct prefix {
	const char *text;
	enum pyu_cython_role role;
};

// Cython's C names for what runs Python-level code; any other __pyx_/__Pyx_ name is its runtime.
static const struct prefix prefixes[] = {
	{"__pyx_pw_", PYU_CYTHON_WRAPPER},
	{"__pyx_pf_", PYU_CYTHON_FUNCTION},
	{"__pyx_f_", PYU_CYTHON_FUNCTION},
	{"__pyx_gb_", PYU_CYTHON_FUNCTION},
	{"__pyx_lambda_funcdef_", PYU_CYTHON_FUNCTION},
	{"__pyx_pymod_exec_", PYU_CYTHON_FUNCTION},
};

// @symbol without a fused specialisation's "__pyx_fuse_N" in front.
static const char *unfused(const char *symbol)
{
	static const char fuse[] = "__pyx_fuse_";
	if (strncmp(symbol, fuse, sizeof(fuse) - 1))
		return symbol;
	const char *p = symbol + sizeof(fuse) - 1;
	while (isdigit((unsigned char)*p))
		p++;
	return strncmp(p, "__pyx_", 6) ? symbol : p;
}

static const struct prefix *prefix_of(const char *symbol)
{
	symbol = unfused(symbol);
	for (size_t i = 0; i < sizeof(prefixes) / sizeof(prefixes[0]); i++)
		if (!strncmp(symbol, prefixes[i].text, strlen(prefixes[i].text)))
			return &prefixes[i];
	return NULL;
}

enum pyu_cython_role pyu_cython_role(const char *symbol)
{
	if (!symbol)
		return PYU_CYTHON_NONE;
	const struct prefix *p = prefix_of(symbol);
	if (p)
		return p->role;
	if (!strncmp(symbol, "__pyx_", 6) || !strncmp(symbol, "__Pyx_", 6))
		return PYU_CYTHON_HELPER;
	return PYU_CYTHON_NONE;
}

// Appends @len bytes of @text (and a separator before them unless @out is empty) to @out, a
// buffer of PYU_CYTHON_NAME_MAX. Returns false when it does not fit.
static bool append(char *out, const char *sep, const char *text, size_t len)
{
	size_t have = strlen(out), s = have && sep ? strlen(sep) : 0;
	if (have + s + len + 1 > PYU_CYTHON_NAME_MAX)
		return false;
	if (s)
		memcpy(out + have, sep, s);
	memcpy(out + have + s, text, len);
	out[have + s + len] = '\0';
	return true;
}

// Length of a "<len><name>_" scope segment at @p with something after it, or 0.
static size_t segment_at(const char *p, size_t *name_len, size_t *digits)
{
	size_t d = 0, n = 0;
	while (isdigit((unsigned char)p[d]) && d < 6)
		n = n * 10 + (size_t)(p[d++] - '0');
	if (!d || !n || p[0] == '0')
		return 0;
	for (size_t i = 0; i < n; i++)
		if (!p[d + i])
			return 0;
	if (p[d + n] != '_' || !p[d + n + 1])
		return 0;
	*name_len = n;
	*digits = d;
	return d + n + 1;
}

bool pyu_cython_decode(const char *symbol, const char *module_hint, char *module, char *qualname,
		       char *name)
{
	module[0] = qualname[0] = name[0] = '\0';
	if (!symbol)
		return false;
	const struct prefix *pre = prefix_of(symbol);
	if (!pre)
		return false;
	const char *p = unfused(symbol) + strlen(pre->text);
	size_t end = strcspn(p, "."); // ".isra.0", ".constprop.0", ".cold" of the compiler
	if (!strcmp(pre->text, "__pyx_pymod_exec_")) {
		return end && append(module, NULL, p, end) &&
		       append(qualname, NULL, "<module>", 8) && append(name, NULL, "<module>", 8);
	}
	// Scope segments: the module's path parts, then classes and enclosing functions. Which of
	// them are the module is not in the name: up to the one that equals @module_hint (the
	// extension's file name), else the first.
	enum { MAX_SEGMENTS = 32 };
	const char *seg[MAX_SEGMENTS];
	size_t seg_len[MAX_SEGMENTS], count = 0;
	const char *stop = p + end;
	while (p < stop && count < MAX_SEGMENTS) {
		size_t n = 0, d = 0, len = segment_at(p, &n, &d);
		if (!len || p + len >= stop)
			break;
		seg[count] = p + d;
		seg_len[count++] = n;
		p += len;
	}
	bool lambda = !strcmp(pre->text, "__pyx_lambda_funcdef_");
	if (!count && lambda) {
		// __pyx_lambda_funcdef_lambda, _lambda1, ...: no scope in the name; the module is
		// the extension's
		return (!module_hint || append(module, NULL, module_hint, strlen(module_hint))) &&
		       append(qualname, NULL, "<lambda>", 8) && append(name, NULL, "<lambda>", 8);
	}
	if (!count)
		return false;
	size_t module_parts = 1;
	for (size_t i = 0; module_hint && i < count; i++)
		if (strlen(module_hint) == seg_len[i] && !memcmp(module_hint, seg[i], seg_len[i]))
			module_parts = i + 1;
	for (size_t i = 0; i < count; i++)
		if (!(i < module_parts ? append(module, ".", seg[i], seg_len[i])
				       : append(qualname, ".", seg[i], seg_len[i])))
			return false;
	while (p < stop && isdigit((unsigned char)*p)) // the counter
		p++;
	if (p == stop)
		return false;
	bool generator = !strcmp(pre->text, "__pyx_gb_"); // named "generatorN", not after its def
	const char *leaf = lambda ? "<lambda>" : generator ? "<generator>" : p;
	size_t leaf_len = lambda || generator ? strlen(leaf) : (size_t)(stop - p);
	return append(qualname, ".", leaf, leaf_len) && append(name, NULL, leaf, leaf_len);
}

// ---- markers and defs in source text ----------------------------------------------------------

bool pyu_cython_marker(const char *text, size_t len, char *file, int64_t *ret_line)
{
	size_t i = 0;
	while (i < len && (text[i] == ' ' || text[i] == '\t'))
		i++;
	if (len - i < 4 || memcmp(text + i, "/* \"", 4))
		return false;
	i += 4;
	size_t start = i;
	while (i < len && text[i] != '"')
		i++;
	if (i + 2 >= len || text[i + 1] != ':' || !isdigit((unsigned char)text[i + 2]) ||
	    i - start == 0 || i - start >= PYU_CYTHON_NAME_MAX)
		return false;
	int64_t n = 0;
	for (size_t k = i + 2; k < len && isdigit((unsigned char)text[k]) && n < 100000000; k++)
		n = n * 10 + (text[k] - '0');
	if (n <= 0)
		return false;
	memcpy(file, text + start, i - start);
	file[i - start] = '\0';
	*ret_line = n;
	return true;
}

static size_t indent_of(const char *line, size_t len, bool *blank)
{
	size_t i = 0, col = 0;
	for (; i < len && (line[i] == ' ' || line[i] == '\t'); i++)
		col = line[i] == '\t' ? (col / 8 + 1) * 8 : col + 1;
	*blank = i == len || line[i] == '#' || line[i] == '\r';
	return col;
}

static bool starts_word(const char *p, size_t len, const char *word)
{
	size_t n = strlen(word);
	return len > n && !memcmp(p, word, n) && (p[n] == ' ' || p[n] == '\t');
}

static bool is_ident(char c)
{
	return isalnum((unsigned char)c) || c == '_' || (unsigned char)c >= 0x80;
}

// The name a def/cdef/cpdef/class line (from its first non-blank) introduces; *is_class says
// which. Returns 0 when the line introduces neither.
static size_t introduced(const char *p, size_t len, bool *is_class, const char **ret)
{
	bool cdef = starts_word(p, len, "cdef") || starts_word(p, len, "cpdef");
	bool def = starts_word(p, len, "def") || starts_word(p, len, "async");
	const char *cls = NULL;
	if (starts_word(p, len, "class"))
		cls = p + 5;
	else if (cdef && len > 10 && !memcmp(p, "cdef class", 10))
		cls = p + 10;
	if (cls) {
		const char *endp = p + len;
		while (cls < endp && (*cls == ' ' || *cls == '\t'))
			cls++;
		const char *q = cls;
		while (q < endp && is_ident(*q))
			q++;
		*is_class = true;
		*ret = cls;
		return (size_t)(q - cls);
	}
	if (!cdef && !def)
		return 0;
	const char *paren = memchr(p, '(', len);
	if (!paren || (cdef && memchr(p, '=', (size_t)(paren - p))))
		return 0;
	const char *q = paren;
	while (q > p && (q[-1] == ' ' || q[-1] == '\t'))
		q--;
	const char *s = q;
	while (s > p && is_ident(s[-1]))
		s--;
	if (s == q)
		return 0;
	*is_class = false;
	*ret = s;
	return (size_t)(q - s);
}

bool pyu_cython_enclosing_def(const char *const *lines, const size_t *lens, uint32_t count,
			      int64_t line, bool lambda, char *qualname, char *name)
{
	qualname[0] = name[0] = '\0';
	if (line < 1 || (uint64_t)line > count)
		return false;
	// Innermost first: the names of the blocks that enclose the line.
	enum { MAX_DEPTH = 32 };
	const char *names[MAX_DEPTH];
	size_t name_lens[MAX_DEPTH];
	bool classes[MAX_DEPTH];
	int depth = 0;
	size_t limit = (size_t)-1; // enclosing blocks are indented less than this
	uint32_t scanned = 0;
	for (int64_t i = line; i >= 1 && scanned < PYU_CYTHON_SCAN_LINES && depth < MAX_DEPTH;
	     i--, scanned++) {
		const char *text = lines[i - 1];
		size_t len = lens[i - 1];
		bool blank;
		size_t ind = indent_of(text, len, &blank);
		if (blank)
			continue;
		if (i != line && ind >= limit)
			continue;
		size_t skip = 0;
		while (skip < len && (text[skip] == ' ' || text[skip] == '\t'))
			skip++;
		bool cls = false;
		const char *n = NULL;
		size_t nl = introduced(text + skip, len - skip, &cls, &n);
		if (nl) {
			names[depth] = n;
			name_lens[depth] = nl;
			classes[depth++] = cls;
		}
		limit = ind;
		if (!ind)
			break;
	}
	if (!depth || classes[0])
		return false;
	for (int k = depth - 1; k >= 0; k--) {
		if (!append(qualname, ".", names[k], name_lens[k]))
			return false;
		if (k > 0 && !classes[k] && !append(qualname, ".", "<locals>", 8))
			return false;
	}
	if (!append(name, NULL, names[0], name_lens[0]))
		return false;
	char lq[PYU_CYTHON_NAME_MAX];
	memcpy(lq, qualname, PYU_CYTHON_NAME_MAX);
	if (lambda && append(lq, ".", "<locals>", 8) && append(lq, ".", "<lambda>", 8)) {
		memcpy(qualname, lq, PYU_CYTHON_NAME_MAX);
		memcpy(name, "<lambda>", sizeof("<lambda>"));
	}
	return true;
}

// ---- files ------------------------------------------------------------------------------------

struct cy_file {
	char *path;     // as the target names it
	char *data;     // NULL when not readable here
	size_t size;
	const char **lines; // line i + 1 starts at lines[i] ...
	size_t *lens;
	uint32_t count;
};

struct pyu_cython_files {
	struct pyu_target *target;
	struct cy_file files[PYU_CYTHON_FILES];
	unsigned next;
	struct pyu_cython_module modules[PYU_CYTHON_MODULES];
	unsigned module_count;
};

struct pyu_cython_files *pyu_cython_files_create(struct pyu_target *t)
{
	struct pyu_cython_files *c = calloc(1, sizeof(*c));
	if (c)
		c->target = t;
	return c;
}

static void file_clear(struct cy_file *f)
{
	free(f->path);
	free(f->data);
	free(f->lines);
	free(f->lens);
	memset(f, 0, sizeof(*f));
}

void pyu_cython_files_destroy(struct pyu_cython_files *c)
{
	if (!c)
		return;
	for (unsigned i = 0; i < PYU_CYTHON_FILES; i++)
		file_clear(&c->files[i]);
	for (unsigned i = 0; i < c->module_count; i++) {
		free(c->modules[i].path);
		free(c->modules[i].name);
		free(c->modules[i].source);
	}
	free(c);
}

// Reads a regular file of at most PYU_CYTHON_FILE_MAX bytes and indexes its lines.
static bool read_indexed(const char *local, struct cy_file *f)
{
	int fd = open(local, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return false;
	struct stat st;
	bool ok = !fstat(fd, &st) && S_ISREG(st.st_mode) && st.st_size >= 0 &&
		  (uint64_t)st.st_size <= PYU_CYTHON_FILE_MAX;
	size_t size = ok ? (size_t)st.st_size : 0, got = 0;
	char *data = ok ? malloc(size + 1) : NULL;
	while (data && got < size) {
		ssize_t n = read(fd, data + got, size - got);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		got += (size_t)n;
	}
	close(fd);
	if (!data || got != size) {
		free(data);
		return false;
	}
	data[size] = '\0';
	uint32_t count = 0;
	for (size_t i = 0; i < size; i++)
		count += data[i] == '\n';
	count += size && data[size - 1] != '\n';
	f->lines = malloc((count ? count : 1) * sizeof(*f->lines));
	f->lens = malloc((count ? count : 1) * sizeof(*f->lens));
	if (!f->lines || !f->lens) {
		free(data);
		free(f->lines);
		free(f->lens);
		f->lines = NULL;
		f->lens = NULL;
		return false;
	}
	size_t start = 0;
	uint32_t n = 0;
	for (size_t i = 0; i <= size && n < count; i++) {
		if (i == size || data[i] == '\n') {
			f->lines[n] = data + start;
			f->lens[n++] = i - start;
			start = i + 1;
		}
	}
	f->data = data;
	f->size = size;
	f->count = n;
	return true;
}

// The file the target calls @path, read once per cache; NULL when out of memory. Its data is
// NULL when it is not readable here.
static struct cy_file *file_of(struct pyu_cython_files *c, const char *path)
{
	for (unsigned i = 0; i < PYU_CYTHON_FILES; i++)
		if (c->files[i].path && !strcmp(c->files[i].path, path))
			return &c->files[i];
	struct cy_file *f = &c->files[c->next];
	c->next = (c->next + 1) % PYU_CYTHON_FILES;
	file_clear(f);
	f->path = strdup(path);
	if (!f->path)
		return NULL;
	char *local = c->target ? pyu_target_local_path(c->target, path) : strdup(path);
	if (!local) {
		file_clear(f);
		return NULL;
	}
	read_indexed(local, f);
	free(local);
	return f;
}

static bool ends_with(const char *s, const char *suffix)
{
	size_t n = strlen(s), m = strlen(suffix);
	return n >= m && !strcmp(s + n - m, suffix);
}

bool pyu_cython_is_pyx_file(const char *file)
{
	return file && (ends_with(file, ".pyx") || ends_with(file, ".pxd") ||
			ends_with(file, ".pxi"));
}

static bool is_cython_source(const char *file)
{
	return pyu_cython_is_pyx_file(file) || ends_with(file, ".py");
}

static bool is_c_source(const char *file)
{
	return ends_with(file, ".c") || ends_with(file, ".cpp") || ends_with(file, ".cc") ||
	       ends_with(file, ".cxx");
}

// The .pyx a marker of the C file @c_path names: markers name it relative to where Cython ran,
// which is the C file's directory or one of its parents; the first of them where the file is
// readable wins, else the C file's directory. malloc'd; NULL when out of memory.
static char *marker_path(struct pyu_cython_files *c, const char *c_path, const char *rel)
{
	if (rel[0] == '/')
		return strdup(rel);
	const char *slash = strrchr(c_path, '/');
	bool has_dir = slash != NULL;
	size_t dir = has_dir ? (size_t)(slash - c_path) : 0, rel_len = strlen(rel);
	char *first = NULL;
	for (int up = 0; up < 8; up++) {
		char *cand = malloc(dir + rel_len + 2);
		if (!cand) {
			free(first);
			return NULL;
		}
		if (has_dir)
			snprintf(cand, dir + rel_len + 2, "%.*s/%s", (int)dir, c_path, rel);
		else
			snprintf(cand, rel_len + 1, "%s", rel);
		struct cy_file *f = file_of(c, cand);
		if (f && f->data) {
			free(first);
			return cand;
		}
		if (!first)
			first = cand;
		else
			free(cand);
		if (!has_dir || !dir)
			break;
		size_t k = dir; // up one directory: to the slash before this one
		while (k > 0 && c_path[k - 1] != '/')
			k--;
		if (!k)
			has_dir = false; // a relative path's first directory: Cython ran here
		else
			dir = k - 1;
	}
	return first;
}

// ---- extension modules without symbols ------------------------------------------------------

static void module_of_library(const char *library, char *out);

// The NUL-terminated string in @data[0..len) that is "NAME.pyx" or ends in "/NAME.pyx": the
// module's own source as Cython records it for tracebacks. NULL when there is none.
static const char *own_pyx(const char *data, size_t len, const char *name)
{
	char want[PYU_CYTHON_NAME_MAX + 8];
	int n = snprintf(want, sizeof(want), "%s.pyx", name);
	if (n <= 0 || (size_t)n >= sizeof(want))
		return NULL;
	const char *p = data, *end = data + len;
	while (p < end && (p = memmem(p, (size_t)(end - p), want, (size_t)n + 1)) != NULL) {
		const char *start = p;
		while (start > data && start[-1] && p - start < PYU_CYTHON_NAME_MAX)
			start--;
		if (start == p || p[-1] == '/')
			return start;
		p += n + 1;
	}
	return NULL;
}

// Fills @m from the ELF file at @local.
static void examine_module(struct pyu_cython_module *m, const char *local)
{
	struct pyu_elf *elf = NULL;
	struct pyu_error *err = pyu_elf_open(local, &elf);
	if (err) {
		pyu_error_destroy(err);
		return;
	}
	char name[PYU_CYTHON_NAME_MAX], init[PYU_CYTHON_NAME_MAX + 8];
	module_of_library(m->path, name);
	struct pyu_elf_symbol sym;
	snprintf(init, sizeof(init), "PyInit_%s", name);
	if (!name[0] || (err = pyu_elf_find_symbol(elf, init, &sym)) != NULL) {
		// Python 2's extensions export init<NAME>.
		pyu_error_destroy(err);
		snprintf(init, sizeof(init), "init%s", name);
		err = name[0] ? pyu_elf_find_symbol(elf, init, &sym) : NULL;
	}
	if (!name[0] || err) {
		pyu_error_destroy(err);
		pyu_elf_close(elf);
		return;
	}
	m->name = strdup(name);
	struct pyu_elf_section sec;
	m->symbols = !(err = pyu_elf_find_section(elf, ".symtab", &sec)) ||
		     !pyu_elf_find_section(elf, ".debug_info", &sec);
	pyu_error_destroy(err);
	struct pyu_elf *debug = NULL;
	if (!m->symbols && !(err = pyu_elf_open_debug(elf, NULL, &debug)))
		m->symbols = true;
	pyu_error_destroy(err);
	pyu_elf_close(debug);
	err = pyu_elf_find_section(elf, ".rodata", &sec);
	char *data = !err && sec.size && sec.size <= PYU_CYTHON_RODATA_MAX ? malloc(sec.size)
									    : NULL;
	pyu_error_destroy(err);
	if (data && !(err = pyu_elf_read_file(elf, sec.offset, data, sec.size))) {
		static const char runtime[] = "cython_runtime";
		m->cython = memmem(data, sec.size, runtime, sizeof(runtime)) != NULL;
		const char *pyx = m->cython ? own_pyx(data, sec.size, name) : NULL;
		m->source = pyx ? strdup(pyx) : NULL;
	}
	pyu_error_destroy(err);
	free(data);
	pyu_elf_close(elf);
}

const struct pyu_cython_module *pyu_cython_module_of(struct pyu_cython_files *files,
						     const char *path, const char *local_path)
{
	if (!files || !path || !local_path)
		return NULL;
	for (unsigned i = 0; i < files->module_count; i++)
		if (!strcmp(files->modules[i].path, path))
			return &files->modules[i];
	if (files->module_count == PYU_CYTHON_MODULES)
		return NULL;
	struct pyu_cython_module *m = &files->modules[files->module_count];
	memset(m, 0, sizeof(*m));
	if (!(m->path = strdup(path)))
		return NULL;
	files->module_count++;
	examine_module(m, local_path);
	return m;
}

void pyu_cython_frame_clear(struct pyu_cython_frame *f)
{
	free(f->function);
	free(f->qualname);
	free(f->module);
	free(f->file);
	free(f->why);
	memset(f, 0, sizeof(*f));
}

static char *dup_text(const char *text, bool *failed)
{
	if (!text || !*text)
		return NULL;
	char *copy = strdup(text);
	if (!copy)
		*failed = true;
	return copy;
}

static bool is_lambda(const char *symbol)
{
	const struct prefix *p = prefix_of(symbol);
	return p && !strcmp(p->text, "__pyx_lambda_funcdef_");
}

// The module name an extension's file gives: "mod" of ".../mod.cpython-312-x86_64-linux-gnu.so".
static void module_of_library(const char *library, char *out)
{
	out[0] = '\0';
	if (!library)
		return;
	const char *base = strrchr(library, '/');
	base = base ? base + 1 : library;
	size_t n = strcspn(base, ".");
	if (n && n < PYU_CYTHON_NAME_MAX) {
		memcpy(out, base, n);
		out[n] = '\0';
	}
}

struct pyu_error *pyu_cython_resolve(struct pyu_cython_files *files, const char *symbol,
				     const char *library, const char *file, int64_t line,
				     struct pyu_cython_frame *ret)
{
	struct pyu_cython_frame f = {0};
	f.line = -1;
	f.role = pyu_cython_role(symbol);
	char module[PYU_CYTHON_NAME_MAX], qualname[PYU_CYTHON_NAME_MAX], name[PYU_CYTHON_NAME_MAX];
	char hint[PYU_CYTHON_NAME_MAX];
	module_of_library(library, hint);
	if (f.role == PYU_CYTHON_NONE || f.role == PYU_CYTHON_HELPER ||
	    !pyu_cython_decode(symbol, hint, module, qualname, name)) {
		memset(ret, 0, sizeof(*ret));
		ret->line = -1;
		ret->role = f.role == PYU_CYTHON_FUNCTION || f.role == PYU_CYTHON_WRAPPER
			? PYU_CYTHON_HELPER : f.role;
		return NULL;
	}
	bool failed = false;
	char why[PYU_CYTHON_NAME_MAX + 128];
	why[0] = '\0';
	char pyx[PYU_CYTHON_NAME_MAX];
	pyx[0] = '\0';
	if (file && line > 0 && is_cython_source(file)) {
		f.file = dup_text(file, &failed);
		f.line = line;
		f.line_from = PYU_CYTHON_LINE_DWARF;
	} else if (file && line > 0 && is_c_source(file)) {
		struct cy_file *cf = files ? file_of(files, file) : NULL;
		int64_t at = -1;
		if (!cf) {
			failed = files != NULL;
			snprintf(why, sizeof(why), "the generated C file %s was not read", file);
		} else if (!cf->data) {
			snprintf(why, sizeof(why), "the generated C file %s is not readable here",
				 file);
		} else {
			uint32_t scanned = 0;
			for (int64_t i = line; i >= 1 && (uint64_t)i <= cf->count && at < 0 &&
			     scanned < PYU_CYTHON_SCAN_LINES; i--, scanned++)
				if (!pyu_cython_marker(cf->lines[i - 1], cf->lens[i - 1], pyx, &at))
					at = -1;
			if (at < 0)
				snprintf(why, sizeof(why), "no Cython marker above line %lld of %s",
					 (long long)line, file);
		}
		if (at > 0) {
			f.file = marker_path(files, file, pyx);
			failed |= !f.file;
			f.line = at;
			f.line_from = PYU_CYTHON_LINE_C_FILE;
		}
	} else {
		snprintf(why, sizeof(why), "no line information for %s (no DWARF)", symbol);
	}
	// With a line, the def that encloses it is the frame's Python name.
	if (f.file && files) {
		struct cy_file *src = file_of(files, f.file);
		char q[PYU_CYTHON_NAME_MAX], n[PYU_CYTHON_NAME_MAX];
		if (!src)
			failed = true;
		else if (src->data && pyu_cython_enclosing_def(src->lines, src->lens, src->count,
								 f.line, is_lambda(symbol), q, n)) {
			f.name_from_source = true;
			memcpy(qualname, q, sizeof(q));
			memcpy(name, n, sizeof(n));
		}
	}
	f.module = dup_text(module, &failed);
	f.qualname = dup_text(qualname, &failed);
	f.function = dup_text(name, &failed);
	if (f.line_from == PYU_CYTHON_LINE_NONE)
		f.why = dup_text(why[0] ? why : "no line information", &failed);
	if (failed) {
		pyu_cython_frame_clear(&f);
		memset(ret, 0, sizeof(*ret));
		return &pyu_error_nomem;
	}
	*ret = f;
	return NULL;
}
