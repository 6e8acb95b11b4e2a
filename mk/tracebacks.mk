# Handled exceptions' tracebacks end to end (tests/e2e/test_tracebacks.py): the text under each
# thread's "handling" line equals the target's own traceback.format_exception() (chains, groups,
# carets, relative file names), and the JSON entries carry co_positions(); the CLI live and on
# a gdb core, gdb on the core and lldb live, on every interpreter of the matrix.
.PHONY: test-tracebacks
test-tracebacks: all
	@nice /usr/bin/python3 tests/e2e/test_tracebacks.py
