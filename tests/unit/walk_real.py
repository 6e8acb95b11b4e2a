#!/usr/bin/env python3
# walk_real - the core walker against real interpreters, without the CLI: for every interpreter
# of the matrix, build/walkdump (pyu_stacks_collect on a stopped live process) is compared with
# the target's own truth - every frame of every thread, field by field, plus instruction
# offsets, kernel thread ids, the version and at most one GIL holder; a gdb core and a kernel
# crash core for a few representative builds (the full core matrix is tests/e2e/test_core.py).
#
#   tests/unit/walk_real.py [-j N] [FILTER...]      (make test-walk)
# Ends with "test-walk: N passed, N failed".
import errno
import glob
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from harness import (REPO, Target, compare, run_cases, selected, stopped,  # noqa: E402
                     task_ids)

WALKDUMP = os.path.join(REPO, "build", "walkdump")
FIELDS = ("function", "qualname", "file", "line", "end_line", "column", "end_column",
          "instruction_offset")
# Cores are slow to make; these cover a frame-object chain (2.7), the stripped Debian build,
# and a stripped sid build whose gdb cores lack thread stacks (data-stack continuation).
CORE_LABELS = ("pyenv-2.7", "debian-3.11", "sid-3.14")
# pyenv builds rerun with a stripped copy of their libpython (no .symtab): 2.7/3.6 must then
# decode PyInterpreterState_Head(), and every one finds its exact version without symbols.
STRIPPED_LABELS = ("pyenv-2.7", "pyenv-3.6", "pyenv-3.9")
# Through a read callback whose mappings name no files (a remote debugger's view): the ELF
# images are read from memory, the executable's (sid, Debian) or libpython's (pyenv).
ANONYMOUS_LABELS = ("pyenv-2.7", "pyenv-3.12", "debian-3.11", "sid-3.14", "sid-3.15d")


def walk(*args):
    p = subprocess.run([WALKDUMP] + [str(a) for a in args], capture_output=True, timeout=120)
    assert p.returncode == 0, "walkdump %s: status %d: %s" % (
        " ".join(map(str, args)), p.returncode, p.stderr.decode("utf-8", "replace")[-2000:])
    return json.loads(p.stdout.decode("utf-8", "strict"))


def check(truth, doc, what):
    problems = compare(truth, doc, fields=FIELDS, limit=12)
    if doc["python"]["version"] != truth["python"]["version"]:
        problems.append("version %r, truth %r" % (doc["python"]["version"],
                                                  truth["python"]["version"]))
    if doc["python"]["debug_build"] != truth["python"]["debug_build"]:
        problems.append("debug_build %r, truth %r" % (doc["python"]["debug_build"],
                                                      truth["python"]["debug_build"]))
    got = dict((t["thread_id"], t) for t in doc["threads"])
    for tt in truth["threads"]:
        gt = got.get(tt["thread_id"])
        want = tt.get("native_thread_id")
        if gt and want is not None and gt["native_thread_id"] != want:
            problems.append("thread %s: native_thread_id %r, truth %r"
                            % (tt["thread_id"], gt["native_thread_id"], want))
    holders = [t for t in doc["threads"] if t["holds_gil"]]
    if len(holders) > 1:
        problems.append("%d threads hold the GIL" % len(holders))
    if doc["errors"]:
        problems.append("errors: %s" % doc["errors"][:3])
    assert not problems, "%s: %d problem(s):\n%s" % (what, len(problems), "\n".join(problems))


def live_case(py):
    def run():
        with Target(py, "scenario") as t:
            with t.stopped():
                doc = walk(t.pid)
            check(t.truth, doc, "live")
    return ("%s/live" % py.label, run)


def gcore_case(py):
    def run():
        with Target(py, "scenario") as t:
            core = t.gcore()
            check(t.truth, walk(core, t.executable), "gcore")
    return ("%s/gcore" % py.label, run)


def crash_case(py):
    def run():
        with Target(py, "scenario", mode="crash") as t:
            core = t.crash_core()
            check(t.truth, walk(core, t.executable), "crash core")
    return ("%s/crash" % py.label, run)


