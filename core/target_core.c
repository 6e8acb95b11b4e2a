// target_core.c - the ELF core file backend: memory from PT_LOAD segments, falling back to the
// mapped files named by NT_FILE for pages the core omits; thread ids from NT_PRSTATUS; the
// executable from NT_AUXV (AT_ENTRY) or NT_PRPSINFO. Compressed cores (gzip, zstd, xz) are
// unpacked first to a temporary file that has no name (removed by the kernel however the
// process ends), no larger than the ELF headers found in the data promise (with a margin) and
// never past a ceiling. Memory is read in place from a read-only mapping of the whole file
// (the headers and notes, and every read where it cannot be mapped, with pread); every read is
// checked against the file's size, so a truncated or corrupt core gives unreadable memory or
// an error, never a crash.
#include "bytes.h"
#include "target_impl.h"

#include "elf.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#ifdef PYU_HAVE_ZLIB
#include <zlib.h>
#endif
#ifdef PYU_HAVE_ZSTD
#include <zstd.h>
#endif
#ifdef PYU_HAVE_LZMA
#include <lzma.h>
#endif

#define EHDR_SIZE 64
#define PHDR_SIZE 56
#define ET_CORE 4
#define PT_LOAD 1
#define PT_NOTE 4
#define PF_X 1
#define PF_W 2
#define PF_R 4
#define PN_XNUM 0xffff
#define NT_PRSTATUS 1
#define NT_PRPSINFO 3
#define NT_AUXV 6
#define NT_FILE 0x46494c45u
#define NT_SIGINFO 0x53494749u
#define NT_ARM_PAC_MASK 0x406u // {data mask, instruction mask}: the PAC bits of a pointer
#define PRSTATUS_CURSIG_OFFSET 12 // after struct elf_siginfo (signo, code, errno)
#define SIGINFO_CODE_OFFSET 8     // siginfo_t: si_signo, si_errno, si_code, then the union
#define SIGINFO_ADDR_OFFSET 16
// Signals whose si_addr is the faulting address (when si_code > 0, i.e. sent by the kernel).
#define FAULT_SIGNAL(sig) ((sig) == 4 || (sig) == 5 || (sig) == 7 || (sig) == 8 || (sig) == 11)
#define AT_PHDR 3
#define AT_PHNUM 5
#define AT_BASE 7
#define AT_ENTRY 9
#define AT_EXECFN 31
#define PRSTATUS_PID_OFFSET 32 // struct elf_prstatus: siginfo(12) cursig(2+2) sigpend sighold
#define PRSTATUS_PPID_OFFSET 36
#define PRSTATUS_UTIME_OFFSET 48   // struct timeval pr_utime, then pr_stime
#define PRSTATUS_STIME_OFFSET 64
#define PRPSINFO_PID_OFFSET 24
#define PRPSINFO_FNAME_OFFSET 40
#define PRPSINFO_FNAME_LEN 16

#define MAX_PHNUM (1u << 20)
#define MAX_NOTES_SIZE (64u << 20) // bytes of one PT_NOTE segment we are willing to parse
#define PYU_DEFAULT_MAX_UNPACKED (16ull << 30) // of a compressed core, unless raised

struct core_load {
	uint64_t vaddr, memsz, filesz, offset;
	uint32_t flags;
};

struct core_backend {
	int fd;
	uint64_t file_size;
	uint64_t expected_size; // where the last segment's data ends, by the headers
	uint16_t machine;       // ELF e_machine
	bool has_sections;      // section headers: a debugger (BFD) wrote it, never the kernel
	struct core_load *loads; // sorted by vaddr
	size_t load_count;
	// The whole file mapped read-only for pyu_target_direct() reads, made on first use;
	// map_failed when it could not be (then reads go through pread as ever).
	const unsigned char *map;
	bool map_failed;
	const struct core_load *last_view; // the load the last view was in (most are in it again)
};

struct file_entry {
	uint64_t start, end, offset; // offset in bytes
	const char *name;            // points into the note buffer
};

struct core_notes {
	struct file_entry *files;
	size_t file_count;
	uint64_t entry;    // AT_ENTRY, 0 if unknown
	char fname[PRPSINFO_FNAME_LEN + 1]; // pr_fname, "" if unknown
	uint32_t prstatus_seen; // NT_PRSTATUS notes so far; NT_SIGINFO follows its thread's
	int64_t current_tid;    // the thread of the last NT_PRSTATUS: its other notes follow it
	int64_t pid;            // NT_PRPSINFO's pr_pid (the main thread's tid); 0 if unknown
	bool has_ids;           // some NT_PRSTATUS names a parent process: the kernel wrote it
				// (gdb's gcore writes no ids and no CPU times)
	bool gdb_note;          // a note owned by "GDB" (gdb's target description): gdb wrote it
};

// Reads up to @len bytes at @offset of the core; returns how many (short at end of file).
static uint64_t core_pread(const struct core_backend *c, uint64_t offset, void *buf,
			   uint64_t len)
{
	return pyu_pread_all(c->fd, c->file_size, offset, buf, len);
}

