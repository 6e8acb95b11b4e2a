// debuginfod.c - the target's files fetched by build ID through elfutils' client library
// (libdebuginfod): the servers named by $DEBUGINFOD_URLS, the client's own cache
// ($DEBUGINFOD_CACHE_PATH, else ~/.cache/debuginfod_client) and its timeouts, as gdb and lldb
// use them. Built only when libdebuginfod's -dev package is installed (tools/configure-build);
// without it, or without $DEBUGINFOD_URLS, nothing is fetched.
#include <stdlib.h>
#include <unistd.h>

#include "elf.h"
#include "target_impl.h"

#ifdef PYU_HAVE_DEBUGINFOD
#include <elfutils/debuginfod.h>

char *pyu_debuginfod_find(struct pyu_target *t, const uint8_t *build_id, size_t len)
{
	(void)t;
	const char *urls = getenv("DEBUGINFOD_URLS");
	if (!urls || !*urls || len == 0 || len > PYU_BUILD_ID_MAX)
		return NULL;
	debuginfod_client *c = debuginfod_begin();
	if (!c)
		return NULL;
	char *path = NULL;
	int fd = debuginfod_find_executable(c, build_id, (int)len, &path);
	debuginfod_end(c);
	if (fd < 0) {
		free(path);
		return NULL;
	}
	close(fd);
	return path; // malloc'd by the client: a file in its cache
}
#else
char *pyu_debuginfod_find(struct pyu_target *t, const uint8_t *build_id, size_t len)
{
	(void)t;
	(void)build_id;
	(void)len;
	return NULL;
}
#endif
