#!/usr/bin/env python3
# test_deep - a thread 30,005 Python frames deep (tests/targets/deep.py), end to end, on every
# interpreter of the matrix: read whole, to its entry frames (JSON: every frame, in order, none
# omitted); the text folds repeated frames exactly as the target's own traceback.format_stack()
# folds them ("[Previous line repeated N more times]"; 2.7's folds none); --limit counts exact.
# Live (CLI, gdb), from a gdb core (CLI, lldb) and from a kernel crash core (CLI, gdb, lldb):
# each front end on two of the sources, as each read of 30,005 frames (180,000 native ones up
# to 3.10) costs seconds. Merged with the native stack (py-bt --native) by the CLI live and
# from both cores, by gdb live (3.11+, and 3.10), by lldb from the kernel core (3.11+). The
# truth is what the thread said of its own stack (traceback.extract_stack,
# traceback.format_stack) right before it parked or crashed.
#
#   tests/e2e/test_deep.py [-j N] [FILTER...]     (make test-deep)
import json
import os
import re
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from harness import REPO, Target, run_cases, selected  # noqa: E402
from test_adapters import run_debugger, parse_json, no_traceback, target_args  # noqa: E402

CLI = os.path.join(REPO, "build", "pyunwind")
LIMIT = 3
FOLD = re.compile(r"^\s*\[Previous line repeated (\d+) more times?\]$")
TB_FRAME = re.compile(r'^  File "(.*)", line (\d+), in (.*)$')
PYU_FRAME = re.compile(r'^#(\d+)\s+File "(.*)", line (\d+), in (.*)$')
NATIVE_EVAL_NESTS = (3, 10)  # up to this version every Python call nests C calls


def version(py):
    return tuple(int(x) for x in py.version.split(".")[:2])


def cli(*args):
    p = subprocess.run([CLI, "bt", "--all"] + [str(a) for a in args], capture_output=True,
                       timeout=300, stdin=subprocess.DEVNULL)
    if p.returncode != 0:
        raise AssertionError("pyunwind bt --all %s: status %d: %s" % (
            " ".join(map(str, args)), p.returncode, p.stderr.decode("utf-8", "replace")[-2000:]))
    return p.stdout.decode("utf-8")


def debugger(kind, args, commands):
    # Each reads 30,005 frames (and may unwind 180,000 native ones): minutes on a loaded
    # machine.
    rc, outs, err = run_debugger(kind, args, commands, timeout=600)
    what = "%s %s" % (kind, " ".join(args))
    no_traceback(what, err, *outs)
    if len(outs) < len(commands):
        raise AssertionError("%s: no output (status %d): %s" % (what, rc, err[-2000:]))
    return outs


def thread_text(text, tid):
    """The lines of py-bt text of the thread with kernel id @tid (its header first)."""
    lines = text.splitlines()
    for i, line in enumerate(lines):
        if re.match(r"Thread 0x[0-9a-f]+ \(tid %d\)" % tid, line):
            end = i + 1
            while end < len(lines) and not lines[end].startswith("Thread 0x"):
                end += 1
            while end > i + 1 and not lines[end - 1].strip():
                end -= 1
            return lines[i:end]
    raise AssertionError("no thread with tid %d in:\n%s" % (tid, text[-3000:]))


def truth_text(deep):
    """(shown frames as (file, line), fold counts), innermost first, of the target's own
    traceback.format_stack() text."""
    shown, folds = [], []
    for line in deep["format_stack"].splitlines():
        m = TB_FRAME.match(line)
        if m:
            shown.append((m.group(1), int(m.group(2))))
        m = FOLD.match(line)
        if m:
            folds.append(int(m.group(1)))
    # The innermost frame stays on another line than the one it made the text on (the truth's
    # frames say which).
    shown[-1] = (shown[-1][0], deep["frames"][-1][1])
    return shown[::-1], folds[::-1]