// The load containing @addr, or NULL; *next is set to the start of the first load above
// @addr (UINT64_MAX if none).
static const struct core_load *find_load(const struct core_backend *c, uint64_t addr,
					 uint64_t *next)
{
	size_t lo = 0, hi = c->load_count;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (c->loads[mid].vaddr <= addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	*next = lo < c->load_count ? c->loads[lo].vaddr : UINT64_MAX;
	if (lo > 0) {
		const struct core_load *l = &c->loads[lo - 1];
		if (addr - l->vaddr < l->memsz)
			return l;
	}
	return NULL;
}

// Reads the part of [addr, addr+len) that a mapped file backs. Returns bytes read.
static uint64_t read_from_file(struct pyu_target *t, uint64_t addr, unsigned char *buf,
			       uint64_t len)
{
	const struct pyu_mapping *m = pyu_target_find_mapping(t, addr);
	if (!m || !m->local_path || !pyu_target_file_matches(t, m))
		return 0;
	if (len > m->end - addr)
		len = m->end - addr;
	uint64_t off = m->offset + (addr - m->start);
	if (off < m->offset)
		return 0;
	uint64_t r = pyu_target_read_file(t, m->local_path, off, buf, len);
	if (r > 0 && r < len) {
		// The file ended inside this page: the kernel shows the rest of the page as zeros.
		uint64_t page_end = ((addr + r) | (PYU_PAGE_SIZE - 1)) + 1;
		uint64_t z = page_end - (addr + r);
		if (z > len - r)
			z = len - r;
		memset(buf + r, 0, (size_t)z);
		r += z;
	}
	return r;
}

static uint64_t core_read(struct pyu_target *t, uint64_t addr, void *buf, uint64_t len)
{
	const struct core_backend *c = t->backend_data;
	unsigned char *out = buf;
	uint64_t done = 0;
	while (done < len) {
		uint64_t a = addr + done;
		if (a < addr)
			break;
		uint64_t next;
		const struct core_load *l = find_load(c, a, &next);
		uint64_t want = len - done, r;
		if (l && a - l->vaddr < l->filesz) {
			uint64_t delta = a - l->vaddr;
			if (want > l->filesz - delta)
				want = l->filesz - delta;
			if (l->offset + delta < l->offset)
				break;
			// Past the end of a truncated core this is short: unreadable, because
			// the file on disk need not hold what the process had there.
			r = core_pread(c, l->offset + delta, out + done, want);
		} else {
			// Omitted from the core: only a mapped file can tell what was there.
			uint64_t limit = l ? l->vaddr + l->memsz : next;
			if (limit > a && want > limit - a)
				want = limit - a;
			r = read_from_file(t, a, out + done, want);
		}
		done += r;
		if (r < want || r == 0)
			break;
	}
	return done;
}

// Reads only the core's own data (no mapped files).
static uint64_t core_image_read(struct pyu_target *t, uint64_t addr, void *buf, uint64_t len)
{
	const struct core_backend *c = t->backend_data;
	uint64_t next;
	const struct core_load *l = find_load(c, addr, &next);
	if (!l || addr - l->vaddr >= l->filesz)
		return 0;
	uint64_t delta = addr - l->vaddr;
	if (len > l->filesz - delta)
		len = l->filesz - delta;
	if (l->offset + delta < l->offset)
		return 0;
	return core_pread(c, l->offset + delta, buf, len);
}

// Maps the whole core read-only for core_view(); false when it cannot be (larger than the
// address space, or refused), and then reads go through pread as ever.
static bool map_core(struct core_backend *c)
{
	if (c->map)
		return true;
	if (c->map_failed || !c->file_size || c->file_size > SIZE_MAX)
		return false;
	void *m = mmap(NULL, (size_t)c->file_size, PROT_READ, MAP_SHARED, c->fd, 0);
	if (m == MAP_FAILED) {
		c->map_failed = true;
		return false;
	}
	c->map = m;
	return true;
}

// The core's own bytes of [addr, addr+len) in place, when one load's data in the file holds
// them all (never a mapped file's, never past a truncated core's end); else NULL.
static const unsigned char *core_view(struct pyu_target *t, uint64_t addr, uint64_t len)
{
	struct core_backend *c = t->backend_data;
	if (!map_core(c))
		return NULL;
	const struct core_load *l = c->last_view;
	if (!l || addr - l->vaddr >= l->memsz) {
		uint64_t next;
		if (!(l = find_load(c, addr, &next)))
			return NULL;
		c->last_view = l;
	}
	uint64_t delta = addr - l->vaddr, off = l->offset + delta;
	if (delta >= l->filesz || len > l->filesz - delta || off < l->offset ||
	    off > c->file_size || len > c->file_size - off)
		return NULL;
	return c->map + off;
}

// Lets the kernel take back the pages of the mapping (they stay in its page cache; the next
// view faults them in again): a long run of direct reads does not keep the core resident.
static void core_release(struct pyu_target *t)
{
	struct core_backend *c = t->backend_data;
	if (c->map)
		madvise((void *)c->map, (size_t)c->file_size, MADV_DONTNEED);
}

// As a snapshot begins: a page of the mapping past the file's end raises SIGBUS when touched,
// so a core that shrank since it was opened (cut short by whoever writes it) is no longer read
// in place, and its reads stop at its new end. Mapping nothing past the end at open is
// core_view's bounds; this covers a file cut later, up to the snapshot's start.
static void core_begin(struct pyu_target *t)
{
	struct core_backend *c = t->backend_data;
	struct stat st;
	if (!c->map)
		return;
	bool known = fstat(c->fd, &st) == 0 && st.st_size >= 0;
	if (known && (uint64_t)st.st_size >= c->file_size)
		return;
	munmap((void *)c->map, (size_t)c->file_size);
	c->map = NULL;
	c->map_failed = true;
	c->last_view = NULL;
	t->in_place = false;
	if (known)
		c->file_size = (uint64_t)st.st_size;
}

static void core_destroy(struct pyu_target *t)
{
	struct core_backend *c = t->backend_data;
	if (c->map)
		munmap((void *)c->map, (size_t)c->file_size);
	if (c->fd >= 0)
		close(c->fd);
	free(c->loads);
	free(c);
}

// ---- decompression -------------------------------------------------------------------------

enum compression { COMP_NONE, COMP_GZIP, COMP_ZSTD, COMP_XZ };

static enum compression sniff(int fd)
{
	unsigned char m[6] = {0};
	if (pread(fd, m, sizeof(m), 0) < 4)
		return COMP_NONE;
	if (m[0] == 0x1f && m[1] == 0x8b)
		return COMP_GZIP;
	if (m[0] == 0x28 && m[1] == 0xb5 && m[2] == 0x2f && m[3] == 0xfd)
		return COMP_ZSTD;
	if (memcmp(m, "\xfd" "7zXZ\0", 6) == 0)
		return COMP_XZ;
	return COMP_NONE;
}

// Parses a size: digits and an optional K, M, G or T (powers of 1024; "GiB", "GB" also do).
// On failure (not a size, too large), *ret is unchanged.
bool pyu_parse_size(const char *text, uint64_t *ret)
{
	if (!text || text[0] < '0' || text[0] > '9')
		return false;
	char *end;
	errno = 0;
	unsigned long long v = strtoull(text, &end, 10);
	if (errno)
		return false;
	unsigned shift = 0;
	switch (*end) {
	case 'k': case 'K': shift = 10; break;
	case 'm': case 'M': shift = 20; break;
	case 'g': case 'G': shift = 30; break;
	case 't': case 'T': shift = 40; break;
	case '\0': break;
	default: return false;
	}
	if (shift && (*++end == 'i' || *end == 'I'))
		end++;
	if (shift && (*end == 'b' || *end == 'B'))
		end++;
	if (*end || v > (UINT64_MAX >> shift))
		return false;
	*ret = (uint64_t)v << shift;
	return true;
}

struct sink; // defined only with a decompressor; decompress() names it either way

#if defined(PYU_HAVE_ZLIB) || defined(PYU_HAVE_ZSTD) || defined(PYU_HAVE_LZMA)
#define CHUNK (256u << 10)
// Unpacked data may exceed what the headers promise by this much (a quarter, and 16 MiB):
// padding after the data, core writers that add a section table at the end.
#define PROMISE_MARGIN(n) ((n) / 4 + (16ull << 20))

// Where unpacked data goes: the temporary file, no further than a limit that starts at the
// ceiling and shrinks to what the ELF headers promise once they have been unpacked.
struct sink {
	int fd;
	uint64_t written;
	uint64_t ceiling, limit;
	uint64_t promised;  // by the headers; 0 until known
	uint64_t headers_end; // where the program header table ends; 0 until the ELF header is in
	bool checked;       // the headers were examined (or cannot be, PN_XNUM)
	char fail[256];
};

// Examines the headers once enough data is unpacked. False (and s->fail set) when the data
// cannot be an ELF core or promises more than may be unpacked.
static bool sink_check_headers(struct sink *s)
{
	unsigned char eh[EHDR_SIZE];
	if (s->headers_end == 0) {
		if (s->written < EHDR_SIZE)
			return true;
		if (pyu_pread_all(s->fd, s->written, 0, eh, sizeof(eh)) != sizeof(eh) ||
		    memcmp(eh, "\177ELF", 4) != 0) {
			snprintf(s->fail, sizeof(s->fail), "the unpacked data is not an ELF file");
			return false;
		}
		uint64_t phoff = pyu_le64(eh + 32), phnum = pyu_le16(eh + 56);
		uint64_t phentsize = pyu_le16(eh + 54);
		if (phnum == PN_XNUM || phentsize < PHDR_SIZE || phoff > s->limit ||
		    phnum * phentsize > s->limit - phoff) {
			s->checked = true; // read_phdrs judges it; the ceiling still holds
			return true;
		}
		s->headers_end = phoff + phnum * phentsize;
	}
	if (s->written < s->headers_end)
		return true;
	s->checked = true;
	if (pyu_pread_all(s->fd, s->written, 0, eh, sizeof(eh)) != sizeof(eh))
		return true;
	uint64_t phoff = pyu_le64(eh + 32), shoff = pyu_le64(eh + 40);
	uint64_t phentsize = pyu_le16(eh + 54), phnum = pyu_le16(eh + 56);
	uint64_t shentsize = pyu_le16(eh + 58), shnum = pyu_le16(eh + 60);
	uint64_t promised = s->headers_end;
	if (shoff && shoff + shnum * shentsize > shoff && shoff + shnum * shentsize > promised)
		promised = shoff + shnum * shentsize;
	unsigned char ph[PHDR_SIZE];
	for (uint64_t i = 0; i < phnum; i++) {
		if (pyu_pread_all(s->fd, s->written, phoff + i * phentsize, ph, sizeof(ph)) !=
		    sizeof(ph))
			return true;
		uint64_t off = pyu_le64(ph + 8), filesz = pyu_le64(ph + 32);
		if (off + filesz < off) {
			snprintf(s->fail, sizeof(s->fail), "program header %" PRIu64 " places "
				 "data past the end of any file", i);
			return false;
		}
		if (off + filesz > promised)
			promised = off + filesz;
	}
	s->promised = promised;
	if (promised > s->ceiling) {
		snprintf(s->fail, sizeof(s->fail), "its ELF headers promise %" PRIu64 " bytes, "
			 "more than the ceiling of %" PRIu64 " (--max-unpacked or "
			 "PYUNWIND_MAX_UNPACKED raise it)", promised, s->ceiling);
		return false;
	}
	struct statvfs vfs;
	if (fstatvfs(s->fd, &vfs) == 0 && vfs.f_frsize > 0 &&
	    vfs.f_bavail < UINT64_MAX / vfs.f_frsize &&
	    promised > s->written + (uint64_t)vfs.f_bavail * vfs.f_frsize) {
		snprintf(s->fail, sizeof(s->fail), "its ELF headers promise %" PRIu64 " bytes "
			 "and the temporary directory has %" PRIu64 " free (set TMPDIR "
			 "elsewhere)", promised, s->written + (uint64_t)vfs.f_bavail * vfs.f_frsize);
		return false;
	}
	uint64_t margin = PROMISE_MARGIN(promised);
	if (promised + margin < s->limit)
		s->limit = promised + margin;
	return true;
}

// Appends @len unpacked bytes. False (s->fail set) when they cannot or must not be written.
static bool sink_write(struct sink *s, const void *buf, size_t len)
{
	if (len > s->limit - s->written) {
		if (s->promised)
			snprintf(s->fail, sizeof(s->fail), "it unpacks to more than %" PRIu64
				 " bytes, though its ELF headers promise %" PRIu64 " (a "
				 "decompression bomb?)", s->limit, s->promised);
		else
			snprintf(s->fail, sizeof(s->fail), "it unpacks to more than the ceiling "
				 "of %" PRIu64 " bytes (--max-unpacked or PYUNWIND_MAX_UNPACKED "
				 "raise it)", s->limit);
		return false;
	}
	const char *p = buf;
	size_t left = len;
	while (left > 0) {
		ssize_t w = write(s->fd, p, left);
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0) {
			snprintf(s->fail, sizeof(s->fail), "cannot write the temporary file: %s",
				 w < 0 ? strerror(errno) : "no space");
			return false;
		}
		p += w;
		left -= (size_t)w;
	}
	s->written += len;
	return s->checked || sink_check_headers(s);
}

