// fuzz_lnotab27.c - libFuzzer target for co_lnotab of 2.7 (unsigned line steps); see fuzz_linetable.h.
#define FUZZ_FORMAT PYU_LNOTAB_UNSIGNED
#include "fuzz_linetable.h"
