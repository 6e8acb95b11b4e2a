# gdb_measure.py - runs inside gdb (`gdb -x bench/gdb_measure.py`): loads one tool, times one
# command with time.perf_counter() and the CPU time of the debugger (and its child processes)
# around gdb.execute() (bench/debugger_cpu.py), and writes what it saw for bench/run.
# Parameters come from the environment, set by bench/run:
#   BENCH_SOURCE   script to `source` first (pyunwind's adapter or CPython's pythonX.Y-gdb.py),
#                  or empty for none (gdb's own backtrace)
#   BENCH_COMMAND  the command to time, e.g. "py-bt --all" or "thread apply all py-bt"
#   BENCH_JSON     if set, a command run after the timed one whose output is kept too
#                  (pyunwind: "py-bt --all --json", answered from the same snapshot)
#   BENCH_RESULT   where to write the result document (JSON)
import json
import os
import sys
import time

import gdb

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from debugger_cpu import cpu_ns  # noqa: E402


result = {"ok": False}
try:
    t0 = time.perf_counter()
    if os.environ["BENCH_SOURCE"]:  # empty: time one of gdb's own commands
        gdb.execute("source " + os.environ["BENCH_SOURCE"], to_string=True)
    result["load_ms"] = (time.perf_counter() - t0) * 1000.0
    command = os.environ["BENCH_COMMAND"]
    t0 = time.perf_counter()
    c0 = cpu_ns()
    output = gdb.execute(command, to_string=True)
    result["ms"] = (time.perf_counter() - t0) * 1000.0
    result["cpu_ms"] = (cpu_ns() - c0) / 1e6
    result["output"] = output
    main = __import__("__main__")
    state = getattr(main, "_state", None)  # pyunwind's gdb adapter keeps its session here
    if state is not None and hasattr(state, "session"):
        result["reads"] = list(state.session.target_reads())
        target = getattr(state.session, "_target", None)
        result["callback"] = getattr(target, "_callback", None) is not None
    extra = os.environ.get("BENCH_JSON")
    if extra:
        result["json"] = gdb.execute(extra, to_string=True)
    result["ok"] = True
except Exception as e:  # reported as a failing run, never timed
    result["error"] = "%s: %s" % (type(e).__name__, e)

with open(os.environ["BENCH_RESULT"], "w") as f:
    json.dump(result, f)