static ssize_t read_some(int fd, void *buf, size_t len)
{
	for (;;) {
		ssize_t r = read(fd, buf, len);
		if (r >= 0 || errno != EINTR)
			return r;
	}
}
#endif

#ifdef PYU_HAVE_ZLIB
static const char *gunzip(int in, struct sink *out, unsigned char *ibuf, unsigned char *obuf)
{
	z_stream z;
	memset(&z, 0, sizeof(z));
	if (inflateInit2(&z, 15 + 32) != Z_OK) // 32: accept a gzip header
		return "cannot initialise zlib";
	const char *fail = NULL;
	bool in_member = false; // inside a gzip member (concatenated members are allowed)
	bool any_member = false;
	for (;;) {
		if (z.avail_in == 0) {
			ssize_t r = read_some(in, ibuf, CHUNK);
			if (r < 0) {
				fail = "read error";
				break;
			}
			if (r == 0) {
				if (in_member || !any_member)
					fail = "truncated gzip data";
				break;
			}
			z.next_in = ibuf;
			z.avail_in = (uInt)r;
		}
		z.next_out = obuf;
		z.avail_out = CHUNK;
		int rc = inflate(&z, Z_NO_FLUSH);
		if (rc != Z_OK && rc != Z_STREAM_END && rc != Z_BUF_ERROR) {
			// Garbage after a complete member (padding) ends the data, as gzip does.
			if (!in_member && any_member)
				break;
			fail = "corrupt gzip data";
			break;
		}
		in_member = true;
		if (!sink_write(out, obuf, CHUNK - z.avail_out)) {
			fail = out->fail;
			break;
		}
		if (rc == Z_STREAM_END) {
			any_member = true;
			in_member = false;
			inflateReset(&z);
		}
	}
	inflateEnd(&z);
	return fail;
}
#endif

