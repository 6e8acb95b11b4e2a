# Unit tests: one Check suite per core module, tests/unit/check_*.c, each its own binary, built
# twice - plain and with ASan/UBSan. tests/unit/run sums their counts.
# Asked when a recipe runs, not when make reads this: `make deps` may install check first.
CHECK_CFLAGS = $$(pkg-config --cflags check 2>/dev/null)
CHECK_LIBS = $$(pkg-config --libs check 2>/dev/null)
UNIT_SRCS := $(sort $(wildcard tests/unit/check_*.c))
UNIT_BINS := $(UNIT_SRCS:tests/unit/%.c=$(BUILD)/unit/%)
UNIT_SAN_BINS := $(UNIT_SRCS:tests/unit/%.c=$(BUILD)/unit-san/%)
UNIT_HDRS := $(wildcard tests/unit/*.h)

$(BUILD)/unit/%: tests/unit/%.c $(BUILD)/libpyunwind.a $(UNIT_HDRS) $(CORE_HDRS)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS_COMMON) $(CORE_DEFS) $(CFLAGS) $(CHECK_CFLAGS) -Itests/unit -o $@ $< $(BUILD)/libpyunwind.a $(CORE_LIBS) $(CHECK_LIBS)

$(BUILD)/unit-san/%: tests/unit/%.c $(BUILD)/libpyunwind-san.a $(UNIT_HDRS) $(CORE_HDRS)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS_COMMON) $(CORE_DEFS) $(SAN_FLAGS) $(CHECK_CFLAGS) -Itests/unit -o $@ $< $(BUILD)/libpyunwind-san.a $(CORE_LIBS) $(CHECK_LIBS)

.PHONY: test-unit test-asan
test-unit: $(UNIT_BINS)
	@tests/unit/run $(UNIT_BINS)

# CK_FORK=no keeps ASan's reports in the test's own process output.
test-asan: $(UNIT_SAN_BINS)
	@CK_FORK=no ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
		tests/unit/run $(UNIT_SAN_BINS)
