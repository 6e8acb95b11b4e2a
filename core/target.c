// target.c - the address space every backend shares: checked reads through a direct-mapped
// page cache, the sorted mapping list, thread ids, path maps, and the callback backend.
// It does not know how a process or a core is read; target_proc.c and target_core.c fill in a
// backend read function and the mappings.
#include "bytes.h"
#include "target_impl.h"

#include "elf.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static char *dup_str(const char *s)
{
	size_t n = strlen(s) + 1;
	char *r = malloc(n);
	if (r)
		memcpy(r, s, n);
	return r;
}

struct pyu_error *pyu_target_create(pyu_backend_read_fn read,
				    void (*destroy)(struct pyu_target *t), void *data,
				    const char *source, struct pyu_target **ret)
{
	struct pyu_target *t = calloc(1, sizeof(*t));
	if (!t)
		return &pyu_error_nomem;
	t->source = source;
	t->backend_read = read;
	t->backend_destroy = destroy;
	t->backend_data = data;
	t->core_fd = -1;
	t->arch = pyu_arch_host();
	t->span_gap = (uint64_t)PYU_SPAN_GAP_PAGES * PYU_PAGE_SIZE;
	t->sector_size = PYU_PAGE_SIZE;
	for (unsigned i = 0; i < PYU_FILE_CACHE; i++)
		t->files[i].fd = -1;
	*ret = t;
	return NULL;
}

static void close_files(struct pyu_target *t)
{
	for (unsigned i = 0; i < PYU_FILE_CACHE; i++) {
		if (t->files[i].path) {
			close(t->files[i].fd);
			free(t->files[i].path);
			t->files[i].path = NULL;
			t->files[i].fd = -1;
		}
	}
}

// ---- buffers kept between targets -------------------------------------------------------

// The page cache (8 MiB) and the readahead buffer of a target, kept when it is destroyed for
// the next one: made anew, each came from mmap and faulted in every page a snapshot used (a
// fresh handle of a 2-thread process: 42 page faults and about 0.2 ms of system time, more
// than the rest of its snapshot). One of each is kept; what is in it is never trusted (a
// target starts with every slot empty).
static _Atomic(void *) spare_cache, spare_readahead;

static void *take_buffer(_Atomic(void *) *spare, size_t size)
{
	void *p = atomic_exchange(spare, NULL);
	return p ? p : aligned_alloc(PYU_PAGE_SIZE, size);
}

static void keep_buffer(_Atomic(void *) *spare, void *p)
{
	void *none = NULL;
	if (p && !atomic_compare_exchange_strong(spare, &none, p))
		free(p);
}

// What the last snapshot of a live process read (its walk's bytes, pyu_target_note_used_pages),
// kept when its target is destroyed, for the next target opened on the same process (the same
// pid running the same executable file): a sampler that opens a fresh handle per snapshot
// then reads those bytes first in a few gathered reads, as a reused handle's next snapshot
// does, instead of one dependent read after another as its walk finds them (3.15, one thread
// 1,000 deep: 12 reads). A hint only, like a reused handle's: every byte is read from the
// process now; what moved is missed and read as ever, and a process that is another one by
// now (a pid used again) only costs the reads.
static pthread_mutex_t spare_uses_lock = PTHREAD_MUTEX_INITIALIZER;
// The pages read after the walk (names, values) are kept too, and read by the next handle in
// one gathered read when it first reads a value (3.15, a 1,000-deep thread's name: 27 reads).
static struct {
	int32_t pid; // 0: none kept
	struct pyu_file_id exe;
	struct pyu_page_use *uses; // PYU_USES_MAX entries' room
	unsigned count;
	uint64_t *late; // PYU_LATE_MAX entries' room
	unsigned late_count;
} spare_uses;

static void note_late_pages(struct pyu_target *t);

static void keep_uses(struct pyu_target *t)
{
	if (t->live_pid <= 0 || !t->exe_id_known || !t->uses || t->use_count == 0 ||
	    t->recording)
		return;
	note_late_pages(t);
	pthread_mutex_lock(&spare_uses_lock);
	struct pyu_page_use *old = spare_uses.uses;
	uint64_t *old_late = spare_uses.late;
	spare_uses.pid = t->live_pid;
	spare_uses.exe = t->exe_id;
	spare_uses.uses = t->uses;
	spare_uses.count = t->use_count;
	spare_uses.late = t->late;
	spare_uses.late_count = t->late ? t->late_count : 0;
	pthread_mutex_unlock(&spare_uses_lock);
	t->uses = old; // freed by the caller
	t->late = old_late;
}

// The uses kept from the last target of @t's process into t->uses; false when none.
static bool take_uses(struct pyu_target *t)
{
	bool taken = false;
	if (t->live_pid <= 0 || !t->exe_id_known)
		return false;
	pthread_mutex_lock(&spare_uses_lock);
	if (spare_uses.pid == t->live_pid && spare_uses.uses &&
	    pyu_file_id_equal(&spare_uses.exe, &t->exe_id)) {
		struct pyu_page_use *mine = t->uses;
		t->uses = spare_uses.uses;
		t->use_count = spare_uses.count;
		spare_uses.uses = mine; // room for the next one kept (or NULL)
		uint64_t *late = t->late_hint;
		t->late_hint = spare_uses.late;
		t->late_hint_count = spare_uses.late ? spare_uses.late_count : 0;
		spare_uses.late = late;
		spare_uses.late_count = 0;
		spare_uses.pid = 0;
		taken = true;
	}
	pthread_mutex_unlock(&spare_uses_lock);
	return taken;
}

PYU_PUBLIC void pyu_target_destroy(struct pyu_target *t)
{
	if (!t)
		return;
	keep_uses(t);
	pyu_target_keep(t, NULL, NULL);
	if (t->backend_destroy)
		t->backend_destroy(t);
	for (size_t i = 0; i < t->mapping_count; i++) {
		free(t->mappings[i].path);
		free(t->mappings[i].local_path);
	}
	free(t->mappings);
	free(t->threads);
	free(t->listed);
	free(t->statuses);
	for (size_t i = 0; i < t->path_map_count; i++) {
		free(t->path_maps[i].from);
		free(t->path_maps[i].to);
	}
	free(t->path_maps);
	free(t->sysroot);
	free(t->cwd);
	for (size_t i = 0; i < t->search_dir_count; i++)
		free(t->search_dirs[i]);
	free(t->search_dirs);
	free(t->exe_target_path);
	free(t->exe_local_path);
	free(t->cache_addr);
	free(t->cache_used);
	free(t->cache_valid);
	free(t->cache_touched);
	free(t->live_slots);
	keep_buffer(&spare_cache, t->cache_data);
	free(t->uses);
	free(t->late);
	free(t->late_hint);
	keep_buffer(&spare_readahead, t->readahead);
	free(t->read_log);
	free(t->notice);
	close_files(t);
	for (size_t i = 0; i < t->file_check_count; i++) {
		free(t->file_checks[i].path);
		free(t->file_checks[i].local_path);
	}
	free(t->file_checks);
	free(t);
}

// ---- reads ---------------------------------------------------------------------------------

// A hash of @len bytes at @p: equal bytes, equal hash; a change of any byte changes it but
// for a chance of 2^-64. Eight bytes a step.
static uint64_t bytes_hash(const unsigned char *p, uint64_t len)
{
	uint64_t h = 0x9e3779b97f4a7c15u ^ len;
	uint64_t i = 0;
	for (; i + 8 <= len; i += 8) {
		uint64_t w;
		memcpy(&w, p + i, 8);
		h = (h ^ w) * 0xff51afd7ed558ccdu;
		h ^= h >> 32;
	}
	for (; i < len; i++)
		h = (h ^ p[i]) * 0x100000001b3u;
	return h ^ (h >> 29);
}

// Remembers a backend read for pyu_target_memory_changed() while tracking is on.
static void log_read(struct pyu_target *t, uint64_t addr, const void *data, uint64_t len)
{
	if (!t->read_log_on || t->read_log_full || len == 0)
		return;
	if (t->read_log_count == PYU_READ_LOG_MAX || len > PYU_READ_LOG_BYTES - t->read_log_bytes) {
		t->read_log_full = true;
		return;
	}
	if (t->read_log_count == t->read_log_cap) {
		size_t cap = t->read_log_cap ? t->read_log_cap * 2 : 256;
		struct pyu_read_record *l = realloc(t->read_log, cap * sizeof(*l));
		if (!l) {
			t->read_log_full = true; // cannot remember it: assume any change
			return;
		}
		t->read_log = l;
		t->read_log_cap = cap;
	}
	t->read_log[t->read_log_count++] = (struct pyu_read_record){
		.addr = addr, .len = len, .hash = bytes_hash(data, len)};
	t->read_log_bytes += len;
}

// One backend read, counted.
static uint64_t backend_read(struct pyu_target *t, uint64_t addr, void *buf, uint64_t len)
{
	t->backend_reads++;
	uint64_t n = t->backend_read(t, addr, buf, len);
	if (n > len)
		n = len; // a backend claiming more than asked is not trusted
	log_read(t, addr, buf, n);
	return n;
}

// Whether reads go to the backend's view first (pyu_target_direct(), or a backend that reads
// in place); then prefetches into the page cache are of no use.
static bool viewed(const struct pyu_target *t)
{
	return t->backend_view && (t->direct || (t->in_place && !t->read_log_on));
}

PYU_PUBLIC void pyu_target_track_reads(struct pyu_target *t)
{
	if (!t)
		return;
	t->read_log_on = true;
	t->read_log_full = false;
	t->read_log_count = 0;
	t->read_log_bytes = 0;
}

PYU_PUBLIC struct pyu_error *pyu_target_memory_changed(struct pyu_target *t, uint32_t *ret)
{
	if (!t || !ret)
		return pyu_error_create(PYU_ERR_ARGUMENT, "no target");
	if (!t->read_log_on)
		return pyu_error_create(PYU_ERR_ARGUMENT, "the target does not track its reads "
					"(pyu_target_track_reads)");
	if (t->read_log_full) {
		*ret = 1;
		return NULL;
	}
	uint64_t longest = 0;
	for (size_t i = 0; i < t->read_log_count; i++)
		if (t->read_log[i].len > longest)
			longest = t->read_log[i].len;
	unsigned char *buf = longest ? malloc((size_t)longest) : NULL;
	if (longest && !buf)
		return &pyu_error_nomem;
	uint32_t changed = 0;
	for (size_t i = 0; i < t->read_log_count && !changed; i++) {
		const struct pyu_read_record *r = &t->read_log[i];
		t->backend_reads++;
		uint64_t n = t->backend_read(t, r->addr, buf, r->len);
		changed = n != r->len || bytes_hash(buf, r->len) != r->hash;
	}
	free(buf);
	*ret = changed;
	return NULL;
}

#define PYU_NO_PAGE 1 // never a page address (those are page-aligned)
#define PYU_RESERVED 3 // a slot being filled by a gathered read: neither free nor a page
#define PYU_ALL_SECTORS UINT64_MAX // a page read whole: every unit
_Static_assert(PYU_PAGE_SIZE / PYU_UNIT == 64, "a slot's masks have a bit per unit");

// The units of a page that [@off, @off + @len) touches (@len > 0, inside the page).
static uint64_t unit_mask(size_t off, size_t len)
{
	unsigned first = (unsigned)(off / PYU_UNIT), last = (unsigned)((off + len - 1) / PYU_UNIT);
	return (UINT64_MAX >> (63 - last)) & (UINT64_MAX << first);
}

// Keeps what the walk read of slot @sl (about to be given up) for the next snapshot.
static void note_slot(struct pyu_target *t, unsigned sl)
{
	uint64_t page = t->cache_addr[sl];
	if (!t->recording || !t->cache_touched[sl] || page == PYU_NO_PAGE || page == PYU_RESERVED)
		return;
	if (t->uses && t->use_count < PYU_USES_MAX) // more: the rest is read as the walk goes
		t->uses[t->use_count++] = (struct pyu_page_use){page, t->cache_touched[sl]};
	t->cache_touched[sl] = 0;
}

