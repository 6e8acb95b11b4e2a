# The core walker's debugging driver (tests/unit/walkdump.c): `make build/walkdump`.
$(BUILD)/walkdump: tests/unit/walkdump.c $(BUILD)/libpyunwind.a $(CORE_HDRS)
	$(CC) $(CFLAGS_COMMON) $(CFLAGS) -o $@ $< $(BUILD)/libpyunwind.a $(CORE_LIBS)

# The walker against every interpreter of the matrix (live) and a few cores.
.PHONY: test-walk
test-walk: $(BUILD)/walkdump
	@nice python3 tests/unit/walk_real.py
