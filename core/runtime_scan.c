// runtime_scan.c - finding the interpreter of CPython 2.7 - 3.12 in a target's memory alone,
// for cores read where none of the target's files is available (or only other builds of them).
// The version comes from the names of the files the core maps (libpython3.9.so.1.0,
// python3.11, python2.7d); the interpreter list head is a pointer in that file's writable data
// (_PyRuntime.interpreters.head from 3.7, the static interp_head before), found by scanning
// those pages for a pointer that leads to a structure that validates under the version's
// layout: interpreters whose thread states point back to them, frames whose code objects have
// a type that passes the structural checks of types.h (one type for all of them), and from 3.7
// a _PyRuntime whose interpreters.main is the list's last interpreter and whose GIL holder is
// nobody or one of its thread states. Every scan is bounded; when nothing validates, the error
// says what was scanned. 3.13+ are found by their debug offsets cookie instead (runtime.c).
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bytes.h"
#include "runtime.h"

#define SCAN_IMAGE_MAX (64u << 20)  // bytes of one file's writable data (and .bss) scanned
#define SCAN_IMAGES 4               // files named like an interpreter that are scanned
#define SCAN_CHUNK (256u << 10)
#define SCAN_CANDIDATES 256         // pointers that pass the quick check, validated fully
#define SCAN_REGIONS 16             // writable mappings of one file (plus its .bss)

static bool read_u64(struct pyu_target *t, uint64_t addr, uint64_t *ret)
{
	struct pyu_error *err = pyu_target_read_u64(t, addr, ret);
	if (err) {
		pyu_error_destroy(err);
		return false;
	}
	return true;
}

// A pointer that may name an interpreter or thread state: aligned, into writable memory.
static bool plausible(const struct pyu_target *t, uint64_t p)
{
	if (p == 0 || (p & 7))
		return false;
	const struct pyu_mapping *m = pyu_target_find_mapping(t, p);
	return m && m->writable;
}

struct region {
	uint64_t start, end;
};

// One file named like an interpreter, with its writable pages.
struct image {
	const char *path;
	char exec_name[256]; // path's storage when the image is the program itself (exec_image)
	uint32_t version; // major.minor from the name
	bool debug, ft;
	struct region regions[SCAN_REGIONS];
	size_t nregions;
	uint64_t bytes;
};

// The writable mappings of @path, each followed by the anonymous writable mapping right after
// it when there is one (the file's .bss), capped at SCAN_IMAGE_MAX bytes in all.
static void image_regions(const struct pyu_target *t, struct image *img)
{
	size_t count = pyu_target_mapping_count(t);
	for (size_t i = 0; i < count && img->nregions < SCAN_REGIONS; i++) {
		const struct pyu_mapping *m = pyu_target_mapping(t, i);
		if (!m->writable || !m->path || strcmp(m->path, img->path) != 0)
			continue;
		uint64_t end = m->end;
		const struct pyu_mapping *next = pyu_target_mapping(t, i + 1);
		if (next && next->start == m->end && next->writable && !next->path)
			end = next->end;
		if (end - m->start > SCAN_IMAGE_MAX - img->bytes)
			end = m->start + (SCAN_IMAGE_MAX - img->bytes);
		if (end <= m->start)
			break;
		img->regions[img->nregions++] = (struct region){m->start, end};
		img->bytes += end - m->start;
	}
}

