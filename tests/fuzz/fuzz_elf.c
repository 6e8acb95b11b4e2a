// fuzz_elf.c - libFuzzer target: arbitrary bytes as an ELF file. Opening must fail cleanly
// or give a file whose symbol and section lookups and reads stay inside what it holds.
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>

#include "elf.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static int fd = -1;
	static char path[64];
	if (fd < 0) {
		fd = memfd_create("fuzz-elf", 0);
		if (fd < 0)
			return 0;
		snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
	}
	if (ftruncate(fd, 0) != 0 || (size && pwrite(fd, data, size, 0) != (ssize_t)size))
		return 0;
	struct pyu_elf *elf = NULL;
	struct pyu_error *err = pyu_elf_open(path, &elf);
	if (err) {
		pyu_error_destroy(err);
		return 0;
	}
	static const char *const names[] = {"_PyRuntime", "Py_Version", "main", "a", ""};
	static const char *const sections[] = {".PyRuntime", ".bss", ".text", ".data", ""};
	unsigned char buf[128];
	for (size_t i = 0; i < 5; i++) {
		struct pyu_elf_symbol sym;
		err = pyu_elf_find_symbol(elf, names[i], &sym);
		if (!err)
			pyu_error_destroy(pyu_elf_read(elf, sym.value, buf, sizeof(buf)));
		pyu_error_destroy(err);
		struct pyu_elf_section sec;
		err = pyu_elf_find_section(elf, sections[i], &sec);
		if (!err && sec.type != 8 && sec.size < (1u << 24)) {
			unsigned char *p = malloc(sec.size ? sec.size : 1);
			if (p) {
				// The reader promised the section is inside the file.
				struct pyu_error *e2 = pyu_elf_read_file(elf, sec.offset, p, sec.size);
				if (e2)
					abort();
				free(p);
			}
		}
		pyu_error_destroy(err);
	}
	pyu_error_destroy(pyu_elf_read(elf, pyu_elf_first_load_vaddr(elf), buf, sizeof(buf)));
	uint8_t id[PYU_BUILD_ID_MAX];
	size_t id_len;
	pyu_error_destroy(pyu_elf_build_id(elf, id, sizeof(id), &id_len));
	(void)pyu_elf_image_build_id(data, size, id, sizeof(id), &id_len);
	pyu_elf_close(elf);
	return 0;
}
