// check_target.c - the address space: callback targets over a buffer, the page cache and its
// counters, bounded string reads, sorted mappings, path maps, threads, and a real live
// process (a forked child) read by pid.
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <fcntl.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <stddef.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/uio.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <grp.h>
#include <unistd.h>

#include "checkmain.h"
#include "elf_fixture.h"
#include "target.h"

// ---- a memory image read through the callback backend ------------------------------------

#define IMG_BASE 0x10000u
#define IMG_LEN (3 * 4096 + 100) // the last page is only partly readable

struct image {
	unsigned char data[IMG_LEN];
	int calls;
	bool fail;
};

static uint64_t image_read(void *arg, uint64_t addr, void *buf, uint64_t len)
{
	struct image *img = arg;
	img->calls++;
	if (img->fail || addr < IMG_BASE || addr - IMG_BASE >= IMG_LEN)
		return 0;
	uint64_t off = addr - IMG_BASE;
	uint64_t n = len < IMG_LEN - off ? len : IMG_LEN - off;
	memcpy(buf, img->data + off, n);
	return n;
}

static struct pyu_target *image_target(struct image *img)
{
	for (size_t i = 0; i < IMG_LEN; i++)
		img->data[i] = fx_pattern(IMG_BASE + i);
	struct pyu_target *t = NULL;
	ck_assert_ptr_null(pyu_target_open_callback(image_read, img, &t));
	ck_assert_ptr_nonnull(t);
	return t;
}

// Asserts that @err is a PYU_ERR_FAULT whose message names @addr, and destroys it.
static void assert_fault_at(struct pyu_error *err, uint64_t addr)
{
	ck_assert_ptr_nonnull(err);
	ck_assert_int_eq(pyu_error_code(err), PYU_ERR_FAULT);
	char hex[32];
	snprintf(hex, sizeof(hex), "0x%" PRIx64, addr);
	ck_assert_msg(strstr(pyu_error_message(err), hex), "message '%s' lacks %s",
		      pyu_error_message(err), hex);
	pyu_error_destroy(err);
}

START_TEST(test_callback_typed_reads)
{
	static struct image img;
	struct pyu_target *t = image_target(&img);
	uint8_t b = 0;
	uint32_t w = 0;
	uint64_t q = 0;
	ck_assert_ptr_null(pyu_target_read_u8(t, IMG_BASE + 5, &b));
	ck_assert_uint_eq(b, img.data[5]);
	ck_assert_ptr_null(pyu_target_read_u32(t, IMG_BASE + 4094, &w)); // spans two pages
	uint32_t w_expect = 0;
	for (int i = 3; i >= 0; i--)
		w_expect = w_expect << 8 | img.data[4094 + i];
	ck_assert_uint_eq(w, w_expect);
	ck_assert_ptr_null(pyu_target_read_u64(t, IMG_BASE + 2 * 4096 - 3, &q));
	uint64_t q_expect = 0;
	for (int i = 7; i >= 0; i--)
		q_expect = q_expect << 8 | img.data[2 * 4096 - 3 + i];
	ck_assert_uint_eq(q, q_expect);

	// A large read that crosses every page.
	unsigned char buf[3 * 4096 + 50];
	ck_assert_ptr_null(pyu_target_read(t, IMG_BASE + 30, buf, sizeof(buf)));
	ck_assert_mem_eq(buf, img.data + 30, sizeof(buf));
	// The partly readable last page: its readable bytes still read.
	ck_assert_ptr_null(pyu_target_read(t, IMG_BASE + IMG_LEN - 8, buf, 8));
	ck_assert_mem_eq(buf, img.data + IMG_LEN - 8, 8);
	// One byte too far fails, naming the first unreadable address; outputs untouched.
	q = 42;
	assert_fault_at(pyu_target_read_u64(t, IMG_BASE + IMG_LEN - 7, &q), IMG_BASE + IMG_LEN);
	ck_assert_uint_eq(q, 42);
	assert_fault_at(pyu_target_read(t, 0x500000, buf, 16), 0x500000);
	// Zero-length reads succeed anywhere; wrapping ranges fail.
	ck_assert_ptr_null(pyu_target_read(t, 0x123, buf, 0));
	struct pyu_error *err = pyu_target_read(t, UINT64_MAX - 3, buf, 8);
	ck_assert_int_eq(pyu_error_code(err), PYU_ERR_FAULT);
	pyu_error_destroy(err);
	pyu_target_destroy(t);
}
END_TEST

START_TEST(test_callback_failing)
{
	static struct image img;
	struct pyu_target *t = image_target(&img);
	img.fail = true; // what ctypes returns when the Python callback raised
	uint64_t q = 7;
	assert_fault_at(pyu_target_read_u64(t, IMG_BASE, &q), IMG_BASE);
	ck_assert_uint_eq(q, 7);
	ck_assert_int_gt(img.calls, 0);
	pyu_target_destroy(t);

	struct pyu_error *err = pyu_target_open_callback(NULL, NULL, &t);
	ck_assert_int_eq(pyu_error_code(err), PYU_ERR_ARGUMENT);
	pyu_error_destroy(err);
}
END_TEST

START_TEST(test_cache_counters)
{
	static struct image img;
	struct pyu_target *t = image_target(&img);
	uint64_t q;
	ck_assert_uint_eq(pyu_target_backend_reads(t), 0);
	ck_assert_uint_eq(pyu_target_cached_reads(t), 0);
	// First touch of a page fills it from the backend...
	ck_assert_ptr_null(pyu_target_read_u64(t, IMG_BASE, &q));
	ck_assert_uint_eq(pyu_target_backend_reads(t), 1);
	ck_assert_uint_eq(pyu_target_cached_reads(t), 0);
	// ...and later reads of that page are answered by the cache.
	ck_assert_ptr_null(pyu_target_read_u64(t, IMG_BASE + 100, &q));
	ck_assert_ptr_null(pyu_target_read_u64(t, IMG_BASE + 4088, &q));
	ck_assert_uint_eq(pyu_target_backend_reads(t), 1);
	ck_assert_uint_eq(pyu_target_cached_reads(t), 2);
	ck_assert_int_eq(img.calls, 1);
	// A read spanning into the next page: one cached part, one backend fill.
	ck_assert_ptr_null(pyu_target_read_u64(t, IMG_BASE + 4092, &q));
	ck_assert_uint_eq(pyu_target_backend_reads(t), 2);
	ck_assert_uint_eq(pyu_target_cached_reads(t), 3);
	// The cache serves stale data until flushed (the debugger resumed the target).
	img.data[0] ^= 0xff;
	uint8_t b;
	ck_assert_ptr_null(pyu_target_read_u8(t, IMG_BASE, &b));
	ck_assert_uint_eq(b, (uint8_t)(img.data[0] ^ 0xff));
	pyu_target_flush_cache(t);
	ck_assert_ptr_null(pyu_target_read_u8(t, IMG_BASE, &b));
	ck_assert_uint_eq(b, img.data[0]);
	ck_assert_uint_eq(pyu_target_backend_reads(t), 3);
	// A partly readable page is not cached: each read goes to the backend (a failed page
	// fill, then the exact bytes).
	uint64_t before = pyu_target_backend_reads(t);
	ck_assert_ptr_null(pyu_target_read_u32(t, IMG_BASE + 3 * 4096, (uint32_t *)&q));
	ck_assert_uint_eq(pyu_target_backend_reads(t), before + 2);
	ck_assert_ptr_null(pyu_target_read_u32(t, IMG_BASE + 3 * 4096, (uint32_t *)&q));
	ck_assert_uint_eq(pyu_target_backend_reads(t), before + 4);
	// Null targets count nothing.
	ck_assert_uint_eq(pyu_target_backend_reads(NULL), 0);
	ck_assert_uint_eq(pyu_target_cached_reads(NULL), 0);
	pyu_target_destroy(t);
}
END_TEST

// A callback over a buffer of more pages than the cache holds, at BIG_BASE.
#define BIG_BASE 0x1000000u
#define BIG_PAGES 600
static unsigned char big[BIG_PAGES * 4096];

static uint64_t big_read(void *arg, uint64_t addr, void *buf, uint64_t len)
{
	(void)arg;
	if (addr < BIG_BASE || addr - BIG_BASE >= sizeof(big))
		return 0;
	uint64_t off = addr - BIG_BASE;
	uint64_t n = len < sizeof(big) - off ? len : sizeof(big) - off;
	memcpy(buf, big + off, n);
	return n;
}

// A callback target over big[], filled with the pattern of step @mul, read by @read.
static struct pyu_target *open_big(uint64_t (*read)(void *, uint64_t, void *, uint64_t),
				   size_t mul)
{
	for (size_t i = 0; i < sizeof(big); i++)
		big[i] = fx_pattern(i * mul);
	struct pyu_target *t;
	ck_assert_ptr_null(pyu_target_open_callback(read, NULL, &t));
	return t;
}