// The pages read since the walk ended (touched while late_recording), into t->late.
static void note_late_pages(struct pyu_target *t)
{
	t->late_count = 0;
	if (!t->late_recording || !t->cache_addr ||
	    (!t->late && !(t->late = malloc(PYU_LATE_MAX * sizeof(*t->late)))))
		return;
	for (unsigned i = 0; i < t->live_count && t->late_count < PYU_LATE_MAX; i++) {
		unsigned sl = t->live_slots[i];
		uint64_t page = t->cache_addr[sl];
		if (t->cache_touched[sl] && page != PYU_NO_PAGE && page != PYU_RESERVED)
			t->late[t->late_count++] = page;
	}
}

void pyu_target_flush_cache(struct pyu_target *t)
{
	if (t->cache_addr) {
		// Only the slots filled since the last flush hold a page (victim_slot lists them).
		for (unsigned i = 0; i < t->live_count; i++) {
			unsigned sl = t->live_slots[i];
			note_slot(t, sl);
			t->cache_addr[sl] = PYU_NO_PAGE;
		}
		t->live_count = 0;
		t->flush_clock = t->cache_clock;
	}
	memset(t->streams, 0, sizeof(t->streams));
}

void pyu_target_note_used_pages(struct pyu_target *t)
{
	for (unsigned i = 0; t->cache_addr && i < t->live_count; i++)
		note_slot(t, t->live_slots[i]);
	// A fresh handle's pages read from here on are kept for the next one (keep_uses): their
	// reads are marked (cache_touched, which note_slot has just cleared) but not noted.
	t->late_recording = t->recording && t->snapshots == 1 && t->live_pid > 0;
	t->recording = false;
}

static void gather_uses(struct pyu_target *t, struct pyu_page_use *uses, unsigned n);
static bool cache_alloc(struct pyu_target *t);
static void prefetch_gathered(struct pyu_target *t, const uint64_t *addrs, const uint64_t *lens,
			      size_t n, uint64_t size, uint64_t max_pages);

void pyu_target_prefetch_late(struct pyu_target *t)
{
	if (!t || !t->late_hint_count || !t->late_hint || viewed(t))
		return;
	unsigned n = t->late_hint_count;
	t->late_hint_count = 0; // once
	if (cache_alloc(t))
		prefetch_gathered(t, t->late_hint, NULL, n, PYU_PAGE_SIZE, UINT64_MAX);
}

void pyu_target_begin_snapshot(struct pyu_target *t)
{
	if (t->backend_begin)
		t->backend_begin(t);
	t->late_hint_count = 0; // a fresh handle's first snapshot's alone (take_uses)
	// What the first snapshot read after its walk is not this one's walk.
	for (unsigned i = 0; t->late_recording && t->cache_addr && i < t->live_count; i++)
		t->cache_touched[t->live_slots[i]] = 0;
	t->late_recording = false;
	if (t->changes && t->snapshots > 0) {
		// A process sampled again and again keeps its structures where they were: the
		// bytes the last snapshot's walk read (pyu_target_note_used_pages) are read again
		// first, in a few gathered reads, rather than one read at a time as the walk
		// misses them, and rather than their whole pages. A hint only: what the walk
		// needs that is not among them (what moved, what grew) is missed and read as
		// ever, a piece no longer there is left out.
		// Nothing is recorded from here on (note_slot), so the list is read in place.
		pyu_target_note_used_pages(t);
		pyu_target_flush_cache(t);
		if (t->refresh)
			t->refresh(t);
		gather_uses(t, t->uses, t->use_count);
	} else if (t->changes && t->snapshots == 0 && t->backend_gather && cache_alloc(t) &&
		   take_uses(t)) {
		gather_uses(t, t->uses, t->use_count); // a fresh handle: its process's last one
	}
	t->use_count = 0;
	t->recording = t->changes && t->backend_gather && cache_alloc(t);
	t->snapshots++;
}

void pyu_target_keep(struct pyu_target *t, void *block, void (*free_fn)(void *))
{
	if (t->kept && t->kept_free)
		t->kept_free(t->kept);
	t->kept = block;
	t->kept_free = free_fn;
}

void *pyu_target_kept(const struct pyu_target *t)
{
	return t->kept;
}

uint64_t pyu_target_snapshot(const struct pyu_target *t)
{
	return t->snapshots;
}

bool pyu_target_changes(const struct pyu_target *t)
{
	return t->changes;
}

static bool cache_alloc(struct pyu_target *t)
{
	if (t->cache_addr)
		return true;
	t->cache_addr = malloc(PYU_CACHE_PAGES * sizeof(*t->cache_addr));
	t->cache_used = malloc(PYU_CACHE_PAGES * sizeof(*t->cache_used));
	t->cache_valid = malloc(PYU_CACHE_PAGES * sizeof(*t->cache_valid));
	t->cache_touched = malloc(PYU_CACHE_PAGES * sizeof(*t->cache_touched));
	t->live_slots = malloc(PYU_CACHE_PAGES * sizeof(*t->live_slots));
	// Page-aligned: the kernel copies a page into a misaligned buffer up to 4x slower (a
	// gathered read of 40 pages: 130 us instead of 33 on an AMD EPYC).
	t->cache_data = take_buffer(&spare_cache, (size_t)PYU_CACHE_PAGES * PYU_PAGE_SIZE);
	if (!t->cache_addr || !t->cache_used || !t->cache_valid || !t->cache_touched ||
	    !t->live_slots || !t->cache_data || (t->changes && t->backend_gather && !t->uses &&
			       !(t->uses = malloc(PYU_USES_MAX * sizeof(*t->uses))))) {
		free(t->cache_addr);
		free(t->cache_used);
		free(t->cache_valid);
		free(t->cache_touched);
		free(t->live_slots);
		free(t->cache_data);
		t->cache_addr = NULL;
		t->cache_used = NULL;
		t->cache_valid = NULL;
		t->cache_touched = NULL;
		t->live_slots = NULL;
		t->cache_data = NULL;
		return false;
	}
	for (unsigned i = 0; i < PYU_CACHE_PAGES; i++) {
		t->cache_addr[i] = PYU_NO_PAGE;
		t->cache_used[i] = 0;
		t->cache_valid[i] = 0;
		t->cache_touched[i] = 0;
	}
	t->live_count = 0;
	t->flush_clock = t->cache_clock;
	return true;
}

// The first slot of @page's set. Sets are chosen by a multiplicative hash of the page number:
// stacks and chunks a fixed stride apart (threads' stacks 8 MiB + a page apart, data-stack
// chunks 16 KiB apart) would otherwise crowd into the same few sets.
static unsigned set_of(uint64_t page)
{
	uint64_t h = (page / PYU_PAGE_SIZE) * UINT64_C(0x9e3779b97f4a7c15);
	return (unsigned)(h >> 32) % (PYU_CACHE_PAGES / PYU_CACHE_WAYS) * PYU_CACHE_WAYS;
}

// The slot holding @page, or -1. The slot found last is looked at first (a walk reads a page
// many times in a row); it is remembered in the target's cache state, hence the cast.
static int find_slot(const struct pyu_target *t, uint64_t page)
{
	unsigned last = t->last_slot;
	if (t->cache_addr[last] == page)
		return (int)last;
	unsigned set = set_of(page);
	for (unsigned w = 0; w < PYU_CACHE_WAYS; w++)
		if (t->cache_addr[set + w] == page) {
			((struct pyu_target *)t)->last_slot = set + w;
			return (int)(set + w);
		}
	return -1;
}


// Whether slot @sl holds the bytes [@off, @off + @len) of its page (@len > 0, inside it).
static bool slot_covers(const struct pyu_target *t, int sl, size_t off, size_t len)
{
	uint64_t v = t->cache_valid[sl];
	if (v == PYU_ALL_SECTORS)
		return true;
	uint64_t want = unit_mask(off, len);
	return (v & want) == want;
}

// Whether a prefetch may leave @page out: it is in the cache whole or, while a walk is
// recorded, in part (the pieces the last walk read of it, gathered as the snapshot began: what
// else the walk needs there is missed and read). After the walk, reads of other things (thread
// names, values) have their pages read whole.
static bool held(const struct pyu_target *t, uint64_t page)
{
	int sl = find_slot(t, page);
	return sl >= 0 && (t->cache_valid[sl] == PYU_ALL_SECTORS ||
			   (t->recording && t->cache_valid[sl] != 0));
}

// Copies [@off, @off + @len) of slot @sl's page to @buf (the slot holds them), noting them
// as read while a walk is recorded.
static void copy_out(struct pyu_target *t, int sl, size_t off, unsigned char *buf, size_t len)
{
	memcpy(buf, t->cache_data + (size_t)sl * PYU_PAGE_SIZE + off, len);
	if (t->recording || t->late_recording)
		t->cache_touched[sl] |= unit_mask(off, len);
}

// Whether @page is in the cache whole (a page with sectors missing is not).
static bool cached(const struct pyu_target *t, uint64_t page)
{
	int sl = find_slot(t, page);
	return sl >= 0 && t->cache_valid[sl] == PYU_ALL_SECTORS;
}


// The slot to put @page in: its own if cached, else a free way of its set, else the way used
// longest ago; never a way a gathered read in progress has reserved (-1 when all of them
// are). The slot is marked used now and emptied (the caller fills it); what a recorded walk
// read of the page it held is kept (note_slot), of @page's own slot carried on.
static int victim_slot(struct pyu_target *t, uint64_t page)
{
	int best = find_slot(t, page);
	unsigned set = set_of(page);
	for (unsigned w = 0, own = best >= 0; !own && w < PYU_CACHE_WAYS; w++) {
		unsigned s = set + w;
		if (t->cache_addr[s] == PYU_RESERVED)
			continue;
		if (t->cache_addr[s] == PYU_NO_PAGE) {
			best = (int)s;
			break;
		}
		if (best < 0 || t->cache_used[s] < t->cache_used[best])
			best = (int)s;
	}
	if (best < 0)
		return -1;
	if (t->cache_addr[best] != page)
		note_slot(t, (unsigned)best);
	t->cache_touched[best] = t->cache_addr[best] == page ? t->cache_touched[best] : 0;
	t->cache_addr[best] = PYU_NO_PAGE;
	t->cache_valid[best] = 0;
	// A slot first used since the flush is listed, once (its cache_used is past flush_clock
	// from here on): at most every slot.
	if (t->cache_used[best] <= t->flush_clock && t->live_count < PYU_CACHE_PAGES)
		t->live_slots[t->live_count++] = (unsigned)best;
	t->cache_used[best] = ++t->cache_clock;
	return best;
}

// Puts the page at @src (page @page of the target) into the cache.
static void install_page(struct pyu_target *t, uint64_t page, const unsigned char *src)
{
	int sl = victim_slot(t, page);
	if (sl < 0)
		return;
	memcpy(t->cache_data + (size_t)sl * PYU_PAGE_SIZE, src, PYU_PAGE_SIZE);
	t->cache_addr[sl] = page;
	t->cache_valid[sl] = PYU_ALL_SECTORS;
}

// The buffer a backend read of up to PYU_READAHEAD_MAX pages goes through, made on first use;
// NULL when out of memory.
static unsigned char *readahead_buffer(struct pyu_target *t)
{
	if (!t->readahead)
		t->readahead = take_buffer(&spare_readahead, // page-aligned, as cache_data
					   (size_t)PYU_READAHEAD_MAX * PYU_PAGE_SIZE);
	return t->readahead;
}

// Whether the sector holding @addr is cached.
static bool sector_cached(const struct pyu_target *t, uint64_t addr)
{
	uint64_t page = addr & ~(uint64_t)(PYU_PAGE_SIZE - 1);
	int sl = find_slot(t, page);
	return sl >= 0 && slot_covers(t, sl, (size_t)(addr - page), 1);
}

