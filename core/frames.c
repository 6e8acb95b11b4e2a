// frames.c - one thread's frame chain: PyFrameObjects linked by f_back (<= 3.10) or
// _PyInterpreterFrames linked by previous (3.11+), innermost first, each with its code object
// (codes.c) and location. Bounded by a depth limit, protected against cycles (Brent's
// algorithm: no memory per frame), and every read checked: a frame that cannot be read
// becomes an error frame saying why. Also steps over entry frames a core lacks, using the
// thread's data stack.
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bytes.h"
#include "objects.h"
#include "runtime.h"

// A line stored in the frame overrides the table (tracing, a debugger's jump). The table's
// columns describe the instruction, so they are kept only when they are on that line.
static void override_line(struct pyu_location *loc, int32_t line)
{
	if (loc->line == line)
		return;
	*loc = (struct pyu_location){line, line, PYU_NO_COLUMN, PYU_NO_COLUMN};
}

static struct pyu_error *grow_frames(struct pyu_thread_info *th, uint32_t *cap)
{
	uint32_t n = *cap ? *cap * 2 : 16;
	struct pyu_frame_info *frames = realloc(th->frames, n * sizeof(*frames));
	if (!frames)
		return &pyu_error_nomem;
	th->frames = frames;
	*cap = n;
	return NULL;
}

static inline struct pyu_error *push_frame(struct pyu_thread_info *th,
					   const struct pyu_frame_info *f, uint32_t *cap)
{
	struct pyu_error *err = th->frame_count == *cap ? grow_frames(th, cap) : NULL;
	if (!err)
		th->frames[th->frame_count++] = *f;
	return err;
}

static struct pyu_error *push_error(struct pyu_thread_info *th, uint32_t *cap, uint64_t addr,
				    const char *fmt, ...) __attribute__((format(printf, 4, 5)));
static struct pyu_error *push_error(struct pyu_thread_info *th, uint32_t *cap, uint64_t addr,
				    const char *fmt, ...)
{
	struct pyu_frame_info f = {0};
	f.kind = PYU_FRAME_ERROR;
	f.code = -1;
	f.loc = (struct pyu_location){PYU_NO_LINE, PYU_NO_LINE, PYU_NO_COLUMN, PYU_NO_COLUMN};
	f.instruction_offset = -1;
	f.frame_address = addr;
	va_list ap;
	va_start(ap, fmt);
	char msg[512];
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	f.reason = strdup(msg);
	if (!f.reason)
		return &pyu_error_nomem;
	struct pyu_error *err = push_frame(th, &f, cap);
	if (err)
		free(f.reason);
	else
		th->error_frames++;
	return err;
}

// Error frame from @err (consumed).
static struct pyu_error *push_error_from(struct pyu_thread_info *th, uint32_t *cap,
					 uint64_t addr, struct pyu_error *err)
{
	if (err == &pyu_error_nomem)
		return err;
	struct pyu_error *e = push_error(th, cap, addr, "%s", pyu_error_message(err));
	pyu_error_destroy(err);
	return e;
}

// The walk's index of the code object at @code, or -1 with an error frame for the frame at
// @addr in its place (the walk goes on past it); an error only when that could not be pushed.
static struct pyu_error *code_or_error_frame(struct pyu_walk *w, struct pyu_thread_info *th,
					     uint32_t *cap, uint64_t addr, uint64_t code,
					     int32_t *index)
{
	struct pyu_error *err = pyu_code_get(w, code, index);
	if (!err)
		return NULL;
	*index = -1;
	return push_error_from(th, cap, addr, err);
}

// Brent's cycle detection over the frame addresses of one chain.
struct cycle {
	uint64_t saved;
	uint64_t power, steps;
};

static bool cycle_seen(struct cycle *c, uint64_t addr)
{
	if (addr == c->saved)
		return true;
	if (++c->steps == c->power) {
		c->saved = addr;
		c->power *= 2;
		c->steps = 0;
	}
	return false;
}

static uint32_t depth_bound(const struct pyu_walk *w)
{
	return w->max_frames ? w->max_frames : PYU_MAX_FRAMES;
}

// Follows the chain from @addr (through the link at @link of each frame, to a NULL link or
// @stop) without decoding it. Returns true with *tail the frame PYU_TAIL_FRAMES links before
// the end (@addr itself when the chain is shorter) and *skipped the links between @addr and
// *tail; false when the chain cannot be followed to its end (unreadable, a cycle, longer
// than PYU_MAX_SKIPPED links): then nothing past the bound can be trusted.
static bool skip_to_tail(struct pyu_walk *w, uint64_t addr, int32_t link, uint64_t stop,
			 uint64_t *tail, uint64_t *skipped)
{
	uint64_t ring[PYU_TAIL_FRAMES];
	uint64_t n = 0;
	struct cycle cyc = {0, 1, 0};
	while (addr && addr != stop) {
		if (n >= PYU_MAX_SKIPPED || cycle_seen(&cyc, addr))
			return false;
		ring[n % PYU_TAIL_FRAMES] = addr;
		n++;
		struct pyu_error *err = pyu_target_read_u64(w->t, addr + (uint64_t)link, &addr);
		if (err) {
			pyu_error_destroy(err);
			return false;
		}
	}
	if (n == 0)
		return false;
	*skipped = n > PYU_TAIL_FRAMES ? n - PYU_TAIL_FRAMES : 0;
	*tail = n > PYU_TAIL_FRAMES ? ring[n % PYU_TAIL_FRAMES] : ring[0];
	return true;
}

// At the depth bound: an error frame saying how many frames are left out, and in *addr the
// first of the outermost ones to read on with (*tailed set); or, when the chain's end cannot
// be reached, the error frame that ends the walk (returned in *end).
static struct pyu_error *pass_bound(struct pyu_walk *w, struct pyu_thread_info *th,
				    uint32_t *cap, uint64_t *addr, int32_t link, uint64_t stop,
				    bool *tailed, bool *end)
{
	uint64_t tail, skipped;
	*end = true;
	if (!skip_to_tail(w, *addr, link, stop, &tail, &skipped))
		return push_error(th, cap, *addr, "depth limit of %u frames reached",
				  depth_bound(w));
	*end = false;
	*tailed = true;
	struct pyu_error *err = push_error(th, cap, *addr,
					   "%" PRIu64 " frame links left out past the depth bound "
					   "of %u frames; the outermost %u follow", skipped,
					   depth_bound(w), PYU_TAIL_FRAMES);
	*addr = tail;
	return err;
}

