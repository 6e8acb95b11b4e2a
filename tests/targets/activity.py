# activity - the target of the thread-activity tests (tests/e2e/test_activity.py).
#
#   python activity.py OUTDIR [park|crash]
#
# One thread per way of waiting: on a lock (pyu_truth.HOLD, a futex), on a pipe nobody writes
# to (read), in a long sleep (clock_nanosleep on 3.11+, select(0, ...) before), and one
# spinning in Python, in no system call at all (at the lowest scheduling priority, so that it
# costs a busy machine little). Two more wait with a timeout, the waits the kernel resumes
# through restart_syscall once an attach has interrupted them: one in poll() on the pipe (every
# version; 3.15's calls ppoll, which the kernel resumes as itself), one in Event.wait() (3.x:
# a futex wait with a timeout; 2.7's polls in short sleeps). The main thread waits on the
# lock. Crash mode adds the thread
# that crashes in ctypes.memset(0, 0, 1); right before, once /proc says every waiting thread is
# inside its system call, it writes OUTDIR/activity.json: those system calls' numbers by
# thread id, and the spinning thread's CPU time (clock ticks) as /proc gave it then. Runs on
# 2.7 and 3.6+.
import ctypes
import json
import os
import select
import sys
import threading
import time

sys.dont_write_bytecode = True
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import pyu_truth  # noqa: E402
from pyu_truth import HOLD, arrive  # noqa: E402

SPIN = [True]
PIPE = os.pipe()  # both ends stay open: the read never ends


def wait_lock():
    arrive()
    HOLD.acquire()


def wait_pipe():
    arrive()
    os.read(PIPE[0], 1)


def wait_timed_poll():
    poller = select.poll()
    poller.register(PIPE[0], select.POLLIN)
    arrive()
    poller.poll(10 ** 9)  # milliseconds: days


def wait_timed_event():
    event = threading.Event()
    arrive()
    event.wait(10 ** 6)


def wait_sleep():
    arrive()
    time.sleep(1000000)


def spin():
    # PRIO_PROCESS with a thread id sets that thread's nice value on Linux.
    ctypes.CDLL(None).setpriority(0, pyu_truth.native_id(), 19)
    arrive()
    while SPIN[0]: pass  # noqa: E701 - one line: the frame stays on it


def cpu_ticks(tid):
    with open("/proc/self/task/%d/stat" % tid) as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return int(fields[11]) + int(fields[12])  # utime, stime (fields 14 and 15)


def syscall_of(tid):
    """The number of the system call thread @tid is in, or None (running, or in none)."""
    with open("/proc/self/task/%d/syscall" % tid) as f:
        first = f.read().split()
    if not first or not first[0].lstrip("-").isdigit() or int(first[0]) < 0:
        return None
    return int(first[0])


def run_crash(outdir, reporter_box, spinner):
    while not reporter_box:
        time.sleep(0.01)
    reporter_box[0].join(130)
    spin_tid = pyu_truth._native_ids.get(spinner.ident)
    me = pyu_truth.native_id()
    waiting = [tid for tid in pyu_truth._native_ids.values() if tid not in (spin_tid, me)]
    calls = {}
    deadline = time.time() + 60
    while time.time() < deadline:
        calls = dict((str(tid), syscall_of(tid)) for tid in waiting)
        if all(nr is not None for nr in calls.values()):
            break
        time.sleep(0.01)
    pyu_truth.write_json(outdir, "activity.json", {
        "syscalls": calls, "spin_native_thread_id": spin_tid,
        "spin_ticks": cpu_ticks(spin_tid), "clk_tck": os.sysconf("SC_CLK_TCK"),
        "time": time.time()})
    pyu_truth.crash_point(outdir, reporter_box[0])


def main(argv):
    outdir = os.path.abspath(argv[1])
    mode = argv[2] if len(argv) > 2 else "park"
    waits = [("lock", wait_lock), ("pipe", wait_pipe), ("sleep", wait_sleep),
             ("timed-poll", wait_timed_poll)]
    if sys.version_info[0] >= 3:
        waits.append(("timed-event", wait_timed_event))
    threads = [threading.Thread(target=fn, name="scenario-" + name)
               for name, fn in waits + [("spin", spin)]]
    spinner = threads[-1]
    reporter_box = []
    if mode == "crash":
        crasher = threading.Thread(target=run_crash, args=(outdir, reporter_box, spinner),
                                   name="scenario-crash")
        threads.append(crasher)
    for t in threads:
        t.daemon = True
        t.start()
    exclude = [crasher.ident] if mode == "crash" else []
    reporter_box.append(pyu_truth.start_reporter(outdir, len(waits) + 2, mode, exclude,
                                                 restless=[spinner.ident]))
    arrive()
    HOLD.acquire()


if __name__ == "__main__":
    main(sys.argv)