// Puts the sector-aligned bytes [@addr, @addr + @len) at @src into the cache, marking their
// sectors in each page's slot (other sectors of a page already cached stay).
static void install_sectors(struct pyu_target *t, uint64_t addr, const unsigned char *src,
			    uint64_t len)
{
	while (len > 0) {
		uint64_t page = addr & ~(uint64_t)(PYU_PAGE_SIZE - 1);
		size_t off = (size_t)(addr - page);
		size_t n = PYU_PAGE_SIZE - off < len ? PYU_PAGE_SIZE - off : (size_t)len;
		int sl = find_slot(t, page);
		if (sl >= 0) {
			t->cache_used[sl] = ++t->cache_clock;
		} else {
			sl = victim_slot(t, page);
			if (sl < 0)
				return;
			t->cache_addr[sl] = page;
		}
		memcpy(t->cache_data + (size_t)sl * PYU_PAGE_SIZE + off, src, n);
		t->cache_valid[sl] |= unit_mask(off, n);
		addr += n;
		src += n;
		len -= n;
	}
}

// Reads the sector-aligned [@start, @start + @len) (at most PYU_READAHEAD_MAX pages), but for
// the sectors cached already at either end, in one backend read into the cache. Returns
// whether all of it is cached now.
static bool fill_sectors(struct pyu_target *t, uint64_t start, uint64_t len)
{
	const uint64_t s = t->sector_size;
	while (len > 0 && sector_cached(t, start))
		start += s, len -= s;
	while (len > 0 && sector_cached(t, start + len - s))
		len -= s;
	if (len == 0)
		return true;
	if (!readahead_buffer(t) || len > (uint64_t)PYU_READAHEAD_MAX * PYU_PAGE_SIZE)
		return false;
	uint64_t got = backend_read(t, start, t->readahead, len);
	got -= got % s;
	install_sectors(t, start, t->readahead, got);
	return got == len;
}

static const struct pyu_mapping *find_known_mapping(const struct pyu_target *t, uint64_t addr);

// The mapping that bounds a read of the page cache around @addr. Without the rest of a map a
// live open read only the start of (maps_partial): a read it does not bound is only bounded
// by its own size, and reading the whole map for it would cost a fresh handle more than the
// walk.
static const struct pyu_mapping *page_mapping(const struct pyu_target *t, uint64_t addr)
{
	return t->maps_partial ? find_known_mapping(t, addr) : pyu_target_find_mapping(t, addr);
}

// page_mapping() for a readahead down from @addr, the @run'th miss of a run down (-1: the
// second page), which stays inside a known mapping only. A live open that took the
// executable's lines kept from an earlier one (target_proc.c) read none of the map: its start
// is read the first time this finds no mapping for an address it may hold, the brk heap's (a
// read up from an address needs no mapping: it stops where memory does), once the run is
// three pages long: reading it costs as much as ten page reads, and two pages down are mostly
// a pair of objects (a thread name's type below its object: a fresh handle's JSON of one
// thread), not a walk down. The start of the map is its lowest addresses: the executable's,
// then the heap's, which begins at most 32 MiB past them (1 GiB on AArch64); mmap's area is
// terabytes above.
#define MAP_START_REACH (1ull << 40)
#define MAP_START_RUN (-2)
static const struct pyu_mapping *page_mapping_below(struct pyu_target *t, uint64_t addr,
						    int run)
{
	const struct pyu_mapping *m = page_mapping(t, addr);
	if (!m && run <= MAP_START_RUN && t->maps_partial && t->read_map_start &&
	    t->mapping_count > 0 &&
	    addr < t->mappings[t->mapping_count - 1].end + MAP_START_REACH) {
		void (*read_map_start)(struct pyu_target *) = t->read_map_start;
		t->read_map_start = NULL;
		read_map_start(t);
		m = find_known_mapping(t, addr);
	}
	return m;
}

// After a miss on @page, how many pages to read and from where: consecutive misses (a walk
// through contiguous memory, either way) double the window, kept inside @page's mapping when
// the target declares mappings, since a read starting on an unmapped page fails whole.
static uint64_t readahead_window(struct pyu_target *t, uint64_t page, unsigned *pages)
{
	struct pyu_miss_stream *st = NULL;
	int run = 0;
	for (unsigned i = 0; i < PYU_READAHEAD_STREAMS && !st; i++) {
		struct pyu_miss_stream *c = &t->streams[i];
		if (c->run >= 0 && page == c->last + PYU_PAGE_SIZE)
			st = c, run = c->run + 1;
		else if (c->run <= 0 && page + PYU_PAGE_SIZE == c->last)
			st = c, run = c->run - 1;
	}
	if (!st) {
		st = &t->streams[t->next_stream];
		t->next_stream = (t->next_stream + 1) % PYU_READAHEAD_STREAMS;
	}
	st->run = run;
	st->last = page;
	unsigned n = 1;
	for (int k = run < 0 ? -run : run; k > 0 && n < PYU_READAHEAD_MAX; k--)
		n *= 2;
	if (n == 1)
		return page;
	const struct pyu_mapping *m = run < 0 ? page_mapping_below(t, page, run)
					      : page_mapping(t, page);
	uint64_t lo = m ? m->start & ~(uint64_t)(PYU_PAGE_SIZE - 1) : page;
	uint64_t hi = m ? m->end : page + (uint64_t)n * PYU_PAGE_SIZE;
	if (hi < page + PYU_PAGE_SIZE)
		hi = page + PYU_PAGE_SIZE;
	uint64_t start = page;
	if (run < 0) {
		// Down: the pages below come next (only with a known mapping to stay inside).
		uint64_t room = (page - lo) / PYU_PAGE_SIZE;
		start = page - (uint64_t)(n - 1 < room ? n - 1 : room) * PYU_PAGE_SIZE;
		st->last = start; // the next miss of this stream is the page below the window
	}
	uint64_t room_up = (hi - start) / PYU_PAGE_SIZE;
	if (room_up < n)
		n = (unsigned)room_up;
	// Pages already in the cache at either end are not read again.
	while (n > 1 && start != page && cached(t, start))
		start += PYU_PAGE_SIZE, n--;
	while (n > 1 && start + (uint64_t)(n - 1) * PYU_PAGE_SIZE != page &&
	       cached(t, start + (uint64_t)(n - 1) * PYU_PAGE_SIZE))
		n--;
	if (run > 0)
		st->last = start + (uint64_t)(n - 1) * PYU_PAGE_SIZE;
	*pages = n;
	return start;
}

// Reads the @n pages at @pages (page addresses, none in the cache, no repeats) in gathered
// backend reads, straight into cache slots. A page that cannot be read, or whose set has
// every way taken by this read already, is left out. Returns the number of pages read.
static uint64_t fill_pages_gathered(struct pyu_target *t, const uint64_t *pages, unsigned n)
{
	unsigned char *outs[PYU_GATHER_PAGES];
	unsigned slots[PYU_GATHER_PAGES];
	uint64_t want[PYU_GATHER_PAGES];
	uint32_t lens[PYU_GATHER_PAGES];
	if (n > PYU_GATHER_PAGES)
		return 0;
	// Every slot first, reserved so that no other page of this read takes it.
	unsigned m = 0;
	for (unsigned k = 0; k < n; k++) {
		int sl = victim_slot(t, pages[k]);
		if (sl < 0)
			continue;
		t->cache_addr[sl] = PYU_RESERVED;
		slots[m] = (unsigned)sl;
		want[m] = pages[k];
		lens[m] = PYU_PAGE_SIZE;
		outs[m++] = t->cache_data + (size_t)sl * PYU_PAGE_SIZE;
	}
	uint64_t total = 0;
	for (unsigned i = 0; i < m;) {
		t->backend_reads++; // one system call, however many pieces
		uint64_t got = t->backend_gather(t, want + i, lens + i, m - i, outs + i);
		if (got > m - i)
			got = 0;
		for (unsigned k = 0; k < got; k++) {
			t->cache_addr[slots[i + k]] = want[i + k];
			t->cache_valid[slots[i + k]] = PYU_ALL_SECTORS;
			log_read(t, want[i + k], outs[i + k], PYU_PAGE_SIZE);
		}
		if (i + got < m) // the page the gather stopped at
			t->cache_addr[slots[i + got]] = PYU_NO_PAGE;
		total += got;
		i += (unsigned)got + 1;
	}
	return total;
}

static int compare_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return x < y ? -1 : x > y;
}

#define PYU_GATHER_FAILS 8u // pieces a gathering may find unreadable before it gives up

// The pieces of one gathered read of used units: where, how long, into which slot's bytes.
struct use_pieces {
	uint64_t addrs[PYU_GATHER_MAX];
	uint32_t lens[PYU_GATHER_MAX];
	unsigned char *outs[PYU_GATHER_MAX];
	uint64_t units[PYU_GATHER_MAX];
	unsigned slots[PYU_GATHER_MAX];
	unsigned n, fails;
};

// Reads the pieces of @p, as few backend reads as they allow (a piece that cannot be read is
// left out with the rest of its page, the read going on after it), and marks what was read
// valid in its slot. Empties @p.
static void read_use_pieces(struct pyu_target *t, struct use_pieces *p)
{
	for (unsigned i = 0; i < p->n && p->fails < PYU_GATHER_FAILS;) {
		t->backend_reads++; // one system call, however many pieces
		uint64_t got = t->backend_gather(t, p->addrs + i, p->lens + i, p->n - i, p->outs + i);
		if (got > p->n - i)
			got = 0;
		for (unsigned k = i; k < i + got; k++) {
			t->cache_valid[p->slots[k]] |= p->units[k];
			log_read(t, p->addrs[k], p->outs[k], p->lens[k]);
		}
		i += (unsigned)got;
		if (i < p->n) {
			p->fails++;
			unsigned bad = p->slots[i];
			while (i < p->n && p->slots[i] == bad)
				i++;
		}
	}
	p->n = 0;
}

static int compare_use(const void *a, const void *b)
{
	uint64_t x = ((const struct pyu_page_use *)a)->page, y = ((const struct pyu_page_use *)b)->page;
	return x < y ? -1 : x > y;
}

// Up to this many pages are sorted in place by insertion: a small process's snapshot uses a
// few dozen, for which the radix sort's tables (a 257-entry count a pass) and its allocation
// were a third of the instructions of a reused handle's 2-thread snapshot.
#define SMALL_SORT 64

// Sorts @uses by page. A radix sort, a byte of the page number a pass and only the bytes
// in which pages differ (five passes for a process's heap and stacks): qsort's calls of
// compare_use were a tenth of the library's instructions of 3.8's 100 x 50 (715 pages).
static void sort_uses(struct pyu_page_use *uses, unsigned n)
{
	if (n <= SMALL_SORT) {
		for (unsigned i = 1; i < n; i++) {
			struct pyu_page_use u = uses[i];
			unsigned k = i;
			for (; k > 0 && uses[k - 1].page > u.page; k--)
				uses[k] = uses[k - 1];
			uses[k] = u;
		}
		return;
	}
	struct pyu_page_use *tmp = malloc(n * sizeof(*tmp));
	if (!tmp) {
		qsort(uses, n, sizeof(*uses), compare_use);
		return;
	}
	uint64_t differ = 0;
	for (unsigned i = 1; i < n; i++)
		differ |= uses[i].page ^ uses[0].page;
	struct pyu_page_use *from = uses, *to = tmp;
	for (unsigned shift = 12; shift < 64 && (differ >> shift) != 0; shift += 8) {
		if (((differ >> shift) & 0xff) == 0)
			continue;
		unsigned start[257] = {0};
		for (unsigned i = 0; i < n; i++)
			start[((from[i].page >> shift) & 0xff) + 1]++;
		for (unsigned d = 1; d < 257; d++)
			start[d] += start[d - 1];
		for (unsigned i = 0; i < n; i++)
			to[start[(from[i].page >> shift) & 0xff]++] = from[i];
		struct pyu_page_use *swap = from;
		from = to;
		to = swap;
	}
	if (from != uses)
		memcpy(uses, from, n * sizeof(*uses));
	free(tmp);
}

