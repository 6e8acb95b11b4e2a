# debugger_cpu.py - the CPU clock bench/gdb_measure.py and bench/lldb_measure.py read around the
# command they time. Each runs inside a different debugger's Python and imports this file from
# its own directory (gdb gives a sourced script its __file__; bench/run gives lldb's one).
import os
import time


def cpu_ns():
    """CPU time (ns) of this debugger process and its child processes (lldb-server of a live
    target: its work on each memory read is part of a command's cost): the kernel's process
    CPU clocks, which any process may read, so time spent waiting for a CPU on a loaded machine
    is left out."""
    total = time.clock_gettime_ns(time.CLOCK_PROCESS_CPUTIME_ID)
    try:
        tasks = os.listdir("/proc/self/task")
    except OSError:
        return total
    for tid in tasks:
        try:
            with open("/proc/self/task/%s/children" % tid) as f:
                kids = f.read().split()
        except OSError:
            continue
        for pid in kids:
            try:  # MAKE_PROCESS_CPUCLOCK(pid, CPUCLOCK_SCHED), as clock_getcpuclockid makes it
                total += time.clock_gettime_ns((~int(pid) << 3) | 2)
            except OSError:  # it ended
                pass
    return total
