// elf.h - a small reader of 64-bit little-endian ELF files on disk: type, program headers,
// sections by name, symbols by name (.dynsym and .symtab), bytes at a virtual address, and
// the load bias of such a file inside a target. Every size, offset and count in the file is
// checked against the file's size before use; a malformed file is PYU_ERR_FORMAT, never a
// crash. No DWARF, no relocations, no 32-bit or big-endian files (PYU_ERR_UNSUPPORTED).
//
// Typical use (finding _PyRuntime in libpython mapped in a target):
//
//     const struct pyu_mapping *m = ...;           // a mapping whose path names libpython
//     struct pyu_elf *elf;
//     err = pyu_elf_open(m->local_path, &elf);     // local_path: after path maps
//     uint64_t bias;
//     err = pyu_elf_load_bias(t, elf, m->path, &bias);
//     struct pyu_elf_section sec;
//     err = pyu_elf_find_section(elf, ".PyRuntime", &sec);   // -> bias + sec.addr
//     struct pyu_elf_symbol sym;
//     err = pyu_elf_find_symbol(elf, "_PyRuntime", &sym);    // -> bias + sym.value
//     err = pyu_elf_read(elf, sym.value, buf, len);           // the file's initial bytes
//     pyu_elf_close(elf);
#ifndef PYU_ELF_H
#define PYU_ELF_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "error.h"
#include "target.h"

struct pyu_elf;

// The ELF file types the reader reports (same values as <elf.h>).
#define PYU_ELF_ET_EXEC 2
#define PYU_ELF_ET_DYN 3
#define PYU_ELF_ET_CORE 4

struct pyu_elf_symbol {
	uint64_t value;   // st_value: a virtual address in the file (add the load bias)
	uint64_t size;    // st_size
	uint8_t type;     // STT_* (1 = object, 2 = function, 6 = TLS)
	uint8_t bind;     // STB_* (0 = local, 1 = global, 2 = weak)
	uint16_t shndx;   // section index; never 0 (undefined symbols are not returned)
};

struct pyu_elf_section {
	uint64_t addr;    // sh_addr: virtual address when loaded (0 for non-allocated sections)
	uint64_t offset;  // sh_offset in the file (checked: offset + size fits in the file,
	                  // except for SHT_NOBITS sections such as .bss)
	uint64_t size;    // sh_size
	uint64_t flags;   // sh_flags (SHF_ALLOC = 2)
	uint32_t type;    // sh_type (SHT_NOBITS = 8)
};

// Opens @path and checks its ELF header, program headers and section headers.
// On error (PYU_ERR_IO: cannot open/read; PYU_ERR_FORMAT: not ELF or malformed;
// PYU_ERR_UNSUPPORTED: 32-bit or big-endian), *ret is unchanged.
struct pyu_error *pyu_elf_open(const char *path, struct pyu_elf **ret);
// Closes the file and frees everything. NULL is allowed.
void pyu_elf_close(struct pyu_elf *elf);

// The path given to pyu_elf_open (owned by @elf). Cannot fail.
const char *pyu_elf_path(const struct pyu_elf *elf);
// e_type: PYU_ELF_ET_EXEC, PYU_ELF_ET_DYN, ... Cannot fail.
uint16_t pyu_elf_type(const struct pyu_elf *elf);
// p_vaddr of the first PT_LOAD program header (0 if none). Cannot fail.
uint64_t pyu_elf_first_load_vaddr(const struct pyu_elf *elf);

// e_entry: the entry point's virtual address in the file. Cannot fail.
uint64_t pyu_elf_entry(const struct pyu_elf *elf);

// The @i-th PT_LOAD program header (in file order). Returns false when there is none.
struct pyu_elf_segment {
	uint64_t vaddr, memsz;   // where it is loaded (before the load bias), and its size
	uint64_t offset, filesz; // where its bytes are in the file
	uint32_t flags;          // PF_X 1, PF_W 2, PF_R 4
};
bool pyu_elf_load_segment(const struct pyu_elf *elf, size_t i, struct pyu_elf_segment *ret);

// Looks up a defined symbol named @name, in .dynsym first, then .symtab. Symbol tables are
// read into memory on first use. On error (PYU_ERR_NOT_FOUND when no such symbol or the file
// is stripped of both tables; PYU_ERR_FORMAT for a malformed table), *ret is unchanged.
struct pyu_error *pyu_elf_find_symbol(struct pyu_elf *elf, const char *name,
				      struct pyu_elf_symbol *ret);

