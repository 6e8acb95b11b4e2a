# test_subinterp - one stack per OS thread across sub-interpreters (3.12+): the subinterp target
# (tests/targets/subinterp.py) runs a sub-interpreter in the main thread, one in a worker
# thread, and two nested through each other in a third thread, each parked in a pipe read.
# `pyunwind bt --all` (live and gdb core) shows each of those threads once: the innermost
# interpreter's frames, a "--- interpreter N → M ---" line per switch, then the callers';
# `py-bt` on the main thread in gdb and lldb shows its whole stack; the JSON keeps one entry per
# thread state, the callers' naming the thread state they continue.
import json
import os
import re
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from harness import REPO, Target, gdb_batch, lldb_batch, run_cases, selected  # noqa: E402

CLI = os.path.join(REPO, "build", "pyunwind")


def cli(*args):
    out = subprocess.run([CLI] + [str(a) for a in args], capture_output=True, text=True,
                         timeout=120)
    if out.returncode:
        raise AssertionError("pyunwind %s: status %d: %s" % (args, out.returncode, out.stderr))
    return out.stdout


def blocks(text):
    """{tid: [frame function names and switch lines]} of `bt --all` text; a tid seen twice
    fails."""
    got, cur = {}, None
    for line in text.splitlines():
        m = re.match(r"Thread 0x[0-9a-f]+ \(tid (\d+)\)", line)
        if m:
            tid = int(m.group(1))
            if tid in got:
                raise AssertionError("thread %d listed twice:\n%s" % (tid, text))
            cur = got[tid] = []
        elif cur is not None and line.startswith("--- interpreter"):
            cur.append(line)
        elif cur is not None:
            m = re.match(r"#\d+\s+File .*, in (\S+)$", line)
            if m:
                cur.append(m.group(1))
    return got


def want(truth):
    i = truth["interpreters"]
    return {"main": ["a_park", "--- interpreter %d \u2192 0 ---" % i["main"], "main"],
            "worker": ["b_park", "--- interpreter %d \u2192 0 ---" % i["worker"], "worker"],
            "nested": ["d_park", r"--- interpreter \d+ \u2192 %d ---" % i["nested"], "c_outer",
                       "--- interpreter %d \u2192 0 ---" % i["nested"], "nested"]}


def in_order(got, pattern, what):
    k = 0
    for item in got:
        if k < len(pattern) and re.fullmatch(pattern[k], item):
            k += 1
    if k < len(pattern):
        raise AssertionError("%s: %r not found in order in %r" % (what, pattern[k:], got))


def check_text(what, truth, text):
    got = blocks(text)
    for name, pattern in want(truth).items():
        tid = truth["threads"][name]
        if tid not in got:
            raise AssertionError("%s: no thread %d (%s) in:\n%s" % (what, tid, name, text))
        in_order(got[tid], pattern, "%s thread %s" % (what, name))


def check_json(what, truth, doc):
    states = doc["threads"]
    by_addr = {t["tstate_address"]: t for t in states}
    for t in states:
        if "continues" not in t:
            raise AssertionError("%s: thread state without 'continues': %r" % (what, t))
    # the main thread: its main-interpreter state continues the sub-interpreter's
    outer = [t for t in states if t["native_thread_id"] == truth["threads"]["main"]
             and t["interpreter_id"] == 0]
    if len(outer) != 1 or outer[0]["continues"] not in by_addr:
        raise AssertionError("%s: main thread's interpreter 0 state does not continue another:"
                             " %r" % (what, outer))
    inner = by_addr[outer[0]["continues"]]
    if inner["interpreter_id"] != truth["interpreters"]["main"] or \
            inner["frames"][0]["function"] != "a_park":
        raise AssertionError("%s: main thread continues %r" % (what, inner))


def case(py):
    def run():
        with Target(py, "subinterp") as t:
            live = cli("bt", "--all", "--no-source", t.pid)
            doc = json.loads(cli("bt", "--all", "--json", t.pid))
            core = t.gcore()
            check_text("live", t.truth, live)
            check_json("live", t.truth, doc)
            check_text("gdb core", t.truth, cli("bt", "--all", "--no-source", core,
                                                t.executable))
            check_json("gdb core", t.truth,
                       json.loads(cli("bt", "--all", "--json", core, t.executable)))
            main = want(t.truth)["main"]
            for name, batch in (("gdb", gdb_batch), ("lldb", lldb_batch)):
                rc, out, err = batch(["-p", str(t.pid)], ["py-bt --no-source"])
                text = "\n".join(out) if isinstance(out, (list, tuple)) else out
                items = [a or b for a, b in re.findall(
                    r"in (\S+)\n|(--- interpreter .* ---)", text + "\n")]
                in_order(items, main, "%s py-bt (status %d, %s)" % (name, rc, err[-300:]))
    return run


if __name__ == "__main__":
    pys = [py for py in selected() if py.minor not in ("2.7",) and
           tuple(int(x) for x in py.minor.split(".")) >= (3, 12)]
    sys.exit(run_cases([("subinterp " + py.label, case(py)) for py in pys],
                       prefix="test-subinterp"))
