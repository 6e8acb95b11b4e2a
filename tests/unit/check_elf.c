// check_elf.c - the ELF reader: a synthetic shared object and executable built byte by byte
// (sections, .dynsym and .symtab lookups, reads at a virtual address including .bss, load
// bias), the same file truncated and corrupted in every way we could think of, and the real
// test binary and libc as this process maps them.
#include <inttypes.h>
#include <stdbool.h>
#include <sys/stat.h>
#include <unistd.h>

#include "checkmain.h"
#include "elf.h"
#include "elf_fixture.h"

#define SHT_PROGBITS 1
#define SHT_SYMTAB 2
#define SHT_STRTAB 3
#define SHT_NOBITS 8
#define SHT_DYNSYM 11

// ---- the synthetic file --------------------------------------------------------------------
// PT_LOAD 1: file 0x0-0x2000 at vaddr base+0x0 (headers, .dynsym, .dynstr, .text)
// PT_LOAD 2: file 0x2000-0x2100 at vaddr base+0x3000, memsz 0x300 (.data, .PyRuntime, .bss)
// Sections: 1 .dynsym 2 .dynstr 3 .text 4 .PyRuntime 5 .data 6 .bss 7 .symtab 8 .strtab
//           9 .shstrtab

#define PY_VERSION_VALUE 0x030d00f0u

struct elf_layout {
	size_t shoff;        // where the section headers start
	size_t symtab_off;   // .symtab contents
	size_t size;
};

static void put_shdr(struct fx_buf *b, uint32_t name, uint32_t type, uint64_t flags,
		     uint64_t addr, uint64_t offset, uint64_t size, uint32_t link, uint64_t entsize)
{
	fx_u32(b, name);
	fx_u32(b, type);
	fx_u64(b, flags);
	fx_u64(b, addr);
	fx_u64(b, offset);
	fx_u64(b, size);
	fx_u32(b, link);
	fx_u32(b, 0); // sh_info
	fx_u64(b, 8);
	fx_u64(b, entsize);
}

static void put_sym(struct fx_buf *b, uint32_t name, uint8_t info, uint16_t shndx,
		    uint64_t value, uint64_t size)
{
	fx_u32(b, name);
	fx_put(b, &info, 1);
	fx_put(b, "\0", 1);
	fx_u16(b, shndx);
	fx_u64(b, value);
	fx_u64(b, size);
}

// Appends @s to the string table @b and returns its offset.
static uint32_t add_str(struct fx_buf *b, const char *s)
{
	uint32_t at = (uint32_t)b->len;
	fx_put(b, s, strlen(s) + 1);
	return at;
}

