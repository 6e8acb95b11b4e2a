// source.c - reads the source files frames name, once per cache, and splits them into lines
// the way Python's linecache does (universal newlines). Unreadable files are remembered as
// such, so a 1,000-deep recursion into a missing file costs one failed open.
#include "source.h"

#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

struct source_file {
	char *path;       // as the target names it; NULL = free slot
	bool readable;
	char *data;       // file contents (NULL when unreadable)
	size_t size;
	uint32_t *starts; // offset of each line's first byte; line i is [starts[i], end of line)
	size_t line_count;
};

#define MEMO_SLOTS 512 // rendered snippets kept (direct-mapped by key)

struct memo {
	uint64_t key[4];
	char *text; // NULL = free slot
	size_t len;
};

struct pyu_source_cache {
	struct pyu_target *target;
	struct source_file files[PYU_SOURCE_MAX_FILES];
	unsigned next; // round-robin victim
	struct memo memo[MEMO_SLOTS];
};

struct pyu_source_cache *pyu_source_cache_create(struct pyu_target *t)
{
	struct pyu_source_cache *c = calloc(1, sizeof(*c));
	if (c)
		c->target = t;
	return c;
}

static void file_clear(struct source_file *f)
{
	free(f->path);
	free(f->data);
	free(f->starts);
	memset(f, 0, sizeof(*f));
}

void pyu_source_cache_destroy(struct pyu_source_cache *c)
{
	if (!c)
		return;
	for (unsigned i = 0; i < PYU_SOURCE_MAX_FILES; i++)
		file_clear(&c->files[i]);
	for (unsigned i = 0; i < MEMO_SLOTS; i++)
		free(c->memo[i].text);
	free(c);
}

// Reads up to PYU_SOURCE_MAX_BYTES of the regular file @local into *data/*size. Returns false
// when it cannot (the outputs are then unchanged).
static bool read_whole(const char *local, char **data, size_t *size)
{
	int fd = open(local, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
	if (fd < 0)
		return false;
	struct stat st;
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode)) {
		close(fd);
		return false;
	}
	size_t want = st.st_size > (off_t)PYU_SOURCE_MAX_BYTES ? PYU_SOURCE_MAX_BYTES
							       : (size_t)st.st_size;
	char *buf = malloc(want + 1);
	if (!buf) {
		close(fd);
		return false;
	}
	size_t got = 0;
	while (got < want) { // the file may shrink under us: keep what was read
		ssize_t r = read(fd, buf + got, want - got);
		if (r <= 0)
			break;
		got += (size_t)r;
	}
	close(fd);
	*data = buf;
	*size = got;
	return true;
}

// Whether byte @i of @f ends a line: \n, \r\n (at its \n) or a lone \r.
static bool ends_line(const struct source_file *f, size_t i)
{
	char ch = f->data[i];
	return ch == '\n' || (ch == '\r' && (i + 1 >= f->size || f->data[i + 1] != '\n'));
}

// The index of the first byte at or after @i that ends a line, f->size when none does. A file
// without \r (@has_cr false: nearly every one) is searched with memchr, which looks at many
// bytes an instruction: a byte at a time was most of what printing a frame's source line cost
// (threading.py, 60 KB, twice per snapshot).
static size_t next_line_end(const struct source_file *f, size_t i, bool has_cr)
{
	if (i >= f->size)
		return f->size;
	if (!has_cr) {
		const char *nl = memchr(f->data + i, '\n', f->size - i);
		return nl ? (size_t)(nl - f->data) : f->size;
	}
	while (i < f->size && !ends_line(f, i))
		i++;
	return i;
}