// The bytes of a PyFrameObject the walk reads: up to the end of the last field it uses (the
// block stack and the locals after them are a frame's bulk, and a live target's reused handle
// reads again just what was read: the layout check keeps every field inside frame.size).
static size_t frame_read_size(const struct pyu_layout *l)
{
	const int32_t ends[] = {l->frame.f_back + 8, l->frame.f_code + 8, l->frame.f_trace + 8,
				l->frame.f_lasti + 4, l->frame.f_lineno + 4};
	int32_t end = 0;
	for (size_t i = 0; i < sizeof(ends) / sizeof(ends[0]); i++)
		end = ends[i] > end ? ends[i] : end;
	return end > 0 && end < l->frame.size ? (size_t)end : (size_t)l->frame.size;
}

// A PyFrameObject chain (2.7 - 3.10).
static struct pyu_error *walk_frame_objects(struct pyu_walk *w, uint64_t addr,
					    struct pyu_thread_info *th, uint32_t *cap)
{
	const struct pyu_layout *l = &w->rt->layout;
	const size_t read_size = frame_read_size(l);
	struct cycle cyc = {0, 1, 0};
	uint8_t buf[PYU_LAYOUT_MAX_STRUCT];
	struct pyu_error *err;
	bool tailed = false;
	// Room for a typical stack at once: grown from 16, 50 frames took three reallocs, 300 a
	// snapshot of 100 threads (4% of its instructions). Without it, the walk grows as ever.
	if (!th->frames && *cap == 0 && (th->frames = malloc(64 * sizeof(*th->frames))) != NULL)
		*cap = 64;
	for (uint32_t depth = 0; addr; depth++) {
		if (depth >= depth_bound(w) + (tailed ? 2 * PYU_TAIL_FRAMES : 0)) {
			if (tailed)
				return push_error(th, cap, addr, "depth limit of %u frames reached",
						  depth_bound(w));
			bool end;
			err = pass_bound(w, th, cap, &addr, l->frame.f_back, 0, &tailed, &end);
			if (err || end)
				return err;
			cyc = (struct cycle){0, 1, 0};
		}
		if (cycle_seen(&cyc, addr))
			return push_error(th, cap, addr, "cycle in the frame chain at 0x%" PRIx64,
					  addr);
		err = pyu_target_read(w->t, addr, buf, read_size);
		if (err)
			return push_error_from(th, cap, addr,
					       pyu_error_wrap(err, "reading the frame at 0x%" PRIx64,
							      addr));
		uint64_t code = pyu_get_u64(buf, l->frame.f_code);
		int32_t lasti = pyu_get_i32(buf, l->frame.f_lasti);
		uint64_t next = pyu_get_u64(buf, l->frame.f_back);
		int32_t index;
		err = code_or_error_frame(w, th, cap, addr, code, &index);
		if (err)
			return err;
		if (index < 0) {
			addr = next;
			continue;
		}
		struct pyu_frame_info f = {0};
		f.kind = PYU_FRAME_PYTHON;
		f.code = index;
		f.frame_address = addr;
		int64_t q = lasti < 0 ? -1 : l->lasti == PYU_LASTI_CODE_UNITS ? 2 * (int64_t)lasti
									   : lasti;
		f.instruction_offset = q;
		if (q >= 0 && (uint64_t)q >= w->s->codes[index].code_len) {
			err = push_error(th, cap, addr,
					 "frame at 0x%" PRIx64 ": instruction offset %" PRId64
					 " outside its %" PRIu64 "-byte code", addr, q,
					 w->s->codes[index].code_len);
			if (err)
				return err;
			addr = next;
			continue;
		}
		f.loc = pyu_code_locate(w, index, q);
		int32_t lineno = pyu_get_i32(buf, l->frame.f_lineno);
		if (l->lineno_rule == PYU_LINENO_IF_TRACED && pyu_get_u64(buf, l->frame.f_trace) != 0)
			override_line(&f.loc, lineno);
		else if (l->lineno_rule == PYU_LINENO_IF_NONZERO && lineno != 0)
			override_line(&f.loc, lineno);
		err = push_frame(th, &f, cap);
		if (err)
			return err;
		addr = next;
	}
	return NULL;
}

// ---- the data stack -------------------------------------------------------------------------
// Frames owned by a thread live contiguously in its data-stack chunks, each frame co_framesize
// slots long. When an entry frame on the native stack cannot be read (gdb leaves stacks with
// guard regions out of its cores), the chain is continued at the data-stack frame right below
// the lowest one already seen: that is the Python caller the entry frame would have led to.

#define MAX_CHUNKS 65536 // a data stack PYU_MAX_FRAMES deep takes thousands of 16 KB chunks
#define CHUNK_DATA 24 // offsetof(_PyStackChunk, data): previous, size, top come first
#define MIN_CHUNK (16u << 10) // _PY_DATA_STACK_CHUNK_SIZE: no chunk is smaller
#define PYU_PAGE_BYTES 4096u    // pages as the target's page cache keeps them
#define PYU_PAGES_PER_BATCH 96u // frame-object pages read at once (one gathered read takes 128)

struct stack_frames {
	bool loaded;
	bool complete; // every chunk and frame was read: an empty or short list is the truth
	uint64_t *addrs; // bottom (oldest) first
	size_t n;
	uint64_t *sorted; // the same addresses, sorted, for lookups
};

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return x < y ? -1 : x > y;
}