// @id_byte: 0 for no build ID, else a 20-byte GNU build ID of that byte (in a PT_NOTE).
static struct elf_layout build_elf(struct fx_buf *b, uint16_t type, uint64_t base,
				   unsigned char id_byte)
{
	struct elf_layout lay = {0};
	fx_zero(b, 0x2100); // the loaded part of the file
	// .text: a recognisable pattern.
	for (size_t i = 0; i < 0x100; i++)
		b->data[0x1000 + i] = fx_pattern(base + 0x1000 + i);
	// .data: pattern, with Py_Version at +0x10.
	for (size_t i = 0; i < 0x100; i++)
		b->data[0x2000 + i] = fx_pattern(base + 0x3000 + i);
	fx_set(b, 0x2010, PY_VERSION_VALUE, 4);

	// .dynsym at 0x400 and .dynstr at 0x500.
	struct fx_buf dynstr = {0}, dynsym = {0};
	add_str(&dynstr, "");
	uint32_t n_rt = add_str(&dynstr, "_PyRuntime");
	uint32_t n_malloc = add_str(&dynstr, "malloc");
	put_sym(&dynsym, 0, 0, 0, 0, 0);
	put_sym(&dynsym, n_rt, 0x11, 4, base + 0x3080, 0x40);   // GLOBAL OBJECT
	put_sym(&dynsym, n_malloc, 0x12, 0, 0, 0);              // undefined
	memcpy(b->data + 0x400, dynsym.data, dynsym.len);
	memcpy(b->data + 0x500, dynstr.data, dynstr.len);

	// .symtab and .strtab after the loaded part.
	struct fx_buf strtab = {0}, symtab = {0};
	add_str(&strtab, "");
	uint32_t s_ver = add_str(&strtab, "Py_Version");
	uint32_t s_fn = add_str(&strtab, "local_fn");
	uint32_t s_bss = add_str(&strtab, "bss_var");
	uint32_t s_rt = add_str(&strtab, "_PyRuntime");
	put_sym(&symtab, 0, 0, 0, 0, 0);
	put_sym(&symtab, s_ver, 0x11, 5, base + 0x3010, 4);
	put_sym(&symtab, s_fn, 0x02, 3, base + 0x1000, 0x20); // LOCAL FUNC
	put_sym(&symtab, s_bss, 0x11, 6, base + 0x3180, 8);
	put_sym(&symtab, s_rt, 0x11, 4, base + 0x9999, 0x40);  // .dynsym's wins
	lay.symtab_off = b->len;
	fx_put(b, symtab.data, symtab.len);
	size_t strtab_off = b->len;
	fx_put(b, strtab.data, strtab.len);

	size_t debuglink_off = b->len;
	fx_put(b, "synthetic.debug\0\0\0\0\0", 20); // name, padding to 4, then the CRC
	struct fx_buf shstr = {0};
	add_str(&shstr, "");
	uint32_t names[11];
	const char *sec_names[] = {"", ".dynsym", ".dynstr", ".text", ".PyRuntime", ".data",
				   ".bss", ".symtab", ".strtab", ".shstrtab", ".gnu_debuglink"};
	for (int i = 1; i < 11; i++)
		names[i] = add_str(&shstr, sec_names[i]);
	size_t shstr_off = b->len;
	fx_put(b, shstr.data, shstr.len);
	fx_align(b, 8);
	if (id_byte) { // the note inside the first segment, after the dynamic tables
		fx_set(b, 0x600, 4, 4);
		fx_set(b, 0x604, 20, 4);
		fx_set(b, 0x608, 3, 4);
		memcpy(b->data + 0x60c, "GNU", 4);
		memset(b->data + 0x610, id_byte, 20);
	}

	lay.shoff = b->len;
	put_shdr(b, 0, 0, 0, 0, 0, 0, 0, 0);
	put_shdr(b, names[1], SHT_DYNSYM, 2, base + 0x400, 0x400, dynsym.len, 2, 24);
	put_shdr(b, names[2], SHT_STRTAB, 2, base + 0x500, 0x500, dynstr.len, 0, 0);
	put_shdr(b, names[3], SHT_PROGBITS, 6, base + 0x1000, 0x1000, 0x100, 0, 0);
	put_shdr(b, names[4], SHT_PROGBITS, 3, base + 0x3080, 0x2080, 0x40, 0, 0);
	put_shdr(b, names[5], SHT_PROGBITS, 3, base + 0x3000, 0x2000, 0x80, 0, 0);
	put_shdr(b, names[6], SHT_NOBITS, 3, base + 0x3100, 0x2100, 0x200, 0, 0);
	put_shdr(b, names[7], SHT_SYMTAB, 0, 0, lay.symtab_off, symtab.len, 8, 24);
	put_shdr(b, names[8], SHT_STRTAB, 0, 0, strtab_off, strtab.len, 0, 0);
	put_shdr(b, names[9], SHT_STRTAB, 0, 0, shstr_off, shstr.len, 0, 0);
	put_shdr(b, names[10], SHT_PROGBITS, 0, 0, debuglink_off, 20, 0, 0);
	lay.size = b->len;

	struct fx_buf head = {0};
	fx_ehdr(&head, type, 64, id_byte ? 3 : 2, lay.shoff, 11, 9);
	fx_phdr(&head, 1, 5, 0, base, 0x2000, 0x2000);
	fx_phdr(&head, 1, 6, 0x2000, base + 0x3000, 0x100, 0x300);
	if (id_byte)
		fx_phdr(&head, 4, 4, 0x600, base + 0x600, 36, 36);
	memcpy(b->data, head.data, head.len);
	fx_free(&head), fx_free(&dynstr), fx_free(&dynsym), fx_free(&strtab), fx_free(&symtab);
	fx_free(&shstr);
	return lay;
}

struct elf_file {
	char *path;
	struct fx_buf bytes;
	struct elf_layout lay;
};

static void elf_file_init(struct elf_file *f, uint16_t type, uint64_t base)
{
	memset(f, 0, sizeof(*f));
	f->path = fx_tmp_path();
	f->lay = build_elf(&f->bytes, type, base, 0);
	fx_write_file(f->path, f->bytes.data, f->bytes.len);
}

static void elf_file_fini(struct elf_file *f)
{
	unlink(f->path);
	free(f->path);
	fx_free(&f->bytes);
}

static struct pyu_elf *open_ok(const char *path)
{
	struct pyu_elf *elf = NULL;
	struct pyu_error *err = pyu_elf_open(path, &elf);
	ck_assert_msg(!err, "%s", pyu_error_message(err));
	return elf;
}

static void expect_code(struct pyu_error *err, int code)
{
	ck_assert_msg(pyu_error_code(err) == code, "expected code %d, got %d (%s)", code,
		      pyu_error_code(err), pyu_error_message(err));
	pyu_error_destroy(err);
}