// Splits f->data into lines at \n, \r\n and \r, in one pass over it (the line starts in an
// array grown as they are found; counting them first was a second pass over a 60 KB file).
// Returns false when out of memory.
static bool index_lines(struct source_file *f)
{
	bool has_cr = f->size && memchr(f->data, '\r', f->size) != NULL;
	size_t cap = f->size / 32 + 16, n = 0, start = 0;
	uint32_t *starts = malloc(cap * sizeof(*starts));
	if (!starts)
		return false;
	if (f->size >= 3 && !memcmp(f->data, "\xEF\xBB\xBF", 3))
		start = 3;
	for (size_t i = next_line_end(f, start, has_cr);; i = next_line_end(f, i + 1, has_cr)) {
		// a line ended at i; or none did, and the file's last byte ends no line (a last line
		// without an ending: as linecache, BOM alone too), else the lines are all found
		bool last = i >= f->size;
		if (last && (f->size == 0 || f->data[f->size - 1] == '\n' ||
			     f->data[f->size - 1] == '\r'))
			break;
		if (n + 2 > cap) { // room for this start and the sentinel
			uint32_t *more = realloc(starts, 2 * cap * sizeof(*starts));
			if (!more) {
				free(starts);
				return false;
			}
			starts = more;
			cap *= 2;
		}
		starts[n++] = (uint32_t)start;
		if (last)
			break;
		start = i + 1;
	}
	starts[n] = (uint32_t)f->size; // sentinel
	f->starts = starts;
	f->line_count = n;
	return true;
}

static bool is_pseudo_name(const char *path)
{
	size_t n = strlen(path);
	return n == 0 || (path[0] == '<' && path[n - 1] == '>');
}

static struct source_file *lookup(struct pyu_source_cache *c, const char *path)
{
	if (!c || !path)
		return NULL;
	for (unsigned i = 0; i < PYU_SOURCE_MAX_FILES; i++)
		if (c->files[i].path && !strcmp(c->files[i].path, path))
			return &c->files[i];
	struct source_file *f = NULL;
	for (unsigned i = 0; i < PYU_SOURCE_MAX_FILES && !f; i++)
		if (!c->files[i].path)
			f = &c->files[i];
	if (!f) {
		f = &c->files[c->next];
		c->next = (c->next + 1) % PYU_SOURCE_MAX_FILES;
		file_clear(f);
	}
	f->path = strdup(path);
	if (!f->path)
		return NULL;
	if (is_pseudo_name(path))
		return f;
	char *local = c->target ? pyu_target_local_path(c->target, path) : strdup(path);
	if (!local)
		return f;
	if (read_whole(local, &f->data, &f->size)) {
		if (index_lines(f)) {
			f->readable = true;
		} else {
			free(f->data);
			f->data = NULL;
		}
	}
	free(local);
	return f;
}

bool pyu_source_line(struct pyu_source_cache *c, const char *path, int64_t line,
		     const char **ret, size_t *ret_len)
{
	struct source_file *f = lookup(c, path);
	if (!f || !f->readable || line < 1 || (uint64_t)line > f->line_count)
		return false;
	size_t start = f->starts[line - 1], end = f->starts[line];
	while (end > start && (f->data[end - 1] == '\n' || f->data[end - 1] == '\r'))
		end--;
	*ret = f->data + start;
	*ret_len = end - start;
	return true;
}

bool pyu_source_needs_cwd(const struct pyu_source_cache *c, const char *path)
{
	return c && c->target && path && path[0] != '/' && !is_pseudo_name(path) &&
	       !pyu_target_cwd_known(c->target);
}

int64_t pyu_source_line_count(struct pyu_source_cache *c, const char *path)
{
	struct source_file *f = lookup(c, path);
	if (!f || !f->readable)
		return -1;
	return (int64_t)f->line_count;
}

static struct memo *memo_slot(struct pyu_source_cache *c, const uint64_t key[4])
{
	uint64_t h = 1469598103934665603ull;
	for (int i = 0; i < 4; i++)
		h = (h ^ key[i]) * 1099511628211ull;
	return &c->memo[(h ^ h >> 32) % MEMO_SLOTS];
}

bool pyu_source_memo_find(struct pyu_source_cache *c, const uint64_t key[4], const char **text,
			  size_t *len)
{
	if (!c)
		return false;
	struct memo *m = memo_slot(c, key);
	if (!m->text || memcmp(m->key, key, sizeof(m->key)) != 0)
		return false;
	*text = m->text;
	*len = m->len;
	return true;
}

void pyu_source_memo_store(struct pyu_source_cache *c, const uint64_t key[4], const char *text,
			   size_t len)
{
	if (!c || len > PYU_SOURCE_MEMO_BYTES)
		return;
	struct memo *m = memo_slot(c, key);
	char *copy = malloc(len + 1);
	if (!copy)
		return;
	memcpy(copy, text, len);
	copy[len] = '\0';
	free(m->text);
	memcpy(m->key, key, sizeof(m->key));
	m->text = copy;
	m->len = len;
}
