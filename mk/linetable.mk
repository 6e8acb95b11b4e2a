# Line tables: ground truth from every interpreter (tests/linetables), fuzz targets
# (tests/fuzz) and decoder speed (bench/linetables*).
.PHONY: test-linetables

$(BUILD)/linetables/compare: tests/linetables/compare.c core/linetable.c core/linetable.h
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS_COMMON) -O2 -o $@ tests/linetables/compare.c core/linetable.c -lz

test-linetables: $(BUILD)/linetables/compare
	@tests/linetables/run

# One libFuzzer target per table format (tests/fuzz/fuzz_<format>.c + fuzz_linetable.h).
# Explicit rules: they only need the decoder, not the target layer the generic fuzz_% rule links.
FUZZ_CC ?= clang-14
LT_FUZZ_SECONDS ?= 20
LT_FUZZERS := lnotab27 lnotab36 linetable310 locations311
LT_FUZZ_BINS := $(LT_FUZZERS:%=$(BUILD)/fuzz/fuzz_%)
LT_FUZZ_FLAGS := -std=c11 -D_GNU_SOURCE -g -O1 $(CWARN) -iquote core \
	-fsanitize=fuzzer,address,undefined -fno-sanitize-recover=all

$(LT_FUZZ_BINS): $(BUILD)/fuzz/fuzz_%: tests/fuzz/fuzz_%.c tests/fuzz/fuzz_linetable.h core/linetable.c core/linetable.h
	@mkdir -p $(dir $@)
	$(FUZZ_CC) $(LT_FUZZ_FLAGS) -o $@ $< core/linetable.c

.PHONY: fuzz-linetables test-fuzz
fuzz-linetables: $(LT_FUZZ_BINS)
fuzz: fuzz-linetables

test-fuzz: $(LT_FUZZ_BINS)
	@PYUNWIND_FUZZ_SEED=$(FUZZ_TEST_SEED) tests/fuzz/run-linetables $(LT_FUZZ_SECONDS)

# Decoder speed against CPython's own iteration of the same tables (not a test).
.PHONY: bench-linetables
$(BUILD)/bench/linetables: bench/linetables.c core/linetable.c core/linetable.h
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS_COMMON) -O2 -o $@ bench/linetables.c core/linetable.c -lz

bench-linetables: $(BUILD)/bench/linetables
	@bench/linetables-run