// The units [@first, @last] (@first <= @last < 64).
static uint64_t units_between(unsigned first, unsigned last)
{
	uint64_t upto = last >= 63 ? UINT64_MAX : (UINT64_C(1) << (last + 1)) - 1;
	return upto & ~((UINT64_C(1) << first) - 1);
}

// @units with every gap of at most @gap units between two used ones taken in.
static uint64_t fill_gaps(uint64_t units, unsigned gap)
{
	uint64_t out = units;
	for (uint64_t rest = units; rest;) {
		unsigned start = (unsigned)__builtin_ctzll(rest);
		uint64_t after = ~rest & (UINT64_MAX << start); // from the run's end on
		if (!after)
			break;
		unsigned hole = (unsigned)__builtin_ctzll(after);
		rest &= UINT64_MAX << hole; // the runs after this one
		if (!rest)
			break;
		unsigned next = (unsigned)__builtin_ctzll(rest);
		if (next - hole <= gap)
			out |= units_between(hole, next - 1);
	}
	return out;
}

// Reads the units of the @n pages @uses names (what the last snapshot's walk read) into the
// cache, PYU_GATHER_MAX pieces a backend read: a piece for each run of units, gaps of up to
// PYU_USE_GAP_UNITS between them (within a page and across into the next) read with them,
// since a piece costs more than the few bytes it would save: a page's first to last unit used
// (a gap of 512 bytes at most left 3.15's 100 x 50 in 433 remote pieces of 676 KB, 235 of
// 933 KB now, 640 to 545 us a fresh handle; 3.8's 1,951 to 1,869, 3.12's 864 to 824). The slots keep only what was
// read (cache_valid): a read of anything else there is a miss. More than
// PYU_GATHER_BYTES_MAX in all is not read at once: the walk then reads as it goes. What a
// page costs the kernel (pinned anew for each remote iovec, about 0.5 us here) outweighs
// the lines gone cold before the walk uses them: 3.8's 100 x 50 frame objects, 715 pages'
// 2 MB in one read, cost 1.2 ms a snapshot against 1.6 ms in 316 reads as the walk went.
static void gather_uses(struct pyu_target *t, struct pyu_page_use *uses, unsigned n)
{
	if (!t->backend_gather || n == 0 || !cache_alloc(t))
		return;
	struct use_pieces *p = malloc(sizeof(*p));
	unsigned *slots = malloc(n * sizeof(*slots));
	if (!p || !slots) {
		free(p);
		free(slots);
		return;
	}
	const unsigned gap = PYU_USE_GAP_UNITS;
	p->n = p->fails = 0;
	// Each page once, its units merged, gaps filled.
	sort_uses(uses, n);
	unsigned m = 0;
	for (unsigned i = 0; i < n; i++) {
		if (m && uses[m - 1].page == uses[i].page)
			uses[m - 1].units |= uses[i].units;
		else if (uses[i].units)
			uses[m++] = uses[i];
	}
	for (unsigned i = 0; i < m; i++) {
		uses[i].units = fill_gaps(uses[i].units, gap);
		if (i == 0 || uses[i - 1].page + PYU_PAGE_SIZE != uses[i].page)
			continue;
		unsigned tail = (unsigned)__builtin_clzll(uses[i - 1].units);
		unsigned head = (unsigned)__builtin_ctzll(uses[i].units);
		if ((tail || head) && tail + head <= gap) {
			if (tail)
				uses[i - 1].units |= units_between(64 - tail, 63);
			if (head)
				uses[i].units |= units_between(0, head - 1);
		}
	}
	uint64_t bytes = 0;
	for (unsigned i = 0; i < m; i++)
		bytes += (uint64_t)__builtin_popcountll(uses[i].units) * PYU_UNIT;
	unsigned ns = 0;
	for (unsigned i = 0; i < m && bytes <= PYU_GATHER_BYTES_MAX; i++) {
		uint64_t page = uses[i].page, units = uses[i].units;
		int sl = victim_slot(t, page);
		if (sl < 0)
			continue;
		t->cache_addr[sl] = PYU_RESERVED; // no other page of this gathering takes it
		slots[ns] = (unsigned)sl;
		uses[ns++].page = page; // what slots[] holds, for after the reads
		while (units) {
			unsigned u = (unsigned)__builtin_ctzll(units);
			uint64_t above = ~units & ~((UINT64_C(1) << u) - 1); // unused from u on
			unsigned end = above ? (unsigned)__builtin_ctzll(above) : 64;
			uint64_t run = units_between(u, end - 1);
			units &= ~run;
			if (p->n == PYU_GATHER_MAX)
				read_use_pieces(t, p);
			unsigned k = p->n++;
			p->addrs[k] = page + (uint64_t)u * PYU_UNIT;
			p->lens[k] = (end - u) * PYU_UNIT;
			p->outs[k] = t->cache_data + (size_t)sl * PYU_PAGE_SIZE + (size_t)u * PYU_UNIT;
			p->units[k] = run;
			p->slots[k] = (unsigned)sl;
		}
	}
	read_use_pieces(t, p);
	for (unsigned i = 0; i < ns; i++)
		t->cache_addr[slots[i]] = t->cache_valid[slots[i]] ? uses[i].page : PYU_NO_PAGE;
	free(p);
	free(slots);
}

static uint64_t fill_pages(struct pyu_target *t, uint64_t start, unsigned n);

// The @n pages at @pages (page addresses, none in the cache, sorted, no repeats) read as
// contiguous spans of at most PYU_READAHEAD_MAX pages (fill_pages), each one backend read
// taking in gaps of up to t->span_gap bytes between the pages asked for (and, where the target
// declares mappings, staying inside the first page's). A span read that stops short leaves
// out the page it stopped in and goes on from the next page asked for. One that reads nothing
// (a debugger's read is often all or nothing, so an unreadable gap fails it whole) is tried
// again from its first page alone: at most 2 * @n backend reads, that many only when every
// span fails.
static void fill_pages_spans(struct pyu_target *t, const uint64_t *pages, unsigned n)
{
	const uint64_t max_gap = t->span_gap + PYU_PAGE_SIZE; // from one page's start to the next
	const uint64_t max_len = (uint64_t)PYU_READAHEAD_MAX * PYU_PAGE_SIZE;
	bool alone = false; // the span from pages[i] read nothing: pages[i] by itself next
	for (unsigned i = 0; i < n;) {
		uint64_t start = pages[i];
		const struct pyu_mapping *m = page_mapping(t, start);
		unsigned j = i + 1;
		for (; !alone && j < n; j++) {
			uint64_t p = pages[j];
			if (p - pages[j - 1] > max_gap || p - start >= max_len || (m && p >= m->end))
				break;
		}
		uint64_t end = start + (uint64_t)fill_pages(t, start, (unsigned)((pages[j - 1] -
			start) / PYU_PAGE_SIZE + 1)) * PYU_PAGE_SIZE; // read whole up to here
		unsigned k = i;
		while (k < j && pages[k] < end)
			k++;
		alone = end == start && !alone && j - i > 1;
		if (alone)
			continue;
		// Past the page the read stopped in when that page was asked for, else on from the
		// next page asked for (what stopped it was in a gap).
		i = k == j ? j : pages[k] == end ? k + 1 : k;
	}
}

// The @n pages at @pages, in address order and each once (a page met again after others
// would take a second slot), by a gathered read or by spans.
static void fill_pages_batch(struct pyu_target *t, uint64_t *pages, unsigned n)
{
	qsort(pages, n, sizeof(*pages), compare_u64);
	unsigned u = 0;
	for (unsigned i = 0; i < n; i++)
		if (u == 0 || pages[i] != pages[u - 1])
			pages[u++] = pages[i];
	n = u;
	if (t->backend_gather)
		fill_pages_gathered(t, pages, n);
	else
		fill_pages_spans(t, pages, n);
}

#define PYU_SECTOR_STREAM_GAP 4u  // sectors a stream's next miss may skip (allocator headers)
#define PYU_SECTOR_WINDOW_MAX 32u // sectors read at once by a stream: as many reads' worth of bytes

// The sectors of a stream's window after @run misses in a row: doubling, at most
// PYU_SECTOR_WINDOW_MAX.
static uint64_t window_sectors(int run)
{
	uint64_t n = 1;
	for (int k = run < 0 ? -run : run; k > 0 && n < PYU_SECTOR_WINDOW_MAX; k--)
		n *= 2;
	return n;
}

// After a miss on the sectors [@lo, @hi) (sector-aligned), the range to read: misses that
// follow each other through memory a few sectors apart, either way (a chain of heap objects
// allocated one after another, as 2.7-3.10's frame objects are, walked newest first), double
// a window read in that direction, so that such a chain costs a few reads, not one a sector.
// Kept inside the mapping when the target declares it. A window that fails (it reached
// memory the target cannot read, and a debugger's reads are all or nothing) ends its stream
// by itself: the stream's last sector is then past the misses that follow. Returns the
// window's start, its length in *@len.
static uint64_t sector_window(struct pyu_target *t, uint64_t lo, uint64_t hi, uint64_t *len)
{
	const uint64_t s = t->sector_size;
	struct pyu_miss_stream *st = NULL;
	int run = 0;
	for (unsigned i = 0; i < PYU_READAHEAD_STREAMS && !st; i++) {
		struct pyu_miss_stream *c = &t->streams[i];
		// a skip as long as the window that went before still follows it
		uint64_t gap = window_sectors(c->run);
		gap = (gap < PYU_SECTOR_STREAM_GAP ? PYU_SECTOR_STREAM_GAP : gap) * s;
		if (c->run >= 0 && c->last && lo > c->last && lo - c->last <= gap)
			st = c, run = c->run + 1;
		else if (c->run <= 0 && c->last && hi <= c->last && c->last - hi < gap)
			st = c, run = c->run - 1;
	}
	if (!st) {
		st = &t->streams[t->next_stream];
		t->next_stream = (t->next_stream + 1) % PYU_READAHEAD_STREAMS;
	}
	st->run = run;
	uint64_t n = window_sectors(run); // at most 32 sectors of at most 2 KiB: fill_sectors takes it
	const struct pyu_mapping *m = page_mapping(t, lo);
	uint64_t start = lo, end = hi;
	if (run < 0) {
		uint64_t floor = m ? m->start - m->start % s : 0;
		uint64_t extra = (n - 1) * s;
		start = lo - floor >= extra ? lo - extra : floor;
		st->last = start;
	} else {
		uint64_t ceiling = m ? m->end - m->end % s
				     : UINT64_MAX - (uint64_t)PYU_READAHEAD_MAX * PYU_PAGE_SIZE + 1;
		uint64_t extra = run > 0 ? (n - 1) * s : 0;
		if (ceiling > hi)
			end = ceiling - hi >= extra ? hi + extra : ceiling;
		st->last = end - s;
	}
	*len = end - start;
	return start;
}

// The sectors of [@addr, @end) not cached, in runs of at most PYU_READAHEAD_MAX pages.
static void prefetch_sector_run(struct pyu_target *t, uint64_t addr, uint64_t end)
{
	const uint64_t s = t->sector_size, max = (uint64_t)PYU_READAHEAD_MAX * PYU_PAGE_SIZE;
	if (end > UINT64_MAX - s)
		return;
	end = (end + s - 1) / s * s;
	for (uint64_t a = addr - addr % s; a < end;) {
		if (sector_cached(t, a)) {
			a += s;
			continue;
		}
		uint64_t n = s;
		while (n < max && a + n < end && !sector_cached(t, a + n))
			n += s;
		if (!fill_sectors(t, a, n))
			return; // unreadable from there: the reads themselves will say so
		a += n;
	}
}

struct piece {
	uint64_t start, end;
};

static int compare_piece(const void *a, const void *b)
{
	uint64_t x = ((const struct piece *)a)->start, y = ((const struct piece *)b)->start;
	return x < y ? -1 : x > y;
}