// No file named like an interpreter (a core without NT_FILE whose files are missing): the
// program itself, when the name it was started by (AT_EXECFN) carries a version. Its pages
// are the mappings from the one holding its program headers (AT_PHDR) on, while each starts
// where the one before ended and names no other file: its segments (named by the link map
// when its file was found, then hidden: the writable ones still unnamed), its .bss, the heap
// after it. Returns 1 with *img filled, or 0.
static size_t exec_image(struct pyu_target *t, struct image *img)
{
	uint64_t phdr = 0;
	char *name = pyu_target_exec_name(t, &phdr);
	memset(img, 0, sizeof(*img));
	if (name) {
		snprintf(img->exec_name, sizeof(img->exec_name), "%s", name);
		img->version = pyu_version_from_name(name, &img->debug, &img->ft);
	}
	free(name);
	size_t count = pyu_target_mapping_count(t), i = 0;
	const struct pyu_mapping *first = phdr ? pyu_target_find_mapping(t, phdr) : NULL;
	if (!img->version || !first)
		return 0;
	while (i < count && pyu_target_mapping(t, i) != first)
		i++;
	uint64_t end = first->start;
	for (; i < count && img->nregions < SCAN_REGIONS && img->bytes < SCAN_IMAGE_MAX; i++) {
		const struct pyu_mapping *m = pyu_target_mapping(t, i);
		if (m->start != end || (m->path && (!first->path || strcmp(m->path, first->path))))
			break;
		end = m->end;
		if (!m->writable)
			continue;
		uint64_t stop = m->end - m->start > SCAN_IMAGE_MAX - img->bytes
			? m->start + (SCAN_IMAGE_MAX - img->bytes) : m->end;
		img->regions[img->nregions++] = (struct region){m->start, stop};
		img->bytes += stop - m->start;
	}
	return img->nregions ? 1 : 0;
}

// Files the core names that carry a CPython version in their name, libpython first; else the
// program by the name it was started by (exec_image).
static size_t find_images(struct pyu_target *t, struct image *out)
{
	size_t n = 0, count = pyu_target_mapping_count(t);
	for (int pass = 0; pass < 2; pass++) {
		for (size_t i = 0; i < count && n < SCAN_IMAGES; i++) {
			const struct pyu_mapping *m = pyu_target_mapping(t, i);
			if (!m->path || m->path[0] == '[')
				continue;
			const char *slash = strrchr(m->path, '/');
			const char *base = slash ? slash + 1 : m->path;
			if ((pass == 0) != (strncmp(base, "libpython", 9) == 0))
				continue;
			bool dup = false;
			for (size_t k = 0; k < n; k++)
				dup = dup || strcmp(out[k].path, m->path) == 0;
			struct image img = {0};
			img.path = m->path;
			img.version = dup ? 0 : pyu_version_from_name(m->path, &img.debug, &img.ft);
			if (!img.version)
				continue;
			image_regions(t, &img);
			if (img.nregions)
				out[n++] = img;
		}
	}
	if (n == 0 && exec_image(t, &out[0])) {
		out[0].path = out[0].exec_name;
		n = 1;
	}
	return n;
}

// A validated interpreter list.
struct list {
	uint64_t slot, first, last;
	uint32_t interps, threads, codes;
	uint64_t interp_addrs[16]; // the first few, to compare lists
	uint64_t code_type;
};

static bool list_has(const struct list *l, uint64_t interp)
{
	for (uint32_t i = 0; i < l->interps && i < 16; i++)
		if (l->interp_addrs[i] == interp)
			return true;
	return false;
}

// The code object the innermost frame of the thread state @tstate runs; 0 when the thread has
// no frame or its frames cannot be read here (a native stack the core lacks).
static uint64_t first_code(struct pyu_target *t, const struct pyu_layout *l, uint64_t tstate)
{
	uint64_t frame = 0, code = 0;
	switch (l->frame_source) {
	case PYU_FRAME_FROM_TSTATE_FRAME:
		if (!read_u64(t, tstate + (uint64_t)l->tstate.frame, &frame))
			return 0;
		break;
	case PYU_FRAME_FROM_CFRAME: {
		uint64_t cframe;
		if (!read_u64(t, tstate + (uint64_t)l->tstate.cframe, &cframe) || !cframe ||
		    !read_u64(t, cframe + (uint64_t)l->tstate.cframe_current, &frame))
			return 0;
		break;
	}
	case PYU_FRAME_FROM_CURRENT_FRAME:
		if (!read_u64(t, tstate + (uint64_t)l->tstate.current_frame, &frame))
			return 0;
		break;
	}
	if (!frame)
		return 0;
	int32_t off = l->chain == PYU_CHAIN_FRAME_OBJECT ? l->frame.f_code : l->iframe.code;
	if (!read_u64(t, frame + (uint64_t)off, &code))
		return 0;
	return code & ~l->stackref_mask;
}

