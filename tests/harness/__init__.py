# harness - the end-to-end test harness: the interpreter matrix, target programs that report
# their own stacks (truth), stopped processes, gdb and kernel cores, comparison, a runner.
#
#   import sys; sys.path.insert(0, "tests")
#   from harness import interpreters, Target, compare, run_cases
#   for py in interpreters():
#       with Target(py, "scenario") as t:
#           with t.stopped():
#               ...  # read t.pid
#           core = t.gcore()
#       with Target(py, "scenario", mode="crash") as t:
#           core = t.crash_core()
#           rc, out, err = gdb_batch([t.executable, core], ["py-bt --all"])
#           rc, out, err = lldb_batch(["-c", core, t.executable], ["py-bt --json"])
from .matrix import Interpreter, interpreters, by_label, selected, REPO  # noqa: F401
from .target import (Target, HarnessError, core_pattern, task_ids,  # noqa: F401
                     stopped, wait_asleep)
from .compare import compare, text_frames  # noqa: F401
from .runner import run_cases  # noqa: F401
from .sharing import shared  # noqa: F401
from .debuggers import gdb_batch, lldb_batch, gdb_cmd, lldb_cmd, PtyDebugger  # noqa: F401