// Enumerates the frames of every chunk. Failures only shorten the list, and leave
// sf->complete false so that a short list is not taken for the whole data stack.
static void load_stack_frames(struct pyu_walk *w, const struct pyu_frame_start *st,
			      struct stack_frames *sf)
{
	const struct pyu_layout *l = &w->rt->layout;
	sf->loaded = true;
	bool complete = true;
	uint64_t (*chunks)[3] = NULL; // address, previous, top (slots)
	size_t nc = 0, chunk_cap = 0;
	for (uint64_t c = st->chunk; c; nc++) {
		uint64_t hdr[3];
		if (nc == chunk_cap && nc < MAX_CHUNKS) {
			size_t n = chunk_cap ? 2 * chunk_cap : 64;
			uint64_t(*grown)[3] = realloc(chunks, n * sizeof(*chunks));
			if (grown)
				chunks = grown, chunk_cap = n;
		}
		struct pyu_error *err = nc < chunk_cap ? pyu_target_read(w->t, c, hdr, sizeof(hdr))
						       : NULL;
		if (nc >= chunk_cap || err) {
			pyu_error_destroy(err);
			complete = false;
			break;
		}
		chunks[nc][0] = c;
		chunks[nc][1] = hdr[0];
		chunks[nc][2] = hdr[2];
		c = hdr[0];
	}
	size_t cap = 256;
	sf->addrs = malloc(cap * sizeof(*sf->addrs));
	if (!sf->addrs) {
		free(chunks);
		return;
	}
	uint8_t buf[PYU_LAYOUT_MAX_STRUCT];
	// The code object of the last frame and its frame size: a recursion's frames run one
	// code object, whose size is read once, not once a frame.
	uint64_t last_code = 0;
	uint32_t last_fs = 0;
	for (size_t i = nc; i-- > 0;) {
		uint64_t data = chunks[i][0] + CHUNK_DATA;
		uint64_t a = data + (chunks[i][1] == 0 ? 8 : 0); // the root chunk skips a slot
		uint64_t end = i == 0 ? st->top : data + 8 * chunks[i][2];
		if (end < a || end - a > (64u << 20)) {
			complete = false;
			continue;
		}
		while (a < end) {
			uint32_t fs;
			if (sf->n >= PYU_MAX_FRAMES) {
				complete = false;
				break;
			}
			if (sf->n == cap) {
				uint64_t *grown = realloc(sf->addrs, 2 * cap * sizeof(*grown));
				if (!grown) {
					complete = false;
					break;
				}
				sf->addrs = grown;
				cap *= 2;
			}
			struct pyu_error *err = pyu_target_read(w->t, a, buf, (size_t)l->iframe.size);
			uint64_t code = err ? 0 : pyu_get_u64(buf, l->iframe.code) & ~l->stackref_mask;
			if (!err && code && code == last_code)
				fs = last_fs;
			else if (!err)
				err = pyu_target_read_u32(w->t, code + (uint64_t)l->code.framesize, &fs);
			if (!err) {
				last_code = code;
				last_fs = fs;
			}
			if (err || fs == 0 || fs > (1u << 20)) {
				pyu_error_destroy(err);
				complete = false;
				break;
			}
			sf->addrs[sf->n++] = a;
			a += 8 * (uint64_t)fs;
		}
	}
	free(chunks);
	sf->complete = complete;
	sf->sorted = malloc((sf->n ? sf->n : 1) * sizeof(*sf->sorted));
	if (!sf->sorted) {
		sf->n = 0;
		return;
	}
	memcpy(sf->sorted, sf->addrs, sf->n * sizeof(*sf->sorted));
	// Frames rise within a chunk, so a data stack of one chunk (nearly every thread's) is
	// listed in order already: sorting it anyway was 40% of a snapshot's instructions (100
	// threads x 50 frames, qsort's 280 calls of cmp_u64 a thread).
	bool ordered = true;
	for (size_t k = 1; k < sf->n && ordered; k++)
		ordered = sf->sorted[k - 1] < sf->sorted[k];
	if (!ordered)
		qsort(sf->sorted, sf->n, sizeof(*sf->sorted), cmp_u64);
}

static bool in_stack(const struct stack_frames *sf, uint64_t addr)
{
	return sf->n && bsearch(&addr, sf->sorted, sf->n, sizeof(addr), cmp_u64);
}

// The data-stack frame below the lowest one among @th's frames from @from on; 0 when none.
// *exhausted is set when every data-stack frame has been seen.
static uint64_t frame_below(const struct stack_frames *sf, const struct pyu_thread_info *th,
			    uint32_t from, bool *exhausted)
{
	size_t lowest = sf->n;
	for (uint32_t k = from; k < th->frame_count; k++) {
		uint64_t a = th->frames[k].frame_address;
		for (size_t i = lowest; i-- > 0;) {
			if (sf->addrs[i] == a) {
				lowest = i;
				break;
			}
		}
	}
	*exhausted = lowest == 0 && sf->complete;
	return lowest > 0 ? sf->addrs[lowest - 1] : 0;
}

// Notes that frame @frame of @th has its f_lineno at @addr (see pyu_walk_read_linenos).
static bool note_lineno(struct pyu_walk *w, const struct pyu_thread_info *th, uint32_t frame,
			uint64_t addr)
{
	if (th < w->s->threads || th >= w->s->threads + w->s->thread_count)
		return true; // not a thread of the snapshot: nothing to apply it to
	if (w->linenos.n == w->linenos.cap) {
		size_t n = w->linenos.cap ? w->linenos.cap * 2 : 64;
		uint64_t *a = realloc(w->linenos.addrs, n * sizeof(*a));
		if (a)
			w->linenos.addrs = a;
		uint32_t *t = realloc(w->linenos.thread, n * sizeof(*t));
		if (t)
			w->linenos.thread = t;
		uint32_t *f = realloc(w->linenos.frame, n * sizeof(*f));
		if (f)
			w->linenos.frame = f;
		if (!a || !t || !f)
			return false;
		w->linenos.cap = n;
	}
	w->linenos.addrs[w->linenos.n] = addr;
	w->linenos.thread[w->linenos.n] = (uint32_t)(th - w->s->threads);
	w->linenos.frame[w->linenos.n++] = frame;
	return true;
}

// The frame objects of a thread sit close together in the heap: a batch of them at a time
// whose pages are read in one gathered system call (a read per object pinned a page per
// object; every page at once would not fit the cache), then each f_lineno from the cache.
struct pyu_error *pyu_walk_read_linenos(struct pyu_walk *w)
{
	size_t n = w->linenos.n;
	const uint64_t *addrs = w->linenos.addrs;
	for (size_t i = 0; i < n;) {
		size_t end = i + 1;
		unsigned pages = 1;
		for (; end < n; end++) {
			if (addrs[end] / PYU_PAGE_BYTES == addrs[end - 1] / PYU_PAGE_BYTES)
				continue;
			if (++pages > PYU_PAGES_PER_BATCH)
				break;
		}
		pyu_target_prefetch_scattered(w->t, addrs + i, end - i, 4);
		for (; i < end; i++) {
			uint32_t lineno, ti = w->linenos.thread[i], k = w->linenos.frame[i];
			struct pyu_error *err = pyu_target_read_u32(w->t, addrs[i], &lineno);
			if (err) {
				pyu_error_destroy(err); // the table's line stands
				continue;
			}
			if ((int32_t)lineno <= 0 || ti >= w->s->thread_count)
				continue;
			struct pyu_thread_info *th = &w->s->threads[ti];
			if (k < th->frame_count)
				override_line(&th->frames[k].loc, (int32_t)lineno);
		}
	}
	free(w->linenos.addrs);
	free(w->linenos.thread);
	free(w->linenos.frame);
	memset(&w->linenos, 0, sizeof(w->linenos));
	return NULL;
}

