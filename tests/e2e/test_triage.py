#!/usr/bin/env python3
# test_triage - `pyunwind triage` end to end: a kernel crash core of the rich scenario from every
# interpreter of the matrix (made once, in parallel, shared by every case), each core's JSON
# document against the target's own truth (crashing thread, signal, fault address, frames, and
# the signature recomputed here from the truth by the documented rule); then a directory of
# those cores with compressed (systemd-coredump-style) copies, a truncated one, a core of a
# program that is not Python and a file that is no core: JSON Lines, the text table, worker
# counts, progress only on a terminal, exit status, usage errors. Cores no crash wrote: gdb's
# gcore of the running scenario and of it stopped by SIGSTOP say no crash and group apart from
# a kernel core of the same stopped process ended by SIGABRT, which is a crash.
#
#   tests/e2e/test_triage.py [-j N] [FILTER...]     (make test-triage)
#
# PYUNWIND_PYTHONS narrows the matrix. Ends with "test-triage: N passed, N failed".
import json
import os
import pty
import resource
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from harness import REPO, Target, HarnessError, compare, run_cases, selected  # noqa: E402

CLI = os.path.join(REPO, "build", "pyunwind")
FIELDS = ("function", "qualname", "file", "line", "end_line", "column", "end_column",
          "instruction_offset")
SIGSEGV = 11
SEGV_MAPERR = 1


def triage(*args, stderr=subprocess.PIPE, timeout=300):
    """Runs `pyunwind triage ARGS`; returns (status, stdout, stderr)."""
    try:
        p = subprocess.run([CLI, "triage"] + [str(a) for a in args], stdout=subprocess.PIPE,
                           stderr=stderr, timeout=timeout, stdin=subprocess.DEVNULL)
    except subprocess.TimeoutExpired:
        raise AssertionError("pyunwind triage %s: no answer within %ds" % (args, timeout))
    if p.returncode < 0:
        raise AssertionError("pyunwind triage died of signal %d" % -p.returncode)
    return (p.returncode, p.stdout.decode("utf-8", "strict"),
            (p.stderr or b"").decode("utf-8", "replace"))


def json_lines(out):
    docs = []
    for i, line in enumerate(out.splitlines()):
        try:
            docs.append(json.loads(line))
        except ValueError as e:
            raise AssertionError("line %d of the output is not JSON (%s): %r" % (i + 1, e, line))
    return docs


def fnv1a(h, data):
    for b in data:
        h = ((h ^ b) * 0x100000001b3) & 0xffffffffffffffff
    return h


def expected_signature(frames):
    """The README's rule, from the truth: "QUALNAME (BASENAME)" innermost first (the function
    name where there is no qualname), a run of equal entries kept once, FNV-1a 64."""
    entries = []
    for f in frames:
        e = "%s (%s)" % (f.get("qualname") or f["function"], os.path.basename(f["file"]))
        if not entries or entries[-1] != e:
            entries.append(e)
    h = fnv1a(0xcbf29ce484222325, b"pyunwind-signature-1\n")
    for e in entries:
        h = fnv1a(h, e.encode("utf-8") + b"\n")
    return "%016x" % h, entries


# ---- the shared cores ------------------------------------------------------------------------

WORK = tempfile.mkdtemp(prefix="pyu-triage-")
CORES = {}    # label -> (core path, truth)
SETUP = {}    # label -> why there is no core


def make_core(py):
    try:
        with Target(py, "scenario", mode="crash") as t:
            src = t.crash_core()
            dst = os.path.join(WORK, "core." + py.label)
            shutil.move(src, dst)
            CORES[py.label] = (dst, t.truth)
    except HarnessError as e:
        SETUP[py.label] = str(e)


def foreign_core():
    """A kernel core of a program that is not Python (sleep), or None when none appeared."""
    d = tempfile.mkdtemp(dir=WORK)

    def limits():
        resource.setrlimit(resource.RLIMIT_CORE, (resource.RLIM_INFINITY,
                                                  resource.RLIM_INFINITY))
    p = subprocess.Popen(["sleep", "600"], cwd=d, preexec_fn=limits)
    time.sleep(0.05)  # not synchronisation: the signal kills it whether or not sleep started
    p.send_signal(signal.SIGSEGV)
    p.wait()
    deadline, last = time.time() + 30, None
    while time.time() < deadline:  # the kernel has written it when its size stops changing
        for n in ("core", "core.%d" % p.pid):
            path = os.path.join(d, n)
            if os.path.exists(path):
                size = os.path.getsize(path)
                if size > 0 and size == last:
                    return path
                last = size
        time.sleep(0.1)
    return None


