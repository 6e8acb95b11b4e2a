// stacks.c - pyu_stacks_collect(): finds the interpreter (runtime.c), walks every thread
// (threads.c, frames.c) into a snapshot, and the snapshot's accessors. The snapshot owns all
// its strings; the target must outlive it.
#include <inttypes.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "activity.h"
#include "code_memo.h"
#include "cython.h"
#include "inspect.h"
#include "nesting.h"
#include "layout.h"
#include "runtime.h"

static void add_string(char ***list, uint32_t *count, const char *fmt, va_list ap)
{
	char msg[1024];
	vsnprintf(msg, sizeof(msg), fmt, ap);
	if (*count >= 4096)
		return; // bounded: a damaged target must not make the snapshot grow without end
	char **grown = realloc(*list, (*count + 1) * sizeof(*grown));
	if (!grown)
		return;
	*list = grown;
	char *copy = strdup(msg);
	if (copy)
		(*list)[(*count)++] = copy;
}

void pyu_stacks_add_error(struct pyu_stacks *s, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	add_string(&s->errors, &s->error_count, fmt, ap);
	va_end(ap);
}

void pyu_stacks_add_note(struct pyu_stacks *s, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	add_string(&s->notes, &s->note_count, fmt, ap);
	va_end(ap);
}

// "3.14.0", "3.15.0a1", "3.13.0rc2"; "3.7" when only major.minor is known.
static void version_string(uint32_t hex, bool exact, char *buf, size_t len)
{
	unsigned major = hex >> 24, minor = (hex >> 16) & 0xff, micro = (hex >> 8) & 0xff;
	unsigned level = (hex >> 4) & 0xf, serial = hex & 0xf;
	if (!exact) {
		snprintf(buf, len, "%u.%u", major, minor);
		return;
	}
	const char *suffix = level == 0xa ? "a" : level == 0xb ? "b" : level == 0xc ? "rc" : "";
	if (*suffix)
		snprintf(buf, len, "%u.%u.%u%s%u", major, minor, micro, suffix, serial);
	else
		snprintf(buf, len, "%u.%u.%u", major, minor, micro);
}

// ---- the interpreter found once per open live target -----------------------------------------
//
// Finding the interpreter (the files' symbols, the version, the layout) is most of what a
// snapshot of a small process costs. Of a live process it is kept and checked, not found again:
// kept only when found in a file's symbols (not by a memory scan), reused only while the
// mapping it was found through is the same one (start, end, offset, file, device and inode)
// and, where the layout came from the target's _Py_DebugOffsets, while those still build the
// very same layout. Anything else: found again.
struct kept_runtime {
	struct pyu_runtime rt;
	uint64_t start, end, offset, inode;
	uint32_t dev_major, dev_minor;
	bool deleted;
	char path[256];
	bool from_offsets;         // 3.13+: the layout is checked against the offsets again:
	struct pyu_layout layout;  // built from them, zeroed first (compared bytewise)
	uint8_t offsets[PYU_DEBUG_OFFSETS_MAX]; // the bytes it was built from: the same bytes
	size_t offsets_len;        // build the same layout (parsing them was half a snapshot)
	struct pyu_code_memo *memo; // the code objects read so far (NULL: none kept)
	struct pyu_scratch scratch; // the walks' memory (frames.c)
};

// The walks' memory of the last target destroyed, for the next one: a fresh handle's walk of
// 100 threads copies about 190 KB of data stacks, which malloc takes from mmap past its
// threshold and the first writes fault in again each handle (60 page faults, a fifth of a
// fresh 3.15 handle's 100 x 50 snapshot). One is kept; what is in it is never read before it
// is written.
static pthread_mutex_t spare_lock = PTHREAD_MUTEX_INITIALIZER;
static struct pyu_scratch spare_scratch;

static struct pyu_scratch take_scratch(void)
{
	pthread_mutex_lock(&spare_lock);
	struct pyu_scratch s = spare_scratch;
	spare_scratch = (struct pyu_scratch){NULL, 0};
	pthread_mutex_unlock(&spare_lock);
	return s;
}

static void keep_scratch(struct pyu_scratch s)
{
	if (s.data && s.cap <= PYU_SCRATCH_KEPT) {
		pthread_mutex_lock(&spare_lock);
		if (!spare_scratch.data) {
			spare_scratch = s;
			s.data = NULL;
		}
		pthread_mutex_unlock(&spare_lock);
	}
	free(s.data);
}

