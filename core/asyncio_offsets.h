// asyncio_offsets.h - the asyncio debug offsets that CPython 3.14+ publishes in the
// .AsyncioDebug section of whichever file holds the _asyncio module (the extension module, or
// the interpreter when it is built in): the Task struct's fields and where thread and
// interpreter states keep their task lists. Find layer: reads the target's files and memory.
#ifndef PYU_ASYNCIO_OFFSETS_H
#define PYU_ASYNCIO_OFFSETS_H

#include <stdint.h>

#include "error.h"
#include "target.h"

// Bytes of the block read; 3.14 and 3.15 publish 13 uint64_t fields (104 bytes).
#define PYU_ASYNCIO_OFFSETS_SIZE 104

struct pyu_asyncio_offsets {
	uint64_t task_size, task_name, task_awaited_by, task_is_task, task_awaited_by_is_set,
		task_coro, task_node;
	uint64_t interp_size, interp_tasks_head;
	uint64_t tstate_size, tstate_running_loop, tstate_running_task, tstate_tasks_head;
	char where[192]; // the file it was read from, as the target names it
};

// Finds and reads the block from the first mapped file (whose local copy matches the target's
// build) that has the section, and checks it: every offset inside its struct's size, sizes
// plausible. The block is read from target memory at the section's loaded address. On error
// (PYU_ERR_NOT_FOUND: no mapped file has the section; PYU_ERR_CORRUPT: implausible values;
// others from reading), *ret is unchanged.
struct pyu_error *pyu_asyncio_offsets_find(struct pyu_target *t,
					   struct pyu_asyncio_offsets *ret);

#endif
