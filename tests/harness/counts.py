# counts - what a test step cost, by kind: targets started, gdb cores and kernel cores made,
# debugger sessions run. Each event is one line appended to the file $PYUNWIND_COUNTS names
# (tests/run_all sets one per step and sums it); nothing is counted when it is unset.
import os


def count(kind):
    """Records one event of @kind ("target", "gcore", "crash core", "gdb", "lldb"). Cannot
    fail: a file that cannot be written loses the count, never the test."""
    path = os.environ.get("PYUNWIND_COUNTS")
    if not path:
        return
    try:
        fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        try:
            os.write(fd, (kind + "\n").encode())  # one write: lines of concurrent cases stay whole
        finally:
            os.close(fd)
    except OSError:
        pass
