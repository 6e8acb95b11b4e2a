#!/usr/bin/env python3
# test_activity - what each thread is doing (the thread header and the JSON "syscall", "state",
# "signal", "fault_address", "cpu_seconds") end to end: for every interpreter of the matrix,
# tests/targets/activity.py (threads waiting on a lock, on a pipe, in a sleep, one spinning in
# Python) live, from a gdb core and from a kernel crash core, read by the CLI, gdb and lldb.
# The truth is the kernel's: /proc/PID/task/TID/syscall and stat, polled until every waiting
# thread is inside its system call (the crash target writes what /proc said right before it
# crashes); a kernel core's CPU times are the ones its notes record. Live, gdb also reads
# through its own registers (PYUNWIND_READS=debugger).
#
#   tests/e2e/test_activity.py [-j N] [FILTER...]     (make test-activity)
import json
import os
import re
import subprocess
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from harness import REPO, Target, run_cases, selected  # noqa: E402
from harness import corenotes  # noqa: E402
from test_adapters import run_debugger, parse_json, no_traceback, target_args  # noqa: E402

CLI = os.path.join(REPO, "build", "pyunwind")
CLK_TCK = os.sysconf("SC_CLK_TCK")
TICK = 1.0 / CLK_TCK

# x86-64 numbers of the calls these threads wait in (the kernel reports numbers).
SYSCALLS = {0: "read", 7: "poll", 23: "select", 35: "nanosleep", 202: "futex",
            219: "restart_syscall", 230: "clock_nanosleep", 270: "pselect6", 271: "ppoll"}
STATES = {"futex": "waiting on a lock", "read": "waiting for I/O", "poll": "waiting for I/O",
          "ppoll": "waiting for I/O",
          "clock_nanosleep": "sleeping", "nanosleep": "sleeping",
          "select": "sleeping", "pselect6": "sleeping"}  # select(0, ...): no descriptors


def expected_calls(py, scenario):
    """The calls a thread of @scenario may wait in on @py: time.sleep() is select(0, ...)
    (glibc: pselect6) up to 3.10 and clock_nanosleep from 3.11."""
    if scenario in ("lock", "main", "timed-event"):
        return ("futex",)
    if scenario == "pipe":
        return ("read",)
    if scenario == "timed-poll":
        return ("poll", "ppoll")  # 3.15's poll objects call ppoll
    if tuple(int(x) for x in py.version.split(".")[:2]) >= (3, 11):
        return ("clock_nanosleep",)
    return ("select", "pselect6")


def scenario_of(tt):
    return "crash" if tt.get("crashing") else (tt.get("scenario") or "main")


def proc_syscall(pid, tid):
    with open("/proc/%d/task/%d/syscall" % (pid, tid)) as f:
        first = f.read().split()
    if not first or first[0] == "running" or int(first[0]) < 0:
        return None
    return int(first[0])


# What a thread blocked in restart_syscall waits in, as the kernel names the function it
# sleeps in (/proc/PID/task/TID/wchan): the truth for a timed wait an attach interrupted.
WCHAN_CALLS = (("futex", "futex"), ("poll", "poll"), ("nanosleep", "clock_nanosleep"))


def proc_restarted(pid, tid):
    """The wait thread @tid of @pid resumed through restart_syscall, by its wchan, or None."""
    with open("/proc/%d/task/%d/wchan" % (pid, tid)) as f:
        wchan = f.read().strip()
    for part, call in WCHAN_CALLS:
        if part in wchan:
            return call
    return None


def proc_call(pid, tid):
    """The name of the call thread @tid waits in, a resumed timed wait by its own name."""
    name = SYSCALLS.get(proc_syscall(pid, tid))
    return proc_restarted(pid, tid) if name == "restart_syscall" else name


