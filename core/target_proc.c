// target_proc.c - the live-process backend: memory through process_vm_readv (falling back to
// /proc/PID/mem), mappings from /proc/PID/maps, thread ids from /proc/PID/task (listed when
// first asked for). What each thread is doing is read by target_proc_status.c.
// It does not stop or attach to the process; a debugger (or the caller) does that.
#include "target_proc.h"

#include "bytes.h"
#include "elf.h"
#include "file_kept.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/uio.h>
#include <unistd.h>

#define MAPS_BUFFER (64u << 10)
// Of /proc/PID/maps, what a live open reads first: about 8 lines, most often the executable's
// (its 5 or 6 segments, lowest in the address space) among them; not so for a PIE started
// through its loader (`ld.so ./python`: the heap's, then libc's lines come first), where the
// search for the runtime reads the rest (runtime.c, known_executable); under a long path only
// its first lines (a first line longer than this is read on to its end). The rest is read
// when asked for (target_impl.h, maps_partial): the kernel makes each line read (a path
// lookup for a file's), and the whole map of a small Python process was 40% of opening and
// walking it.
#define MAPS_PREFIX 1024u

static bool open_mem(struct proc_backend *p)
{
	if (p->mem_fd >= 0)
		return true;
	char path[64];
	snprintf(path, sizeof(path), "/proc/%d/mem", (int)p->pid);
	p->mem_fd = open(path, O_RDONLY | O_CLOEXEC);
	return p->mem_fd >= 0;
}

static uint64_t mem_read(struct proc_backend *p, uint64_t addr, void *buf, uint64_t len)
{
	if (!open_mem(p))
		return 0;
	uint64_t done = 0;
	while (done < len) {
		uint64_t a = addr + done;
		if (a > (uint64_t)INT64_MAX) // pread offsets are signed; no user memory up there
			break;
		size_t chunk = len - done > (1u << 30) ? (1u << 30) : (size_t)(len - done);
		ssize_t r = pread(p->mem_fd, (char *)buf + done, chunk, (off_t)a);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			break;
		done += (uint64_t)r;
	}
	return done;
}

static uint64_t proc_read(struct pyu_target *t, uint64_t addr, void *buf, uint64_t len)
{
	struct proc_backend *p = t->backend_data;
	if (p->use_mem)
		return mem_read(p, addr, buf, len);
	uint64_t done = 0;
	while (done < len) {
		size_t chunk = len - done > (1u << 30) ? (1u << 30) : (size_t)(len - done);
		struct iovec local = {(char *)buf + done, chunk};
		struct iovec remote = {(void *)(uintptr_t)(addr + done), chunk};
		ssize_t r = process_vm_readv(p->pid, &local, 1, &remote, 1, 0);
		if (r < 0 && (errno == ENOSYS || errno == EPERM) && done == 0) {
			// Seccomp or a kernel without it; /proc/PID/mem obeys the same ptrace
			// rules but is sometimes allowed where the syscall is not.
			p->use_mem = true;
			return mem_read(p, addr, buf, len);
		}
		if (r <= 0)
			break;
		done += (uint64_t)r;
		if ((size_t)r < chunk)
			break; // it stopped at a page it cannot read: another call would fail there
	}
	return done;
}

// One process_vm_readv for many small pieces: a local iovec each (the bytes go straight to
// their cache slots), a remote one for each run of pieces that follow each other in the
// process (what the kernel costs is mostly per remote iovec: it looks up and pins its pages
// anew for each). The bytes come in order, so the count returned says which pieces came
// whole.
static uint64_t proc_gather(struct pyu_target *t, const uint64_t *addrs, const uint32_t *lens,
			    size_t n, unsigned char *const *outs)
{
	struct proc_backend *p = t->backend_data;
	if (p->use_mem || n == 0 || n > PYU_GATHER_MAX)
		return 0;
	struct iovec *remote = malloc(2 * n * sizeof(*remote));
	if (!remote)
		return 0;
	struct iovec *local = remote + n;
	size_t k = 0, nr = 0;
	for (; k < n && lens[k] > 0 && addrs[k] <= UINTPTR_MAX - lens[k]; k++) {
		local[k] = (struct iovec){outs[k], lens[k]};
		if (nr && (uintptr_t)remote[nr - 1].iov_base + remote[nr - 1].iov_len == addrs[k])
			remote[nr - 1].iov_len += lens[k];
		else
			remote[nr++] = (struct iovec){(void *)(uintptr_t)addrs[k], lens[k]};
	}
	ssize_t r = k ? process_vm_readv(p->pid, local, (unsigned long)k, remote,
					 (unsigned long)nr, 0) : 0;
	free(remote);
	uint64_t got = r > 0 ? (uint64_t)r : 0, whole = 0;
	while (whole < k && got >= lens[whole])
		got -= lens[whole++];
	return whole;
}

