// code_memo.c - what the code objects of a live process's earlier snapshots held (names, file
// name, first line, bytecode length, a copy of the line table), kept with the interpreter found
// (stacks.c) from one snapshot to the next.
//
// Reading a code object's names and table was most of a small process's snapshot (two reads
// each: the header, then its parts). A code object is immutable in those, but a freed one's
// address is soon taken by a new one, often with its names at the very addresses the old
// one's had (the allocator's free lists give back what was freed last). So a copy is given
// again only when the header, read again in this snapshot, still holds the same co_version
// (3.12+: each new code object of an interpreter takes the next number of its counter, never
// given twice; once the counter runs out every new one gets 0, which is never trusted) and the
// same type, name, qualified name, file name, line table, first line and sizes. Versions
// without co_version keep nothing.
#include "code_memo.h"

#include <stdlib.h>
#include <string.h>

#include "bytes.h"

#define MEMO_SLOTS 8192u            // at most; a power of two
#define MEMO_SLOTS_FIRST 64u        // at first: the table doubles as it fills (a fresh handle's
				    // whole table, zeroed, cost more than its snapshot)
#define MEMO_ENTRIES 4096u          // then the memo starts again, empty
#define MEMO_BYTES (64u << 20)      // of names and tables held; then it starts again, empty
#define MEMO_RECENT 256u            // code objects of a snapshot whose headers are read first
#define MEMO_FIELDS 12
#define MEMO_KEY_MAX (MEMO_FIELDS * 8)

#define MEMO_LOCATIONS 4            // instructions whose location an entry remembers

struct memo_entry {
	uint64_t addr; // 0: an empty slot
	uint8_t key[MEMO_KEY_MAX];
	struct pyu_code_info ci;
	int32_t firsttraceable;
	uint64_t checked; // the snapshot (serial) that last found it the same code object
	// Where some of its instructions are (a table is decoded once for them otherwise): a
	// sampler finds most frames at the instruction they were at before.
	int64_t offsets[MEMO_LOCATIONS];
	struct pyu_location locs[MEMO_LOCATIONS];
	unsigned loc_count, loc_next;
};

struct pyu_code_memo {
	struct memo_entry *slots;
	size_t capacity;               // slots, a power of two <= MEMO_SLOTS
	size_t used;
	uint64_t bytes;
	struct {
		int32_t off, len;
	} fields[MEMO_FIELDS];
	unsigned field_count;
	size_t key_len;
	int32_t version;               // offset of co_version in the header
	uint64_t recent[MEMO_RECENT];  // used by this snapshot
	uint64_t last[MEMO_RECENT];    // used by the one before
	size_t recent_count, last_count;
	uint64_t serial;               // snapshots begun
};

static void add_field(struct pyu_code_memo *m, int32_t off, int32_t len, int32_t size)
{
	if (off == PYU_NO_FIELD || off < 0 || off + len > size || m->field_count >= MEMO_FIELDS)
		return;
	m->fields[m->field_count].off = off;
	m->fields[m->field_count++].len = len;
	m->key_len += (size_t)len;
}

struct pyu_code_memo *pyu_code_memo_create(const struct pyu_layout *l)
{
	int32_t size = l->code.size;
	if (l->code.version == PYU_NO_FIELD || l->code.version < 0 || l->code.version + 4 > size)
		return NULL;
	struct pyu_code_memo *m = calloc(1, sizeof(*m));
	if (!m)
		return NULL;
	m->capacity = MEMO_SLOTS_FIRST;
	m->slots = calloc(m->capacity, sizeof(*m->slots));
	if (!m->slots) {
		free(m);
		return NULL;
	}
	m->version = l->code.version;
	add_field(m, l->code.version, 4, size);
	add_field(m, l->ob_type, 8, size);
	add_field(m, l->code.ob_size, 8, size);
	add_field(m, l->code.name, 8, size);
	add_field(m, l->code.filename, 8, size);
	if (l->has_qualname)
		add_field(m, l->code.qualname, 8, size);
	add_field(m, l->code.linetable, 8, size);
	add_field(m, l->code.code, 8, size);
	add_field(m, l->code.firstlineno, 4, size);
	add_field(m, l->code.firsttraceable, 4, size);
	add_field(m, l->code.framesize, 4, size);
	return m;
}