// A sector-reading target's prefetch: the pieces' sectors not cached, read as runs that take
// in a gap cheaper than a read (t->span_gap), each inside one mapping and at most
// PYU_READAHEAD_MAX pages; a run that stops short leaves its pieces to be read one by one.
// Pieces touching at most @max_pages pages are taken (the cache must still hold the first when
// the last is read).
static void prefetch_sectors(struct pyu_target *t, const uint64_t *addrs, const uint64_t *lens,
			     size_t n, uint64_t size, uint64_t max_pages)
{
	const uint64_t s = t->sector_size, max = (uint64_t)PYU_READAHEAD_MAX * PYU_PAGE_SIZE;
	struct piece *p = n ? malloc(n * sizeof(*p)) : NULL;
	if (!p)
		return;
	size_t np = 0;
	uint64_t total = 0;
	for (size_t i = 0; i < n && total < max_pages; i++) {
		uint64_t len = lens ? lens[i] : size;
		if (len == 0 || len > PYU_PREFETCH_MAX || addrs[i] == 0 ||
		    addrs[i] > UINT64_MAX - len - s)
			continue; // 0: no object
		uint64_t a = addrs[i] - addrs[i] % s, e = (addrs[i] + len + s - 1) / s * s;
		while (a < e && sector_cached(t, a))
			a += s;
		while (e > a && sector_cached(t, e - s))
			e -= s;
		if (a == e)
			continue;
		p[np++] = (struct piece){a, e};
		total += (e - 1) / PYU_PAGE_SIZE - a / PYU_PAGE_SIZE + 1;
	}
	qsort(p, np, sizeof(*p), compare_piece);
	for (size_t i = 0; i < np;) {
		uint64_t start = p[i].start, end = p[i].end;
		const struct pyu_mapping *m = page_mapping(t, start);
		size_t j = i + 1;
		for (; j < np; j++) {
			uint64_t e = p[j].end > end ? p[j].end : end;
			if ((p[j].start > end && p[j].start - end > t->span_gap) ||
			    e - start > max || (m && e > m->end))
				break;
			end = e;
		}
		// A piece longer than one read goes in runs; a run that stopped short, piece by
		// piece (a gap it took in may be unreadable).
		if (end - start > max || (!fill_sectors(t, start, end - start) && j - i > 1)) {
			for (size_t k = i; k < j; k++)
				prefetch_sector_run(t, p[k].start, p[k].end);
		}
		i = j;
	}
	free(p);
}

static void prefetch_gathered(struct pyu_target *t, const uint64_t *addrs, const uint64_t *lens,
			      size_t n, uint64_t size, uint64_t max_pages)
{
	if (t->sector_size < PYU_PAGE_SIZE) {
		prefetch_sectors(t, addrs, lens, n, size, max_pages);
		return;
	}
	uint64_t pages[PYU_GATHER_PAGES];
	unsigned np = 0;
	uint64_t total = 0;
	for (size_t i = 0; i < n; i++) {
		uint64_t len = lens ? lens[i] : size;
		if (len == 0 || addrs[i] == 0 || addrs[i] > UINT64_MAX - len) // 0: no object
			continue;
		uint64_t first = addrs[i] & ~(uint64_t)(PYU_PAGE_SIZE - 1);
		uint64_t last = (addrs[i] + len - 1) & ~(uint64_t)(PYU_PAGE_SIZE - 1);
		for (uint64_t p = first; p <= last && p >= first; p += PYU_PAGE_SIZE) {
			// Objects side by side share pages: a page just taken is not taken again
			// (one taken earlier may be, which costs a page's copy, not a read).
			if ((np && pages[np - 1] == p) || (np > 1 && pages[np - 2] == p) ||
			    held(t, p))
				continue;
			if (total++ == max_pages)
				goto done;
			pages[np++] = p;
			if (np == PYU_GATHER_PAGES) {
				fill_pages_batch(t, pages, np);
				np = 0;
			}
		}
	}
done:
	if (np)
		fill_pages_batch(t, pages, np);
}

void pyu_target_prefetch_scattered(struct pyu_target *t, const uint64_t *addrs, size_t n,
				   size_t size)
{
	if ((!t->backend_gather && !t->span_prefetch) || size == 0 || size > PYU_PAGE_SIZE ||
	    viewed(t) || !cache_alloc(t))
		return;
	prefetch_gathered(t, addrs, NULL, n, size, UINT64_MAX);
}

void pyu_target_prefetch_ranges(struct pyu_target *t, const uint64_t *addrs,
				const uint64_t *lens, size_t n)
{
	if ((!t->backend_gather && !t->span_prefetch) || viewed(t) || !cache_alloc(t))
		return;
	prefetch_gathered(t, addrs, lens, n, 0, PYU_CACHE_PAGES / 2);
}

bool pyu_target_peek_u64(const struct pyu_target *t, uint64_t addr, uint64_t *ret)
{
	uint64_t page = addr & ~(uint64_t)(PYU_PAGE_SIZE - 1);
	if (!t->cache_addr || addr > UINT64_MAX - 8 ||
	    ((addr + 7) & ~(uint64_t)(PYU_PAGE_SIZE - 1)) != page)
		return false;
	int sl = find_slot(t, page);
	if (sl < 0 || !slot_covers(t, sl, (size_t)(addr - page), 8))
		return false;
	*ret = pyu_get_u64(t->cache_data + (size_t)sl * PYU_PAGE_SIZE, (int32_t)(addr - page));
	return true;
}

// Reads the @n pages from @start in one backend read and puts every whole page read into the
// cache. Returns the number of pages read.
static uint64_t fill_pages(struct pyu_target *t, uint64_t start, unsigned n)
{
	if (!readahead_buffer(t) || n == 0 || n > PYU_READAHEAD_MAX)
		return 0;
	uint64_t got = backend_read(t, start, t->readahead, (uint64_t)n * PYU_PAGE_SIZE);
	for (uint64_t k = 0; k < got / PYU_PAGE_SIZE; k++)
		install_page(t, start + k * PYU_PAGE_SIZE, t->readahead + k * PYU_PAGE_SIZE);
	return got / PYU_PAGE_SIZE;
}

void pyu_target_prefetch(struct pyu_target *t, uint64_t addr, uint64_t len)
{
	if (len == 0 || len > PYU_PREFETCH_MAX || addr + len < addr || viewed(t) ||
	    !cache_alloc(t))
		return;
	if (t->sector_size < PYU_PAGE_SIZE) {
		prefetch_sector_run(t, addr, addr + len);
		return;
	}
	uint64_t page = addr & ~(uint64_t)(PYU_PAGE_SIZE - 1);
	uint64_t end = addr + len;
	while (page < end) {
		if (held(t, page)) {
			page += PYU_PAGE_SIZE;
			continue;
		}
		unsigned n = 1; // a run of pages not in the cache, read at once
		while (n < PYU_READAHEAD_MAX && page + (uint64_t)n * PYU_PAGE_SIZE < end &&
		       !held(t, page + (uint64_t)n * PYU_PAGE_SIZE))
			n++;
		if (fill_pages(t, page, n) < n)
			return; // unreadable from there: the reads themselves will say so
		page += (uint64_t)n * PYU_PAGE_SIZE;
	}
}

// Copies the readable prefix of [addr, addr+len), which lies inside one page; returns its
// length.
static size_t read_in_page(struct pyu_target *t, uint64_t addr, unsigned char *buf, size_t len)
{
	uint64_t page = addr & ~(uint64_t)(PYU_PAGE_SIZE - 1);
	size_t off = (size_t)(addr - page);
	if (!cache_alloc(t)) // no cache: still read, just uncached
		return (size_t)backend_read(t, addr, buf, len);
	int hit = find_slot(t, page);
	if (hit >= 0 && slot_covers(t, hit, off, len)) {
		t->cached_reads++;
		t->cache_used[hit] = ++t->cache_clock;
		copy_out(t, hit, off, buf, len);
		return len;
	}
	if (t->sector_size < PYU_PAGE_SIZE) {
		const uint64_t s = t->sector_size;
		uint64_t lo = addr - addr % s, hi = (addr + len + s - 1) / s * s, n;
		if (hi > lo) { // not the last sector of the address space (hi would wrap)
			uint64_t start = sector_window(t, lo, hi, &n);
			if (n > hi - lo)
				fill_sectors(t, start, n); // on failure the asked-for alone, below
		}
		prefetch_sector_run(t, addr, addr + len); // the sectors asked for, if still missing
		hit = find_slot(t, page);
		if (hit >= 0 && slot_covers(t, hit, off, len)) {
			copy_out(t, hit, off, buf, len);
			return len;
		}
		return (size_t)backend_read(t, addr, buf, len); // part of it unreadable
	}
	unsigned n = 1;
	uint64_t start = readahead_window(t, page, &n);
	// The wanted page is among those read unless the read stopped short of it.
	if (n > 1 && fill_pages(t, start, n) > 0 && (hit = find_slot(t, page)) >= 0 &&
	    slot_covers(t, hit, off, len)) {
		copy_out(t, hit, off, buf, len);
		return len;
	}
	int slot = victim_slot(t, page);
	unsigned char *data = slot >= 0 ? t->cache_data + (size_t)slot * PYU_PAGE_SIZE : NULL;
	if (data && backend_read(t, page, data, PYU_PAGE_SIZE) == PYU_PAGE_SIZE) {
		t->cache_addr[slot] = page;
		t->cache_valid[slot] = PYU_ALL_SECTORS;
		copy_out(t, slot, off, buf, len);
		return len;
	}
	// Part of the page is unreadable (end of a segment, a debugger that reads less): the
	// requested bytes alone may still be readable. Such pages are not cached.
	return (size_t)backend_read(t, addr, buf, len);
}

// Reads the readable prefix of [addr, addr+len) (which must not wrap); returns its length.
static size_t read_prefix(struct pyu_target *t, uint64_t addr, unsigned char *buf, size_t len)
{
	size_t done = 0;
	if (len >= PYU_DIRECT_READ_MIN) {
		done = (size_t)backend_read(t, addr, buf, len);
		if (done == len)
			return done;
		// Short: a debugger may fail a whole read for one bad page. Page by page from
		// there finds where readable memory really ends.
	}
	if (t->sector_size < PYU_PAGE_SIZE && len > t->sector_size && len <= PYU_PREFETCH_MAX &&
	    cache_alloc(t))
		prefetch_sector_run(t, addr, addr + len); // a long read in few reads, not one a page
	while (done < len) {
		uint64_t a = addr + done;
		size_t in_page = PYU_PAGE_SIZE - (size_t)(a % PYU_PAGE_SIZE);
		size_t n = len - done < in_page ? len - done : in_page;
		size_t got = read_in_page(t, a, buf + done, n);
		done += got;
		if (got < n)
			break;
	}
	return done;
}

struct pyu_error *pyu_target_read(struct pyu_target *t, uint64_t addr, void *buf, size_t len)
{
	if (len == 0)
		return NULL;
	// Most reads: a few bytes of one page the cache holds.
	size_t off = (size_t)(addr % PYU_PAGE_SIZE);
	bool view = viewed(t);
	if (t->cache_addr && len <= PYU_PAGE_SIZE - off && !view) {
		int sl = find_slot(t, addr - off);
		uint64_t want = unit_mask(off, len);
		if (sl >= 0 && (t->cache_valid[sl] & want) == want) {
			t->cached_reads++;
			t->cache_used[sl] = ++t->cache_clock;
			memcpy(buf, t->cache_data + (size_t)sl * PYU_PAGE_SIZE + off, len);
			if (t->recording || t->late_recording)
				t->cache_touched[sl] |= want;
			return NULL;
		}
	}
	if (len - 1 > UINT64_MAX - addr)
		return pyu_error_create(PYU_ERR_FAULT, "cannot read %zu bytes at 0x%" PRIx64
					": range wraps around", len, addr);
	if (view) {
		const unsigned char *p = t->backend_view(t, addr, len);
		if (p) {
			t->cached_reads++;
			memcpy(buf, p, len);
			return NULL;
		}
	}
	size_t n = read_prefix(t, addr, buf, len);
	if (n == len)
		return NULL;
	return pyu_error_create(PYU_ERR_FAULT, "cannot read memory at 0x%" PRIx64, addr + n);
}

