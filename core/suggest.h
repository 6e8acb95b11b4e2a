// suggest.h - the closest-name search behind the "Did you mean ...?" that 3.12+'s traceback
// module adds to NameError, AttributeError and ImportError: a Levenshtein distance with moves
// costing 2 and case changes 1, over a list of candidate names, in the two forms CPython has -
// traceback.py's own (code points, str.lower()) and Python/suggestions.c's (UTF-8 bytes, ASCII
// case), which 3.13+ call through the _suggestions module. Pure: no target access.
#ifndef PYU_SUGGEST_H
#define PYU_SUGGEST_H

#include <stdbool.h>
#include <stdint.h>

#define PYU_SUGGEST_MAX_CANDIDATES 750 // _MAX_CANDIDATE_ITEMS / MAX_CANDIDATE_ITEMS
#define PYU_SUGGEST_MAX_STRING 40      // _MAX_STRING_SIZE / MAX_STRING_SIZE

enum pyu_suggest_algo {
	PYU_SUGGEST_PY,        // traceback._compute_suggestion_error's loop (3.12)
	PYU_SUGGEST_C,         // _suggestions._generate_suggestions (3.13, 3.14)
	PYU_SUGGEST_C_THEN_PY, // the C search, then the Python loop when it found nothing (3.15)
};

// The index in @names (@count UTF-8 strings, in the order the traceback module lists them) of
// the name @algo suggests for @wrong, or -1 for none. *unknown is set when the answer depends
// on lower-casing a character outside Latin-1, which this search does not know (the Python
// form only): then the result means nothing. Cannot fail.
int32_t pyu_suggest_pick(enum pyu_suggest_algo algo, const char *const *names, uint32_t count,
			 const char *wrong, bool *unknown);

#endif
