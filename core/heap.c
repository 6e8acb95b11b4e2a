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

#include "addrset.h"
#include "bytes.h"
#include "heap.h"
#include "heap_find.h"
#include "inspect.h"
#include "locals.h"
#include "objects.h"
#include "runtime.h"
#include "values.h"

#define INTERP_GC_MAX (1u << 20) // a gc state offset past this in PyInterpreterState is corrupt
#define GENERATIONS_MAX 8
// Objects counted or looked into between two pyu_target_release_views(): what a core's mapped
// pages add to the census's memory stays small.
#define RELEASE_EVERY (1u << 14)
#define TPFLAGS_IMMUTABLETYPE (1ull << 8) // 3.10+
// Objects counted or looked into between two calls of the progress callback.
#define PROGRESS_EVERY (1u << 12)

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
	pyu_addrmap_clear(&h->type_map);
	for (uint32_t i = 0; i < h->source_count; i++)
		free(h->sources[i]);
	free(h->sources);
	for (uint32_t i = 0; i < h->error_count; i++)
		free(h->errors[i].message);
	free(h->biggest);
	free(h->refs);
	for (uint32_t i = 0; i < h->name_count; i++)
		free(h->names[i]);
	free(h->names);
	free(h);
}

enum pyu_heap_frame_kind pyu_heap_frame_kind(int32_t co_flags)
{
	// CO_ASYNC_GENERATOR, CO_COROUTINE, CO_GENERATOR (code.h of every version).
	return (co_flags & 0x200) ? PYU_HEAP_ASYNC_GENERATOR
	     : (co_flags & 0x80) ? PYU_HEAP_COROUTINE
	     : (co_flags & 0x20) ? PYU_HEAP_GENERATOR : PYU_HEAP_FRAME;
}

const char *pyu_heap_frame_kind_name(enum pyu_heap_frame_kind kind)
{
	switch (kind) {
	case PYU_HEAP_GENERATOR:
		return "generator";
	case PYU_HEAP_COROUTINE:
		return "coroutine";
	case PYU_HEAP_ASYNC_GENERATOR:
		return "async generator";
	case PYU_HEAP_FRAME:
		break;
	}
	return "frame";
}

const char *pyu_heap_frame_attr(enum pyu_heap_frame_kind kind)
{
	switch (kind) {
	case PYU_HEAP_GENERATOR:
		return "gi_frame";
	case PYU_HEAP_COROUTINE:
		return "cr_frame";
	case PYU_HEAP_ASYNC_GENERATOR:
		return "ag_frame";
	case PYU_HEAP_FRAME:
		break;
	}
	return "f_back";
}

// ---- types ---------------------------------------------------------------------------------

struct census {
	struct pyu_stacks *s;
	struct pyu_target *t;
	const struct pyu_layout *l;
	const struct pyu_heap_layout *hl;
	struct pyu_sizer z;
	struct pyu_heap *h;
	uint64_t visited;
	uint64_t ticks;           // objects counted and looked into (tick())
	uint64_t followed;        // objects looked into (queue entries followed)
	bool following;           // past the lists: following references
	bool stop;                // the progress callback asked to stop
	struct pyu_addrset seen;  // every object counted, by address
	uint64_t *queue;          // objects whose references are still to be followed
	size_t queue_len, queue_cap;
	bool oom;
	uint64_t cur;             // the object whose references are followed (0: a list walk)
	uint32_t cur_node;        // its node (the hooks' numbering: queue index + 1; 0: roots)
	struct pyu_heap_ref via;  // how cur holds the reference considered next
	const struct pyu_heap_hooks *hooks; // NULL: none
	bool stopped;             // a hook asked to stop
	struct pyu_locals_cache *locals_cache; // slot names of the code objects of frames
	bool names;               // keep the names of PYU_VIA_LOCAL references (h->names)
	char **name_table;        // open addressing over h->names (NULL: empty slot)
	uint32_t name_table_cap;  // a power of two, or 0
};

static bool set_has(struct census *c, uint64_t addr)
{
	return pyu_addrset_has(&c->seen, addr);
}

// Adds @addr (non-zero); false when it was there already or memory ran out (c->oom).
static bool set_add(struct census *c, uint64_t addr)
{
	int added = pyu_addrset_add(&c->seen, addr);
	if (added < 0)
		c->oom = true;
	return added > 0;
}

static void queue_push(struct census *c, uint64_t addr)
{
	if (c->queue_len == c->queue_cap) {
		size_t cap = c->queue_cap ? c->queue_cap * 2 : 1u << 16;
		uint64_t *grown = realloc(c->queue, cap * sizeof(*grown));
		if (!grown) {
			c->oom = true;
			return;
		}
		c->queue = grown;
		c->queue_cap = cap;
	}
	c->queue[c->queue_len++] = addr;
}

// Called for each object counted and each looked into: now and then lets a core's pages go,
// and tells the progress callback how far the census got (which may stop it).
static void tick(struct census *c)
{
	c->ticks++;
	if ((c->ticks & (RELEASE_EVERY - 1)) == 0)
		pyu_target_release_views(c->t);
	if ((c->ticks & (PROGRESS_EVERY - 1)) == 0 && c->s->progress && !c->stop &&
	    c->s->progress(c->s->progress_arg, c->following ? c->followed : c->h->objects,
			   c->following ? c->queue_len : 0)) {
		c->stop = true;
		c->h->partial = c->h->interrupted = true;
	}
}

