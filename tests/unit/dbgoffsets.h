// dbgoffsets.h - _Py_DebugOffsets blocks with the values the real 3.13.0, 3.14.10 and 3.15.2
// x86-64 builds store (internals doc, section 2.4), for the layout and runtime suites.
#ifndef PYU_DBGOFFSETS_H
#define PYU_DBGOFFSETS_H

#include <stdint.h>
#include <string.h>

// Values as stored by the real builds (internals doc, section 2.4), cookie word first.
static const uint64_t __attribute__((unused)) dbg_313[] = {
	0, 0x030d00f0, 0,
	283320, 608, 632,
	194968, 7272, 7264, 7344, 7400, 7656, 7640, 7648, 16, 7752, 0, 7768, 7760,
	304, 0, 8, 16, 72, 152, 160, 232, 32,
	80, 8, 0, 56, 72, 70,
	208, 112, 120, 128, 136, 68, 52, 96, 104, 200,
	16, 8,
	416, 24, 88, 168,
	32, 24, 16,
	40, 24, 16,
	48, 32, 40,
	24, 16,
	32, 16, 24,
	40, 16, 32,
	64, 32, 16, 40,
	240, 200,
};

static const uint64_t __attribute__((unused)) dbg_314[] = {
	0, 0x030e0af0, 0,
	316616, 784, 808,
	225864, 7280, 7272, 7344, 7360, 7408, 7688, 7672, 7680, 16, 7784, 0, 7800, 7792, 7992, 0,
	832, 0, 8, 16, 72, 152, 160, 232, 32,
	88, 8, 0, 56, 80, 74, 64, 0,
	216, 112, 120, 128, 136, 68, 52, 96, 104, 208, 0,
	16, 8,
	416, 24, 88, 168,
	40, 32, 16,
	40, 24, 16,
	200, 24, 40, 32,
	48, 32, 40,
	24, 16,
	32, 16, 24,
	40, 16, 32,
	64, 32, 16, 40,
	264, 192,
	160, 24, 72, 67,
	0, 8,
	24, 304, 8076, 0, 4, 512,
};

static const uint64_t __attribute__((unused)) dbg_315[] = {
	0, 0x030f02f0, 0,
	346568, 912, 936,
	226240, 7272, 7264, 7336, 7352, 7400, 7592, 7576, 7584, 16, 7736, 0, 7752, 7744, 7944, 0,
	888, 0, 8, 16, 72, 80, 88, 96, 176, 184, 256, 32, 36, 40, 136, 288,
	0,
	88, 8, 0, 56, 80, 74, 64, 0,
	216, 112, 120, 128, 136, 68, 52, 96, 104, 208, 0,
	16, 8,
	424, 24, 88, 168, 32, 288,
	944, 888,
	40, 32, 16,
	40, 24, 16,
	200, 24, 40, 32,
	48, 32, 40,
	24, 16,
	32, 16, 24,
	40, 16, 32,
	64, 32, 16, 40, 56,
	176, 112, 120, 1120, 104,
	160, 24, 72, 67,
	0, 8,
	24, 344, 8028, 0, 4, 512,
};

// A block in a buffer: the cookie and the values; returns its length in bytes.
static inline size_t make_block(uint8_t *buf, const uint64_t *vals, size_t n)
{
	memcpy(buf, vals, n * 8);
	memcpy(buf, "xdebugpy", 8);
	return n * 8;
}

#endif