#ifdef PYU_HAVE_ZSTD
static const char *unzstd(int in, struct sink *out, unsigned char *ibuf, unsigned char *obuf)
{
	ZSTD_DCtx *d = ZSTD_createDCtx();
	if (!d)
		return "cannot initialise zstd";
	const char *fail = NULL;
	size_t last = 0;
	for (;;) {
		ssize_t r = read_some(in, ibuf, CHUNK);
		if (r < 0) {
			fail = "read error";
			break;
		}
		if (r == 0) {
			if (last != 0)
				fail = "truncated zstd data";
			break;
		}
		ZSTD_inBuffer ib = {ibuf, (size_t)r, 0};
		while (!fail && ib.pos < ib.size) {
			ZSTD_outBuffer ob = {obuf, CHUNK, 0};
			last = ZSTD_decompressStream(d, &ob, &ib);
			if (ZSTD_isError(last))
				fail = "corrupt zstd data";
			else if (!sink_write(out, obuf, ob.pos))
				fail = out->fail;
		}
		if (fail)
			break;
	}
	// Flush what the decoder still holds.
	while (!fail && last != 0) {
		ZSTD_inBuffer ib = {ibuf, 0, 0};
		ZSTD_outBuffer ob = {obuf, CHUNK, 0};
		last = ZSTD_decompressStream(d, &ob, &ib);
		if (ZSTD_isError(last))
			fail = "corrupt zstd data";
		else if (ob.pos == 0)
			fail = "truncated zstd data";
		else if (!sink_write(out, obuf, ob.pos))
			fail = out->fail;
	}
	ZSTD_freeDCtx(d);
	return fail;
}
#endif

#ifdef PYU_HAVE_LZMA
static const char *unxz(int in, struct sink *out, unsigned char *ibuf, unsigned char *obuf)
{
	lzma_stream s = LZMA_STREAM_INIT;
	if (lzma_stream_decoder(&s, UINT64_MAX, LZMA_CONCATENATED) != LZMA_OK)
		return "cannot initialise liblzma";
	const char *fail = NULL;
	lzma_action action = LZMA_RUN;
	for (;;) {
		if (s.avail_in == 0 && action == LZMA_RUN) {
			ssize_t r = read_some(in, ibuf, CHUNK);
			if (r < 0) {
				fail = "read error";
				break;
			}
			if (r == 0)
				action = LZMA_FINISH;
			s.next_in = ibuf;
			s.avail_in = (size_t)r;
		}
		s.next_out = obuf;
		s.avail_out = CHUNK;
		lzma_ret rc = lzma_code(&s, action);
		if (!sink_write(out, obuf, CHUNK - s.avail_out)) {
			fail = out->fail;
			break;
		}
		if (rc == LZMA_STREAM_END)
			break;
		if (rc != LZMA_OK) {
			fail = rc == LZMA_BUF_ERROR ? "truncated xz data" : "corrupt xz data";
			break;
		}
	}
	lzma_end(&s);
	return fail;
}
#endif

#if defined(PYU_HAVE_ZLIB) || defined(PYU_HAVE_ZSTD) || defined(PYU_HAVE_LZMA)
// An unnamed temporary file in @dir, mode 0600. O_TMPFILE never gives it a name; where the file
// system lacks it, a random name (mkostemp) is removed at once. Either way the kernel frees it
// however the process ends (an interrupted debugger, SIGKILL). Not a memfd: cores are large
// and would sit in memory. Returns -1 (errno set) on failure.
static int unnamed_temp_file(const char *dir)
{
	int fd = open(dir, O_TMPFILE | O_RDWR | O_EXCL | O_CLOEXEC, 0600);
	if (fd >= 0 || (errno != EOPNOTSUPP && errno != EISDIR && errno != EINVAL))
		return fd;
	char name[4096];
	if (snprintf(name, sizeof(name), "%s/pyunwind-core-XXXXXX", dir) >= (int)sizeof(name)) {
		errno = ENAMETOOLONG;
		return -1;
	}
	fd = mkostemp(name, O_CLOEXEC);
	if (fd >= 0)
		unlink(name);
	return fd;
}
#endif

// The ceiling of unpacked bytes: @max_unpacked, else $PYUNWIND_MAX_UNPACKED, else the default.
static struct pyu_error *unpack_ceiling(uint64_t max_unpacked, uint64_t *ret)
{
	if (max_unpacked) {
		*ret = max_unpacked;
		return NULL;
	}
	const char *env = getenv("PYUNWIND_MAX_UNPACKED");
	if (env && env[0]) {
		if (!pyu_parse_size(env, ret) || *ret == 0)
			return pyu_error_create(PYU_ERR_ARGUMENT, "PYUNWIND_MAX_UNPACKED=%s is not "
						"a size (a number, K, M, G or T)", env);
		return NULL;
	}
	*ret = PYU_DEFAULT_MAX_UNPACKED;
	return NULL;
}

