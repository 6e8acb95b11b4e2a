# _binding - the ctypes binding the package shares with the debugger adapters: the module
# pyunwind_core (library lookup, ABI check, typed functions, the adapters' command logic) lives
# in this package, and the adapters import the same file.
from . import pyunwind_core as core  # noqa: F401

__all__ = ["core"]
