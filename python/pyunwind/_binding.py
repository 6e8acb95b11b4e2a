# _binding - where the package gets the ctypes binding the debugger adapters share
# (pyunwind_core: library lookup, ABI check, typed functions). An installed package carries it
# as pyunwind/_core.py (the build puts it there); in a checkout it is common/pyunwind_core.py.
import importlib.util
import os
import sys

try:
    from . import _core as core  # noqa: F401
except ImportError:
    _path = os.path.join(os.path.dirname(os.path.abspath(__file__)), os.pardir, os.pardir,
                         "common", "pyunwind_core.py")
    if not os.path.exists(_path):
        raise ImportError("pyunwind: the binding module is missing (%s); reinstall pyunwind"
                          % os.path.normpath(_path))
    _spec = importlib.util.spec_from_file_location("pyunwind._core", _path)
    core = importlib.util.module_from_spec(_spec)
    sys.modules["pyunwind._core"] = core
    _spec.loader.exec_module(core)