// A thread's frames sit in its data-stack chunks, newest first, each walked top down: reading
// the used part of each chunk at once (a few backend reads instead of one per page) is what
// makes a deep stack cheap, as it is for CPython's own unwinder. A hint only: what cannot be
// read here is left to the walk, which reports it.
static void prefetch_used(struct pyu_walk *w, uint64_t chunk, uint64_t end, uint64_t *budget)
{
	uint64_t from = end - chunk > *budget ? end - *budget : chunk;
	pyu_target_prefetch(w->t, from, end - from);
	*budget -= end - from;
}

static void prefetch_data_stack(struct pyu_walk *w, const struct pyu_frame_start *st)
{
	uint64_t c = st->chunk, end = st->top, budget = PYU_PREFETCH_MAX;
	if (end <= c)
		return;
	// The newest chunk is used up to the thread's top, its header at its start: one read.
	prefetch_used(w, c, end, &budget);
	for (unsigned n = 0; c && n < MAX_CHUNKS && budget > 0; n++) {
		// An older chunk's extent is in its header: the smallest chunk CPython makes is
		// read with it, and the rest (if any) once the header says how much is used.
		if (n > 0)
			pyu_target_prefetch(w->t, c, MIN_CHUNK);
		uint64_t hdr[3];
		struct pyu_error *err = pyu_target_read(w->t, c, hdr, sizeof(hdr));
		if (err) {
			pyu_error_destroy(err);
			return;
		}
		if (n > 0) {
			end = hdr[2] < (64u << 20) / 8 ? c + CHUNK_DATA + 8 * hdr[2] : 0;
			if (end <= c)
				return;
			prefetch_used(w, c, end, &budget);
		}
		c = hdr[0];
	}
}

// ---- a thread's data stack, copied --------------------------------------------------------
// What the walk of a deep stack cost was a read of each frame through the page cache (a
// lookup and a copy each); CPython's own unwinder copies each chunk once and parses frames out
// of it. So does this: the used part of every chunk (the newest up to the thread's top, each
// older one up to the top its header saved when the next was pushed), read at once per chunk.

#define COPY_CHUNKS 256               // chunks copied per thread
#define COPY_BATCH_MAX (8u << 20)     // bytes copied for one batch of threads; the rest is read

void pyu_stack_copy_clear(struct pyu_stack_copy *c)
{
	free(c->own);
	free(c->chunk);
	memset(c, 0, sizeof(*c));
}

static const uint8_t *copied_search(struct pyu_stack_copy *c, uint64_t addr, size_t len)
{
	for (unsigned i = 0; i < c->n; i++) {
		const struct pyu_copied_chunk *ch = &c->chunk[i];
		if (addr - ch->lo < ch->hi - ch->lo && len <= ch->hi - addr) {
			c->last = i;
			return c->data + ch->off + (addr - ch->lo);
		}
	}
	return NULL;
}

// The @len bytes at @addr when @c holds them all (a pointer into the copy); else NULL. The
// chunk of the last frame found first: a chain runs down one chunk, then the next.
static inline const uint8_t *copied(struct pyu_stack_copy *c, uint64_t addr, size_t len)
{
	if (!c || c->n == 0)
		return NULL;
	const struct pyu_copied_chunk *ch = &c->chunk[c->last];
	if (addr - ch->lo < ch->hi - ch->lo && len <= ch->hi - addr)
		return c->data + ch->off + (addr - ch->lo);
	return copied_search(c, addr, len);
}

// Plans the copy of @st's data stack into @c (empty): its chunks' used parts, at most
// PYU_PREFETCH_MAX bytes and *budget, which it lowers, each prefetched. Returns the bytes to
// copy (c->chunk[].off from 0); copy_chunks() then reads them. Cannot fail: what is left out
// is read by the walk, which reports what cannot be.
static size_t plan_copy(struct pyu_walk *w, const struct pyu_frame_start *st,
			struct pyu_stack_copy *c, uint64_t *budget)
{
	uint64_t chunk = st->chunk, end = st->top;
	uint64_t left = *budget < PYU_PREFETCH_MAX ? *budget : PYU_PREFETCH_MAX;
	uint64_t newer = 0, newer_size = 0; // the chunk before this one: where, how long
	unsigned adjacent = 0;              // chunks in a row each right above the one before
	size_t total = 0;
	unsigned cap = 0;
	if (!chunk || end <= chunk)
		return 0;
	for (unsigned k = 0; chunk && k < COPY_CHUNKS; k++) {
		// The smallest chunk CPython makes, with an older chunk's header: one read. Each
		// chunk is mapped on its own, below the one before (a deep recursion's chunks lie
		// in a row, the oldest highest): an older chunk right above the newer one, not read
		// yet, is read with the chunks above it, two, then four (seven chunks of 1,000
		// frames in three reads, not seven).
		if (k > 0) {
			uint64_t word;
			adjacent = newer && newer_size && chunk == newer + newer_size ? adjacent + 1 : 0;
			uint64_t ahead = pyu_target_peek_u64(w->t, chunk, &word) ? MIN_CHUNK
				: (uint64_t)MIN_CHUNK << (adjacent < 2 ? adjacent : 2);
			pyu_target_prefetch(w->t, chunk, ahead < left ? ahead : MIN_CHUNK);
		}
		uint64_t hdr[3]; // previous, size, top (slots)
		struct pyu_error *err = pyu_target_read(w->t, chunk, hdr, sizeof(hdr));
		if (err) {
			pyu_error_destroy(err);
			break;
		}
		if (k > 0)
			end = hdr[2] < (64u << 20) / 8 ? chunk + CHUNK_DATA + 8 * hdr[2] : 0;
		if (end <= chunk || end - chunk > left)
			break;
		if (c->n == cap) {
			unsigned n = cap ? 2 * cap : 4;
			struct pyu_copied_chunk *grown = realloc(c->chunk, n * sizeof(*grown));
			if (!grown)
				break;
			c->chunk = grown;
			cap = n;
		}
		pyu_target_prefetch(w->t, chunk, end - chunk); // nothing when in the cache
		c->chunk[c->n++] = (struct pyu_copied_chunk){chunk, end, total};
		total += (size_t)(end - chunk);
		left -= end - chunk;
		newer = chunk;
		newer_size = hdr[1] < (64u << 20) ? hdr[1] : 0;
		chunk = hdr[0];
	}
	*budget -= total;
	return total;
}

// Reads the chunks planned for @c into @data.
static void copy_chunks(struct pyu_walk *w, struct pyu_stack_copy *c, uint8_t *data)
{
	c->data = data;
	for (unsigned i = 0; i < c->n; i++) {
		struct pyu_copied_chunk *ch = &c->chunk[i];
		struct pyu_error *err = pyu_target_read(w->t, ch->lo, data + ch->off,
							(size_t)(ch->hi - ch->lo));
		if (err) {
			pyu_error_destroy(err);
			ch->hi = ch->lo; // holds nothing: its frames are read (and reported) one by one
		}
	}
}