// pyu_target_memory_changed(): a byte written after it was read is seen, through the cache, an
// evicted page and a direct read alike; a byte never read, or written back, is no change.
START_TEST(test_memory_changed)
{
	struct pyu_target *t = open_big(big_read, 7);
	uint32_t changed = 7;
	struct pyu_error *err = pyu_target_memory_changed(t, &changed);
	ck_assert_int_eq(pyu_error_code(err), PYU_ERR_ARGUMENT); // not tracking
	pyu_error_destroy(err);
	ck_assert_uint_eq(changed, 7);
	pyu_target_track_reads(t);
	unsigned char buf[16];
	ck_assert_ptr_null(pyu_target_read(t, BIG_BASE + 100, buf, sizeof(buf)));
	// More pages than the cache holds: the first one read is evicted.
	for (size_t off = 4096; off + 8 <= sizeof(big); off += 4096)
		ck_assert_ptr_null(pyu_target_read(t, BIG_BASE + off, buf, 8));
	size_t n = 80 * 4096; // a direct read, past the cache
	unsigned char *whole = malloc(n);
	ck_assert_ptr_nonnull(whole);
	ck_assert_ptr_null(pyu_target_read(t, BIG_BASE + 8192 + 3, whole, n));
	free(whole);
	ck_assert_ptr_null(pyu_target_memory_changed(t, &changed));
	ck_assert_uint_eq(changed, 0);
	size_t spots[] = {105, 8192 + 3 + 1000, sizeof(big) - 4096 + 2};
	for (size_t i = 0; i < sizeof(spots) / sizeof(spots[0]); i++) {
		big[spots[i]] ^= 0x5a;
		ck_assert_ptr_null(pyu_target_memory_changed(t, &changed));
		ck_assert_msg(changed == 1, "a write at offset %zu is not seen", spots[i]);
		big[spots[i]] ^= 0x5a;
		ck_assert_ptr_null(pyu_target_memory_changed(t, &changed));
		ck_assert_uint_eq(changed, 0);
	}
	pyu_target_track_reads(t); // starts over: nothing read since
	big[105] ^= 0x5a;
	ck_assert_ptr_null(pyu_target_memory_changed(t, &changed));
	ck_assert_uint_eq(changed, 0);
	big[105] ^= 0x5a;
	pyu_target_destroy(t);
}
END_TEST

START_TEST(test_cache_many_pages)
{
	struct pyu_target *t = open_big(big_read, 13);
	// Two passes over every page at odd offsets: evictions never return wrong bytes.
	for (int pass = 0; pass < 2; pass++) {
		for (size_t off = 4090; off + 16 <= sizeof(big); off += 4096 + 7) {
			unsigned char buf[16];
			ck_assert_ptr_null(pyu_target_read(t, BIG_BASE + off, buf, sizeof(buf)));
			ck_assert_mem_eq(buf, big + off, sizeof(buf));
		}
	}
	// A read of a whole region at once (bypasses the cache) sees the same bytes.
	size_t n = 100 * 4096 + 5;
	unsigned char *buf = malloc(n);
	ck_assert_ptr_nonnull(buf);
	uint64_t before = pyu_target_backend_reads(t);
	ck_assert_ptr_null(pyu_target_read(t, BIG_BASE + 3, buf, n));
	ck_assert_mem_eq(buf, big + 3, n);
	ck_assert_uint_eq(pyu_target_backend_reads(t), before + 1);
	free(buf);
	pyu_target_destroy(t);
}
END_TEST

// Like gdb's read_memory: the whole request or nothing.
static uint64_t all_or_nothing_read(void *arg, uint64_t addr, void *buf, uint64_t len)
{
	(void)arg;
	if (addr < BIG_BASE || addr - BIG_BASE > sizeof(big) || len > sizeof(big) - (addr - BIG_BASE))
		return 0;
	memcpy(buf, big + (addr - BIG_BASE), len);
	return len;
}

START_TEST(test_all_or_nothing_callback)
{
	struct pyu_target *t = open_big(all_or_nothing_read, 5);
	size_t n = 200 * 1024;
	unsigned char *buf = malloc(n);
	ck_assert_ptr_nonnull(buf);
	// A large read past the end: the error names the first byte past the buffer, and the
	// last readable bytes of a big read still read one by one.
	uint64_t start = BIG_BASE + sizeof(big) - 100 * 1024 + 3;
	assert_fault_at(pyu_target_read(t, start, buf, n), BIG_BASE + sizeof(big));
	ck_assert_ptr_null(pyu_target_read(t, start, buf, 100 * 1024 - 3));
	ck_assert_mem_eq(buf, big + sizeof(big) - 100 * 1024 + 3, 100 * 1024 - 3);
	// Small reads at the very end, through the cache.
	ck_assert_ptr_null(pyu_target_read(t, BIG_BASE + sizeof(big) - 8, buf, 8));
	assert_fault_at(pyu_target_read(t, BIG_BASE + sizeof(big) - 8, buf, 9),
			BIG_BASE + sizeof(big));
	free(buf);
	pyu_target_destroy(t);
}
END_TEST

// Like lldb's memory reads: all or nothing, with unreadable pages HOLE_FIRST..HOLE_LAST.
#define HOLE_FIRST 100u
#define HOLE_LAST 103u
static uint64_t holey_bytes; // bytes holey_read() has handed out
static uint64_t holey_read(void *arg, uint64_t addr, void *buf, uint64_t len)
{
	(void)arg;
	if (len == 0 || addr < BIG_BASE || addr - BIG_BASE > sizeof(big) ||
	    len > sizeof(big) - (addr - BIG_BASE))
		return 0;
	uint64_t first = (addr - BIG_BASE) / 4096, last = (addr - BIG_BASE + len - 1) / 4096;
	if (first <= HOLE_LAST && last >= HOLE_FIRST)
		return 0;
	memcpy(buf, big + (addr - BIG_BASE), len);
	holey_bytes += len;
	return len;
}

// Reads 8 bytes at each of @pages[i] * 4096 + 40 from the cache alone: the bytes of big[].
static void assert_cached_pages(struct pyu_target *t, const unsigned *pages, unsigned n)
{
	uint64_t before = pyu_target_backend_reads(t);
	for (unsigned i = 0; i < n; i++) {
		uint64_t off = (uint64_t)pages[i] * 4096 + 40, v, want;
		ck_assert_ptr_null(pyu_target_read_u64(t, BIG_BASE + off, &v));
		memcpy(&want, big + off, 8);
		ck_assert_uint_eq(v, want);
	}
	ck_assert_uint_eq(pyu_target_backend_reads(t), before);
}

// Prefetches 8 bytes at each of @pages[i] * 4096 + 40; returns the backend reads it took.
static uint64_t prefetch_pages(struct pyu_target *t, const unsigned *pages, unsigned n)
{
	uint64_t addrs[32];
	ck_assert_uint_le(n, 32);
	for (unsigned i = 0; i < n; i++)
		addrs[i] = BIG_BASE + (uint64_t)pages[i] * 4096 + 40;
	uint64_t before = pyu_target_backend_reads(t);
	pyu_target_prefetch_scattered(t, addrs, n, 8);
	return pyu_target_backend_reads(t) - before;
}

// A callback target has no gathered reads: a prefetch reads the pages it names as contiguous
// spans, gaps included, and copes with reads that fail whole across an unreadable gap.
START_TEST(test_span_prefetch)
{
	struct pyu_target *t = open_big(holey_read, 7);
	// 16 pages two apart then 4 more: two reads (a span is at most 32 pages).
	unsigned even[20];
	for (unsigned i = 0; i < 20; i++)
		even[i] = 200 + 2 * i;
	ck_assert_uint_eq(prefetch_pages(t, even, 20), 2);
	assert_cached_pages(t, even, 20);
	// Out of order and repeated: 10, 12 and 15 in one span (gaps of 1 and 2 pages), 30 in
	// its own (a gap of 14 pages is too long).
	unsigned near[] = {15, 10, 30, 12, 10};
	ck_assert_uint_eq(prefetch_pages(t, near, 5), 2);
	assert_cached_pages(t, near, 5);
	// Around the hole: 98 99 [101] 104 106 is one span, which fails whole; 98 is then read
	// alone, the span from 99 fails, 99 alone, the span from 101 fails, 101 alone fails and
	// is left out, 104 and 106 are one span. Seven reads, every readable page cached.
	unsigned around[] = {106, 98, 101, 104, 99};
	ck_assert_uint_eq(prefetch_pages(t, around, 5), 7);
	unsigned readable[] = {98, 99, 104, 106};
	assert_cached_pages(t, readable, 4);
	uint64_t v;
	assert_fault_at(pyu_target_read_u64(t, BIG_BASE + 101 * 4096 + 40, &v),
			BIG_BASE + 101 * 4096 + 40);
	// Ranges too (a thread's data-stack chunk): pages 300..339 in two reads.
	uint64_t addr = BIG_BASE + 300 * 4096, len = 40 * 4096;
	uint64_t before = pyu_target_backend_reads(t);
	pyu_target_prefetch_ranges(t, &addr, &len, 1);
	ck_assert_uint_eq(pyu_target_backend_reads(t) - before, 2);
	pyu_target_destroy(t);
}
END_TEST

