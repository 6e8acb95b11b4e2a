// check_core.c - ELF core files: synthetic cores built byte by byte (PT_LOAD reads, holes,
// pages omitted from the core and read from the NT_FILE-mapped file, NT_PRSTATUS threads, path
// maps, an explicit executable, truncated cores, garbage notes, absurd sizes, compressed
// cores), and a real core of a real process written by gdb, checked against the live process.
#include <dirent.h>
#include <errno.h>
#include <inttypes.h>
#include <signal.h>
#include <stdbool.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
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

#include "checkmain.h"
#include "elf_fixture.h"
#include "bytes.h"
#include "target.h"

#define PF_X 1
#define PF_W 2
#define PF_R 4

// ---- the standard synthetic core -----------------------------------------------------------
//   0x400000-0x403000  RW, all in the core
//   0x600000-0x602000  R, omitted from the core; NT_FILE: the backing file at page 1
//   0x700000-0x702000  R X, first page in the core, second page neither in it nor in a file
//   0x800000-0x801000  no PT_LOAD at all (as gdb writes read-only code); NT_FILE: page 0
//   0xa00000-0xa02000  R X, first page in the core, the second from the file (page 2), as
//                      the kernel writes ELF headers of file mappings
// Threads 100 and 101; AT_ENTRY inside 0x600000; pr_fname "python3".

struct fixture {
	char *dir;       // a temporary directory holding everything below
	char *core;      // the core file
	char *lib;       // the backing file, named in NT_FILE as @lib_name
	char *lib_name;  // the name the core gives the backing file
	struct fx_buf bytes; // the core's contents
	size_t notes_end;    // offset where the notes end
};

static unsigned char lib_byte(uint64_t off)
{
	return fx_pattern(0x900000 + off * 3);
}

static char *join(const char *a, const char *b)
{
	size_t n = strlen(a) + strlen(b) + 2;
	char *r = malloc(n);
	ck_assert_ptr_nonnull(r);
	snprintf(r, n, "%s/%s", a, b);
	return r;
}

static void build_core(struct fixture *f, const char *lib_name, const struct fx_buf *raw)
{
	struct fx_seg segs[] = {
		{0x400000, 0x3000, 0x3000, PF_R | PF_W, NULL},
		{0x600000, 0x2000, 0, PF_R, NULL},
		{0x700000, 0x2000, 0x1000, PF_R | PF_X, NULL},
		{0xa00000, 0x2000, 0x1000, PF_R | PF_X, NULL},
	};
	struct fx_file_entry files[] = {
		{0x600000, 0x602000, 1, lib_name},
		{0x800000, 0x801000, 0, lib_name},
		{0xa00000, 0xa02000, 2, lib_name},
	};
	struct fx_buf nt_file = {0}, st1 = {0}, st2 = {0}, ps = {0}, auxv = {0};
	fx_nt_file(&nt_file, files, 3);
	fx_prstatus(&st1, 100);
	fx_prstatus(&st2, 101);
	fx_zero(&ps, 136);
	memcpy(ps.data + 40, "python3", 7);
	fx_u64(&auxv, 6), fx_u64(&auxv, 4096); // AT_PAGESZ
	fx_u64(&auxv, 9), fx_u64(&auxv, 0x600010); // AT_ENTRY
	fx_u64(&auxv, 0), fx_u64(&auxv, 0);
	struct fx_note notes[] = {
		{"CORE", 3, ps.data, ps.len},
		{"CORE", 1, st1.data, st1.len},
		{"CORE", 6, auxv.data, auxv.len},
		{"CORE", 0x46494c45, nt_file.data, nt_file.len},
		{"LINUX", 0x202, "ignored", 8},
		{"CORE", 1, st2.data, st2.len},
	};
	fx_free(&f->bytes);
	fx_core(&f->bytes, segs, 4, notes, 6, raw);
	f->notes_end = 64 + 5 * 56;
	for (size_t i = 0; i < 6; i++)
		f->notes_end += 12 + ((strlen(notes[i].name) + 4) & ~3u) + ((notes[i].len + 3) & ~3u);
	if (raw)
		f->notes_end += raw->len;
	fx_write_file(f->core, f->bytes.data, f->bytes.len);
	fx_free(&nt_file), fx_free(&st1), fx_free(&st2), fx_free(&ps), fx_free(&auxv);
}

// @lib_name NULL: the core names the backing file by its real path.
static void fixture_init(struct fixture *f, const char *lib_name)
{
	memset(f, 0, sizeof(*f));
	f->dir = fx_tmp_path();
	unlink(f->dir);
	ck_assert_int_eq(mkdir(f->dir, 0700), 0);
	f->core = join(f->dir, "core");
	f->lib = join(f->dir, "libfake.so");
	unsigned char page[4 * 4096];
	for (size_t i = 0; i < sizeof(page); i++)
		page[i] = lib_byte(i);
	fx_write_file(f->lib, page, sizeof(page));
	f->lib_name = strdup(lib_name ? lib_name : f->lib);
	build_core(f, f->lib_name, NULL);
}

static void fixture_fini(struct fixture *f)
{
	unlink(f->core);
	unlink(f->lib);
	rmdir(f->dir);
	free(f->dir);
	free(f->core);
	free(f->lib);
	free(f->lib_name);
	fx_free(&f->bytes);
}

static struct pyu_target *open_core_ok(const char *path, const char *exe)
{
	struct pyu_target *t = NULL;
	struct pyu_error *err = pyu_target_open_core(path, exe, &t);
	ck_assert_msg(!err, "open_core: %s", pyu_error_message(err));
	return t;
}

static void assert_fault_at(struct pyu_error *err, uint64_t addr)
{
	ck_assert_ptr_nonnull(err);
	ck_assert_int_eq(pyu_error_code(err), PYU_ERR_FAULT);
	char hex[32];
	snprintf(hex, sizeof(hex), "0x%" PRIx64, addr);
	ck_assert_msg(strstr(pyu_error_message(err), hex), "message '%s' lacks %s",
		      pyu_error_message(err), hex);
	pyu_error_destroy(err);
}

// Asserts that [addr, addr+len) reads as the pattern of the core's own data.
static void assert_pattern(struct pyu_target *t, uint64_t addr, size_t len)
{
	unsigned char buf[256];
	ck_assert_uint_le(len, sizeof(buf));
	struct pyu_error *err = pyu_target_read(t, addr, buf, len);
	ck_assert_msg(!err, "%s", pyu_error_message(err));
	for (size_t i = 0; i < len; i++)
		ck_assert_uint_eq(buf[i], fx_pattern(addr + i));
}

// Asserts that [addr, addr+len) reads as the backing file at @file_off.
static void assert_lib(struct pyu_target *t, uint64_t addr, size_t len, uint64_t file_off)
{
	unsigned char buf[256];
	ck_assert_uint_le(len, sizeof(buf));
	struct pyu_error *err = pyu_target_read(t, addr, buf, len);
	ck_assert_msg(!err, "%s", pyu_error_message(err));
	for (size_t i = 0; i < len; i++)
		ck_assert_uint_eq(buf[i], lib_byte(file_off + i));
}

START_TEST(test_core_reads)
{
	struct fixture f;
	fixture_init(&f, NULL);
	struct pyu_target *t = open_core_ok(f.core, NULL);
	unsigned char buf[64];
	ck_assert_ptr_null(pyu_target_notice(t)); // a whole core

	assert_pattern(t, 0x400000, 16);
	assert_pattern(t, 0x400ff8, 16); // across a page boundary
	assert_pattern(t, 0x402ff0, 16);
	assert_fault_at(pyu_target_read(t, 0x402ffc, buf, 8), 0x403000); // into a hole
	assert_fault_at(pyu_target_read(t, 0x500000, buf, 8), 0x500000);
	// Omitted from the core: read from the file, at NT_FILE's offset (page 1).
	assert_lib(t, 0x600000, 64, 0x1000);
	assert_lib(t, 0x601ff0, 16, 0x2ff0);
	// A page in the core next to one in neither the core nor a file.
	assert_pattern(t, 0x700ff0, 16);
	assert_fault_at(pyu_target_read(t, 0x700ff8, buf, 16), 0x701000);
	assert_fault_at(pyu_target_read(t, 0x701800, buf, 8), 0x701800);
	// First page from the core, the rest from the file: a read across the seam.
	unsigned char seam[32];
	ck_assert_ptr_null(pyu_target_read(t, 0xa00ff0, seam, sizeof(seam)));
	for (int i = 0; i < 16; i++)
		ck_assert_uint_eq(seam[i], fx_pattern(0xa00ff0 + (uint64_t)i));
	for (int i = 16; i < 32; i++)
		ck_assert_uint_eq(seam[i], lib_byte(0x3000 + (uint64_t)i - 16));
	assert_lib(t, 0xa01ff0, 16, 0x3ff0);
	// A file mapping with no segment at all.
	assert_lib(t, 0x800100, 32, 0x100);
	assert_fault_at(pyu_target_read(t, 0x801000, buf, 8), 0x801000);

	// Mappings: four PT_LOADs and the segment-less NT_FILE entry, sorted.
	ck_assert_uint_eq(pyu_target_mapping_count(t), 5);
	const struct pyu_mapping *m = pyu_target_mapping(t, 0);
	ck_assert_uint_eq(m->start, 0x400000);
	ck_assert_uint_eq(m->end, 0x403000);
	ck_assert(m->writable && m->readable && !m->executable);
	ck_assert_ptr_null(m->path);
	m = pyu_target_mapping(t, 1);
	ck_assert_str_eq(m->path, f.lib);
	ck_assert_str_eq(m->local_path, f.lib);
	ck_assert_uint_eq(m->offset, 0x1000);
	ck_assert(!m->writable);
	m = pyu_target_mapping(t, 2);
	ck_assert(m->executable && !m->writable);
	m = pyu_target_mapping(t, 3);
	ck_assert_uint_eq(m->start, 0x800000);
	ck_assert_str_eq(m->path, f.lib);
	ck_assert_uint_eq(m->offset, 0);
	m = pyu_target_mapping(t, 4);
	ck_assert_uint_eq(m->start, 0xa00000);
	ck_assert_uint_eq(m->offset, 0x2000);

	ck_assert_uint_eq(pyu_target_thread_count(t), 2);
	ck_assert_int_eq(pyu_target_thread(t, 0), 100);
	ck_assert_int_eq(pyu_target_thread(t, 1), 101);
	pyu_target_destroy(t);
	fixture_fini(&f);
}
END_TEST