def check_text(lines, deep, where, limit=None):
    """@lines: the deep thread's text; folded as the target's traceback, numbered exactly."""
    frames = deep["frames"]
    shown, folds, numbers = [], [], []
    for line in lines[1:]:
        m = PYU_FRAME.match(line)
        if m:
            numbers.append(int(m.group(1)))
            shown.append((m.group(2), int(m.group(3))))
        m = FOLD.match(line)
        if m:
            folds.append(int(m.group(1)))
    problems = []
    if limit is None:
        want_shown, want_folds = truth_text(deep)
        if (shown, folds) != (want_shown, want_folds):
            problems.append("%d frames shown and folds %r; the target's traceback shows %d "
                            "and folds %r" % (len(shown), folds, len(want_shown), want_folds))
        if not numbers or numbers[-1] != len(frames) - 1 or len(numbers) + sum(folds) != \
                len(frames):
            problems.append("frames numbered up to %r, %d shown + %d folded, of %d" % (
                numbers[-1] if numbers else None, len(numbers), sum(folds), len(frames)))
        if lines[-1].startswith("("):
            problems.append("a thread read whole ends with %r" % lines[-1])
    else:
        tail = "(%d more frames not shown: limit %d)" % (len(frames) - limit, limit)
        if lines[-1] != tail or len(numbers) + sum(folds) != limit:
            problems.append("--limit %d: %d shown + %d folded, ends %r; want %r" % (
                limit, len(numbers), sum(folds), lines[-1], tail))
    if problems:
        raise AssertionError("%s: %s" % (where, "; ".join(problems)))


def check_json(doc, deep, where, limit=None):
    """The deep thread's JSON frames: every frame the target listed, in order (innermost
    first); with a limit, the innermost ones and exactly how many more."""
    th = [t for t in doc["threads"] if t["native_thread_id"] == deep["native_thread_id"]]
    if len(th) != 1:
        raise AssertionError("%s: %d threads with tid %s" % (where, len(th),
                                                             deep["native_thread_id"]))
    got = [(f.get("file"), f.get("line"), f.get("function")) for f in th[0]["frames"]]
    want = [tuple(f) for f in deep["frames"][::-1]]
    omitted = th[0]["frames_omitted"]
    if limit is not None:
        want, want_omitted = want[:limit], len(want) - limit
    else:
        want_omitted = 0
    if got != want or omitted != want_omitted:
        first = next((i for i, (a, b) in enumerate(zip(got, want)) if a != b),
                     min(len(got), len(want)))
        raise AssertionError("%s: %d frames (%d omitted), want %d (%d omitted); first "
                             "difference at #%d: %r, want %r" % (
                                 where, len(got), omitted, len(want), want_omitted, first,
                                 got[first] if first < len(got) else None,
                                 want[first] if first < len(want) else None))


def check_native(lines, deep, where, unreadable=False):
    """py-bt --native of the deep thread: merged (@unreadable: gdb left native stacks out of
    the core, so it may be shown apart), every Python frame shown."""
    if not unreadable and any("not merged" in l for l in lines):
        raise AssertionError("%s: %s" % (where, [l for l in lines if "not merged" in l]))
    numbers = [int(m.group(1)) for m in map(PYU_FRAME.match, lines) if m]
    folds = sum(int(m.group(1)) for m in map(FOLD.match, lines) if m)
    if not numbers or numbers[-1] != len(deep["frames"]) - 1 or \
            len(numbers) + folds != len(deep["frames"]):
        raise AssertionError("%s: Python frames up to #%r, %d shown + %d folded, of %d" % (
            where, numbers[-1] if numbers else None, len(numbers), folds,
            len(deep["frames"])))


def deep_of(t):
    return [tt for tt in t.truth["threads"] if tt["scenario"] == "deep"][0]