def proc_cpu(pid, tid):
    """The thread's CPU time as /proc gives it: schedstat's runtime in nanoseconds (what the
    core reads where the kernel keeps it), else stat's utime + stime in clock ticks."""
    try:
        with open("/proc/%d/task/%d/schedstat" % (pid, tid)) as f:
            fields = f.read().split()
        if fields[:3] != ["0", "0", "0"]:
            return int(fields[0]) / 1e9
    except OSError:
        pass
    with open("/proc/%d/task/%d/stat" % (pid, tid)) as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) * TICK


def cpu_slack():
    """How far a CPU time read by pyunwind may lie outside /proc's readings before and after
    it: half a tick where /proc gives clock ticks (stat), a microsecond where it gives
    nanoseconds (schedstat; the JSON's seconds keep every nanosecond)."""
    try:
        with open("/proc/self/schedstat") as f:
            if f.read().split()[:3] != ["0", "0", "0"]:
                return 1e-6
    except OSError:
        pass
    return TICK / 2


SLACK = cpu_slack()


def settle_live(py, t, timeout=120):
    """Waits until /proc shows every waiting thread in the call its scenario waits in and the
    spinning thread running Python, with CPU time used; returns {tid: call name} of the
    waiting threads. Once it runs, the spinning thread keeps the interpreter lock: no other
    thread asks for it."""
    deadline = time.time() + timeout
    spin_before = None
    while True:
        calls, problems = {}, []
        for tt in t.truth["threads"]:
            tid, sc = tt["native_thread_id"], scenario_of(tt)
            if sc == "spin":
                # Until it has the interpreter lock for good it waits for it (futex waits
                # with a timeout, user code in between): it spins once it is in no system
                # call twice in a row and used CPU time in between.
                now = (proc_cpu(t.pid, tid), proc_syscall(t.pid, tid))
                if spin_before is None or now[1] is not None or spin_before[1] is not None \
                        or now[0] <= spin_before[0]:
                    problems.append("the spinning thread does not spin yet (CPU time, "
                                    "system call: %s then %s)" % (spin_before, now))
                spin_before = now
                continue
            name = proc_call(t.pid, tid)
            if name not in expected_calls(py, sc):
                problems.append("thread %s (%s) is in %r, not %s" % (tid, sc, name,
                                                                     expected_calls(py, sc)))
            calls[tid] = name
        if not problems:
            return calls
        if time.time() > deadline:
            raise AssertionError("the target did not settle: " + "; ".join(problems))
        time.sleep(0.05)


def cli(*args):
    p = subprocess.run([CLI, "bt", "--all"] + [str(a) for a in args], capture_output=True,
                       timeout=120, stdin=subprocess.DEVNULL)
    if p.returncode != 0:
        raise AssertionError("pyunwind bt --all %s: status %d: %s" % (
            " ".join(map(str, args)), p.returncode, p.stderr.decode("utf-8", "replace")[-2000:]))
    return p.stdout.decode("utf-8")


def debugger(kind, args, env=None):
    """(JSON document, text) of py-bt --all in gdb or lldb. The text first: the JSON reads the
    threads' names, which the text then shows too (the CLI's text does not)."""
    rc, outs, err = run_debugger(kind, args, ["py-bt --all --no-source", "py-bt --all --json"],
                                 env)
    what = "%s %s" % (kind, " ".join(args))
    no_traceback(what, err, *outs)
    if len(outs) < 2:
        raise AssertionError("%s: no output (status %d): %s" % (what, rc, err[-2000:]))
    try:
        return parse_json(outs[1], what), outs[0]
    except AssertionError as e:  # with everything the debugger printed, to tell why
        raise AssertionError("%s\nstatus %d; the text command printed:\n%s\nstderr:\n%s"
                             % (e, rc, outs[0][-3000:], err[-2000:]))


def headers(text):
    """{tid: the thread header line} of py-bt text."""
    out = {}
    for line in text.splitlines():
        m = re.match(r"Thread 0x[0-9a-f]+ \(tid (\d+)\)", line)
        if m:
            out[int(m.group(1))] = line.strip()
    return out