static uint64_t rng_state = 88172645463325252ull;
static uint64_t rng(uint64_t n)
{
	rng_state ^= rng_state << 13;
	rng_state ^= rng_state >> 7;
	rng_state ^= rng_state << 17;
	return n ? rng_state % n : 0;
}

// A backend that gives all of big[] but often stops short, at any byte.
static uint64_t flaky_read(void *arg, uint64_t addr, void *buf, uint64_t len)
{
	(void)arg;
	if (len == 0 || addr < BIG_BASE || addr - BIG_BASE >= sizeof(big))
		return 0;
	uint64_t n = len < sizeof(big) - (addr - BIG_BASE) ? len : sizeof(big) - (addr - BIG_BASE);
	if (rng(3) == 0)
		n = rng(n);
	memcpy(buf, big + (addr - BIG_BASE), n);
	return n;
}

// Checks one read of [@addr, @addr + @len) against big[] and its hole.
static void check_holey_read(struct pyu_target *t, uint64_t addr, size_t len)
{
	static unsigned char buf[3 * 4096];
	uint64_t hole = BIG_BASE + HOLE_FIRST * 4096u, hole_end = BIG_BASE + (HOLE_LAST + 1) * 4096u;
	struct pyu_error *err = pyu_target_read(t, addr, buf, len);
	if (addr + len <= hole || addr >= hole_end) {
		ck_assert_msg(err == NULL, "read of %zu at 0x%" PRIx64 ": %s", len, addr,
			      err ? pyu_error_message(err) : "");
		ck_assert_mem_eq(buf, big + (addr - BIG_BASE), len);
	} else {
		assert_fault_at(err, addr > hole ? addr : hole);
	}
}

// Walks a chain of @n 8-byte links @step bytes apart from @from, newest first when @step is
// negative, checking each; returns the backend reads it took.
static uint64_t walk_chain(struct pyu_target *t, uint64_t from, int64_t step, unsigned n)
{
	uint64_t before = pyu_target_backend_reads(t), v, want;
	for (unsigned i = 0; i < n; i++) {
		uint64_t a = from + (uint64_t)((int64_t)i * step);
		ck_assert_ptr_null(pyu_target_read_u64(t, a, &v));
		memcpy(&want, big + (a - BIG_BASE), 8);
		ck_assert_uint_eq(v, want);
	}
	return pyu_target_backend_reads(t) - before;
}

// Objects allocated one after another and walked as a chain (the frame objects of 2.7-3.10):
// through 2 KiB sectors, a read for every fourth 512-byte object, unless the misses, each
// next to the last, read ahead in the chain's direction.
START_TEST(test_sector_streams)
{
	struct pyu_target *t = open_big(holey_read, 7);
	pyu_target_set_read_cost(t, 70, 20);
	// 256 objects, 128 KiB, walked down: 64 sectors, in windows doubling to 32 sectors.
	uint64_t down = walk_chain(t, BIG_BASE + 300 * 4096 + 100, -512, 256);
	ck_assert_uint_le(down, 8);
	// And up.
	uint64_t up = walk_chain(t, BIG_BASE + 400 * 4096 + 100, 512, 256);
	ck_assert_uint_le(up, 8);
	// Skips of a few sectors (an allocator's headers) keep the stream.
	ck_assert_uint_le(walk_chain(t, BIG_BASE + 500 * 4096 + 100, -3 * 2048, 40), 10);
	// Down into unreadable pages (HOLE_FIRST..HOLE_LAST) from above them: every link above
	// still reads, and a window that fails on the hole ends its stream (the next miss is
	// above where it began): 64 links in 6 reads.
	pyu_target_flush_cache(t);
	uint64_t above = BIG_BASE + ((uint64_t)HOLE_LAST + 1) * 4096;
	uint64_t n = walk_chain(t, above + 64 * 512 - 512 + 8, -512, 64);
	ck_assert_uint_le(n, 8);

	uint64_t v;
	struct pyu_error *err = pyu_target_read_u64(t, above - 512, &v);
	ck_assert_ptr_nonnull(err);
	pyu_error_destroy(err);
	// A declared mapping bounds the windows: walking down to its first byte reads nothing
	// below it (the bytes there are readable, so only the count tells).
	pyu_target_destroy(t);
	ck_assert_ptr_null(pyu_target_open_callback(holey_read, NULL, &t));
	pyu_target_set_read_cost(t, 70, 20);
	uint64_t map = BIG_BASE + 200 * 4096;
	ck_assert_ptr_null(pyu_target_add_mapping(t, map, map + 60 * 4096, 0, 1, NULL));
	holey_bytes = 0;
	walk_chain(t, map + 40 * 512 + 8, -512, 41);
	ck_assert_uint_le(holey_bytes, 22 * 1024);
	// Unrelated misses far apart read what they ask for alone.
	pyu_target_flush_cache(t);
	holey_bytes = 0;
	for (unsigned i = 0; i < 8; i++)
		ck_assert_ptr_null(pyu_target_read_u64(t, BIG_BASE + (10 + 37 * (uint64_t)i) * 4096,
						       &v));
	ck_assert_uint_eq(holey_bytes, 8 * 2048);
	pyu_target_destroy(t);
}
END_TEST

// Where bytes cost more than reads (pyu_target_set_read_cost), misses and prefetches read
// sectors, not pages: what every read returns is still the target's, in any order of reads,
// prefetches and partly cached pages, and fewer bytes cross the backend.
START_TEST(test_sector_reads)
{
	struct pyu_target *t = open_big(holey_read, 13);
	pyu_target_set_read_cost(t, 70, 20); // lldb's: 2 KiB sectors
	// Ten 8-byte objects in ten pages far apart: ten sectors, not ten pages.
	uint64_t addrs[10];
	for (unsigned i = 0; i < 10; i++)
		addrs[i] = BIG_BASE + (uint64_t)(10 + 7 * i) * 4096 + 1000;
	holey_bytes = 0;
	pyu_target_prefetch_scattered(t, addrs, 10, 8);
	ck_assert_uint_eq(holey_bytes, 10 * 2048);
	uint64_t before = pyu_target_backend_reads(t), v, want;
	for (unsigned i = 0; i < 10; i++) {
		ck_assert_ptr_null(pyu_target_read_u64(t, addrs[i], &v));
		memcpy(&want, big + (addrs[i] - BIG_BASE), 8);
		ck_assert_uint_eq(v, want);
	}
	ck_assert_uint_eq(pyu_target_backend_reads(t), before);
	// Another sector of one of those pages is a miss of one sector.
	holey_bytes = 0;
	ck_assert_ptr_null(pyu_target_read_u64(t, addrs[0] + 2048, &v));
	ck_assert_uint_eq(holey_bytes, 2048);
	// Bytes dearer still: 512-byte sectors.
	pyu_target_set_read_cost(t, 70, 80);
	holey_bytes = 0;
	ck_assert_ptr_null(pyu_target_read_u64(t, addrs[1], &v));
	ck_assert_uint_eq(holey_bytes, 512);
	memcpy(&want, big + (addrs[1] - BIG_BASE), 8);
	ck_assert_uint_eq(v, want);
	pyu_target_set_read_cost(t, 70, 20);
	// Random reads and hints, the cache far too small for all of them.
	for (unsigned round = 0; round < 20000; round++) {
		uint64_t addr = BIG_BASE + rng(sizeof(big) - 3 * 4096);
		size_t len = 1 + (size_t)rng(rng(4) ? 64 : 3 * 4096 - 1);
		switch (rng(8)) {
		case 0:
			pyu_target_prefetch(t, addr, len);
			break;
		case 1: {
			uint64_t a[24], l[24];
			unsigned n = 1 + (unsigned)rng(24);
			for (unsigned i = 0; i < n; i++) {
				a[i] = rng(10) ? BIG_BASE + rng(sizeof(big) - 3 * 4096) : 0;
				l[i] = rng(3 * 4096);
			}
			if (rng(2))
				pyu_target_prefetch_ranges(t, a, l, n);
			else
				pyu_target_prefetch_scattered(t, a, n, 1 + (size_t)rng(4096));
			break;
		}
		case 2:
			if (pyu_target_peek_u64(t, addr, &v)) {
				memcpy(&want, big + (addr - BIG_BASE), 8);
				ck_assert_uint_eq(v, want);
			}
			break;
		case 3:
			if (rng(50) == 0)
				pyu_target_flush_cache(t);
			break;
		default:
			check_holey_read(t, addr, len);
		}
	}
	// With the mapping declared, runs stay inside it; a backend that stops short anywhere
	// (not at a sector's end) never makes a read return bytes it did not give.
	pyu_target_destroy(t);
	ck_assert_ptr_null(pyu_target_open_callback(flaky_read, NULL, &t));
	pyu_target_set_read_cost(t, 70, 20);
	ck_assert_ptr_null(pyu_target_add_mapping(t, BIG_BASE, BIG_BASE + sizeof(big) / 2, 0, 1,
						  NULL));
	static unsigned char buf[3 * 4096];
	unsigned ok = 0;
	for (unsigned round = 0; round < 20000; round++) {
		uint64_t addr = BIG_BASE + rng(sizeof(big) - 3 * 4096);
		size_t len = 1 + (size_t)rng(rng(4) ? 64 : 3 * 4096 - 1);
		if (rng(4) == 0) {
			uint64_t a[8];
			for (unsigned i = 0; i < 8; i++)
				a[i] = BIG_BASE + rng(sizeof(big) - 3 * 4096);
			pyu_target_prefetch_scattered(t, a, 8, 1 + (size_t)rng(2048));
		}
		struct pyu_error *err = pyu_target_read(t, addr, buf, len);
		if (!err) {
			ck_assert_mem_eq(buf, big + (addr - BIG_BASE), len);
			ok++;
		}
		pyu_error_destroy(err);
	}
	ck_assert_uint_gt(ok, 10000); // most reads still succeed, on a retry if need be
	// Back to pages: a miss reads the whole page.
	pyu_target_destroy(t);
	ck_assert_ptr_null(pyu_target_open_callback(holey_read, NULL, &t));
	pyu_target_set_read_cost(t, 0, 0);
	holey_bytes = 0;
	ck_assert_ptr_null(pyu_target_read_u64(t, BIG_BASE + 50 * 4096 + 8, &v));
	ck_assert_uint_eq(holey_bytes % 4096, 0);
	ck_assert_uint_gt(holey_bytes, 0);
	check_holey_read(t, BIG_BASE + 99 * 4096 + 100, 4096);
	pyu_target_destroy(t);
}
END_TEST