# ---- cases -------------------------------------------------------------------------------------

def check_doc(doc, truth, path, what):
    problems = []
    if doc.get("pyunwind") != 1 or doc.get("path") != path or doc.get("ok") is not True:
        problems.append("header: pyunwind %r, path %r, ok %r" % (doc.get("pyunwind"),
                                                                 doc.get("path"), doc.get("ok")))
    for key in ("version", "hexversion", "debug_build"):
        if doc.get("python", {}).get(key) != truth["python"][key]:
            problems.append("python.%s is %r, truth %r" % (key, doc["python"].get(key),
                                                           truth["python"][key]))
    crashing = [t for t in truth["threads"] if t["thread_id"] == truth["crash_thread_id"]]
    assert len(crashing) == 1, "%s: the truth names no crashing thread" % what
    tt = crashing[0]
    crash = doc.get("crash", {})
    want = {"thread_id": tt["thread_id"], "python_thread": True, "signal": SIGSEGV,
            "signal_name": "SIGSEGV", "signal_code": SEGV_MAPERR, "fault_address": "0x0"}
    if tt.get("native_thread_id") is not None:
        want["native_thread_id"] = tt["native_thread_id"]
    for k, v in want.items():
        if crash.get(k) != v:
            problems.append("crash.%s is %r, want %r" % (k, crash.get(k), v))
    if doc.get("thread_count") != len(truth["threads"]):
        problems.append("thread_count %r, truth has %d threads"
                        % (doc.get("thread_count"), len(truth["threads"])))
    problems += compare({"threads": [tt]},
                        {"threads": [{"thread_id": tt["thread_id"], "frames": doc["frames"]}]},
                        fields=FIELDS)
    sig, entries = expected_signature(tt["frames"])
    if doc.get("signature_frames") != entries:
        problems.append("signature_frames %r, want %r" % (doc.get("signature_frames"), entries))
    if doc.get("signature") != sig:
        problems.append("signature %r, want %r" % (doc.get("signature"), sig))
    if problems:
        raise AssertionError("%s:\n%s" % (what, "\n".join(problems[:12])))


def core_case(py):
    def run():
        if py.label in SETUP:
            raise AssertionError("no crash core: " + SETUP[py.label])
        path, truth = CORES[py.label]
        rc, out, err = triage("--json", path)
        assert rc == 0, "status %d: %s" % (rc, err)
        assert err == "", "stderr is not a terminal, yet: %r" % err
        docs = json_lines(out)
        assert len(docs) == 1, "%d documents for one core" % len(docs)
        check_doc(docs[0], truth, path, py.label)
    return run


def build_directory():
    """DIR/ with every core hard-linked under a/ and b/, compressed copies under sd/ named as
    systemd-coredump names its files, a truncated copy, a non-Python core, a text file.
    Returns (dir, {path: ("ok", label) | ("fail", error name)}), paths in sorted order."""
    d = os.path.join(WORK, "dir")
    if os.path.isdir(d):
        shutil.rmtree(d)
    expect = {}
    labels = sorted(CORES)
    for sub in ("a", "b"):
        os.makedirs(os.path.join(d, sub))
        for label in labels:
            p = os.path.join(d, sub, "core." + label)
            os.link(CORES[label][0], p)
            expect[p] = ("ok", label)
    os.makedirs(os.path.join(d, "sd"))
    one = labels[0]
    for i, (tool, ext) in enumerate((("zstd", "zst"), ("gzip", "gz"), ("xz", "xz"))):
        p = os.path.join(d, "sd", "core.python3.1000.0123456789abcdef.%d.1700000000000000.%s"
                         % (4000 + i, ext))
        with open(CORES[one][0], "rb") as src, open(p, "wb") as dst:
            subprocess.check_call([tool, "-c", "-1"] + (["-T0"] if tool != "gzip" else []),
                                  stdin=src, stdout=dst)
        expect[p] = ("ok", one)
    p = os.path.join(d, "truncated.core")
    with open(CORES[one][0], "rb") as src, open(p, "wb") as dst:
        dst.write(src.read(200000))
    expect[p] = ("fail", None)
    fc = foreign_core()
    if fc:
        p = os.path.join(d, "sleep.core")
        shutil.move(fc, p)
        expect[p] = ("fail", "not_python")
    with open(os.path.join(d, "README.txt"), "w") as f:
        f.write("not a core: a directory search passes over it\n")
    return d, dict(sorted(expect.items())), fc is not None


