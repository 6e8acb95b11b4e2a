// elf_fixture.h - builds small synthetic ELF files and ELF core dumps byte by byte for the
// target, core and ELF tests: a growable byte buffer, a core writer (segments + notes) and
// an ELF writer (one PT_LOAD, named sections, symbol tables).
#ifndef PYU_ELF_FIXTURE_H
#define PYU_ELF_FIXTURE_H

#include <check.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

struct fx_buf {
	unsigned char *data;
	size_t len, cap;
};

static inline void fx_reserve(struct fx_buf *b, size_t n)
{
	if (b->len + n <= b->cap)
		return;
	size_t cap = b->cap ? b->cap : 256;
	while (cap < b->len + n)
		cap *= 2;
	b->data = realloc(b->data, cap);
	ck_assert_ptr_nonnull(b->data);
	memset(b->data + b->cap, 0, cap - b->cap);
	b->cap = cap;
}

static inline void fx_put(struct fx_buf *b, const void *p, size_t n)
{
	fx_reserve(b, n);
	if (n)
		memcpy(b->data + b->len, p, n);
	b->len += n;
}

static inline void fx_zero(struct fx_buf *b, size_t n)
{
	fx_reserve(b, n);
	memset(b->data + b->len, 0, n);
	b->len += n;
}

static inline void fx_align(struct fx_buf *b, size_t a)
{
	if (b->len % a)
		fx_zero(b, a - b->len % a);
}

static inline void fx_set(struct fx_buf *b, size_t off, uint64_t v, int bytes)
{
	fx_reserve(b, off + (size_t)bytes > b->len ? off + (size_t)bytes - b->len : 0);
	if (off + (size_t)bytes > b->len)
		b->len = off + (size_t)bytes;
	for (int i = 0; i < bytes; i++)
		b->data[off + (size_t)i] = (unsigned char)(v >> (8 * i));
}

static inline void fx_u16(struct fx_buf *b, uint64_t v) { fx_set(b, b->len, v, 2); }
static inline void fx_u32(struct fx_buf *b, uint64_t v) { fx_set(b, b->len, v, 4); }
static inline void fx_u64(struct fx_buf *b, uint64_t v) { fx_set(b, b->len, v, 8); }

static inline void fx_free(struct fx_buf *b)
{
	free(b->data);
	memset(b, 0, sizeof(*b));
}

// A new temporary file path (the file exists, empty). Caller unlinks and frees.
static inline char *fx_tmp_path(void)
{
	const char *dir = getenv("TMPDIR");
	size_t n = strlen(dir ? dir : "/tmp") + 32;
	char *p = malloc(n);
	ck_assert_ptr_nonnull(p);
	snprintf(p, n, "%s/pyu-test-XXXXXX", dir ? dir : "/tmp");
	int fd = mkstemp(p);
	ck_assert_int_ge(fd, 0);
	close(fd);
	return p;
}

static inline void fx_write_file(const char *path, const void *data, size_t len)
{
	FILE *f = fopen(path, "wb");
	ck_assert_ptr_nonnull(f);
	ck_assert_uint_eq(fwrite(data, 1, len, f), len);
	ck_assert_int_eq(fclose(f), 0);
}

static inline void fx_ehdr(struct fx_buf *b, uint16_t type, uint64_t phoff, uint16_t phnum,
			   uint64_t shoff, uint16_t shnum, uint16_t shstrndx)
{
	static const unsigned char ident[16] = {0x7f, 'E', 'L', 'F', 2, 1, 1};
	fx_put(b, ident, 16);
	fx_u16(b, type);
	fx_u16(b, 62); // EM_X86_64
	fx_u32(b, 1);
	fx_u64(b, 0); // e_entry
	fx_u64(b, phoff);
	fx_u64(b, shoff);
	fx_u32(b, 0);
	fx_u16(b, 64);
	fx_u16(b, 56);
	fx_u16(b, phnum);
	fx_u16(b, 64);
	fx_u16(b, shnum);
	fx_u16(b, shstrndx);
}

