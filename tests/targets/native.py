# native - the target of the merged native/Python stack tests (tests/e2e/test_native.py).
#
#   python native.py OUTDIR [park|crash]
#
# Threads whose stacks cross between Python and C: a Python callback called by libc's qsort
# through ctypes (Python -> C -> Python), a __getattr__ and a sorted(key=...) that re-enter the
# eval loop from C, a plain recursion that 3.11+ runs inline and (3.8+) a C extension's own
# function with "vectorcall" in its name between two Python frames (_testcapi's
# pyobject_vectorcall, which --native must show: it is not the interpreter's). Each blocks for good on
# pyu_truth.HOLD; crash mode adds the thread that crashes in ctypes.memset(0, 0, 1). Runs on
# 2.7 and 3.6+.
import ctypes
import os
import sys

sys.dont_write_bytecode = True
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import pyu_truth  # noqa: E402
from pyu_truth import HOLD, arrive  # noqa: E402

DEPTH = 25

CMPFUNC = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.POINTER(ctypes.c_int),
                           ctypes.POINTER(ctypes.c_int))
libc = ctypes.CDLL(None)


def compare_blocks(a, b):
    arrive()
    HOLD.acquire()
    return 0


def run_qsort():
    values = (ctypes.c_int * 2)(2, 1)
    callback = CMPFUNC(compare_blocks)
    libc.qsort(values, 2, ctypes.sizeof(ctypes.c_int), callback)


class Lazy(object):
    def __getattr__(self, name):
        arrive()
        HOLD.acquire()
        return name


def run_getattr():
    return Lazy().missing


def key_blocks(x):
    arrive()
    HOLD.acquire()
    return x


def run_sorted():
    return sorted([2, 1], key=key_blocks)


def vectorcall_blocks():
    arrive()
    HOLD.acquire()


def run_vectorcall():
    import _testcapi
    _testcapi.pyobject_vectorcall(vectorcall_blocks, (), None)


def has_vectorcall():
    try:
        import _testcapi
    except ImportError:
        return False
    return hasattr(_testcapi, "pyobject_vectorcall")


def recurse(n):
    if n == 0:
        arrive()
        HOLD.acquire()
    else:
        recurse(n - 1)


def main_blocks():
    arrive()
    HOLD.acquire()


def main(argv):
    outdir = os.path.abspath(argv[1])
    mode = argv[2] if len(argv) > 2 else "park"
    sys.setrecursionlimit(DEPTH + 500)
    scenarios = [("qsort", run_qsort, ()), ("getattr", run_getattr, ()),
                 ("sorted", run_sorted, ()), ("recursion", recurse, (DEPTH,))]
    if has_vectorcall():
        scenarios.append(("vectorcall", run_vectorcall, ()))
    pyu_truth.start(outdir, mode, scenarios)
    main_blocks()


if __name__ == "__main__":
    main(sys.argv)