DIR = {}


def directory():
    if "d" not in DIR:
        raise AssertionError("no directory of cores: %s" % DIR.get("why"))
    return DIR["d"]


def case_json_lines():
    d, expect, _ = directory()
    rc, out, err = triage("--json", "-j", "2", d)
    docs = json_lines(out)
    assert [x.get("path") for x in docs] == list(expect), \
        "paths in this order:\n%s\nwant:\n%s" % ([x.get("path") for x in docs], list(expect))
    assert rc == 1, "status %d with failed cores (want 1)" % rc
    assert err == "", "stderr: %r" % err
    for doc in docs:
        kind, what = expect[doc["path"]]
        if kind == "ok":
            path, truth = CORES[what]
            check_doc(doc, truth, doc["path"], doc["path"])
            assert "exception" in doc, "%s: no exception key" % doc["path"]
        else:
            e = doc.get("error") or {}
            assert doc.get("ok") is False and isinstance(e.get("code"), int) and \
                e.get("message"), "%s: want an error row, got %r" % (doc["path"], doc)
            if what:
                assert e.get("name") == what, "%s: error %r, want %s" % (doc["path"], e, what)
    rc1, out1, _ = triage("--json", "-j", "1", d)
    assert (rc1, out1) == (rc, out), "-j 1 and -j 2 differ"


def case_table():
    d, expect, _ = directory()
    rc, out, err = triage("-j", "2", d)
    assert rc == 1 and err == "", "status %d, stderr %r" % (rc, err)
    _, jout, _ = triage("--json", d)
    docs = json_lines(jout)
    groups = {}
    for doc in docs:
        if doc["ok"]:
            groups.setdefault(doc["signature"], []).append(doc)
    failed = [doc for doc in docs if not doc["ok"]]
    lines = out.splitlines()
    head = "%d cores: %d read in %d signature group%s, %d failed" % (
        len(docs), len(docs) - len(failed), len(groups), "" if len(groups) == 1 else "s",
        len(failed))
    assert lines[0] == head, "first line %r, want %r" % (lines[0], head)
    rows = [l for l in lines if l[:7].strip().isdigit()]
    assert len(rows) == len(groups), "%d table rows for %d groups:\n%s" % (len(rows), len(groups),
                                                                         out)
    counts = []
    for row in rows:
        w = row.split()
        count, sig, example = int(w[0]), w[1], w[-1]
        members = groups.get(sig)
        assert members, "row names signature %s, which no core has" % sig
        assert count == len(members), "%s: count %d, %d cores have it" % (sig, count,
                                                                          len(members))
        assert example == members[0]["path"], "%s: example %s, want the first, %s" % (
            sig, example, members[0]["path"])
        top = members[0]["signature_frames"][0]
        assert top[:20] in row, "%s: top frame %r not in %r" % (sig, top, row)
        counts.append(count)
    assert counts == sorted(counts, reverse=True), "groups not most frequent first: %s" % counts
    for doc in failed:
        assert "  %s: %s" % (doc["path"], doc["error"]["message"]) in lines, \
            "no failure row for %s" % doc["path"]
    good = [p for p, (k, _) in expect.items() if k == "ok"][:3]
    rc, out, err = triage(*good)
    assert rc == 0, "status %d for good cores only:\n%s" % (rc, out)


def case_progress():
    d, expect, _ = directory()
    master, slave = pty.openpty()
    try:
        rc, out, _ = triage("-j", "2", d, stderr=slave)
    finally:
        os.close(slave)
    chunks = []
    while True:
        try:
            b = os.read(master, 65536)
        except OSError:
            break
        if not b:
            break
        chunks.append(b)
    os.close(master)
    text = b"".join(chunks).decode("utf-8", "replace")
    n = len(expect)
    assert "%d/%d cores" % (n, n) in text and "cores/s" in text and "ETA" in text, \
        "no progress on a terminal: %r" % text[-300:]
    assert "cores/s" not in out, "progress on stdout"


EXC_PROGRAM = """import ctypes
def load():
    try:
        raise ValueError("bad record 42")
    except ValueError:
        ctypes.memset(0, 0, 1)
load()
"""