static inline void fx_phdr(struct fx_buf *b, uint32_t type, uint32_t flags, uint64_t offset,
			   uint64_t vaddr, uint64_t filesz, uint64_t memsz)
{
	fx_u32(b, type);
	fx_u32(b, flags);
	fx_u64(b, offset);
	fx_u64(b, vaddr);
	fx_u64(b, vaddr); // p_paddr
	fx_u64(b, filesz);
	fx_u64(b, memsz);
	fx_u64(b, 0x1000);
}

// ---- cores ---------------------------------------------------------------------------------

struct fx_seg {
	uint64_t vaddr, memsz, filesz; // filesz bytes of data are written (filesz <= memsz)
	uint32_t flags;                // PF_R 4, PF_W 2, PF_X 1
	const void *data;              // NULL: a pattern derived from the address
};

struct fx_note {
	const char *name;
	uint32_t type;
	const void *desc;
	size_t len;
};

// The byte the fixture writes at @addr when a segment has no explicit data.
static inline unsigned char fx_pattern(uint64_t addr)
{
	return (unsigned char)((addr >> 12) * 31 + addr * 7 + 1);
}

// Appends one note (name and desc padded to 4 bytes).
static inline void fx_note(struct fx_buf *b, const struct fx_note *n)
{
	size_t namesz = strlen(n->name) + 1;
	fx_u32(b, namesz);
	fx_u32(b, n->len);
	fx_u32(b, n->type);
	fx_put(b, n->name, namesz);
	fx_align(b, 4);
	fx_put(b, n->desc, n->len);
	fx_align(b, 4);
}

// A core: ELF header, one PT_NOTE then the PT_LOADs, the notes, then page-aligned data.
// @raw_notes (may be NULL) is appended to the note segment verbatim after @notes.
static inline void fx_core(struct fx_buf *b, const struct fx_seg *segs, size_t nsegs,
			   const struct fx_note *notes, size_t nnotes, const struct fx_buf *raw_notes)
{
	size_t phnum = nsegs + 1;
	fx_ehdr(b, 4, 64, (uint16_t)phnum, 0, 0, 0);
	size_t ph_at = b->len;
	fx_zero(b, phnum * 56);
	size_t notes_at = b->len;
	for (size_t i = 0; i < nnotes; i++)
		fx_note(b, &notes[i]);
	if (raw_notes)
		fx_put(b, raw_notes->data, raw_notes->len);
	size_t notes_len = b->len - notes_at;
	struct fx_buf ph = {0};
	fx_phdr(&ph, 4, 0, notes_at, 0, notes_len, 0);
	for (size_t i = 0; i < nsegs; i++) {
		fx_align(b, 4096);
		size_t at = b->len;
		if (segs[i].data) {
			fx_put(b, segs[i].data, segs[i].filesz);
		} else {
			fx_reserve(b, segs[i].filesz);
			for (uint64_t k = 0; k < segs[i].filesz; k++)
				b->data[b->len++] = fx_pattern(segs[i].vaddr + k);
		}
		fx_phdr(&ph, 1, segs[i].flags, segs[i].filesz ? at : 0, segs[i].vaddr,
			segs[i].filesz, segs[i].memsz);
	}
	memcpy(b->data + ph_at, ph.data, ph.len);
	fx_free(&ph);
}

struct fx_file_entry {
	uint64_t start, end, page_offset;
	const char *name;
};

static inline void fx_nt_file(struct fx_buf *b, const struct fx_file_entry *e, size_t n)
{
	fx_u64(b, n);
	fx_u64(b, 4096);
	for (size_t i = 0; i < n; i++) {
		fx_u64(b, e[i].start);
		fx_u64(b, e[i].end);
		fx_u64(b, e[i].page_offset);
	}
	for (size_t i = 0; i < n; i++)
		fx_put(b, e[i].name, strlen(e[i].name) + 1);
}

// An x86-64 struct elf_prstatus (336 bytes) for thread @tid.
static inline void fx_prstatus(struct fx_buf *b, int32_t tid)
{
	fx_zero(b, 336);
	fx_set(b, 32, (uint32_t)tid, 4);
}

#endif