START_TEST(test_core_counters)
{
	struct fixture f;
	fixture_init(&f, NULL);
	struct pyu_target *t = open_core_ok(f.core, NULL);
	uint64_t v;
	ck_assert_ptr_null(pyu_target_read_u64(t, 0x400010, &v));
	ck_assert_ptr_null(pyu_target_read_u64(t, 0x400020, &v));
	ck_assert_ptr_null(pyu_target_read_u64(t, 0x600020, &v)); // file-backed page
	ck_assert_ptr_null(pyu_target_read_u64(t, 0x600028, &v));
	// The core's own data is read in place from its mapping, counted as cached reads; the
	// page the core left to a mapped file is one backend read, then cached.
	ck_assert_uint_eq(pyu_target_backend_reads(t), 1);
	ck_assert_uint_eq(pyu_target_cached_reads(t), 3);
	pyu_target_destroy(t);
	fixture_fini(&f);
}
END_TEST

START_TEST(test_core_path_map)
{
	struct fixture f;
	fixture_init(&f, "/no/such/dir/libfake.so");
	struct pyu_target *t = open_core_ok(f.core, NULL);
	unsigned char buf[8];
	// The file the core names is not here: the omitted page is unreadable...
	assert_fault_at(pyu_target_read(t, 0x600000, buf, 8), 0x600000);
	assert_pattern(t, 0x400000, 8);
	// ...until a path map says where it is.
	ck_assert_ptr_null(pyu_target_add_path_map(t, "/no/such/dir", f.dir));
	assert_lib(t, 0x600000, 64, 0x1000);
	assert_lib(t, 0x800000, 8, 0);
	const struct pyu_mapping *m = pyu_target_find_mapping(t, 0x600000);
	ck_assert_str_eq(m->path, "/no/such/dir/libfake.so");
	ck_assert_str_eq(m->local_path, f.lib);
	pyu_target_destroy(t);
	fixture_fini(&f);
}
END_TEST

START_TEST(test_core_deleted_file)
{
	// The process mapped a file that was then deleted (and perhaps replaced): NT_FILE says
	// "PATH (deleted)", and PATH is where to look.
	struct fixture f;
	fixture_init(&f, NULL);
	size_t n = strlen(f.lib) + 16;
	char *name = malloc(n);
	snprintf(name, n, "%s (deleted)", f.lib);
	build_core(&f, name, NULL);
	struct pyu_target *t = open_core_ok(f.core, NULL);
	const struct pyu_mapping *m = pyu_target_find_mapping(t, 0x600000);
	ck_assert_str_eq(m->path, f.lib);
	assert_lib(t, 0x600000, 16, 0x1000);
	pyu_target_destroy(t);
	free(name);
	fixture_fini(&f);
}
END_TEST

START_TEST(test_core_executable)
{
	struct fixture f;
	fixture_init(&f, "/elsewhere/bin/python3");
	// AT_ENTRY lies in the mapping of /elsewhere/bin/python3: that is the executable, and
	// the file given here stands in for it.
	struct pyu_target *t = open_core_ok(f.core, f.lib);
	assert_lib(t, 0x600000, 32, 0x1000);
	const struct pyu_mapping *m = pyu_target_find_mapping(t, 0x800000);
	ck_assert_str_eq(m->path, "/elsewhere/bin/python3");
	ck_assert_str_eq(m->local_path, f.lib);
	char *p = pyu_target_local_path(t, "/elsewhere/bin/python3");
	ck_assert_str_eq(p, f.lib);
	free(p);
	pyu_target_destroy(t);

	struct pyu_error *err = pyu_target_open_core(f.core, "/no/such/executable", &t);
	ck_assert_int_eq(pyu_error_code(err), PYU_ERR_IO);
	pyu_error_destroy(err);
	fixture_fini(&f);
}
END_TEST

START_TEST(test_core_not_a_core)
{
	struct fixture f;
	fixture_init(&f, NULL);
	struct pyu_target *t = (struct pyu_target *)&f;
	struct pyu_error *err = pyu_target_open_core(f.lib, NULL, &t); // not ELF
	ck_assert_int_eq(pyu_error_code(err), PYU_ERR_FORMAT);
	pyu_error_destroy(err);
	fx_set(&f.bytes, 16, 3, 2); // ET_DYN
	fx_write_file(f.core, f.bytes.data, f.bytes.len);
	err = pyu_target_open_core(f.core, NULL, &t);
	ck_assert_int_eq(pyu_error_code(err), PYU_ERR_FORMAT);
	ck_assert_ptr_nonnull(strstr(pyu_error_message(err), "not a core"));
	pyu_error_destroy(err);
	fx_write_file(f.core, "", 0);
	err = pyu_target_open_core(f.core, NULL, &t);
	ck_assert_int_eq(pyu_error_code(err), PYU_ERR_FORMAT);
	pyu_error_destroy(err);
	err = pyu_target_open_core("/no/such/core/file", NULL, &t);
	ck_assert_int_eq(pyu_error_code(err), PYU_ERR_IO);
	pyu_error_destroy(err);
	err = pyu_target_open_core(f.dir, NULL, &t); // a directory
	ck_assert_ptr_nonnull(err);
	pyu_error_destroy(err);
	ck_assert_ptr_eq(t, (struct pyu_target *)&f);
	fixture_fini(&f);
}
END_TEST

// Every prefix of the core: opening fails or succeeds, and every read either returns the
// right bytes or fails - never garbage, never a crash.
START_TEST(test_core_truncated)
{
	struct fixture f;
	fixture_init(&f, NULL);
	size_t full = f.bytes.len;
	// Offsets in the core of the two data pages of segment 0x400000..., for the check.
	int opened = 0;
	for (size_t cut = full; cut-- > 0;) {
		if (cut > f.notes_end + 64 && cut % 509 != 0 && cut != full - 1)
			continue; // every byte through the headers and notes, then a sample
		ck_assert_int_eq(truncate(f.core, (off_t)cut), 0);
		struct pyu_target *t = NULL;
		struct pyu_error *err = pyu_target_open_core(f.core, NULL, &t);
		if (cut < 64 + 5 * 56) {
			// No complete program header table: the core cannot be used at all.
			ck_assert_int_eq(pyu_error_code(err), PYU_ERR_FORMAT);
			pyu_error_destroy(err);
			continue;
		}
		ck_assert_msg(!err, "cut %zu: %s", cut, pyu_error_message(err));
		opened++;
		// Every cut loses data the headers promise, and the target says so.
		ck_assert_ptr_nonnull(pyu_target_notice(t));
		ck_assert_ptr_nonnull(strstr(pyu_target_notice(t), "truncated"));
		ck_assert_uint_le(pyu_target_thread_count(t), 2);
		// Segment 0x400000 starts at core offset 0x1000 (page aligned after the notes).
		for (uint64_t a = 0x400000; a < 0x403000; a += 0x7f8) {
			unsigned char buf[16];
			uint64_t off = 0x1000 + (a - 0x400000);
			err = pyu_target_read(t, a, buf, sizeof(buf));
			if (off + sizeof(buf) <= cut) {
				ck_assert_msg(!err, "cut %zu addr 0x%" PRIx64 ": %s", cut, a,
					      pyu_error_message(err));
				for (size_t i = 0; i < sizeof(buf); i++)
					ck_assert_uint_eq(buf[i], fx_pattern(a + i));
			} else {
				ck_assert_int_eq(pyu_error_code(err), PYU_ERR_FAULT);
				pyu_error_destroy(err);
			}
		}
		// The file-backed pages do not depend on the core's data, only on its notes.
		unsigned char b;
		err = pyu_target_read_u8(t, 0x600000, &b);
		if (!err)
			ck_assert_uint_eq(b, lib_byte(0x1000));
		pyu_error_destroy(err);
		pyu_target_destroy(t);
	}
	ck_assert_int_gt(opened, 100);
	fixture_fini(&f);
}
END_TEST