// Copies the data stacks of the @n threads of @starts into @copies, in the walk's scratch
// memory when it has some (else in an allocation copies[0] owns). Cannot fail: a thread left
// without a copy has its frames read one by one.
static void copy_data_stacks(struct pyu_walk *w, const struct pyu_frame_start *starts,
			     struct pyu_stack_copy *copies, size_t n)
{
	uint64_t budget = COPY_BATCH_MAX;
	size_t total = 0;
	for (size_t i = 0; i < n; i++) {
		size_t len = plan_copy(w, &starts[i], &copies[i], &budget);
		for (unsigned k = 0; k < copies[i].n; k++)
			copies[i].chunk[k].off += total;
		total += len;
	}
	uint8_t *data = NULL;
	if (total && w->scratch) {
		if (w->scratch->cap < total) {
			free(w->scratch->data);
			w->scratch->data = malloc(total);
			w->scratch->cap = w->scratch->data ? total : 0;
		}
		data = w->scratch->data;
	} else if (total) {
		data = copies[0].own = malloc(total);
	}
	for (size_t i = 0; i < n; i++) {
		if (data)
			copy_chunks(w, &copies[i], data);
		else
			copies[i].n = 0; // out of memory: nothing copied
	}
}

// Free-threaded 3.14+: a frame may run a thread's own copy of the bytecode, entry @index of
// code->co_tlbc ({Py_ssize_t size; char *entries[size]}); entry 0 is co_code_adaptive.
// On error, *start is unchanged.
static struct pyu_error *tlbc_start(struct pyu_walk *w, uint64_t code, int32_t index,
				    uint64_t *start)
{
	const struct pyu_layout *l = &w->rt->layout;
	if (index == 0)
		return NULL;
	uint64_t array, size, entry;
	struct pyu_error *err = pyu_target_read_u64(w->t, code + (uint64_t)l->code.tlbc, &array);
	if (!err)
		err = pyu_target_read_u64(w->t, array, &size);
	if (!err && (index < 0 || (uint64_t)index >= size || size > 4096))
		err = pyu_error_create(PYU_ERR_CORRUPT,
				       "bytecode copy %" PRId32 " of %" PRIu64 " does not exist",
				       index, size);
	if (!err)
		err = pyu_target_read_u64(w->t, array + 8 + 8 * (uint64_t)index, &entry);
	if (err)
		return pyu_error_wrap(err, "finding the bytecode copy of the code object at 0x%"
				      PRIx64, code);
	*start = entry;
	return NULL;
}

// 3.12+: the frames from @from on run in the eval call whose entry frame is at @marker.
static void mark_run(struct pyu_thread_info *th, uint32_t from, uint64_t marker)
{
	for (uint32_t k = from; k < th->frame_count; k++)
		if (th->frames[k].kind == PYU_FRAME_PYTHON)
			th->frames[k].entry_marker = marker;
}

// 3.11: the _PyCFrame of the next older eval call; 0 when unreadable or past the bound.
static uint64_t older_cframe(struct pyu_walk *w, uint64_t cframe, uint32_t *steps)
{
	const struct pyu_layout *l = &w->rt->layout;
	uint64_t prev;
	if (!cframe || l->tstate.cframe_previous == PYU_NO_FIELD || ++*steps >= PYU_MAX_FRAMES)
		return 0;
	struct pyu_error *err = pyu_target_read_u64(w->t, cframe + (uint64_t)l->tstate.cframe_previous,
						    &prev);
	if (err) {
		pyu_error_destroy(err);
		return 0;
	}
	return prev;
}

// A recursion's frames in one copied chunk: where the frame just made (@tmpl) read its code
// field, instruction pointer and owner as @bits, @ip and @owner, each frame down the chain
// that reads the same is made as it was, its address aside. The checks the walk makes of every
// frame come first, in its order (the base frame, the room left under the depth bound, in the
// chunk, a cycle: the last, since it notes the frame); a frame failing any is left to the walk.
struct recursion {
	const uint8_t *data;  // the chunk's copy, [lo, hi) of the target's memory
	uint64_t lo, hi;
	size_t frame_size;
	uint64_t stop;        // the base frame (0: none)
	int32_t o_prev, o_code, o_ip, o_owner;
	uint64_t bits, ip;
	uint8_t owner;
};

// Makes up to @room frames into @out from *@addr on, which it moves past them. Returns how
// many. Cannot fail. Not inlined: in the walk its values would not fit the registers left.
__attribute__((noinline)) static uint32_t make_recursion(const struct recursion *r,
							 uint64_t *addr, uint32_t room,
							 struct cycle *cyc,
							 const struct pyu_frame_info *tmpl,
							 struct pyu_frame_info *out)
{
	if (r->hi - r->lo < r->frame_size || r->lo == 0)
		return 0;
	const uint64_t span = r->hi - r->frame_size - r->lo; // the last frame start, from lo
	const uint8_t *data = r->data;
	const uint64_t lo = r->lo, stop = r->stop, bits = r->bits, ip = r->ip;
	const int32_t o_prev = r->o_prev, o_code = r->o_code, o_ip = r->o_ip;
	const int32_t o_owner = r->o_owner;
	const uint8_t owner = r->owner;
	const struct pyu_frame_info made = *tmpl; // @out may lie in the same array
	uint64_t saved = cyc->saved, power = cyc->power, left = cyc->power - cyc->steps;
	uint64_t a = *addr;
	struct pyu_frame_info *o = out, *const end = out + room;
	// A NULL link is below lo (not 0), so outside the chunk.
	while (o < end && a != stop && a - lo <= span) {
		const uint8_t *p = data + (a - lo);
		if (pyu_get_u64(p, o_code) != bits || pyu_get_u64(p, o_ip) != ip ||
		    p[o_owner] != owner || a == saved)
			break;
		if (--left == 0) { // as cycle_seen()
			saved = a;
			power *= 2;
			left = power;
		}
		*o = made;
		o->frame_address = a;
		o++;
		a = pyu_get_u64(p, o_prev);
	}
	cyc->saved = saved;
	cyc->power = power;
	cyc->steps = power - left;
	*addr = a;
	return (uint32_t)(o - out);
}