START_TEST(test_read_cstr)
{
	static struct image img;
	struct pyu_target *t = image_target(&img);
	// Plant strings: one inside a page, one across a page boundary, one ending exactly at
	// the end of readable memory, one with no NUL before the end of memory.
	memcpy(img.data + 10, "hello", 6);
	memcpy(img.data + 4090, "boundary-string", 16);
	memcpy(img.data + IMG_LEN - 4, "end", 4);
	char *s = NULL;
	ck_assert_ptr_null(pyu_target_read_cstr(t, IMG_BASE + 10, 100, &s));
	ck_assert_str_eq(s, "hello");
	free(s);
	ck_assert_ptr_null(pyu_target_read_cstr(t, IMG_BASE + 4090, 100, &s));
	ck_assert_str_eq(s, "boundary-string");
	free(s);
	ck_assert_ptr_null(pyu_target_read_cstr(t, IMG_BASE + 10, 3, &s)); // bounded
	ck_assert_str_eq(s, "hel");
	free(s);
	ck_assert_ptr_null(pyu_target_read_cstr(t, IMG_BASE + 10, 0, &s));
	ck_assert_str_eq(s, "");
	free(s);
	ck_assert_ptr_null(pyu_target_read_cstr(t, IMG_BASE + IMG_LEN - 4, 4096, &s));
	ck_assert_str_eq(s, "end");
	free(s);
	memset(img.data + IMG_LEN - 20, 'x', 20); // no NUL before memory ends
	pyu_target_flush_cache(t);
	s = (char *)"untouched";
	struct pyu_error *err = pyu_target_read_cstr(t, IMG_BASE + IMG_LEN - 20, 4096, &s);
	ck_assert_ptr_nonnull(strstr(pyu_error_message(err), "0x13064"));
	ck_assert_int_eq(pyu_error_code(err), PYU_ERR_FAULT);
	ck_assert_str_eq(s, "untouched");
	pyu_error_destroy(err);
	err = pyu_target_read_cstr(t, UINT64_MAX - 2, 64, &s);
	ck_assert_int_eq(pyu_error_code(err), PYU_ERR_FAULT);
	pyu_error_destroy(err);
	pyu_target_destroy(t);
}
END_TEST

START_TEST(test_mappings_sorted)
{
	static struct image img;
	struct pyu_target *t = image_target(&img);
	ck_assert_ptr_null(pyu_target_add_mapping(t, 0x5000, 0x6000, 0, 1, "/lib/b.so"));
	ck_assert_ptr_null(pyu_target_add_mapping(t, 0x1000, 0x3000, 0x2000, 0, "/lib/a.so"));
	ck_assert_ptr_null(pyu_target_add_mapping(t, 0x3000, 0x4000, 0, 1, NULL));
	ck_assert_ptr_null(pyu_target_add_mapping(t, 0x9000, 0xa000, 0, 1, "[heap]"));
	struct pyu_error *err = pyu_target_add_mapping(t, 0x8000, 0x8000, 0, 0, "/empty");
	ck_assert_int_eq(pyu_error_code(err), PYU_ERR_ARGUMENT);
	pyu_error_destroy(err);

	ck_assert_uint_eq(pyu_target_mapping_count(t), 4);
	uint64_t starts[] = {0x1000, 0x3000, 0x5000, 0x9000};
	for (size_t i = 0; i < 4; i++)
		ck_assert_uint_eq(pyu_target_mapping(t, i)->start, starts[i]);
	ck_assert_ptr_null(pyu_target_mapping(t, 4));

	const struct pyu_mapping *m = pyu_target_find_mapping(t, 0x2fff);
	ck_assert_ptr_nonnull(m);
	ck_assert_str_eq(m->path, "/lib/a.so");
	ck_assert_str_eq(m->local_path, "/lib/a.so");
	ck_assert_uint_eq(m->offset, 0x2000);
	ck_assert(!m->writable);
	m = pyu_target_find_mapping(t, 0x3000); // end is exclusive: the next one
	ck_assert_ptr_nonnull(m);
	ck_assert_ptr_null(m->path);
	ck_assert_ptr_null(m->local_path);
	ck_assert(m->writable);
	ck_assert_ptr_null(pyu_target_find_mapping(t, 0x4000));
	ck_assert_ptr_null(pyu_target_find_mapping(t, 0xfff));
	ck_assert_ptr_null(pyu_target_find_mapping(t, 0xa000));
	m = pyu_target_find_mapping(t, 0x9800);
	ck_assert_str_eq(m->path, "[heap]");
	ck_assert_ptr_null(m->local_path); // a pseudo-file has no file here

	ck_assert_ptr_null(pyu_target_find_file_mapping(t, "/lib/a.so")); // offset != 0
	ck_assert_uint_eq(pyu_target_find_file_mapping(t, "/lib/b.so")->start, 0x5000);
	pyu_target_destroy(t);
}
END_TEST