// Replaces *fd (a compressed core) by an unnamed temporary file holding its contents, at most
// @ceiling bytes and not much more than the unpacked ELF headers promise. On error *fd is
// unchanged and nothing is left on disk.
static struct pyu_error *decompress(const char *path, enum compression comp, uint64_t ceiling,
				    int *fd)
{
	static const char *const names[] = {"", "gzip", "zstd", "xz"};
	const char *(*fn)(int, struct sink *, unsigned char *, unsigned char *) = NULL;
#ifdef PYU_HAVE_ZLIB
	if (comp == COMP_GZIP)
		fn = gunzip;
#endif
#ifdef PYU_HAVE_ZSTD
	if (comp == COMP_ZSTD)
		fn = unzstd;
#endif
#ifdef PYU_HAVE_LZMA
	if (comp == COMP_XZ)
		fn = unxz;
#endif
	if (!fn)
		return pyu_error_create(PYU_ERR_UNSUPPORTED, "%s is %s-compressed and this build "
					"has no %s support: decompress it first", path,
					names[comp], names[comp]);
#if !defined(PYU_HAVE_ZLIB) && !defined(PYU_HAVE_ZSTD) && !defined(PYU_HAVE_LZMA)
	(void)fd;
	(void)ceiling;
	return NULL; // not reached: fn is NULL without any decompressor
#else
	const char *dir = getenv("TMPDIR");
	if (!dir || dir[0] == '\0')
		dir = "/tmp";
	struct sink sk = {.fd = unnamed_temp_file(dir), .ceiling = ceiling, .limit = ceiling};
	if (sk.fd < 0)
		return pyu_error_create(PYU_ERR_IO, "cannot create a temporary file in %s to "
					"decompress %s: %s", dir, path, strerror(errno));
	unsigned char *ibuf = malloc(CHUNK), *obuf = malloc(CHUNK);
	const char *fail = "out of memory";
	if (ibuf && obuf)
		fail = lseek(*fd, 0, SEEK_SET) == 0 ? fn(*fd, &sk, ibuf, obuf) : "cannot seek";
	free(ibuf);
	free(obuf);
	if (fail) {
		struct pyu_error *err = pyu_error_create(PYU_ERR_FORMAT, "cannot decompress %s "
							 "(%s): %s", path, names[comp], fail);
		close(sk.fd);
		return err;
	}
	close(*fd);
	*fd = sk.fd;
	return NULL;
#endif
}

// ---- headers and notes ---------------------------------------------------------------------

static struct pyu_error *read_phdrs(struct core_backend *c, const char *path,
				    struct core_load **notes, size_t *note_count)
{
	unsigned char eh[EHDR_SIZE];
	if (core_pread(c, 0, eh, sizeof(eh)) != sizeof(eh) || memcmp(eh, "\177ELF", 4) != 0)
		return pyu_error_create(PYU_ERR_FORMAT, "%s is not an ELF file", path);
	if (eh[4] != 2 || eh[5] != 1)
		return pyu_error_create(PYU_ERR_UNSUPPORTED, "%s: only 64-bit little-endian "
					"cores are supported", path);
	if (pyu_le16(eh + 16) != ET_CORE)
		return pyu_error_create(PYU_ERR_FORMAT, "%s is an ELF file but not a core dump",
					path);
	c->machine = pyu_le16(eh + 18);
	uint64_t phoff = pyu_le64(eh + 32), shoff = pyu_le64(eh + 40);
	uint16_t phentsize = pyu_le16(eh + 54);
	uint64_t phnum = pyu_le16(eh + 56);
	// The kernel writes section headers only to carry a segment count past PN_XNUM (one
	// header); gdb's cores, written through BFD, name their sections (note0, load, ...).
	c->has_sections = phnum != PN_XNUM && shoff != 0 && pyu_le16(eh + 60) > 0;
	if (phnum == PN_XNUM) {
		// More than 65534 segments: the count is sh_info of section header 0.
		unsigned char sh0[64];
		if (shoff == 0 || core_pread(c, shoff, sh0, sizeof(sh0)) != sizeof(sh0))
			return pyu_error_create(PYU_ERR_FORMAT, "%s: truncated core: the "
						"segment count is missing", path);
		phnum = pyu_le32(sh0 + 44);
	}
	if (phnum == 0)
		return pyu_error_create(PYU_ERR_FORMAT, "%s: core has no segments", path);
	if (phentsize < PHDR_SIZE || phnum > MAX_PHNUM)
		return pyu_error_create(PYU_ERR_FORMAT, "%s: bad program header size %u or "
					"count %" PRIu64, path, phentsize, phnum);
	size_t table_len = (size_t)phnum * phentsize;
	// Checked before allocating: a table that cannot be in the file is not worth memory.
	if (phoff > c->file_size || table_len > c->file_size - phoff)
		return pyu_error_create(PYU_ERR_FORMAT, "%s: truncated core: program headers "
					"run past the end of the file", path);
	unsigned char *table = malloc(table_len);
	if (!table)
		return &pyu_error_nomem;
	if (core_pread(c, phoff, table, table_len) != table_len) {
		free(table);
		return pyu_error_create(PYU_ERR_IO, "%s: cannot read the program headers", path);
	}
	c->loads = calloc((size_t)phnum, sizeof(*c->loads));
	*notes = calloc((size_t)phnum, sizeof(**notes));
	if (!c->loads || !*notes) {
		free(table);
		return &pyu_error_nomem;
	}
	for (size_t i = 0; i < phnum; i++) {
		const unsigned char *ph = table + i * phentsize;
		struct core_load l = {
			.flags = pyu_le32(ph + 4),
			.offset = pyu_le64(ph + 8),
			.vaddr = pyu_le64(ph + 16),
			.filesz = pyu_le64(ph + 32),
			.memsz = pyu_le64(ph + 40),
		};
		uint32_t type = pyu_le32(ph);
		if ((type == PT_NOTE || type == PT_LOAD) && l.filesz > 0 &&
		    l.offset + l.filesz > l.offset && l.offset + l.filesz > c->expected_size)
			c->expected_size = l.offset + l.filesz;
		if (type == PT_NOTE) {
			(*notes)[(*note_count)++] = l;
		} else if (type == PT_LOAD && l.memsz > 0 && l.vaddr + l.memsz > l.vaddr) {
			if (l.filesz > l.memsz) // never more data than memory
				l.filesz = l.memsz;
			c->loads[c->load_count++] = l;
		}
	}
	free(table);
	// Sort by address (insertion sort: cores come sorted already, so this is linear).
	for (size_t i = 1; i < c->load_count; i++) {
		struct core_load l = c->loads[i];
		size_t j = i;
		while (j > 0 && c->loads[j - 1].vaddr > l.vaddr) {
			c->loads[j] = c->loads[j - 1];
			j--;
		}
		c->loads[j] = l;
	}
	return NULL;
}