def header_words(th):
    """What the header of JSON thread @th must say after its colon."""
    parts = []
    if th["signal"]:
        parts.append(th["signal"] + (" (fault address %s)" % th["fault_address"]
                                     if th["fault_address"] else ""))
    if th["state"] and not (th["signal"] and th["state"] == "running"):
        if th.get("restarted"):
            parts.append("%s (%s, restarted)" % (th["state"], th["restarted"]))
        else:
            parts.append(th["state"] + (" (%s)" % th["syscall"] if th["syscall"] else ""))
    if th["cpu_seconds"] is not None:
        parts.append("%.2f s CPU" % th["cpu_seconds"])
    return ", ".join(parts)


def check(py, t, doc, text, where, calls, cpu=None, crash=None, registers=True, spun=True):
    """@calls: {tid: name} of the waiting threads; @cpu: {tid: (low, high)} bounds of CPU
    seconds, or None when the source records none (gdb cores, debugger reads); @crash:
    (tid, signal, fault address) of a core's crashing thread; @registers: the source says
    which system call a thread is in; @spun: the spinning thread's CPU time must be more than
    none (not so for a kernel core's, which the kernel sampled at its ticks)."""
    problems = []
    threads = dict((th["native_thread_id"], th) for th in doc["threads"])
    heads = headers(text)
    for tt in t.truth["threads"]:
        tid, sc = tt["native_thread_id"], scenario_of(tt)
        th = threads.get(tid)
        if th is None:
            problems.append("%s: thread %s (%s) missing" % (where, tid, sc))
            continue
        label = "%s: thread %s (%s)" % (where, tid, sc)
        if not registers:
            want = (None, None)
        elif tid in calls:
            want = (calls[tid], STATES[calls[tid]])
        elif (sc == "spin" and not crash) or (crash and tid == crash[0]):
            want = (None, "running")
        else:
            want = None
        got = (th["syscall"], th["state"])
        if want is not None and want[0] is not None and th["syscall"] == "restart_syscall":
            # A timed wait an earlier read interrupted: the raw call stays in "syscall", the
            # wait it resumes is named beside it and gives the state.
            got = (th["restarted"], th["state"])
        elif th.get("restarted") is not None:
            problems.append("%s: restarted %r, but the call is %r" % (
                label, th["restarted"], th["syscall"]))
        if want is not None and got != want:
            problems.append("%s: syscall %r (restarted %r), state %r; want %r, %r" % (
                label, th["syscall"], th.get("restarted"), th["state"], want[0], want[1]))
        if crash and tid == crash[0]:
            if (th["signal"], th["fault_address"]) != crash[1:]:
                problems.append("%s: signal %r at %r, want %r at %r" % (
                    label, th["signal"], th["fault_address"], crash[1], crash[2]))
        elif th["signal"] is not None or th["fault_address"] is not None:
            problems.append("%s: signal %r (%r) but it received none" % (
                label, th["signal"], th["fault_address"]))
        got_cpu = th["cpu_seconds"]
        if cpu is None:
            if got_cpu is not None:
                problems.append("%s: cpu_seconds %r from a source that records none"
                                % (label, got_cpu))
        elif got_cpu is None or got_cpu < 0:
            problems.append("%s: cpu_seconds %r" % (label, got_cpu))
        elif tid in cpu:
            low, high = cpu[tid]
            if not (low <= got_cpu <= high) or (spun and sc == "spin" and got_cpu <= 0):
                problems.append("%s: cpu_seconds %r, /proc says %.3f - %.3f" % (
                    label, got_cpu, low, high))
        head = heads.get(tid)
        words = header_words(th)
        if head is not None and cpu is not None and tid in cpu and got_cpu is not None:
            # The text may come from another run than the JSON (the CLI's two runs): its CPU
            # time is held to /proc's bounds, the rest to the JSON's words.
            m = re.search(r", (\d+\.\d\d) s CPU$", head)
            if m and cpu[tid][0] - 0.005 <= float(m.group(1)) <= cpu[tid][1] + 0.005:
                head = head[:m.start()] + ", %.2f s CPU" % got_cpu
        if head is None or not head.endswith(":" + (" " + words if words else "")):
            problems.append("%s: text header %r does not end with %r" % (label, head, words))
    if problems:
        raise AssertionError("\n".join(problems))
    return heads