START_TEST(test_path_maps)
{
	static struct image img;
	struct pyu_target *t = image_target(&img);
	ck_assert_ptr_null(pyu_target_add_mapping(t, 0x1000, 0x2000, 0, 0,
						  "/build/lib/libpython3.so"));
	ck_assert_ptr_null(pyu_target_add_path_map(t, "/build", "/opt/copy"));
	// Existing mappings follow a new map.
	ck_assert_str_eq(pyu_target_find_mapping(t, 0x1000)->local_path,
			 "/opt/copy/lib/libpython3.so");
	ck_assert_str_eq(pyu_target_find_mapping(t, 0x1000)->path, "/build/lib/libpython3.so");
	// Only whole path components match.
	char *p = pyu_target_local_path(t, "/buildx/lib.so");
	ck_assert_str_eq(p, "/buildx/lib.so");
	free(p);
	p = pyu_target_local_path(t, "/build");
	ck_assert_str_eq(p, "/opt/copy");
	free(p);
	// The longest matching prefix wins; slashes at the join are normalised.
	ck_assert_ptr_null(pyu_target_add_path_map(t, "/build/lib/", "/elsewhere/"));
	p = pyu_target_local_path(t, "/build/lib/libc.so.6");
	ck_assert_str_eq(p, "/elsewhere/libc.so.6");
	free(p);
	p = pyu_target_local_path(t, "/build/bin/python");
	ck_assert_str_eq(p, "/opt/copy/bin/python");
	free(p);
	ck_assert_ptr_null(pyu_target_add_path_map(t, "/usr/", "/sysroot"));
	p = pyu_target_local_path(t, "/usr/lib/x.so");
	ck_assert_str_eq(p, "/sysroot/lib/x.so");
	free(p);
	// Mappings added afterwards are mapped too.
	ck_assert_ptr_null(pyu_target_add_mapping(t, 0x3000, 0x4000, 0, 0, "/usr/lib/y.so"));
	ck_assert_str_eq(pyu_target_find_mapping(t, 0x3000)->local_path, "/sysroot/lib/y.so");
	struct pyu_error *err = pyu_target_add_path_map(t, "", "/x");
	ck_assert_int_eq(pyu_error_code(err), PYU_ERR_ARGUMENT);
	pyu_error_destroy(err);
	// A sysroot prefixes the paths no map matches (existing mappings follow); "/" undoes it.
	ck_assert_ptr_null(pyu_target_add_mapping(t, 0x5000, 0x6000, 0, 0, "/lib/z.so"));
	ck_assert_ptr_null(pyu_target_set_sysroot(t, "/crashed/sysroot//"));
	ck_assert_str_eq(pyu_target_find_mapping(t, 0x5000)->local_path, "/crashed/sysroot/lib/z.so");
	ck_assert_str_eq(pyu_target_find_mapping(t, 0x3000)->local_path, "/sysroot/lib/y.so");
	ck_assert_ptr_null(pyu_target_set_sysroot(t, "/"));
	ck_assert_str_eq(pyu_target_find_mapping(t, 0x5000)->local_path, "/lib/z.so");
	err = pyu_target_set_sysroot(t, "");
	ck_assert_int_eq(pyu_error_code(err), PYU_ERR_ARGUMENT);
	pyu_error_destroy(err);
	ck_assert_ptr_null(pyu_target_add_search_dir(t, "/somewhere"));
	err = pyu_target_add_search_dir(t, NULL);
	ck_assert_int_eq(pyu_error_code(err), PYU_ERR_ARGUMENT);
	pyu_error_destroy(err);
	pyu_target_destroy(t);
}
END_TEST

START_TEST(test_threads)
{
	static struct image img;
	struct pyu_target *t = image_target(&img);
	ck_assert_uint_eq(pyu_target_thread_count(t), 0);
	ck_assert_ptr_null(pyu_target_add_thread(t, 100));
	ck_assert_ptr_null(pyu_target_add_thread(t, 200));
	ck_assert_ptr_null(pyu_target_add_thread(t, 100)); // duplicates are ignored
	ck_assert_uint_eq(pyu_target_thread_count(t), 2);
	ck_assert_int_eq(pyu_target_thread(t, 0), 100);
	ck_assert_int_eq(pyu_target_thread(t, 1), 200);
	ck_assert_int_eq(pyu_target_thread(t, 2), -1);
	pyu_target_destroy(t);
	pyu_target_destroy(NULL);
}
END_TEST

// ---- live processes ------------------------------------------------------------------------

// Set before fork, so the child has it at the same address; the parent changes it after.
static volatile uint64_t live_marker;
static char live_text[64];

struct child {
	pid_t pid;
	char *spaced_path, *deleted_path, *replaced_path;
	void *spaced_map, *deleted_map, *replaced_map;
};

// Maps a one-page file at @path (writing @fill into it) and returns the mapping.
static void *map_file(const char *path, char fill)
{
	char page[4096];
	memset(page, fill, sizeof(page));
	fx_write_file(path, page, sizeof(page));
	int fd = open(path, O_RDONLY);
	ck_assert_int_ge(fd, 0);
	void *p = mmap(NULL, 4096, PROT_READ, MAP_PRIVATE, fd, 0);
	ck_assert_ptr_ne(p, MAP_FAILED);
	close(fd);
	return p;
}

// A child stopped in pause() with a file whose name has spaces and a deleted file mapped.
static void start_child(struct child *c)
{
	char *dir = fx_tmp_path();
	unlink(dir);
	ck_assert_int_eq(mkdir(dir, 0700), 0);
	size_t n = strlen(dir) + 32;
	c->spaced_path = malloc(n);
	c->deleted_path = malloc(n);
	c->replaced_path = malloc(n);
	snprintf(c->spaced_path, n, "%s/a file with spaces", dir);
	snprintf(c->deleted_path, n, "%s/gone", dir);
	snprintf(c->replaced_path, n, "%s/replaced", dir);
	c->spaced_map = map_file(c->spaced_path, 'S');
	c->deleted_map = map_file(c->deleted_path, 'D');
	c->replaced_map = map_file(c->replaced_path, 'R');
	ck_assert_int_eq(unlink(c->deleted_path), 0);
	// A new file under the old name, as when a library is rebuilt under a running process.
	char *tmp = malloc(n + 8);
	snprintf(tmp, n + 8, "%s.new", c->replaced_path);
	fx_write_file(tmp, "NEW", 3);
	ck_assert_int_eq(rename(tmp, c->replaced_path), 0);
	free(tmp);
	live_marker = 0x1122334455667788u;
	snprintf(live_text, sizeof(live_text), "child text %d", 42);
	c->pid = fork();
	ck_assert_int_ge(c->pid, 0);
	if (c->pid == 0) {
		for (;;)
			pause();
	}
	live_marker = 0; // the child keeps the old value
	memset(live_text, 0, sizeof(live_text));
	free(dir);
}

static void stop_child(struct child *c)
{
	kill(c->pid, SIGKILL);
	waitpid(c->pid, NULL, 0);
	munmap(c->spaced_map, 4096);
	munmap(c->deleted_map, 4096);
	munmap(c->replaced_map, 4096);
	unlink(c->replaced_path);
	free(c->replaced_path);
	unlink(c->spaced_path);
	char *slash = strrchr(c->spaced_path, '/');
	*slash = '\0';
	rmdir(c->spaced_path);
	free(c->spaced_path);
	free(c->deleted_path);
}