static void free_mappings(struct pyu_mapping *m, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		free(m[i].path);
		free(m[i].local_path);
	}
	free(m);
}

static void proc_destroy(struct pyu_target *t)
{
	struct proc_backend *p = t->backend_data;
	if (p->mem_fd >= 0)
		close(p->mem_fd);
	if (p->task_fd >= 0)
		close(p->task_fd);
	for (size_t k = 0; k < 2; k++)
		free_mappings(p->retired[k], p->retired_count[k]);
	free(p);
}

static struct pyu_error *permission_error(int pid, const char *what)
{
	return pyu_error_create(PYU_ERR_IO,
				"permission denied reading %s of process %d: run as its user "
				"with ptrace permission (kernel.yama.ptrace_scope may forbid "
				"reading a process that is not your child; attaching a debugger "
				"or running as root allows it)",
				what, pid);
}

// Whether @path here is the file the process maps (same device and inode as the maps line).
static bool same_file(const char *path, unsigned dev_major, unsigned dev_minor, uint64_t inode)
{
	struct stat st;
	return stat(path, &st) == 0 && (uint64_t)st.st_ino == inode &&
	       major(st.st_dev) == dev_major && minor(st.st_dev) == dev_minor;
}

// For a file the process maps that is not at its path here (deleted, replaced since, or in
// another mount namespace): a path through /proc that reaches the very file, or NULL.
static char *proc_path_for(int pid, uint64_t start, uint64_t end, const char *path)
{
	char buf[96];
	snprintf(buf, sizeof(buf), "/proc/%d/map_files/%" PRIx64 "-%" PRIx64, pid, start, end);
	if (access(buf, R_OK) == 0) // the exact file; needs more privilege than ptrace
		return strdup(buf);
	size_t n = strlen(path) + 32;
	char *root = malloc(n);
	if (root) {
		snprintf(root, n, "/proc/%d/root%s", pid, path);
		if (access(root, R_OK) != 0) {
			free(root);
			root = NULL;
		}
	}
	return root;
}

// Parses a hexadecimal (@base 16, at most 16 digits) or decimal (at most 19) number at *@p
// that ends at @stop, and moves *@p past it (past every space when @stop is ' ', which the end
// of the line also satisfies). Returns false on anything else. A hand parser: sscanf was most
// of the time of opening a process.
static bool parse_num(char **p, unsigned base, char stop, uint64_t *ret)
{
	uint64_t v = 0;
	unsigned n = 0;
	char *s = *p;
	for (;; s++, n++) {
		unsigned d;
		char c = *s;
		if (c >= '0' && c <= '9')
			d = (unsigned)(c - '0');
		else if (base == 16 && c >= 'a' && c <= 'f')
			d = (unsigned)(c - 'a' + 10);
		else if (base == 16 && c >= 'A' && c <= 'F')
			d = (unsigned)(c - 'A' + 10);
		else
			break;
		if (n >= (base == 16 ? 16u : 19u))
			return false;
		v = v * base + d;
	}
	// The inode may end the line of an anonymous mapping.
	if (n == 0 || (*s != stop && !(stop == ' ' && (*s == '\n' || *s == '\0'))))
		return false;
	while (stop == ' ' && *s == ' ')
		s++;
	if (stop != ' ')
		s++;
	*p = s;
	*ret = v;
	return true;
}