// A small deterministic generator for garbage.
static uint64_t rng_state = 0x9e3779b97f4a7c15u;
static uint64_t rng(void)
{
	rng_state ^= rng_state << 13;
	rng_state ^= rng_state >> 7;
	rng_state ^= rng_state << 17;
	return rng_state;
}

START_TEST(test_core_garbage_notes)
{
	struct fixture f;
	fixture_init(&f, NULL);
	for (int iter = 0; iter < 400; iter++) {
		struct fx_buf raw = {0};
		if (iter % 2 == 0) {
			// Pure noise after the valid notes.
			size_t n = rng() % 700;
			for (size_t i = 0; i < n; i++)
				fx_u32(&raw, rng() & (iter % 4 ? 0xffffffffu : 0xffu));
		} else {
			// Note headers with wild sizes and real types, then noise.
			static const uint32_t types[] = {1, 3, 6, 0x46494c45};
			uint32_t namesz = rng() % 3 ? 5 : (uint32_t)rng();
			uint32_t descsz = rng() % 3 ? (uint32_t)(rng() % 200) : (uint32_t)rng();
			fx_u32(&raw, namesz);
			fx_u32(&raw, descsz);
			fx_u32(&raw, types[rng() % 4]);
			fx_put(&raw, "CORE\0\0\0", 8);
			size_t n = rng() % 64;
			for (size_t i = 0; i < n; i++)
				fx_u64(&raw, rng() % 5 ? rng() % 100 : rng());
		}
		build_core(&f, f.lib_name, &raw);
		fx_free(&raw);
		struct pyu_target *t = NULL;
		struct pyu_error *err = pyu_target_open_core(f.core, NULL, &t);
		ck_assert_msg(!err, "iteration %d: %s", iter, pyu_error_message(err));
		// What came before the garbage is intact.
		ck_assert_uint_ge(pyu_target_thread_count(t), 2);
		assert_pattern(t, 0x400800, 16);
		assert_lib(t, 0x600000, 8, 0x1000);
		unsigned char buf[8];
		for (int k = 0; k < 8; k++) // wherever garbage may have put mappings
			pyu_error_destroy(pyu_target_read(t, rng() % 0x1000000, buf, 8));
		pyu_target_destroy(t);
	}
	fixture_fini(&f);
}
END_TEST

// A core with one PT_NOTE holding exactly @note (as raw bytes) and segment 0x400000.
static struct pyu_target *core_with_raw_note(struct fixture *f, const struct fx_buf *note)
{
	struct fx_seg seg = {0x400000, 0x1000, 0x1000, PF_R, NULL};
	fx_free(&f->bytes);
	fx_core(&f->bytes, &seg, 1, NULL, 0, note);
	fx_write_file(f->core, f->bytes.data, f->bytes.len);
	return open_core_ok(f->core, NULL);
}

// Appends an x86-64 siginfo_t (128 bytes) note: si_signo, si_code, si_addr.
static void add_siginfo(struct fx_buf *note, int32_t signo, int32_t code, uint64_t addr,
			size_t len)
{
	struct fx_buf si = {0};
	fx_zero(&si, 128);
	fx_set(&si, 0, (uint32_t)signo, 4);
	fx_set(&si, 8, (uint32_t)code, 4);
	fx_set(&si, 16, addr, 8);
	struct fx_note n = {"CORE", 0x53494749, si.data, len};
	fx_note(note, &n);
	fx_free(&si);
}

static void add_prstatus(struct fx_buf *note, int32_t tid, int16_t cursig)
{
	struct fx_buf st = {0};
	fx_prstatus(&st, tid);
	fx_set(&st, 12, (uint16_t)cursig, 2);
	struct fx_note n = {"CORE", 1, st.data, st.len};
	fx_note(note, &n);
	fx_free(&st);
}

// How the process ended comes from the first thread's NT_PRSTATUS and the NT_SIGINFO after it;
// later threads' notes, short notes and signals without an address leave their fields unset.
START_TEST(test_core_crash_signal)
{
	struct fixture f;
	fixture_init(&f, NULL);
	struct pyu_crash c;
	struct pyu_target *t = open_core_ok(f.core, NULL); // two threads, no signal recorded
	ck_assert(pyu_target_crash(t, &c));
	ck_assert_int_eq(c.tid, 100);
	ck_assert_int_eq(c.signal, 0);
	ck_assert(!c.has_code && !c.has_address);
	pyu_target_destroy(t);

	struct fx_buf note = {0};
	add_prstatus(&note, 7, 11);
	add_siginfo(&note, 11, 1, 0xdead0, 128);
	add_prstatus(&note, 8, 0);
	add_siginfo(&note, 5, 1, 0xbad, 128); // another thread's: not the crash
	t = core_with_raw_note(&f, &note);
	ck_assert(pyu_target_crash(t, &c));
	ck_assert_int_eq(c.tid, 7);
	ck_assert_int_eq(c.signal, 11);
	ck_assert(c.has_code && c.code == 1 && c.has_address);
	ck_assert_uint_eq(c.address, 0xdead0);
	pyu_target_destroy(t);
	fx_free(&note);

	// abort(): SIGABRT sent by the process itself (si_code <= 0) has no fault address; the
	// signal comes from NT_SIGINFO when pr_cursig is 0.
	add_prstatus(&note, 9, 0);
	add_siginfo(&note, 6, -6, 0x1234, 128);
	t = core_with_raw_note(&f, &note);
	ck_assert(pyu_target_crash(t, &c));
	ck_assert_int_eq(c.signal, 6);
	ck_assert(c.has_code && c.code == -6 && !c.has_address);
	pyu_target_destroy(t);
	fx_free(&note);

	// A NT_SIGINFO too short for si_addr is ignored.
	add_prstatus(&note, 10, 11);
	add_siginfo(&note, 11, 1, 0x10, 20);
	t = core_with_raw_note(&f, &note);
	ck_assert(pyu_target_crash(t, &c));
	ck_assert_int_eq(c.signal, 11);
	ck_assert(!c.has_code && !c.has_address);
	pyu_target_destroy(t);
	fx_free(&note);

	// No NT_PRSTATUS: nothing known.
	add_siginfo(&note, 11, 1, 0x10, 128);
	t = core_with_raw_note(&f, &note);
	ck_assert(!pyu_target_crash(t, &c));
	pyu_target_destroy(t);
	fx_free(&note);
	fixture_fini(&f);
}
END_TEST

START_TEST(test_core_absurd_notes)
{
	struct fixture f;
	fixture_init(&f, NULL);
	struct {
		uint64_t count, page;
		int entries; // entries actually present
		bool names;
	} cases[] = {
		{1ull << 60, 4096, 1, true}, // count far beyond the note
		{UINT64_MAX, 4096, 1, true},
		{1, 0, 1, true},              // page size 0
		{1, 3, 1, true},              // not a power of two
		{1, 1ull << 62, 1, true},     // absurd page size
		{2, 4096, 2, false},          // names missing
	};
	for (size_t c = 0; c < sizeof(cases) / sizeof(cases[0]); c++) {
		struct fx_buf desc = {0}, note = {0};
		fx_u64(&desc, cases[c].count);
		fx_u64(&desc, cases[c].page);
		for (int i = 0; i < cases[c].entries; i++) {
			fx_u64(&desc, 0x600000);
			fx_u64(&desc, 0x601000);
			fx_u64(&desc, UINT64_MAX / 2); // page offset that overflows in bytes
		}
		if (cases[c].names)
			fx_put(&desc, "/x", 3);
		else
			fx_put(&desc, "/unterminated", 13);
		struct fx_note n = {"CORE", 0x46494c45, desc.data, desc.len};
		fx_note(&note, &n);
		struct pyu_target *t = core_with_raw_note(&f, &note);
		// Whatever survived, nothing points at a path with a bogus offset we then read.
		unsigned char b;
		pyu_error_destroy(pyu_target_read_u8(t, 0x600000, &b));
		assert_pattern(t, 0x400000, 8);
		pyu_target_destroy(t);
		fx_free(&desc);
		fx_free(&note);
	}
	// Note headers whose sizes run far past the segment.
	uint32_t sizes[][2] = {{0xffffffffu, 0}, {5, 0xfffffff0u}, {0xfffffffcu, 0xfffffffcu},
			       {0, 0}};
	for (size_t c = 0; c < 4; c++) {
		struct fx_buf note = {0};
		fx_u32(&note, sizes[c][0]);
		fx_u32(&note, sizes[c][1]);
		fx_u32(&note, 1);
		fx_put(&note, "CORE\0\0\0\0", 8);
		struct pyu_target *t = core_with_raw_note(&f, &note);
		ck_assert_uint_eq(pyu_target_thread_count(t), 0);
		pyu_target_destroy(t);
		fx_free(&note);
	}
	// NT_PRSTATUS too short to hold pr_pid, and one with a negative pid.
	struct fx_buf note = {0}, st = {0};
	fx_zero(&st, 20);
	struct fx_note n = {"CORE", 1, st.data, st.len};
	fx_note(&note, &n);
	fx_free(&st);
	fx_prstatus(&st, -5);
	n.desc = st.data;
	n.len = st.len;
	fx_note(&note, &n);
	struct pyu_target *t = core_with_raw_note(&f, &note);
	ck_assert_uint_eq(pyu_target_thread_count(t), 0);
	pyu_target_destroy(t);
	fx_free(&note);
	fx_free(&st);
	fixture_fini(&f);
}
END_TEST