START_TEST(test_live_child)
{
	struct child c;
	start_child(&c);
	struct pyu_target *t = NULL;
	struct pyu_error *err = pyu_target_open_pid(c.pid, &t);
	ck_assert_msg(!err, "%s", pyu_error_message(err));
	uint64_t v = 0;
	ck_assert_ptr_null(pyu_target_read_u64(t, (uint64_t)(uintptr_t)&live_marker, &v));
	ck_assert_uint_eq(v, 0x1122334455667788u);
	char *s = NULL;
	ck_assert_ptr_null(pyu_target_read_cstr(t, (uint64_t)(uintptr_t)live_text, 64, &s));
	ck_assert_str_eq(s, "child text 42");
	free(s);
	// Unmapped memory faults.
	assert_fault_at(pyu_target_read_u64(t, 8, &v), 8);
	uint64_t lm = (uint64_t)(uintptr_t)&live_marker;
	// Pages prefetched from scattered addresses (an unmapped one among them is not cached and
	// still faults below) are then read from the cache, not the process.
	pyu_target_flush_cache(t);
	uint64_t scattered[] = {8, lm, (uint64_t)(uintptr_t)live_text, lm + 4};
	pyu_target_prefetch_scattered(t, scattered, 4, 8);
	uint64_t backend = pyu_target_backend_reads(t), cached = pyu_target_cached_reads(t);
	ck_assert_ptr_null(pyu_target_read_u64(t, lm, &v));
	ck_assert_uint_eq(v, 0x1122334455667788u);
	ck_assert_ptr_null(pyu_target_read_u64(t, (uint64_t)(uintptr_t)live_text, &v));
	ck_assert_uint_eq(v & 0xffffffffu, 0x6c696863u);
	ck_assert_uint_eq(pyu_target_backend_reads(t), backend);
	ck_assert_uint_eq(pyu_target_cached_reads(t), cached + 2);
	assert_fault_at(pyu_target_read_u64(t, 8, &v), 8);
	// More pages than one gathered read takes (40 pages of libc's text, from the middle of
	// it): all in the cache afterwards.
	const struct pyu_mapping *text = pyu_target_find_mapping(t, (uint64_t)(uintptr_t)&printf);
	ck_assert_ptr_nonnull(text);
	ck_assert_uint_ge(text->end - text->start, 48 * 4096);
	uint64_t pages[40];
	for (int i = 0; i < 40; i++)
		pages[i] = text->start + 4096 * (uint64_t)(i + 4) + 100;
	pyu_target_flush_cache(t);
	pyu_target_prefetch_scattered(t, pages, 40, 8);
	backend = pyu_target_backend_reads(t);
	for (int i = 0; i < 40; i++) {
		uint64_t want;
		memcpy(&want, (const void *)(uintptr_t)pages[i], 8); // the same text here
		ck_assert_ptr_null(pyu_target_read_u64(t, pages[i], &v));
		ck_assert_uint_eq(v, want);
	}
	ck_assert_uint_eq(pyu_target_backend_reads(t), backend);

	// The maps: our own executable, the file with spaces, the deleted one.
	const struct pyu_mapping *m = pyu_target_find_mapping(t, (uint64_t)(uintptr_t)&live_marker);
	ck_assert_ptr_nonnull(m);
	ck_assert(m->writable && m->readable);
	m = pyu_target_find_mapping(t, (uint64_t)(uintptr_t)c.spaced_map);
	ck_assert_ptr_nonnull(m);
	ck_assert_str_eq(m->path, c.spaced_path);
	ck_assert(!m->writable);
	// Each file is looked at when first needed (pyu_target_file_matches), not at open.
	ck_assert_int_eq(m->local_check, PYU_LOCAL_PENDING);
	ck_assert(pyu_target_file_matches(t, m));
	ck_assert_int_eq(m->local_check, PYU_LOCAL_SAME);
	ck_assert_str_eq(m->local_path, c.spaced_path);
	m = pyu_target_find_mapping(t, (uint64_t)(uintptr_t)c.deleted_map);
	ck_assert_ptr_nonnull(m);
	ck_assert_str_eq(m->path, c.deleted_path);
	ck_assert_int_eq(m->local_check, PYU_LOCAL_PENDING);
	ck_assert_str_eq(m->local_path, c.deleted_path);
	ck_assert(pyu_target_file_matches(t, m)); // no build ID to compare: taken as it is
	ck_assert_int_eq(m->local_check, PYU_LOCAL_COMPARE);
	ck_assert_ptr_nonnull(strstr(m->local_path, "/map_files/"));
	FILE *f = fopen(m->local_path, "rb"); // the kernel still serves the deleted file
	ck_assert_ptr_nonnull(f);
	ck_assert_int_eq(fgetc(f), 'D');
	fclose(f);
	ck_assert(m->local_path_fixed);
	// The replaced file: the local path reaches the file still mapped, not the new one.
	m = pyu_target_find_mapping(t, (uint64_t)(uintptr_t)c.replaced_map);
	ck_assert_ptr_nonnull(m);
	ck_assert_str_eq(m->path, c.replaced_path);
	ck_assert(pyu_target_file_matches(t, m));
	ck_assert_int_eq(m->local_check, PYU_LOCAL_COMPARE);
	ck_assert_str_ne(m->local_path, c.replaced_path);
	f = fopen(m->local_path, "rb");
	ck_assert_ptr_nonnull(f);
	ck_assert_int_eq(fgetc(f), 'R');
	fclose(f);
	// An unrelated path map leaves those alone; one that matches wins.
	ck_assert_ptr_null(pyu_target_add_path_map(t, "/unrelated", "/elsewhere"));
	m = pyu_target_find_mapping(t, (uint64_t)(uintptr_t)c.deleted_map);
	ck_assert_ptr_nonnull(strstr(m->local_path, "/map_files/"));
	// The file with spaces is where the process has it: no /proc detour.
	m = pyu_target_find_mapping(t, (uint64_t)(uintptr_t)c.spaced_map);
	ck_assert_str_eq(m->local_path, c.spaced_path);
	ck_assert(!m->local_path_fixed);
	ck_assert_int_eq(m->local_check, PYU_LOCAL_SAME);
	ck_assert_ptr_null(pyu_target_add_path_map(t, c.deleted_path, "/mapped/by/user"));
	m = pyu_target_find_mapping(t, (uint64_t)(uintptr_t)c.deleted_map);
	ck_assert_str_eq(m->local_path, "/mapped/by/user");
	ck_assert_int_eq(m->local_check, PYU_LOCAL_COMPARE); // the user's file: by build ID
	ck_assert_ptr_null(pyu_target_add_path_map(t, c.spaced_path, "/mapped/spaced"));
	m = pyu_target_find_mapping(t, (uint64_t)(uintptr_t)c.spaced_map);
	ck_assert_int_eq(m->local_check, PYU_LOCAL_COMPARE);
	unsigned char b = 0;
	ck_assert_ptr_null(pyu_target_read_u8(t, (uint64_t)(uintptr_t)c.spaced_map + 7, &b));
	ck_assert_uint_eq(b, 'S');
	size_t count = pyu_target_mapping_count(t);
	ck_assert_uint_gt(count, 3);
	for (size_t i = 1; i < count; i++)
		ck_assert_uint_le(pyu_target_mapping(t, i - 1)->end, pyu_target_mapping(t, i)->start);

	// One thread: the child itself.
	ck_assert_uint_eq(pyu_target_thread_count(t), 1);
	ck_assert_int_eq(pyu_target_thread(t, 0), c.pid);
	pyu_target_destroy(t);
	stop_child(&c);
}
END_TEST

static void *idle_thread(void *arg)
{
	int *fds = arg;
	char ch;
	while (read(fds[0], &ch, 1) < 0 && errno == EINTR)
		;
	return NULL;
}

START_TEST(test_live_self_threads)
{
	int fds[2];
	ck_assert_int_eq(pipe(fds), 0);
	pthread_t th;
	ck_assert_int_eq(pthread_create(&th, NULL, idle_thread, fds), 0);
	struct pyu_target *t = NULL;
	ck_assert_ptr_null(pyu_target_open_pid(getpid(), &t));
	ck_assert_uint_ge(pyu_target_thread_count(t), 2);
	bool found = false;
	for (size_t i = 0; i < pyu_target_thread_count(t); i++)
		found |= pyu_target_thread(t, i) == (int64_t)syscall(SYS_gettid);
	ck_assert(found);
	// Reading our own live memory through the target.
	static const char text[] = "read through the kernel";
	char *s = NULL;
	ck_assert_ptr_null(pyu_target_read_cstr(t, (uint64_t)(uintptr_t)text, 100, &s));
	ck_assert_str_eq(s, text);
	free(s);
	pyu_target_destroy(t);
	ck_assert_int_eq(write(fds[1], "x", 1), 1);
	pthread_join(th, NULL);
	close(fds[0]);
	close(fds[1]);
}
END_TEST

static void *report_tid(void *arg)
{
	*(int64_t *)arg = (int64_t)syscall(SYS_gettid);
	return NULL;
}

struct idle_reporter {
	int fds[2];   // the thread ends when a byte arrives
	int ready[2]; // and writes one once its id is set
	int64_t tid;
};

static void *idle_reporting(void *arg)
{
	struct idle_reporter *r = arg;
	r->tid = (int64_t)syscall(SYS_gettid);
	if (write(r->ready[1], "r", 1) != 1)
		return NULL;
	return idle_thread(r->fds);
}

// pyu_target_has_thread: an id of the last listing is taken at a later snapshot without
// listing again (even one whose thread has ended since: its descriptor's copy of the id is
// cleared by the kernel, which is what the check relies on), any other id lists again.
START_TEST(test_live_has_thread)
{
	struct pyu_target *t = NULL;
	ck_assert_ptr_null(pyu_target_open_pid(getpid(), &t));
	int64_t me = (int64_t)syscall(SYS_gettid);
	pyu_target_begin_snapshot(t);
	ck_assert(pyu_target_has_thread(t, me));
	ck_assert(!pyu_target_has_thread(t, 0));
	ck_assert(!pyu_target_has_thread(t, -1));
	ck_assert(!pyu_target_has_thread(t, INT64_C(1) << 40));
	size_t before = pyu_target_thread_count(t);

	pyu_target_begin_snapshot(t);
	int64_t other = 0;
	pthread_t th;
	ck_assert_int_eq(pthread_create(&th, NULL, report_tid, &other), 0);
	ck_assert_int_eq(pthread_join(th, NULL), 0);
	ck_assert_int_gt(other, 0);
	ck_assert(pyu_target_has_thread(t, me));
	pyu_target_begin_snapshot(t);
	// Ended before this snapshot, never listed: listed again, and not there.
	ck_assert(!pyu_target_has_thread(t, other));
	ck_assert_uint_eq(pyu_target_thread_count(t), before);

	// Started since the last listing and running: found by listing again.
	struct idle_reporter r = {.tid = 0};
	ck_assert_int_eq(pipe(r.fds), 0);
	ck_assert_int_eq(pipe(r.ready), 0);
	ck_assert_int_eq(pthread_create(&th, NULL, idle_reporting, &r), 0);
	char ch;
	ck_assert_int_eq(read(r.ready[0], &ch, 1), 1);
	pyu_target_begin_snapshot(t);
	ck_assert(pyu_target_has_thread(t, r.tid));
	ck_assert_uint_eq(pyu_target_thread_count(t), before + 1);
	ck_assert_int_eq(write(r.fds[1], "x", 1), 1);
	ck_assert_int_eq(pthread_join(th, NULL), 0);
	// Ended since, but held by the last listing: taken without listing again.
	pyu_target_begin_snapshot(t);
	ck_assert(pyu_target_has_thread(t, r.tid));
	ck_assert_uint_eq(pyu_target_thread_count(t), before); // listed when asked for
	for (int i = 0; i < 2; i++) {
		close(r.fds[i]);
		close(r.ready[i]);
	}
	pyu_target_destroy(t);
}
END_TEST

