# Values: the value reader (core/values.c) end to end. A catalog target per interpreter reports
# id() -> repr() of many objects; tests/values/probe reads them from the live process, a gdb
# core and a kernel crash core, and tests/e2e/test_values.py compares.
$(BUILD)/values-probe: tests/values/probe.c $(BUILD)/libpyunwind.a $(CORE_HDRS)
	$(CC) $(CFLAGS_COMMON) $(CFLAGS) -o $@ $< $(BUILD)/libpyunwind.a $(CORE_LIBS)

.PHONY: test-values
test-values: all $(BUILD)/values-probe
	@nice python3 tests/e2e/test_values.py
