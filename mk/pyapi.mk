# The `pyunwind` Python package (python/pyunwind, built by pyproject.toml's in-tree backend):
# installed with pip under every interpreter of the matrix that runs pip, driven against a live
# process and a core.
.PHONY: test-pyapi
test-pyapi: all
	@nice /usr/bin/python3 tests/e2e/test_pyapi.py
