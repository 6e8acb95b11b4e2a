# Carets as each interpreter's traceback module draws them: the renderer's driver
# (tests/carets/caretdump.c) against every interpreter's own StackSummary.format().
$(BUILD)/caretdump: tests/carets/caretdump.c $(BUILD)/libpyunwind.a $(CORE_HDRS)
	$(CC) $(CFLAGS_COMMON) $(CFLAGS) -o $@ $< $(BUILD)/libpyunwind.a $(CORE_LIBS)

.PHONY: test-carets
test-carets: $(BUILD)/caretdump
	@nice /usr/bin/python3 tests/carets/run
