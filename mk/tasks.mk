# asyncio tasks end to end (tests/e2e/test_tasks.py): `pyunwind tasks` against the tasks
# target's own report on every interpreter of the matrix from 3.7 (live, gdb core, kernel core).
.PHONY: test-tasks
test-tasks: all
	@nice /usr/bin/python3 tests/e2e/test_tasks.py