// Looks up the first section named @name (e.g. ".PyRuntime"). On error (PYU_ERR_NOT_FOUND,
// also when the file has no section headers), *ret is unchanged.
struct pyu_error *pyu_elf_find_section(const struct pyu_elf *elf, const char *name,
				       struct pyu_elf_section *ret);

// Reads @len bytes at virtual address @vaddr (unrelocated, as in the file) from the PT_LOAD
// segments: bytes past a segment's p_filesz (up to p_memsz, i.e. .bss) read as zero. On error
// (PYU_ERR_FAULT: not inside a PT_LOAD; PYU_ERR_IO: the read failed), @buf is unspecified.
struct pyu_error *pyu_elf_read(struct pyu_elf *elf, uint64_t vaddr, void *buf, size_t len);

// Reads @len bytes at file offset @offset. On error (PYU_ERR_FAULT when past the end of the
// file, PYU_ERR_IO), @buf is unspecified.
struct pyu_error *pyu_elf_read_file(struct pyu_elf *elf, uint64_t offset, void *buf,
				    size_t len);

#define PYU_BUILD_ID_MAX 64

// The GNU build ID (NT_GNU_BUILD_ID note) of @elf, from its PT_NOTE segments. On success
// copies at most @cap bytes to @buf and sets *len to the ID's length. On error
// (PYU_ERR_NOT_FOUND: no build ID), outputs are unchanged.
struct pyu_error *pyu_elf_build_id(struct pyu_elf *elf, uint8_t *buf, size_t cap, size_t *len);

// The same from the first bytes of an ELF file as mapped in memory (@image, @image_len; e.g.
// the page at a mapping's start with file offset 0): only notes inside the image are seen.
// Returns false (outputs unchanged) when there is none. Cannot fail otherwise.
bool pyu_elf_image_build_id(const uint8_t *image, size_t image_len, uint8_t *buf, size_t cap,
			    size_t *len);

// Opens the separate debug file of @elf (a stripped binary's .symtab lives there): first
// <root>/.build-id/<first byte in hex>/<other bytes in hex>.debug for its build ID, then the
// name in its .gnu_debuglink section, looked for next to @elf, in a .debug directory next to
// it, and under <root> + @elf's directory. A candidate must carry @elf's build ID when @elf
// has one. @root NULL means "/usr/lib/debug". Symbols found there use @elf's load bias. On
// error (PYU_ERR_NOT_FOUND when there is none), *ret is unchanged.
struct pyu_error *pyu_elf_open_debug(struct pyu_elf *elf, const char *root,
				     struct pyu_elf **ret);

// Where @elf is loaded in @t: the difference between the target's addresses and the file's
// virtual addresses. 0 for ET_EXEC. For ET_DYN, from the lowest mapping of @path (matched
// against both the target's and the local name) with file offset 0:
//     bias = mapping.start - (first PT_LOAD p_vaddr rounded down to the page size).
// On error (PYU_ERR_NOT_FOUND: no such mapping), *ret is unchanged.
struct pyu_error *pyu_elf_load_bias(const struct pyu_target *t, const struct pyu_elf *elf,
				    const char *path, uint64_t *ret);

// What pyu_elf_load_bias needs of the file, for a caller that keeps it instead of opening
// the file again. Cannot fail.
struct pyu_elf_load {
	bool exec;     // ET_EXEC: loaded where its addresses say
	uint64_t base; // the virtual address of file offset 0
};
void pyu_elf_load_info(const struct pyu_elf *elf, struct pyu_elf_load *ret);
// pyu_elf_load_bias from kept @load. On error (PYU_ERR_NOT_FOUND), *ret is unchanged.
struct pyu_error *pyu_elf_load_bias_of(const struct pyu_target *t,
				       const struct pyu_elf_load *load, const char *path,
				       uint64_t *ret);

// A file's identity as far as a cache of what it holds can tell: the same device, inode, size,
// modification and status-change times (a file copied over another in place keeps the inode
// but not the times, and the status-change time cannot be set back).
struct pyu_file_id {
	uint64_t dev, ino, size;
	int64_t mtime_ns, ctime_ns;
};
struct stat;
void pyu_file_id_of(const struct stat *st, struct pyu_file_id *ret);
// stat() of @path; false when it cannot be or is not a regular file (*ret then unspecified).
bool pyu_file_id(const char *path, struct pyu_file_id *ret);
bool pyu_file_id_equal(const struct pyu_file_id *a, const struct pyu_file_id *b);
// Of the file @elf opened (its descriptor's fstat at pyu_elf_open). Cannot fail.
void pyu_elf_file_id(const struct pyu_elf *elf, struct pyu_file_id *ret);

#endif