def same_headers(where, texts):
    """The CLI, gdb and lldb print the same thread headers (cores: CPU times included)."""
    first_name, first = texts[0]
    for name, heads in texts[1:]:
        if heads != first:
            raise AssertionError("%s: %s and %s print different thread headers:\n%s\n%s"
                                 % (where, first_name, name, sorted(first.items()),
                                    sorted(heads.items())))


def drop_gil(heads, tid):
    return dict((k, v.replace(", holds the GIL:", ":", 1) if k == tid else v)
                for k, v in heads.items())


def strip_cpu(heads):
    return dict((k, re.sub(r", \d+\.\d\d s CPU$", "", v)) for k, v in heads.items())


def await_restarts(t, calls, timeout=60):
    """Waits until every timed wait of @t waits through restart_syscall, in the call @calls
    says by the kernel's word (wchan): what a read that stopped the process makes of them once
    it lets go."""
    deadline = time.time() + timeout
    while True:
        problems = []
        for tt in t.truth["threads"]:
            tid, sc = tt["native_thread_id"], scenario_of(tt)
            # ppoll is resumed as itself: only the others wait through restart_syscall.
            if not sc.startswith("timed-") or calls[tid] == "ppoll":
                continue
            nr = proc_syscall(t.pid, tid)
            if SYSCALLS.get(nr) != "restart_syscall" or proc_restarted(t.pid, tid) != calls[tid]:
                problems.append("thread %s (%s) is in %r (wchan: %r), not a restarted %s"
                                % (tid, sc, SYSCALLS.get(nr, nr), proc_restarted(t.pid, tid),
                                   calls[tid]))
        if not problems:
            return
        if time.time() > deadline:
            raise AssertionError("after a read: " + "; ".join(problems))
        time.sleep(0.05)


def case_park(py):
    def run():
        with Target(py, "activity") as t:
            calls = settle_live(py, t)
            spin = t.thread("spin")["native_thread_id"]
            # A first read interrupts the timed waits: every read after it (all of those
            # checked below) sees them resumed through restart_syscall.
            first = headers(cli(t.pid))
            for tid, head in first.items():
                if tid in calls and ": %s (%s)," % (STATES[calls[tid]], calls[tid]) not in head:
                    raise AssertionError("cli live, first read: thread %s: %r, not in %s"
                                         % (tid, head, calls[tid]))
            await_restarts(t, calls)
            with t.stopped():
                # Stopped, a thread still runs for a moment each time the CLI seizes and lets
                # go of it (ptrace wakes it from its group stop), and that may carry its CPU
                # time over a tick: /proc before and after both runs bound what they read.
                tids = [tt["native_thread_id"] for tt in t.truth["threads"]]
                before = dict((tid, proc_cpu(t.pid, tid)) for tid in tids)
                text = cli(t.pid)
                doc = json.loads(cli("--json", t.pid))
                exact = dict((tid, (before[tid] - SLACK, proc_cpu(t.pid, tid) + SLACK))
                             for tid in tids)
                live = [("cli", strip_cpu(check(py, t, doc, text, "cli live", calls, exact)))]
            for kind in ("gdb", "lldb"):
                before = proc_cpu(t.pid, spin)
                doc, text = debugger(kind, ["-p", str(t.pid)])
                after = proc_cpu(t.pid, spin)
                cpu = {spin: (before - SLACK, after + SLACK)}
                live.append((kind, strip_cpu(check(py, t, doc, text, kind + " live", calls,
                                                   cpu))))
            # The debuggers attach while the process runs: whether the spinning thread holds
            # the GIL at that moment is the moment's (2.7 drops and takes it again every 100
            # ticks), so that one phrase of that one thread is not compared between readers.
            same_headers("live", [(name, drop_gil(heads, spin)) for name, heads in live])
            doc, text = debugger("gdb", ["-p", str(t.pid)], {"PYUNWIND_READS": "debugger"})
            check(py, t, doc, text, "gdb live, debugger reads", calls)
            core = t.gcore()
            texts = [("cli", check(py, t, json.loads(cli("--json", core, t.executable)),
                                   cli(core, t.executable), "cli gdb core", calls))]
            for kind in ("gdb", "lldb"):
                doc, text = debugger(kind, target_args(kind, "gcore", t, core))
                texts.append((kind, check(py, t, doc, text, kind + " gdb core", calls)))
            same_headers("gdb core", texts)
    return run