START_TEST(test_elf_sections_and_symbols)
{
	struct elf_file f;
	elf_file_init(&f, PYU_ELF_ET_DYN, 0);
	struct pyu_elf *elf = open_ok(f.path);
	ck_assert_uint_eq(pyu_elf_type(elf), PYU_ELF_ET_DYN);
	ck_assert_uint_eq(pyu_elf_first_load_vaddr(elf), 0);
	ck_assert_str_eq(pyu_elf_path(elf), f.path);

	struct pyu_elf_section sec;
	ck_assert_ptr_null(pyu_elf_find_section(elf, ".PyRuntime", &sec));
	ck_assert_uint_eq(sec.addr, 0x3080);
	ck_assert_uint_eq(sec.offset, 0x2080);
	ck_assert_uint_eq(sec.size, 0x40);
	ck_assert_uint_eq(sec.type, SHT_PROGBITS);
	ck_assert_ptr_null(pyu_elf_find_section(elf, ".bss", &sec));
	ck_assert_uint_eq(sec.type, SHT_NOBITS);
	ck_assert_uint_eq(sec.size, 0x200);
	sec.addr = 12345;
	expect_code(pyu_elf_find_section(elf, ".AsyncioDebug", &sec), PYU_ERR_NOT_FOUND);
	ck_assert_uint_eq(sec.addr, 12345); // untouched on failure
	expect_code(pyu_elf_find_section(elf, ".PyRuntim", &sec), PYU_ERR_NOT_FOUND);

	struct pyu_elf_symbol sym;
	ck_assert_ptr_null(pyu_elf_find_symbol(elf, "_PyRuntime", &sym));
	ck_assert_uint_eq(sym.value, 0x3080); // from .dynsym, not .symtab's 0x9999
	ck_assert_uint_eq(sym.size, 0x40);
	ck_assert_uint_eq(sym.type, 1);
	ck_assert_uint_eq(sym.bind, 1);
	ck_assert_uint_eq(sym.shndx, 4);
	ck_assert_ptr_null(pyu_elf_find_symbol(elf, "Py_Version", &sym));
	ck_assert_uint_eq(sym.value, 0x3010);
	ck_assert_ptr_null(pyu_elf_find_symbol(elf, "local_fn", &sym));
	ck_assert_uint_eq(sym.type, 2);
	ck_assert_uint_eq(sym.bind, 0);
	ck_assert_uint_eq(sym.size, 0x20);
	uint8_t id[PYU_BUILD_ID_MAX];
	size_t id_len = 99;
	expect_code(pyu_elf_build_id(elf, id, sizeof(id), &id_len), PYU_ERR_NOT_FOUND);
	ck_assert_uint_eq(id_len, 99);
	sym.value = 777;
	expect_code(pyu_elf_find_symbol(elf, "malloc", &sym), PYU_ERR_NOT_FOUND); // undefined
	expect_code(pyu_elf_find_symbol(elf, "_PyRunt", &sym), PYU_ERR_NOT_FOUND);
	expect_code(pyu_elf_find_symbol(elf, "", &sym), PYU_ERR_NOT_FOUND);
	ck_assert_uint_eq(sym.value, 777);
	pyu_elf_close(elf);
	pyu_elf_close(NULL);
	elf_file_fini(&f);
}
END_TEST

START_TEST(test_elf_read_vaddr)
{
	struct elf_file f;
	elf_file_init(&f, PYU_ELF_ET_DYN, 0);
	struct pyu_elf *elf = open_ok(f.path);
	struct pyu_elf_symbol sym;
	ck_assert_ptr_null(pyu_elf_find_symbol(elf, "Py_Version", &sym));
	unsigned char v[4];
	ck_assert_ptr_null(pyu_elf_read(elf, sym.value, v, 4));
	ck_assert_uint_eq(v[0] | v[1] << 8 | v[2] << 16 | (uint32_t)v[3] << 24, PY_VERSION_VALUE);
	// From the file part of a segment into its .bss part: zeros after p_filesz.
	unsigned char buf[32];
	ck_assert_ptr_null(pyu_elf_read(elf, 0x30f0, buf, 32));
	for (int i = 0; i < 16; i++)
		ck_assert_uint_eq(buf[i], fx_pattern(0x30f0 + (uint64_t)i));
	for (int i = 16; i < 32; i++)
		ck_assert_uint_eq(buf[i], 0);
	ck_assert_ptr_null(pyu_elf_read(elf, 0x1010, buf, 16));
	for (int i = 0; i < 16; i++)
		ck_assert_uint_eq(buf[i], fx_pattern(0x1010 + (uint64_t)i));
	// Outside every segment, past memsz, in the gap between segments, wrapping around.
	expect_code(pyu_elf_read(elf, 0x32f8, buf, 16), PYU_ERR_FAULT);
	expect_code(pyu_elf_read(elf, 0x2800, buf, 4), PYU_ERR_FAULT);
	expect_code(pyu_elf_read(elf, UINT64_MAX - 4, buf, 16), PYU_ERR_FAULT);
	ck_assert_ptr_null(pyu_elf_read(elf, 0x5000, buf, 0));
	// Plain file reads are bounded by the file.
	ck_assert_ptr_null(pyu_elf_read_file(elf, 0, buf, 4));
	ck_assert_mem_eq(buf, "\177ELF", 4);
	expect_code(pyu_elf_read_file(elf, f.lay.size - 2, buf, 4), PYU_ERR_FAULT);
	expect_code(pyu_elf_read_file(elf, UINT64_MAX - 1, buf, 4), PYU_ERR_FAULT);
	pyu_elf_close(elf);
	elf_file_fini(&f);
}
END_TEST

static uint64_t no_read(void *arg, uint64_t addr, void *buf, uint64_t len)
{
	(void)arg, (void)addr, (void)buf, (void)len;
	return 0;
}

