# End-to-end tests of the debugger plugins: real gdb and lldb on every interpreter of the matrix
# (live, gdb core, kernel crash core), golden text, every command, error cases, debugger reads.
.PHONY: test-adapters
test-adapters: all
	@nice /usr/bin/python3 tests/e2e/test_adapters.py
