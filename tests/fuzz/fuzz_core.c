// fuzz_core.c - libFuzzer target: arbitrary bytes as an ELF core file. Opening must fail
// cleanly or give a target whose every read either succeeds or faults; nothing may crash,
// leak or read out of bounds (run under ASan/UBSan by `make fuzz-target`).
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "target.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	// Compressed input expands without bound (by design: real cores are large); the
	// decompressors themselves are the libraries' to fuzz.
	if (size >= 2 && ((data[0] == 0x1f && data[1] == 0x8b) || data[0] == 0x28 ||
			  data[0] == 0xfd))
		return 0;
	static int fd = -1;
	static char path[64];
	if (fd < 0) {
		fd = memfd_create("fuzz-core", 0);
		if (fd < 0)
			return 0;
		snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
	}
	if (ftruncate(fd, 0) != 0 || (size && pwrite(fd, data, size, 0) != (ssize_t)size))
		return 0;
	struct pyu_target *t = NULL;
	struct pyu_error *err = pyu_target_open_core(path, NULL, &t);
	if (err) {
		pyu_error_destroy(err);
		return 0;
	}
	unsigned char buf[256];
	size_t n = pyu_target_mapping_count(t);
	for (size_t i = 0; i < n && i < 64; i++) {
		const struct pyu_mapping *m = pyu_target_mapping(t, i);
		pyu_error_destroy(pyu_target_read(t, m->start, buf, sizeof(buf)));
		pyu_error_destroy(pyu_target_read(t, m->end - 16, buf, 32));
		char *s = NULL;
		err = pyu_target_read_cstr(t, m->start, 100, &s);
		if (!err)
			free(s);
		pyu_error_destroy(err);
	}
	for (size_t i = 0; i < pyu_target_thread_count(t); i++)
		(void)pyu_target_thread(t, i);
	pyu_target_destroy(t);
	return 0;
}