// Parses one line of /proc/PID/maps into the target. Unparseable lines are skipped: the
// kernel's format is stable, and one odd line should not lose the rest.
static struct pyu_error *add_maps_line(struct pyu_target *t, char *line)
{
	uint64_t start, end, offset, inode, major_, minor_;
	char *p = line, *perms;
	if (!parse_num(&p, 16, '-', &start) || !parse_num(&p, 16, ' ', &end))
		return NULL;
	perms = p;
	while (*p && *p != ' ')
		p++;
	if (p - perms < 4 || *p != ' ')
		return NULL;
	while (*p == ' ')
		p++;
	if (!parse_num(&p, 16, ' ', &offset) || !parse_num(&p, 16, ':', &major_) ||
	    !parse_num(&p, 16, ' ', &minor_) || !parse_num(&p, 10, ' ', &inode) ||
	    major_ > UINT32_MAX || minor_ > UINT32_MAX)
		return NULL;
	unsigned dev_major = (unsigned)major_, dev_minor = (unsigned)minor_;
	char *path = p;
	size_t len = strlen(path);
	while (len > 0 && path[len - 1] == '\n')
		path[--len] = '\0';
	static const char deleted[] = " (deleted)";
	bool is_deleted = false;
	if (len >= sizeof(deleted) - 1 && path[0] == '/' &&
	    strcmp(path + len - (sizeof(deleted) - 1), deleted) == 0) {
		path[len - (sizeof(deleted) - 1)] = '\0';
		is_deleted = true;
	}
	if (start >= end)
		return NULL;
	struct pyu_error *err = pyu_target_add_mapping_perms(
		t, start, end, offset, perms[0] == 'r', perms[1] == 'w', perms[2] == 'x',
		path[0] ? path : NULL);
	if (err || path[0] != '/' || inode == 0)
		return err;
	struct pyu_mapping *m = (struct pyu_mapping *)pyu_target_find_mapping(t, start);
	if (m && m->start == start && m->local_path && strcmp(m->local_path, m->path) == 0) {
		m->inode = inode;
		m->dev_major = dev_major;
		m->dev_minor = dev_minor;
		m->deleted = is_deleted;
		m->local_check = PYU_LOCAL_PENDING; // proc_check_local
	}
	return NULL;
}

// Whether @m's file here is the one the process maps; when it is not (deleted, replaced
// since, or in another mount namespace), points @m at a path through /proc that reaches the
// mapped file, if there is one, to be compared by build ID. Mappings of the same file share
// the answer: a library's lines come one after another, and one stat() answers for all.
static void proc_check_local(struct pyu_target *t, struct pyu_mapping *m)
{
	const struct proc_backend *p = t->backend_data;
	if (m->local_check != PYU_LOCAL_PENDING)
		return;
	if (!m->deleted && same_file(m->path, m->dev_major, m->dev_minor, m->inode)) {
		for (size_t i = 0; i < t->mapping_count; i++) {
			struct pyu_mapping *o = &t->mappings[i];
			if (o->local_check == PYU_LOCAL_PENDING && !o->deleted &&
			    o->inode == m->inode && o->dev_major == m->dev_major &&
			    o->dev_minor == m->dev_minor && strcmp(o->path, m->path) == 0)
				o->local_check = PYU_LOCAL_SAME;
		}
		return;
	}
	m->local_check = PYU_LOCAL_COMPARE;
	char *local = proc_path_for(p->pid, m->start, m->end, m->path);
	if (local) {
		free(m->local_path);
		m->local_path = local;
		m->local_path_fixed = true;
	}
}

static struct pyu_error *open_maps(int pid, int *ret)
{
	char path[64];
	snprintf(path, sizeof(path), "/proc/%d/maps", pid);
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		if (errno == ENOENT)
			return pyu_error_create(PYU_ERR_IO, "no such process: %d", pid);
		if (errno == EACCES || errno == EPERM)
			return permission_error(pid, "the memory map");
		return pyu_error_create(PYU_ERR_IO, "cannot open %s: %s", path, strerror(errno));
	}
	*ret = fd;
	return NULL;
}

// Adds the lines of @text (@len bytes) to @t: every whole one, and a last one without its
// newline too when @whole (the end of the map).
static struct pyu_error *add_maps_text(struct pyu_target *t, char *text, size_t len, bool whole)
{
	size_t off = 0;
	struct pyu_error *err = NULL;
	while (!err && off < len) {
		char *nl = memchr(text + off, '\n', len - off);
		if (!nl && !whole)
			break;
		size_t end = nl ? (size_t)(nl - text) : len;
		text[end] = '\0'; // a newline, or the byte kept free after the text
		err = add_maps_line(t, text + off);
		off = end + 1;
	}
	return err;
}

// The start of /proc/PID/maps as an open read it, its whole lines (the text is parsed again
// from this copy: add_maps_text writes into what it parses).
#define EXE_TEXT_MAX 2048
struct exe_lines {
	size_t len;
	char text[EXE_TEXT_MAX];
};