START_TEST(test_core_absurd_headers)
{
	struct fixture f;
	fixture_init(&f, NULL);
	struct pyu_target *t = NULL;
	struct fx_buf orig = {0};
	fx_put(&orig, f.bytes.data, f.bytes.len);
	struct {
		size_t off;
		uint64_t value;
		int bytes;
		int expect; // error code, or 0 = opens
	} cases[] = {
		{56, 0xffff, 2, PYU_ERR_FORMAT},   // PN_XNUM without section headers
		{56, 0, 2, PYU_ERR_FORMAT},        // no segments
		{54, 10, 2, PYU_ERR_FORMAT},       // phentsize too small
		{54, 0xffff, 2, PYU_ERR_FORMAT},   // a table bigger than the file (found by fuzzing)
		{32, UINT64_MAX - 8, 8, PYU_ERR_FORMAT}, // phoff wraps
		{32, 1ull << 40, 8, PYU_ERR_FORMAT},     // phoff past the end
		{4, 1, 1, PYU_ERR_UNSUPPORTED},    // 32-bit
		{5, 2, 1, PYU_ERR_UNSUPPORTED},    // big-endian
		// First PT_LOAD (second header): data offset far past the end, huge filesz.
		{64 + 56 + 8, 1ull << 50, 8, 0},
		{64 + 56 + 32, UINT64_MAX, 8, 0},
		// vaddr + memsz wraps.
		{64 + 56 + 16, UINT64_MAX - 0x10, 8, 0},
		// The PT_NOTE: offset past the end, or an enormous size.
		{64 + 8, 1ull << 40, 8, 0},
		{64 + 32, 1ull << 40, 8, 0},
	};
	for (size_t c = 0; c < sizeof(cases) / sizeof(cases[0]); c++) {
		fx_free(&f.bytes);
		fx_put(&f.bytes, orig.data, orig.len);
		fx_set(&f.bytes, cases[c].off, cases[c].value, cases[c].bytes);
		fx_write_file(f.core, f.bytes.data, f.bytes.len);
		struct pyu_error *err = pyu_target_open_core(f.core, NULL, &t);
		ck_assert_msg(pyu_error_code(err) == cases[c].expect, "case %zu: %s", c,
			      pyu_error_message(err));
		pyu_error_destroy(err);
		if (!err) {
			unsigned char buf[32];
			for (uint64_t a = 0x3ff000; a < 0x404000; a += 0x800)
				pyu_error_destroy(pyu_target_read(t, a, buf, sizeof(buf)));
			pyu_error_destroy(pyu_target_read(t, UINT64_MAX - 0x20, buf, 16));
			pyu_target_destroy(t);
		}
	}
	// More than 65534 segments: e_phnum is PN_XNUM and section header 0 holds the count.
	fx_free(&f.bytes);
	fx_put(&f.bytes, orig.data, orig.len);
	size_t shoff = f.bytes.len;
	fx_zero(&f.bytes, 64);
	fx_set(&f.bytes, shoff + 44, 5, 4); // sh_info = 5 program headers
	fx_set(&f.bytes, 40, shoff, 8);
	fx_set(&f.bytes, 60, 1, 2);
	fx_set(&f.bytes, 56, 0xffff, 2);
	fx_write_file(f.core, f.bytes.data, f.bytes.len);
	t = open_core_ok(f.core, NULL);
	assert_pattern(t, 0x400ff8, 16);
	assert_lib(t, 0x600000, 16, 0x1000);
	ck_assert_uint_eq(pyu_target_thread_count(t), 2);
	pyu_target_destroy(t);
	// Changing the first PT_LOAD's offset past the end makes it unreadable, not wrong.
	fx_free(&f.bytes);
	fx_put(&f.bytes, orig.data, orig.len);
	fx_set(&f.bytes, 64 + 56 + 8, 1ull << 50, 8);
	fx_write_file(f.core, f.bytes.data, f.bytes.len);
	t = open_core_ok(f.core, NULL);
	uint64_t v;
	assert_fault_at(pyu_target_read_u64(t, 0x400000, &v), 0x400000);
	pyu_target_destroy(t);
	fx_free(&orig);
	fixture_fini(&f);
}
END_TEST

// ---- build IDs ----------------------------------------------------------------------------

// A three-page ELF file whose first page carries a GNU build ID of 20 bytes of @id_byte and
// whose other pages hold the backing-file pattern.
static void build_id_file(struct fx_buf *b, unsigned char id_byte)
{
	fx_ehdr(b, 3, 64, 1, 0, 0, 0);
	fx_phdr(b, 4, 4, 0x100, 0x100, 12 + 4 + 20, 12 + 4 + 20);
	fx_zero(b, 0x100 - b->len);
	fx_u32(b, 4);
	fx_u32(b, 20);
	fx_u32(b, 3); // NT_GNU_BUILD_ID
	fx_put(b, "GNU", 4);
	for (int i = 0; i < 20; i++)
		fx_put(b, &id_byte, 1);
	fx_zero(b, 0x1000 - b->len);
	for (size_t i = 0x1000; i < 0x3000; i++) {
		unsigned char c = lib_byte(i);
		fx_put(b, &c, 1);
	}
}

START_TEST(test_core_build_id)
{
	struct fixture f;
	fixture_init(&f, NULL);
	struct fx_buf file = {0}, image = {0}, other = {0};
	build_id_file(&file, 0xaa);
	fx_write_file(f.lib, file.data, file.len);
	for (int mismatch = 0; mismatch < 2; mismatch++) {
		// The core holds the first page (as the kernel writes it) with the build ID of the
		// file the process had; the rest must come from the file - if it is that file.
		fx_free(&image);
		build_id_file(&image, mismatch ? 0xbb : 0xaa);
		struct fx_seg seg = {0xb00000, 0x3000, 0x1000, PF_R | PF_X, image.data};
		struct fx_file_entry fe = {0xb00000, 0xb03000, 0, f.lib};
		struct fx_buf nt = {0};
		fx_nt_file(&nt, &fe, 1);
		struct fx_note note = {"CORE", 0x46494c45, nt.data, nt.len};
		fx_free(&f.bytes);
		fx_core(&f.bytes, &seg, 1, &note, 1, NULL);
		fx_write_file(f.core, f.bytes.data, f.bytes.len);
		fx_free(&nt);
		struct pyu_target *t = open_core_ok(f.core, NULL);
		const struct pyu_mapping *m = pyu_target_find_mapping(t, 0xb00000);
		ck_assert_ptr_nonnull(m);
		unsigned char buf[16];
		ck_assert_ptr_null(pyu_target_read(t, 0xb00100, buf, 4)); // from the core
		if (!mismatch) {
			ck_assert(pyu_target_file_matches(t, m));
			assert_lib(t, 0xb01000, 16, 0x1000);
		} else {
			assert_fault_at(pyu_target_read(t, 0xb01000, buf, 16), 0xb01000);
			ck_assert(!pyu_target_file_matches(t, m));
			// A path map to the right copy of the file fixes it.
			char *dir = join(f.dir, "right");
			ck_assert_int_eq(mkdir(dir, 0700), 0);
			char *copy = join(dir, "libfake.so");
			fx_free(&other);
			build_id_file(&other, 0xbb);
			fx_write_file(copy, other.data, other.len);
			ck_assert_ptr_null(pyu_target_add_path_map(t, f.lib, copy));
			m = pyu_target_find_mapping(t, 0xb00000);
			ck_assert(pyu_target_file_matches(t, m));
			assert_lib(t, 0xb01000, 16, 0x1000);
			unlink(copy);
			rmdir(dir);
			free(copy);
			free(dir);
		}
		pyu_target_destroy(t);
	}
	fx_free(&file);
	fx_free(&image);
	fx_free(&other);
	fixture_fini(&f);
}
END_TEST