// Whether the thread states of @interp all point back to it, and their frames run code
// objects of one type that passes the structural checks. Counts into @out.
static bool check_threads(struct pyu_target *t, const struct pyu_layout *l, uint64_t interp,
			  struct pyu_types *types, struct list *out)
{
	uint64_t tstate;
	if (!read_u64(t, interp + (uint64_t)l->interp.threads_head, &tstate))
		return false;
	uint64_t saved = 0, power = 1, steps = 0;
	for (uint32_t n = 0; tstate; n++) {
		uint64_t back, next;
		if (n >= PYU_MAX_THREADS_WALKED || tstate == saved || !plausible(t, tstate) ||
		    !read_u64(t, tstate + (uint64_t)l->tstate.interp, &back) || back != interp ||
		    !read_u64(t, tstate + (uint64_t)l->tstate.next, &next))
			return false;
		if (++steps == power) {
			saved = tstate;
			power *= 2;
			steps = 0;
		}
		uint64_t code = first_code(t, l, tstate), type;
		if (code) {
			if ((code & 7) || !read_u64(t, code + (uint64_t)l->ob_type, &type))
				return false;
			struct pyu_error *err = pyu_type_check(types, t, l, PYU_TYPE_CODE, type, code);
			if (err) {
				pyu_error_destroy(err);
				return false;
			}
			out->codes++;
		}
		out->threads++;
		tstate = next;
	}
	return true;
}

// Validates the interpreter list whose head pointer is at @slot. False when any part fails.
static bool validate(struct pyu_target *t, const struct pyu_layout *l, uint64_t slot,
		     struct list *out)
{
	memset(out, 0, sizeof(*out));
	out->slot = slot;
	struct pyu_types types = {0};
	uint64_t interp;
	if (!read_u64(t, slot, &interp))
		return false;
	out->first = interp;
	uint64_t saved = 0, power = 1, steps = 0;
	while (interp) {
		if (out->interps >= PYU_MAX_INTERPRETERS || interp == saved || !plausible(t, interp))
			return false;
		if (++steps == power) {
			saved = interp;
			power *= 2;
			steps = 0;
		}
		if (!check_threads(t, l, interp, &types, out))
			return false;
		if (out->interps < 16)
			out->interp_addrs[out->interps] = interp;
		out->interps++;
		out->last = interp;
		if (!read_u64(t, interp + (uint64_t)l->interp.next, &interp))
			return false;
	}
	// A running interpreter has a thread state, and frames to prove the type with.
	if (out->threads == 0 || out->codes == 0)
		return false;
	out->code_type = types.addr[PYU_TYPE_CODE];
	// 3.7+: the head is a field of _PyRuntime, whose neighbours must agree.
	if (l->runtime.interpreters_head != PYU_NO_FIELD) {
		uint64_t runtime = slot - (uint64_t)l->runtime.interpreters_head, v;
		if (l->runtime.interpreters_main != PYU_NO_FIELD &&
		    (!read_u64(t, runtime + (uint64_t)l->runtime.interpreters_main, &v) ||
		     v != out->last))
			return false;
		if (l->runtime.tstate_current != PYU_NO_FIELD) {
			uint64_t back;
			if (!read_u64(t, runtime + (uint64_t)l->runtime.tstate_current, &v))
				return false;
			if (v && (!plausible(t, v) ||
				  !read_u64(t, v + (uint64_t)l->tstate.interp, &back) ||
				  !list_has(out, back)))
				return false;
		}
	}
	return true;
}