START_TEST(test_elf_load_bias)
{
	struct elf_file dyn, exe;
	elf_file_init(&dyn, PYU_ELF_ET_DYN, 0);
	elf_file_init(&exe, PYU_ELF_ET_EXEC, 0x400000);
	struct pyu_target *t;
	ck_assert_ptr_null(pyu_target_open_callback(no_read, NULL, &t));
	// The way a loader maps it: offset 0 first, then the data segment.
	ck_assert_ptr_null(pyu_target_add_mapping(t, 0x7f0000003000, 0x7f0000004000, 0x2000, 1,
						  "/target/lib/libpython3.13.so"));
	ck_assert_ptr_null(pyu_target_add_mapping(t, 0x7f0000000000, 0x7f0000002000, 0, 0,
						  "/target/lib/libpython3.13.so"));
	ck_assert_ptr_null(pyu_target_add_mapping(t, 0x400000, 0x402000, 0, 0, "/target/python"));
	ck_assert_ptr_null(pyu_target_add_path_map(t, "/target", "/local"));

	struct pyu_elf *elf = open_ok(dyn.path);
	uint64_t bias = 1;
	ck_assert_ptr_null(pyu_elf_load_bias(t, elf, "/target/lib/libpython3.13.so", &bias));
	ck_assert_uint_eq(bias, 0x7f0000000000);
	bias = 1;
	ck_assert_ptr_null(pyu_elf_load_bias(t, elf, "/local/lib/libpython3.13.so", &bias));
	ck_assert_uint_eq(bias, 0x7f0000000000); // the local name works too
	bias = 1;
	expect_code(pyu_elf_load_bias(t, elf, "/not/mapped.so", &bias), PYU_ERR_NOT_FOUND);
	ck_assert_uint_eq(bias, 1);
	pyu_elf_close(elf);

	elf = open_ok(exe.path);
	ck_assert_uint_eq(pyu_elf_type(elf), PYU_ELF_ET_EXEC);
	ck_assert_uint_eq(pyu_elf_first_load_vaddr(elf), 0x400000);
	ck_assert_ptr_null(pyu_elf_load_bias(t, elf, "/target/python", &bias));
	ck_assert_uint_eq(bias, 0);
	struct pyu_elf_symbol sym;
	ck_assert_ptr_null(pyu_elf_find_symbol(elf, "Py_Version", &sym));
	ck_assert_uint_eq(sym.value, 0x403010);
	unsigned char v[4];
	ck_assert_ptr_null(pyu_elf_read(elf, sym.value, v, 4));
	ck_assert_uint_eq(v[0], PY_VERSION_VALUE & 0xff);
	pyu_elf_close(elf);
	pyu_target_destroy(t);
	elf_file_fini(&dyn);
	elf_file_fini(&exe);
}
END_TEST

// Every query on a possibly broken file: must not crash; what it finds must be what the
// intact file holds (or an error).
static void probe(const char *path, bool may_succeed)
{
	struct pyu_elf *elf = NULL;
	struct pyu_error *err = pyu_elf_open(path, &elf);
	if (err) {
		ck_assert_int_ne(pyu_error_code(err), PYU_ERR_OK);
		pyu_error_destroy(err);
		return;
	}
	ck_assert_msg(may_succeed, "a broken file opened");
	struct pyu_elf_symbol sym;
	struct pyu_elf_section sec;
	const char *names[] = {"_PyRuntime", "Py_Version", "local_fn", "bss_var", "malloc"};
	for (int i = 0; i < 5; i++) {
		err = pyu_elf_find_symbol(elf, names[i], &sym);
		pyu_error_destroy(err);
	}
	const char *secs[] = {".PyRuntime", ".bss", ".text", ".shstrtab", ".symtab"};
	for (int i = 0; i < 5; i++) {
		err = pyu_elf_find_section(elf, secs[i], &sec);
		if (!err && sec.type != SHT_NOBITS) {
			unsigned char *buf = malloc(sec.size ? sec.size : 1);
			ck_assert_ptr_nonnull(buf);
			// find_section promises the section lies inside the file.
			ck_assert_ptr_null(pyu_elf_read_file(elf, sec.offset, buf, sec.size));
			free(buf);
		}
		pyu_error_destroy(err);
	}
	unsigned char buf[64];
	for (uint64_t a = 0; a < 0x3400; a += 0x3f0)
		pyu_error_destroy(pyu_elf_read(elf, a, buf, sizeof(buf)));
	uint64_t bias;
	struct pyu_target *t;
	ck_assert_ptr_null(pyu_target_open_callback(no_read, NULL, &t));
	ck_assert_ptr_null(pyu_target_add_mapping(t, 0x10000, 0x20000, 0, 0, path));
	pyu_error_destroy(pyu_elf_load_bias(t, elf, path, &bias));
	pyu_target_destroy(t);
	pyu_elf_close(elf);
}

START_TEST(test_elf_truncated)
{
	struct elf_file f;
	elf_file_init(&f, PYU_ELF_ET_DYN, 0);
	int opened = 0;
	for (size_t cut = f.lay.size; cut-- > 0;) {
		if (cut > 0x200 && cut < f.lay.symtab_off && cut % 61 != 0)
			continue;
		ck_assert_int_eq(truncate(f.path, (off_t)cut), 0);
		struct pyu_elf *elf = NULL;
		struct pyu_error *err = pyu_elf_open(f.path, &elf);
		if (!err) {
			opened++;
			pyu_elf_close(elf);
		}
		pyu_error_destroy(err);
		probe(f.path, true);
	}
	// Cut anywhere before the section headers end, the file does not open.
	ck_assert_int_eq(opened, 0);
	elf_file_fini(&f);
}
END_TEST

static uint64_t rng_state = 0x2545f4914f6cdd1du;
static uint64_t rng(void)
{
	rng_state ^= rng_state << 13;
	rng_state ^= rng_state >> 7;
	rng_state ^= rng_state << 17;
	return rng_state;
}

