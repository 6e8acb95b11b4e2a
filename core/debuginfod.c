// debuginfod.c - the target's files fetched by build ID through elfutils' client library
// (libdebuginfod): the servers named by $DEBUGINFOD_URLS, the client's own cache
// ($DEBUGINFOD_CACHE_PATH, else ~/.cache/debuginfod_client) and its timeouts, as gdb and lldb
// use them. Built only when libdebuginfod's -dev package is installed (tools/configure-build);
// the client library itself is opened at run time. Without it, or without $DEBUGINFOD_URLS,
// nothing is fetched.
#include <stdbool.h>
#include <stdlib.h>
#include <unistd.h>

#include "elf.h"
#include "target_impl.h"

#ifdef PYU_HAVE_DEBUGINFOD
#include <dlfcn.h>
#include <elfutils/debuginfod.h>

// The client library is opened when a file is first to be fetched ($DEBUGINFOD_URLS set), not
// linked: it brings libcurl and some thirty libraries whose loading cost every host of this
// library 8-10 ms of CPU before its first command (a debugger's first py-bt), fetched or not.
// Opened again on each call (after the first, dlopen only counts a reference, and is safe from
// any thread) and never closed.
struct client_api {
	debuginfod_client *(*begin)(void);
	int (*find_executable)(debuginfod_client *, const unsigned char *, int, char **);
	void (*end)(debuginfod_client *);
};

static bool client_api(struct client_api *api)
{
	void *lib = dlopen("libdebuginfod.so.1", RTLD_NOW | RTLD_LOCAL);
	if (!lib)
		return false;
	api->begin = (debuginfod_client * (*)(void)) dlsym(lib, "debuginfod_begin");
	api->find_executable = (int (*)(debuginfod_client *, const unsigned char *, int,
					char **))dlsym(lib, "debuginfod_find_executable");
	api->end = (void (*)(debuginfod_client *))dlsym(lib, "debuginfod_end");
	return api->begin && api->find_executable && api->end;
}

char *pyu_debuginfod_find(struct pyu_target *t, const uint8_t *build_id, size_t len)
{
	(void)t;
	const char *urls = getenv("DEBUGINFOD_URLS");
	if (!urls || !*urls || len == 0 || len > PYU_BUILD_ID_MAX)
		return NULL;
	struct client_api api;
	if (!client_api(&api))
		return NULL;
	debuginfod_client *c = api.begin();
	if (!c)
		return NULL;
	char *path = NULL;
	int fd = api.find_executable(c, build_id, (int)len, &path);
	api.end(c);
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
