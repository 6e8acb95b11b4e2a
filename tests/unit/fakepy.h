// fakepy.h - a synthetic CPython interpreter in fake memory (fakemem.h), laid out by the static
// table of a version: runtime, interpreter, thread states, frames and code objects whose code
// unit i is on line firstlineno + 1 + i. Used by the frame and runtime suites.
#ifndef PYU_FAKEPY_H
#define PYU_FAKEPY_H

#include <stdio.h>

#include "fakemem.h"
#include "runtime.h"

struct fake_py {
	struct fakemem m;
	struct pyu_runtime rt;
	const struct pyu_layout *l;
	uint64_t interp, gil;
};

// @debug: a Py_DEBUG build (objects carry Py_TRACE_REFS links where the version implies them).
static inline void fp_init_build(struct fake_py *p, uint32_t version_hex, bool debug)
{
	memset(p, 0, sizeof(*p));
	ck_assert_ptr_null(pyu_runtime_init_layout(&p->rt, version_hex, debug));
	p->l = &p->rt.layout;
	fm_init(&p->m, p->l);
	struct fakemem *m = &p->m;
	const struct pyu_layout *l = p->l;
	uint64_t runtime = fm_alloc(m, 2048);
	p->rt.version_exact = true;
	p->rt.types.addr[PYU_TYPE_CODE] = m->code_type;
	p->interp = fm_alloc(m, 8192);
	if (l->runtime.interpreters_head != PYU_NO_FIELD) {
		p->rt.runtime_addr = runtime;
		p->rt.interp_head_addr = runtime + (uint64_t)l->runtime.interpreters_head;
	} else {
		p->rt.interp_head_addr = runtime; // 2.7/3.6: the static interp_head
	}
	fm_u64(m, p->rt.interp_head_addr, p->interp);
	if (l->interp.ceval_gil != PYU_NO_FIELD) {
		p->gil = fm_alloc(m, 64);
		fm_u64(m, p->interp + (uint64_t)l->interp.ceval_gil, p->gil);
	} else if (l->runtime.tstate_current != PYU_NO_FIELD) {
		p->rt.tstate_current_addr = runtime + (uint64_t)l->runtime.tstate_current;
	}
}

static inline void fp_init(struct fake_py *p, uint32_t version_hex)
{
	fp_init_build(p, version_hex, false);
}

// A code object of @units code units whose unit i is on line firstlineno + 1 + i.
static inline uint64_t fp_code(struct fake_py *p, const char *name, int32_t firstlineno, unsigned units)
{
	struct fakemem *m = &p->m;
	const struct pyu_layout *l = p->l;
	uint8_t table[1024];
	size_t tlen = 0;
	ck_assert_uint_le(units, 256);
	if (l->linetable == PYU_LNOTAB_SIGNED || l->linetable == PYU_LNOTAB_UNSIGNED) {
		table[tlen++] = 0; // from byte 0: firstlineno + 1
		table[tlen++] = 1;
	}
	for (unsigned i = 0; i < units; i++) {
		if (l->linetable == PYU_LOCATIONS_311) {
			table[tlen++] = 0x80 | 13 << 3; // no-column entry, 1 unit
			table[tlen++] = 2;              // svarint +1
		} else {
			table[tlen++] = 2; // 3.10: 2 bytes, +1 line; lnotab: +2 bytes, +1 line
			table[tlen++] = 1;
		}
	}
	uint64_t code = fm_alloc(m, (size_t)l->code.size + 2 * units);
	fm_u64(m, code + (uint64_t)l->ob_type, m->code_type);
	fm_u32(m, code + (uint64_t)l->code.firstlineno, (uint32_t)firstlineno);
	fm_u64(m, code + (uint64_t)l->code.name, fm_str(m, name));
	fm_u64(m, code + (uint64_t)l->code.filename, fm_str(m, "/src/app.py"));
	if (l->code.qualname != PYU_NO_FIELD) {
		char q[64];
		snprintf(q, sizeof(q), "Q.%s", name);
		fm_u64(m, code + (uint64_t)l->code.qualname, fm_str(m, q));
	}
	fm_u64(m, code + (uint64_t)l->code.linetable, fm_bytes(m, table, tlen));
	if (l->code.ob_size != PYU_NO_FIELD) {
		fm_u64(m, code + (uint64_t)l->code.ob_size, units);
	} else {
		uint8_t zeros[512] = {0};
		fm_u64(m, code + (uint64_t)l->code.code, fm_bytes(m, zeros, 2 * units));
	}
	return code;
}