static bool is_metatype(const struct pyu_heap *h, uint64_t type)
{
	for (uint32_t i = 0; i < h->metatype_count; i++)
		if (h->metatypes[i] == type)
			return true;
	return false;
}

// Index of the type at @type in h->types, named and given its size rule on first sight; -1
// when the type cannot be read (counted as an error).
static int64_t type_index(struct census *c, uint64_t type)
{
	struct pyu_heap *h = c->h;
	int64_t known = pyu_addrmap_get(&h->type_map, type);
	if (known >= 0)
		return known;
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
	pyu_size_named(&st, name);
	ht->size = st;
	if (pyu_addrmap_add(&h->type_map, type, h->type_count) != 1) {
		free(name);
		return -2;
	}
	h->type_count++;
	uint64_t meta;
	err = pyu_target_read_u64(c->t, type + (uint64_t)c->l->ob_type, &meta);
	if (!err && meta && !is_metatype(h, meta) && h->metatype_count < PYU_HEAP_MAX_METATYPES)
		h->metatypes[h->metatype_count++] = meta;
	pyu_error_destroy(err);
	return (int64_t)h->type_count - 1;
}

// Keeps the object at @obj among the largest when it is larger than the smallest kept: a
// min-heap of biggest_cap entries on bytes.
static void keep_if_big(struct pyu_heap *h, uint64_t obj, uint64_t bytes, uint32_t type)
{
	struct pyu_heap_big *b = h->biggest, e = {obj, bytes, type};
	if (!h->biggest_cap)
		return;
	size_t i;
	if (h->biggest_count < h->biggest_cap) {
		for (i = h->biggest_count++; i > 0 && b[(i - 1) / 2].bytes > bytes; i = (i - 1) / 2)
			b[i] = b[(i - 1) / 2];
		b[i] = e;
		return;
	}
	if (bytes <= b[0].bytes)
		return;
	for (i = 0;;) {
		size_t l = 2 * i + 1, r = l + 1, m = i;
		uint64_t least = bytes;
		if (l < h->biggest_count && b[l].bytes < least)
			m = l, least = b[l].bytes;
		if (r < h->biggest_count && b[r].bytes < least)
			m = r;
		if (m == i)
			break;
		b[i] = b[m];
		i = m;
	}
	b[i] = e;
}

static int bigger_first(const void *a, const void *b)
{
	const struct pyu_heap_big *x = a, *y = b;
	return x->bytes != y->bytes ? (x->bytes < y->bytes ? 1 : -1)
				    : (x->addr > y->addr) - (x->addr < y->addr);
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
	if (obj == h->want) {
		h->want_found = true;
		h->want_type = (uint32_t)i;
		h->want_bytes = size;
	}
	if (c->hooks && c->hooks->object &&
	    !c->hooks->object(c->hooks->arg, obj, size, (uint32_t)i))
		c->stopped = true;
	ht->count++;
	ht->bytes += size;
	h->objects++;
	tick(c);
	h->bytes += size;
	keep_if_big(h, obj, size, (uint32_t)i);
	return true;
}