START_TEST(test_core_without_nt_file)
{
	// An executable (PIE, entry at 0x1100) whose code pages a core without NT_FILE left out.
	struct fixture f;
	fixture_init(&f, NULL);
	struct fx_buf exe = {0};
	fx_ehdr(&exe, 3, 64, 2, 0, 0, 0);
	fx_set(&exe, 24, 0x1100, 8); // e_entry
	fx_phdr(&exe, 1, 5, 0, 0, 0x3000, 0x3000);
	fx_phdr(&exe, 1, 6, 0x3000, 0x3000, 0x800, 0x2000); // data, then .bss
	fx_zero(&exe, 0x1000 - exe.len);
	for (size_t i = 0x1000; i < 0x3800; i++) {
		unsigned char c = lib_byte(i);
		fx_put(&exe, &c, 1);
	}
	fx_write_file(f.lib, exe.data, exe.len);
	const uint64_t base = 0x555555554000u;
	struct fx_seg segs[] = {
		{base, 0x3000, 0x1000, PF_R | PF_X, exe.data}, // the first page only
		{base + 0x3000, 0x2000, 0x2000, PF_R | PF_W, NULL}, // data and .bss, one segment
	};
	struct fx_buf auxv = {0};
	fx_u64(&auxv, 9), fx_u64(&auxv, base + 0x1100), fx_u64(&auxv, 0), fx_u64(&auxv, 0);
	struct fx_note note = {"CORE", 6, auxv.data, auxv.len};
	fx_free(&f.bytes);
	fx_core(&f.bytes, segs, 2, &note, 1, NULL);
	fx_write_file(f.core, f.bytes.data, f.bytes.len);

	struct pyu_target *t = open_core_ok(f.core, NULL);
	unsigned char buf[16];
	assert_fault_at(pyu_target_read(t, base + 0x1000, buf, 16), base + 0x1000);
	ck_assert_ptr_null(pyu_target_find_mapping(t, base)->path);
	pyu_target_destroy(t);

	t = open_core_ok(f.core, f.lib);
	assert_lib(t, base + 0x1000, 16, 0x1000);
	assert_lib(t, base + 0x2ff0, 16, 0x2ff0);
	const struct pyu_mapping *m = pyu_target_find_mapping(t, base);
	ck_assert_str_eq(m->path, f.lib);
	ck_assert_uint_eq(m->offset, 0);
	ck_assert_uint_eq(m->end, base + 0x3000);
	m = pyu_target_find_mapping(t, base + 0x3000);
	ck_assert_str_eq(m->path, f.lib);
	ck_assert_uint_eq(m->offset, 0x3000);
	ck_assert_uint_eq(m->end, base + 0x4000); // the file's part of the data segment
	m = pyu_target_find_mapping(t, base + 0x4000); // the .bss part stays anonymous
	ck_assert_ptr_nonnull(m);
	ck_assert_ptr_null(m->path);
	ck_assert(m->writable);
	assert_pattern(t, base + 0x3ff8, 16); // from the core, across the split
	pyu_target_destroy(t);
	fx_free(&exe);
	fx_free(&auxv);
	fixture_fini(&f);
}
END_TEST

// ---- compressed cores ----------------------------------------------------------------------

#if defined(PYU_HAVE_ZLIB) || defined(PYU_HAVE_ZSTD) || defined(PYU_HAVE_LZMA)
static void check_compressed(struct fixture *f, const void *data, size_t len, bool whole)
{
	char *path = join(f->dir, "core.z");
	fx_write_file(path, data, len);
	struct pyu_target *t = NULL;
	struct pyu_error *err = pyu_target_open_core(path, NULL, &t);
	if (whole) {
		ck_assert_msg(!err, "%s", pyu_error_message(err));
		assert_pattern(t, 0x400ff8, 16);
		assert_lib(t, 0x600000, 16, 0x1000);
		ck_assert_uint_eq(pyu_target_thread_count(t), 2);
		pyu_target_destroy(t);
	} else {
		ck_assert_int_eq(pyu_error_code(err), PYU_ERR_FORMAT);
		pyu_error_destroy(err);
	}
	unlink(path);
	free(path);
}
#endif

START_TEST(test_core_compressed)
{
	struct fixture f;
	fixture_init(&f, NULL);
	int formats = 0;
#ifdef PYU_HAVE_ZLIB
	{
		char *gz = join(f.dir, "core.gz");
		gzFile z = gzopen(gz, "wb");
		ck_assert_ptr_nonnull(z);
		ck_assert_int_eq(gzwrite(z, f.bytes.data, (unsigned)f.bytes.len), (int)f.bytes.len);
		ck_assert_int_eq(gzclose(z), Z_OK);
		FILE *fp = fopen(gz, "rb");
		static unsigned char packed[1 << 20];
		size_t n = fread(packed, 1, sizeof(packed), fp);
		fclose(fp);
		unlink(gz);
		free(gz);
		check_compressed(&f, packed, n, true);
		check_compressed(&f, packed, n / 2, false); // truncated
		// Zero padding after the member (as some tools leave) ends the data.
		ck_assert_uint_lt(n + 512, sizeof(packed));
		memset(packed + n, 0, 512);
		check_compressed(&f, packed, n + 512, true);
		formats++;
	}
	{
		// Two members, as pigz or `cat a.gz b.gz` make.
		char *gz = join(f.dir, "core2.gz");
		size_t half = f.bytes.len / 2;
		gzFile z = gzopen(gz, "wb");
		ck_assert_int_eq(gzwrite(z, f.bytes.data, (unsigned)half), (int)half);
		ck_assert_int_eq(gzclose(z), Z_OK);
		z = gzopen(gz, "ab");
		ck_assert_int_eq(gzwrite(z, f.bytes.data + half, (unsigned)(f.bytes.len - half)),
				 (int)(f.bytes.len - half));
		ck_assert_int_eq(gzclose(z), Z_OK);
		FILE *fp = fopen(gz, "rb");
		static unsigned char packed2[1 << 20];
		size_t n = fread(packed2, 1, sizeof(packed2), fp);
		fclose(fp);
		unlink(gz);
		free(gz);
		check_compressed(&f, packed2, n, true);
	}
#endif
#ifdef PYU_HAVE_ZSTD
	{
		size_t cap = ZSTD_compressBound(f.bytes.len);
		void *packed = malloc(cap);
		size_t n = ZSTD_compress(packed, cap, f.bytes.data, f.bytes.len, 3);
		ck_assert(!ZSTD_isError(n));
		check_compressed(&f, packed, n, true);
		check_compressed(&f, packed, n / 2, false);
		free(packed);
		// Two frames back to back.
		size_t half = f.bytes.len / 2;
		packed = malloc(2 * cap);
		size_t n1 = ZSTD_compress(packed, cap, f.bytes.data, half, 3);
		ck_assert(!ZSTD_isError(n1));
		size_t n2 = ZSTD_compress((char *)packed + n1, cap, f.bytes.data + half,
					  f.bytes.len - half, 3);
		ck_assert(!ZSTD_isError(n2));
		check_compressed(&f, packed, n1 + n2, true);
		free(packed);
		formats++;
	}
#endif
#ifdef PYU_HAVE_LZMA
	{
		size_t cap = f.bytes.len + 4096, n = 0;
		uint8_t *packed = malloc(cap);
		ck_assert_int_eq(lzma_easy_buffer_encode(6, LZMA_CHECK_CRC64, NULL, f.bytes.data,
							 f.bytes.len, packed, &n, cap),
				 LZMA_OK);
		check_compressed(&f, packed, n, true);
		check_compressed(&f, packed, n / 2, false);
		// Two streams back to back, as `xz` writes for concatenated input.
		size_t half = f.bytes.len / 2, n2 = n;
		packed = realloc(packed, 2 * cap);
		n = 0;
		ck_assert_int_eq(lzma_easy_buffer_encode(1, LZMA_CHECK_CRC32, NULL, f.bytes.data,
							 half, packed, &n, cap), LZMA_OK);
		n2 = n;
		ck_assert_int_eq(lzma_easy_buffer_encode(1, LZMA_CHECK_CRC32, NULL,
							 f.bytes.data + half, f.bytes.len - half,
							 packed, &n2, 2 * cap), LZMA_OK);
		check_compressed(&f, packed, n2, true);
		free(packed);
		formats++;
	}
#endif
	// A format this build lacks must say so rather than misparse; one it has, when the data
	// is cut short, is a format error.
	static const unsigned char gz_magic[] = {0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 0, 3, 0, 0};
	char *path = join(f.dir, "core.gz");
	fx_write_file(path, gz_magic, sizeof(gz_magic));
	struct pyu_target *t;
	struct pyu_error *err = pyu_target_open_core(path, NULL, &t);
#ifdef PYU_HAVE_ZLIB
	ck_assert_int_eq(pyu_error_code(err), PYU_ERR_FORMAT); // a gzip header and nothing else
#else
	ck_assert_int_eq(pyu_error_code(err), PYU_ERR_UNSUPPORTED);
	ck_assert_ptr_nonnull(strstr(pyu_error_message(err), "gzip"));
#endif
	(void)formats;
	pyu_error_destroy(err);
	unlink(path);
	free(path);
	fixture_fini(&f);
}
END_TEST

