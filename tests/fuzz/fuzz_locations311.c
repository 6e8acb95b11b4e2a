// fuzz_locations311.c - libFuzzer target for 3.11+ location tables; see fuzz_linetable.h.
#define FUZZ_FORMAT PYU_LOCATIONS_311
#include "fuzz_linetable.h"
