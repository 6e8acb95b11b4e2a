// heap.c - the heap census (heap.h): walks the collector's rings of PyGC_Head of every
// generation (and the permanent generation) of every interpreter, names each object's type and
// sizes it. Where the lists are comes from the heap layout of the version (layouts/heap_*.c);
// 3.13+ take the interpreter's gc offset from _Py_DebugOffsets and note a difference from the
// table. Each ring is walked at most PYU_HEAP_MAX_OBJECTS steps in all, each node's prev link
// must point back at the node before it, and an unreadable node ends that ring with an error.
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bytes.h"
#include "heap.h"
#include "inspect.h"
#include "runtime.h"
#include "values.h"

#define INTERP_GC_MAX (1u << 20) // a gc state offset past this in PyInterpreterState is corrupt
#define GENERATIONS_MAX 8

static void add_error(struct pyu_heap *h, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

static void add_error(struct pyu_heap *h, const char *fmt, ...)
{
	char msg[512];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	for (uint32_t i = 0; i < h->error_count; i++) {
		if (!strcmp(h->errors[i].message, msg)) {
			h->errors[i].count++;
			return;
		}
	}
	if (h->error_count == PYU_HEAP_MAX_ERRORS) {
		h->errors[h->error_count - 1].count++; // "... and other errors" below
		return;
	}
	char *copy = strdup(h->error_count == PYU_HEAP_MAX_ERRORS - 1 ? "other errors" : msg);
	if (!copy)
		return; // advisory
	h->errors[h->error_count].message = copy;
	h->errors[h->error_count++].count = 1;
}

static void add_source(struct pyu_heap *h, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

static void add_source(struct pyu_heap *h, const char *fmt, ...)
{
	char msg[512];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	char **grown = realloc(h->sources, (h->source_count + 1) * sizeof(*grown));
	if (!grown)
		return;
	h->sources = grown;
	if ((h->sources[h->source_count] = strdup(msg)) != NULL)
		h->source_count++;
}

void pyu_heap_destroy(struct pyu_heap *h)
{
	if (!h)
		return;
	for (uint32_t i = 0; i < h->type_count; i++)
		free(h->types[i].name);
	free(h->types);
	free(h->map_keys);
	free(h->map_vals);
	for (uint32_t i = 0; i < h->source_count; i++)
		free(h->sources[i]);
	free(h->sources);
	for (uint32_t i = 0; i < h->error_count; i++)
		free(h->errors[i].message);
	free(h);
}

// ---- types ---------------------------------------------------------------------------------

static size_t slot_of(uint64_t addr, size_t slots)
{
	uint64_t x = addr * 0x9e3779b97f4a7c15ull;
	return (size_t)(x >> 20) & (slots - 1);
}

static bool map_grow(struct pyu_heap *h)
{
	size_t slots = h->map_slots ? h->map_slots * 2 : 1024;
	uint64_t *keys = calloc(slots, sizeof(*keys));
	uint32_t *vals = calloc(slots, sizeof(*vals));
	if (!keys || !vals) {
		free(keys);
		free(vals);
		return false;
	}
	for (size_t i = 0; i < h->map_slots; i++) {
		if (!h->map_vals[i])
			continue;
		size_t j = slot_of(h->map_keys[i], slots);
		while (vals[j])
			j = (j + 1) & (slots - 1);
		keys[j] = h->map_keys[i];
		vals[j] = h->map_vals[i];
	}
	free(h->map_keys);
	free(h->map_vals);
	h->map_keys = keys;
	h->map_vals = vals;
	h->map_slots = slots;
	return true;
}

struct census {
	struct pyu_stacks *s;
	struct pyu_target *t;
	const struct pyu_layout *l;
	const struct pyu_heap_layout *hl;
	struct pyu_sizer z;
	struct pyu_heap *h;
	uint64_t visited;
};

// Index of the type at @type in h->types, named and given its size rule on first sight; -1
// when the type cannot be read (counted as an error).
static int64_t type_index(struct census *c, uint64_t type)
{
	struct pyu_heap *h = c->h;
	if (h->map_slots) {
		for (size_t j = slot_of(type, h->map_slots); h->map_vals[j];
		     j = (j + 1) & (h->map_slots - 1))
			if (h->map_keys[j] == type)
				return (int64_t)h->map_vals[j] - 1;
	}
	if ((h->type_count + 1) * 2 > h->map_slots && !map_grow(h))
		return -2;
	struct pyu_size_type st;
	struct pyu_error *err = pyu_size_type(&c->z, type, &st);
	if (err) {
		add_error(h, "objects of an unreadable type: %s", pyu_error_message(err));
		pyu_error_destroy(err);
		return -1;
	}
	char *name = NULL;
	err = pyu_value_type_qualname(c->z.v, type, &name);
	if (err) {
		pyu_error_destroy(err);
		char buf[64];
		snprintf(buf, sizeof(buf), "<type at 0x%" PRIx64 ">", type);
		if (!(name = strdup(buf)))
			return -2;
	}
	if (h->type_count == h->type_cap) {
		uint32_t cap = h->type_cap ? h->type_cap * 2 : 256;
		struct pyu_heap_type *grown = realloc(h->types, cap * sizeof(*grown));
		if (!grown) {
			free(name);
			return -2;
		}
		h->types = grown;
		h->type_cap = cap;
	}
	struct pyu_heap_type *ht = &h->types[h->type_count];
	memset(ht, 0, sizeof(*ht));
	ht->addr = type;
	ht->name = name;
	ht->size = st;
	size_t j = slot_of(type, h->map_slots);
	while (h->map_vals[j])
		j = (j + 1) & (h->map_slots - 1);
	h->map_keys[j] = type;
	h->map_vals[j] = ++h->type_count;
	return (int64_t)h->type_count - 1;
}

// Counts the object at @obj whose first @n bytes are @prefix. False: out of memory.
static bool count_object(struct census *c, uint64_t obj, const uint8_t *prefix, size_t n)
{
	struct pyu_heap *h = c->h;
	uint64_t type = pyu_get_u64(prefix, c->l->ob_type);
	if (!type || (type & 7)) {
		add_error(h, "objects with an implausible type pointer");
		return true;
	}
	int64_t i = type_index(c, type);
	if (i == -2)
		return false;
	if (i < 0)
		return true;
	struct pyu_heap_type *ht = &h->types[i];
	uint64_t size = 0;
	struct pyu_error *err = pyu_size_object(&c->z, obj, prefix, n, &ht->size, &size);
	if (err) {
		h->sized_inexact++;
		add_error(h, "objects sized by tp_basicsize: a field their size needs was "
			  "unreadable");
		pyu_error_destroy(err);
	}
	ht->count++;
	ht->bytes += size;
	h->objects++;
	h->bytes += size;
	return true;
}

// ---- the collector's lists ------------------------------------------------------------------

// Walks the ring whose head is at @head. Returns the objects counted; false in *oom for out of
// memory.
static uint64_t walk_ring(struct census *c, uint64_t head, const char *what, bool *oom)
{
	const struct pyu_heap_layout *hl = c->hl;
	struct pyu_heap *h = c->h;
	size_t hs = (size_t)hl->gc.head_size;
	uint64_t next_mask = ~((1ull << hl->next_bits) - 1);
	uint64_t prev_mask = ~((1ull << hl->prev_bits) - 1);
	uint8_t buf[64 + PYU_SIZE_PREFIX];
	uint64_t first, counted = 0;
	struct pyu_error *err = pyu_target_read_u64(c->t, head + (uint64_t)hl->gc.next, &first);
	if (err) {
		add_error(h, "%s: its head at 0x%" PRIx64 " is unreadable: %s", what, head,
			  pyu_error_message(err));
		pyu_error_destroy(err);
		return 0;
	}
	uint64_t prev = head, node = first & next_mask;
	size_t min_len = hs + (size_t)c->l->ob_type + 8;
	while (node != head) {
		if (c->visited >= PYU_HEAP_MAX_OBJECTS) {
			h->partial = true;
			break;
		}
		c->visited++;
		if (!node || (node & 7)) {
			add_error(h, "%s ends at an implausible link 0x%" PRIx64 " after 0x%" PRIx64,
				  what, node, prev);
			break;
		}
		size_t n = hs + PYU_SIZE_PREFIX;
		err = pyu_target_read(c->t, node, buf, n);
		if (err) {
			pyu_error_destroy(err);
			n = min_len;
			err = pyu_target_read(c->t, node, buf, n);
		}
		if (err) {
			add_error(h, "%s ends at unreadable 0x%" PRIx64 ": %s", what, node,
				  pyu_error_message(err));
			pyu_error_destroy(err);
			break;
		}
		uint64_t back = pyu_get_u64(buf, hl->gc.prev) & prev_mask;
		if (back != prev) {
			add_error(h, "%s is broken at 0x%" PRIx64 ": its prev is 0x%" PRIx64
				  ", not 0x%" PRIx64, what, node, back, prev);
			break;
		}
		if (!count_object(c, node + hs, buf + hs, n - hs)) {
			*oom = true;
			break;
		}
		counted++;
		prev = node;
		node = pyu_get_u64(buf, hl->gc.next) & next_mask;
	}
	return counted;
}

// Whether a ring head at @head links both ways: its next's prev and its prev's next are it.
static bool head_links(struct census *c, uint64_t head)
{
	const struct pyu_heap_layout *hl = c->hl;
	uint64_t next_mask = ~((1ull << hl->next_bits) - 1);
	uint64_t prev_mask = ~((1ull << hl->prev_bits) - 1);
	uint64_t next, prev, back, fwd;
	struct pyu_error *err = pyu_target_read_u64(c->t, head + (uint64_t)hl->gc.next, &next);
	if (!err)
		err = pyu_target_read_u64(c->t, head + (uint64_t)hl->gc.prev, &prev);
	next &= next_mask;
	prev &= prev_mask;
	// Nodes are objects (aligned); the head itself may be less aligned (3.13.18's are at 4).
	if (!err && (!next || !prev || (next != head && (next & 7)) || (prev != head && (prev & 7))))
		err = pyu_error_create(PYU_ERR_CORRUPT, "implausible links");
	if (!err)
		err = pyu_target_read_u64(c->t, next + (uint64_t)hl->gc.prev, &back);
	if (!err)
		err = pyu_target_read_u64(c->t, prev + (uint64_t)hl->gc.next, &fwd);
	bool ok = !err && (back & prev_mask) == head && (fwd & next_mask) == head;
	pyu_error_destroy(err);
	return ok;
}

// Where the generation heads are: at @gens as the table says, or - for a build whose state
// moved them by a few bytes (3.13.0 has them at 24, 3.13.18 at 20) - at the
// nearest offset where every head links both ways. 0 when no candidate does.
static uint64_t find_generations(struct census *c, uint32_t index, uint64_t gens)
{
	static const int32_t deltas[] = {0, -4, 4, -8, 8};
	const struct pyu_heap_layout *hl = c->hl;
	for (size_t d = 0; d < sizeof(deltas) / sizeof(deltas[0]); d++) {
		uint64_t at = gens + (uint64_t)(int64_t)deltas[d];
		bool ok = true;
		for (int32_t g = 0; ok && g < hl->generation_count && g < GENERATIONS_MAX; g++)
			ok = head_links(c, at + (uint64_t)g * (uint64_t)hl->gc.generation_size);
		if (!ok)
			continue;
		if (deltas[d])
			add_source(c->h, "the generation heads of interpreter #%u are %d bytes from "
				   "where the table of %s has them (each links both ways there)",
				   index, deltas[d], hl->name);
		return at;
	}
	return 0;
}

// Walks the generations whose first head is at @gens and the permanent generation at @perm
// (0: none) of interpreter #@index.
static bool walk_state(struct census *c, uint32_t index, uint64_t gens, uint64_t perm)
{
	const struct pyu_heap_layout *hl = c->hl;
	uint64_t found = find_generations(c, index, gens);
	if (found)
		gens = found; // else walk where the table says: its errors say what is wrong

	uint64_t n[GENERATIONS_MAX + 1] = {0};
	int32_t count = hl->generation_count < GENERATIONS_MAX ? hl->generation_count
							       : GENERATIONS_MAX;
	bool oom = false;
	char what[96];
	for (int32_t g = 0; g < count && !oom; g++) {
		snprintf(what, sizeof(what), "the list of generation %d of interpreter #%u", g,
			 index);
		n[g] = walk_ring(c, gens + (uint64_t)g * (uint64_t)hl->gc.generation_size, what,
				 &oom);
	}
	if (perm && !oom) {
		snprintf(what, sizeof(what), "the permanent generation of interpreter #%u", index);
		n[count] = walk_ring(c, perm, what, &oom);
	}
	char line[256];
	int at = snprintf(line, sizeof(line), "found on the collector's lists of interpreter #%u:",
			  index);
	for (int32_t g = 0; g < count && at > 0 && (size_t)at < sizeof(line); g++)
		at += snprintf(line + at, sizeof(line) - (size_t)at, "%s generation %d: %" PRIu64,
			       g ? "," : "", g, n[g]);
	if (perm && at > 0 && (size_t)at < sizeof(line))
		snprintf(line + at, sizeof(line) - (size_t)at, ", permanent: %" PRIu64, n[count]);
	add_source(c->h, "%s", line);
	c->h->interpreters++;
	return !oom;
}

// Where the collector's state is in each interpreter (3.13+: as its debug offsets say).
static int32_t interp_gc_offset(struct census *c)
{
	const struct pyu_runtime *rt = c->s->runtime;
	int32_t off = c->hl->gc.state_in_interp;
	if (!rt->runtime_addr || (rt->version_hex >> 16) < 0x030d)
		return off;
	uint8_t buf[PYU_DEBUG_OFFSETS_MAX];
	uint64_t v;
	struct pyu_error *err = pyu_target_read(c->t, rt->runtime_addr, buf, sizeof(buf));
	if (err) {
		pyu_error_destroy(err);
		return off;
	}
	if (pyu_debug_offsets_field(buf, sizeof(buf), "interpreter_state.gc", &v) &&
	    v < INTERP_GC_MAX) {
		if ((int64_t)v != off)
			add_source(c->h, "the interpreter's gc state is at offset %" PRIu64 " (its "
				   "debug offsets; the table says %d)", v, off);
		return (int32_t)v;
	}
	return off;
}

static bool walk_all(struct census *c)
{
	const struct pyu_heap_layout *hl = c->hl;
	const struct pyu_runtime *rt = c->s->runtime;
	struct pyu_error *err;
	uint64_t gens;
	switch (hl->home) {
	case PYU_GC_GEN0_SYMBOL:
		if (!rt->gc_generation0_addr) {
			add_error(c->h, "no _PyGC_generation0 symbol: the collector's lists of "
				  "CPython %s are not known without it", hl->name);
			return true;
		}
		err = pyu_target_read_u64(c->t, rt->gc_generation0_addr, &gens);
		if (err) {
			add_error(c->h, "_PyGC_generation0 unreadable: %s", pyu_error_message(err));
			pyu_error_destroy(err);
			return true;
		}
		return walk_state(c, 0, gens, 0);
	case PYU_GC_IN_RUNTIME: {
		uint64_t state = rt->runtime_addr + (uint64_t)hl->gc.state_in_runtime;
		return walk_state(c, 0, state + (uint64_t)hl->gc.generations,
				  state + (uint64_t)hl->gc.permanent);
	}
	case PYU_GC_IN_INTERP:
		break;
	}
	int32_t off = interp_gc_offset(c);
	uint64_t interp;
	err = pyu_target_read_u64(c->t, rt->interp_head_addr, &interp);
	if (err) {
		add_error(c->h, "the interpreter list is unreadable: %s", pyu_error_message(err));
		pyu_error_destroy(err);
		return true;
	}
	for (uint32_t i = 0; interp && i < PYU_MAX_INTERPRETERS; i++) {
		uint64_t state = interp + (uint64_t)off;
		if (!walk_state(c, i, state + (uint64_t)hl->gc.generations,
				hl->gc.permanent >= 0 ? state + (uint64_t)hl->gc.permanent : 0))
			return false;
		err = pyu_target_read_u64(c->t, interp + (uint64_t)rt->layout.interp.next,
					  &interp);
		if (err) {
			add_error(c->h, "the interpreter list ends at an unreadable link: %s",
				  pyu_error_message(err));
			pyu_error_destroy(err);
			break;
		}
	}
	return true;
}

struct pyu_error *pyu_heap_census(struct pyu_stacks *s, struct pyu_heap **ret)
{
	if (!s || !s->runtime)
		return pyu_error_create(PYU_ERR_ARGUMENT, "no snapshot");
	const struct pyu_runtime *rt = s->runtime;
	const struct pyu_heap_layout *hl = pyu_heap_layout_for_version(rt->version_hex);
	if (!hl)
		return pyu_error_create(PYU_ERR_UNSUPPORTED, "no heap layout for CPython %s",
					rt->layout.name);
	if (rt->free_threaded)
		return pyu_error_create(PYU_ERR_UNSUPPORTED, "the heap census of a free-threaded "
					"build (no collector lists) is not supported");
	struct pyu_values *v;
	struct pyu_error *err = pyu_stacks_values(s, &v);
	if (err)
		return err;
	struct pyu_heap *h = calloc(1, sizeof(*h));
	if (!h)
		return &pyu_error_nomem;
	struct census c = {s, s->target, &rt->layout, hl, {0}, h, 0};
	c.z.t = s->target;
	c.z.l = &rt->layout;
	c.z.vl = pyu_values_layout(v);
	c.z.hl = hl;
	c.z.v = v;
	c.z.shift = rt->layout.ob_type - 8;
	if (!walk_all(&c)) {
		pyu_heap_destroy(h);
		return &pyu_error_nomem;
	}
	h->tracked = h->objects;
	*ret = h;
	return NULL;
}
