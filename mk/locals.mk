# Locals, thread names and handled exceptions end to end (tests/e2e/test_locals.py): the CLI on
# every interpreter of the matrix (live, gdb core, kernel crash core), gdb and lldb on a subset.
.PHONY: test-locals
test-locals: all
	@nice /usr/bin/python3 tests/e2e/test_locals.py

# The locals part of `make bench` (bench/locals-run, which the Makefile's bench recipe runs):
# py-bt --all --locals from a core inside gdb, and py-locals per frame against CPython's gdb
# helper. Alone: make bench-locals.
.PHONY: bench-locals
bench-locals: all
	@bench/locals-run
