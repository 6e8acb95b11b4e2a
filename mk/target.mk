# The target layer's fuzzers (tests/fuzz): arbitrary bytes as an ELF core file and as an ELF
# file, under libFuzzer with ASan/UBSan. `make fuzz-target` runs each for FUZZ_SECONDS;
# `make test-fuzz-target` (a step of `make test`) for TARGET_FUZZ_TEST_SECONDS.
FUZZ_CC ?= clang-14
FUZZ_SECONDS ?= 60
TARGET_FUZZ_TEST_SECONDS ?= 20
# The seed of every fuzz step of `make test` (tests/fuzz/run-target): the same inputs each run.
FUZZ_TEST_SEED ?= 1
TARGET_FUZZ_FLAGS := -std=c11 -D_GNU_SOURCE -g -O1 $(CWARN) -iquote core $(CORE_DEFS) \
	-fsanitize=fuzzer,address,undefined -fno-sanitize-recover=all
TARGET_FUZZ_SRCS := core/target.c core/target_proc.c core/target_proc_status.c core/target_core.c \
	core/elf.c core/error.c core/file_kept.c \
	core/debuginfod.c core/syscalls.c core/syscalls_x86_64.c core/syscalls_aarch64.c \
	core/linkmap.c

$(BUILD)/fuzz/fuzz_%: tests/fuzz/fuzz_%.c $(TARGET_FUZZ_SRCS) $(CORE_HDRS)
	@mkdir -p $(dir $@)
	$(FUZZ_CC) $(TARGET_FUZZ_FLAGS) -o $@ $< $(TARGET_FUZZ_SRCS) $(CORE_LIBS)

$(BUILD)/fuzz/seeds_target: tests/fuzz/seeds_target.c tests/unit/elf_fixture.h
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS_COMMON) -O1 $(CHECK_CFLAGS) -Itests/unit -o $@ $< $(CHECK_LIBS)

TARGET_FUZZ_BINS := $(BUILD)/fuzz/fuzz_core $(BUILD)/fuzz/fuzz_elf $(BUILD)/fuzz/fuzz_values \
	$(BUILD)/fuzz/seeds_target

.PHONY: fuzz-target test-fuzz-target
fuzz-target: $(TARGET_FUZZ_BINS)
	@tests/fuzz/run-target $(FUZZ_SECONDS)
fuzz: fuzz-target

test-fuzz-target: $(TARGET_FUZZ_BINS)
	@PYUNWIND_FUZZ_SEED=$(FUZZ_TEST_SEED) tests/fuzz/run-target $(TARGET_FUZZ_TEST_SECONDS)