// Parses the NT_FILE note in @desc. Malformed content is ignored (no file mappings).
static void parse_nt_file(unsigned char *desc, uint64_t len, struct core_notes *n)
{
	if (n->files || len < 16)
		return;
	uint64_t count = pyu_le64(desc), page = pyu_le64(desc + 8);
	if (page == 0 || (page & (page - 1)) != 0 || page > (1u << 30))
		return;
	if (count > (len - 16) / 24 || count > PYU_MAX_MAPPINGS)
		return;
	unsigned char *names = desc + 16 + count * 24;
	uint64_t names_len = len - 16 - count * 24;
	n->files = calloc(count ? (size_t)count : 1, sizeof(*n->files));
	if (!n->files)
		return;
	uint64_t at = 0;
	for (uint64_t i = 0; i < count; i++) {
		const unsigned char *e = desc + 16 + i * 24;
		uint64_t start = pyu_le64(e), end = pyu_le64(e + 8), ofs = pyu_le64(e + 16);
		if (at >= names_len)
			break;
		unsigned char *nul = memchr(names + at, '\0', (size_t)(names_len - at));
		if (!nul)
			break;
		char *name = (char *)names + at;
		at = (uint64_t)(nul - names) + 1;
		// The kernel names a file unlinked since it was mapped "PATH (deleted)" (a package
		// upgraded under a running process); the file to look for is PATH.
		static const char deleted[] = " (deleted)";
		size_t name_len = (size_t)(nul - (unsigned char *)name);
		if (name_len > sizeof(deleted) - 1 && name[0] == '/' &&
		    memcmp(name + name_len - (sizeof(deleted) - 1), deleted, sizeof(deleted) - 1) == 0)
			name[name_len - (sizeof(deleted) - 1)] = '\0';
		if (start >= end || ofs > UINT64_MAX / page)
			continue;
		n->files[n->file_count++] = (struct file_entry){start, end, ofs * page, name};
	}
}

static void note_syscall(struct pyu_target *t, int64_t tid, uint32_t type,
			 const unsigned char *desc, uint64_t descsz);
static void note_cpu_time(struct pyu_target *t, int64_t tid, const unsigned char *desc);
static void note_gregs(struct pyu_target *t, int64_t tid, const unsigned char *desc,
		       uint64_t descsz);

static struct pyu_error *parse_notes(struct pyu_target *t, unsigned char *buf,
				     uint64_t len, struct core_notes *n)
{
	uint64_t off = 0;
	while (len - off >= 12) {
		uint64_t namesz = pyu_le32(buf + off), descsz = pyu_le32(buf + off + 4);
		uint32_t type = pyu_le32(buf + off + 8);
		uint64_t name_off = off + 12;
		uint64_t desc_off = name_off + ((namesz + 3) & ~(uint64_t)3);
		if (desc_off > len || descsz > len - desc_off)
			break; // a garbage or truncated note: stop, keep what we have
		const unsigned char *name = buf + name_off;
		unsigned char *desc = buf + desc_off;
		bool core = namesz == 5 && memcmp(name, "CORE", 5) == 0;
		if (namesz == 4 && memcmp(name, "GDB", 4) == 0)
			n->gdb_note = true;
		if (core && type == NT_PRSTATUS && descsz >= PRSTATUS_PID_OFFSET + 4) {
			int32_t pid = (int32_t)pyu_le32(desc + PRSTATUS_PID_OFFSET);
			if (n->prstatus_seen++ == 0) {
				// The kernel writes the thread it dumps for first.
				t->has_crash = true;
				t->crash = (struct pyu_crash){.tid = pid};
				t->crash.signal = (int16_t)pyu_le16(desc + PRSTATUS_CURSIG_OFFSET);
			}
			if (pid > 0) {
				struct pyu_error *err = pyu_target_add_thread(t, pid);
				if (err)
					return err;
			}
			n->current_tid = pid;
			if (pid > 0)
				note_gregs(t, pid, desc, descsz);
			if (descsz >= PRSTATUS_STIME_OFFSET + 16) {
				if (pyu_le32(desc + PRSTATUS_PPID_OFFSET))
					n->has_ids = true;
				note_cpu_time(t, pid, desc);
			}
		} else if (core && type == NT_PRPSINFO &&
			   descsz >= PRPSINFO_FNAME_OFFSET + PRPSINFO_FNAME_LEN) {
			memcpy(n->fname, desc + PRPSINFO_FNAME_OFFSET, PRPSINFO_FNAME_LEN);
			n->pid = (int32_t)pyu_le32(desc + PRPSINFO_PID_OFFSET);
			n->fname[PRPSINFO_FNAME_LEN] = '\0';
		} else if (core && type == NT_AUXV) {
			for (uint64_t i = 0; i + 16 <= descsz; i += 16) {
				uint64_t key = pyu_le64(desc + i), val = pyu_le64(desc + i + 8);
				if (key == AT_ENTRY)
					n->entry = t->auxv.entry = val;
				else if (key == AT_PHDR)
					t->auxv.phdr = val;
				else if (key == AT_PHNUM)
					t->auxv.phnum = val;
				else if (key == AT_BASE)
					t->auxv.base = val;
				else if (key == AT_EXECFN)
					t->auxv.execfn = val;
			}
		} else if (core && type == NT_SIGINFO && n->prstatus_seen == 1 &&
			   descsz >= SIGINFO_ADDR_OFFSET + 8) {
			int32_t signo = (int32_t)pyu_le32(desc), code =
				(int32_t)pyu_le32(desc + SIGINFO_CODE_OFFSET);
			if (signo > 0 && t->crash.signal == 0)
				t->crash.signal = signo;
			if (signo == t->crash.signal) {
				t->crash.code = code, t->crash.has_code = true;
				if (FAULT_SIGNAL(signo) && code > 0) {
					t->crash.address = pyu_le64(desc + SIGINFO_ADDR_OFFSET);
					t->crash.has_address = true;
				}
			}
		} else if (core && type == NT_ARM_PAC_MASK && descsz >= 16 && !t->pac_code_mask) {
			t->pac_code_mask = pyu_le64(desc + 8);
		} else if (core && type == NT_FILE) {
			parse_nt_file(desc, descsz, n);
		}
		if (core && n->current_tid > 0)
			note_syscall(t, n->current_tid, type, desc, descsz);
		off = desc_off + ((descsz + 3) & ~(uint64_t)3);
		if (off > len)
			break;
	}
	return NULL;
}