def case_exception(py):
    """A crash inside an except block: the triage document names the exception being handled,
    as bt --json does for that thread, and as the program raised it."""
    def run_case():
        d = tempfile.mkdtemp(dir=WORK)
        prog = os.path.join(d, "exc.py")
        with open(prog, "w") as f:
            f.write(EXC_PROGRAM)

        def limits():
            resource.setrlimit(resource.RLIMIT_CORE, (resource.RLIM_INFINITY,
                                                      resource.RLIM_INFINITY))
        p = subprocess.run([py.path, prog], cwd=d, preexec_fn=limits, capture_output=True,
                           timeout=120)
        assert p.returncode == -signal.SIGSEGV, "exc.py ended with %s" % p.returncode
        deadline, last, core = time.time() + 30, None, None
        while time.time() < deadline and core is None:
            for n in os.listdir(d):
                if n.startswith("core"):
                    size = os.path.getsize(os.path.join(d, n))
                    if size > 0 and size == last:
                        core = os.path.join(d, n)
                    last = size
            time.sleep(0.1)
        assert core, "no core of exc.py"
        rc, out, err = triage("--json", core)
        doc = json_lines(out)[0]
        exc = doc.get("exception") or {}
        assert exc.get("type") == "ValueError" and \
            exc.get("repr") == "ValueError('bad record 42')", "exception %r" % exc
        assert doc["signature_frames"] == ["load (exc.py)", "<module> (exc.py)"], \
            doc["signature_frames"]
        bt = json.loads(subprocess.check_output([CLI, "bt", "--json", core]))
        same = [t for t in bt["threads"] if t["thread_id"] == doc["crash"]["thread_id"]]
        assert same and same[0].get("exception") == doc["exception"], \
            "bt --json says %r" % (same and same[0].get("exception"))
    return run_case


def kernel_core_of_stopped(t):
    """Stops target @t with SIGSTOP, queues SIGABRT, lets it go on: the kernel dumps the
    process a signal ended after a stop. Returns the core's path."""
    os.kill(t.pid, signal.SIGSTOP)
    os.kill(t.pid, signal.SIGABRT)
    os.kill(t.pid, signal.SIGCONT)
    try:
        rc = t.proc.wait(timeout=120)
    except subprocess.TimeoutExpired:
        raise AssertionError("the stopped target did not die of SIGABRT")
    assert rc == -signal.SIGABRT, "the target ended with status %s, not SIGABRT" % rc
    deadline, last = time.time() + 30, None
    while time.time() < deadline:
        for n in ("core", "core.%d" % t.pid):
            p = os.path.join(t.workdir, n)
            if os.path.exists(p):
                size = os.path.getsize(p)
                if size > 0 and size == last:
                    return p
                last = size
        time.sleep(0.1)
    raise AssertionError("no kernel core of the SIGABRT'd target in %s (core_pattern %r)"
                         % (t.workdir, open("/proc/sys/kernel/core_pattern").read().strip()))