// Up to FRAMES_KEPT arrays of FRAMES_KEPT_BYTES in all, under spare_lock; the last given is
// the first taken.
#define FRAMES_KEPT 512
#define FRAMES_KEPT_BYTES (4u << 20)
static struct {
	struct pyu_frame_info *frames;
	uint32_t cap;
} spare_frames[FRAMES_KEPT];
static unsigned spare_frame_count;
static size_t spare_frame_bytes;

struct pyu_frame_info *pyu_frames_take(uint32_t *cap)
{
	struct pyu_frame_info *frames = NULL;
	*cap = 0;
	pthread_mutex_lock(&spare_lock);
	if (spare_frame_count > 0) {
		spare_frame_count--;
		frames = spare_frames[spare_frame_count].frames;
		*cap = spare_frames[spare_frame_count].cap;
		spare_frame_bytes -= (size_t)*cap * sizeof(*frames);
	}
	pthread_mutex_unlock(&spare_lock);
	return frames;
}

void pyu_frames_give(struct pyu_frame_info *frames, uint32_t cap)
{
	size_t bytes = (size_t)cap * sizeof(*frames);
	if (frames && cap > 0) {
		pthread_mutex_lock(&spare_lock);
		if (spare_frame_count < FRAMES_KEPT &&
		    spare_frame_bytes + bytes <= FRAMES_KEPT_BYTES) {
			spare_frames[spare_frame_count].frames = frames;
			spare_frames[spare_frame_count++].cap = cap;
			spare_frame_bytes += bytes;
			frames = NULL;
		}
		pthread_mutex_unlock(&spare_lock);
	}
	free(frames);
}

static void kept_free(void *block)
{
	struct kept_runtime *k = block;
	pyu_code_memo_destroy(k->memo);
	keep_scratch(k->scratch);
	free(k);
}

// Reads the _Py_DebugOffsets at @addr into @buf (PYU_DEBUG_OFFSETS_MAX bytes), *@len the
// bytes read; false when they cannot be read or do not start with the cookie.
static bool offsets_at(struct pyu_target *t, uint64_t addr, uint8_t *buf, size_t *len)
{
	*len = PYU_DEBUG_OFFSETS_MAX;
	struct pyu_error *err = pyu_target_read(t, addr, buf, *len);
	if (err) {
		pyu_error_destroy(err);
		*len = 1024; // as use_debug_offsets(): near a mapping's end
		if ((err = pyu_target_read(t, addr, buf, *len)) != NULL) {
			pyu_error_destroy(err);
			return false;
		}
	}
	return memcmp(buf, "xdebugpy", 8) == 0;
}

// The layout the _Py_DebugOffsets in @buf build into *l (zeroed first); false when they do not.
static bool layout_of(const uint8_t *buf, size_t len, struct pyu_layout *l)
{
	bool ft = false;
	memset(l, 0, sizeof(*l));
	struct pyu_error *err = pyu_layout_from_debug_offsets(buf, len, l, &ft, NULL, 0);
	pyu_error_destroy(err);
	return err == NULL;
}

// Whether the _Py_DebugOffsets at @addr build a layout (kept in *@k when they do).
static bool keep_offsets(struct pyu_target *t, uint64_t addr, struct kept_runtime *k)
{
	if (!offsets_at(t, addr, k->offsets, &k->offsets_len))
		return false;
	return layout_of(k->offsets, k->offsets_len, &k->layout);
}

// Whether the _Py_DebugOffsets at @addr still build the layout kept in @k: the very bytes kept
// do; else (what is read past the block may be the runtime's own fields, which change) they
// are parsed again.
static bool same_offsets(struct pyu_target *t, uint64_t addr, const struct kept_runtime *k)
{
	uint8_t buf[PYU_DEBUG_OFFSETS_MAX];
	size_t len;
	struct pyu_layout l;
	if (!offsets_at(t, addr, buf, &len))
		return false;
	if (len == k->offsets_len && memcmp(buf, k->offsets, len) == 0)
		return true;
	return layout_of(buf, len, &l) && memcmp(&l, &k->layout, sizeof(l)) == 0;
}

static uint64_t anchor_of(const struct pyu_runtime *rt)
{
	return rt->runtime_addr ? rt->runtime_addr : rt->interp_head_addr;
}

