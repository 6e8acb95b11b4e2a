#!/usr/bin/env python3
# test_tracebacks - handled exceptions printed as the target prints them, end to end: for every
# interpreter of the matrix the tracebacks target (tests/targets/tracebacks.py) blocks threads
# inside `except:` blocks after printing traceback.format_exception() of the exception each
# handles (chains, groups, recursion, carets, argument forms, a file compiled under a relative
# name). `bt --locals` must print exactly that text under each thread's "handling" line, and
# the JSON traceback entries carry the columns co_positions() gives: the CLI on the live
# process (run from another directory: relative names are resolved against the target's own
# working directory), on a gdb core and on a kernel core of the target crashed (given --cwd),
# py-bt --all --locals in gdb on the gdb core and in lldb on the live process. Where pyunwind
# prints something else by design (a suggestion or a str() only the target's code can make),
# the target says what ("pyunwind_text"). Two targets per interpreter: one parked, one crashed.
#
#   tests/e2e/test_tracebacks.py [-j N] [FILTER...]     (make test-tracebacks)
import json
import os
import re
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, os.pardir))
sys.path.insert(0, HERE)
from harness import REPO, Target, run_cases, selected  # noqa: E402
from test_adapters import run_debugger, no_traceback, target_args  # noqa: E402

CLI = os.path.join(REPO, "build", "pyunwind")
EXC_INDENT = "      "


def cli(*args):
    # From the root directory: never the target's working directory.
    p = subprocess.run([CLI] + [str(a) for a in args], capture_output=True, timeout=120,
                       stdin=subprocess.DEVNULL, cwd="/")
    if p.returncode != 0:
        raise AssertionError("pyunwind %s: status %d: %s" % (" ".join(map(str, args)),
                                                              p.returncode,
                                                              p.stderr.decode()[-2000:]))
    return p.stdout.decode("utf-8", "strict")


def handled_blocks(text):
    """{thread id: the text under its "    handling ..." line, EXC_INDENT removed}"""
    blocks, current, lines = {}, None, None
    for line in text.splitlines():
        m = re.match(r"^Thread 0x([0-9a-f]+)", line)
        if m:
            current, lines = int(m.group(1), 16), None
            continue
        if current is None:
            continue
        if line.startswith("    handling "):
            lines = blocks.setdefault(current, [])
            continue
        if lines is None:
            continue
        if line.startswith(EXC_INDENT):
            lines.append(line[len(EXC_INDENT):])
        elif line == "":
            lines.append("")
        else:
            lines = None
    return dict((k, "\n".join(v) + "\n") for k, v in blocks.items())


def check_text(truth, text, what):
    got = handled_blocks(text)
    problems, compared = [], 0
    for th in truth["threads"]:
        want = th.get("pyunwind_text") or th.get("format_exception")
        if not want:
            continue
        compared += 1
        mine = got.get(th["thread_id"])
        if mine != want:
            problems.append("%s: thread %s (%s):\n--- format_exception:\n%s--- pyunwind:\n%s"
                            % (what, th["thread_id"], th.get("name"), want, mine))
    if compared < 8:
        raise AssertionError("%s: only %d tracebacks compared" % (what, compared))
    if problems:
        raise AssertionError("%d of %d tracebacks differ:\n%s"
                             % (len(problems), compared, "\n".join(problems[:4])))
    return compared


def check_json(truth, doc, what):
    threads = dict((t["thread_id"], t) for t in doc["threads"])
    modern = truth["python"]["hexversion"] >= 0x030B0000
    problems = []
    for th in truth["threads"]:
        want = th.get("positions")
        if not want:
            continue
        exc = (threads.get(th["thread_id"]) or {}).get("exception") or {}
        got = [[e["line"], e["end_line"], e["column"], e["end_column"]]
               for e in exc.get("traceback") or []]
        if not modern:  # no columns before 3.11
            want = [[p[0], g[1] if g else None, None, None] for p, g in
                    zip(want, got + [None] * len(want))]
        if got != want:
            problems.append("%s: thread %s (%s): entries %s, the target's %s"
                            % (what, th["thread_id"], th.get("name"), got, want))
        # "message": the exception line after "Type: " as the text shows it (the suggestion
        # scenarios, whose last line is that line), null where str() needs the target's code
        if not (th.get("scenario") or "").startswith("s_"):
            continue
        text = th.get("pyunwind_text") or th["format_exception"]
        line = text.rstrip("\n").splitlines()[-1]
        shown = line.split(": ", 1)[1] if ": " in line else ""
        hidden = shown == "<str() not shown: a class written in Python defines __str__>"
        want_msg = (None, shown[1:-1]) if hidden else (shown, None)
        got_msg = (exc.get("message"), exc.get("message_error"))
        if got_msg != want_msg:
            problems.append("%s: thread %s (%s): message %r, expected %r"
                            % (what, th["thread_id"], th.get("name"), got_msg, want_msg))
    if problems:
        raise AssertionError("\n".join(problems[:6]))


def case(py):
    def run():
        with Target(py, "tracebacks") as t:
            with t.stopped():
                n = check_text(t.truth, cli("bt", "--locals", t.pid), "CLI live")
                check_json(t.truth, json.loads(cli("bt", "--locals", "--json", t.pid)),
                           "CLI live JSON")
            core = t.gcore()
            check_text(t.truth, cli("bt", "--locals", "--cwd", t.workdir, core), "CLI core")
            check_json(t.truth, json.loads(cli("bt", "--locals", "--json", "--cwd", t.workdir,
                                               core)), "CLI core JSON")
            for debugger, kind in (("gdb", "core"), ("lldb", "live")):
                what = "%s %s" % (debugger, kind)
                cmds = ["py-bt --all --locals" + (" --cwd " + t.workdir if kind == "core"
                                                  else "")]
                rc, outs, err = run_debugger(debugger, target_args(debugger, kind, t, core),
                                             cmds)
                # (the outputs hold tracebacks of the target's: compared exactly below)
                no_traceback(what, err)
                check_text(t.truth, outs[0], what)
        # A kernel core of the same target, crashed by a thread of its own: what the kernel
        # wrote (not gdb) must give the same text.
        with Target(py, "tracebacks", mode="crash") as k:
            kcore = k.crash_core()
            check_text(k.truth, cli("bt", "--locals", "--cwd", k.workdir, kcore),
                       "CLI kernel core")
            check_json(k.truth, json.loads(cli("bt", "--locals", "--json", "--cwd", k.workdir,
                                               kcore)), "CLI kernel core JSON")
        print("    %s: %d tracebacks, 5 ways" % (py.label, n))
    return run


def main():
    if not os.access(CLI, os.X_OK):
        print("build/pyunwind is missing: run make first")
        print("test-tracebacks: 0 passed, 1 failed")
        return 1
    cases = [("%s/tracebacks" % py.label, case(py)) for py in selected()]
    return run_cases(cases, jobs=2, prefix="test-tracebacks")


if __name__ == "__main__":
    sys.exit(main())
