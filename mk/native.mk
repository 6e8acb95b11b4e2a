# Merged native and Python stacks end to end: the CLI (elfutils), gdb and lldb on every
# interpreter of the matrix (live, gdb core, kernel crash core).
.PHONY: test-native
test-native: all
	@nice /usr/bin/python3 tests/e2e/test_native.py

# What each thread is doing (system call, fatal signal, CPU time) end to end: the CLI, gdb and
# lldb on every interpreter of the matrix (live, gdb core, kernel crash core).
.PHONY: test-activity
test-activity: all
	@nice /usr/bin/python3 tests/e2e/test_activity.py

# A thread 30,005 Python frames deep end to end: read whole, folded as the target's traceback
# folds it, exact limits; the CLI, gdb and lldb on every interpreter of the matrix (live, gdb
# core, kernel crash core).
.PHONY: test-deep
test-deep: all
	@nice /usr/bin/python3 tests/e2e/test_deep.py