// The file mapping that says where the interpreter's structures at @addr are: the one holding
// them, or (a zero-initialised _PyRuntime, 3.7-3.11: in .bss, the anonymous memory right past
// the file's data) the file's mapping just below it; NULL when neither names a file.
static const struct pyu_mapping *anchor_mapping(struct pyu_target *t, uint64_t addr)
{
	const struct pyu_mapping *m = pyu_target_find_mapping(t, addr);
	if (m && !m->path && m->start > 0) {
		const struct pyu_mapping *below = pyu_target_find_mapping(t, m->start - 1);
		m = below && below->end == m->start ? below : NULL;
	}
	return m && m->path ? m : NULL;
}

// The interpreter of live target @t as the last snapshot found it, when still so; else found
// (and kept for the next). *@memo, *@scratch: the code objects and the walks' memory kept with
// it (NULL when none). On error, *rt is unchanged.
static struct pyu_error *find_runtime(struct pyu_target *t, struct pyu_runtime *rt,
				      struct pyu_code_memo **memo, struct pyu_scratch **scratch)
{
	*memo = NULL;
	*scratch = NULL;
	struct kept_runtime *k = pyu_target_changes(t) ? pyu_target_kept(t) : NULL;
	if (k) {
		const struct pyu_mapping *m = anchor_mapping(t, anchor_of(&k->rt));
		if (m && m->start == k->start && m->end == k->end && m->offset == k->offset &&
		    m->inode == k->inode && m->dev_major == k->dev_major &&
		    m->dev_minor == k->dev_minor && m->deleted == k->deleted && m->path &&
		    strcmp(m->path, k->path) == 0 &&
		    (!k->from_offsets || same_offsets(t, k->rt.runtime_addr, k))) {
			*rt = k->rt;
			if (!k->memo) // a second snapshot: code objects worth keeping from now on
				k->memo = pyu_code_memo_create(&rt->layout);
			*memo = k->memo;
			*scratch = &k->scratch;
			return NULL;
		}
		pyu_target_keep(t, NULL, NULL);
	}
	struct pyu_error *err = pyu_runtime_find(t, rt);
	if (err || !pyu_target_changes(t) || rt->memory_only || !rt->image[0])
		return err;
	const struct pyu_mapping *m = anchor_mapping(t, anchor_of(rt));
	if (!m || strlen(m->path) >= sizeof(k->path))
		return NULL;
	k = calloc(1, sizeof(*k));
	if (!k)
		return NULL; // found again next time
	k->rt = *rt;
	k->start = m->start;
	k->end = m->end;
	k->offset = m->offset;
	k->inode = m->inode;
	k->dev_major = m->dev_major;
	k->dev_minor = m->dev_minor;
	k->deleted = m->deleted;
	memcpy(k->path, m->path, strlen(m->path) + 1);
	k->from_offsets = rt->runtime_addr && keep_offsets(t, rt->runtime_addr, k);
	if ((rt->version_hex >> 16) >= 0x030d && !k->from_offsets) {
		free(k); // 3.13+ without offsets that build: nothing to check against
		return NULL;
	}
	// No code memo yet: most handles take one snapshot (a fresh handle a snapshot, a core),
	// and making its table was a tenth of a fresh handle's 1,000-frame snapshot; the second
	// snapshot makes it.
	k->scratch = take_scratch();
	*scratch = &k->scratch;
	pyu_target_keep(t, k, kept_free);
	return NULL;
}