// The full version "X.Y.Z..." that Py_GetVersion() left in its static buffer (sys.version),
// looked for in @buf (read from @addr) as the text "X.Y." of @minor followed by a digit and,
// after the rest of the version, " (". Returns the target address of the text or 0.
static uint64_t find_version_text(const uint8_t *buf, size_t len, uint64_t addr,
				  uint32_t minor)
{
	char want[16];
	int n = snprintf(want, sizeof(want), "%u.%u.", minor >> 24, (minor >> 16) & 0xff);
	for (size_t i = 0; i + (size_t)n + 4 <= len; i++) {
		if (memcmp(buf + i, want, (size_t)n) != 0 || (i > 0 && buf[i - 1] != 0))
			continue;
		size_t k = i + (size_t)n;
		if (buf[k] < '0' || buf[k] > '9')
			continue;
		while (k < len && k < i + 24 && buf[k] != ' ' && buf[k] != 0)
			k++;
		if (k + 1 < len && buf[k] == ' ' && buf[k + 1] == '(')
			return addr + i;
	}
	return 0;
}

struct scan_result {
	struct list best;
	bool found, ambiguous;
	uint64_t scanned, candidates, version_text;
};

static void scan_image(struct pyu_target *t, const struct pyu_layout *l, const struct image *img,
		       uint8_t *chunk, struct scan_result *r)
{
	const int32_t head_off = l->interp.threads_head, back_off = l->tstate.interp;
	for (size_t ri = 0; ri < img->nregions; ri++) {
		const struct region *g = &img->regions[ri];
		for (uint64_t a = g->start; a < g->end; a += SCAN_CHUNK) {
			uint64_t len = g->end - a < SCAN_CHUNK ? g->end - a : SCAN_CHUNK;
			struct pyu_error *err = pyu_target_read(t, a, chunk, (size_t)len);
			if (err) {
				pyu_error_destroy(err);
				continue;
			}
			r->scanned += len;
			if (!r->version_text)
				r->version_text = find_version_text(chunk, (size_t)len, a,
								    img->version);
			for (uint64_t o = 0; o + 8 <= len; o += 8) {
				uint64_t interp = pyu_get_u64(chunk, (int32_t)o), tstate, back;
				if (!plausible(t, interp) ||
				    !read_u64(t, interp + (uint64_t)head_off, &tstate) ||
				    !plausible(t, tstate) ||
				    !read_u64(t, tstate + (uint64_t)back_off, &back) || back != interp)
					continue;
				if (r->candidates++ >= SCAN_CANDIDATES)
					return;
				struct list cand;
				if (!validate(t, l, a + o, &cand))
					continue;
				if (!r->found) {
					r->best = cand;
					r->found = true;
					continue;
				}
				// Several pointers lead to the main interpreter (the list head, the
				// main pointer, the auto-thread-state interpreter): the one whose
				// list holds the others' is the head. Lists that do not nest mean
				// two interpreters, which one cannot choose between.
				if (list_has(&r->best, cand.first) && r->best.interps >= cand.interps)
					continue;
				if (list_has(&cand, r->best.first) && cand.interps >= r->best.interps)
					r->best = cand;
				else
					r->ambiguous = true;
			}
		}
	}
}

uint32_t pyu_version_in_memory(struct pyu_target *t, uint32_t minor_hex)
{
	struct image imgs[SCAN_IMAGES];
	size_t n = find_images(t, imgs);
	uint8_t *chunk = malloc(SCAN_CHUNK);
	uint32_t exact = 0;
	for (size_t i = 0; chunk && i < n && !exact; i++) {
		if ((imgs[i].version >> 16) != (minor_hex >> 16))
			continue;
		for (size_t ri = 0; ri < imgs[i].nregions && !exact; ri++) {
			const struct region *g = &imgs[i].regions[ri];
			for (uint64_t a = g->start; a < g->end && !exact; a += SCAN_CHUNK) {
				uint64_t len = g->end - a < SCAN_CHUNK ? g->end - a : SCAN_CHUNK;
				struct pyu_error *err = pyu_target_read(t, a, chunk, (size_t)len);
				if (err) {
					pyu_error_destroy(err);
					continue;
				}
				uint64_t at = find_version_text(chunk, (size_t)len, a, minor_hex);
				if (at)
					exact = pyu_version_from_text(t, at, minor_hex);
			}
		}
	}
	free(chunk);
	return exact;
}

