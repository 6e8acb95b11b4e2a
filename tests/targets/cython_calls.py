# cython_calls - the target of the Cython tests (tests/e2e/test_cython.py).
#
#   PYU_CYMOD_DIR=DIR PYU_CYMODS=cyld,cyc,... python cython_calls.py OUTDIR [park|crash]
#
# Imports the Cython modules named (each a build of tests/targets/cython/cymod.pyx under its
# own name, made by the test into DIR) and blocks threads inside each: Python -> def -> cdef
# (inlined) -> a Python callback, a method of a cdef class, a generator body, a coroutine body.
# The threads are named "scenario-KIND.MODULE" (KIND: outer, method, generate, coroutine).
# Crash mode adds a thread whose Cython function (of the first module) crashes in C: memset on
# address 0. Runs on 2.7 and 3.6+.
import importlib
import os
import sys

sys.dont_write_bytecode = True
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.environ["PYU_CYMOD_DIR"])
import pyu_truth  # noqa: E402
from pyu_truth import HOLD, arrive  # noqa: E402

MODULES = [importlib.import_module(name) for name in os.environ["PYU_CYMODS"].split(",")]


def blocks(value):
    arrive()
    HOLD.acquire()


def run_outer(mod):
    mod.outer(blocks, 1)


def run_method(mod):
    mod.Klass().method(blocks)


def run_generate(mod):
    for _ in mod.generate(blocks):
        pass


def run_coroutine(mod):
    try:
        mod.coroutine(blocks).send(None)
    except StopIteration:
        pass


def crash_in_c(outdir, reporter):
    if pyu_truth.crash_report(outdir, reporter, sys._getframe()):
        MODULES[0].crash(0)


def main(argv):
    outdir = os.path.abspath(argv[1])
    mode = argv[2] if len(argv) > 2 else "park"
    scenarios = []
    for mod in MODULES:
        scenarios += [("outer." + mod.__name__, run_outer, (mod,)),
                      ("method." + mod.__name__, run_method, (mod,)),
                      ("generate." + mod.__name__, run_generate, (mod,)),
                      ("coroutine." + mod.__name__, run_coroutine, (mod,))]
    pyu_truth.start(outdir, mode, scenarios, crash=crash_in_c)
    arrive()
    HOLD.acquire()


if __name__ == "__main__":
    main(sys.argv)
