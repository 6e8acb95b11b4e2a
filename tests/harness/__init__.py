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
from .matrix import Interpreter, interpreters, by_label, selected, REPO  # noqa: F401
from .target import Target, HarnessError, core_pattern, task_ids  # noqa: F401
from .compare import compare  # noqa: F401
from .runner import run_cases  # noqa: F401