static void copy_lines(struct exe_lines *lines, const char *text, size_t len)
{
	size_t whole = len;
	while (whole > 0 && text[whole - 1] != '\n')
		whole--;
	lines->len = whole <= sizeof(lines->text) ? whole : 0;
	memcpy(lines->text, text, lines->len);
}

// The lines of /proc/PID/maps that map a non-PIE executable (ET_EXEC: at the addresses its
// program headers name, the same in every process that runs it), kept for the life of the
// library by the file's identity (device, inode, size, times: pyu_file_id, from a stat() of
// /proc/PID/exe, which reaches the very file the process runs): a sampler opens a fresh
// handle per snapshot, and the open's read of the start of the map was 15% of such a handle
// on two threads (17 us, the kernel making each line; a stat of /proc/PID/exe costs 3). A
// file replaced, rewritten, renamed or linked again has another identity (the status-change
// time moves), and its lines are read again. Only the executable's own lines are kept, and
// the anonymous one right past them (the rest of its .bss); the heap's and the libraries'
// are placed anew in each process.
PYU_KEPT_TABLE(kept_exes, 4, struct exe_lines);

static void keep_exe_lines(const struct pyu_file_id *id, const char *text, size_t len)
{
	struct exe_lines kept = {.len = len};
	memcpy(kept.text, text, len);
	pyu_kept_put(&kept_exes, id, &kept, offsetof(struct exe_lines, text) + len);
}

// Whether @t's mapping @i starts where @line (ended by a newline) says.
static bool line_starts_mapping(const struct pyu_target *t, size_t i, char *line)
{
	uint64_t start;
	return parse_num(&line, 16, '-', &start) && start == t->mappings[i].start;
}

// After an open read the start of the map into @t (@lines, its text) and found the first
// mapping to hold an ET_EXEC ELF header: keeps the leading lines of the file @st names (the
// executable), and the anonymous line right after them, for the next open of a process of
// that file. Each kept line is checked against the mapping parsed from it.
static void keep_exe_prefix(const struct pyu_target *t, struct exe_lines *lines,
			    const struct stat *st)
{
	size_t off = 0, keep = 0, i = 0;
	for (; i < t->mapping_count && off < lines->len; i++) {
		const struct pyu_mapping *m = &t->mappings[i];
		char *line = lines->text + off;
		const char *nl = memchr(line, '\n', lines->len - off);
		if (!nl || !line_starts_mapping(t, i, line))
			break;
		bool exe = m->path && m->inode == (uint64_t)st->st_ino &&
			   m->dev_major == major(st->st_dev) && m->dev_minor == minor(st->st_dev);
		bool tail = !exe && !m->path && i > 0 && keep > 0 &&
			    t->mappings[i - 1].end == m->start;
		if (!exe && !tail)
			break;
		off = (size_t)(nl - lines->text) + 1;
		keep = off;
		if (tail)
			break;
	}
	if (keep == 0 || !t->mappings[0].path || t->mappings[0].offset != 0)
		return;
	struct pyu_file_id id;
	pyu_file_id_of(st, &id);
	keep_exe_lines(&id, lines->text, keep);
}

// Reads /proc/PID/maps into @t: all of it, or (@prefix) its first MAPS_PREFIX bytes alone in
// one read (the kernel makes only the lines asked for, each costing it a path lookup), read on
// until they hold a whole line (a file's path may be up to 4 KiB long), its whole lines then
// setting t->maps_partial and t->maps_stale.
static struct pyu_error *read_maps(struct pyu_target *t, bool prefix, struct exe_lines *lines)
{
	const struct proc_backend *p = t->backend_data;
	int fd = -1;
	struct pyu_error *err = open_maps(p->pid, &fd);
	if (err)
		return err;
	size_t cap = prefix ? MAPS_PREFIX + 1 : MAPS_BUFFER, len = 0;
	char *text = malloc(cap);
	bool end = false, line = false;
	if (!text)
		err = &pyu_error_nomem;
	while (!err && !end && !(prefix && line)) {
		if (cap - len < (prefix ? MAPS_PREFIX : MAPS_BUFFER / 2) + 1) {
			char *more = realloc(text, cap * 2);
			if (!more) {
				err = &pyu_error_nomem;
				break;
			}
			text = more;
			cap *= 2;
		}
		ssize_t r = read(fd, text + len, cap - len - 1); // a byte kept for the last NUL
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0) {
			err = pyu_error_create(PYU_ERR_IO, "cannot read /proc/%d/maps: %s",
					       (int)p->pid, strerror(errno));
			break;
		}
		line = line || memchr(text + len, '\n', (size_t)r);
		len += (size_t)r;
		end = r == 0;
	}
	close(fd);
	if (!err && lines)
		copy_lines(lines, text, len);
	if (!err)
		err = add_maps_text(t, text, len, end);
	free(text);
	if (!err && !end)
		t->maps_partial = t->maps_stale = true;
	return err;
}

