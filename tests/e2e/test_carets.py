# test_carets - the source and caret lines of `pyunwind bt` equal what each target's own
# traceback module prints for the same frames: the carets target (tests/targets/carets.py)
# parks threads inside calls, method calls, attribute chains, binary operations, subscripts,
# multi-line expressions, tab-indented and double-width lines; every frame of every thread is
# rendered by the target's interpreter (StackSummary.format() of a FrameSummary with the
# frame's co_positions()) and compared line by line with the CLI's text, on a live process and
# on a gdb core. Python 3.6+ (source lines only before 3.11).
import json
import os
import re
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from harness import REPO, Target, run_cases, selected  # noqa: E402

CLI = os.path.join(REPO, "build", "pyunwind")
RENDER = os.path.join(REPO, "tests", "carets", "truth.py")
SOURCE_INDENT = " " * 8


def frames_text(text):
    """{thread id: [source block of frame #0, #1, ...]} from `bt --all` text."""
    threads, cur, block = {}, None, None
    for line in text.splitlines():
        m = re.match(r"Thread 0x([0-9a-f]+)", line)
        if m:
            cur = threads.setdefault(int(m.group(1), 16), [])
            block = None
            continue
        if cur is None:
            continue
        if re.match(r"#\d+ ", line):
            block = []
            cur.append(block)
        elif block is not None and (line.startswith(SOURCE_INDENT) or not line.strip()):
            if line.strip() or line == SOURCE_INDENT:
                block.append(line[len(SOURCE_INDENT):])
    return threads


def expected(t):
    frames = [(th["thread_id"], f) for th in t.truth["threads"] for f in th["frames"]]
    pos = [[f["file"], f["line"], f["end_line"], f["column"], f["end_column"]]
           for _, f in frames]
    out = subprocess.run([t.python, RENDER, "--positions"], input=json.dumps(pos),
                         capture_output=True, text=True, timeout=120)
    if out.returncode:
        raise AssertionError("rendering in the target's interpreter failed: " + out.stderr)
    texts = json.loads(out.stdout)
    want = {}
    for (tid, _), text in zip(frames, texts):
        want.setdefault(tid, []).append(text.splitlines())
    return want


def compare(what, want, text):
    got = frames_text(text)
    problems, checked = [], 0
    for tid, frames in sorted(want.items()):
        ours = got.get(tid)
        if ours is None or len(ours) != len(frames):
            problems.append("%s: thread 0x%x: %s frames, want %d" % (
                what, tid, "no" if ours is None else len(ours), len(frames)))
            continue
        for i, (w, g) in enumerate(zip(frames, ours)):
            checked += 1
            if w != g:
                problems.append("%s: thread 0x%x frame #%d:\n--- traceback:\n%s\n--- pyunwind:\n%s"
                                % (what, tid, i, "\n".join(w), "\n".join(g)))
    if problems:
        raise AssertionError("\n".join(problems[:8]))
    if checked < 20:
        raise AssertionError("%s: only %d frames compared" % (what, checked))
    return checked


def bt(*args):
    out = subprocess.run([CLI, "bt", "--all"] + [str(a) for a in args], capture_output=True,
                         text=True, timeout=120)
    if out.returncode:
        raise AssertionError("pyunwind bt %s: status %d: %s" % (args, out.returncode, out.stderr))
    return out.stdout


def case(py):
    def run():
        with Target(py, "carets") as t:
            want = expected(t)
            with t.stopped():
                live = bt(t.pid)
            core = t.gcore()
            n = compare("live", want, live)
            compare("gdb core", want, bt(core, t.executable))
        print("    %s: %d frames equal, live and gdb core" % (py.label, n))
    return run


if __name__ == "__main__":
    pys = [py for py in selected() if py.minor != "2.7"]
    sys.exit(run_cases([("carets-e2e " + py.label, case(py)) for py in pys],
                       prefix="test-carets"))