def anonymous_case(py):
    def run():
        with Target(py, "scenario") as t:
            with t.stopped():
                doc = walk("--anonymous", t.pid)
            check(t.truth, doc, "anonymous callback")
            assert "in memory" in " ".join(doc["notes"]) or \
                "ELF image" in " ".join(doc["notes"]), doc["notes"]
    return ("%s/anonymous" % py.label, run)


def stripped_case(py):
    def run():
        libdir = os.path.join(os.path.dirname(os.path.dirname(os.path.realpath(py.path))), "lib")
        libs = glob.glob(os.path.join(libdir, "libpython%s*.so.1.0" % py.minor))
        assert libs, "no libpython in %s" % libdir
        tmp = tempfile.mkdtemp(prefix="pyu-stripped-")
        try:
            lib = os.path.join(tmp, os.path.basename(libs[0]))
            subprocess.run(["strip", "-o", lib, libs[0]], check=True, timeout=60)
            with Target(py, "scenario", env={"LD_LIBRARY_PATH": tmp}) as t:
                with open("/proc/%d/maps" % t.pid) as f:
                    assert lib in f.read(), "the stripped library was not loaded"
                with t.stopped():
                    doc = walk(t.pid)
                check(t.truth, doc, "stripped live")
                if py.minor in ("2.7", "3.6"):
                    assert "decoded from PyInterpreterState_Head" in " ".join(doc["notes"]), \
                        doc["notes"]
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
    return ("%s/stripped-live" % py.label, run)


# A thread spinning in Python and idle ones: when stopped, the spinning thread holds the GIL
# or (caught in a hand-over) nobody does; an idle thread never does. The idle threads (the main
# thread among them) block in read(2) on a pipe nothing is written to, which they enter only
# after letting go of the GIL, so the harness can see from /proc when they are idle for good.
GIL_PROGRAM = '''
import os, sys, threading
r, w = os.pipe()
spinning = threading.Event()
def spin():
    spinning.set()
    x = 0
    while True:
        x += 1
def idle():
    os.read(r, 1)
for target in (spin, idle):
    t = threading.Thread(target=target)
    t.daemon = True
    t.start()
spinning.wait()
sys.stdout.write("ready\\n")
sys.stdout.flush()
os.read(r, 1)
'''
# read(2) by machine, for /proc/PID/task/TID/syscall.
READ_SYSCALL = {"x86_64": 0, "aarch64": 63}


def wait_in_read(pid, count, timeout=60):
    """Polls until @count threads of @pid block in read(2)."""
    nr = READ_SYSCALL[os.uname().machine]
    deadline = time.time() + timeout
    while time.time() < deadline:
        blocked = 0
        for tid in task_ids(pid):
            try:
                with open("/proc/%d/task/%d/syscall" % (pid, tid)) as f:
                    words = f.read().split()
            except OSError:
                continue
            blocked += bool(words) and words[0] == str(nr)
        if blocked == count:
            return
        time.sleep(0.01)
    raise AssertionError("%d threads of %d did not block in read(2) within %ds"
                         % (count, pid, timeout))


def gil_case(py):
    def run():
        proc = subprocess.Popen([py.path, "-c", GIL_PROGRAM], stdout=subprocess.PIPE,
                                stdin=subprocess.DEVNULL)
        try:
            assert proc.stdout.readline().strip() == b"ready", "the GIL program did not start"
            wait_in_read(proc.pid, 2)
            # The spinner may be caught between releasing and taking the GIL (2.7 hands it
            # over every 100 instructions): look again until it is seen holding it.
            looks, deadline = 0, time.time() + 60
            while True:
                with stopped(proc.pid):
                    doc = walk(proc.pid)
                looks += 1
                holders = [t["frames"][0]["function"] if t["frames"] else None
                           for t in doc["threads"] if t["holds_gil"]]
                assert all(t["holds_gil"] is not None for t in doc["threads"]), doc["threads"]
                assert holders in ([], ["spin"]), "GIL holders: %s" % holders
                if holders == ["spin"]:
                    break
                assert time.time() < deadline, \
                    "the spinning thread never held the GIL in %d looks" % looks
        finally:
            proc.kill()
            proc.wait()
    return ("%s/gil" % py.label, run)