bool pyu_target_direct(struct pyu_target *t, bool on)
{
	bool was = t->direct;
	t->direct = on && !t->read_log_on; // a read log must see every read
	return was;
}

void pyu_target_release_views(struct pyu_target *t)
{
	if (t->backend_release)
		t->backend_release(t);
}

struct pyu_error *pyu_target_read_u64(struct pyu_target *t, uint64_t addr, uint64_t *ret)
{
	unsigned char b[8];
	struct pyu_error *err = pyu_target_read(t, addr, b, sizeof(b));
	if (err)
		return err;
	uint64_t v = 0;
	for (int i = 7; i >= 0; i--)
		v = v << 8 | b[i];
	*ret = v;
	return NULL;
}

struct pyu_error *pyu_target_read_u32(struct pyu_target *t, uint64_t addr, uint32_t *ret)
{
	unsigned char b[4];
	struct pyu_error *err = pyu_target_read(t, addr, b, sizeof(b));
	if (err)
		return err;
	*ret = (uint32_t)b[0] | (uint32_t)b[1] << 8 | (uint32_t)b[2] << 16 | (uint32_t)b[3] << 24;
	return NULL;
}

struct pyu_error *pyu_target_read_u8(struct pyu_target *t, uint64_t addr, uint8_t *ret)
{
	return pyu_target_read(t, addr, ret, 1);
}

struct pyu_error *pyu_target_read_cstr(struct pyu_target *t, uint64_t addr, size_t max,
				       char **ret)
{
	if (max > UINT64_MAX - addr)
		max = (size_t)(UINT64_MAX - addr);
	if (max == SIZE_MAX)
		max--;
	char *s = malloc(max + 1);
	if (!s)
		return &pyu_error_nomem;
	// Page by page, so a string ending just before an unreadable page still reads.
	size_t n = 0;
	while (n < max) {
		uint64_t a = addr + n;
		size_t chunk = PYU_PAGE_SIZE - (size_t)(a % PYU_PAGE_SIZE);
		if (chunk > max - n)
			chunk = max - n;
		size_t got = read_prefix(t, a, (unsigned char *)s + n, chunk);
		void *nul = memchr(s + n, '\0', got);
		if (nul) {
			n = (size_t)((char *)nul - s);
			break;
		}
		n += got;
		if (got < chunk) {
			free(s);
			return pyu_error_create(PYU_ERR_FAULT, "cannot read memory at 0x%" PRIx64
						" in the string at 0x%" PRIx64, a + got, addr);
		}
	}
	s[n] = '\0';
	*ret = s;
	return NULL;
}

const char *pyu_target_notice(const struct pyu_target *t)
{
	return t->notice;
}

const char *pyu_target_source(const struct pyu_target *t)
{
	return t->source ? t->source : "?";
}

PYU_PUBLIC uint64_t pyu_target_backend_reads(const struct pyu_target *t)
{
	return t ? t->backend_reads : 0;
}

PYU_PUBLIC uint64_t pyu_target_cached_reads(const struct pyu_target *t)
{
	return t ? t->cached_reads : 0;
}

// ---- mapped files ------------------------------------------------------------------------

uint64_t pyu_target_read_file(struct pyu_target *t, const char *path, uint64_t offset,
			      void *buf, uint64_t len)
{
	struct pyu_open_file *f = NULL;
	for (unsigned i = 0; i < PYU_FILE_CACHE; i++) {
		if (t->files[i].path && strcmp(t->files[i].path, path) == 0) {
			f = &t->files[i];
			break;
		}
	}
	if (!f) {
		int fd = open(path, O_RDONLY | O_CLOEXEC);
		if (fd < 0)
			return 0;
		struct stat st;
		char *copy = dup_str(path);
		if (!copy || fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
			free(copy);
			close(fd);
			return 0;
		}
		f = &t->files[t->next_file];
		t->next_file = (t->next_file + 1) % PYU_FILE_CACHE;
		if (f->path) {
			close(f->fd);
			free(f->path);
		}
		f->path = copy;
		f->fd = fd;
		f->size = (uint64_t)st.st_size;
	}
	if (offset > (uint64_t)INT64_MAX)
		return 0;
	return pyu_pread_all(f->fd, f->size, offset, buf, len);
}

// ---- mappings ------------------------------------------------------------------------------

// Longest matching prefix that ends at a path component boundary; ties go to the first added.
static const struct pyu_path_map *find_path_map(const struct pyu_target *t, const char *path)
{
	const struct pyu_path_map *best = NULL;
	size_t best_len = 0;
	for (size_t i = 0; i < t->path_map_count; i++) {
		const char *from = t->path_maps[i].from;
		size_t n = strlen(from);
		if (strncmp(path, from, n) != 0)
			continue;
		if (n > 0 && from[n - 1] != '/' && path[n] != '/' && path[n] != '\0')
			continue;
		if (!best || n > best_len) {
			best = &t->path_maps[i];
			best_len = n;
		}
	}
	return best;
}

bool pyu_target_cwd_known(const struct pyu_target *t)
{
	return t->cwd || t->live_pid > 0;
}

// @dir + "/" + @path, malloc'd; NULL when out of memory.
static char *join_path(const char *dir, const char *path)
{
	size_t n = strlen(dir), len = strlen(path);
	bool slash = n && dir[n - 1] == '/';
	char *r = malloc(n + len + 2);
	if (r) {
		memcpy(r, dir, n);
		if (!slash)
			r[n++] = '/';
		memcpy(r + n, path, len + 1);
	}
	return r;
}

char *pyu_target_local_path(const struct pyu_target *t, const char *path)
{
	if (path[0] != '/' && path[0] != '\0' && t->cwd) {
		// a name relative to the working directory the user gave: a target path
		char *full = join_path(t->cwd, path);
		if (!full || full[0] != '/')
			return full; // a relative working directory: taken as it is, here
		char *local = pyu_target_local_path(t, full);
		free(full);
		return local;
	}
	if (path[0] != '/' && path[0] != '\0' && t->live_pid > 0) {
		// the live process's own working directory, through its link (which also leads
		// into another mount namespace)
		char dir[48];
		snprintf(dir, sizeof(dir), "/proc/%d/cwd", (int)t->live_pid);
		return join_path(dir, path);
	}
	if (t->exe_target_path && strcmp(path, t->exe_target_path) == 0)
		return dup_str(t->exe_local_path);
	const struct pyu_path_map *m = find_path_map(t, path);
	if (!m && t->sysroot && path[0] == '/') {
		size_t n = strlen(t->sysroot), len = strlen(path);
		char *r = malloc(n + len + 1);
		if (r) {
			memcpy(r, t->sysroot, n);
			memcpy(r + n, path, len + 1);
		}
		return r;
	}
	if (!m)
		return dup_str(path);
	size_t from_len = strlen(m->from), to_len = strlen(m->to);
	const char *rest = path + from_len;
	// Keep exactly one '/' at the join whether or not either side has one.
	bool to_slash = to_len > 0 && m->to[to_len - 1] == '/';
	bool rest_slash = rest[0] == '/';
	if (to_slash && rest_slash)
		rest++;
	bool add_slash = !to_slash && !rest_slash && rest[0] != '\0' && from_len > 0 &&
			 m->from[from_len - 1] == '/';
	size_t n = to_len + (add_slash ? 1 : 0) + strlen(rest) + 1;
	char *r = malloc(n);
	if (r) {
		memcpy(r, m->to, to_len);
		size_t at = to_len;
		if (add_slash)
			r[at++] = '/';
		memcpy(r + at, rest, strlen(rest) + 1);
	}
	return r;
}

// Mappings from a live process: pseudo-files like "[heap]" have no file here.
static bool names_a_file(const char *path)
{
	return path && path[0] != '\0' && path[0] != '[';
}

// Recomputes every mapping's local path after the path maps or the executable changed.
// On error, some mappings keep their old local path.
static struct pyu_error *relocate_mappings(struct pyu_target *t)
{
	for (size_t i = 0; i < t->mapping_count; i++) {
		struct pyu_mapping *m = &t->mappings[i];
		if (!names_a_file(m->path))
			continue;
		if (m->local_path_fixed && !find_path_map(t, m->path))
			continue;
		char *local = pyu_target_local_path(t, m->path);
		if (!local)
			return &pyu_error_nomem;
		free(m->local_path);
		m->local_path = local;
		m->local_path_fixed = false;
		if (strcmp(local, m->path) != 0)
			m->local_check = PYU_LOCAL_COMPARE; // not the file the maps line names
	}
	close_files(t);
	pyu_target_flush_cache(t); // pages read from mapped files may change
	return NULL;
}

// A target whose files are named from the dynamic linker's list: files not found before may
// be found now. Fails only when out of memory.
static struct pyu_error *name_more_files(struct pyu_target *t)
{
	if (!t->names_from_linkmap)
		return NULL;
	struct pyu_error *err = pyu_linkmap_name_files(t);
	pyu_target_flush_cache(t); // pages of the files named now read differently
	return err;
}

PYU_PUBLIC struct pyu_error *pyu_target_add_path_map(struct pyu_target *t, const char *from,
						     const char *to)
{
	if (!t || !from || !to || from[0] == '\0')
		return pyu_error_create(PYU_ERR_ARGUMENT, "a path map needs a non-empty 'from' "
					"and a 'to'");
	struct pyu_path_map *maps =
		realloc(t->path_maps, (t->path_map_count + 1) * sizeof(*maps));
	if (!maps)
		return &pyu_error_nomem;
	t->path_maps = maps;
	char *f = dup_str(from), *to_copy = dup_str(to);
	if (!f || !to_copy) {
		free(f);
		free(to_copy);
		return &pyu_error_nomem;
	}
	maps[t->path_map_count].from = f;
	maps[t->path_map_count].to = to_copy;
	t->path_map_count++;
	struct pyu_error *err = relocate_mappings(t);
	return err ? err : name_more_files(t);
}

static void forget_file_checks(struct pyu_target *t)
{
	for (size_t i = 0; i < t->file_check_count; i++) {
		free(t->file_checks[i].path);
		free(t->file_checks[i].local_path);
	}
	t->file_check_count = 0;
}

PYU_PUBLIC struct pyu_error *pyu_target_set_sysroot(struct pyu_target *t, const char *dir)
{
	if (!t || !dir || dir[0] == '\0')
		return pyu_error_create(PYU_ERR_ARGUMENT, "a sysroot needs a directory");
	char *copy = dup_str(dir);
	if (!copy)
		return &pyu_error_nomem;
	size_t n = strlen(copy);
	while (n > 1 && copy[n - 1] == '/')
		copy[--n] = '\0'; // "/" alone stays: files are then looked for where they were
	if (strcmp(copy, "/") == 0)
		copy[0] = '\0';
	free(t->sysroot);
	t->sysroot = copy[0] ? copy : NULL;
	if (!t->sysroot)
		free(copy);
	struct pyu_error *err = relocate_mappings(t);
	return err ? err : name_more_files(t);
}

PYU_PUBLIC struct pyu_error *pyu_target_set_cwd(struct pyu_target *t, const char *dir)
{
	if (!t || !dir || dir[0] == '\0')
		return pyu_error_create(PYU_ERR_ARGUMENT, "a working directory needs a name");
	char *copy = dup_str(dir);
	if (!copy)
		return &pyu_error_nomem;
	free(t->cwd);
	t->cwd = copy;
	return NULL;
}

PYU_PUBLIC struct pyu_error *pyu_target_add_search_dir(struct pyu_target *t, const char *dir)
{
	if (!t || !dir || dir[0] == '\0')
		return pyu_error_create(PYU_ERR_ARGUMENT, "a search directory needs a name");
	if (t->search_dir_count >= PYU_MAX_SEARCH_DIRS)
		return pyu_error_create(PYU_ERR_ARGUMENT, "more than %u search directories",
					PYU_MAX_SEARCH_DIRS);
	char **dirs = realloc(t->search_dirs, (t->search_dir_count + 1) * sizeof(*dirs));
	if (!dirs)
		return &pyu_error_nomem;
	t->search_dirs = dirs;
	char *copy = dup_str(dir);
	if (!copy)
		return &pyu_error_nomem;
	dirs[t->search_dir_count++] = copy;
	forget_file_checks(t); // files judged missing may be found now
	return name_more_files(t);
}

