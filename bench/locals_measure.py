# locals_measure.py - runs inside gdb (`gdb -x bench/locals_measure.py`) for bench/locals-run:
# loads one tool and runs a list of commands, timing the ones marked, each with
# time.perf_counter() around gdb.execute(). Parameters from the environment:
#   BENCH_SOURCE    script to `source` first (pyunwind's adapter or CPython's pythonX.Y-gdb.py)
#   BENCH_COMMANDS  JSON list of [command, timed (bool)]
#   BENCH_RESULT    where to write {"ok", "runs": [{"command", "ms", "output"}], "error"}
import json
import os
import time

import gdb

result = {"ok": False, "runs": []}
try:
    gdb.execute("source " + os.environ["BENCH_SOURCE"], to_string=True)
    for command, timed in json.loads(os.environ["BENCH_COMMANDS"]):
        t0 = time.perf_counter()
        output = gdb.execute(command, to_string=True)
        ms = (time.perf_counter() - t0) * 1000.0
        if timed:
            result["runs"].append({"command": command, "ms": ms, "output": output})
    result["ok"] = True
except Exception as e:  # reported as a failing run, never timed
    result["error"] = "%s: %s" % (type(e).__name__, e)

with open(os.environ["BENCH_RESULT"], "w") as f:
    json.dump(result, f)