def check_source(py, t, core, where, kinds):
    """The CLI (and the debuggers in @kinds) on a core or (@core None) the live process."""
    deep = deep_of(t)
    tid = deep["native_thread_id"]
    src = [core, t.executable] if core else [t.pid]
    check_json(json.loads(cli("--json", *src)), deep, "cli %s" % where)
    text = cli("--no-source", *src)
    check_text(thread_text(text, tid), deep, "cli %s" % where)
    if core is None:  # the limits, once
        check_text(thread_text(cli("--no-source", "--limit", LIMIT, *src), tid), deep,
                   "cli %s --limit" % where, LIMIT)
        check_json(json.loads(cli("--json", "--limit", LIMIT, *src)), deep,
                   "cli %s --json --limit" % where, LIMIT)
        # With the frames' locals nothing is folded: each frame's locals are its own.
        lines = thread_text(cli("--no-source", "--locals", "--limit", 20, *src), tid)
        numbers = [int(m.group(1)) for m in map(PYU_FRAME.match, lines) if m]
        if numbers != list(range(20)) or any(FOLD.match(line) for line in lines):
            raise AssertionError("cli %s --locals --limit 20: frames %s shown, %s folded" % (
                where, numbers, [line for line in lines if FOLD.match(line)]))
    for kind in kinds:
        commands = ["py-bt --all --no-source", "py-bt --all --json"]
        # Up to 3.10 the thread is ~180,000 native frames deep: the debuggers take a minute
        # to unwind it, so there gdb merges it on one interpreter (pyenv-3.10), live.
        # lldb merges it from the kernel core (3.11+).
        native = (kind == "gdb" and core is None and (
            version(py) > NATIVE_EVAL_NESTS or py.label == "pyenv-3.10")) or (
            kind == "lldb" and where == "kernel core" and version(py) > NATIVE_EVAL_NESTS)
        if native:
            commands.append("py-bt --all --native --no-source")
        kargs = target_args(kind, "live" if core is None else "crash", t, core)
        outs = debugger(kind, kargs, commands)
        lines = thread_text(outs[0], tid)
        if lines[1:] != thread_text(text, tid)[1:]:
            raise AssertionError("%s %s: the deep thread's text differs from the CLI's" % (
                kind, where))
        check_json(parse_json(outs[1], kind), deep, "%s %s" % (kind, where))
        if native:
            check_native(thread_text(outs[2], tid), deep, "%s %s --native" % (kind, where))
    # The CLI merges the whole thread from every source, the ~180,000 native frames of a
    # 3.10 thread read from a core included (the target reads the core's stack words, not
    # elfutils' own reader, whose cost grew with the square of the depth).
    lines = thread_text(cli("--native", "--no-source", *src), tid)
    # gdb 13 leaves stacks guarded by MADV_GUARD_INSTALL pages (glibc 2.42, the unstable
    # builds' root) zero in its cores: no native stack can be unwound from those.
    check_native(lines, deep, "cli %s --native" % where,
                 unreadable=where == "gdb core" and bool(t.gcore_warnings))


def case_park(py):
    def run():
        with Target(py, "deep") as t:
            if len(deep_of(t)["frames"]) != 30005:
                raise AssertionError("the target's thread is %d frames deep, not 30005"
                                     % len(deep_of(t)["frames"]))
            # The thread sleeps for good and the main thread waits for it: nothing to stop.
            check_source(py, t, None, "live", ("gdb",))
            check_source(py, t, t.gcore(), "gdb core", ("lldb",))
    return run


def case_crash(py):
    def run():
        with Target(py, "deep", mode="crash") as t:
            check_source(py, t, t.crash_core(), "kernel core", ("gdb", "lldb"))
    return run


def cases():
    out = []
    for py in selected():
        out.append(("deep %s/live+gcore" % py.label, case_park(py)))
        out.append(("deep %s/crash" % py.label, case_crash(py)))
    return out


if __name__ == "__main__":
    sys.exit(run_cases(cases(), prefix="test-deep"))