struct pyu_error *pyu_target_set_executable(struct pyu_target *t, const char *target_path,
					    const char *local_path)
{
	char *tp = dup_str(target_path), *lp = dup_str(local_path);
	if (!tp || !lp) {
		free(tp);
		free(lp);
		return &pyu_error_nomem;
	}
	free(t->exe_target_path);
	free(t->exe_local_path);
	t->exe_target_path = tp;
	t->exe_local_path = lp;
	return relocate_mappings(t);
}

// Index of the first mapping with start > addr.
static size_t upper_bound(const struct pyu_target *t, uint64_t addr)
{
	size_t lo = 0, hi = t->mapping_count;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (t->mappings[mid].start <= addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

static struct pyu_error *add_mapping(struct pyu_target *t, uint64_t start, uint64_t end,
				     uint64_t offset, bool readable, bool writable,
				     bool executable, const char *path)
{
	if (start >= end)
		return pyu_error_create(PYU_ERR_ARGUMENT, "empty mapping [0x%" PRIx64 ", 0x%"
					PRIx64 ")", start, end);
	if (t->mapping_count >= PYU_MAX_MAPPINGS)
		return pyu_error_create(PYU_ERR_ARGUMENT, "too many mappings");
	if (t->mapping_count == t->mapping_cap) {
		size_t cap = t->mapping_cap ? t->mapping_cap * 2 : 64;
		struct pyu_mapping *m = realloc(t->mappings, cap * sizeof(*m));
		if (!m)
			return &pyu_error_nomem;
		t->mappings = m;
		t->mapping_cap = cap;
	}
	struct pyu_mapping m = {
		.start = start,
		.end = end,
		.offset = offset,
		.writable = writable,
		.readable = readable,
		.executable = executable,
	};
	if (path && path[0] != '\0') {
		m.path = dup_str(path);
		if (!m.path)
			return &pyu_error_nomem;
		if (names_a_file(path)) {
			m.local_path = pyu_target_local_path(t, path);
			if (!m.local_path) {
				free(m.path);
				return &pyu_error_nomem;
			}
		}
	}
	size_t at = upper_bound(t, start);
	memmove(&t->mappings[at + 1], &t->mappings[at],
		(t->mapping_count - at) * sizeof(t->mappings[0]));
	t->mappings[at] = m;
	t->mapping_count++;
	return NULL;
}

// Internal form with permissions; used by the process and core backends.
struct pyu_error *pyu_target_add_mapping_perms(struct pyu_target *t, uint64_t start,
					       uint64_t end, uint64_t offset, bool readable,
					       bool writable, bool executable, const char *path)
{
	return add_mapping(t, start, end, offset, readable, writable, executable, path);
}

PYU_PUBLIC struct pyu_error *pyu_target_add_mapping(struct pyu_target *t, uint64_t start,
						    uint64_t end, uint64_t offset,
						    uint32_t writable, const char *path)
{
	if (!t)
		return pyu_error_create(PYU_ERR_ARGUMENT, "no target");
	return add_mapping(t, start, end, offset, true, writable != 0, false, path);
}

// The mappings of a live process read again when they were marked stale (target_impl.h); true
// when they were. The list is the target's view of the process, not part of what the caller
// may not change: hence the cast (every target is allocated, never a const object).
static bool current_mappings(const struct pyu_target *ct)
{
	struct pyu_target *t = (struct pyu_target *)ct;
	if (!t->maps_stale || !t->reread_maps)
		return false;
	t->maps_stale = false;
	t->reread_maps(t);
	t->maps_partial = false;
	t->read_map_start = NULL; // all of it read
	return true;
}

bool pyu_target_mappings_partial(const struct pyu_target *t)
{
	return t->maps_partial;
}

bool pyu_target_exe_id(const struct pyu_target *t, const struct pyu_mapping *m,
		       struct pyu_file_id *ret)
{
	if (!t->exe_id_known || !m || !m->path || m->deleted || m->inode != t->exe_inode ||
	    m->dev_major != t->exe_dev_major || m->dev_minor != t->exe_dev_minor)
		return false;
	*ret = t->exe_id;
	return true;
}

size_t pyu_target_known_mapping_count(const struct pyu_target *t)
{
	return t->mapping_count;
}

bool pyu_target_reread_mappings(struct pyu_target *t)
{
	return current_mappings(t);
}

size_t pyu_target_mapping_count(const struct pyu_target *t)
{
	current_mappings(t); // a caller listing them wants them all
	return t->mapping_count;
}

const struct pyu_mapping *pyu_target_mapping(const struct pyu_target *t, size_t i)
{
	return i < t->mapping_count ? &t->mappings[i] : NULL;
}

static const struct pyu_mapping *find_known_mapping(const struct pyu_target *t, uint64_t addr)
{
	size_t i = upper_bound(t, addr);
	// Mappings should not overlap, but a debugger may declare overlapping ones: look back a
	// few for one that still contains addr.
	for (size_t k = 0; k < 8 && i > 0; k++, i--) {
		const struct pyu_mapping *m = &t->mappings[i - 1];
		if (addr >= m->start && addr < m->end)
			return m;
	}
	return NULL;
}

const struct pyu_mapping *pyu_target_find_mapping(const struct pyu_target *t, uint64_t addr)
{
	const struct pyu_mapping *m = find_known_mapping(t, addr);
	// Outside every mapping known: the process may have mapped it since they were read.
	if (!m && current_mappings(t))
		m = find_known_mapping(t, addr);
	return m;
}

static const struct pyu_mapping *find_file_mapping_known(const struct pyu_target *t,
							 const char *path)
{
	for (size_t i = 0; i < t->mapping_count; i++) {
		const struct pyu_mapping *m = &t->mappings[i];
		if (m->offset != 0)
			continue;
		if ((m->path && strcmp(m->path, path) == 0) ||
		    (m->local_path && strcmp(m->local_path, path) == 0))
			return m;
	}
	return NULL;
}

const struct pyu_mapping *pyu_target_find_file_mapping(const struct pyu_target *t,
							const char *path)
{
	// A file's lines come one after another: one among the start of a current map is whole.
	if (t->maps_partial) {
		const struct pyu_mapping *m = find_file_mapping_known(t, path);
		if (m)
			return m;
	}
	current_mappings(t);
	return find_file_mapping_known(t, path);
}

// The GNU build ID of @m's file as the target has it (in the first page of the file's first
// mapping, which cores keep). False when it cannot be read there.
static bool target_build_id(struct pyu_target *t, const struct pyu_mapping *m, uint8_t *buf,
			    size_t *len)
{
	const struct pyu_mapping *first = NULL;
	for (size_t i = 0; i < t->mapping_count && !first; i++) {
		const struct pyu_mapping *c = &t->mappings[i];
		if (c->offset == 0 && c->path && strcmp(c->path, m->path) == 0)
			first = c;
	}
	if (!first)
		return false;
	unsigned char page[PYU_PAGE_SIZE];
	uint64_t want = first->end - first->start < sizeof(page) ? first->end - first->start
								 : sizeof(page);
	pyu_backend_read_fn read = t->image_read ? t->image_read : t->backend_read;
	uint64_t n = read(t, first->start, page, want);
	return pyu_elf_image_build_id(page, n > want ? want : n, buf, PYU_BUILD_ID_MAX, len);
}

enum file_state { FILE_MATCHES, FILE_DIFFERS, FILE_MISSING, FILE_UNKNOWN };

// How the local file @path compares with the build ID @want (@want_len 0: unknown).
static enum file_state file_state(const char *path, const uint8_t *want, size_t want_len)
{
	struct pyu_elf *elf;
	if (access(path, R_OK) != 0)
		return FILE_MISSING;
	struct pyu_error *err = pyu_elf_open(path, &elf);
	if (err) {
		pyu_error_destroy(err);
		return FILE_UNKNOWN; // not an ELF file here: nothing to compare
	}
	uint8_t have[PYU_BUILD_ID_MAX];
	size_t have_len;
	err = pyu_elf_build_id(elf, have, sizeof(have), &have_len);
	pyu_elf_close(elf);
	if (err) {
		pyu_error_destroy(err);
		return FILE_UNKNOWN;
	}
	if (!want_len)
		return FILE_UNKNOWN;
	return want_len == have_len && memcmp(want, have, want_len) == 0 ? FILE_MATCHES
									 : FILE_DIFFERS;
}

// Points every mapping of @path at @local (a file found elsewhere with the right build ID).
static bool use_local_file(struct pyu_target *t, const char *path, const char *local)
{
	for (size_t i = 0; i < t->mapping_count; i++) {
		struct pyu_mapping *c = &t->mappings[i];
		if (!c->path || strcmp(c->path, path) != 0)
			continue;
		char *copy = dup_str(local);
		if (!copy)
			return false;
		free(c->local_path);
		c->local_path = copy;
		c->local_path_fixed = true;
	}
	return true;
}

// A file with build ID @want in the search directories (DIR/BASENAME), or NULL. malloc'd.
static char *search_dirs(const struct pyu_target *t, const char *path, const uint8_t *want,
			 size_t want_len)
{
	const char *slash = strrchr(path, '/');
	const char *base = slash ? slash + 1 : path;
	for (size_t i = 0; i < t->search_dir_count; i++) {
		size_t n = strlen(t->search_dirs[i]) + strlen(base) + 2;
		char *cand = malloc(n);
		if (!cand)
			return NULL;
		snprintf(cand, n, "%s/%s", t->search_dirs[i], base);
		if (file_state(cand, want, want_len) == FILE_MATCHES)
			return cand;
		free(cand);
	}
	return NULL;
}

// SYSROOT/@path when a sysroot is set, it is not @local (already looked at) and it is a file
// with the build ID @want; else NULL. malloc'd. (A file the user named, such as the executable
// given with the core, is not under the sysroot; when it is another build, the sysroot's copy
// is the next place to look, before the search directories.)
static char *sysroot_file(const struct pyu_target *t, const char *path, const char *local,
			  const uint8_t *want, size_t want_len)
{
	if (!t->sysroot || path[0] != '/')
		return NULL;
	size_t n = strlen(t->sysroot), len = strlen(path);
	char *cand = malloc(n + len + 1);
	if (!cand)
		return NULL;
	memcpy(cand, t->sysroot, n);
	memcpy(cand + n, path, len + 1);
	if (strcmp(cand, local) != 0 && file_state(cand, want, want_len) == FILE_MATCHES)
		return cand;
	free(cand);
	return NULL;
}

// Whether @m's file here is the target's; when it is missing or another build, looks under the
// sysroot, in the search directories and through debuginfod for one with the target's build
// ID and, when found, points @m's file at it.
static bool resolve_file(struct pyu_target *t, const struct pyu_mapping *m)
{
	if (m->local_check == PYU_LOCAL_SAME)
		return true; // the file the process maps: nothing to compare
	uint8_t want[PYU_BUILD_ID_MAX];
	size_t want_len = 0;
	if (!target_build_id(t, m, want, &want_len))
		want_len = 0;
	enum file_state st = file_state(m->local_path, want, want_len);
	if (st == FILE_MATCHES || st == FILE_UNKNOWN)
		return true;
	if (!want_len)
		return st != FILE_DIFFERS; // missing: reads fail by themselves
	char *found = sysroot_file(t, m->path, m->local_path, want, want_len);
	if (!found)
		found = search_dirs(t, m->path, want, want_len);
	if (!found)
		found = pyu_debuginfod_find(t, want, want_len);
	if (!found)
		return st == FILE_MISSING; // nothing to read anyway
	char *path = dup_str(m->path);
	bool ok = path && use_local_file(t, path, found);
	free(path);
	free(found);
	return ok;
}

bool pyu_target_file_matches(struct pyu_target *t, const struct pyu_mapping *m)
{
	if (!m || !m->path || !m->local_path)
		return true;
	if (m->local_check == PYU_LOCAL_PENDING && t->check_local)
		t->check_local(t, (struct pyu_mapping *)m); // may change m->local_path
	for (size_t i = 0; i < t->file_check_count; i++) {
		const struct pyu_file_check *c = &t->file_checks[i];
		if (strcmp(c->path, m->path) == 0 && strcmp(c->local_path, m->local_path) == 0)
			return c->matches;
	}
	bool matches = resolve_file(t, m); // may change m->local_path
	struct pyu_file_check *checks =
		realloc(t->file_checks, (t->file_check_count + 1) * sizeof(*checks));
	if (!checks)
		return matches;
	t->file_checks = checks;
	char *p = dup_str(m->path), *l = dup_str(m->local_path);
	if (!p || !l) {
		free(p);
		free(l);
		return matches;
	}
	checks[t->file_check_count++] = (struct pyu_file_check){p, l, matches};
	return matches;
}

void pyu_target_distrust_file(struct pyu_target *t, const struct pyu_mapping *m)
{
	if (!m || !m->path || !m->local_path)
		return;
	pyu_target_file_matches(t, m); // makes sure the file has an entry
	for (size_t i = 0; i < t->file_check_count; i++) {
		struct pyu_file_check *c = &t->file_checks[i];
		if (strcmp(c->path, m->path) == 0 && strcmp(c->local_path, m->local_path) == 0)
			c->matches = false;
	}
	close_files(t);
	pyu_target_flush_cache(t); // pages read from that file are not the target's
}

// ---- threads -------------------------------------------------------------------------------

PYU_PUBLIC struct pyu_error *pyu_target_add_thread(struct pyu_target *t, int64_t tid)
{
	if (!t)
		return pyu_error_create(PYU_ERR_ARGUMENT, "no target");
	for (size_t i = 0; i < t->thread_count; i++) {
		if (t->threads[i] == tid)
			return NULL;
	}
	if (t->thread_count >= PYU_MAX_THREADS)
		return pyu_error_create(PYU_ERR_ARGUMENT, "too many threads");
	if (t->thread_count == t->thread_cap) {
		size_t cap = t->thread_cap ? t->thread_cap * 2 : 16;
		int64_t *th = realloc(t->threads, cap * sizeof(*th));
		if (!th)
			return &pyu_error_nomem;
		t->threads = th;
		t->thread_cap = cap;
	}
	t->threads[t->thread_count++] = tid;
	return NULL;
}

static int compare_tid(const void *a, const void *b)
{
	int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
	return x < y ? -1 : x > y;
}

// A live process's threads are listed when first asked for: a snapshot of 3.11+ never needs
// them (thread states carry their native ids), one of an older version only for an id its
// last listing did not hold (pyu_target_has_thread; listing 100 threads again each snapshot
// was a tenth of 3.8's 100 x 50).
static void list_threads(const struct pyu_target *t)
{
	if (t->list_threads) {
		struct pyu_target *mut = (struct pyu_target *)t; // the list is a cache of the target
		void (*list)(struct pyu_target *) = mut->list_threads;
		mut->list_threads = NULL;
		list(mut);
		// Kept sorted for pyu_target_has_thread; without memory for it, none is kept.
		int64_t *ids = t->thread_count
			? realloc(mut->listed, t->thread_count * sizeof(*ids)) : NULL;
		if (!ids) {
			free(mut->listed);
			mut->listed = NULL;
			mut->listed_count = 0;
			return;
		}
		memcpy(ids, t->threads, t->thread_count * sizeof(*ids));
		qsort(ids, t->thread_count, sizeof(*ids), compare_tid);
		mut->listed = ids;
		mut->listed_count = t->thread_count;
	}
}

bool pyu_target_has_thread(const struct pyu_target *t, int64_t tid)
{
	if (tid <= 0)
		return false;
	if (t->listed_count && bsearch(&tid, t->listed, t->listed_count, sizeof(tid), compare_tid))
		return true;
	if (t->list_threads) { // not listed since the snapshot began: a thread started since?
		list_threads(t);
		if (t->listed_count &&
		    bsearch(&tid, t->listed, t->listed_count, sizeof(tid), compare_tid))
			return true;
	}
	for (size_t i = 0; i < t->thread_count; i++) // given, or the sorted copy was not made
		if (t->threads[i] == tid)
			return true;
	return false;
}

size_t pyu_target_thread_count(const struct pyu_target *t)
{
	list_threads(t);
	return t->thread_count;
}

int64_t pyu_target_thread(const struct pyu_target *t, size_t i)
{
	list_threads(t);
	return i < t->thread_count ? t->threads[i] : -1;
}

bool pyu_crash_is_crash(const struct pyu_crash *c)
{
	if (c->by_debugger)
		return false;
	switch (c->signal) {
	case 17: // SIGCHLD
	case 18: // SIGCONT
	case 19: // SIGSTOP
	case 20: // SIGTSTP
	case 21: // SIGTTIN
	case 22: // SIGTTOU
	case 23: // SIGURG
	case 28: // SIGWINCH
		return false;
	}
	return c->signal > 0;
}

bool pyu_target_crash(const struct pyu_target *t, struct pyu_crash *ret)
{
	if (!t->has_crash)
		return false;
	*ret = t->crash;
	return true;
}

// ---- what threads are doing ------------------------------------------------------------------

static const struct pyu_thread_status unknown_status = {
	.syscall = PYU_SYSCALL_UNKNOWN,
	.cpu_ns = -1,
};

struct pyu_thread_record *pyu_target_status_record(struct pyu_target *t, int64_t tid)
{
	for (size_t i = 0; i < t->status_count; i++)
		if (t->statuses[i].tid == tid)
			return &t->statuses[i];
	if (t->status_count >= PYU_MAX_THREADS)
		return NULL;
	if (t->status_count == t->status_cap) {
		size_t cap = t->status_cap ? t->status_cap * 2 : 16;
		struct pyu_thread_record *grown = realloc(t->statuses, cap * sizeof(*grown));
		if (!grown)
			return NULL;
		t->statuses = grown;
		t->status_cap = cap;
	}
	struct pyu_thread_record *r = &t->statuses[t->status_count++];
	*r = (struct pyu_thread_record){.tid = tid, .status = unknown_status};
	return r;
}

// On an architecture whose registers name a system call only while a thread is in one: the
// claim of @r holds when the call instruction lies right before its pc; it is dropped (no
// call) when another one is there. While the code cannot be read (a core without the file the
// code is in) *ret says unknown and @r keeps its claim: a sysroot given later may tell.
static void check_syscall_insn(struct pyu_target *t, struct pyu_thread_record *r,
			       struct pyu_thread_status *ret)
{
	const struct pyu_arch *a = t->arch;
	if (!r->check_insn || !a || !a->syscall_insn || r->status.syscall < 0)
		return;
	uint8_t insn[16];
	uint32_t len = a->syscall_insn_len;
	struct pyu_error *err = len <= sizeof(insn) && r->pc >= len
		? pyu_target_read(t, r->pc - len, insn, len)
		: pyu_error_create(PYU_ERR_FAULT, "no instruction");
	if (err) {
		pyu_error_destroy(err);
		ret->syscall = PYU_SYSCALL_UNKNOWN;
		ret->has_args = false;
		return;
	}
	r->check_insn = false;
	if (memcmp(insn, a->syscall_insn, len) != 0) {
		r->status.syscall = -1;
		r->status.has_args = false;
	}
	*ret = r->status;
}

void pyu_target_thread_statuses(struct pyu_target *t, const int64_t *tids, size_t count,
				struct pyu_thread_status *ret)
{
	for (size_t i = 0; i < count; i++)
		ret[i] = unknown_status;
	if (!t)
		return;
	if (t->read_statuses) {
		t->read_statuses(t, tids, count, ret);
		return;
	}
	for (size_t i = 0; i < count; i++)
		for (size_t k = 0; tids[i] > 0 && k < t->status_count; k++)
			if (t->statuses[k].tid == tids[i]) {
				ret[i] = t->statuses[k].status;
				check_syscall_insn(t, &t->statuses[k], &ret[i]);
				break;
			}
}

void pyu_target_thread_status(struct pyu_target *t, int64_t tid, struct pyu_thread_status *ret)
{
	pyu_target_thread_statuses(t, &tid, 1, ret);
}

const struct pyu_arch *pyu_target_arch(const struct pyu_target *t)
{
	return t ? t->arch : NULL;
}

PYU_PUBLIC const char *pyu_target_syscall_registers(const struct pyu_target *t)
{
	return t && t->arch ? t->arch->debugger_registers : "";
}

PYU_PUBLIC struct pyu_error *pyu_target_set_thread_registers(struct pyu_target *t, int64_t tid,
							     const uint64_t *values,
							     uint32_t count)
{
	if (!t || tid <= 0 || (count && !values))
		return pyu_error_create(PYU_ERR_ARGUMENT, "pyu_target_set_thread_registers: bad "
					"argument");
	if (t->read_statuses || t->core_fd >= 0)
		return NULL; // the process's /proc or the core's notes say it first-hand
	if (count == 0)
		return NULL;
	struct pyu_thread_record *r = pyu_target_status_record(t, tid);
	if (!r)
		return &pyu_error_nomem;
	r->status.syscall = (int64_t)values[0];
	if (r->status.syscall < 0)
		r->status.syscall = -1;
	if (count >= 1 + PYU_SYSCALL_ARGS) {
		memcpy(r->status.args, values + 1, sizeof(r->status.args));
		r->status.has_args = true;
	}
	if (count >= 2 + PYU_SYSCALL_ARGS) {
		r->status.pc = values[1 + PYU_SYSCALL_ARGS];
		r->status.has_pc = true;
	}
	return NULL;
}

// ---- callback backend ----------------------------------------------------------------------

PYU_PUBLIC void pyu_target_set_read_cost(struct pyu_target *t, uint32_t read_us, uint32_t kib_us)
{
	if (!t)
		return;
	uint64_t gap = (uint64_t)PYU_SPAN_GAP_PAGES * PYU_PAGE_SIZE;
	uint32_t sector = PYU_PAGE_SIZE;
	if (read_us && kib_us) {
		// A gap is worth reading when its bytes cost less than the read they save; a miss
		// reads sectors whose bytes cost no more than a read. (Through lldb: 2 KiB. 512
		// bytes read the 100 threads of 3.12-3.15 as fast, but the frame objects of 3.8,
		// side by side in the heap, took three times as many reads as 2 KiB did.)
		gap = (uint64_t)read_us * 1024 / kib_us;
		while (sector > PYU_MIN_SECTOR && (uint64_t)sector * kib_us > (uint64_t)read_us * 1024)
			sector /= 2;
	}
	if (sector != t->sector_size)
		pyu_target_flush_cache(t); // slots filled in part under the old sector size
	t->span_gap = gap;
	t->sector_size = sector;
}

struct callback_backend {
	pyu_read_fn read;
	void *arg;
};

static uint64_t callback_read(struct pyu_target *t, uint64_t addr, void *buf, uint64_t len)
{
	struct callback_backend *cb = t->backend_data;
	return cb->read(cb->arg, addr, buf, len);
}

static void callback_destroy(struct pyu_target *t)
{
	free(t->backend_data);
}

PYU_PUBLIC struct pyu_error *pyu_target_open_callback(pyu_read_fn read, void *arg,
						      struct pyu_target **ret)
{
	if (!read || !ret)
		return pyu_error_create(PYU_ERR_ARGUMENT, "a callback target needs a read "
					"function");
	struct callback_backend *cb = malloc(sizeof(*cb));
	if (!cb)
		return &pyu_error_nomem;
	cb->read = read;
	cb->arg = arg;
	struct pyu_error *err = pyu_target_create(callback_read, callback_destroy, cb,
						  "a read callback", ret);
	if (err) {
		free(cb);
	} else {
		(*ret)->span_prefetch = true;
		(*ret)->changes = true; // a debugger's process runs between its stops
	}
	return err;
}
