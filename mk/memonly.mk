# A core is enough: kernel and gdb cores of every interpreter read with none of the target's
# files, with another build at the original paths, and damaged under the memory-only path.
.PHONY: test-memonly
test-memonly: all
	@nice /usr/bin/python3 tests/e2e/test_memonly.py
