# scenario - the rich end-to-end target: every shape of Python stack the unwinder must read.
#
#   python scenario.py OUTDIR [park|crash]
#
# Each scenario runs in its own thread named "scenario-NAME" and blocks for good on
# pyu_truth.HOLD at a stable point; the main thread blocks too. OUTDIR/truth.json is written
# when all sit still (see pyu_truth.py). In crash mode the thread "scenario-crash" then crashes
# the process in ctypes.memset(0, 0, 1). Runs on 2.7 and 3.6+; 3.x-only scenarios live in
# scenario_py3.py. Generated modules (a non-ASCII file name, lines past 65,535) go to OUTDIR/gen.
import os
import sys
import threading

sys.dont_write_bytecode = True
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import pyu_truth  # noqa: E402
from pyu_truth import HOLD, arrive  # noqa: E402

RECURSION_DEPTH = 1200
LONG_LINE = 70001


def recurse(n):
    if n == 0:
        arrive()
        HOLD.acquire()
    else:
        recurse(n - 1)


def gen_blocks():
    arrive()
    HOLD.acquire()
    yield 1


def run_generator():
    for _ in gen_blocks():
        pass


class Outer(object):
    class Inner(object):
        def method(self):
            arrive()
            HOLD.acquire()


def run_nested_class():
    Outer.Inner().method()


block_lambda = lambda: (arrive(), HOLD.acquire())  # noqa: E731


def run_lambda():
    block_lambda()


def run_comprehension():
    return [(arrive(), HOLD.acquire()) for _ in range(1)]


def key_blocks(x):
    arrive()
    HOLD.acquire()
    return x


def run_c_between():
    return sorted([3, 1, 2], key=key_blocks)


EXEC_SOURCE = """
def exec_blocker():
    arrive()
    HOLD.acquire()
exec_blocker()
"""


def run_exec():
    ns = {"arrive": arrive, "HOLD": HOLD}
    exec(compile(EXEC_SOURCE, "<pyunwind-exec>", "exec"), ns)


def run_except():
    try:
        raise KeyError("scenario")
    except KeyError:
        arrive()
        HOLD.acquire()


def _tracer(frame, event, arg):
    return _tracer


def traced_inner():
    arrive()
    HOLD.acquire()


def traced_outer():
    traced_inner()


def run_settrace():
    sys.settrace(_tracer)
    traced_outer()


def looped():
    n = 0
    while n < 2:  # the tracer parks on this line's second event
        n += 1
    return n


_loop_events = []


def _loop_tracer(frame, event, arg):
    # Parks in the trace function, as pdb does waiting for a command: nothing called from
    # here is traced, and while it runs the traced frame's object holds the line (f_lineno),
    # which 3.11+ read only for threads that have a trace or profile function.
    if frame.f_code is looped.__code__ and event == "line" and \
            frame.f_lineno == looped.__code__.co_firstlineno + 2:
        _loop_events.append(frame.f_lineno)
        if len(_loop_events) == 2:  # back at the header, from the loop's jump
            arrive()
            HOLD.acquire()
    return _loop_tracer


def run_trace_loop():
    sys.settrace(_loop_tracer)
    looped()


def load_module(name, path):
    if sys.version_info >= (3, 5):
        import importlib.util
        spec = importlib.util.spec_from_file_location(name, path)
        mod = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(mod)
        return mod
    import imp
    return imp.load_source(name, path)


def make_long_module(gendir):
    path = os.path.join(gendir, "pyu_long_lines.py")
    with open(path, "w") as f:
        f.write("from pyu_truth import HOLD, arrive\n")
        f.write("#\n" * (LONG_LINE - 2))
        f.write("def far_away():\n")          # line LONG_LINE
        f.write("    arrive()\n")
        f.write("    HOLD.acquire()\n")       # line LONG_LINE + 2
    return load_module("pyu_long_lines", path)


def run_long_lines(mod):
    mod.far_away()


def main_blocks():
    arrive()
    HOLD.acquire()


def main(argv):
    outdir = os.path.abspath(argv[1])
    mode = argv[2] if len(argv) > 2 else "park"
    gendir = os.path.join(outdir, "gen")
    if not os.path.isdir(gendir):
        os.makedirs(gendir)
    sys.path.insert(0, gendir)
    sys.setrecursionlimit(RECURSION_DEPTH + 500)
    long_mod = make_long_module(gendir)
    scenarios = [
        ("recursion", recurse, (RECURSION_DEPTH,)),
        ("generator", run_generator, ()),
        ("nested-class", run_nested_class, ()),
        ("lambda", run_lambda, ()),
        ("comprehension", run_comprehension, ()),
        ("c-between", run_c_between, ()),
        ("exec", run_exec, ()),
        ("except", run_except, ()),
        ("settrace", run_settrace, ()),
        ("trace-loop", run_trace_loop, ()),
        ("long-lines", run_long_lines, (long_mod,)),
    ]
    if sys.version_info[0] >= 3:
        import scenario_py3
        scenarios += scenario_py3.scenarios(gendir, load_module)
    pyu_truth.start(outdir, mode, scenarios)
    main_blocks()


if __name__ == "__main__":
    main(sys.argv)