// ---- bounds on unpacking -------------------------------------------------------------------

START_TEST(test_parse_size)
{
	uint64_t v = 7;
	ck_assert(pyu_parse_size("123", &v) && v == 123);
	ck_assert(pyu_parse_size("4K", &v) && v == 4096);
	ck_assert(pyu_parse_size("16G", &v) && v == 16ull << 30);
	ck_assert(pyu_parse_size("2GiB", &v) && v == 2ull << 30);
	ck_assert(pyu_parse_size("1tb", &v) && v == 1ull << 40);
	v = 7;
	ck_assert(!pyu_parse_size("", &v) && !pyu_parse_size(NULL, &v));
	ck_assert(!pyu_parse_size("-1", &v) && !pyu_parse_size("G", &v));
	ck_assert(!pyu_parse_size("12X", &v) && !pyu_parse_size("1K2", &v));
	ck_assert(!pyu_parse_size("99999999999999999999", &v));
	ck_assert(!pyu_parse_size("16777216T", &v)); // 2^64: does not fit
	ck_assert_uint_eq(v, 7);
}
END_TEST

#ifdef PYU_HAVE_ZLIB
// A gzip stream of @head followed by @zeros zero bytes, made chunk by chunk (never the whole
// unpacked data in memory). Malloc'd; *len set.
static unsigned char *gzip_with_zeros(const struct fx_buf *head, uint64_t zeros, size_t *len)
{
	static unsigned char zero[1 << 16];
	size_t cap = head->len + 4096 + (size_t)(zeros / 500);
	unsigned char *out = malloc(cap);
	ck_assert_ptr_nonnull(out);
	z_stream z;
	memset(&z, 0, sizeof(z));
	ck_assert_int_eq(deflateInit2(&z, 9, Z_DEFLATED, 15 + 16, 9, Z_DEFAULT_STRATEGY), Z_OK);
	z.next_out = out;
	z.avail_out = (uInt)cap;
	z.next_in = head->data;
	z.avail_in = (uInt)head->len;
	ck_assert_int_eq(deflate(&z, Z_NO_FLUSH), Z_OK);
	while (zeros > 0) {
		uint64_t n = zeros < sizeof(zero) ? zeros : sizeof(zero);
		z.next_in = zero;
		z.avail_in = (uInt)n;
		ck_assert_int_eq(deflate(&z, Z_NO_FLUSH), Z_OK);
		ck_assert_uint_eq(z.avail_in, 0);
		zeros -= n;
	}
	ck_assert_int_eq(deflate(&z, Z_FINISH), Z_STREAM_END);
	*len = cap - z.avail_out;
	deflateEnd(&z);
	return out;
}

// Number of entries in @dir other than . and ..
static int dir_entries(const char *dir)
{
	DIR *d = opendir(dir);
	ck_assert_ptr_nonnull(d);
	int n = 0;
	struct dirent *e;
	while ((e = readdir(d)))
		n += strcmp(e->d_name, ".") && strcmp(e->d_name, "..");
	closedir(d);
	return n;
}

// Opens @data (written to @dir/bomb.gz) with the given ceiling; the error, NULL on success.
// Whatever happens, nothing is left in the temporary directory @tmp.
static struct pyu_error *open_packed(const char *dir, const char *tmp, const void *data,
				     size_t len, uint64_t ceiling)
{
	char *path = join(dir, "bomb.gz");
	fx_write_file(path, data, len);
	struct pyu_target *t = NULL;
	struct pyu_error *err = pyu_target_open_core_limited(path, NULL, ceiling, &t);
	ck_assert_int_eq(dir_entries(tmp), 0); // open or not, the unpacked copy has no name
	pyu_target_destroy(t);
	ck_assert_int_eq(dir_entries(tmp), 0);
	unlink(path);
	free(path);
	return err;
}

static void expect_error(struct pyu_error *err, int code, const char *words)
{
	ck_assert_msg(err, "opened, expected an error saying '%s'", words);
	ck_assert_msg(pyu_error_code(err) == code && strstr(pyu_error_message(err), words),
		      "error %d '%s', expected %d saying '%s'", pyu_error_code(err),
		      pyu_error_message(err), code, words);
	pyu_error_destroy(err);
}

// Compressed cores that unpack to more than their headers promise (a decompression bomb),
// more than the ceiling, or to something that is no core: refused early, nothing left behind.
START_TEST(test_core_unpack_bounds)
{
	struct fixture f;
	fixture_init(&f, NULL);
	char *tmp = join(f.dir, "tmp");
	ck_assert_int_eq(mkdir(tmp, 0700), 0);
	const char *old_tmpdir = getenv("TMPDIR");
	char *saved = old_tmpdir ? strdup(old_tmpdir) : NULL;
	setenv("TMPDIR", tmp, 1);
	unsetenv("PYUNWIND_MAX_UNPACKED");

	// A core of 8 KiB by its headers: one PT_LOAD of a page at offset 4096.
	struct fx_buf head = {0};
	fx_ehdr(&head, 4, 64, 1, 0, 0, 0);
	fx_phdr(&head, 1, PF_R, 4096, 0x400000, 4096, 4096);
	size_t len;
	unsigned char *gz = gzip_with_zeros(&head, 8192 - head.len, &len);
	ck_assert_ptr_null(open_packed(f.dir, tmp, gz, len, 0)); // as promised
	free(gz);
	gz = gzip_with_zeros(&head, (1u << 20), &len); // 1 MiB of padding: inside the margin
	ck_assert_ptr_null(open_packed(f.dir, tmp, gz, len, 0));
	free(gz);
	// The bomb: 8 KiB promised, 40 MiB unpacked (from a 40 KiB file).
	gz = gzip_with_zeros(&head, 40u << 20, &len);
	ck_assert_uint_lt(len, 100u << 10);
	expect_error(open_packed(f.dir, tmp, gz, len, 0), PYU_ERR_FORMAT, "headers promise 8192");
	// The same with a ceiling below the margin, from the option and from the environment.
	expect_error(open_packed(f.dir, tmp, gz, len, 1u << 20), PYU_ERR_FORMAT,
		     "more than 1048576 bytes");
	setenv("PYUNWIND_MAX_UNPACKED", "4K", 1);
	expect_error(open_packed(f.dir, tmp, gz, len, 0), PYU_ERR_FORMAT,
		     "more than the ceiling of 4096");
	setenv("PYUNWIND_MAX_UNPACKED", "lots", 1);
	expect_error(open_packed(f.dir, tmp, gz, len, 0), PYU_ERR_ARGUMENT,
		     "PYUNWIND_MAX_UNPACKED=lots");
	unsetenv("PYUNWIND_MAX_UNPACKED");
	free(gz);

	// Headers that promise 1 TiB: refused by the default ceiling before unpacking more.
	struct fx_buf huge = {0};
	fx_ehdr(&huge, 4, 64, 1, 0, 0, 0);
	fx_phdr(&huge, 1, PF_R, 4096, 0x400000, 1ull << 40, 1ull << 40);
	gz = gzip_with_zeros(&huge, 4u << 20, &len);
	expect_error(open_packed(f.dir, tmp, gz, len, 0), PYU_ERR_FORMAT,
		     "promise 1099511631872 bytes, more than the ceiling");
	free(gz);
	// Not an ELF file at all: refused after its first bytes, not after gigabytes.
	struct fx_buf text = {0};
	fx_put(&text, "not a core", 10);
	gz = gzip_with_zeros(&text, 40u << 20, &len);
	expect_error(open_packed(f.dir, tmp, gz, len, 0), PYU_ERR_FORMAT, "not an ELF file");
	free(gz);
	// Data placed past the end of any file.
	struct fx_buf wrap = {0};
	fx_ehdr(&wrap, 4, 64, 1, 0, 0, 0);
	fx_phdr(&wrap, 1, PF_R, UINT64_MAX - 10, 0x400000, 4096, 4096);
	gz = gzip_with_zeros(&wrap, 4096, &len);
	expect_error(open_packed(f.dir, tmp, gz, len, 0), PYU_ERR_FORMAT, "past the end");
	free(gz);

	fx_free(&head);
	fx_free(&huge);
	fx_free(&text);
	fx_free(&wrap);
	if (saved)
		setenv("TMPDIR", saved, 1);
	else
		unsetenv("TMPDIR");
	free(saved);
	rmdir(tmp);
	free(tmp);
	fixture_fini(&f);
}
END_TEST
#endif