static struct pyu_error *read_tasks(struct pyu_target *t, int pid)
{
	char path[64];
	snprintf(path, sizeof(path), "/proc/%d/task", pid);
	DIR *d = opendir(path);
	if (!d) {
		if (errno == ENOENT)
			return pyu_error_create(PYU_ERR_IO, "no such process: %d", pid);
		return pyu_error_create(PYU_ERR_IO, "cannot list %s: %s", path, strerror(errno));
	}
	struct pyu_error *err = NULL;
	struct dirent *e;
	while (!err && (e = readdir(d))) {
		char *endp;
		errno = 0;
		long long tid = strtoll(e->d_name, &endp, 10);
		if (e->d_name[0] < '0' || e->d_name[0] > '9' || *endp || errno || tid <= 0)
			continue;
		err = pyu_target_add_thread(t, tid);
	}
	closedir(d);
	return err;
}

static void proc_list_threads(struct pyu_target *t)
{
	const struct proc_backend *p = t->backend_data;
	struct pyu_error *err = read_tasks(t, p->pid);
	// A process gone since has no threads; anything else leaves the list short, which
	// matters to 3.7 and older (thread ids from it): say so once.
	char *msg = NULL;
	if (err && !t->notice && !strstr(pyu_error_message(err), "no such process") &&
	    asprintf(&msg, "the thread list is incomplete: %s", pyu_error_message(err)) >= 0)
		t->notice = msg;
	pyu_error_destroy(err);
}

// Whether @a and @b map the same thing: the same range of the same file, or the same
// anonymous memory.
static bool same_mapping(const struct pyu_mapping *a, const struct pyu_mapping *b)
{
	return a->start == b->start && a->end == b->end && a->offset == b->offset &&
	       a->readable == b->readable && a->writable == b->writable &&
	       a->executable == b->executable && a->inode == b->inode &&
	       a->dev_major == b->dev_major && a->dev_minor == b->dev_minor &&
	       a->deleted == b->deleted && (a->path == NULL) == (b->path == NULL) &&
	       (!a->path || strcmp(a->path, b->path) == 0);
}

// Reads the map again (all of it, or its start when @prefix) in place of the mappings known,
// a mapping unchanged keeping what was learnt of its file (which local file reads it, whether
// it is the one mapped); the old list is kept until the next snapshot begins (proc_refresh).
// When the map cannot be read (the process is gone), the old one stays (false): the reads
// will say what is wrong.
static bool reread_maps(struct pyu_target *t, bool prefix)
{
	struct proc_backend *p = t->backend_data;
	struct pyu_mapping *old = t->mappings;
	size_t old_count = t->mapping_count, old_cap = t->mapping_cap;
	t->mappings = NULL;
	t->mapping_count = t->mapping_cap = 0;
	struct pyu_error *err = read_maps(t, prefix, NULL);
	if (err) {
		pyu_error_destroy(err);
		free_mappings(t->mappings, t->mapping_count);
		t->mappings = old;
		t->mapping_count = old_count;
		t->mapping_cap = old_cap;
		return false;
	}
	// Both lists are sorted by start: one merge pass.
	size_t j = 0;
	for (size_t i = 0; i < t->mapping_count; i++) {
		struct pyu_mapping *m = &t->mappings[i];
		while (j < old_count && old[j].start < m->start)
			j++;
		if (j >= old_count || !same_mapping(m, &old[j]) || !m->local_path ||
		    !old[j].local_path)
			continue;
		char *kept = old[j].local_path;
		old[j].local_path = m->local_path; // freed with the old list
		m->local_path = kept;
		m->local_path_fixed = old[j].local_path_fixed;
		m->local_check = old[j].local_check;
	}
	// At most two readings a snapshot (the start, then all of it): lists looked up in it
	// stay valid until it ends.
	for (size_t k = 0; k < 2 && old; k++) {
		if (!p->retired[k]) {
			p->retired[k] = old;
			p->retired_count[k] = old_count;
			old = NULL;
		}
	}
	if (old) { // a third: the oldest goes
		free_mappings(p->retired[0], p->retired_count[0]);
		p->retired[0] = p->retired[1];
		p->retired_count[0] = p->retired_count[1];
		p->retired[1] = old;
		p->retired_count[1] = old_count;
	}
	return true;
}

