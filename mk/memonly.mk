# A core is enough: kernel and gdb cores of every interpreter read with none of the target's
# files, with another build at the original paths, and damaged under the memory-only path (by
# the CLI and by the same CLI over the ASan/UBSan build of the core).
.PHONY: test-memonly
test-memonly: all $(BUILD)/pyunwind-san
	@nice /usr/bin/python3 tests/e2e/test_memonly.py

$(BUILD)/pyunwind-san: $(CLI_SRCS) $(wildcard core/cli/*.h) $(BUILD)/libpyunwind-san.a \
		       $(CORE_HDRS)
	$(CC) $(CFLAGS_COMMON) $(SAN_FLAGS) -o $@ $(CLI_SRCS) $(BUILD)/libpyunwind-san.a \
		$(CORE_LIBS) -pthread
