// view.c - the snapshot as plain values for bindings that build their own objects from it
// (the Python package's native module): threads, frames, code objects' names, what each
// thread is doing, through the accessors of pyunwind.h. Face layer: it formats nothing, and
// reads the target only as the formatters do (names, exceptions and activity on first use).
#include <stdbool.h>
#include <stddef.h>
#include <string.h>

#include "activity.h"
#include "inspect.h"
#include "stacks.h"
#include "triage.h"

PYU_PUBLIC uint32_t pyu_stacks_thread_fields(const struct pyu_stacks *s, uint32_t thread,
					     int64_t *out, uint32_t n)
{
	if (!s || !out || thread >= s->thread_count)
		return 0;
	const struct pyu_thread_info *th = &s->threads[thread];
	int64_t v[PYU_THREAD_FIELDS] = {
		(int64_t)th->thread_id,
		th->native_thread_id < 0 ? PYU_ABSENT : th->native_thread_id,
		th->holds_gil < 0 ? PYU_ABSENT : th->holds_gil,
		th->interpreter_id < 0 ? PYU_ABSENT : th->interpreter_id,
		(int64_t)th->tstate_address,
		th->frame_count,
		th->inner <= s->thread_count ? th->inner : 0,
	};
	if (n > PYU_THREAD_FIELDS)
		n = PYU_THREAD_FIELDS;
	memcpy(out, v, n * sizeof(*out));
	return n;
}

// The fields of frame @f of a snapshot with @codes code objects (pyu_stacks_frame_fields).
static inline void frame_row(const struct pyu_frame_info *f, uint32_t codes, int64_t *out)
{
	const struct pyu_location *l = &f->loc;
	if (f->kind == PYU_FRAME_PYTHON && f->code >= 0 && (uint32_t)f->code < codes) {
		out[0] = 0;
		out[1] = f->code;
		out[2] = l->line == PYU_NO_LINE ? PYU_ABSENT : l->line;
		out[3] = l->end_line == PYU_NO_LINE ? PYU_ABSENT : l->end_line;
		out[4] = l->column == PYU_NO_COLUMN ? PYU_ABSENT : l->column;
		out[5] = l->end_column == PYU_NO_COLUMN ? PYU_ABSENT : l->end_column;
		out[6] = f->instruction_offset < 0 ? PYU_ABSENT : f->instruction_offset;
	} else {
		out[0] = 1;
		out[1] = -1;
		out[2] = out[3] = out[4] = out[5] = out[6] = PYU_ABSENT;
	}
	out[7] = (int64_t)f->frame_address;
}

// Whether frame @f gives the fields frame @f - 1 gave, its address aside: a recursion's
// frames differ in their address alone.
static inline bool same_as_before(const struct pyu_frame_info *f)
{
	return memcmp(f, f - 1, offsetof(struct pyu_frame_info, frame_address)) == 0;
}

// Frames [@first, @first + *@count) of @thread, @count clamped to those there; NULL (and
// *@count 0) for a bad thread or @first.
static const struct pyu_frame_info *frames_at(const struct pyu_stacks *s, uint32_t thread,
					      uint32_t first, uint32_t *count)
{
	if (!s || thread >= s->thread_count || first >= s->threads[thread].frame_count) {
		*count = 0;
		return NULL;
	}
	const struct pyu_thread_info *th = &s->threads[thread];
	if (*count > th->frame_count - first)
		*count = th->frame_count - first;
	return th->frames + first;
}

PYU_PUBLIC uint32_t pyu_stacks_frame_fields(const struct pyu_stacks *s, uint32_t thread,
					    uint32_t first, uint32_t count, int64_t *out)
{
	const struct pyu_frame_info *f = out ? frames_at(s, thread, first, &count) : NULL;
	if (!f)
		return 0;
	// In locals: for the compiler each store to @out may change them (a sampler's native
	// module asks for every frame of a deep thread each snapshot: loaded once, not per frame).
	const uint32_t codes = s->code_count;
	for (uint32_t i = 0; i < count; i++, f++, out += PYU_FRAME_FIELDS) {
		if (i > 0 && same_as_before(f)) {
			memcpy(out, out - PYU_FRAME_FIELDS, 7 * sizeof(*out));
			out[7] = (int64_t)f->frame_address;
		} else {
			frame_row(f, codes, out);
		}
	}
	return count;
}