def case_debugger_cores(py):
    """gdb's gcore of a running process and of one stopped by SIGSTOP record the stop of the
    attach (SIGSTOP, si_code SI_KERNEL), not a crash: triage says no crash, written by a
    debugger, no signal, the stack of a thread the target reports; bt shows no thread with a
    signal. A kernel core of that process, stopped and then ended by SIGABRT, is a crash.
    The text table lists the gcores in their own section, never in a group with a crash."""
    def run_case():
        d = tempfile.mkdtemp(dir=WORK)
        with Target(py, "scenario") as t:
            running = os.path.join(d, "gcore.running")
            shutil.move(t.gcore(), running)
            os.kill(t.pid, signal.SIGSTOP)
            try:
                stopped = os.path.join(d, "gcore.stopped")
                shutil.move(t.gcore(), stopped)
            finally:
                os.kill(t.pid, signal.SIGCONT)
            truth = t.truth
            kernel = os.path.join(d, "core.sigabrt")
            shutil.move(kernel_core_of_stopped(t), kernel)
        rc, out, err = triage("--json", running, stopped, kernel)
        assert rc == 0, "status %d: %s" % (rc, err)
        docs = json_lines(out)
        assert [x.get("path") for x in docs] == [running, stopped, kernel], out
        by_id = dict((th["thread_id"], th) for th in truth["threads"])
        for doc in docs[:2]:
            crash = doc.get("crash", {})
            want = {"crashed": False, "written_by": "debugger", "signal": None,
                    "signal_name": None, "signal_code": None, "fault_address": None,
                    "python_thread": True}
            bad = ["crash.%s is %r, want %r" % (k, crash.get(k), v) for k, v in want.items()
                   if crash.get(k) != v]
            th = by_id.get(crash.get("thread_id"))
            if th is None:
                bad.append("crash.thread_id %r is no thread of the target" % crash.get("thread_id"))
            else:
                bad += compare({"threads": [th]}, {"threads": [
                    {"thread_id": th["thread_id"], "frames": doc["frames"]}]}, fields=FIELDS)
                sig, entries = expected_signature(th["frames"])
                if (doc.get("signature"), doc.get("signature_frames")) != (sig, entries):
                    bad.append("signature %r %r, want %r %r" % (
                        doc.get("signature"), doc.get("signature_frames"), sig, entries))
            assert not bad, "%s:\n%s" % (doc["path"], "\n".join(bad[:12]))
            bt = json.loads(subprocess.check_output([CLI, "bt", "--json", doc["path"]],
                                                    timeout=300))
            signalled = [(x["thread_id"], x.get("activity", x).get("signal"))
                         for x in bt["threads"] if x.get("activity", x).get("signal")]
            assert not signalled, "%s: bt shows threads with a signal: %r" % (doc["path"],
                                                                          signalled)
        crash = docs[2].get("crash", {})
        want = {"crashed": True, "written_by": "kernel", "signal": signal.SIGABRT,
                "signal_name": "SIGABRT", "fault_address": None}
        bad = ["crash.%s is %r, want %r" % (k, crash.get(k), v) for k, v in want.items()
               if crash.get(k) != v]
        assert not bad, "%s:\n%s" % (kernel, "\n".join(bad))
        rc, out, err = triage(running, stopped, kernel)
        assert rc == 0, "status %d: %s" % (rc, err)
        lines = out.splitlines()
        assert lines[0].endswith("; 2 with no crash (written by a debugger)"), lines[0]
        split = [i for i, l in enumerate(lines) if l.startswith("No crash:")]
        assert len(split) == 1, "no single 'No crash:' section:\n%s" % out
        crashes = [l for l in lines[:split[0]] if l[:7].strip().isdigit()]
        quiet = [l for l in lines[split[0]:] if l[:7].strip().isdigit()]
        assert len(crashes) == 1 and crashes[0].split()[2] == "SIGABRT" and \
            crashes[0].split()[-1] == kernel, "the crash rows:\n%s" % out
        assert quiet and all(l.split()[2] == "none" for l in quiet) and \
            sum(int(l.split()[0]) for l in quiet) == 2 and \
            set(l.split()[-1] for l in quiet) <= {running, stopped}, "the no-crash rows:\n%s" % out
    return run_case


def case_usage():
    for args, what in ((["-j", "0", "x"], "-j 0"), ([], "no argument"),
                       (["--bogus", "x"], "unknown option"), (["--path-map", "x"], "bad map")):
        rc, out, err = triage(*args)
        assert rc == 2 and out == "" and "usage: pyunwind triage" in err, \
            "%s: status %d, stdout %r, stderr %r" % (what, rc, out, err[:200])
    missing = os.path.join(WORK, "no-such-core")
    rc, out, err = triage("--json", missing)
    docs = json_lines(out)
    assert rc == 1 and len(docs) == 1 and docs[0]["error"]["name"] == "io", \
        "missing file: status %d, %r" % (rc, out)
    text = os.path.join(WORK, "not-a-core.txt")
    with open(text, "w") as f:
        f.write("text\n")
    rc, out, err = triage(text)
    assert rc == 1 and "not-a-core.txt: " in out, "a named non-core is a failed row: %r" % out
    rc, out, err = triage("--help")
    assert rc == 0 and "usage: pyunwind triage" in out


def main():
    pys = selected()
    with ThreadPoolExecutor(max_workers=2) as pool:
        list(pool.map(make_core, pys))
    cases = [("triage " + py.label, core_case(py)) for py in pys]
    if CORES:
        cases += [("triage directory --json", case_json_lines),
                  ("triage directory table", case_table),
                  ("triage progress on a terminal", case_progress)]
        try:
            DIR["d"] = build_directory()
        except (OSError, subprocess.CalledProcessError) as e:
            DIR["why"] = str(e)
    py3 = [py for py in pys if py.version.split(".")[0] == "3"]
    if py3:
        cases.append(("triage exception being handled " + py3[-1].label, case_exception(py3[-1])))
        cases.append(("triage debugger cores: no crash " + py3[-1].label,
                      case_debugger_cores(py3[-1])))
    if pys and (not py3 or pys[0] is not py3[-1]):
        cases.append(("triage debugger cores: no crash " + pys[0].label,
                      case_debugger_cores(pys[0])))
    cases.append(("triage usage and missing files", case_usage))
    try:
        return run_cases(cases, prefix="test-triage")
    finally:
        if not os.environ.get("PYUNWIND_KEEP"):
            shutil.rmtree(WORK, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