// The target's reread_maps hook (target_impl.h): the process mapped and unmapped since the
// mappings were read.
static void proc_reread_maps(struct pyu_target *t)
{
	reread_maps(t, false);
}

// The target's read_map_start hook (target_impl.h): the open took the executable's lines
// kept from an earlier open and read nothing of the map; its start now, as such an open
// otherwise reads it (whole lines of its first 1 KiB: the heap's among them).
static void proc_read_map_start(struct pyu_target *t)
{
	t->maps_partial = t->maps_stale = false; // read_maps sets them again when it stops short
	if (!reread_maps(t, true))
		t->maps_partial = t->maps_stale = true;
}

// The target's refresh hook (target_impl.h), as a snapshot begins: the process started or
// ended threads (listed again when next asked for), and may have mapped or unmapped memory.
// Reading /proc/PID/maps was most of the cost of a small process's snapshot, and mappings
// rarely change while a process runs: they are only marked stale, read again when asked for
// (pyu_target_mapping_count, an address outside every known mapping, a snapshot that found
// something wrong).
static void proc_refresh(struct pyu_target *t)
{
	struct proc_backend *p = t->backend_data;
	t->thread_count = 0;
	t->list_threads = proc_list_threads;
	for (size_t k = 0; k < 2; k++) {
		free_mappings(p->retired[k], p->retired_count[k]);
		p->retired[k] = NULL;
		p->retired_count[k] = 0;
	}
	t->maps_stale = true;
	t->maps_partial = false;
}

// Reads the first bytes of the first readable mapping to find out early whether we may read
// this process at all, so the caller gets "permission denied" instead of empty stacks. Sets
// *@exec when that is the lowest mapping and its bytes are a 64-bit little-endian ET_EXEC ELF
// header at file offset 0 (e_type at byte 16): a non-PIE executable's first line.
static struct pyu_error *probe_access(struct pyu_target *t, int pid, bool *exec)
{
	struct proc_backend *p = t->backend_data;
	*exec = false;
	for (size_t i = 0; i < t->mapping_count; i++) {
		const struct pyu_mapping *m = &t->mappings[i];
		if (!m->readable || (m->path && m->path[0] == '['))
			continue;
		unsigned char b[18];
		size_t want = m->end - m->start < sizeof(b) ? 1 : sizeof(b);
		struct iovec local = {b, want}, remote = {(void *)(uintptr_t)m->start, want};
		ssize_t got = process_vm_readv(pid, &local, 1, &remote, 1, 0);
		if (got < 0 && errno != ESRCH && errno != EPERM && errno != ENOSYS)
			return NULL; // that page is odd; reads report their own faults
		if (got < 0 && errno == ESRCH)
			return pyu_error_create(PYU_ERR_IO, "no such process: %d", pid);
		if (got < 0) {
			p->use_mem = true;
			if (!open_mem(p)) {
				if (errno == EACCES || errno == EPERM)
					return permission_error(pid, "the memory");
				return pyu_error_create(PYU_ERR_IO, "cannot open /proc/%d/mem: %s",
							pid, strerror(errno));
			}
			got = pread(p->mem_fd, b, want, (off_t)m->start);
			if (got < 0 && (errno == EACCES || errno == EPERM))
				return permission_error(pid, "the memory");
		}
		*exec = i == 0 && got == (ssize_t)sizeof(b) && m->offset == 0 && m->path &&
			memcmp(b, "\177ELF", 4) == 0 && b[4] == 2 /* 64-bit */ &&
			b[5] == 1 /* little-endian */ && pyu_le16(b + 16) == 2 /* ET_EXEC */;
		return NULL;
	}
	return NULL;
}