def case_crash(py):
    def run():
        started = time.time()
        with Target(py, "activity", mode="crash") as t:
            core = t.crash_core()
            with open(os.path.join(t.workdir, "activity.json")) as f:
                seen = json.load(f)
            calls = {}
            for tid, nr in seen["syscalls"].items():
                calls[int(tid)] = SYSCALLS.get(nr, nr)
            for tt in t.truth["threads"]:
                tid, sc = tt["native_thread_id"], scenario_of(tt)
                if tid in calls and calls[tid] not in expected_calls(py, sc):
                    raise AssertionError("before the crash, thread %s (%s) was in %r, not %s"
                                         % (tid, sc, calls[tid], expected_calls(py, sc)))
            spin = seen["spin_native_thread_id"]
            # A kernel core's CPU times are the ones the kernel sampled at its ticks, not the
            # runtime-scaled ones /proc shows (runs read 24 ms past /proc's bound): its own
            # notes are the truth, read independently (harness/corenotes.py), every thread to
            # the microsecond. Being samples, they may even be 0 for a thread that ran (a run
            # recorded none for the spinner, which /proc had seen run), but never more than
            # the process lived, plus a tick; and the process as a whole ran.
            recorded = corenotes.thread_cpu_seconds(core)
            lived = t.ended_by - started
            if spin not in recorded or recorded[spin] > lived + 0.01 or \
                    recorded.get(t.pid, 0) <= 0:
                raise AssertionError("the core records CPU times %r for a process that lived "
                                     "%.3f s (spinning thread %s, main thread %s)"
                                     % (recorded, lived, spin, t.pid))
            # The main thread's note has the whole process's times (its threads', and those
            # that exited): pyunwind shows its own, the others' taken off.
            others = sum(v for tid, v in recorded.items() if tid != t.pid)
            if t.pid in recorded:
                recorded[t.pid] = max(0.0, recorded[t.pid] - others)
            cpu = dict((tid, (v - 1e-5, v + 1e-5)) for tid, v in recorded.items())
            # The spinning thread and the crashing one take turns with the interpreter lock:
            # at the crash the spinner may be running or waiting for the lock, so its state
            # is not checked here (live and gdb cores check it).
            crash = (t.thread("crash")["native_thread_id"], "SIGSEGV", "0x0")
            texts = [("cli", check(py, t, json.loads(cli("--json", core, t.executable)),
                                   cli(core, t.executable), "cli kernel core", calls, cpu,
                                   crash, spun=False))]
            for kind in ("gdb", "lldb"):
                doc, text = debugger(kind, target_args(kind, "crash", t, core))
                texts.append((kind, check(py, t, doc, text, kind + " kernel core", calls, cpu,
                                          crash, spun=False)))
            same_headers("kernel core", texts)
    return run


def cases():
    out = []
    for py in selected():
        out.append(("activity %s/live+gcore" % py.label, case_park(py)))
        out.append(("activity %s/crash" % py.label, case_crash(py)))
    return out


if __name__ == "__main__":
    sys.exit(run_cases(cases(), prefix="test-activity"))