// A register of @arch from note @type of thread @tid, when it is there. Cannot fail.
static bool note_reg(const struct pyu_note_reg *r, uint32_t type, const unsigned char *desc,
		     uint64_t descsz, int64_t *ret)
{
	if (r->offset < 0 || r->note != type || (r->size != 4 && r->size != 8) ||
	    descsz < (uint64_t)r->offset + r->size)
		return false;
	*ret = r->size == 8 ? (int64_t)pyu_le64(desc + r->offset)
			    : (int64_t)(int32_t)pyu_le32(desc + r->offset);
	return true;
}

// The system call number and arguments of thread @tid, from whichever of its notes holds
// them on the core's architecture (syscalls.c). Out of memory: left unknown.
static void note_syscall(struct pyu_target *t, int64_t tid, uint32_t type,
			 const unsigned char *desc, uint64_t descsz)
{
	const struct pyu_arch *a = t->arch;
	if (!a)
		return;
	int64_t v;
	struct pyu_thread_record *r = NULL;
	if (note_reg(&a->syscall_nr, type, desc, descsz, &v) &&
	    (r = pyu_target_status_record(t, tid)) != NULL)
		r->status.syscall = v < 0 ? -1 : v;
	unsigned found = 0;
	uint64_t args[PYU_SYSCALL_ARGS];
	for (unsigned i = 0; i < PYU_SYSCALL_ARGS; i++)
		if (note_reg(&a->args[i], type, desc, descsz, &v))
			args[i] = (uint64_t)v, found++;
	if (found == PYU_SYSCALL_ARGS && (r || (r = pyu_target_status_record(t, tid)))) {
		memcpy(r->status.args, args, sizeof(args));
		r->status.has_args = true;
	}
	if (note_reg(&a->pc, type, desc, descsz, &v) && (r || (r = pyu_target_status_record(t, tid)))) {
		r->status.pc = (uint64_t)v;
		r->status.has_pc = true;
		if (a->syscall_insn) {
			r->pc = (uint64_t)v;
			r->check_insn = true;
		}
	}
}

// The registers NT_PRSTATUS holds for thread @tid, kept for unwinding it (unwind.c). Out of
// memory: left out (the unwinder then has none for it).
static void note_gregs(struct pyu_target *t, int64_t tid, const unsigned char *desc,
		       uint64_t descsz)
{
	if (descsz <= PYU_PRSTATUS_REGS)
		return;
	uint64_t words = (descsz - PYU_PRSTATUS_REGS) / 8;
	struct pyu_thread_record *r = pyu_target_status_record(t, tid);
	if (!r)
		return;
	r->greg_count = (uint32_t)(words < PYU_PRSTATUS_WORDS ? words : PYU_PRSTATUS_WORDS);
	for (uint32_t i = 0; i < r->greg_count; i++)
		r->gregs[i] = pyu_le64(desc + PYU_PRSTATUS_REGS + 8 * i);
}

static uint64_t timeval_ns(const unsigned char *tv)
{
	uint64_t sec = pyu_le64(tv), usec = pyu_le64(tv + 8);
	if (sec > UINT32_MAX || usec >= 1000000) // a garbage time: counted as none
		return 0;
	return sec * 1000000000u + usec * 1000u;
}

static void note_cpu_time(struct pyu_target *t, int64_t tid, const unsigned char *desc)
{
	struct pyu_thread_record *r = pyu_target_status_record(t, tid);
	if (r)
		r->status.cpu_ns = (int64_t)(timeval_ns(desc + PRSTATUS_UTIME_OFFSET) +
					     timeval_ns(desc + PRSTATUS_STIME_OFFSET));
}

// After all notes: CPU times only when the kernel wrote the core (a gcore's are zeros, not
// times), and the main thread's own: the kernel gives it the whole process's (its threads',
// and those that have exited), so the others' are taken off.
static void settle_cpu_times(struct pyu_target *t, const struct core_notes *n)
{
	struct pyu_thread_record *leader = NULL;
	uint64_t others = 0;
	for (size_t i = 0; i < t->status_count; i++) {
		struct pyu_thread_record *r = &t->statuses[i];
		if (!n->has_ids)
			r->status.cpu_ns = -1;
		else if (r->tid == n->pid)
			leader = r;
		else if (r->status.cpu_ns > 0)
			others += (uint64_t)r->status.cpu_ns;
	}
	if (leader && leader->status.cpu_ns >= 0)
		leader->status.cpu_ns = (uint64_t)leader->status.cpu_ns > others
			? leader->status.cpu_ns - (int64_t)others : 0;
}

static const struct file_entry *file_at(const struct core_notes *n, uint64_t addr)
{
	for (size_t i = 0; i < n->file_count; i++) {
		if (addr >= n->files[i].start && addr < n->files[i].end)
			return &n->files[i];
	}
	return NULL;
}

// The mappings: one per PT_LOAD (named when NT_FILE has an entry starting there), plus any
// NT_FILE entry no segment covers (a core writer may leave read-only file mappings out).
static struct pyu_error *add_mappings(struct pyu_target *t, const struct core_backend *c,
				      const struct core_notes *n)
{
	for (size_t i = 0; i < c->load_count; i++) {
		const struct core_load *l = &c->loads[i];
		const struct file_entry *f = file_at(n, l->vaddr);
		uint64_t end = l->vaddr + l->memsz, offset = 0;
		const char *path = NULL;
		if (f) {
			path = f->name;
			offset = f->offset + (l->vaddr - f->start);
			if (offset < f->offset)
				path = NULL, offset = 0;
		}
		struct pyu_error *err = pyu_target_add_mapping_perms(
			t, l->vaddr, end, offset, (l->flags & PF_R) != 0, (l->flags & PF_W) != 0,
			(l->flags & PF_X) != 0, path);
		if (err)
			return err;
	}
	for (size_t i = 0; i < n->file_count; i++) {
		const struct file_entry *f = &n->files[i];
		uint64_t next;
		if (find_load(c, f->start, &next) || next < f->end)
			continue;
		struct pyu_error *err = pyu_target_add_mapping_perms(t, f->start, f->end, f->offset,
								     true, false, false, f->name);
		if (err)
			return err;
	}
	return NULL;
}

