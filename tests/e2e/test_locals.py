#!/usr/bin/env python3
# test_locals - locals, thread names and handled exceptions, end to end: for every interpreter of
# the matrix, the values target (tests/targets/values.py) reports the locals of every frame
# (name, kind, type, address, repr() through frame.f_locals), each thread's name and what
# sys.exc_info() gives in it; pyunwind's `bt --locals --json` must say the same, field by field,
# on a live process, a gdb core and a kernel crash core. Huge values (1 MB str, 100,000 items,
# 1,000-deep nesting, a 100,000-digit int) must come out bounded and fast. The same through gdb
# and lldb (`py-bt --all --locals --json` on the live process, the gdb core and the kernel core;
# one debugger session per source, sharing the CLI's targets), and the text of py-locals and
# py-print in both debuggers. Both cores are also read from memory alone (none of the
# interpreter's files): builtin types are then known by address, and every repr that does
# not need the interpreter's read-only data must still be exact.
#
#   tests/e2e/test_locals.py [-j N] [FILTER...]     (make test-locals)
import json
import os
import re
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, os.pardir))
sys.path.insert(0, HERE)
from harness import REPO, Target, compare, run_cases, selected  # noqa: E402
from test_adapters import run_debugger, parse_json, no_traceback, target_args  # noqa: E402

CLI = os.path.join(REPO, "build", "pyunwind")
# Bounds wide enough that no compared value is cut (the huge ones are not compared).
WIDE = ["--max-depth", "64", "--max-items", "20000", "--max-chars", "200000",
        "--max-digits", "5000", "--max-repr", "4000000"]
# Read from memory alone, these types' reprs may need text only the interpreter's files hold
# (the tp_name of a static type no builtin name gives): they are exact or say so
# (`<unreadable ...>`); then only their kind and address are compared. A builtin function of
# the builtins module (`len`) is not among them: the module's own binding names it.
NEEDS_FILES = ("lock", "frame", "code", "generator", "coroutine", "async_generator", "cell",
               "method", "instancemethod")
HUGE_SECONDS = 5.0      # bt --locals with default bounds, huge values included
DEFAULT_REPR_MAX = 4096 + 64


def cli(*args, **kw):
    timeout = kw.get("timeout", 120)
    try:
        p = subprocess.run([CLI] + [str(a) for a in args], capture_output=True, timeout=timeout,
                           stdin=subprocess.DEVNULL)
    except subprocess.TimeoutExpired:
        raise AssertionError("pyunwind %s: no answer within %ds" % (" ".join(map(str, args)),
                                                                     timeout))
    out = p.stdout.decode("utf-8", "strict")
    if p.returncode != 0:
        raise AssertionError("pyunwind %s: status %d: %s" % (" ".join(map(str, args)),
                                                              p.returncode,
                                                              p.stderr.decode()[-2000:]))
    return out