// ---- a real core from gdb ------------------------------------------------------------------

static bool have_gdb(void)
{
	return system("command -v gdb >/dev/null 2>&1") == 0;
}

// The first and last page of every readable mapping of a live process, to compare with a
// core of it later (when the process may be gone).
struct snapshot {
	size_t count;
	uint64_t addr[2048];
	unsigned char (*pages)[4096];
	char *path[2048];
	int code_pages; // pages of executable file mappings (which cores tend to leave out)
};

static void snapshot_take(struct pyu_target *live, struct snapshot *s)
{
	memset(s, 0, sizeof(*s));
	s->pages = malloc(2048 * 4096);
	ck_assert_ptr_nonnull(s->pages);
	for (size_t i = 0; i < pyu_target_mapping_count(live); i++) {
		const struct pyu_mapping *m = pyu_target_mapping(live, i);
		if (!m->readable || (m->path && strncmp(m->path, "[vvar", 5) == 0) ||
		    (m->path && strcmp(m->path, "[vsyscall]") == 0))
			continue;
		uint64_t addrs[] = {m->start, m->end - 4096};
		for (int k = 0; k < (m->end - m->start > 4096 ? 2 : 1) && s->count < 2048; k++) {
			struct pyu_error *err = pyu_target_read(live, addrs[k], s->pages[s->count], 4096);
			ck_assert_msg(!err, "live read: %s", pyu_error_message(err));
			s->addr[s->count] = addrs[k];
			s->path[s->count] = m->path ? strdup(m->path) : NULL;
			s->count++;
			s->code_pages += m->executable && m->path && m->path[0] == '/';
		}
	}
	ck_assert_uint_gt(s->count, 10);
	ck_assert_int_gt(s->code_pages, 0);
}

static void snapshot_compare_some(const struct snapshot *s, struct pyu_target *core,
				  const char *only_exe)
{
	static unsigned char page[4096];
	for (size_t i = 0; i < s->count; i++) {
		// @only_exe: files the program mapped itself (locales) cannot be known without
		// NT_FILE; only anonymous memory, the executable and shared objects are compared.
		if (only_exe && s->path[i] && s->path[i][0] == '/' &&
		    strcmp(s->path[i], only_exe) != 0 && !strstr(s->path[i], ".so"))
			continue;
		struct pyu_error *err = pyu_target_read(core, s->addr[i], page, sizeof(page));
		ck_assert_msg(!err, "core read at 0x%" PRIx64 " (%s): %s", s->addr[i],
			      s->path[i] ? s->path[i] : "anon", pyu_error_message(err));
		ck_assert_msg(memcmp(page, s->pages[i], sizeof(page)) == 0,
			      "0x%" PRIx64 " (%s) differs", s->addr[i],
			      s->path[i] ? s->path[i] : "anon");
	}
}

static void snapshot_compare(const struct snapshot *s, struct pyu_target *core)
{
	snapshot_compare_some(s, core, NULL);
}

static void snapshot_free(struct snapshot *s)
{
	for (size_t i = 0; i < s->count; i++)
		free(s->path[i]);
	free(s->pages);
}

// Starts `sleep` in @dir with core dumps allowed; returns once it runs sleep, not us.
static pid_t start_sleeper(const char *dir, char *exe, size_t exe_len)
{
	pid_t pid = fork();
	ck_assert_int_ge(pid, 0);
	if (pid == 0) {
		struct rlimit rl = {RLIM_INFINITY, RLIM_INFINITY};
		setrlimit(RLIMIT_CORE, &rl);
		if (chdir(dir) != 0)
			_exit(126);
		execlp("sleep", "sleep", "600", (char *)NULL);
		_exit(127);
	}
	char self[4096] = {0}, link[64];
	ck_assert_int_gt(readlink("/proc/self/exe", self, sizeof(self) - 1), 0);
	snprintf(link, sizeof(link), "/proc/%d/exe", (int)pid);
	for (int i = 0; i < 500; i++) {
		memset(exe, 0, exe_len);
		if (readlink(link, exe, exe_len - 1) > 0 && strcmp(exe, self) != 0)
			break;
		usleep(10000);
	}
	// Its memory is only still once it sleeps: startup (loader, locale) can take a while on
	// a busy machine. /proc/PID/syscall names the blocking call (nanosleep or
	// clock_nanosleep); wchan says the same where syscall numbers differ.
	for (int i = 0; i < 1000; i++) {
		char path[64], buf[128] = {0};
		snprintf(path, sizeof(path), "/proc/%d/syscall", (int)pid);
		FILE *fp = fopen(path, "r");
		long nr = -1;
		if (fp) {
			if (fscanf(fp, "%ld", &nr) != 1)
				nr = -1;
			fclose(fp);
		}
#if defined(__x86_64__)
		if (nr == 35 || nr == 230)
			break;
#elif defined(__aarch64__)
		if (nr == 101 || nr == 115)
			break;
#endif
		snprintf(path, sizeof(path), "/proc/%d/wchan", (int)pid);
		fp = fopen(path, "r");
		if (fp) {
			bool asleep = fgets(buf, sizeof(buf), fp) && strstr(buf, "nanosleep");
			fclose(fp);
			if (asleep)
				break;
		}
		usleep(10000);
	}
	return pid;
}

// The executable's first mapping in @core is named as in @live and starts with an ELF header.
static void check_exe_mapping(struct pyu_target *live, struct pyu_target *core, const char *exe)
{
	const struct pyu_mapping *lm = NULL;
	for (size_t i = 0; i < pyu_target_mapping_count(live) && !lm; i++) {
		if (pyu_target_mapping(live, i)->path &&
		    strcmp(pyu_target_mapping(live, i)->path, exe) == 0)
			lm = pyu_target_mapping(live, i);
	}
	ck_assert_ptr_nonnull(lm);
	const struct pyu_mapping *cm = pyu_target_find_mapping(core, lm->start);
	ck_assert_ptr_nonnull(cm);
	ck_assert_str_eq(cm->path, exe);
	unsigned char magic[4];
	ck_assert_ptr_null(pyu_target_read(core, lm->start, magic, 4));
	ck_assert_mem_eq(magic, "\177ELF", 4);
}

START_TEST(test_gdb_core)
{
	ck_assert_msg(have_gdb(), "gdb is required (tools/install-deps installs it)");
	struct fixture f;
	fixture_init(&f, NULL);
	char exe[4096];
	pid_t pid = start_sleeper(f.dir, exe, sizeof(exe));
	char cmd[8192];
	snprintf(cmd, sizeof(cmd),
		 "timeout 120 gdb -nx -batch -p %d -ex 'generate-core-file %s' >/dev/null 2>&1",
		 (int)pid, f.core);
	int rc = system(cmd);
	ck_assert_msg(rc == 0, "gdb failed (%d)", rc);
	// The live memory as gdb left it: attaching interrupts the sleep, and the kernel writes
	// the time remaining into the process's stack; after that it sleeps untouched.
	struct pyu_target *live = NULL;
	ck_assert_ptr_null(pyu_target_open_pid(pid, &live));
	struct snapshot snap;
	snapshot_take(live, &snap);

	struct pyu_target *core = open_core_ok(f.core, NULL);
	ck_assert_ptr_null(pyu_target_notice(core));
	ck_assert_uint_eq(pyu_target_thread_count(core), 1);
	ck_assert_int_eq(pyu_target_thread(core, 0), pid);
	check_exe_mapping(live, core, exe);
	snapshot_compare(&snap, core);
	pyu_target_destroy(core);

#ifdef PYU_HAVE_ZLIB
	// The same core, gzip-compressed.
	char *gz = join(f.dir, "core.gz");
	FILE *in = fopen(f.core, "rb");
	gzFile z = gzopen(gz, "wb1");
	ck_assert_ptr_nonnull(in);
	ck_assert_ptr_nonnull(z);
	static unsigned char chunk[1 << 16];
	size_t n;
	while ((n = fread(chunk, 1, sizeof(chunk), in)) > 0)
		ck_assert_int_eq(gzwrite(z, chunk, (unsigned)n), (int)n);
	fclose(in);
	ck_assert_int_eq(gzclose(z), Z_OK);
	core = open_core_ok(gz, NULL);
	snapshot_compare(&snap, core);
	pyu_target_destroy(core);
	unlink(gz);
	free(gz);
#endif
	snapshot_free(&snap);
	pyu_target_destroy(live);
	kill(pid, SIGKILL);
	waitpid(pid, NULL, 0);
	fixture_fini(&f);
}
END_TEST

