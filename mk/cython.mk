# Cython functions in the merged stacks end to end: real Cython (0.29 for 2.7-3.7, 3.x for
# 3.8+) compiles tests/targets/cython/cymod.pyx for each interpreter (cached in the project
# cache); the CLI, gdb and lldb on live processes, gdb cores and kernel cores.
.PHONY: test-cython
test-cython: all
	@nice /usr/bin/python3 tests/e2e/test_cython.py
