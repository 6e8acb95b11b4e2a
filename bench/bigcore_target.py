# bigcore_target - the rich test scenario (tests/targets/scenario.py) in a process that first
# fills about PYU_BENCH_BALLAST_MB MiB of its heap, so that its kernel crash core is that large
# (bench/memonly). Same arguments as the scenario: OUTDIR [park|crash]. The ballast is bytes
# objects whose pages are all written (a page never touched is a hole in a core, not data).
# Runs on 2.7 and 3.x; the truth the scenario writes includes this file's and runpy's frames.
import os
import runpy
import sys

SCENARIO = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                        "tests", "targets", "scenario.py")
MIB = 1 << 20
BALLAST = [bytes(bytearray([i & 255])) * MIB
           for i in range(int(os.environ.get("PYU_BENCH_BALLAST_MB", "1024")))]

sys.argv = [SCENARIO] + sys.argv[1:]
runpy.run_path(SCENARIO, run_name="__main__")
