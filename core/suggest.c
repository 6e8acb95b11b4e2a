// suggest.c - the closest-name search of "Did you mean ...?" (see suggest.h), in both of
// CPython's forms: written from the behaviour of traceback.py's _levenshtein_distance and
// Python/suggestions.c (checked against the interpreters' own _generate_suggestions). Pure.
#include <stdlib.h>
#include <string.h>

#include "strbuf.h"
#include "suggest.h"

#define MOVE_COST 2
#define CASE_COST 1

// A string as the unit the distance counts: code points (Python form) or bytes (C form).
struct units {
	uint32_t u[PYU_SUGGEST_MAX_STRING * 4 + 8];
	size_t n;
	bool too_long; // more units than u holds: only its length is known
	size_t len;    // the whole length in units
};

// Decodes @s into @out: UTF-8 bytes as they are (@bytes), else code points (pyu_utf8_next: an
// ill-formed sequence is one U+FFFD). Only the first units are kept; @out->len counts them all.
static void units_of(const char *s, bool bytes, struct units *out)
{
	const unsigned char *p = (const unsigned char *)s;
	size_t cap = sizeof(out->u) / sizeof(out->u[0]);
	out->n = out->len = 0;
	out->too_long = false;
	size_t left = strlen(s);
	while (left) {
		uint32_t cp = *p;
		size_t k = bytes ? 1 : pyu_utf8_next(p, left, &cp);
		if (out->n < cap)
			out->u[out->n++] = cp;
		else
			out->too_long = true;
		out->len++;
		p += k;
		left -= k;
	}
}

// str.lower() of one character where it is known here (ASCII, Latin-1); *known false else.
static uint32_t py_lower(uint32_t c, bool *known)
{
	if (c >= 'A' && c <= 'Z')
		return c + 32;
	if (c >= 0xc0 && c <= 0xde && c != 0xd7)
		return c + 32;
	if (c >= 0x100)
		*known = false;
	return c;
}

static int py_cost(uint32_t a, uint32_t b, bool *known)
{
	if (a == b)
		return 0;
	bool k = true;
	uint32_t la = py_lower(a, &k), lb = py_lower(b, &k);
	if (!k) {
		*known = false;
		return MOVE_COST;
	}
	return la == lb ? CASE_COST : MOVE_COST;
}

// suggestions.c's substitution_cost: bytes, case folded for ASCII letters only.
static int c_cost(uint32_t a, uint32_t b)
{
	if ((a & 31) != (b & 31))
		return MOVE_COST;
	if (a == b)
		return 0;
	if (a >= 'A' && a <= 'Z')
		a += 'a' - 'A';
	if (b >= 'A' && b <= 'Z')
		b += 'a' - 'A';
	return a == b ? CASE_COST : MOVE_COST;
}

// The distance between @a and @b, or more than @max when it exceeds @max (both forms share
// the shape: common affixes trimmed, strings longer than PYU_SUGGEST_MAX_STRING refused, one
// row updated in place, an early stop once a row's minimum passes @max).
static long distance(const struct units *ua, const struct units *ub, long max, bool bytes,
		     bool *known)
{
	const uint32_t *a = ua->u, *b = ub->u;
	size_t na = ua->n, nb = ub->n;
	if (na == nb && !memcmp(a, b, na * sizeof(*a)))
		return 0;
	while (na && nb && a[0] == b[0]) {
		a++;
		b++;
		na--;
		nb--;
	}
	while (na && nb && a[na - 1] == b[nb - 1]) {
		na--;
		nb--;
	}
	if (!na || !nb)
		return MOVE_COST * (long)(na + nb);
	if (na > PYU_SUGGEST_MAX_STRING || nb > PYU_SUGGEST_MAX_STRING)
		return max + 1;
	if (nb < na) {
		const uint32_t *t = a;
		size_t tn = na;
		a = b;
		na = nb;
		b = t;
		nb = tn;
	}
	if ((long)(nb - na) * MOVE_COST > max)
		return max + 1;
	long row[PYU_SUGGEST_MAX_STRING];
	for (size_t i = 0; i < na; i++)
		row[i] = MOVE_COST * (long)(i + 1);
	long result = 0;
	for (size_t bi = 0; bi < nb; bi++) {
		long dist = result = (long)bi * MOVE_COST, minimum = max + 1;
		for (size_t i = 0; i < na; i++) {
			long sub = dist + (bytes ? c_cost(b[bi], a[i]) : py_cost(b[bi], a[i], known));
			dist = row[i];
			long ins = (result < dist ? result : dist) + MOVE_COST;
			result = ins < sub ? ins : sub;
			row[i] = result;
			if (result < minimum)
				minimum = result;
		}
		if (minimum > max)
			return max + 1;
	}
	return result;
}

static int32_t search(bool c_form, const char *const *names, uint32_t count, const char *wrong,
		      bool *unknown)
{
	struct units w, cand;
	units_of(wrong, c_form, &w);
	if (c_form ? count >= PYU_SUGGEST_MAX_CANDIDATES : count > PYU_SUGGEST_MAX_CANDIDATES)
		return -1;
	if (!c_form && w.len > PYU_SUGGEST_MAX_STRING)
		return -1;
	// The Python loop starts from len(wrong); the C one from no bound at all.
	long best = c_form ? (long)1 << 40 : (long)w.len;
	int32_t pick = -1;
	for (uint32_t i = 0; i < count; i++) {
		if (!strcmp(names[i], wrong))
			continue; // a missing attribute is "found": never suggested
		units_of(names[i], c_form, &cand);
		long max = ((long)cand.len + (long)w.len + 3) * MOVE_COST / 6;
		if (max > best - 1)
			max = best - 1;
		long d;
		if (w.too_long || cand.too_long) {
			// Only affixes can bring such strings under the limit: the whole
			// strings' difference in length bounds the distance from below.
			long gap = (long)cand.len - (long)w.len;
			d = (gap < 0 ? -gap : gap) * MOVE_COST > max ? max + 1 : -1;
			if (d < 0) {
				*unknown = true;
				continue;
			}
		} else {
			d = distance(&w, &cand, max, c_form, unknown);
		}
		if (d > max)
			continue;
		if (pick < 0 || d < best) {
			pick = (int32_t)i;
			best = d;
		}
	}
	return pick;
}

int32_t pyu_suggest_pick(enum pyu_suggest_algo algo, const char *const *names, uint32_t count,
			 const char *wrong, bool *unknown)
{
	int32_t pick = -1;
	if (algo != PYU_SUGGEST_PY)
		pick = search(true, names, count, wrong, unknown);
	if (pick < 0 && algo != PYU_SUGGEST_C)
		pick = search(false, names, count, wrong, unknown);
	return pick;
}