// The executable as the core names it: the file mapped at AT_ENTRY, else the first mapping
// whose name starts with the process name, else NULL.
static const char *core_executable(const struct core_notes *n)
{
	const struct file_entry *f = n->entry ? file_at(n, n->entry) : NULL;
	if (f)
		return f->name;
	if (n->fname[0] == '\0')
		return NULL;
	for (size_t i = 0; i < n->file_count; i++) {
		const char *slash = strrchr(n->files[i].name, '/');
		const char *base = slash ? slash + 1 : n->files[i].name;
		if (strncmp(base, n->fname, strlen(n->fname)) == 0)
			return n->files[i].name;
	}
	return NULL;
}

// A core without NT_FILE (old kernels, some core writers) names no files. With the
// executable given, its segments can still be placed: the load bias is AT_ENTRY - e_entry.
// Mappings the core already has at those addresses get the executable's name; failures only
// mean the executable stays unnamed.
static struct pyu_error *place_executable(struct pyu_target *t, const struct core_notes *n,
					  const char *executable)
{
	struct pyu_elf *elf;
	struct pyu_error *err = pyu_elf_open(executable, &elf);
	if (err) {
		pyu_error_destroy(err);
		return NULL;
	}
	uint64_t bias = 0;
	if (pyu_elf_type(elf) == PYU_ELF_ET_DYN) {
		if (!n->entry || n->entry < pyu_elf_entry(elf)) {
			pyu_elf_close(elf);
			return NULL;
		}
		bias = n->entry - pyu_elf_entry(elf);
	}
	err = pyu_target_place_file(t, elf, executable, executable, bias);
	pyu_elf_close(elf);
	return err;
}

static struct pyu_error *load_core(struct pyu_target *t, struct core_backend *c,
				   const char *path, const char *executable)
{
	struct core_load *note_segs = NULL;
	size_t note_count = 0;
	struct pyu_error *err = read_phdrs(c, path, &note_segs, &note_count);
	struct core_notes notes = {0};
	t->arch = err ? NULL : pyu_arch_by_machine(c->machine);
	t->machine = err ? 0 : c->machine;
	unsigned char **bufs = NULL;
	if (!err && note_count > 0) {
		bufs = calloc(note_count, sizeof(*bufs));
		if (!bufs)
			err = &pyu_error_nomem;
	}
	for (size_t i = 0; !err && i < note_count; i++) {
		// A truncated core: parse whatever part of the notes is there.
		uint64_t off = note_segs[i].offset, size = note_segs[i].filesz;
		if (off >= c->file_size)
			continue;
		if (size > c->file_size - off)
			size = c->file_size - off;
		if (size > MAX_NOTES_SIZE)
			size = MAX_NOTES_SIZE;
		if (size == 0)
			continue;
		bufs[i] = malloc((size_t)size);
		if (!bufs[i]) {
			err = &pyu_error_nomem;
			break;
		}
		uint64_t got = core_pread(c, off, bufs[i], size);
		err = parse_notes(t, bufs[i], got, &notes);
	}
	if (!err)
		settle_cpu_times(t, &notes);
	if (!err && t->has_crash)
		t->crash.by_debugger = notes.gdb_note || c->has_sections;
	if (!err)
		err = add_mappings(t, c, &notes);
	if (!err && c->expected_size > c->file_size) {
		char *msg = NULL;
		if (asprintf(&msg, "the core file is truncated: %" PRIu64 " of %" PRIu64
			     " bytes present%s; memory whose data would lie past the end is "
			     "unreadable", c->file_size, c->expected_size,
			     notes.file_count ? "" : ", and the notes naming its files are lost") >= 0)
			t->notice = msg;
	}
	if (!err && executable && notes.file_count == 0)
		err = place_executable(t, &notes, executable);
	if (!err && executable) {
		const char *exe = core_executable(&notes);
		// Without a name for it in the core, the executable can only name itself.
		err = pyu_target_set_executable(t, exe ? exe : executable, executable);
	}
	if (!err && notes.file_count == 0 && t->auxv.phdr) {
		// No file names in the notes: the dynamic linker's list in memory has them.
		t->names_from_linkmap = true;
		err = pyu_linkmap_name_files(t);
	}
	for (size_t i = 0; bufs && i < note_count; i++)
		free(bufs[i]);
	free(bufs);
	free(notes.files);
	free(note_segs);
	return err;
}

PYU_PUBLIC struct pyu_error *pyu_target_open_core(const char *core_path, const char *executable,
						  struct pyu_target **ret)
{
	return pyu_target_open_core_limited(core_path, executable, 0, ret);
}

PYU_PUBLIC struct pyu_error *pyu_target_open_core_limited(const char *core_path,
							  const char *executable,
							  uint64_t max_unpacked,
							  struct pyu_target **ret)
{
	if (!core_path || !ret)
		return pyu_error_create(PYU_ERR_ARGUMENT, "no core file given");
	uint64_t ceiling;
	struct pyu_error *err = unpack_ceiling(max_unpacked, &ceiling);
	if (err)
		return err;
	if (executable && access(executable, R_OK) != 0)
		return pyu_error_create(PYU_ERR_IO, "cannot read executable %s: %s", executable,
					strerror(errno));
	int fd = open(core_path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return pyu_error_create(PYU_ERR_IO, "cannot open core %s: %s", core_path,
					strerror(errno));
	enum compression comp = sniff(fd);
	if (comp != COMP_NONE)
		err = decompress(core_path, comp, ceiling, &fd);
	struct stat st;
	if (!err && (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)))
		err = pyu_error_create(PYU_ERR_IO, "core %s is not a regular file", core_path);
	struct core_backend *c = NULL;
	if (!err) {
		c = calloc(1, sizeof(*c));
		if (!c)
			err = &pyu_error_nomem;
	}
	if (err) {
		close(fd);
		return err;
	}
	c->fd = fd;
	c->file_size = (uint64_t)st.st_size;
	struct pyu_target *t;
	err = pyu_target_create(core_read, core_destroy, c, "the core file", &t);
	if (err) {
		close(fd);
		free(c);
		return err;
	}
	t->image_read = core_image_read;
	t->backend_view = core_view;
	t->backend_release = core_release;
	t->core_fd = fd;
	t->backend_begin = core_begin;
	err = load_core(t, c, core_path, executable);
	if (err) {
		pyu_target_destroy(t);
		return err;
	}
	// Read in place from here on (the notes and headers above were read once, with pread).
	t->in_place = map_core(c);
	*ret = t;
	return NULL;
}
