# The interpreter matrix (tools/pythons) and the end-to-end harness' own tests.
.PHONY: test-matrix test-harness
test-matrix:
	@tools/pythons check

# The harness runs under Debian's python3 (the one lldb's bindings use); at most 2 jobs at once.
test-harness:
	@nice /usr/bin/python3 tests/e2e/test_harness.py -j 2
