# cython_calls - the target of the Cython tests (tests/e2e/test_cython.py).
#
#   PYU_CYMOD_DIR=DIR python cython_calls.py OUTDIR [park|crash]
#
# Imports the Cython module cymod (tests/targets/cython/cymod.pyx, built by the test into DIR)
# and blocks threads inside it: Python -> def -> cdef (inlined) -> a Python callback, a method
# of a cdef class, a generator body; crash mode adds a thread whose Cython function crashes in
# C (memset on address 0). Runs on 2.7 and 3.6+.
import os
import sys

sys.dont_write_bytecode = True
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.environ["PYU_CYMOD_DIR"])
import cymod  # noqa: E402
import pyu_truth  # noqa: E402
from pyu_truth import HOLD, arrive  # noqa: E402


def blocks(value):
    arrive()
    HOLD.acquire()


def run_outer():
    cymod.outer(blocks, 1)


def run_method():
    cymod.Klass().method(blocks)


def run_generate():
    for _ in cymod.generate(blocks):
        pass


def crash_in_c(outdir, reporter):
    if pyu_truth.crash_report(outdir, reporter, sys._getframe()):
        cymod.crash(0)


def main(argv):
    outdir = os.path.abspath(argv[1])
    mode = argv[2] if len(argv) > 2 else "park"
    pyu_truth.start(outdir, mode, [("outer", run_outer, ()), ("method", run_method, ()),
                                   ("generate", run_generate, ())], crash=crash_in_c)
    arrive()
    HOLD.acquire()


if __name__ == "__main__":
    main(sys.argv)
