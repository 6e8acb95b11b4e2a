// layouts/tasks.c - choosing the asyncio layout table (task_layout.h) by version.
#include "task_layout.h"
#include <stddef.h>

const struct pyu_task_layout *pyu_task_layout_for_version(uint32_t version_hex)
{
	static const struct pyu_task_layout *const all[] = {
		&pyu_task_layout_py37,  &pyu_task_layout_py38,  &pyu_task_layout_py39,
		&pyu_task_layout_py310, &pyu_task_layout_py311, &pyu_task_layout_py312,
		&pyu_task_layout_py313, &pyu_task_layout_py314, &pyu_task_layout_py315,
	};
	for (size_t i = 0; i < sizeof(all) / sizeof(all[0]); i++)
		if ((all[i]->version_hex >> 16) == (version_hex >> 16))
			return all[i];
	return NULL;
}