// A thread state pushed at the head of the interpreter's list.
static inline uint64_t fp_thread(struct fake_py *p, uint64_t ident, int64_t native)
{
	struct fakemem *m = &p->m;
	const struct pyu_layout *l = p->l;
	uint64_t ts = fm_alloc(m, 1024);
	uint64_t head;
	memcpy(&head, m->buf + (p->interp + (uint64_t)l->interp.threads_head - FM_BASE), 8);
	fm_u64(m, ts + (uint64_t)l->tstate.next, head);
	fm_u64(m, ts + (uint64_t)l->tstate.interp, p->interp);
	fm_u64(m, ts + (uint64_t)l->tstate.thread_id, ident);
	if (l->tstate.native_thread_id != PYU_NO_FIELD)
		fm_u64(m, ts + (uint64_t)l->tstate.native_thread_id, (uint64_t)native);
	fm_u64(m, p->interp + (uint64_t)l->interp.threads_head, ts);
	return ts;
}

static inline void fp_set_top(struct fake_py *p, uint64_t ts, uint64_t frame)
{
	struct fakemem *m = &p->m;
	const struct pyu_layout *l = p->l;
	switch (l->frame_source) {
	case PYU_FRAME_FROM_TSTATE_FRAME:
		fm_u64(m, ts + (uint64_t)l->tstate.frame, frame);
		break;
	case PYU_FRAME_FROM_CFRAME: {
		uint64_t cf = fm_alloc(m, 32);
		fm_u64(m, cf + (uint64_t)l->tstate.cframe_current, frame);
		fm_u64(m, ts + (uint64_t)l->tstate.cframe, cf);
		break;
	}
	case PYU_FRAME_FROM_CURRENT_FRAME:
		fm_u64(m, ts + (uint64_t)l->tstate.current_frame, frame);
		break;
	}
}

// A _PyInterpreterFrame at @f running @code at code unit @unit, called from @previous.
static inline uint64_t fp_iframe_at(struct fake_py *p, uint64_t f, uint64_t code, unsigned unit,
				    uint64_t previous, uint8_t owner)
{
	struct fakemem *m = &p->m;
	const struct pyu_layout *l = p->l;
	fm_u64(m, f + (uint64_t)l->iframe.code, code | (l->stackref_mask ? 1 : 0));
	fm_u64(m, f + (uint64_t)l->iframe.previous, previous);
	fm_u64(m, f + (uint64_t)l->iframe.instr_ptr,
	       code + (uint64_t)l->code.code_adaptive + 2 * unit);
	fm_u8(m, f + (uint64_t)l->iframe.owner, owner);
	return f;
}

// A frame running @code at code unit @unit, called from @previous.
static inline uint64_t fp_frame(struct fake_py *p, uint64_t code, unsigned unit, uint64_t previous,
			 uint8_t owner)
{
	struct fakemem *m = &p->m;
	const struct pyu_layout *l = p->l;
	if (l->chain == PYU_CHAIN_FRAME_OBJECT) {
		uint64_t f = fm_alloc(m, (size_t)l->frame.size);
		fm_u64(m, f + (uint64_t)l->frame.f_back, previous);
		fm_u64(m, f + (uint64_t)l->frame.f_code, code);
		fm_u32(m, f + (uint64_t)l->frame.f_lasti,
		       l->lasti == PYU_LASTI_CODE_UNITS ? unit : 2 * unit);
		return f;
	}
	return fp_iframe_at(p, fm_alloc(m, (size_t)l->iframe.size), code, unit, previous, owner);
}
// The snapshot of @p, each thread's frames read up to @max_frames (0: PYU_MAX_FRAMES) before
// its outermost ones.
static inline struct pyu_stacks *fp_collect_bounded(struct fake_py *p, uint32_t max_frames)
{
	struct pyu_stacks *s = calloc(1, sizeof(*s));
	struct pyu_code_cache *c;
	ck_assert_ptr_null(pyu_code_cache_create(&p->rt.types, &c));
	struct pyu_walk w = {p->m.t, &p->rt, s, c, max_frames};
	struct pyu_error *err = pyu_walk_threads(&w);
	ck_assert_msg(err == NULL, "%s", pyu_error_message(err));
	pyu_code_cache_destroy(c);
	return s;
}

static inline struct pyu_stacks *fp_collect(struct fake_py *p)
{
	struct pyu_stacks *s = calloc(1, sizeof(*s));
	struct pyu_code_cache *c;
	ck_assert_ptr_null(pyu_code_cache_create(&p->rt.types, &c));
	struct pyu_walk w = {p->m.t, &p->rt, s, c, 0};
	struct pyu_error *err = pyu_walk_threads(&w);
	ck_assert_msg(err == NULL, "%s", pyu_error_message(err));
	pyu_code_cache_destroy(c);
	return s;
}

#endif