// Waits until @pid is in the stopped state ('T' in /proc/PID/stat).
static void wait_stopped(pid_t pid)
{
	char path[64];
	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	for (int i = 0; i < 1000; i++) {
		char buf[512] = {0};
		FILE *fp = fopen(path, "r");
		ck_assert_ptr_nonnull(fp);
		size_t n = fread(buf, 1, sizeof(buf) - 1, fp);
		fclose(fp);
		char *paren = n ? strrchr(buf, ')') : NULL; // the name may contain spaces
		if (paren && paren[1] == ' ' && (paren[2] == 'T' || paren[2] == 't'))
			return;
		usleep(10000);
	}
	ck_abort_msg("process %d did not stop", (int)pid);
}

// Whether the kernel writes cores as a plain file "core" (or "core.PID") in the crashing
// process's directory - the only setup this test can use without privileges it lacks. When it
// does not, @why (of @why_len bytes) says what is in the way.
static bool kernel_cores_usable(char *why, size_t why_len)
{
	char pattern[256] = {0};
	FILE *fp = fopen("/proc/sys/kernel/core_pattern", "r");
	if (!fp) {
		snprintf(why, why_len, "cannot read /proc/sys/kernel/core_pattern");
		return false;
	}
	bool ok = fgets(pattern, sizeof(pattern), fp) != NULL;
	fclose(fp);
	pattern[strcspn(pattern, "\n")] = 0;
	if (!ok || strcmp(pattern, "core") != 0) {
		snprintf(why, why_len, "kernel.core_pattern is \"%s\", not \"core\" (sysctl "
			 "kernel.core_pattern=core lets the kernel write the core this test reads)",
			 pattern);
		return false;
	}
	struct rlimit rl;
	if (getrlimit(RLIMIT_CORE, &rl) != 0 || rl.rlim_max != RLIM_INFINITY) {
		snprintf(why, why_len, "core dumps are limited (hard RLIMIT_CORE is not unlimited)");
		return false;
	}
	return true;
}

// Copies the core @src to @dst with its NT_FILE note turned into a note of a type nobody
// reads (same size): a core that names no files, as qemu-user writes them.
static void strip_nt_file(const char *src, const char *dst)
{
	FILE *in = fopen(src, "rb");
	ck_assert_ptr_nonnull(in);
	ck_assert_int_eq(fseek(in, 0, SEEK_END), 0);
	long size = ftell(in);
	ck_assert_int_gt(size, 64);
	rewind(in);
	unsigned char *b = malloc((size_t)size);
	ck_assert_ptr_nonnull(b);
	ck_assert_uint_eq(fread(b, 1, (size_t)size, in), (size_t)size);
	fclose(in);
	uint64_t phoff = pyu_le64(b + 32);
	unsigned phnum = pyu_le16(b + 56);
	int stripped = 0;
	for (unsigned i = 0; i < phnum; i++) {
		const unsigned char *ph = b + phoff + 56ull * i;
		if (pyu_le32(ph) != 4) // PT_NOTE
			continue;
		uint64_t off = pyu_le64(ph + 8), end = off + pyu_le64(ph + 32);
		ck_assert_uint_le(end, (uint64_t)size);
		while (off + 12 <= end) {
			uint32_t namesz = pyu_le32(b + off), descsz = pyu_le32(b + off + 4);
			if (pyu_le32(b + off + 8) == 0x46494c45u) { // NT_FILE
				memset(b + off + 8, 0xee, 4);
				stripped++;
			}
			off += 12 + ((namesz + 3u) & ~3u) + ((descsz + 3u) & ~3u);
		}
	}
	ck_assert_int_eq(stripped, 1);
	FILE *out = fopen(dst, "wb");
	ck_assert_ptr_nonnull(out);
	ck_assert_uint_eq(fwrite(b, 1, (size_t)size, out), (size_t)size);
	ck_assert_int_eq(fclose(out), 0);
	free(b);
}

START_TEST(test_kernel_core)
{
	// A kernel core writes the first page of each file mapping (its ELF header) and leaves
	// the rest of the code out: those pages must come from the files. A machine that cannot
	// make one fails this test, saying why: a test that is not run is not a pass.
	char why[512];
	if (!kernel_cores_usable(why, sizeof(why)))
		ck_abort_msg("no kernel core can be made here: %s", why);
	struct fixture f;
	fixture_init(&f, NULL);
	char exe[4096];
	pid_t pid = start_sleeper(f.dir, exe, sizeof(exe));
	// Stopping interrupts the sleep (the kernel writes the time remaining into the stack);
	// a stopped process then stays still until SIGCONT lets the pending SIGABRT dump it.
	ck_assert_int_eq(kill(pid, SIGSTOP), 0);
	wait_stopped(pid);
	struct pyu_target *live = NULL;
	ck_assert_ptr_null(pyu_target_open_pid(pid, &live));
	struct snapshot snap;
	snapshot_take(live, &snap);
	ck_assert_int_eq(kill(pid, SIGABRT), 0);
	ck_assert_int_eq(kill(pid, SIGCONT), 0);
	int status = 0;
	ck_assert_int_eq(waitpid(pid, &status, 0), pid);
	ck_assert_msg(WIFSIGNALED(status) && WCOREDUMP(status), "no core was dumped");
	char *core_path = join(f.dir, "core");
	char alt[4200];
	snprintf(alt, sizeof(alt), "%s.%d", core_path, (int)pid); // kernel.core_uses_pid
	struct pyu_target *core = open_core_ok(access(core_path, F_OK) == 0 ? core_path : alt,
					      NULL);
	ck_assert_ptr_null(pyu_target_notice(core));
	ck_assert_uint_eq(pyu_target_thread_count(core), 1);
	ck_assert_int_eq(pyu_target_thread(core, 0), pid);
	check_exe_mapping(live, core, exe);
	snapshot_compare(&snap, core);
	pyu_target_destroy(core);

	// The same core without its NT_FILE note: the files (the code pages the core left out)
	// are found from the dynamic linker's list in the core's memory.
	char *bare = join(f.dir, "core.bare");
	strip_nt_file(access(core_path, F_OK) == 0 ? core_path : alt, bare);
	core = open_core_ok(bare, NULL);
	const struct pyu_mapping *em = NULL, *libc = NULL;
	for (size_t i = 0; i < pyu_target_mapping_count(live); i++) {
		const struct pyu_mapping *m = pyu_target_mapping(live, i);
		if (!em && m->path && strcmp(m->path, exe) == 0)
			em = m;
		if (!libc && m->path && strstr(m->path, "/libc.so"))
			libc = m;
	}
	ck_assert_ptr_nonnull(em);
	ck_assert_ptr_nonnull(libc);
	const struct pyu_mapping *bm = pyu_target_find_mapping(core, em->start);
	ck_assert_msg(bm && bm->path && bm->local_path, "the executable is not named");
	char *real = realpath(bm->local_path, NULL);
	ck_assert_str_eq(real, exe);
	free(real);
	bm = pyu_target_find_mapping(core, libc->start);
	ck_assert_msg(bm && bm->path && strstr(bm->path, "/libc.so"), "libc is not named");
	snapshot_compare_some(&snap, core, exe);
	pyu_target_destroy(core);
	unlink(bare);
	free(bare);

	snapshot_free(&snap);
	pyu_target_destroy(live);
	unlink(alt);
	free(core_path);
	fixture_fini(&f);
}
END_TEST

static Suite *core_suite(void)
{
	Suite *s = suite_create("core");
	TCase *tc = tcase_create("synthetic");
	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, test_core_reads);
	tcase_add_test(tc, test_core_counters);
	tcase_add_test(tc, test_core_path_map);
	tcase_add_test(tc, test_core_executable);
	tcase_add_test(tc, test_core_deleted_file);
	tcase_add_test(tc, test_core_not_a_core);
	tcase_add_test(tc, test_core_truncated);
	tcase_add_test(tc, test_core_garbage_notes);
	tcase_add_test(tc, test_core_absurd_notes);
	tcase_add_test(tc, test_core_crash_signal);
	tcase_add_test(tc, test_core_absurd_headers);
	tcase_add_test(tc, test_core_compressed);
	tcase_add_test(tc, test_parse_size);
#ifdef PYU_HAVE_ZLIB
	tcase_add_test(tc, test_core_unpack_bounds);
#endif
	tcase_add_test(tc, test_core_build_id);
	tcase_add_test(tc, test_core_without_nt_file);
	suite_add_tcase(s, tc);
	TCase *real = tcase_create("gdb");
	tcase_set_timeout(real, 300);
	tcase_add_test(real, test_gdb_core);
	tcase_add_test(real, test_kernel_core);
	suite_add_tcase(s, real);
	return s;
}

PYU_CHECK_MAIN(core_suite)