// A process that maps no memory at all: a zombie (it has exited and its parent has not
// waited for it yet, as a script's child that just ended) or a kernel thread. Said so,
// instead of the search for an interpreter failing in no memory. NULL when it is neither.
static struct pyu_error *no_memory_error(int pid)
{
	char path[64], buf[512];
	snprintf(path, sizeof(path), "/proc/%d/stat", pid);
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return errno == ENOENT ? pyu_error_create(PYU_ERR_IO, "no such process: %d", pid)
				       : NULL;
	ssize_t n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return NULL;
	buf[n] = 0;
	// "PID (COMM) STATE ...": COMM may hold anything, ')' included: the last one ends it.
	const char *end = strrchr(buf, ')');
	if (!end || end[1] != ' ' || !end[2])
		return NULL;
	if (end[2] == 'Z' || end[2] == 'X')
		return pyu_error_create(PYU_ERR_IO, "process %d has exited (a zombie: its parent "
					"has not waited for it yet), or its main thread has", pid);
	return pyu_error_create(PYU_ERR_NOT_PYTHON, "process %d maps no memory of its own "
				"(a kernel thread)", pid);
}

// The start of the map of process @pid into @t, and may we read it: the executable's lines
// kept from an earlier open of a process of the same non-PIE file (keep_exe_prefix), else
// read from /proc/PID/maps (and kept for the next open when they are such a file's).
static struct pyu_error *open_maps_prefix(struct pyu_target *t, int pid)
{
	char exe[64];
	snprintf(exe, sizeof(exe), "/proc/%d/exe", pid);
	struct stat st;
	bool have_exe = stat(exe, &st) == 0 && S_ISREG(st.st_mode);
	struct exe_lines *lines = malloc(sizeof(*lines));
	if (!lines)
		return &pyu_error_nomem;
	struct pyu_file_id id;
	if (have_exe) {
		pyu_file_id_of(&st, &id);
		t->exe_id_known = true;
		t->exe_id = id;
		t->exe_inode = (uint64_t)st.st_ino;
		t->exe_dev_major = major(st.st_dev);
		t->exe_dev_minor = minor(st.st_dev);
	}
	struct pyu_error *err = NULL;
	bool exec = false;
	if (have_exe && pyu_kept_get(&kept_exes, &id, lines)) {
		err = add_maps_text(t, lines->text, lines->len, false);
		// The first line must still hold an ET_EXEC header where the kept line says.
		if (!err)
			err = probe_access(t, pid, &exec);
		if (!err && exec && t->mapping_count > 0) {
			t->maps_partial = t->maps_stale = true;
			t->read_map_start = proc_read_map_start;
			free(lines);
			return NULL;
		}
		free_mappings(t->mappings, t->mapping_count);
		t->mappings = NULL;
		t->mapping_count = t->mapping_cap = 0;
		if (err) {
			free(lines);
			return err;
		}
	}
	lines->len = 0;
	err = read_maps(t, true, lines); // ENOENT: "no such process"
	if (!err && t->mapping_count == 0)
		err = no_memory_error(pid);
	if (!err)
		err = probe_access(t, pid, &exec);
	if (!err && exec && have_exe && t->maps_partial)
		keep_exe_prefix(t, lines, &st);
	free(lines);
	return err;
}

PYU_PUBLIC struct pyu_error *pyu_target_open_pid(int32_t pid, struct pyu_target **ret)
{
	if (!ret || pid <= 0)
		return pyu_error_create(PYU_ERR_ARGUMENT, "invalid process id %d", (int)pid);
	struct proc_backend *p = malloc(sizeof(*p));
	if (!p)
		return &pyu_error_nomem;
	p->pid = pid;
	p->use_mem = false;
	p->mem_fd = -1;
	p->task_fd = -1;
	for (size_t k = 0; k < 2; k++) {
		p->retired[k] = NULL;
		p->retired_count[k] = 0;
	}
	struct pyu_target *t;
	struct pyu_error *err = pyu_target_create(proc_read, proc_destroy, p, "the live process",
						  &t);
	if (err) {
		free(p);
		return err;
	}
	t->live_pid = pid;
	t->read_statuses = pyu_proc_thread_statuses;
	t->backend_gather = proc_gather;
	t->check_local = proc_check_local;
	t->list_threads = proc_list_threads;
	t->changes = true;
	t->refresh = proc_refresh;
	t->reread_maps = proc_reread_maps;
	err = open_maps_prefix(t, pid);
	if (err) {
		pyu_target_destroy(t);
		return err;
	}
	*ret = t;
	return NULL;
}
