# The `pyunwind` Python package (python/pyunwind, built by pyproject.toml's in-tree backend):
# installed with pip under every interpreter of the matrix that runs pip, driven against a live
# process and a core. `make` also builds its native module for $(PYTHON) into build/pyext,
# where the package of a checkout finds it (nothing when that python has no headers).
PYTHON ?= python3
.PHONY: test-pyapi pyext
all: pyext
pyext: $(BUILD)/pyext/.built
# Never fails the build: without it the package builds its objects with ctypes.
$(BUILD)/pyext/.built: python/pyunwind/_native.c tools/pep517/pyunwind_build.py
	@mkdir -p $(BUILD)/pyext
	@$(PYTHON) tools/pep517/pyunwind_build.py native $(BUILD)/pyext >/dev/null || \
		echo "pyext: the native module was not built for $(PYTHON); ctypes will serve"
	@touch $@

test-pyapi: all
	@nice /usr/bin/python3 tests/e2e/test_pyapi.py
