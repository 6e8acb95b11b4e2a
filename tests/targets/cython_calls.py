# cython_calls - the target of the Cython tests (tests/e2e/test_cython.py).
#
#   PYU_CYMOD_DIR=DIR PYU_CYMODS=cyld,cyc,... python cython_calls.py OUTDIR [park|crash]
#
# Imports the Cython modules named (each a build of tests/targets/cython/cymod.pyx under its
# own name, made by the test into DIR) and blocks threads inside each: Python -> def -> cdef
# (inlined) -> a Python callback, a method of a cdef class, a generator body, a coroutine body,
# a fused def, a closure, a lambda; and a Python handler of an exception raised two Cython calls
# deep, blocking inside `except:` (its traceback, as extract_tb gives it, is in the truth).
# The threads are named "scenario-KIND.MODULE" (KIND: outer, method, generate, coroutine, fused,
# closure, lambda, raise). A module may be a package's ("cypkg.cysub").
# Crash mode adds a thread whose Cython function (of the first module) crashes in C: memset on
# address 0. Runs on 2.7 and 3.6+.
import importlib
import os
import sys
import threading
import traceback

sys.dont_write_bytecode = True
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.environ["PYU_CYMOD_DIR"])
import pyu_truth  # noqa: E402
from pyu_truth import HOLD, arrive  # noqa: E402

MODULES = [importlib.import_module(name) for name in os.environ["PYU_CYMODS"].split(",")]
# thread ident -> the traceback of the exception its handler blocks in, as the target's own
# traceback.extract_tb gives it: [[file, line, name], ...] (outermost first)
TRACEBACKS = {}
pyu_truth.THREAD_EXTRA = lambda ident: {"traceback": TRACEBACKS.get(ident)}


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


def run_fused(mod):
    mod.fused_def(blocks, 1.5)


def run_closure(mod):
    mod.closure(blocks)


def run_lambda(mod):
    mod.with_lambda(blocks)


def run_raise(mod):
    try:
        mod.boom_outer(1)
    except ValueError:
        TRACEBACKS[threading.current_thread().ident] = [
            list(entry)[:3] for entry in traceback.extract_tb(sys.exc_info()[2])]
        blocks(0)


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
                      ("coroutine." + mod.__name__, run_coroutine, (mod,)),
                      ("fused." + mod.__name__, run_fused, (mod,)),
                      ("closure." + mod.__name__, run_closure, (mod,)),
                      ("lambda." + mod.__name__, run_lambda, (mod,)),
                      ("raise." + mod.__name__, run_raise, (mod,))]
    pyu_truth.start(outdir, mode, scenarios, crash=crash_in_c)
    arrive()
    HOLD.acquire()


if __name__ == "__main__":
    main(sys.argv)