START_TEST(test_elf_corrupt)
{
	struct elf_file f;
	elf_file_init(&f, PYU_ELF_ET_DYN, 0);
	struct fx_buf bad = {0};
	// Targeted corruptions: (offset, value, width, expected open error or 0).
	size_t sh = f.lay.shoff;
	struct {
		size_t off;
		uint64_t value;
		int bytes;
		int expect;
	} cases[] = {
		{0, 'X', 1, PYU_ERR_FORMAT},                  // magic
		{4, 1, 1, PYU_ERR_UNSUPPORTED},               // 32-bit
		{5, 2, 1, PYU_ERR_UNSUPPORTED},               // big-endian
		{54, 8, 2, PYU_ERR_FORMAT},                   // phentsize
		{56, 0xffff, 2, PYU_ERR_FORMAT},              // phnum huge
		{32, UINT64_MAX - 10, 8, PYU_ERR_FORMAT},     // phoff
		{58, 3, 2, PYU_ERR_FORMAT},                   // shentsize
		{58, 0xffff, 2, PYU_ERR_FORMAT},              // section table bigger than the file
		{54, 0xffff, 2, PYU_ERR_FORMAT},              // program table bigger than the file
		{40, 1ull << 40, 8, PYU_ERR_FORMAT},          // shoff past the end
		{40, UINT64_MAX - 100, 8, PYU_ERR_FORMAT},    // shoff wraps
		{62, 200, 2, 0},                              // shstrndx out of range
		{62, 3, 2, 0},                                // shstrndx not a STRTAB
		{60, 0, 2, 0},                                // e_shnum 0: count in sh[0] (0)
		{sh + 32, 1ull << 20, 8, 0},                  // ...and sh[0].sh_size = big
		{sh + 9 * 64 + 32, 1ull << 40, 8, 0},         // .shstrtab huge
		{sh + 9 * 64 + 24, UINT64_MAX - 3, 8, 0},     // .shstrtab offset wraps
		{sh + 1 * 64 + 40, 77, 4, 0},                 // .dynsym link out of range
		{sh + 1 * 64 + 40, 3, 4, 0},                  // .dynsym link to a non-STRTAB
		{sh + 1 * 64 + 32, UINT64_MAX, 8, 0},         // .dynsym size huge
		{sh + 7 * 64 + 24, UINT64_MAX - 8, 8, 0},     // .symtab offset wraps
		{sh + 8 * 64 + 32, 1, 8, 0},                  // .strtab too short
		{sh + 4 * 64 + 0, 0xfffffff0u, 4, 0},         // a section name out of range
		{sh + 4 * 64 + 24, 1ull << 40, 8, 0},         // .PyRuntime past the end
		{0x400 + 24, 0xffffff00u, 4, 0},              // st_name out of range
		{64 + 56 + 8, 1ull << 40, 8, 0},              // PT_LOAD 2 offset past the end
		{64 + 56 + 40, UINT64_MAX, 8, 0},             // PT_LOAD 2 memsz huge
		{64 + 56 + 16, UINT64_MAX - 0x100, 8, 0},     // PT_LOAD 2 vaddr near the top
	};
	for (size_t c = 0; c < sizeof(cases) / sizeof(cases[0]); c++) {
		fx_free(&bad);
		fx_put(&bad, f.bytes.data, f.bytes.len);
		fx_set(&bad, cases[c].off, cases[c].value, cases[c].bytes);
		fx_write_file(f.path, bad.data, bad.len);
		struct pyu_elf *elf = NULL;
		struct pyu_error *err = pyu_elf_open(f.path, &elf);
		ck_assert_msg(pyu_error_code(err) == cases[c].expect, "case %zu: %s", c,
			      pyu_error_message(err));
		pyu_error_destroy(err);
		pyu_elf_close(elf);
		probe(f.path, true);
	}
	// The string table's last byte not NUL: names running off its end are not matched.
	fx_free(&bad);
	fx_put(&bad, f.bytes.data, f.bytes.len);
	size_t shstr_end = f.lay.shoff; // shstrtab is right before the (aligned) headers
	while (bad.data[shstr_end - 1] == 0 && bad.data[shstr_end - 2] == 0)
		shstr_end--;
	bad.data[shstr_end - 1] = 'X';
	fx_write_file(f.path, bad.data, bad.len);
	probe(f.path, true);
	// Random damage anywhere in the headers and tables.
	for (int iter = 0; iter < 600; iter++) {
		fx_free(&bad);
		fx_put(&bad, f.bytes.data, f.bytes.len);
		int flips = 1 + (int)(rng() % 8);
		for (int k = 0; k < flips; k++) {
			size_t off = rng() % 3 ? f.lay.symtab_off + rng() % (bad.len - f.lay.symtab_off)
					      : rng() % 0x600;
			bad.data[off] = (unsigned char)rng();
		}
		fx_write_file(f.path, bad.data, bad.len);
		probe(f.path, true);
	}
	fx_free(&bad);
	elf_file_fini(&f);
}
END_TEST

// ---- real files ----------------------------------------------------------------------------

// A global in this test binary, initialised, so it lives in .data.
uint64_t pyu_elf_test_marker = 0x5eed5eed12345678u;

// ---- .gnu.hash ------------------------------------------------------------------------------
#define SHT_GNU_HASH 0x6ffffff6
#define GNU_SYMS 300
#define GNU_BUCKETS 17

static uint32_t gnu_hash_of(const char *name)
{
	uint32_t h = 5381;
	for (const unsigned char *p = (const unsigned char *)name; *p; p++)
		h = h * 33 + *p;
	return h;
}

