// layouts/heap.c - choosing the heap census layout table (heap_layout.h) by version.
#include "heap_layout.h"
#include <stddef.h>

const struct pyu_heap_layout *pyu_heap_layout_for_version(uint32_t version_hex)
{
	static const struct pyu_heap_layout *const all[] = {
		&pyu_heap_layout_py27,  &pyu_heap_layout_py36,  &pyu_heap_layout_py37,
		&pyu_heap_layout_py38,  &pyu_heap_layout_py39,  &pyu_heap_layout_py310,
		&pyu_heap_layout_py311, &pyu_heap_layout_py312, &pyu_heap_layout_py313,
		&pyu_heap_layout_py314, &pyu_heap_layout_py315,
	};
	for (size_t i = 0; i < sizeof(all) / sizeof(all[0]); i++)
		if ((all[i]->version_hex >> 16) == (version_hex >> 16))
			return all[i];
	return NULL;
}
