# End-to-end test of the core alone: the CLI against every interpreter of the matrix (live
# process, gdb core, kernel crash core), compared with each target's own truth.
.PHONY: test-core
test-core: all
	@nice python3 tests/e2e/test_core.py

# One stack per OS thread across sub-interpreters (3.12+): live, gdb core, gdb and lldb.
.PHONY: test-subinterp
test-subinterp: all
	@nice /usr/bin/python3 tests/e2e/test_subinterp.py