static void free_info(struct pyu_code_info *ci)
{
	pyu_code_info_free(ci);
}

static void clear_entry(struct memo_entry *e)
{
	free_info(&e->ci);
	memset(e, 0, sizeof(*e));
}

static void clear_all(struct pyu_code_memo *m)
{
	for (size_t i = 0; i < m->capacity; i++)
		if (m->slots[i].addr)
			clear_entry(&m->slots[i]);
	m->used = 0;
	m->bytes = 0;
}

void pyu_code_memo_destroy(struct pyu_code_memo *m)
{
	if (!m)
		return;
	clear_all(m);
	free(m->slots);
	free(m);
}

void pyu_code_memo_begin(struct pyu_code_memo *m)
{
	if (!m)
		return;
	m->serial++;
	memcpy(m->last, m->recent, m->recent_count * sizeof(m->recent[0]));
	m->last_count = m->recent_count;
	m->recent_count = 0;
}

size_t pyu_code_memo_recent(const struct pyu_code_memo *m, uint64_t *addrs, size_t max)
{
	size_t n = m && m->last_count < max ? m->last_count : m ? max : 0;
	if (n)
		memcpy(addrs, m->last, n * sizeof(*addrs));
	return n;
}

static void note_recent(struct pyu_code_memo *m, uint64_t addr)
{
	if (m->recent_count < MEMO_RECENT)
		m->recent[m->recent_count++] = addr;
}

static void make_key(const struct pyu_code_memo *m, const uint8_t *hdr, uint8_t *key)
{
	size_t k = 0;
	for (unsigned i = 0; i < m->field_count; i++) {
		memcpy(key + k, hdr + m->fields[i].off, (size_t)m->fields[i].len);
		k += (size_t)m->fields[i].len;
	}
}

// The slot of @addr in @slots of @capacity, or the empty one where it would go. The table is
// never full (at most half of it used): the probe ends.
static struct memo_entry *probe(struct memo_entry *slots, size_t capacity, uint64_t addr)
{
	size_t i = (size_t)((addr * 0x9e3779b97f4a7c15ull) >> 32) & (capacity - 1);
	for (size_t n = 0; n < capacity; n++, i = (i + 1) & (capacity - 1))
		if (slots[i].addr == addr || slots[i].addr == 0)
			return &slots[i];
	return NULL;
}

static struct memo_entry *slot_of(const struct pyu_code_memo *m, uint64_t addr)
{
	return probe(m->slots, m->capacity, addr);
}

// Doubles the table when one more entry would fill more than half of it (up to MEMO_SLOTS,
// which MEMO_ENTRIES fill half of). False when out of memory (the table as it was).
static bool make_room(struct pyu_code_memo *m)
{
	if ((m->used + 1) * 2 <= m->capacity || m->capacity >= MEMO_SLOTS)
		return true;
	size_t capacity = m->capacity * 2;
	struct memo_entry *slots = calloc(capacity, sizeof(*slots));
	if (!slots)
		return false;
	for (size_t i = 0; i < m->capacity; i++) {
		if (!m->slots[i].addr)
			continue;
		struct memo_entry *e = probe(slots, capacity, m->slots[i].addr);
		if (e) // always: the new table has more room than the old had entries
			*e = m->slots[i];
	}
	free(m->slots);
	m->slots = slots;
	m->capacity = capacity;
	return true;
}

// Copies @s (NULL: none) to *@at, moving it on; the copy, or NULL.
static char *put_str(char **at, const char *s, size_t len)
{
	if (!s)
		return NULL;
	char *d = *at;
	memcpy(d, s, len + 1);
	*at += len + 1;
	return d;
}