def values_problems(truth, doc, limit=20, needs_files=()):
    """Mismatches of thread names, exceptions and locals between the truth and a document.
    Locals of a type in @needs_files must be marked unreadable; their repr and type are not
    compared."""
    out = []
    got = dict((t.get("thread_id"), t) for t in doc.get("threads", []))
    for tt in truth["threads"]:
        gt = got.get(tt["thread_id"])
        who = "thread %s" % tt.get("name")
        if gt is None:
            continue  # compare() reports missing threads
        if gt.get("name") != tt.get("name"):
            out.append("%s: name %r" % (who, gt.get("name")))
        if "exception" in tt:
            te, ge = tt["exception"], gt.get("exception")
            if (te is None) != (ge is None):
                out.append("%s: exception %r, truth %r" % (who, ge, te))
            elif te is not None:
                for k in ("type", "address", "repr"):
                    if te[k] is not None and ge.get(k) != te[k]:
                        out.append("%s: exception %s %r, truth %r" % (who, k, ge.get(k), te[k]))
        gframes = [f for f in gt.get("frames", []) if f.get("kind") == "python"]
        for i, (tf, gf) in enumerate(zip(tt["frames"], gframes)):
            if "locals" not in tf:
                continue
            where = "%s frame #%d (%s)" % (who, i, tf["function"])
            if "locals" not in gf:
                out.append("%s: no locals (%s)" % (where, gf.get("locals_error")))
                continue
            tn = [l["name"] for l in tf["locals"]]
            gn = [l["name"] for l in gf["locals"]]
            if tn != gn:
                out.append("%s: locals %s, truth %s" % (where, gn, tn))
                continue
            for tl, gl in zip(tf["locals"], gf["locals"]):
                if tl["type"] in needs_files and (gl.get("repr"), gl.get("type")) != (
                        tl["repr"] or gl.get("repr"), tl["type"]):
                    if tl["repr"] and not (gl.get("repr") or "").startswith("<unreadable "):
                        out.append("%s: %s is %r without the files" % (where, tl["name"],
                                                                      gl.get("repr")))
                    tl = dict(tl, type=gl.get("type"), repr=None)
                for k in ("kind", "type", "address", "repr"):
                    if tl[k] is None and k == "repr":
                        continue
                    if gl.get(k) != tl[k]:
                        out.append("%s: %s %s is %r, truth %r"
                                   % (where, tl["name"], k, gl.get(k), tl[k]))
                if gl.get("truncated") and tl["repr"] is not None:
                    out.append("%s: %s truncated" % (where, tl["name"]))
    return out[:limit] + (["... %d more" % (len(out) - limit)] if len(out) > limit else [])


def check_doc(truth, doc, what, needs_files=()):
    problems = compare(truth, doc) + values_problems(truth, doc, needs_files=needs_files)
    if problems:
        raise AssertionError("%s: %d mismatch(es):\n  %s" % (what, len(problems),
                                                            "\n  ".join(problems)))


def counts(truth):
    """(frames with locals compared, locals compared, reprs compared) - printed per case."""
    fr = [f for t in truth["threads"] for f in t["frames"] if "locals" in f]
    ls = [l for f in fr for l in f["locals"]]
    return len(fr), len(ls), len([l for l in ls if l["repr"] is not None])


def check_huge(truth, target):
    """Default bounds: the huge values print cut and marked, and the whole dump is fast."""
    t0 = time.time()
    doc = json.loads(cli("bt", "--json", "--locals", target))
    took = time.time() - t0
    assert took < HUGE_SECONDS, "bt --locals took %.1fs with huge values" % took
    huge = [f for t in doc["threads"] for f in t["frames"]
            if f.get("function") == "huge_values"]
    assert len(huge) == 1, "no huge_values frame"
    seen = dict((l["name"], l) for l in huge[0]["locals"])
    for name in ("big_str", "big_list", "deep", "big_int"):
        l = seen.get(name)
        assert l is not None, "huge local %s missing" % name
        assert len(l["repr"]) <= DEFAULT_REPR_MAX, "%s: %d bytes" % (name, len(l["repr"]))
        if name != "big_int":  # an int past the digit bound is a short form, not a cut
            assert l.get("truncated"), "%s not marked truncated: %s" % (name, l["repr"][:80])


def check_memory_only(truth, core, what):
    """@core read with none of the interpreter's files (every path the core names mapped to an
    empty directory)."""
    empty = tempfile.mkdtemp(prefix="pyu-locals-empty-")
    try:
        doc = json.loads(cli("bt", "--json", "--locals", "--path-map", "/=" + empty,
                             *(WIDE + [core])))
    finally:
        os.rmdir(empty)
    if not any("read from memory alone" in n for n in doc.get("notes", [])):
        raise AssertionError("%s: not read from memory alone: %s" % (what, doc.get("notes")))
    for th in doc["threads"]:
        for f in th["frames"]:
            f.pop("source", None)
    check_doc(truth, doc, what, needs_files=NEEDS_FILES)


