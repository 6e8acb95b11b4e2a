# lldb_measure.py - runs inside lldb (`script exec(...)` of this file, given its __file__): loads
# one tool, times one command with time.perf_counter() and the CPU time of lldb and its child
# processes (lldb-server, bench/debugger_cpu.py) around SBCommandInterpreter.HandleCommand(), and
# writes what it saw for bench/run. Parameters come from the environment, set by bench/run:
#   BENCH_IMPORT   module to `command script import` first (pyunwind's lldb adapter), or empty
#                  for none (lldb's own backtrace)
#   BENCH_COMMAND  the command to time, e.g. "py-bt --all"
#   BENCH_JSON     if set, a command run after the timed one whose output is kept too
#   BENCH_RESULT   where to write the result document (JSON)
import json
import os
import sys
import time

import lldb

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from debugger_cpu import cpu_ns  # noqa: E402


def _bench_measure(debugger):
    result = {"ok": False}
    interp = debugger.GetCommandInterpreter()

    def run(command):
        ret = lldb.SBCommandReturnObject()
        interp.HandleCommand(command, ret)
        if not ret.Succeeded():
            raise RuntimeError("%s: %s" % (command, (ret.GetError() or "").strip()))
        return ret.GetOutput() or ""

    try:
        t0 = time.perf_counter()
        if os.environ["BENCH_IMPORT"]:  # empty: time one of lldb's own commands
            run("command script import " + os.environ["BENCH_IMPORT"])
        result["load_ms"] = (time.perf_counter() - t0) * 1000.0
        command = os.environ["BENCH_COMMAND"]
        t0 = time.perf_counter()
        c0 = cpu_ns()
        output = run(command)
        result["ms"] = (time.perf_counter() - t0) * 1000.0
        result["cpu_ms"] = (cpu_ns() - c0) / 1e6
        result["output"] = output
        module = sys.modules.get(os.path.splitext(os.path.basename(os.environ["BENCH_IMPORT"]))[0]) \
            if os.environ["BENCH_IMPORT"] else None
        # pyunwind's lldb adapter keeps a session per thread: this one ran the command.
        current = getattr(module, "current_session", None)
        session = current() if current is not None else None
        if session is not None and hasattr(session, "target_reads"):
            result["reads"] = list(session.target_reads())
            target = getattr(session, "_target", None)
            result["callback"] = getattr(target, "_callback", None) is not None
        extra = os.environ.get("BENCH_JSON")
        if extra:
            result["json"] = run(extra)
        result["ok"] = True
    except Exception as e:  # reported as a failing run, never timed
        result["error"] = "%s: %s" % (type(e).__name__, e)
    with open(os.environ["BENCH_RESULT"], "w") as f:
        json.dump(result, f)


_bench_measure(lldb.debugger)