static void gnu_name(char *buf, size_t len, int i)
{
	snprintf(buf, len, "sym_%d", i);
}

// The synthetic file with a new .dynsym of GNU_SYMS defined symbols ("sym_I" = 0x10000 + I,
// ordered by bucket as linkers order them) and a .gnu.hash for it, as section 11; the
// section headers are written again after the new tables. @damage: 0 none, 1 zero buckets,
// 2 symoffset past the table, 3 the section cut short.
static void write_gnu_elf(const char *path, int damage)
{
	struct fx_buf b = {0};
	struct elf_layout lay = build_elf(&b, PYU_ELF_ET_DYN, 0, 0);
	unsigned char *shdrs = malloc(11 * 64);
	ck_assert_ptr_nonnull(shdrs);
	memcpy(shdrs, b.data + lay.shoff, 11 * 64);
	b.len = lay.shoff;
	// Symbols 1..GNU_SYMS in bucket order.
	int order[GNU_SYMS];
	int n = 0;
	char name[32];
	for (uint32_t bucket = 0; bucket < GNU_BUCKETS; bucket++)
		for (int i = 0; i < GNU_SYMS; i++) {
			gnu_name(name, sizeof(name), i);
			if (gnu_hash_of(name) % GNU_BUCKETS == bucket)
				order[n++] = i;
		}
	ck_assert_int_eq(n, GNU_SYMS);
	struct fx_buf str = {0}, sym = {0};
	add_str(&str, "");
	put_sym(&sym, 0, 0, 0, 0, 0);
	uint32_t buckets[GNU_BUCKETS] = {0}, chain[GNU_SYMS];
	for (int k = 0; k < n; k++) {
		gnu_name(name, sizeof(name), order[k]);
		put_sym(&sym, add_str(&str, name), 0x11, 5, 0x10000 + (uint64_t)order[k], 8);
		uint32_t h = gnu_hash_of(name), bucket = h % GNU_BUCKETS;
		if (!buckets[bucket])
			buckets[bucket] = (uint32_t)k + 1;
		bool last = k + 1 == n;
		if (!last) {
			gnu_name(name, sizeof(name), order[k + 1]);
			last = gnu_hash_of(name) % GNU_BUCKETS != bucket;
		}
		chain[k] = (h & ~1u) | (last ? 1u : 0u);
	}
	fx_align(&b, 8);
	size_t sym_off = b.len;
	fx_put(&b, sym.data, sym.len);
	size_t str_off = b.len;
	fx_put(&b, str.data, str.len);
	fx_align(&b, 8);
	size_t hash_off = b.len;
	fx_u32(&b, damage == 1 ? 0 : GNU_BUCKETS);
	fx_u32(&b, damage == 2 ? GNU_SYMS + 5 : 1); // symoffset
	fx_u32(&b, 1);                              // one bloom word
	fx_u32(&b, 6);
	fx_u64(&b, ~0ull);
	for (int i = 0; i < GNU_BUCKETS; i++)
		fx_u32(&b, buckets[i]);
	for (int i = 0; i < GNU_SYMS; i++)
		fx_u32(&b, chain[i]);
	size_t hash_len = b.len - hash_off;
	if (damage == 3)
		hash_len -= 8;
	fx_align(&b, 8);
	size_t shoff = b.len;
	fx_put(&b, shdrs, 11 * 64);
	// .dynsym and .dynstr now name the new tables.
	fx_set(&b, shoff + 1 * 64 + 24, sym_off, 8);
	fx_set(&b, shoff + 1 * 64 + 32, sym.len, 8);
	fx_set(&b, shoff + 2 * 64 + 24, str_off, 8);
	fx_set(&b, shoff + 2 * 64 + 32, str.len, 8);
	put_shdr(&b, 0, SHT_GNU_HASH, 2, 0, hash_off, hash_len, 1, 4);
	fx_set(&b, 0x28, shoff, 8); // e_shoff
	fx_set(&b, 0x3c, 12, 2);    // e_shnum
	fx_write_file(path, b.data, b.len);
	free(shdrs);
	fx_free(&b), fx_free(&str), fx_free(&sym);
}

START_TEST(test_elf_gnu_hash)
{
	char *path = fx_tmp_path();
	for (int damage = 0; damage <= 3; damage++) {
		write_gnu_elf(path, damage);
		struct pyu_elf *elf = open_ok(path);
		char name[32];
		// Every symbol, through the hash (or, when the hash is damaged, the index).
		for (int i = 0; i < GNU_SYMS; i++) {
			gnu_name(name, sizeof(name), i);
			struct pyu_elf_symbol sym = {0};
			struct pyu_error *err = pyu_elf_find_symbol(elf, name, &sym);
			ck_assert_msg(!err, "damage %d, %s: %s", damage, name,
				      pyu_error_message(err));
			ck_assert_uint_eq(sym.value, 0x10000 + (uint64_t)i);
			ck_assert_uint_eq(sym.shndx, 5);
		}
		// Names that are not there, whichever bucket they fall in; .symtab still answers.
		for (int i = GNU_SYMS; i < GNU_SYMS + 40; i++) {
			gnu_name(name, sizeof(name), i);
			struct pyu_elf_symbol sym;
			expect_code(pyu_elf_find_symbol(elf, name, &sym), PYU_ERR_NOT_FOUND);
		}
		struct pyu_elf_symbol sym;
		ck_assert_ptr_null(pyu_elf_find_symbol(elf, "local_fn", &sym));
		ck_assert_uint_eq(sym.size, 0x20);
		pyu_elf_close(elf);
	}
	unlink(path);
	free(path);
}
END_TEST