PYU_PUBLIC uint32_t pyu_stacks_frames_match(const struct pyu_stacks *s, uint32_t thread,
					    uint32_t first, uint32_t count, const int64_t *keys,
					    const int64_t *code_keys, uint32_t ncode_keys)
{
	const struct pyu_frame_info *f = keys && code_keys ? frames_at(s, thread, first, &count)
							   : NULL;
	if (!f)
		return 0;
	const uint32_t codes = s->code_count;
	int64_t row[PYU_FRAME_FIELDS];
	uint32_t i = 0;
	for (; i < count; i++, f++, keys += PYU_FRAME_FIELDS) {
		// A frame as the one before: the row made for that one stands.
		if (i == 0 || !same_as_before(f)) {
			frame_row(f, codes, row);
			if (row[0] != 0 || (uint64_t)row[1] >= ncode_keys || code_keys[row[1]] < 0)
				break;
			row[1] = code_keys[row[1]];
		}
		// Every field at once, without a call (memcmp was half of this loop).
		if (((keys[0] ^ row[0]) | (keys[1] ^ row[1]) | (keys[2] ^ row[2]) |
		     (keys[3] ^ row[3]) | (keys[4] ^ row[4]) | (keys[5] ^ row[5]) |
		     (keys[6] ^ row[6]) | (keys[7] ^ (int64_t)f->frame_address)) != 0)
			break;
	}
	return i;
}

PYU_PUBLIC const char *pyu_stacks_frame_reason(const struct pyu_stacks *s, uint32_t thread,
					       uint32_t frame)
{
	if (!s || thread >= s->thread_count || frame >= s->threads[thread].frame_count)
		return NULL;
	const struct pyu_frame_info *f = &s->threads[thread].frames[frame];
	if (f->kind == PYU_FRAME_PYTHON && f->code >= 0 && (uint32_t)f->code < s->code_count)
		return NULL;
	// as the documents say it
	return f->reason ? f->reason : f->kind == PYU_FRAME_ERROR ? "unreadable frame"
								  : "no code object";
}

PYU_PUBLIC uint32_t pyu_stacks_code_count(const struct pyu_stacks *s)
{
	return s ? s->code_count : 0;
}

PYU_PUBLIC const char *pyu_stacks_code_string(const struct pyu_stacks *s, uint32_t code,
					      uint32_t which)
{
	if (!s || code >= s->code_count)
		return NULL;
	const struct pyu_code_info *c = &s->codes[code];
	return which == 0 ? c->name : which == 1 ? c->qualname : which == 2 ? c->filename : NULL;
}

PYU_PUBLIC uint64_t pyu_stacks_code_address(const struct pyu_stacks *s, uint32_t code)
{
	return s && code < s->code_count ? s->codes[code].address : 0;
}

PYU_PUBLIC const char *pyu_stacks_thread_name(struct pyu_stacks *s, uint32_t thread)
{
	if (!s || thread >= s->thread_count)
		return NULL;
	pyu_stacks_read_thread_values(s);
	return s->threads[thread].name;
}

PYU_PUBLIC uint32_t pyu_stacks_thread_activity(struct pyu_stacks *s, uint32_t thread,
					       int64_t *out, uint32_t n)
{
	if (!s || !out || thread >= s->thread_count)
		return 0;
	pyu_read_activities(s, 0, s->thread_count); // together: fewer system calls
	const struct pyu_activity *a = pyu_thread_activity(s, thread);
	int64_t v[PYU_ACTIVITY_FIELDS] = {
		pyu_in_syscall(a) ? a->syscall : PYU_ABSENT,
		a->signal > 0 ? a->signal : PYU_ABSENT,
		a->signal > 0 && a->has_fault_address ? (int64_t)a->fault_address : PYU_ABSENT,
		a->has_cpu ? (a->cpu_ns < 0 ? 0 : a->cpu_ns) : PYU_ABSENT,
	};
	if (n > PYU_ACTIVITY_FIELDS)
		n = PYU_ACTIVITY_FIELDS;
	memcpy(out, v, n * sizeof(*out));
	return n;
}

PYU_PUBLIC const char *pyu_stacks_thread_activity_text(struct pyu_stacks *s, uint32_t thread,
						       uint32_t which)
{
	if (!s || thread >= s->thread_count)
		return NULL;
	pyu_read_activities(s, 0, s->thread_count);
	const struct pyu_activity *a = pyu_thread_activity(s, thread);
	switch (which) {
	case 0:
		return pyu_in_syscall(a) ? a->syscall_name : NULL;
	case 1:
		return pyu_state_words(a->state);
	case 2:
		return a->signal > 0 ? pyu_signal_name(a->signal) : NULL;
	default:
		return NULL;
	}
}

PYU_PUBLIC uint64_t pyu_stacks_thread_exception(struct pyu_stacks *s, uint32_t thread)
{
	if (!s || thread >= s->thread_count)
		return 0;
	pyu_stacks_read_thread_values(s);
	return s->threads[thread].exc_repr ? s->threads[thread].exc_address : 0;
}

PYU_PUBLIC const char *pyu_stacks_version(const struct pyu_stacks *s)
{
	return s ? s->version : "";
}

PYU_PUBLIC uint64_t pyu_stacks_hexversion(const struct pyu_stacks *s)
{
	return s ? s->hexversion : 0;
}

PYU_PUBLIC uint32_t pyu_stacks_build_flags(const struct pyu_stacks *s)
{
	return s ? (s->debug_build ? 1u : 0u) | (s->free_threaded ? 2u : 0u) : 0;
}
