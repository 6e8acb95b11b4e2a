// symbols.h - where the runtime finder (runtime.c) gets symbols and code bytes: an ELF file on
// disk (elf.h), or an ELF image in target memory read through its dynamic section - for targets
// that name no files, such as a remote debugger's callback target.
#ifndef PYU_SYMBOLS_H
#define PYU_SYMBOLS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "elf.h"
#include "target.h"

// A source of symbols: @elf (a file) or, when it is NULL, an image in @t's memory.
struct pyu_symsrc {
	struct pyu_elf *elf;
	struct pyu_target *t;
	uint64_t bias;          // target address = bias + file virtual address
	const uint8_t *dynsym;  // memory images: the dynamic symbols and their strings
	size_t nsyms;
	const char *dynstr;
	size_t strsz;
};

// Looks up a defined symbol (value unrelocated, as in the file). False when there is none.
bool pyu_symsrc_lookup(const struct pyu_symsrc *src, const char *name,
		       struct pyu_elf_symbol *ret);
// Reads @len bytes at file virtual address @vaddr from the file or target memory. False on
// failure (@buf then unspecified).
bool pyu_symsrc_read(const struct pyu_symsrc *src, uint64_t vaddr, void *buf, size_t len);

// How many mapping starts the finder probes for ELF images.
#define PYU_MAX_IMAGES_PROBED 4096

struct pyu_image {
	struct pyu_symsrc src;
	uint8_t *dynsym; // owned
	char *dynstr;    // owned
	char name[160];  // "libpython3.12.so.1.0 (in memory at 0x...)" or "the ELF image at 0x..."
};

// Reads the ELF image whose header is at @start (a mapping's first page): program headers,
// dynamic section, symbol and string tables. False when it is not one or any part is
// unreadable or absurd; release *ret with pyu_image_release() either way.
bool pyu_image_load(struct pyu_target *t, uint64_t start, struct pyu_image *ret);
void pyu_image_release(struct pyu_image *img);

#endif