// A _PyInterpreterFrame chain (3.11+).
static struct pyu_error *walk_interpreter_frames(struct pyu_walk *w,
						 const struct pyu_frame_start *st,
						 struct pyu_stack_copy *copy,
						 struct pyu_thread_info *th, uint32_t *cap,
						 struct stack_frames *sf)
{
	const struct pyu_layout *l = &w->rt->layout;
	struct cycle cyc = {0, 1, 0};
	uint8_t space[PYU_LAYOUT_MAX_STRUCT];
	struct pyu_error *err;
	uint64_t last = 0, addr = st->first, base_frame = st->base_frame;
	uint32_t first_frame = th->frame_count, resumed = 0;
	bool can_resume = st->chunk && st->top && l->owner_first_foreign >= 0 &&
			  l->code.framesize != PYU_NO_FIELD;
	// Which eval call runs each frame (native.c): 3.12+ the entry frame below its run, 3.11
	// the _PyCFrame chain, one per run, a run ending at the frame with is_entry set.
	bool by_entry = l->native_placement == PYU_PLACE_BY_ENTRY_FRAME;
	bool by_cframe = l->native_placement == PYU_PLACE_BY_CFRAME &&
			 l->iframe.is_entry != PYU_NO_FIELD;
	uint32_t run_start = th->frame_count, cframe_steps = 0;
	uint64_t cframe = by_cframe && !st->first_unknown ? st->cframe : 0;
	bool cframe_ends = false, tailed = false;
	// The code object of the last frame, and where in it that frame was: the frames of a
	// recursion run one code object at one instruction, a deep stack mostly one after
	// another (what codes.c answers for them, asked again, is the same).
	uint64_t last_code = 0;
	int32_t last_index = -1, last_first = 0;
	int64_t last_offset = INT64_MIN;
	struct pyu_location last_loc = {PYU_NO_LINE, PYU_NO_LINE, PYU_NO_COLUMN, PYU_NO_COLUMN};
	const size_t frame_size = (size_t)l->iframe.size;
	// The layout's fields read for every frame, in locals: for the compiler the frame array
	// written in the loop may alias the layout, and each was loaded again per frame.
	const int32_t o_prev = l->iframe.previous, o_code = l->iframe.code;
	const int32_t o_owner = l->iframe.owner, o_ip = l->iframe.instr_ptr;
	const int32_t o_frame_obj = l->iframe.frame_obj, first_foreign = l->owner_first_foreign;
	const int32_t owner_generator = l->owner_generator;
	const uint64_t tag_mask = l->stackref_mask, adaptive = (uint64_t)l->code.code_adaptive;
	const bool tlbc = l->iframe.tlbc_index != PYU_NO_FIELD && l->code.tlbc != PYU_NO_FIELD;
	const bool hide_incomplete = l->skip_incomplete;
	const bool linenos = st->traced && l->frame.f_lineno != PYU_NO_FIELD;
	const uint32_t bound = depth_bound(w);
	uint64_t chunk_lo = 0, chunk_hi = 0; // the copied chunk the last frame was found in
	const uint8_t *chunk_data = NULL;
	// What the last frame made read (its code field's bits, instruction pointer, owner):
	// a frame reading the same is made as it was (a recursion's).
	bool same_valid = false;
	uint64_t same_bits = 0, same_ip = 0;
	uint8_t same_owner = 0;
	if (st->chunk && st->top && (!copy || copy->n == 0))
		prefetch_data_stack(w, st);
	if (st->first_unknown && st->chunk && st->top && l->code.framesize != PYU_NO_FIELD) {
		load_stack_frames(w, st, sf);
		addr = sf->n ? sf->addrs[sf->n - 1] : 0;
		if (addr)
			resumed++;
	}
	for (uint32_t depth = 0; addr; depth++) {
		if (cframe_ends) {
			cframe = older_cframe(w, cframe, &cframe_steps);
			cframe_ends = false;
		}
		if (base_frame && addr == base_frame)
			return NULL; // 3.15: the sentinel proves the chain is complete
		if (depth >= bound + (tailed ? 2 * PYU_TAIL_FRAMES : 0)) {
			if (tailed)
				return push_error(th, cap, addr, "depth limit of %u frames reached",
						  depth_bound(w));
			bool end;
			err = pass_bound(w, th, cap, &addr, l->iframe.previous, base_frame, &tailed,
					 &end);
			if (err || end)
				return err;
			// What runs the frames past the gap is not known: no native placement, no
			// resuming from the data stack.
			cyc = (struct cycle){0, 1, 0};
			by_cframe = false;
			cframe = 0;
			can_resume = false;
			run_start = th->frame_count;
		}
		if (cycle_seen(&cyc, addr))
			return push_error(th, cap, addr, "cycle in the frame chain at 0x%" PRIx64,
					  addr);
		// The copied chunk of the last frame first: a chain runs down one chunk, then
		// the next.
		const uint8_t *buf = NULL;
		if (addr - chunk_lo < chunk_hi - chunk_lo && frame_size <= chunk_hi - addr) {
			buf = chunk_data + (addr - chunk_lo);
		} else if ((buf = copied(copy, addr, frame_size)) != NULL) {
			const struct pyu_copied_chunk *ch = &copy->chunk[copy->last];
			chunk_lo = ch->lo;
			chunk_hi = ch->hi;
			chunk_data = copy->data + ch->off;
		}
		err = NULL;
		if (!buf) {
			// One read for a frame across two pages (an entry frame on a native stack).
			pyu_target_prefetch(w->t, addr, (uint64_t)l->iframe.size);
			err = pyu_target_read(w->t, addr, space, (size_t)l->iframe.size);
			buf = space;
		}
		// An unreadable or zeroed frame off the data stack is an entry frame on a native
		// stack the core left out: continue at its Python caller, found on the data stack.
		bool zeroed = !err && pyu_get_u64(buf, o_code) == 0 && pyu_get_u64(buf, o_prev) == 0;
		if ((err || zeroed) && can_resume) {
			if (!sf->loaded)
				load_stack_frames(w, st, sf);
			if (!in_stack(sf, addr)) {
				bool exhausted;
				uint64_t below = frame_below(sf, th, first_frame, &exhausted);
				if (below || exhausted) {
					pyu_error_destroy(err);
					resumed++;
					if (by_entry) // where the entry frame was, unreadable or not
						mark_run(th, run_start, addr);
					run_start = th->frame_count;
					th->entry_frame = addr; // its address is still known
					if (!below) {
						last = 0; // every data-stack frame was seen
						break;
					}
					addr = below;
					continue;
				}
			}
		}
		if (err)
			return push_error_from(th, cap, addr,
					       pyu_error_wrap(err, "reading the frame at 0x%" PRIx64,
							      addr));
		last = addr;
		uint64_t next = pyu_get_u64(buf, o_prev);
		uint8_t owner = buf[o_owner];
		if (by_cframe)
			cframe_ends = buf[l->iframe.is_entry] != 0;
		if (first_foreign >= 0 && owner >= first_foreign) {
			if (by_entry)
				mark_run(th, run_start, addr);
			run_start = th->frame_count;
			th->entry_frame = addr; // the last one seen is the outermost
			addr = next; // entry/shim frame of the C stack: not Python
			continue;
		}
		uint64_t bits = pyu_get_u64(buf, o_code);
		uint64_t ip = pyu_get_u64(buf, o_ip);
		int32_t index;
		int64_t offset;
		// A recursion's frames run one code object at one instruction, owned alike: the
		// frame made before this one answered every question this one would ask (which
		// code object, the instruction in range, past the prologue, its location); only
		// the addresses differ. Not with per-thread bytecode, where the instruction is
		// measured from a start each frame names.
		if (same_valid && bits == same_bits && ip == same_ip && owner == same_owner) {
			index = last_index;
			offset = last_offset;
			goto make;
		}
		uint64_t code = bits & ~tag_mask;
		// 3.14+ tags: ...11 is an int, ...10 is no object at all (3.15's error sentinel).
		if (tag_mask && (bits & 2)) {
			err = push_error(th, cap, addr,
					 "frame at 0x%" PRIx64 ": f_executable 0x%" PRIx64
					 " is a tagged %s, not a code object", addr, bits,
					 (bits & 3) == 3 ? "int" : "non-object");
			if (err)
				return err;
			addr = next;
			continue;
		}
		index = last_index;
		if (code != last_code || last_index < 0) {
			err = code_or_error_frame(w, th, cap, addr, code, &index);
			if (err)
				return err;
			if (index < 0) {
				addr = next;
				continue;
			}
			last_code = code;
			last_index = index;
			last_first = pyu_code_firsttraceable(w, index);
			last_offset = INT64_MIN;
			same_valid = false; // until a frame of this code object is made
		}
		const struct pyu_code_info *ci = &w->s->codes[index];
		uint64_t start = code + adaptive;
		if (tlbc) {
			err = tlbc_start(w, code, pyu_get_i32(buf, l->iframe.tlbc_index), &start);
			if (err) {
				err = push_error_from(th, cap, addr, err);
				if (err)
					return err;
				addr = next;
				continue;
			}
		}
		int64_t q = (int64_t)(ip - start);
		if (q >= (int64_t)ci->code_len || q < -2) {
			err = push_error(th, cap, addr,
					 "frame at 0x%" PRIx64 ": instruction pointer 0x%" PRIx64
					 " outside its code object at 0x%" PRIx64, addr, ip, code);
			if (err)
				return err;
			addr = next;
			continue;
		}
		// CPython hides frames still in their prologue (before RESUME).
		if (hide_incomplete && owner != owner_generator && q < 2 * (int64_t)last_first) {
			addr = next;
			continue;
		}
		offset = q < 0 ? -1 : q;
		if (offset != last_offset) {
			last_offset = offset;
			last_loc = pyu_code_locate(w, index, last_offset);
		}
		same_valid = !tlbc;
		same_bits = bits;
		same_ip = ip;
		same_owner = owner;
	make:;
		uint64_t frame_obj = linenos && o_frame_obj != PYU_NO_FIELD
			? pyu_get_u64(buf, o_frame_obj) : 0;
		if (frame_obj &&
		    !note_lineno(w, th, th->frame_count, frame_obj + (uint64_t)l->frame.f_lineno))
			return &pyu_error_nomem;
		// Filled in place, field by field (a frame built aside and copied in was a
		// tenth of a deep walk's instructions).
		if (th->frame_count == *cap && (err = grow_frames(th, cap)) != NULL)
			return err;
		struct pyu_frame_info *f = &th->frames[th->frame_count++];
		f->kind = PYU_FRAME_PYTHON;
		f->code = index;
		f->loc = last_loc;
		f->instruction_offset = offset;
		f->frame_address = addr;
		f->reason = NULL;
		f->entry_marker = by_cframe ? cframe : 0;
		addr = next;
		// The rest of a recursion in this copied chunk, in a loop of its own.
		if (!same_valid || linenos || by_cframe || !chunk_data)
			continue;
		const uint64_t limit = (uint64_t)bound + (tailed ? 2 * PYU_TAIL_FRAMES : 0);
		uint64_t room = *cap - th->frame_count;
		if (limit > (uint64_t)depth + 1 && limit - depth - 1 < room)
			room = limit - depth - 1;
		else if (limit <= (uint64_t)depth + 1)
			room = 0;
		const struct recursion r = {chunk_data, chunk_lo, chunk_hi, frame_size, base_frame,
					    o_prev, o_code, o_ip, o_owner, same_bits, same_ip,
					    same_owner};
		uint32_t made = make_recursion(&r, &addr, (uint32_t)room, &cyc, f,
					       &th->frames[th->frame_count]);
		if (made) {
			th->frame_count += made;
			depth += made;
			last = th->frames[th->frame_count - 1].frame_address;
		}
	}
	if (resumed)
		pyu_stacks_add_note(w->s, "thread %" PRIu64 ": %" PRIu32 " entry frame(s) on the "
				     "native stack could not be read (not in the core?); the chain "
				     "was continued from the thread's data stack", st->thread_id,
				     resumed);
	if (base_frame && last)
		return push_error(th, cap, last,
				  "frame chain truncated: a NULL previous pointer before the base "
				  "frame at 0x%" PRIx64, base_frame);
	return NULL;
}