// A copy of @src into *@dst, its strings and table in one block of their own (dst->block);
// false when out of memory (nothing left allocated).
static bool copy_info(struct pyu_code_info *dst, const struct pyu_code_info *src)
{
	size_t name = src->name ? strlen(src->name) : 0,
	       qualname = src->qualname ? strlen(src->qualname) : 0,
	       filename = src->filename ? strlen(src->filename) : 0;
	// The table first (bytes, any alignment is fine), then the strings.
	size_t table = src->table ? src->table_len : 0;
	char *block = malloc(table + name + qualname + filename + 3 + 1);
	if (!block)
		return false;
	*dst = *src;
	dst->block = block;
	dst->table = NULL;
	if (src->table) {
		memcpy(block, src->table, table);
		dst->table = (uint8_t *)block;
	}
	char *at = block + table;
	dst->name = put_str(&at, src->name, name);
	dst->qualname = put_str(&at, src->qualname, qualname);
	dst->filename = put_str(&at, src->filename, filename);
	return true;
}

bool pyu_code_memo_get(struct pyu_code_memo *m, uint64_t addr, const uint8_t *hdr,
		       struct pyu_code_info *ci, int32_t *firsttraceable)
{
	if (!m || (uint32_t)pyu_get_i32(hdr, m->version) == 0)
		return false;
	struct memo_entry *e = slot_of(m, addr);
	uint8_t key[MEMO_KEY_MAX];
	make_key(m, hdr, key);
	if (!e || e->addr != addr || memcmp(e->key, key, m->key_len) != 0 ||
	    !copy_info(ci, &e->ci))
		return false;
	*firsttraceable = e->firsttraceable;
	e->checked = m->serial;
	note_recent(m, addr);
	return true;
}

// The entry of @addr when this snapshot found it the same code object; else NULL.
static struct memo_entry *checked_entry(const struct pyu_code_memo *m, uint64_t addr)
{
	struct memo_entry *e = m && addr ? slot_of(m, addr) : NULL;
	return e && e->addr == addr && e->checked == m->serial ? e : NULL;
}

bool pyu_code_memo_locate(const struct pyu_code_memo *m, uint64_t addr, int64_t offset,
			  struct pyu_location *loc)
{
	const struct memo_entry *e = checked_entry(m, addr);
	for (unsigned i = 0; e && i < e->loc_count; i++) {
		if (e->offsets[i] == offset) {
			*loc = e->locs[i];
			return true;
		}
	}
	return false;
}

void pyu_code_memo_note_location(struct pyu_code_memo *m, uint64_t addr, int64_t offset,
				 struct pyu_location loc)
{
	struct memo_entry *e = checked_entry(m, addr);
	if (!e)
		return;
	unsigned i = e->loc_next;
	e->offsets[i] = offset;
	e->locs[i] = loc;
	e->loc_next = (i + 1) % MEMO_LOCATIONS;
	if (e->loc_count < MEMO_LOCATIONS)
		e->loc_count++;
}

static uint64_t held(const struct pyu_code_info *ci)
{
	return ci->table_len + (ci->name ? strlen(ci->name) : 0) +
	       (ci->filename ? strlen(ci->filename) : 0) +
	       (ci->qualname ? strlen(ci->qualname) : 0);
}

void pyu_code_memo_put(struct pyu_code_memo *m, uint64_t addr, const uint8_t *hdr,
		       const struct pyu_code_info *ci, int32_t firsttraceable)
{
	if (!m || addr == 0 || (uint32_t)pyu_get_i32(hdr, m->version) == 0)
		return;
	uint64_t size = held(ci);
	struct pyu_code_info copy;
	// The copy first: an entry cleared and then left empty would cut the probe sequences
	// that run through its slot.
	if (size > MEMO_BYTES || !copy_info(&copy, ci))
		return;
	struct memo_entry *e = slot_of(m, addr);
	if (e && e->addr) { // a new code object where a kept one was: its slot, refilled below
		m->bytes -= held(&e->ci);
		clear_entry(e);
		m->used--;
	}
	if (m->used >= MEMO_ENTRIES || m->bytes + size > MEMO_BYTES)
		clear_all(m); // bounded: start again
	// A refilled slot needs no room (used was counted with it); otherwise the table grows
	// before the slot is looked for again.
	if (!make_room(m) || (e = slot_of(m, addr)) == NULL) {
		free_info(&copy);
		return;
	}
	e->addr = addr;
	make_key(m, hdr, e->key);
	e->ci = copy;
	e->firsttraceable = firsttraceable;
	e->checked = m->serial;
	m->used++;
	m->bytes += size;
	note_recent(m, addr);
}