START_TEST(test_elf_real_self)
{
	char self[4096] = {0};
	ck_assert_int_gt(readlink("/proc/self/exe", self, sizeof(self) - 1), 0);
	struct pyu_elf *elf = open_ok(self);
	struct pyu_elf_symbol sym;
	ck_assert_ptr_null(pyu_elf_find_symbol(elf, "pyu_elf_test_marker", &sym));
	ck_assert_uint_eq(sym.size, 8);
	ck_assert_uint_eq(sym.type, 1);
	uint64_t initial;
	ck_assert_ptr_null(pyu_elf_read(elf, sym.value, &initial, 8));
	ck_assert_uint_eq(initial, 0x5eed5eed12345678u);
	pyu_elf_test_marker = 1; // the file keeps the initial value; memory changes

	struct pyu_target *t;
	ck_assert_ptr_null(pyu_target_open_pid(getpid(), &t));
	uint64_t bias;
	ck_assert_ptr_null(pyu_elf_load_bias(t, elf, self, &bias));
	ck_assert_uint_eq(bias + sym.value, (uint64_t)(uintptr_t)&pyu_elf_test_marker);
	uint64_t now;
	ck_assert_ptr_null(pyu_target_read_u64(t, bias + sym.value, &now));
	ck_assert_uint_eq(now, 1);
	pyu_elf_close(elf);

	// libc as mapped here: a dynamic symbol's address is where the function really is.
	const struct pyu_mapping *libc = NULL;
	for (size_t i = 0; i < pyu_target_mapping_count(t) && !libc; i++) {
		const struct pyu_mapping *m = pyu_target_mapping(t, i);
		if (m->path && strstr(m->path, "/libc.so") && m->offset == 0)
			libc = m;
	}
	ck_assert_ptr_nonnull(libc);
	elf = open_ok(libc->local_path);
	ck_assert_uint_eq(pyu_elf_type(elf), PYU_ELF_ET_DYN);
	ck_assert_ptr_null(pyu_elf_load_bias(t, elf, libc->path, &bias));
	ck_assert_uint_eq(bias, libc->start - pyu_elf_first_load_vaddr(elf));
	ck_assert_ptr_null(pyu_elf_find_symbol(elf, "gnu_get_libc_version", &sym));
	ck_assert_uint_eq(sym.type, 2);
	// The function's first bytes in memory equal the file's.
	unsigned char mem[16], file[16];
	ck_assert_ptr_null(pyu_target_read(t, bias + sym.value, mem, sizeof(mem)));
	ck_assert_ptr_null(pyu_elf_read(elf, sym.value, file, sizeof(file)));
	ck_assert_mem_eq(mem, file, sizeof(mem));
	// The build ID in the file equals the one in its first page in memory.
	uint8_t id_file[PYU_BUILD_ID_MAX], id_mem[PYU_BUILD_ID_MAX];
	size_t id_file_len = 0, id_mem_len = 0;
	ck_assert_ptr_null(pyu_elf_build_id(elf, id_file, sizeof(id_file), &id_file_len));
	ck_assert_uint_ge(id_file_len, 8);
	unsigned char page[4096];
	ck_assert_ptr_null(pyu_target_read(t, libc->start, page, sizeof(page)));
	ck_assert(pyu_elf_image_build_id(page, sizeof(page), id_mem, sizeof(id_mem), &id_mem_len));
	ck_assert_uint_eq(id_mem_len, id_file_len);
	ck_assert_mem_eq(id_mem, id_file, id_file_len);
	ck_assert(pyu_target_file_matches(t, libc));
	// Images cut short or damaged give no ID rather than a wrong one.
	ck_assert(!pyu_elf_image_build_id(page, 40, id_mem, sizeof(id_mem), &id_mem_len));
	for (size_t cut = 0; cut < 4096; cut += 7)
		(void)pyu_elf_image_build_id(page, cut, id_mem, sizeof(id_mem), &id_mem_len);
	page[0] = 0;
	ck_assert(!pyu_elf_image_build_id(page, sizeof(page), id_mem, sizeof(id_mem), &id_mem_len));
	struct pyu_elf_section sec;
	ck_assert_ptr_null(pyu_elf_find_section(elf, ".text", &sec));
	ck_assert_uint_le(sec.addr, sym.value);
	ck_assert_uint_lt(sym.value, sec.addr + sec.size);
	pyu_elf_close(elf);
	pyu_target_destroy(t);
}
END_TEST

// Writes the synthetic ELF (build ID @id_byte) to @path; with @strip, without .symtab.
static void write_elf(const char *path, unsigned char id_byte, bool strip)
{
	struct fx_buf b = {0};
	struct elf_layout lay = build_elf(&b, PYU_ELF_ET_DYN, 0, id_byte);
	if (strip)
		fx_set(&b, lay.shoff + 7 * 64 + 4, 0, 4); // .symtab becomes SHT_NULL
	fx_write_file(path, b.data, b.len);
	fx_free(&b);
}