def debugger_json(t, debugger, kind, core, text=False):
    """One debugger session on @t (live) or @core: py-bt --all --locals --json, and the text
    commands when @text; returns the text commands' outputs."""
    what = "%s %s" % (debugger, kind)
    # The text commands read the main thread: selected by the debugger's thread 1 (the
    # process's first thread in both), not left to whichever thread the attach stopped in.
    commands = ["py-bt --all --locals --json " + " ".join(WIDE)] + (
        [SELECT_MAIN[debugger]] + TEXT_COMMANDS if text else [])
    rc, outs, err = run_debugger(debugger, target_args(debugger, kind, t, core), commands)
    no_traceback(what, err, *outs)
    check_doc(t.truth, parse_json(outs[0], what), what)
    if text:
        check_text_commands(what, t, outs[2:], err)
    return outs[2:6]


def cli_case(py):
    def run():
        with Target(py, "values") as t:
            with t.stopped():
                doc = json.loads(cli("bt", "--json", "--locals", *(WIDE + [t.pid])))
                check_doc(t.truth, doc, "live")
                check_huge(t.truth, t.pid)
            core = t.gcore()
            check_doc(t.truth, json.loads(cli("bt", "--json", "--locals", *(WIDE + [core]))),
                      "gdb core")
            check_memory_only(t.truth, core, "gdb core, memory alone")
            texts = {}
            for debugger in ("gdb", "lldb"):
                for kind in ("live", "core"):
                    texts[debugger, kind] = debugger_json(t, debugger, kind,
                                                          core if kind == "core" else None,
                                                          text=True)
            if texts["gdb", "live"] != texts["lldb", "live"]:
                raise AssertionError("gdb and lldb print different text:\n%s\n%s"
                                     % (texts["gdb", "live"], texts["lldb", "live"]))
            print("    %s: %d frames, %d locals, %d reprs compared" % ((py.label,) + counts(
                t.truth)))
    return run


def crash_case(py):
    def run():
        with Target(py, "values", mode="crash") as t:
            core = t.crash_core()
            doc = json.loads(cli("bt", "--json", "--locals", *(WIDE + [core, t.executable])))
            check_doc(t.truth, doc, "kernel core")
            check_memory_only(t.truth, core, "kernel core, memory alone")
            for debugger in ("gdb", "lldb"):
                debugger_json(t, debugger, "crash", core)
    return run


def main_frame(truth):
    main = [th for th in truth["threads"] if th["thread_id"] == truth["main_thread_id"]][0]
    return main["frames"][1]  # #0 park, #1 main


SELECT_MAIN = {"gdb": "thread 1", "lldb": "thread select 1"}
TEXT_COMMANDS = ["py-locals 1", "py-up", "py-print mode", "py-print os.sep", "py-print len",
                 "py-print no_such_name", "py-print mode.no_such_attr", "py-locals 99"]


def check_text_commands(what, t, outs, err):
    """py-locals and py-print in the debugger's selected thread (the main thread)."""
    main = main_frame(t.truth)
    lines = [line.split(" = ", 1) for line in outs[0].splitlines()]
    names = [l["name"] for l in main["locals"]]
    assert [p[0] for p in lines] == names, "%s py-locals 1:\n%s\nwant names %s" % (
        what, outs[0], names)
    for (name, repr_), l in zip(lines, main["locals"]):
        assert l["repr"] is None or repr_ == l["repr"], "%s py-locals 1: %s = %s, want %s" % (
            what, name, repr_, l["repr"])
    assert outs[2].strip() == "local 'mode' = 'park'", "%s: %r" % (what, outs[2])
    assert outs[3].strip() == "global 'os'.sep (module) = '/'", "%s: %r" % (what, outs[3])
    assert outs[4].strip() == "builtin 'len' = <built-in function len>", "%s: %r" % (what,
                                                                                  outs[4])
    errors = outs[5] + outs[6] + outs[7] + err
    for msg in ("no such name 'no_such_name'", "no attribute 'no_such_attr'",
                "no Python frame #99"):
        assert msg in errors, "%s: error %r not shown:\n%s" % (what, msg, errors[-2000:])


def cases():
    out = []
    for py in selected():
        out.append(("values %s" % py.label, cli_case(py)))
        out.append(("values-crash %s" % py.label, crash_case(py)))
    return out


if __name__ == "__main__":
    sys.exit(run_cases(cases(), prefix="test-locals"))