// The distinct code objects the frames of a batch of threads run, up to PYU_CODE_PREFETCH_MAX:
// a set of their addresses (open addressing, 0 empty) and their list in the order met.
#define CODE_SET_SLOTS (2 * PYU_CODE_PREFETCH_MAX)
struct code_set {
	uint64_t slots[CODE_SET_SLOTS];
	uint64_t list[PYU_CODE_PREFETCH_MAX];
	size_t n;
};

// Notes the code object of a frame whose f_executable field holds @bits (tags in @mask).
static inline void note_code(struct code_set *cs, uint64_t bits, uint64_t mask)
{
	uint64_t code = bits & ~mask;
	if (!code || (bits & 2) || cs->n == PYU_CODE_PREFETCH_MAX)
		return; // 3.14+ tags ...10 and ...11: no code object
	size_t i = (size_t)((code >> 4) * 0x9e3779b97f4a7c15ull >> 57) % CODE_SET_SLOTS;
	for (size_t probe = 0; probe < CODE_SET_SLOTS; probe++, i = (i + 1) % CODE_SET_SLOTS) {
		if (cs->slots[i] == code)
			return;
		if (!cs->slots[i]) {
			cs->slots[i] = code;
			cs->list[cs->n++] = code;
			return;
		}
	}
}