static struct pyu_error *collect(struct pyu_target *t, struct pyu_stacks **ret)
{
	struct pyu_runtime *rt = malloc(sizeof(*rt));
	if (!rt)
		return &pyu_error_nomem;
	struct pyu_code_memo *memo;
	struct pyu_scratch *scratch;
	struct pyu_error *err = find_runtime(t, rt, &memo, &scratch);
	if (err) {
		free(rt);
		return err;
	}
	struct pyu_stacks *s = calloc(1, sizeof(*s));
	struct pyu_code_cache *codes = NULL;
	if (!s || (err = pyu_inspect_create(&s->inspect)) != NULL ||
	    (err = pyu_code_cache_create(&rt->types, &codes)) != NULL) {
		if (s)
			pyu_inspect_destroy(s->inspect);
		free(s);
		free(rt);
		return err ? err : &pyu_error_nomem;
	}
	s->target = t;
	s->hexversion = rt->version_hex;
	version_string(rt->version_hex, rt->version_exact, s->version, sizeof(s->version));
	s->debug_build = rt->debug_build;
	s->free_threaded = rt->free_threaded;
	s->placement = rt->layout.native_placement;
	snprintf(s->eval_function, sizeof(s->eval_function), "%s",
		 rt->layout.eval_function ? rt->layout.eval_function : "");
	// Discovery joins its notes with "; ": the last one's separator is no part of the note.
	size_t notes_len = strnlen(rt->notes, sizeof(rt->notes));
	while (notes_len >= 2 && !memcmp(rt->notes + notes_len - 2, "; ", 2))
		notes_len -= 2;
	if (notes_len)
		pyu_stacks_add_note(s, "%.*s", (int)notes_len, rt->notes);
	if (rt->memory_only)
		pyu_stacks_add_note(s, "read from memory alone: no file of the interpreter was "
				    "used (none found here that is the target's build); frames, "
				    "lines and columns come from the target's memory, source lines "
				    "only from .py files found here");
	const char *notice = pyu_target_notice(t);
	if (notice)
		pyu_stacks_add_note(s, "%s", notice);
	struct pyu_walk w = {t, rt, s, codes};
	w.memo = memo;
	w.scratch = scratch;
	if (memo) {
		// The headers of the code objects the last snapshot ran, in one gathered read:
		// each is read again to be checked (code_memo.c).
		uint64_t recent[256];
		pyu_code_memo_begin(memo);
		size_t n = pyu_code_memo_recent(memo, recent, sizeof(recent) / sizeof(recent[0]));
		if ((uint64_t)rt->layout.code.size <= 4096)
			pyu_target_prefetch_scattered(t, recent, n, (size_t)rt->layout.code.size);
	}
	err = pyu_walk_threads(&w);
	if (scratch && scratch->cap > PYU_SCRATCH_KEPT) {
		free(scratch->data); // a rare deep walk's: not held for the snapshots after it
		*scratch = (struct pyu_scratch){NULL, 0};
	}
	if (!err)
		pyu_link_nested(s);
	// Last, so that the notes about finding the interpreter keep their place.
	if (!err)
		pyu_stacks_add_note(s, "memory read from %s", pyu_target_source(t));
	// A running interpreter always has a thread state (the main thread's, until it exits):
	// none at all means the structures found are not the live interpreter's.
	if (!err && s->thread_count == 0 && s->error_count == 0)
		pyu_stacks_add_error(s, "no Python thread states in the interpreter list at 0x%"
				     PRIx64, rt->interp_head_addr);
	s->code_cache = codes;
	s->runtime = rt; // values are read on demand, after the walk
	if (err) {
		pyu_stacks_destroy(s);
		return err;
	}
	*ret = s;
	return NULL;
}

// Whether a snapshot found something wrong: an error, or a frame that could not be read.
static bool found_wrong(const struct pyu_stacks *s)
{
	if (s->error_count)
		return true;
	for (uint32_t i = 0; i < s->thread_count; i++) {
		const struct pyu_thread_info *th = &s->threads[i];
		if (th->walked && th->error_frames == 0)
			continue; // the walk counted them: none
		for (uint32_t k = 0; k < th->frame_count; k++)
			if (th->frames[k].kind == PYU_FRAME_ERROR)
				return true;
	}
	return false;
}

// @err with what the target knows is wrong with it as a whole (a truncated core), which often
// explains it ("cannot read memory at 0x..."), unless the message says so already. Cannot fail.
static struct pyu_error *with_notice(struct pyu_error *err, const struct pyu_target *t)
{
	const char *notice = pyu_target_notice(t);
	if (!notice || err == &pyu_error_nomem || strstr(pyu_error_message(err), notice))
		return err;
	struct pyu_error *out = pyu_error_create(pyu_error_code(err), "%s (%s)",
						 pyu_error_message(err), notice);
	if (out == &pyu_error_nomem)
		return err;
	pyu_error_destroy(err);
	return out;
}

PYU_PUBLIC struct pyu_error *pyu_stacks_collect(struct pyu_target *t, struct pyu_stacks **ret)
{
	if (!t || !ret)
		return pyu_error_create(PYU_ERR_ARGUMENT, "pyu_stacks_collect: NULL argument");
	pyu_target_begin_snapshot(t); // a live target: nothing an earlier snapshot read is kept
	struct pyu_stacks *s = NULL;
	struct pyu_error *err = collect(t, &s);
	// A live process's mappings are those of an earlier snapshot until something asks for
	// them (target.h): when this one found something wrong, the process may have mapped,
	// unmapped or run another program since; read them and the process again, once.
	if ((err || found_wrong(s)) && pyu_target_reread_mappings(t)) {
		pyu_error_destroy(err);
		pyu_stacks_destroy(s);
		s = NULL;
		pyu_target_flush_cache(t);
		err = collect(t, &s);
	}
	if (err)
		return with_notice(err, t);
	pyu_target_note_used_pages(t); // what the walk read, not what values read later
	*ret = s;
	return NULL;
}

