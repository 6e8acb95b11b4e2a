# pyu_clock - a process's own time, for the waits of the end-to-end tests: wall-clock time less
# the time the process sat runnable, waiting for a CPU that other programs had (the kernel's
# schedstat run delay). A deadline on this clock gives a target on a loaded machine back the time
# it was held off the CPU, and gives a stuck target (blocked, or running without getting
# anywhere) no more time than on an idle machine. A ceiling on wall-clock time still ends every
# wait: a target whose threads spin while starved looks held back forever.
#
#   clock = Clock(pid)           # "self" in a target
#   while not ready():
#       if clock.expired(150): raise ...("not ready within %s" % clock.describe())
#
# Runs on 2.7 and 3.x: the harness and the targets (pyu_truth) both use it. Where the kernel
# keeps no schedstat, its own time is the wall-clock time.
import os
import time

SAMPLE = 0.25  # seconds between two readings of the threads' run delays
CEILING = 4    # a wait of T own seconds ends after CEILING * T wall-clock seconds in any case


def run_delays(pid):
    """{tid: nanoseconds spent runnable but not running} for each thread of @pid ("self" for
    the caller); threads whose schedstat cannot be read are left out."""
    base = "/proc/%s/task" % pid
    out = {}
    try:
        tids = os.listdir(base)
    except OSError:
        return out
    for tid in tids:
        try:
            with open("%s/%s/schedstat" % (base, tid)) as f:
                out[tid] = int(f.read().split()[1])
        except (OSError, IOError, IndexError, ValueError):
            pass
    return out


class Clock(object):
    """Own time of process @pid since the clock was made. Read it at least every few tenths of
    a second while waiting (the held-back time is summed per reading interval)."""

    def __init__(self, pid="self"):
        self.pid = pid
        self.start = self.last = time.time()
        self.held = 0.0
        self.delays = run_delays(pid)

    def _sample(self, now):
        delays = run_delays(self.pid)
        # In each interval, the most delayed thread's delay: while any thread is held back so
        # is the process, and once is enough to count it. The kernel adds a wait to a thread's
        # run delay when the wait ends, so one reading may bring seconds of earlier waiting:
        # the sum is bounded by the whole time, not each interval's share by its length.
        worst = max([d - self.delays.get(tid, 0) for tid, d in delays.items()] or [0]) / 1e9
        self.held = min(self.held + max(0.0, worst), now - self.start)
        self.delays, self.last = delays, now

    def elapsed(self):
        """The process's own seconds since the clock was made."""
        now = time.time()
        if now - self.last >= SAMPLE:
            self._sample(now)
        return now - self.start - self.held

    def expired(self, timeout):
        """True once @timeout own seconds have passed, or CEILING times that on the wall."""
        return self.elapsed() >= timeout or time.time() - self.start >= CEILING * timeout

    def describe(self):
        self.elapsed()
        return "%.0f s (%.0f s of them waiting for a CPU held by other programs)" % (
            time.time() - self.start, self.held)
