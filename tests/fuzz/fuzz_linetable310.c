// fuzz_linetable310.c - libFuzzer target for 3.10 co_linetable; see fuzz_linetable.h.
#define FUZZ_FORMAT PYU_LINETABLE_310
#include "fuzz_linetable.h"
