// fuzz_lnotab36.c - libFuzzer target for co_lnotab of 3.6-3.9 (signed line steps); see fuzz_linetable.h.
#define FUZZ_FORMAT PYU_LNOTAB_SIGNED
#include "fuzz_linetable.h"