// Many threads at once: their newest data-stack chunks (used up to each thread's top) in
// gathered reads, each thread's data stack copied, then the frames their chains lead to off
// those chunks (3.12+: each eval call's entry frame on its native stack), found by following
// the chains through the copies, in one more gathered read, and the code objects the copied
// frames run in two more (codes.c). A thread then costs its thread state's read and nothing
// else when its stack fits its newest chunk. A hint only: the walk reads (and reports)
// whatever this leaves out.
void pyu_walk_prefetch_starts(struct pyu_walk *w, const struct pyu_frame_start *starts,
			      struct pyu_stack_copy *copies, size_t n)
{
	const struct pyu_layout *l = &w->rt->layout;
	if (l->chain == PYU_CHAIN_FRAME_OBJECT || n == 0)
		return;
	uint64_t *addrs = malloc(n * sizeof(*addrs)), *lens = malloc(n * sizeof(*lens));
	if (!addrs || !lens) {
		free(addrs);
		free(lens);
		return;
	}
	size_t k = 0;
	uint64_t budget = PYU_PREFETCH_MAX;
	for (size_t i = 0; i < n; i++) {
		const struct pyu_frame_start *st = &starts[i];
		if (!st->chunk || st->top <= st->chunk || st->top - st->chunk > budget)
			continue;
		addrs[k] = st->chunk;
		lens[k++] = st->top - st->chunk;
		budget -= st->top - st->chunk;
	}
	pyu_target_prefetch_ranges(w->t, addrs, lens, k);
	copy_data_stacks(w, starts, copies, n);
	k = 0;
	struct code_set codes = {{0}, {0}, 0};
	uint64_t last_bits = 0;
	const size_t frame_size = (size_t)l->iframe.size;
	const int32_t o_prev = l->iframe.previous, o_code = l->iframe.code;
	for (size_t i = 0; i < n; i++) {
		uint64_t addr = starts[i].first;
		uint64_t lo = 0, hi = 0; // the copied chunk of the last frame (see the walk)
		const uint8_t *data = NULL;
		// Through copied and cached frames only, a bounded number of steps, to the first
		// frame that is neither: the entry frame below the run. The code objects the
		// copied frames run are noted on the way.
		for (unsigned steps = 0; addr && addr != starts[i].base_frame &&
					 steps < PYU_MAX_FRAMES; steps++) {
			uint64_t prev;
			const uint8_t *p = NULL;
			if (addr - lo < hi - lo && frame_size <= hi - addr) {
				p = data + (addr - lo);
			} else if ((p = copied(&copies[i], addr, frame_size)) != NULL) {
				const struct pyu_copied_chunk *ch = &copies[i].chunk[copies[i].last];
				lo = ch->lo;
				hi = ch->hi;
				data = copies[i].data + ch->off;
			}
			if (p) {
				prev = pyu_get_u64(p, l->iframe.previous);
				uint64_t bits = pyu_get_u64(p, l->iframe.code);
				if (bits != last_bits && (l->owner_first_foreign < 0 ||
							  p[l->iframe.owner] < l->owner_first_foreign)) {
					last_bits = bits; // a recursion: one code object
					note_code(&codes, bits, l->stackref_mask);
				}
			} else if (!pyu_target_peek_u64(w->t, addr + (uint64_t)l->iframe.previous,
							&prev)) {
				addrs[k++] = addr;
				break;
			}
			addr = prev;
			// A recursion's frames below in this chunk, running the code object just
			// noted, note nothing: stepped over in a loop of their own.
			if (!p || !lo || hi - lo < frame_size)
				continue;
			const uint64_t span = hi - frame_size - lo;
			while (steps + 1 < PYU_MAX_FRAMES && addr != starts[i].base_frame &&
			       addr - lo <= span) {
				const uint8_t *q = data + (addr - lo);
				if (pyu_get_u64(q, o_code) != last_bits)
					break;
				addr = pyu_get_u64(q, o_prev);
				steps++;
			}
		}
	}
	if (k && (uint64_t)l->iframe.size <= 4096)
		pyu_target_prefetch_scattered(w->t, addrs, k, (size_t)l->iframe.size);
	pyu_code_prefetch(w, codes.list, codes.n);
	free(addrs);
	free(lens);
}

#define FRAMES_PRESIZED_MIN 256       // frames a thread's array is made for up front: from
#define FRAMES_PRESIZED_MAX (1u << 20) // so many to so many

struct pyu_error *pyu_walk_frames(struct pyu_walk *w, const struct pyu_frame_start *start,
				  struct pyu_stack_copy *copy, struct pyu_thread_info *th)
{
	// The room the walk made (frame_cap: at least frame_count), or an array kept from an
	// earlier snapshot (stacks.c).
	uint32_t cap = !th->frames ? 0 : th->frame_cap > th->frame_count ? th->frame_cap
									 : th->frame_count;
	if (!th->frames && th->frame_count == 0)
		th->frames = pyu_frames_take(&cap);
	if (th->frame_count == 0) { // every frame this thread will hold is the walk's
		th->walked = true;
		th->error_frames = 0;
	}
	struct pyu_error *err;
	if (w->rt->layout.chain == PYU_CHAIN_FRAME_OBJECT) {
		err = walk_frame_objects(w, start->first, th, &cap);
		th->frame_cap = th->frames ? cap : 0;
		return err;
	}
	struct stack_frames sf = {0};
	// A deep thread: room for every frame its copied data stack can hold (each takes at least
	// a frame's header) at once. Grown by doubling from 16, a 1,000-deep thread's frames were
	// copied seven times over (a tenth of its walk's instructions); a shallow thread's array
	// is left to grow (made larger up front, 100 threads of 50 frames faulted in more pages).
	size_t copied_bytes = 0;
	for (unsigned i = 0; copy && i < copy->n; i++)
		copied_bytes += (size_t)(copy->chunk[i].hi - copy->chunk[i].lo);
	uint64_t room = w->rt->layout.iframe.size > 0
		? copied_bytes / (size_t)w->rt->layout.iframe.size + 16 : 0;
	if (room > cap && room >= FRAMES_PRESIZED_MIN && room <= FRAMES_PRESIZED_MAX &&
	    th->frame_count == 0) {
		struct pyu_frame_info *frames = realloc(th->frames, room * sizeof(*frames));
		if (frames) {
			th->frames = frames;
			cap = (uint32_t)room;
		}
	}
	err = walk_interpreter_frames(w, start, copy, th, &cap, &sf);
	th->frame_cap = th->frames ? cap : 0;
	free(sf.addrs);
	free(sf.sorted);
	return err;
}