// Whether a type is known to the census (an object of it was counted).
static bool type_known(const struct pyu_heap *h, uint64_t type)
{
	return pyu_addrmap_get(&h->type_map, type) >= 0;
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
	while (node != head && !c->stop) {
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
		// Counted once, and queued when counted: the hooks' node n is queue entry n - 1.
		uint64_t before = h->objects;
		if (set_add(c, node + hs) && !count_object(c, node + hs, buf + hs, n - hs)) {
			*oom = true;
			break;
		}
		if (h->objects > before)
			queue_push(c, node + hs);
		if (c->oom) {
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
	uint64_t next = 0, prev = 0, back = 0, fwd = 0;
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

// ---- objects reached through references -----------------------------------------------------

#define CHUNK 256            // pointers read per target read
#define SCAN_MAX 4096        // bytes of an instance's __slots__ followed
#define ITEMS_MAX (1u << 28) // items of one tuple or list followed

// Counts the object at @addr when it is one the census has not met: its type is a type the
// census knows, or a type whose own type it knows (a code object's type is `type`). Anything
// else (a pointer into something that is no object) is passed over silently.
static void note_referrer(struct census *c)
{
	struct pyu_heap *h = c->h;
	if (h->ref_count == PYU_HEAP_MAX_REFERRERS) {
		h->refs_dropped++;
		return;
	}
	if (h->ref_count == h->ref_cap) {
		uint32_t cap = h->ref_cap ? h->ref_cap * 2 : 16;
		struct pyu_heap_ref *grown = realloc(h->refs, cap * sizeof(*grown));
		if (!grown) {
			c->oom = true;
			return;
		}
		h->refs = grown;
		h->ref_cap = cap;
	}
	h->refs[h->ref_count] = c->via;
	h->refs[h->ref_count++].addr = c->cur;
}

// A reference to the counted object @addr (its node @node, or 0: counted before), for the
// hooks.
static void report_edge(struct census *c, uint64_t addr, uint32_t node)
{
	if (!c->hooks || c->stopped)
		return;
	if (c->hooks->edge) {
		c->via.addr = c->cur;
		if (!c->hooks->edge(c->hooks->arg, c->cur, &c->via, addr))
			c->stopped = true;
	}
	if (c->hooks->link && !c->stopped &&
	    !c->hooks->link(c->hooks->arg, c->cur_node, node, addr))
		c->stopped = true;
}

static void consider(struct census *c, uint64_t addr)
{
	if (addr && addr == c->h->want && c->cur)
		note_referrer(c);
	if (!addr || (addr & 7) || c->oom || c->stopped || c->stop)
		return;
	if (set_has(c, addr)) {
		report_edge(c, addr, 0);
		return;
	}
	if (c->visited >= PYU_HEAP_MAX_OBJECTS) {
		c->h->partial = true;
		return;
	}
	uint8_t buf[PYU_SIZE_PREFIX];
	size_t n = sizeof(buf), min = (size_t)c->l->ob_type + 8;
	struct pyu_error *err = pyu_target_read(c->t, addr, buf, n);
	if (err) {
		pyu_error_destroy(err);
		n = min;
		if ((err = pyu_target_read(c->t, addr, buf, n)) != NULL) {
			pyu_error_destroy(err);
			return;
		}
	}
	uint64_t type = pyu_get_u64(buf, c->l->ob_type), meta;
	uint64_t refcnt = pyu_get_u64(buf, c->l->ob_type - 8);
	// A freed object kept on a free list has no references left.
	if (!type || (type & 7) || refcnt == 0)
		return;
	if (!type_known(c->h, type)) {
		err = pyu_target_read_u64(c->t, type + (uint64_t)c->l->ob_type, &meta);
		if (err) {
			pyu_error_destroy(err);
			return;
		}
		if (!type_known(c->h, meta) && !is_metatype(c->h, meta))
			return;
	}
	if (!type_known(c->h, type)) {
		struct pyu_size_type st;
		err = pyu_size_type(&c->z, type, &st);
		if (err) {
			pyu_error_destroy(err); // not a type: the word was no reference
			return;
		}
	}
	c->visited++;
	if (!set_add(c, addr))
		return;
	uint64_t before = c->h->objects;
	if (!count_object(c, addr, buf, n)) {
		c->oom = true;
		return;
	}
	if (c->h->objects > before) {
		c->h->untracked++;
		queue_push(c, addr);
		if (!c->oom)
			report_edge(c, addr, (uint32_t)c->queue_len);
	}
}

// Follows @count pointers stored from @at.
static void consider_array(struct census *c, uint64_t at, uint64_t count)
{
	uint64_t buf[CHUNK];
	for (uint64_t i = 0; i < count && !c->oom; i += CHUNK) {
		size_t n = count - i < CHUNK ? (size_t)(count - i) : CHUNK;
		struct pyu_error *err = pyu_target_read(c->t, at + i * 8, buf, n * 8);
		if (err) {
			add_error(c->h, "items of a tuple or list unreadable");
			pyu_error_destroy(err);
			return;
		}
		for (size_t j = 0; j < n; j++) {
			c->via.via = PYU_VIA_ITEM;
			c->via.n = i + j;
			consider(c, buf[j]);
		}
	}
}

static bool visit_pair(void *arg, uint64_t key, uint64_t value)
{
	struct census *c = arg;
	c->via.via = PYU_VIA_DICT_KEY;
	consider(c, key);
	c->via.via = PYU_VIA_DICT_VALUE;
	c->via.key = key;
	consider(c, value);
	return !c->oom;
}

static bool visit_value(void *arg, uint64_t key, uint64_t value)
{
	// Attribute names live in the class's shared keys: not counted here.
	struct census *c = arg;
	c->via.via = PYU_VIA_ATTR;
	c->via.key = key;
	consider(c, value);
	return !c->oom;
}

static bool visit_one(void *arg, uint64_t key)
{
	struct census *c = arg;
	c->via.via = PYU_VIA_SET;
	consider(c, key);
	return !c->oom;
}

// Every word of [@from, @to) of the object at @obj that points at an object.
static void scan_words(struct census *c, uint64_t obj, uint64_t from, uint64_t to)
{
	uint64_t buf[SCAN_MAX / 8];
	if (to <= from)
		return;
	size_t len = (size_t)(to - from);
	if (len > sizeof(buf))
		len = sizeof(buf);
	struct pyu_error *err = pyu_target_read(c->t, obj + from, buf, len);
	if (err) {
		pyu_error_destroy(err);
		return;
	}
	for (size_t i = 0; i < len / 8; i++) {
		c->via.via = PYU_VIA_SLOT;
		c->via.n = from + i * 8;
		consider(c, buf[i]);
	}
}

// The items of the collections.deque at @obj whose first PYU_SIZE_PREFIX bytes are @buf: from
// leftindex of its first block on, block after block, as many as it holds.
static void follow_deque(struct census *c, uint64_t obj, const uint8_t *buf)
{
	const struct pyu_deque_layout *d = pyu_deque_layout(c->z.vl->py2);
	int32_t len_off = d->len < 0 ? c->l->ob_size : d->len + c->z.shift;
	uint64_t block = pyu_get_u64(buf, d->leftblock + c->z.shift);
	uint64_t index = pyu_get_u64(buf, d->leftindex + c->z.shift);
	uint64_t left = pyu_get_u64(buf, len_off), n = 0;
	(void)obj;
	uint64_t data[64];  // a block's items: blocklen is at most this (checked below)
	if (index >= d->blocklen || left > ITEMS_MAX || d->blocklen > sizeof data / sizeof data[0])
		return;
	for (uint64_t blocks = 0; left && block && blocks <= ITEMS_MAX / d->blocklen + 1 &&
	     !c->oom; blocks++) {
		uint64_t take = d->blocklen - index < left ? d->blocklen - index : left;
		struct pyu_error *err = pyu_target_read(c->t, block + (uint64_t)d->block_data +
							index * 8, data, take * 8);
		if (!err)
			err = pyu_target_read_u64(c->t, block + (uint64_t)d->block_right, &block);
		if (err) {
			add_error(c->h, "a deque's block unreadable: %s", pyu_error_message(err));
			pyu_error_destroy(err);
			return;
		}
		for (uint64_t i = 0; i < take; i++) {
			c->via.via = PYU_VIA_ITEM;
			c->via.n = n++;
			consider(c, data[i]);
		}
		left -= take;
		index = 0;
	}
}

// Where a class's instances keep their __slots__: for each class on its tp_base chain whose
// dict declares __slots__ (a class statement's), the bytes between its base's tp_basicsize and
// its own. Classes made in C keep other fields there, which are not followed.
static void read_slots(struct census *c, struct pyu_heap_type *ht)
{
	const struct pyu_value_layout *vl = c->z.vl;
	ht->slots_read = true;
	uint64_t type = ht->addr;
	for (int depth = 0; type && depth < 64 && ht->slot_regions < 4; depth++) {
		uint64_t flags, base, dict, basic, base_basic, found;
		struct pyu_error *err = pyu_target_read_u64(c->t, type + (uint64_t)c->l->type_tp_flags,
							    &flags);
		if (!err && !(flags & (1ull << 9))) {
			pyu_error_destroy(err);
			return; // a static class: no __slots__ below it
		}
		if (!err)
			err = pyu_target_read_u64(c->t, type + (uint64_t)vl->type.base, &base);
		if (!err)
			err = pyu_target_read_u64(c->t, type + (uint64_t)vl->type.dict, &dict);
		if (!err)
			err = pyu_target_read_u64(c->t, type + (uint64_t)vl->type.basicsize, &basic);
		if (!err && base)
			err = pyu_target_read_u64(c->t, base + (uint64_t)vl->type.basicsize,
						  &base_basic);
		if (err || !base) {
			pyu_error_destroy(err);
			return;
		}
		err = pyu_dict_get_str(c->z.v, dict, "__slots__", &found);
		if (!err && base_basic < basic && basic <= SCAN_MAX) {
			ht->slots[ht->slot_regions][0] = (uint32_t)base_basic;
			ht->slots[ht->slot_regions++][1] = (uint32_t)basic;
		}
		pyu_error_destroy(err);
		type = base;
	}
}

// The references in fields @offs (PYU_NO_FIELD: absent) of the object at @obj whose first
// PYU_SIZE_PREFIX bytes are @buf (fields past those are read).
// @names: the fields' names as Python spells the attributes.
static void consider_fields(struct census *c, uint64_t obj, const uint8_t *buf,
			    const int32_t *offs, const char *const *names, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		uint64_t p;
		if (offs[i] < 0)
			continue;
		if (offs[i] + 8 <= PYU_SIZE_PREFIX) {
			p = pyu_get_u64(buf, offs[i]);
		} else {
			struct pyu_error *err = pyu_target_read_u64(c->t, obj + (uint64_t)offs[i], &p);
			if (err) {
				pyu_error_destroy(err);
				continue;
			}
		}
		c->via.via = PYU_VIA_FIELD;
		c->via.field = names[i];
		consider(c, p);
	}
}

// A field of the heap layout's refs (-1: absent), shifted for the object header.
static int32_t ref_off(const struct census *c, int32_t off)
{
	return off < 0 ? -1 : off + c->z.shift;
}

// The same for fields anywhere in the object at @obj (read one by one).
static void follow_fields(struct census *c, uint64_t obj, const int32_t *offs,
			  const char *const *names, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		uint64_t p;
		if (offs[i] < 0)
			continue;
		struct pyu_error *err = pyu_target_read_u64(c->t, obj + (uint64_t)offs[i], &p);
		if (err) {
			pyu_error_destroy(err);
			continue;
		}
		c->via.via = PYU_VIA_FIELD;
		c->via.field = names[i];
		consider(c, p);
	}
}

// ---- frames of generators, coroutines and frame objects --------------------------------------

#define NAMES_MAX (1u << 22)  // distinct local and code names kept for one walk
#define CODE_NAME_MAX 1024    // code points of a code's name

static uint32_t name_hash(const char *str)
{
	uint32_t h = 2166136261u;
	for (size_t i = 0; str[i] && i < 4 * CODE_NAME_MAX; i++)
		h = (h ^ (uint8_t)str[i]) * 16777619u;
	return h;
}

// The census's copy of @str (one per distinct string), or NULL when past NAMES_MAX or out of
// memory (the reference is then reported without its name).
static const char *intern(struct census *c, const char *str)
{
	struct pyu_heap *h = c->h;
	if (!str)
		return NULL;
	if (2 * (h->name_count + 1) > c->name_table_cap) {
		if (h->name_count >= NAMES_MAX)
			return NULL;
		uint32_t cap = c->name_table_cap ? 2 * c->name_table_cap : 256;
		char **table = calloc(cap, sizeof(*table));
		if (!table)
			return NULL;
		for (uint32_t i = 0; i < c->name_table_cap; i++) {
			if (!c->name_table[i])
				continue;
			uint32_t k = name_hash(c->name_table[i]) & (cap - 1);
			while (table[k])
				k = (k + 1) & (cap - 1);
			table[k] = c->name_table[i];
		}
		free(c->name_table);
		c->name_table = table;
		c->name_table_cap = cap;
	}
	uint32_t k = name_hash(str) & (c->name_table_cap - 1);
	for (uint32_t probes = 0; c->name_table[k] && probes < c->name_table_cap; probes++) {
		if (!strcmp(c->name_table[k], str))
			return c->name_table[k];
		k = (k + 1) & (c->name_table_cap - 1);
	}
	if (h->name_count == h->name_cap) {
		uint32_t cap = h->name_cap ? 2 * h->name_cap : 64;
		char **grown = realloc(h->names, cap * sizeof(*grown));
		if (!grown)
			return NULL;
		h->names = grown;
		h->name_cap = cap;
	}
	char *copy = strdup(str);
	if (!copy)
		return NULL;
	h->names[h->name_count++] = copy;
	c->name_table[k] = copy;
	return copy;
}

// The locals of the frame at @frame (a frame object, or 3.11+ the frame inside a generator,
// @inside), whose code object is at @code: each a reference of the object being followed, as
// gc.get_referents() sees it (a cell variable's cell, not what the cell holds).
static void follow_locals(struct census *c, uint64_t frame, uint64_t code, bool inside,
			  enum pyu_heap_frame_kind kind)
{
	struct pyu_locals ls;
	struct pyu_error *err = pyu_frame_locals(c->t, c->l, c->locals_cache, frame, code,
						 PYU_LOCALS_MAX, &ls);
	if (err) {
		add_error(c->h, "the locals of a %s unreadable: %s", pyu_heap_frame_kind_name(kind),
			  pyu_error_message(err));
		pyu_error_destroy(err);
		return;
	}
	const char *owner = NULL;
	if (c->names) {
		uint64_t name = 0;
		char *text = NULL;
		int32_t off = c->l->code.qualname != PYU_NO_FIELD ? c->l->code.qualname
								  : c->l->code.name;
		err = pyu_target_read_u64(c->t, code + (uint64_t)off, &name);
		if (!err)
			err = pyu_read_str(c->t, c->l, name, CODE_NAME_MAX, &text);
		pyu_error_destroy(err);
		owner = intern(c, text ? text : "?");
		free(text);
	}
	for (uint32_t i = 0; i < ls.count && !c->oom; i++) {
		c->via.via = PYU_VIA_LOCAL;
		c->via.n = kind;
		c->via.key = inside;
		c->via.field = c->names ? intern(c, ls.items[i].name) : NULL;
		c->via.owner = owner;
		consider(c, ls.items[i].cell ? ls.items[i].cell : ls.items[i].address);
	}
	c->via.owner = NULL;
	// A class body's (or exec()'s) locals dict; a module body's is its globals.
	if (ls.dict && ls.dict != ls.globals) {
		c->via.via = PYU_VIA_FIELD;
		c->via.field = "f_locals";
		consider(c, ls.dict);
	}
	pyu_locals_clear(&ls);
}

// A generator's, coroutine's or async generator's frame while it has one: <= 3.10 the frame
// object (followed in its turn), 3.11+ the locals of the frame inside it.
static void follow_generator(struct census *c, uint64_t obj, enum pyu_heap_frame_kind kind)
{
	const struct pyu_heap_layout *hl = c->hl;
	uint64_t shift = (uint64_t)(int64_t)c->z.shift;
	struct pyu_error *err = NULL;
	if (hl->gen.iframe != PYU_NO_FIELD && hl->gen.frame_state != PYU_NO_FIELD) {
		uint8_t state = 0;
		uint64_t frame = obj + shift + (uint64_t)hl->gen.iframe, code = 0;
		err = pyu_target_read_u8(c->t, obj + shift + (uint64_t)hl->gen.frame_state, &state);
		if (!err && (int8_t)state >= hl->gen_state_cleared)
			return; // finished: the frame is gone
		if (!err)
			err = pyu_target_read_u64(c->t, frame + (uint64_t)c->l->iframe.code, &code);
		if (!err) {
			code &= ~c->l->stackref_mask;
			follow_locals(c, frame, code, true, kind);
			return;
		}
	} else if (hl->gen.frame != PYU_NO_FIELD) {
		uint64_t frame = 0;
		err = pyu_target_read_u64(c->t, obj + shift + (uint64_t)hl->gen.frame, &frame);
		if (!err) {
			c->via.via = PYU_VIA_FIELD;
			c->via.field = pyu_heap_frame_attr(kind);
			consider(c, frame);
			return;
		}
	}
	if (err) {
		add_error(c->h, "the frame of a %s unreadable: %s", pyu_heap_frame_kind_name(kind),
			  pyu_error_message(err));
		pyu_error_destroy(err);
	}
}

// A frame object's locals, where frames are objects (<= 3.10; 3.11+ frame objects hold no
// locals of their own while their frame runs or is suspended).
static void follow_frame_object(struct census *c, uint64_t obj)
{
	if (c->l->chain != PYU_CHAIN_FRAME_OBJECT)
		return;
	uint64_t code = 0;
	int32_t flags = 0;
	struct pyu_error *err = pyu_target_read_u64(c->t, obj + (uint64_t)c->l->frame.f_code, &code);
	if (!err)
		err = pyu_target_read(c->t, code + (uint64_t)c->l->code.flags, &flags, 4);
	if (err) {
		add_error(c->h, "the code of a frame unreadable: %s", pyu_error_message(err));
		pyu_error_destroy(err);
		return;
	}
	follow_locals(c, obj, code, false, pyu_heap_frame_kind(flags));
}

// Follows what the object at @obj refers to, field by field as the builtin types keep their
// references: the items of tuples and lists, keys and values of dicts, keys of sets, an
// instance's attributes and __slots__, cells, functions, modules, classes, code objects and
// the locals of suspended generators', coroutines' and frame objects' frames.
// Objects of other types are counted but not looked into.
static void follow(struct census *c, uint64_t obj)
{
	uint8_t buf[PYU_SIZE_PREFIX];
	struct pyu_error *err = pyu_target_read(c->t, obj, buf, sizeof(buf));
	if (err) {
		pyu_error_destroy(err);
		return;
	}
	uint64_t type = pyu_get_u64(buf, c->l->ob_type);
	int64_t i = type_index(c, type);
	if (i < 0) {
		if (i == -2)
			c->oom = true;
		return;
	}
	struct pyu_heap_type *ht = &c->h->types[i];
	const struct pyu_size_type *st = &ht->size;
	if (!st->gc && st->refs != PYU_REFS_CODE)
		return; // atoms, and what no traverse reaches into
	// A collector type whose fields the census does not know: a static one, or (3.10+) a
	// class made in C, immutable as classes made by a class statement are not.
	if (st->refs == PYU_REFS_NONE && (!st->heap || (c->s->runtime->version_hex >= 0x030a0000 &&
						       (st->flags & TPFLAGS_IMMUTABLETYPE))))
		ht->unfollowed++;
	if (st->is_type) {
		// tp_flags lies past the prefix read (offset 168 on 3.12): read on its own.
		uint64_t flags = 0;
		err = pyu_target_read_u64(c->t, obj + (uint64_t)c->l->type_tp_flags, &flags);
		bool unreadable = err != NULL;
		pyu_error_destroy(err);
		err = NULL;
		if (unreadable || !(flags & (1ull << 9)))
			return; // a static class: no collector object
	}
	struct pyu_values *v = c->z.v;
	const struct pyu_heap_refs *rf = &c->hl->refs;
	uint64_t size = pyu_get_u64(buf, c->l->ob_size), items;
	(void)obj;
	switch (st->refs) {
	case PYU_REFS_NONE:
		break;
	case PYU_REFS_TUPLE:
		if (size < ITEMS_MAX)
			consider_array(c, obj + (uint64_t)c->l->tuple_item, size);
		break;
	case PYU_REFS_LIST:
		items = pyu_get_u64(buf, c->z.vl->list_item);
		if (size < ITEMS_MAX && items)
			consider_array(c, items, size);
		break;
	case PYU_REFS_DICT:
		err = pyu_dict_foreach(v, obj, visit_pair, c);
		break;
	case PYU_REFS_SET:
		err = pyu_set_foreach(v, obj, visit_one, c);
		break;
	case PYU_REFS_FUNCTION: {
		const struct pyu_value_layout *vl = c->z.vl;
		consider_fields(c, obj, buf, (const int32_t[]){vl->func.name, vl->func.qualname,
			vl->func.code, ref_off(c, rf->func_globals), ref_off(c, rf->func_defaults),
			ref_off(c, rf->func_kwdefaults), ref_off(c, rf->func_closure),
			ref_off(c, rf->func_doc), ref_off(c, rf->func_dict), ref_off(c, rf->func_module),
			ref_off(c, rf->func_annotations), ref_off(c, rf->func_typeparams)},
			(const char *const[]){"__name__", "__qualname__", "__code__", "__globals__",
			"__defaults__", "__kwdefaults__", "__closure__", "__doc__", "__dict__",
			"__module__", "__annotations__", "__type_params__"}, 12);
		break;
	}
	case PYU_REFS_CFUNCTION:
		consider_fields(c, obj, buf, (const int32_t[]){c->z.vl->cfunc.self},
				(const char *const[]){"__self__"}, 1);
		break;
	case PYU_REFS_CELL:
		consider_fields(c, obj, buf, (const int32_t[]){c->z.vl->cell_ref},
				(const char *const[]){"cell_contents"}, 1);
		break;
	case PYU_REFS_MODULE:
		consider_fields(c, obj, buf, (const int32_t[]){c->z.vl->module_dict},
				(const char *const[]){"__dict__"}, 1);
		break;
	case PYU_REFS_TYPE:
		follow_fields(c, obj, (const int32_t[]){c->z.vl->type.dict, c->z.vl->type.mro,
			c->z.vl->type.base, c->z.vl->type.ht_name, c->z.vl->type.ht_qualname,
			ref_off(c, rf->type_bases), ref_off(c, rf->heap_module)},
			(const char *const[]){"__dict__", "__mro__", "__base__", "__name__",
			"__qualname__", "__bases__", "__module__ (of its C module)"}, 7);
		break;
	case PYU_REFS_CODE: {
		const struct pyu_layout *l = c->l;
		follow_fields(c, obj, (const int32_t[]){l->code.filename, l->code.name,
			l->code.qualname, l->code.linetable, l->code.code, l->code.varnames,
			l->code.cellvars, l->code.freevars, l->code.localsplusnames,
			l->code.localspluskinds, ref_off(c, rf->code_consts), ref_off(c, rf->code_names),
			ref_off(c, rf->code_exceptiontable)}, (const char *const[]){"co_filename",
			"co_name", "co_qualname", "co_linetable", "co_code", "co_varnames",
			"co_cellvars", "co_freevars", "co_localsplusnames", "co_localspluskinds",
			"co_consts", "co_names", "co_exceptiontable"}, 13);
		break;
	}
	case PYU_REFS_GENERATOR:
		follow_generator(c, obj, PYU_HEAP_GENERATOR);
		break;
	case PYU_REFS_COROUTINE:
		follow_generator(c, obj, PYU_HEAP_COROUTINE);
		break;
	case PYU_REFS_ASYNC_GEN:
		follow_generator(c, obj, PYU_HEAP_ASYNC_GENERATOR);
		break;
	case PYU_REFS_FRAME:
		follow_frame_object(c, obj);
		break;
	case PYU_REFS_METHOD:
		consider_fields(c, obj, buf, (const int32_t[]){c->z.vl->method.func,
			c->z.vl->method.self, c->z.vl->method.klass}, (const char *const[]){
			"__func__", "__self__", "im_class"}, 3);
		break;
	case PYU_REFS_EXC: {
		const struct pyu_value_layout *vl = c->z.vl;
		// A class's instances keep their dict where tp_dictoffset says: followed below.
		consider_fields(c, obj, buf, (const int32_t[]){st->heap ? -1 : ref_off(c, rf->exc_dict),
			vl->exc_args, vl->exc_traceback, vl->exc.context, vl->exc.cause,
			vl->exc.notes}, (const char *const[]){"__dict__", "args", "__traceback__",
			"__context__", "__cause__", "__notes__"}, 6);
		break;
	}
	case PYU_REFS_TRACEBACK:
		consider_fields(c, obj, buf, (const int32_t[]){c->z.vl->tb.next, c->z.vl->tb.frame},
				(const char *const[]){"tb_next", "tb_frame"}, 2);
		break;
	case PYU_REFS_DESCR:
		consider_fields(c, obj, buf, (const int32_t[]){ref_off(c, rf->descr_type),
			ref_off(c, rf->descr_name), ref_off(c, rf->descr_qualname)},
			(const char *const[]){"__objclass__", "__name__", "__qualname__"}, 3);
		break;
	case PYU_REFS_PROPERTY:
		consider_fields(c, obj, buf, (const int32_t[]){ref_off(c, rf->prop_get),
			ref_off(c, rf->prop_set), ref_off(c, rf->prop_del), ref_off(c, rf->prop_doc),
			ref_off(c, rf->prop_name)}, (const char *const[]){"fget", "fset", "fdel",
			"__doc__", "__name__"}, 5);
		break;
	case PYU_REFS_DEQUE:
		follow_deque(c, obj, buf);
		break;
	case PYU_REFS_CLASSMETHOD:
		consider_fields(c, obj, buf, (const int32_t[]){ref_off(c, rf->cm_callable),
			st->heap ? -1 : ref_off(c, rf->cm_dict)}, (const char *const[]){"__func__",
			"__dict__"}, 2);
		break;
	}
	if (err) {
		add_error(c->h, "a container's table unreadable: %s", pyu_error_message(err));
		pyu_error_destroy(err);
		err = NULL;
	}
	if (st->heap && !st->is_type) {
		uint64_t dict = 0;
		err = pyu_object_dict_address(v, obj, &dict);
		if (!err && dict) {
			c->via.via = PYU_VIA_FIELD;
			c->via.field = "__dict__";
			consider(c, dict);
		}
		else if (!err)
			err = pyu_object_attrs_foreach(v, obj, visit_value, c);
		pyu_error_destroy(err);
		if (!ht->slots_read)
			read_slots(c, ht);
		for (uint32_t r = 0; r < ht->slot_regions; r++)
			scan_words(c, obj, ht->slots[r][0], ht->slots[r][1]);
	}
}

static int more_unfollowed(const void *a, const void *b, void *arg)
{
	const struct pyu_heap_type *t = arg;
	uint64_t x = t[*(const uint32_t *)a].unfollowed, y = t[*(const uint32_t *)b].unfollowed;
	return x != y ? (x < y ? 1 : -1) : 0;
}

#define UNFOLLOWED_NAMED 6 // types named in the line below, the most numerous first

// Says what was left out: how many objects of how many collector types were counted without
// their references being followed (an extension type's, a generator's frame), so that what
// only those hold is known to be missing rather than silently not there.
static void note_unfollowed(struct pyu_heap *h)
{
	uint64_t objects = 0;
	uint32_t types = 0, *order = malloc((h->type_count + 1) * sizeof(*order));
	if (!order)
		return; // advisory
	for (uint32_t i = 0; i < h->type_count; i++) {
		if (!h->types[i].unfollowed)
			continue;
		objects += h->types[i].unfollowed;
		order[types++] = i;
	}
	if (types) {
		qsort_r(order, types, sizeof(*order), more_unfollowed, h->types);
		char line[480];
		int at = snprintf(line, sizeof(line), "not looked into: %" PRIu64 " objects of %u "
				  "types whose references the census cannot follow (what only they "
				  "hold is not counted):", objects, types);
		for (uint32_t i = 0; i < types && i < UNFOLLOWED_NAMED && at > 0 &&
		     (size_t)at < sizeof(line); i++)
			at += snprintf(line + at, sizeof(line) - (size_t)at, "%s %s %" PRIu64,
				       i ? "," : "", h->types[order[i]].name,
				       h->types[order[i]].unfollowed);
		if (types > UNFOLLOWED_NAMED && at > 0 && (size_t)at < sizeof(line))
			snprintf(line + at, sizeof(line) - (size_t)at, ", ...");
		add_source(h, "%s", line);
	}
	free(order);
}

// Follows references from every object counted so far, and from each one found that way.
static void follow_all(struct census *c)
{
	c->following = true;
	for (size_t i = 0; i < c->queue_len && !c->oom && !c->stopped && !c->stop; i++) {
		c->followed = i;
		tick(c);
		c->cur = c->queue[i];
		c->cur_node = (uint32_t)(i + 1);
		follow(c, c->queue[i]);
	}
	c->cur = 0;
	c->cur_node = 0;
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
			uint64_t var = 0;
			gens = pyu_heap_find_generations(c->t, c->l, hl, rt->image, &var);
			if (!gens) {
				add_error(c->h, "no _PyGC_generation0 symbol, and no array of "
					  "generation heads found in the writable data of %s: the "
					  "collector's lists of CPython %s are not known", rt->image,
					  hl->name);
				return true;
			}
			add_source(c->h, "the generation heads found in memory alone: at 0x%" PRIx64
				   ", which the word at 0x%" PRIx64 " (_PyGC_generation0) points at",
				   gens, var);
			return walk_state(c, 0, gens, 0);
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

// Follows the roots of @w as referred to by nothing (cur 0), each one's type made known first:
// a walk from roots alone meets no type on the collector's lists.
static void consider_roots(struct census *c, const struct pyu_heap_walk *w)
{
	for (uint32_t i = 0; i < w->root_count && !c->oom && !c->stopped && !c->stop; i++) {
		uint64_t type = 0;
		struct pyu_error *err = pyu_target_read_u64(c->t, w->roots[i] + (uint64_t)c->l->ob_type,
							    &type);
		if (err) {
			add_error(c->h, "a root unreadable: %s", pyu_error_message(err));
			pyu_error_destroy(err);
			continue;
		}
		if (type && !(type & 7) && type_index(c, type) == -2) {
			c->oom = true;
			return;
		}
		c->cur = 0;
		c->via.via = PYU_VIA_ROOT;
		c->via.n = i;
		consider(c, w->roots[i]);
	}
}

static struct pyu_error *census_run(struct pyu_stacks *s, const struct pyu_heap_walk *w,
				    struct pyu_heap **ret)
{
	uint32_t biggest = w->biggest;
	uint64_t want = w->want;
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
	// A value reader of its own: the census reads every dict and set table, far past the
	// snapshot reader's budget for reprs.
	struct pyu_value_limits lim;
	pyu_value_limits_default(&lim);
	lim.read_budget = UINT64_MAX / 2;
	struct pyu_values *v;
	struct pyu_error *err = pyu_values_create(s->target, rt, &lim, &v);
	if (err)
		return err;
	struct pyu_heap *h = calloc(1, sizeof(*h));
	if (!h) {
		pyu_values_destroy(v);
		return &pyu_error_nomem;
	}
	if (biggest) {
		if (biggest > PYU_HEAP_MAX_BIGGEST)
			biggest = PYU_HEAP_MAX_BIGGEST;
		if (!(h->biggest = calloc(biggest, sizeof(*h->biggest)))) {
			free(h);
			pyu_values_destroy(v);
			return &pyu_error_nomem;
		}
		h->biggest_cap = biggest;
	}
	h->want = want;
	struct census c;
	memset(&c, 0, sizeof(c));
	c.s = s;
	c.t = s->target;
	c.l = &rt->layout;
	c.hl = hl;
	c.h = h;
	c.z.t = s->target;
	c.z.l = &rt->layout;
	c.z.vl = pyu_values_layout(v);
	c.z.hl = hl;
	c.z.v = v;
	c.z.shift = rt->layout.ob_type - 8;
	c.hooks = w->hooks;
	c.names = want != 0;
	c.locals_cache = pyu_locals_cache_create(); // NULL: names read for each frame
	bool direct = pyu_target_direct(c.t, true);
	bool ok = w->roots_only || walk_all(&c);
	h->tracked = w->roots_only ? 0 : h->objects;
	if (ok && !c.oom)
		consider_roots(&c, w);
	if (ok && !c.oom) {
		follow_all(&c);
		if (h->untracked)
			add_source(h, "reached through references of those: %" PRIu64 " objects the "
				   "collector does not track", h->untracked);
		note_unfollowed(h);
	}
	if (ok && !c.oom && c.hooks && c.hooks->done &&
	    !c.hooks->done(c.hooks->arg, h, &c.seen, c.queue, c.queue_len))
		c.stopped = true;
	pyu_addrset_clear(&c.seen);
	pyu_locals_cache_destroy(c.locals_cache);
	free(c.name_table);
	pyu_target_release_views(c.t);
	pyu_target_direct(c.t, direct);
	free(c.queue);
	pyu_values_destroy(v);
	if (!ok || c.oom) {
		pyu_heap_destroy(h);
		return &pyu_error_nomem;
	}
	if (h->biggest_count)
		qsort(h->biggest, h->biggest_count, sizeof(*h->biggest), bigger_first);
	*ret = h;
	return NULL;
}

struct pyu_error *pyu_heap_census(struct pyu_stacks *s, uint32_t biggest,
				  struct pyu_heap **ret)
{
	struct pyu_heap_walk w = {.biggest = biggest};
	return census_run(s, &w, ret);
}

struct pyu_error *pyu_heap_walk(struct pyu_stacks *s, const struct pyu_heap_walk *w,
				struct pyu_heap **ret)
{
	if (!w)
		return pyu_error_create(PYU_ERR_ARGUMENT, "no walk");
	return census_run(s, w, ret);
}

struct pyu_error *pyu_heap_census_referrers(struct pyu_stacks *s, uint64_t want,
					   struct pyu_heap **ret)
{
	if (!want)
		return pyu_error_create(PYU_ERR_ARGUMENT, "no object address");
	struct pyu_heap_walk w = {.want = want};
	return census_run(s, &w, ret);
}