void pyu_code_info_free(struct pyu_code_info *ci)
{
	if (ci->block) {
		free(ci->block);
	} else {
		free(ci->name);
		free(ci->qualname);
		free(ci->filename);
		free(ci->table);
	}
}

PYU_PUBLIC void pyu_stacks_destroy(struct pyu_stacks *s)
{
	if (!s)
		return;
	for (uint32_t i = 0; i < s->code_count; i++)
		pyu_code_info_free(&s->codes[i]);
	free(s->codes);
	for (uint32_t i = 0; i < s->thread_count; i++) {
		struct pyu_thread_info *th = &s->threads[i];
		// Error frames' alone, and not a look at each frame when the walk counted none.
		for (uint32_t k = 0; (!th->walked || th->error_frames) && k < th->frame_count; k++)
			if (th->frames[k].reason)
				free(th->frames[k].reason);
		pyu_frames_give(th->frames, th->frame_cap);
		free(th->name);
		free(th->exc_type);
		free(th->exc_repr);
		pyu_traceback_clear(&th->exc_tb);
		pyu_exc_chain_clear(&th->exc_chain);
		for (uint32_t k = 0; k < th->native_count; k++) {
			free(th->native[k].function);
			free(th->native[k].library);
			free(th->native[k].file);
			if (th->native[k].cython)
				pyu_cython_frame_clear(th->native[k].cython);
			free(th->native[k].cython);
		}
		free(th->native);
		free(th->native_error);
	}
	free(s->threads);
	for (uint32_t i = 0; i < s->error_count; i++)
		free(s->errors[i]);
	free(s->errors);
	for (uint32_t i = 0; i < s->note_count; i++)
		free(s->notes[i]);
	free(s->notes);
	pyu_inspect_destroy(s->inspect); // before the runtime its value reader points to
	pyu_code_cache_destroy(s->code_cache);
	pyu_cython_files_destroy(s->cython_files);
	free(s->runtime);
	free(s);
}

PYU_PUBLIC struct pyu_error *pyu_stacks_set_limit(struct pyu_stacks *s, uint32_t which,
						  uint64_t value)
{
	if (!s || !s->inspect)
		return pyu_error_create(PYU_ERR_ARGUMENT, "no stacks");
	return pyu_inspect_set_limit(s->inspect, which, value);
}

PYU_PUBLIC void pyu_stacks_set_progress(struct pyu_stacks *s, pyu_progress_fn fn, void *arg)
{
	if (!s)
		return;
	s->progress = fn;
	s->progress_arg = arg;
}

PYU_PUBLIC uint32_t pyu_stacks_thread_count(const struct pyu_stacks *s)
{
	return s ? s->thread_count : 0;
}

PYU_PUBLIC int32_t pyu_stacks_find_thread(const struct pyu_stacks *s, int64_t native_tid,
					  uint64_t pthread_id)
{
	if (!s)
		return -1;
	// A thread state that continues another names its OS thread only as a fall-back: 3.12
	// runs sub-interpreter code on the thread state that created the interpreter, ids and all.
	int32_t found = -1;
	for (int pass = 0; pass < 2 && found < 0; pass++) {
		if (native_tid > 0)
			for (uint32_t i = 0; i < s->thread_count && found < 0; i++)
				if (s->threads[i].native_thread_id == native_tid &&
				    (pass || !s->threads[i].outer))
					found = (int32_t)i;
		if (pthread_id)
			for (uint32_t i = 0; i < s->thread_count && found < 0; i++)
				if (s->threads[i].thread_id == pthread_id && (pass || !s->threads[i].outer))
					found = (int32_t)i;
	}
	// a thread in nested interpreters: its innermost thread state, whose stack goes on
	for (uint32_t k = 0; found >= 0 && s->threads[found].inner && k < s->thread_count; k++)
		found = (int32_t)s->threads[found].inner - 1;
	return found;
}

PYU_PUBLIC void pyu_stacks_find_threads(const struct pyu_stacks *s, const int64_t *tids,
					uint32_t n, int32_t *ret)
{
	for (uint32_t i = 0; tids && ret && i < n; i++)
		ret[i] = pyu_stacks_find_thread(s, tids[i], 0);
}

PYU_PUBLIC uint32_t pyu_stacks_frame_count(const struct pyu_stacks *s, uint32_t thread)
{
	if (!s || thread >= s->thread_count)
		return 0;
	return s->threads[thread].frame_count;
}