static char *path_in(const char *dir, const char *rel)
{
	size_t n = strlen(dir) + strlen(rel) + 2;
	char *p = malloc(n);
	ck_assert_ptr_nonnull(p);
	snprintf(p, n, "%s/%s", dir, rel);
	return p;
}

START_TEST(test_elf_debug_file)
{
	char *dir = fx_tmp_path();
	unlink(dir);
	ck_assert_int_eq(mkdir(dir, 0700), 0);
	char *root = path_in(dir, "debugroot");
	char *id_dir = path_in(dir, "debugroot/.build-id");
	char *id_sub = path_in(dir, "debugroot/.build-id/11");
	char *id_file = path_in(dir, "debugroot/.build-id/11/"
				     "11111111111111111111111111111111111111.debug");
	char *main_so = path_in(dir, "libmain.so");
	char *dot_debug = path_in(dir, ".debug");
	char *link_file = path_in(dir, ".debug/synthetic.debug");
	ck_assert_int_eq(mkdir(root, 0700), 0);
	ck_assert_int_eq(mkdir(id_dir, 0700), 0);
	ck_assert_int_eq(mkdir(id_sub, 0700), 0);

	// By build ID: the stripped file lacks local_fn, its debug file has it.
	write_elf(main_so, 0x11, true);
	write_elf(id_file, 0x11, false);
	struct pyu_elf *elf = open_ok(main_so), *dbg = NULL;
	uint8_t id[PYU_BUILD_ID_MAX];
	size_t id_len = 0;
	ck_assert_ptr_null(pyu_elf_build_id(elf, id, sizeof(id), &id_len));
	ck_assert_uint_eq(id_len, 20);
	ck_assert_uint_eq(id[19], 0x11);
	struct pyu_elf_symbol sym;
	expect_code(pyu_elf_find_symbol(elf, "local_fn", &sym), PYU_ERR_NOT_FOUND);
	ck_assert_ptr_null(pyu_elf_open_debug(elf, root, &dbg));
	ck_assert_str_eq(pyu_elf_path(dbg), id_file);
	ck_assert_ptr_null(pyu_elf_find_symbol(dbg, "local_fn", &sym));
	ck_assert_uint_eq(sym.value, 0x1000);
	pyu_elf_close(dbg);
	dbg = (struct pyu_elf *)&dbg;
	// A debug file with another build ID at that path is not taken; nor is a debuglink
	// target with the wrong ID.
	write_elf(id_file, 0x22, false);
	ck_assert_int_eq(mkdir(dot_debug, 0700), 0);
	write_elf(link_file, 0x33, false);
	expect_code(pyu_elf_open_debug(elf, root, &dbg), PYU_ERR_NOT_FOUND);
	ck_assert_ptr_eq(dbg, (struct pyu_elf *)&dbg);
	pyu_elf_close(elf);

	// By .gnu_debuglink, for a file without a build ID: found in the .debug directory.
	write_elf(main_so, 0, true);
	write_elf(link_file, 0, false);
	elf = open_ok(main_so);
	expect_code(pyu_elf_build_id(elf, id, sizeof(id), &id_len), PYU_ERR_NOT_FOUND);
	ck_assert_ptr_null(pyu_elf_open_debug(elf, root, &dbg));
	ck_assert_str_eq(pyu_elf_path(dbg), link_file);
	ck_assert_ptr_null(pyu_elf_find_symbol(dbg, "local_fn", &sym));
	pyu_elf_close(dbg);
	pyu_elf_close(elf);
	unlink(link_file);
	expect_code(pyu_elf_open_debug((elf = open_ok(main_so)), root, &dbg), PYU_ERR_NOT_FOUND);
	pyu_elf_close(elf);

	unlink(main_so);
	unlink(id_file);
	rmdir(dot_debug);
	rmdir(id_sub);
	rmdir(id_dir);
	rmdir(root);
	rmdir(dir);
	free(root), free(id_dir), free(id_sub), free(id_file), free(main_so), free(dot_debug);
	free(link_file);
	free(dir);
}
END_TEST

START_TEST(test_elf_open_errors)
{
	struct pyu_elf *elf = (struct pyu_elf *)&elf;
	expect_code(pyu_elf_open("/no/such/file.so", &elf), PYU_ERR_IO);
	expect_code(pyu_elf_open("/", &elf), PYU_ERR_IO);
	char *p = fx_tmp_path();
	expect_code(pyu_elf_open(p, &elf), PYU_ERR_FORMAT); // empty
	fx_write_file(p, "\177ELF", 4);
	expect_code(pyu_elf_open(p, &elf), PYU_ERR_FORMAT);
	ck_assert_ptr_eq(elf, (struct pyu_elf *)&elf);
	unlink(p);
	free(p);
}
END_TEST

static Suite *elf_suite(void)
{
	Suite *s = suite_create("elf");
	TCase *tc = tcase_create("elf");
	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, test_elf_sections_and_symbols);
	tcase_add_test(tc, test_elf_read_vaddr);
	tcase_add_test(tc, test_elf_load_bias);
	tcase_add_test(tc, test_elf_truncated);
	tcase_add_test(tc, test_elf_corrupt);
	tcase_add_test(tc, test_elf_gnu_hash);
	tcase_add_test(tc, test_elf_real_self);
	tcase_add_test(tc, test_elf_debug_file);
	tcase_add_test(tc, test_elf_open_errors);
	suite_add_tcase(s, tc);
	return s;
}

PYU_CHECK_MAIN(elf_suite)