static bool process_vm_readv_works(pid_t pid);

// In a child: forbid process_vm_readv (as container seccomp profiles do, with EPERM), then
// read a grandchild's memory, which must fall back to /proc/PID/mem. Returns an exit code:
// 0 success, 10+ which step failed.
static int read_without_process_vm_readv(void)
{
	pid_t sleeper = fork();
	if (sleeper < 0)
		return 10;
	if (sleeper == 0) {
		for (;;)
			pause();
	}
	struct sock_filter filter[] = {
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_process_vm_readv, 0, 1),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | (EPERM & SECCOMP_RET_DATA)),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
	};
	struct sock_fprog prog = {sizeof(filter) / sizeof(filter[0]), filter};
	int rc = 0;
	struct pyu_target *t = NULL;
	uint64_t v = 0;
	unsigned char b;
	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0 ||
	    prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog) != 0)
		rc = 11;
	else if (process_vm_readv_works(sleeper))
		rc = 12; // the filter did not take
	else if (pyu_target_open_pid(sleeper, &t))
		rc = 13;
	else if (pyu_target_read_u64(t, (uint64_t)(uintptr_t)&live_marker, &v) ||
		 v != 0x1122334455667788u)
		rc = 14;
	else if (!pyu_target_read_u8(t, 8, &b)) // unmapped memory still faults
		rc = 15;
	else {
		// Without process_vm_readv nothing is gathered: reads still go through
		// /proc/PID/mem.
		uint64_t addrs[] = {(uint64_t)(uintptr_t)&live_marker, 8};
		pyu_target_prefetch_scattered(t, addrs, 2, 8);
		if (pyu_target_read_u64(t, addrs[0], &v) || v != 0x1122334455667788u)
			rc = 16;
	}
	pyu_target_destroy(t);
	kill(sleeper, SIGKILL);
	waitpid(sleeper, NULL, 0);
	return rc;
}

static bool process_vm_readv_works(pid_t pid)
{
	uint64_t v;
	struct iovec local = {&v, sizeof(v)};
	struct iovec remote = {(void *)&live_marker, sizeof(v)};
	return process_vm_readv(pid, &local, 1, &remote, 1, 0) == sizeof(v);
}

START_TEST(test_live_mem_fallback)
{
	live_marker = 0x1122334455667788u;
	pid_t reader = fork();
	ck_assert_int_ge(reader, 0);
	if (reader == 0)
		_exit(read_without_process_vm_readv());
	live_marker = 0;
	int status = 0;
	ck_assert_int_eq(waitpid(reader, &status, 0), reader);
	ck_assert_msg(WIFEXITED(status) && WEXITSTATUS(status) == 0,
		      "reader failed with status 0x%x", status);
}
END_TEST

// Opens a process this process may not read: as root, after dropping to "nobody", our
// parent; otherwise pid 1. Returns 0 when the error says "permission denied" with the hint.
static int open_forbidden(void)
{
	pid_t victim = getppid();
	if (getuid() == 0) {
		if (setgroups(0, NULL) != 0 || setgid(65534) != 0 || setuid(65534) != 0)
			return 10;
	} else {
		victim = 1;
	}
	struct pyu_target *t = NULL;
	struct pyu_error *err = pyu_target_open_pid(victim, &t);
	int rc = 0;
	if (!err)
		rc = 11;
	else if (pyu_error_code(err) != PYU_ERR_IO)
		rc = 12;
	else if (!strstr(pyu_error_message(err), "permission denied") ||
		 !strstr(pyu_error_message(err), "ptrace_scope"))
		rc = 13;
	pyu_error_destroy(err);
	pyu_target_destroy(t);
	return rc;
}

START_TEST(test_live_permission_denied)
{
	pid_t child = fork();
	ck_assert_int_ge(child, 0);
	if (child == 0)
		_exit(open_forbidden());
	int status = 0;
	ck_assert_int_eq(waitpid(child, &status, 0), child);
	ck_assert_msg(WIFEXITED(status) && WEXITSTATUS(status) == 0, "status 0x%x", status);
}
END_TEST

// Forks a child that runs @serve(its end of the request pipe, its end of the answer pipe)
// and exits 0 when it returns; the parent's ends go to @to and @from.
static pid_t start_serving_child(int *to, int *from, void (*serve)(int in, int out))
{
	int a[2], b[2];
	ck_assert_int_eq(pipe(a), 0);
	ck_assert_int_eq(pipe(b), 0);
	pid_t pid = fork();
	ck_assert_int_ge(pid, 0);
	if (pid == 0) {
		close(a[1]);
		close(b[0]);
		serve(a[0], b[1]);
		_exit(0);
	}
	close(a[0]);
	close(b[1]);
	*to = a[1];
	*from = b[0];
	return pid;
}