struct pyu_error *pyu_runtime_scan(struct pyu_target *t, struct pyu_runtime *ret, char *errs,
				   size_t errs_len)
{
	struct image imgs[SCAN_IMAGES];
	size_t n = find_images(t, imgs);
	if (n == 0) {
		pyu_appendf(errs, errs_len, "no file named like a CPython 2.7 - 3.12 interpreter with "
			"writable data in memory to scan; ");
		return pyu_error_create(PYU_ERR_NOT_PYTHON, "nothing to scan");
	}
	uint8_t *chunk = malloc(SCAN_CHUNK);
	if (!chunk)
		return &pyu_error_nomem;
	struct pyu_error *result = NULL;
	for (size_t i = 0; i < n; i++) {
		const struct image *img = &imgs[i];
		struct pyu_runtime rt;
		memset(&rt, 0, sizeof(rt));
		if ((img->version >> 16) >= 0x030d)
			continue; // found by the debug offsets cookie, or not at all
		struct pyu_error *err = pyu_runtime_init_layout(&rt, img->version, img->debug);
		if (err) {
			pyu_appendf(errs, errs_len, "%s: %s; ", img->path, pyu_error_message(err));
			pyu_error_destroy(err);
			continue;
		}
		struct scan_result r = {0};
		scan_image(t, &rt.layout, img, chunk, &r);
		if (!r.found || r.ambiguous) {
			pyu_appendf(errs, errs_len, "%s (CPython %s by its name): %s in %" PRIu64 " bytes of "
				"its writable data (%" PRIu64 " pointers examined)%s; ", img->path,
				rt.layout.name, r.ambiguous ? "two interpreter lists that do not "
				"nest" : "no interpreter list that validates", r.scanned, r.candidates,
				r.candidates > SCAN_CANDIDATES ? ", the rest skipped" : "");
			continue;
		}
		const struct pyu_layout *l = &rt.layout;
		rt.free_threaded = img->ft;
		rt.memory_only = true;
		rt.interp_head_addr = r.best.slot;
		if (l->runtime.interpreters_head != PYU_NO_FIELD) {
			rt.runtime_addr = r.best.slot - (uint64_t)l->runtime.interpreters_head;
			if (l->gil == PYU_GIL_RUNTIME_CURRENT &&
			    l->runtime.tstate_current != PYU_NO_FIELD)
				rt.tstate_current_addr =
					rt.runtime_addr + (uint64_t)l->runtime.tstate_current;
		}
		rt.types.addr[PYU_TYPE_CODE] = r.best.code_type;
		uint32_t exact = r.version_text
			? pyu_version_from_text(t, r.version_text, img->version) : 0;
		if (exact) {
			rt.version_hex = exact;
			rt.version_exact = true;
		}
		snprintf(rt.image, sizeof(rt.image), "%s", img->path);
		pyu_appendf(rt.notes, sizeof(rt.notes),
			"found in memory alone: the interpreter list head at 0x%" PRIx64 " in the "
			"writable data of %s (CPython %s by its name; %" PRIu64 " bytes scanned, %u "
			"interpreter(s), %u thread state(s), code type at 0x%" PRIx64 ")%s; ",
			r.best.slot, img->path, l->name, r.scanned, r.best.interps, r.best.threads,
			r.best.code_type,
			exact ? "" : "; the exact version was not found, only major.minor");
		if (l->gil == PYU_GIL_CURRENT_SYMBOL)
			pyu_appendf(rt.notes, sizeof(rt.notes), "which thread holds the GIL is unknown "
				"without the interpreter's symbols; ");
		*ret = rt;
		free(chunk);
		return NULL;
	}
	free(chunk);
	result = pyu_error_create(PYU_ERR_NOT_PYTHON, "no interpreter list validated");
	return result;
}
