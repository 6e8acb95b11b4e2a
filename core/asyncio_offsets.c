// asyncio_offsets.c - reads CPython 3.14+'s .AsyncioDebug block (asyncio_offsets.h) from the
// target: finds the mapped file that carries the section, where it is loaded, and reads the
// block from target memory. Validates the values; it does not interpret tasks (tasks.c does).
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "asyncio_offsets.h"
#include "bytes.h"
#include "elf.h"

// Files examined for the section at most (the target's mapped ELF files with offset 0).
#define FILES_MAX 4096
// Largest struct size believed (_PyThreadStateImpl and PyInterpreterState included).
#define STRUCT_MAX (1u << 20)

static struct pyu_error *check(const struct pyu_asyncio_offsets *o)
{
	struct {
		uint64_t size;
		uint64_t fields[6];
		size_t n;
		const char *what;
	} groups[] = {
		{o->task_size, {o->task_name, o->task_awaited_by, o->task_is_task,
				o->task_awaited_by_is_set, o->task_coro, o->task_node}, 6, "Task"},
		{o->interp_size, {o->interp_tasks_head}, 1, "interpreter state"},
		{o->tstate_size, {o->tstate_running_loop, o->tstate_running_task,
				  o->tstate_tasks_head}, 3, "thread state"},
	};
	for (size_t g = 0; g < sizeof(groups) / sizeof(groups[0]); g++) {
		if (groups[g].size < 16 || groups[g].size > STRUCT_MAX)
			return pyu_error_create(PYU_ERR_CORRUPT, "asyncio debug offsets: %s size %"
						PRIu64, groups[g].what, groups[g].size);
		for (size_t i = 0; i < groups[g].n; i++)
			if (groups[g].fields[i] + 8 > groups[g].size)
				return pyu_error_create(PYU_ERR_CORRUPT, "asyncio debug offsets: %s "
							"field at %" PRIu64 " outside its %" PRIu64
							" bytes", groups[g].what, groups[g].fields[i],
							groups[g].size);
	}
	return NULL;
}

static struct pyu_error *read_block(struct pyu_target *t, const struct pyu_mapping *m,
				    struct pyu_asyncio_offsets *ret)
{
	struct pyu_elf *elf = NULL;
	struct pyu_elf_section sec;
	uint64_t bias = 0;
	uint8_t buf[PYU_ASYNCIO_OFFSETS_SIZE];
	struct pyu_error *err = pyu_elf_open(m->local_path, &elf);
	if (!err)
		err = pyu_elf_find_section(elf, ".AsyncioDebug", &sec);
	if (!err && sec.size < sizeof(buf))
		err = pyu_error_create(PYU_ERR_CORRUPT, ".AsyncioDebug of %s: %" PRIu64 " bytes",
				       m->path, sec.size);
	if (!err)
		err = pyu_elf_load_bias(t, elf, m->path, &bias);
	if (!err)
		err = pyu_target_read(t, bias + sec.addr, buf, sizeof(buf));
	pyu_elf_close(elf);
	if (err)
		return err;
	struct pyu_asyncio_offsets o = {0};
	uint64_t *f[] = {&o.task_size, &o.task_name, &o.task_awaited_by, &o.task_is_task,
			 &o.task_awaited_by_is_set, &o.task_coro, &o.task_node, &o.interp_size,
			 &o.interp_tasks_head, &o.tstate_size, &o.tstate_running_loop,
			 &o.tstate_running_task, &o.tstate_tasks_head};
	for (size_t i = 0; i < sizeof(f) / sizeof(f[0]); i++)
		*f[i] = pyu_get_u64(buf, (int32_t)(8 * i));
	if ((err = check(&o)) != NULL)
		return pyu_error_wrap(err, ".AsyncioDebug of %s", m->path);
	snprintf(o.where, sizeof(o.where), "%s", m->path);
	*ret = o;
	return NULL;
}

struct pyu_error *pyu_asyncio_offsets_find(struct pyu_target *t, struct pyu_asyncio_offsets *ret)
{
	size_t count = pyu_target_mapping_count(t);
	struct pyu_error *last = NULL;
	for (size_t i = 0, seen = 0; i < count && seen < FILES_MAX; i++) {
		const struct pyu_mapping *m = pyu_target_mapping(t, i);
		if (!m->path || !m->local_path || m->offset != 0 || m->path[0] != '/')
			continue;
		const char *base = strrchr(m->path, '/') + 1;
		// The extension module, or an interpreter with _asyncio built in.
		if (!strstr(base, "_asyncio") && !strstr(base, "python"))
			continue;
		seen++;
		if (!pyu_target_file_matches(t, m))
			continue;
		struct pyu_error *err = read_block(t, m, ret);
		if (!err) {
			pyu_error_destroy(last);
			return NULL;
		}
		if (pyu_error_code(err) == PYU_ERR_NOT_FOUND) {
			pyu_error_destroy(err);
			continue;
		}
		pyu_error_destroy(last);
		last = err;
	}
	return last ? last : pyu_error_create(PYU_ERR_NOT_FOUND, "no mapped file has an "
					      ".AsyncioDebug section");
}