# Each way of finding the interpreter, on a real stripped 3.14: copies of the executable with
# the names the earlier routes look for renamed, so that only the next route can succeed.
ROUTES = (
    ("symbol _PyRuntime", []),
    ("section .PyRuntime", [b"\x00_PyRuntime\x00"]),
    ("decoded from PyInterpreterState_Head", [b"\x00_PyRuntime\x00", b".PyRuntime\x00"]),
    ("_Py_DebugOffsets cookie", [b"\x00_PyRuntime\x00", b".PyRuntime\x00",
                                 b"\x00PyInterpreterState_Head\x00"]),
)


# The parked thread blocks in a lock's acquire(); the report waits until that thread's frame
# stands on the acquire line, where it stays.
ROUTES_PROGRAM = '''
import json, sys, threading, time
def report():
    out = []
    for ident, f in sys._current_frames().items():
        if ident == threading.current_thread().ident:
            continue  # still moving: only the parked thread is compared
        frames = []
        while f is not None:
            frames.append((f.f_code.co_name, f.f_lineno))
            f = f.f_back
        out.append(frames)
    return out
def inner(lock):
    lock.acquire()
def outer(lock):
    inner(lock)
lock = threading.Lock()
lock.acquire()
t = threading.Thread(target=outer, args=(lock,))
t.start()
deadline = time.time() + 60
while time.time() < deadline:
    f = sys._current_frames().get(t.ident)
    if f is not None and f.f_code is inner.__code__ and \\
            f.f_lineno == inner.__code__.co_firstlineno + 1:
        break
    time.sleep(0.01)
stack = report()
sys.stdout.write(json.dumps(stack) + "\\n")
sys.stdout.flush()
lock.acquire()
'''


def _popen_new_executable(args, env, timeout=30.0):
    """Starts a program file written a moment ago. While another case's thread forks, its
    child holds every open file of this process until it execs, the copy's write descriptor
    included, and exec of a file open for writing fails with ETXTBSY: wait for that to pass."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            return subprocess.Popen(args, stdout=subprocess.PIPE, stdin=subprocess.DEVNULL,
                                    env=env)
        except OSError as e:
            if e.errno != errno.ETXTBSY or time.monotonic() > deadline:
                raise
            time.sleep(0.05)


def routes_case(py):
    def run():
        exe = os.path.realpath(py.path)
        with open(exe, "rb") as f:
            image = f.read()
        tmp = tempfile.mkdtemp(prefix="pyu-routes-")
        try:
            for how, hide in ROUTES:
                data = image
                for name in hide:
                    assert data.count(name) == 1, "%r is not in %s exactly once" % (name, exe)
                    data = data.replace(name, name[:-2] + b"X" + name[-1:])
                copy = os.path.join(tmp, "python-%d" % len(hide))
                with open(copy, "wb") as f:
                    f.write(data)
                os.chmod(copy, 0o755)
                # A copy finds its standard library through PYTHONHOME. Extension modules
                # need the hidden names, so the program uses only built-in modules.
                home = os.path.dirname(os.path.dirname(exe))
                env = dict(os.environ, PYTHONHOME=home)
                proc = _popen_new_executable([copy, "-c", ROUTES_PROGRAM], env)
                try:
                    want = json.loads(proc.stdout.readline().decode())
                    with stopped(proc.pid):
                        doc = walk(proc.pid)
                finally:
                    proc.kill()
                    proc.wait()
                got = [[(f["function"], f["line"]) for f in t["frames"]]
                       for t in doc["threads"]]
                want = [[tuple(f) for f in frames] for frames in want]
                assert want and all(w in got for w in want), \
                    "%s: %s, target says %s" % (how, got, want)
                assert how in " ".join(doc["notes"]), "%s: notes %s" % (how, doc["notes"])
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
    return ("%s/routes" % py.label, run)


def main():
    pys = selected()
    cases = [live_case(py) for py in pys] + [gil_case(py) for py in pys]
    for py in pys:
        if py.label in CORE_LABELS:
            cases += [gcore_case(py), crash_case(py)]
        if py.label in STRIPPED_LABELS:
            cases.append(stripped_case(py))
        if py.label == "sid-3.14":
            cases.append(routes_case(py))
        if py.label in ANONYMOUS_LABELS:
            cases.append(anonymous_case(py))
    return run_cases(cases, prefix="test-walk")


if __name__ == "__main__":
    sys.exit(main())
