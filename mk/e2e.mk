# End-to-end test of the core alone: the CLI against every interpreter of the matrix (live
# process, gdb core, kernel crash core), compared with each target's own truth.
.PHONY: test-core
test-core: all
	@nice python3 tests/e2e/test_core.py
