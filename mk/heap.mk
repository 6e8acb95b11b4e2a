# the heap census end to end (tests/e2e/test_heap.py): `pyunwind heap` and py-heap against the
# heap target's own gc.get_objects() / sys.getsizeof() census on every interpreter of the
# matrix (live, gdb core, kernel core; gdb and lldb on a few), and damaged collector lists.
.PHONY: test-heap
test-heap: all $(BUILD)/pyunwind-san
	@nice /usr/bin/python3 tests/e2e/test_heap.py
