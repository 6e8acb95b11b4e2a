# Values: the value reader (core/values.c) end to end. A catalog target per interpreter reports
# id() -> repr() of many objects; tests/values/probe reads them from the live process, a gdb
# core and a kernel crash core, and tests/e2e/test_values.py compares.
$(BUILD)/values-probe: tests/values/probe.c $(BUILD)/libpyunwind.a $(CORE_HDRS)
	$(CC) $(CFLAGS_COMMON) $(CFLAGS) -o $@ $< $(BUILD)/libpyunwind.a $(CORE_LIBS)

.PHONY: test-values
test-values: all $(BUILD)/values-probe $(BUILD)/values-probe-san
	@nice python3 tests/e2e/test_values.py

# The value reader's fuzzer (run with the target fuzzers by tests/fuzz/run-target): it needs
# the whole core, not just the target layer the generic fuzz_% rule links.
$(BUILD)/fuzz/fuzz_values: tests/fuzz/fuzz_values.c $(CORE_SRCS) $(CORE_HDRS)
	@mkdir -p $(dir $@)
	$(FUZZ_CC) $(TARGET_FUZZ_FLAGS) -o $@ $< $(CORE_SRCS) $(CORE_LIBS)

# The same probe over the ASan/UBSan build of the core, for the damage cases of test-values.
$(BUILD)/values-probe-san: tests/values/probe.c $(BUILD)/libpyunwind-san.a $(CORE_HDRS)
	$(CC) $(CFLAGS_COMMON) $(SAN_FLAGS) -o $@ $< $(BUILD)/libpyunwind-san.a $(CORE_LIBS)