// For each byte read from @in, adds one to live_marker and maps one more page, then writes
// that page's address to @out.
static void serve_changing(int in, int out)
{
	live_marker = 1;
	char ch = 0;
	while (read(in, &ch, 1) == 1) {
		live_marker++;
		void *p = mmap(NULL, 4096, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		uint64_t at = (uint64_t)(uintptr_t)p;
		if (p == MAP_FAILED || write(out, &at, 8) != 8)
			_exit(1);
	}
}

// A child that changes as serve_changing says, once already (live_marker 2) when this returns.
static pid_t start_changing_child(int *to, int *from)
{
	pid_t pid = start_serving_child(to, from, serve_changing);
	char ch = 0;
	uint64_t at;
	ck_assert_int_eq(write(*to, &ch, 1), 1); // marker 2 once it answers
	ck_assert_int_eq(read(*from, &at, 8), 8);
	return pid;
}

// A live process changes between snapshots: each snapshot reads it again (memory, and its
// mappings at most once: when first needed); within one snapshot the cached page answers.
START_TEST(test_live_snapshots)
{
	int to, from;
	pid_t pid = start_changing_child(&to, &from);
	struct pyu_target *t = NULL;
	ck_assert_ptr_null(pyu_target_open_pid(pid, &t));
	ck_assert(pyu_target_changes(t));
	uint64_t lm = (uint64_t)(uintptr_t)&live_marker, v = 0;
	for (uint64_t want = 2; want < 6; want++) {
		pyu_target_begin_snapshot(t);
		ck_assert_uint_eq(pyu_target_snapshot(t), 2 * (want - 2) + 1);
		// Stale since the snapshot began, or (the first) only the start of the map read by
		// the open: read now, then not again.
		ck_assert(pyu_target_mappings_partial(t) == (want == 2));
		ck_assert(pyu_target_reread_mappings(t));
		ck_assert(!pyu_target_mappings_partial(t));
		ck_assert(!pyu_target_reread_mappings(t));
		ck_assert_ptr_null(pyu_target_read_u64(t, lm, &v));
		ck_assert_uint_eq(v, want);
		char ch = 0;
		uint64_t page = 0;
		ck_assert_int_eq(write(to, &ch, 1), 1);
		ck_assert_int_eq(read(from, &page, 8), 8);
		// The same snapshot: the page read is not read again, nor the mappings read this
		// snapshot: the new mapping is not seen.
		ck_assert_ptr_null(pyu_target_read_u64(t, lm, &v));
		ck_assert_uint_eq(v, want);
		ck_assert_ptr_null(pyu_target_find_mapping(t, page));
		pyu_target_begin_snapshot(t);
		ck_assert_ptr_null(pyu_target_read_u64(t, lm, &v));
		ck_assert_uint_eq(v, want + 1);
		// Outside every mapping known: they are read again, and the new one is there.
		const struct pyu_mapping *m = pyu_target_find_mapping(t, page);
		ck_assert_ptr_nonnull(m);
		ck_assert(!m->writable && m->readable && !m->path);
		// What was learnt of a file mapping unchanged is kept.
		m = pyu_target_find_mapping(t, (uint64_t)(uintptr_t)&printf);
		ck_assert_ptr_nonnull(m);
		ck_assert(pyu_target_file_matches(t, m));
		ck_assert_int_eq(m->local_check, PYU_LOCAL_SAME);
	}
	close(to);
	close(from);
	waitpid(pid, NULL, 0);
	pyu_target_destroy(t);
}
END_TEST

// A debugger's target changes between its stops too; a core never does.
START_TEST(test_callback_snapshots)
{
	struct image img = {0};
	struct pyu_target *t = image_target(&img);
	ck_assert(pyu_target_changes(t));
	uint64_t v = 0, want;
	pyu_target_begin_snapshot(t);
	ck_assert_ptr_null(pyu_target_read_u64(t, IMG_BASE + 64, &v));
	memcpy(&want, img.data + 64, 8);
	ck_assert_uint_eq(v, want);
	img.data[64] ^= 0xff;
	ck_assert_ptr_null(pyu_target_read_u64(t, IMG_BASE + 64, &v));
	ck_assert_uint_eq(v, want); // cached within a snapshot
	pyu_target_begin_snapshot(t);
	ck_assert_ptr_null(pyu_target_read_u64(t, IMG_BASE + 64, &v));
	memcpy(&want, img.data + 64, 8);
	ck_assert_uint_eq(v, want);
	ck_assert_uint_eq(pyu_target_snapshot(t), 2);
	pyu_target_destroy(t);
}
END_TEST

START_TEST(test_live_no_such_process)
{
	struct pyu_target *t = (struct pyu_target *)&t; // must stay untouched
	struct pyu_error *err = pyu_target_open_pid(0x7ffffff0, &t);
	ck_assert_int_eq(pyu_error_code(err), PYU_ERR_IO);
	ck_assert_ptr_nonnull(strstr(pyu_error_message(err), "no such process"));
	ck_assert_ptr_eq(t, (struct pyu_target *)&t);
	pyu_error_destroy(err);
	err = pyu_target_open_pid(-1, &t);
	ck_assert_int_eq(pyu_error_code(err), PYU_ERR_ARGUMENT);
	pyu_error_destroy(err);
}
END_TEST

// Page-aligned, so that the units a test reads of it are its own to choose; written by a
// child as told (start_page_child).
static volatile unsigned char live_page[4096] __attribute__((aligned(4096)));

// For each offset and byte read from @in, writes the byte at that offset of live_page and
// answers one byte on @out.
static void serve_page(int in, int out)
{
	uint16_t cmd[2];
	while (read(in, cmd, sizeof(cmd)) == sizeof(cmd)) {
		live_page[cmd[0] % sizeof(live_page)] = (unsigned char)cmd[1];
		if (write(out, "", 1) != 1)
			_exit(1);
	}
}

// A child that writes live_page as serve_page says.
static pid_t start_page_child(int *to, int *from)
{
	return start_serving_child(to, from, serve_page);
}

static void poke_page(int to, int from, uint16_t off, uint8_t value)
{
	uint16_t cmd[2] = {off, value};
	char ch;
	ck_assert_int_eq(write(to, cmd, sizeof(cmd)), sizeof(cmd));
	ck_assert_int_eq(read(from, &ch, 1), 1);
}

// The next snapshot of a live process gathers only the units of a page the last walk read:
// those are read from the cache, and any other byte of that page (still in the slot from
// before, or never read) is a miss read from the process, new values and all.
START_TEST(test_live_gathered_units)
{
	int to, from;
	pid_t pid = start_page_child(&to, &from);
	poke_page(to, from, 0, 7);
	struct pyu_target *t = NULL;
	ck_assert_ptr_null(pyu_target_open_pid(pid, &t));
	const uint64_t base = (uint64_t)(uintptr_t)live_page;
	uint8_t b = 0;
	unsigned char buf[10];
	pyu_target_begin_snapshot(t);
	ck_assert_ptr_null(pyu_target_read_u8(t, base, &b)); // the walk reads its first unit
	ck_assert_uint_eq(b, 7);
	pyu_target_note_used_pages(t);
	ck_assert_ptr_null(pyu_target_read_u8(t, base + 2048, &b)); // after the walk
	ck_assert_uint_eq(b, 0);
	poke_page(to, from, 0, 1);
	poke_page(to, from, 70, 3);
	poke_page(to, from, 2048, 2);
	pyu_target_begin_snapshot(t);
	uint64_t reads = pyu_target_backend_reads(t);
	ck_assert_ptr_null(pyu_target_read_u8(t, base, &b));
	ck_assert_uint_eq(b, 1); // gathered as the snapshot began
	ck_assert_uint_eq(pyu_target_backend_reads(t), reads);
	// From the gathered unit into the next one: a miss.
	ck_assert_ptr_null(pyu_target_read(t, base + 62, buf, sizeof(buf)));
	ck_assert_uint_eq(buf[8], 3);
	ck_assert_uint_gt(pyu_target_backend_reads(t), reads);
	ck_assert_ptr_null(pyu_target_read_u8(t, base + 2048, &b));
	ck_assert_uint_eq(b, 2);
	close(to);
	close(from);
	waitpid(pid, NULL, 0);
	pyu_target_destroy(t);
}
END_TEST

// A process whose lowest mapping is a file with a path so long that its line of
// /proc/PID/maps is longer than what an open reads first: the open reads on to the line's
// end, rather than find no mapping at all and call the process a kernel thread.
START_TEST(test_live_long_first_line)
{
	char dir[2048] = "/tmp/pyu-check-XXXXXX";
	ck_assert_ptr_nonnull(mkdtemp(dir));
	char top[sizeof(dir)];
	strcpy(top, dir);
	char part[201];
	memset(part, 'd', 200);
	part[200] = '\0';
	for (int i = 0; i < 6; i++) {
		size_t n = strlen(dir);
		snprintf(dir + n, sizeof(dir) - n, "/%s", part);
		ck_assert_int_eq(mkdir(dir, 0700), 0);
	}
	char file[sizeof(dir) + 8];
	snprintf(file, sizeof(file), "%s/f", dir);
	ck_assert_uint_gt(strlen(file), 1100);
	int fd = open(file, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(ftruncate(fd, 4096), 0);
	int ready[2];
	ck_assert_int_eq(pipe(ready), 0);
	const uint64_t low = 0x100000; // below any executable's, at or above mmap_min_addr
	pid_t pid = fork();
	ck_assert_int_ge(pid, 0);
	if (pid == 0) {
		void *p = mmap((void *)(uintptr_t)low, 4096, PROT_READ,
			       MAP_PRIVATE | MAP_FIXED_NOREPLACE, fd, 0);
		char ch = p == (void *)(uintptr_t)low;
		if (write(ready[1], &ch, 1) != 1)
			_exit(1);
		pause();
		_exit(0);
	}
	close(ready[1]);
	char ch = 0;
	ck_assert_int_eq(read(ready[0], &ch, 1), 1);
	ck_assert_int_eq(ch, 1);
	struct pyu_target *t = NULL;
	struct pyu_error *err = pyu_target_open_pid(pid, &t);
	ck_assert_msg(!err, "%s", pyu_error_message(err));
	ck_assert(pyu_target_known_mapping_count(t) >= 1);
	const struct pyu_mapping *m = pyu_target_mapping(t, 0);
	ck_assert_uint_eq(m->start, low);
	ck_assert_str_eq(m->path, file);
	pyu_target_destroy(t);
	kill(pid, SIGKILL);
	waitpid(pid, NULL, 0);
	close(ready[0]);
	close(fd);
	unlink(file);
	for (size_t n = strlen(dir); n > strlen(top); n = strlen(dir)) {
		ck_assert_int_eq(rmdir(dir), 0);
		*strrchr(dir, '/') = '\0';
	}
	ck_assert_int_eq(rmdir(top), 0);
}
END_TEST

static Suite *target_suite(void)
{
	Suite *s = suite_create("target");
	TCase *tc = tcase_create("callback");
	tcase_add_test(tc, test_callback_typed_reads);
	tcase_add_test(tc, test_callback_failing);
	tcase_add_test(tc, test_cache_counters);
	tcase_add_test(tc, test_cache_many_pages);
	tcase_add_test(tc, test_memory_changed);
	tcase_add_test(tc, test_all_or_nothing_callback);
	tcase_add_test(tc, test_span_prefetch);
	tcase_add_test(tc, test_sector_reads);
	tcase_add_test(tc, test_sector_streams);
	tcase_add_test(tc, test_read_cstr);
	tcase_add_test(tc, test_mappings_sorted);
	tcase_add_test(tc, test_path_maps);
	tcase_add_test(tc, test_threads);
	tcase_add_test(tc, test_callback_snapshots);
	suite_add_tcase(s, tc);
	TCase *live = tcase_create("live");
	tcase_set_timeout(live, 60);
	tcase_add_test(live, test_live_child);
	tcase_add_test(live, test_live_self_threads);
	tcase_add_test(live, test_live_has_thread);
	tcase_add_test(live, test_live_mem_fallback);
	tcase_add_test(live, test_live_permission_denied);
	tcase_add_test(live, test_live_no_such_process);
	tcase_add_test(live, test_live_snapshots);
	tcase_add_test(live, test_live_long_first_line);
	tcase_add_test(live, test_live_gathered_units);
	suite_add_tcase(s, live);
	return s;
}

PYU_CHECK_MAIN(target_suite)
