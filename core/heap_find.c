// heap_find.c - the generation heads of CPython 2.7 and 3.6 found in memory alone
// (heap_find.h): a pointer in the interpreter file's writable data to an array, in that same
// data, of rings of collector heads that link both ways and hold objects.
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "bytes.h"
#include "heap_find.h"

#define REGIONS_MAX 16
#define CHUNK (256u << 10)
#define GENERATIONS_MAX 8

struct region {
	uint64_t start, end;
};

static bool rd(struct pyu_target *t, uint64_t addr, uint64_t *ret)
{
	struct pyu_error *err = pyu_target_read_u64(t, addr, ret);
	pyu_error_destroy(err);
	return err == NULL;
}

static bool inside(const struct region *r, size_t n, uint64_t addr, uint64_t len)
{
	for (size_t i = 0; i < n; i++)
		if (addr >= r[i].start && addr < r[i].end && len <= r[i].end - addr)
			return true;
	return false;
}

// Whether the ring head at @head links both ways; *filled when it holds a node whose object's
// type's type is its own type (a metatype: `type`).
static bool head_ok(struct pyu_target *t, const struct pyu_layout *l,
		    const struct pyu_heap_layout *hl, uint64_t head, bool *filled)
{
	uint64_t nmask = ~((1ull << hl->next_bits) - 1), pmask = ~((1ull << hl->prev_bits) - 1);
	uint64_t next, prev, back, fwd;
	if (!rd(t, head + (uint64_t)hl->gc.next, &next) ||
	    !rd(t, head + (uint64_t)hl->gc.prev, &prev))
		return false;
	next &= nmask;
	prev &= pmask;
	if (!next || !prev || (next & 7) || (prev & 7))
		return false;
	if (!rd(t, next + (uint64_t)hl->gc.prev, &back) ||
	    !rd(t, prev + (uint64_t)hl->gc.next, &fwd) || (back & pmask) != head ||
	    (fwd & nmask) != head)
		return false;
	if (next != head) {
		uint64_t obj = next + (uint64_t)hl->gc.head_size, type, meta, meta2;
		if (!rd(t, obj + (uint64_t)l->ob_type, &type) || !type || (type & 7) ||
		    !rd(t, type + (uint64_t)l->ob_type, &meta) || !meta || (meta & 7) ||
		    !rd(t, meta + (uint64_t)l->ob_type, &meta2))
			return false;
		// `type`'s type is itself; a class's metaclass's type is `type`
		if (meta2 == meta || (rd(t, meta2 + (uint64_t)l->ob_type, &type) && type == meta2))
			*filled = true;
	}
	return true;
}

uint64_t pyu_heap_find_generations(struct pyu_target *t, const struct pyu_layout *l,
				   const struct pyu_heap_layout *hl, const char *image,
				   uint64_t *var)
{
	struct region r[REGIONS_MAX];
	size_t n = 0;
	if (!image || !image[0] || hl->generation_count <= 0 ||
	    hl->generation_count > GENERATIONS_MAX)
		return 0;
	for (size_t i = 0; i < pyu_target_mapping_count(t) && n < REGIONS_MAX; i++) {
		const struct pyu_mapping *m = pyu_target_mapping(t, i);
		if (!m->writable || !m->path || strcmp(m->path, image) != 0)
			continue;
		r[n++] = (struct region){m->start, m->end};
		const struct pyu_mapping *next = i + 1 < pyu_target_mapping_count(t) ?
			pyu_target_mapping(t, i + 1) : NULL;
		if (next && next->start == m->end && next->writable && !next->path &&
		    n < REGIONS_MAX)
			r[n++] = (struct region){next->start, next->end}; // .bss
	}
	uint64_t span = (uint64_t)hl->gc.generation_size * (uint64_t)hl->generation_count;
	uint64_t *buf = malloc(CHUNK);
	uint64_t found = 0, found_var = 0, scanned = 0;
	bool ambiguous = false;
	for (size_t k = 0; buf && k < n && !ambiguous; k++) {
		for (uint64_t at = r[k].start; at < r[k].end && scanned < PYU_HEAP_FIND_MAX;
		     at += CHUNK) {
			size_t len = r[k].end - at < CHUNK ? (size_t)(r[k].end - at) : CHUNK;
			struct pyu_error *err = pyu_target_read(t, at, buf, len);
			if (err) {
				pyu_error_destroy(err);
				continue;
			}
			scanned += len;
			for (size_t w = 0; w < len / 8; w++) {
				uint64_t p = pyu_le64((const uint8_t *)&buf[w]);
				if (!p || (p & 7) || p == found || !inside(r, n, p, span))
					continue;
				bool ok = true, filled = false;
				for (int32_t g = 0; ok && g < hl->generation_count; g++)
					ok = head_ok(t, l, hl, p + (uint64_t)g *
						     (uint64_t)hl->gc.generation_size, &filled);
				if (!ok || !filled)
					continue;
				if (found) {
					ambiguous = true;
					break;
				}
				found = p;
				found_var = at + w * 8;
			}
			if (ambiguous)
				break;
		}
	}
	free(buf);
	if (!found || ambiguous)
		return 0;
	*var = found_var;
	return found;
}
