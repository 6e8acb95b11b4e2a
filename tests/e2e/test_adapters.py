#!/usr/bin/env python3
# test_adapters - the gdb and lldb commands end to end: real `gdb -batch` and `lldb -b` on every
# interpreter of the matrix, on a live process, a gdb core and a kernel crash core, compared with
# what the target itself reported; golden text for a small program; every command; the error
# cases; the debugger-read path (gdbserver, and lldb forced onto its own reads).
#
#   tests/e2e/test_adapters.py [-j N] [FILTER...]
#   PYUNWIND_UPDATE_GOLDEN=1 tests/e2e/test_adapters.py golden    (rewrites tests/e2e/golden/
#   from gdb's output; its golden cases fail as not checked - check in a second run)
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), os.pardir))
from harness import (Target, HarnessError, compare, interpreters, run_cases,  # noqa: E402
                     gdb_batch, lldb_batch, wait_asleep, core_pattern, REPO, shared)

GOLDEN = os.path.join(REPO, "tests", "e2e", "golden")
SEP = "@@pyunwind-next-command@@"
GDB_SEP = "echo " + SEP + "\\n"
# lldb's separator is a command whose result carries the marker, so it travels through the same
# ordered stream as every command's own result (a `script print` goes through Python's stdout,
# which under load can land out of order with lldb's output).
LLDB_SEP = "pyu-test-sep"
LLDB_SEP_SETUP = [
    "script def _pyu_test_sep(debugger, command, result, internal_dict): "
    "result.PutCString('%s' + '%s')" % (SEP[:8], SEP[8:]),
    "command script add -f _pyu_test_sep pyu-test-sep",
]
TRACEBACK = "Traceback (most recent call last)"


# ---- running commands ---------------------------------------------------------------------

def gdb_outputs(target_args, commands, env=None, extra=(), timeout=120):
    """Runs @commands in one gdb; returns (status, [output per command], stderr)."""
    cmds = list(extra)
    for c in commands:
        cmds += [GDB_SEP, c]
    cmds.append(GDB_SEP)
    rc, out, err = gdb_batch(target_args, cmds, env=_reads_env(env), timeout=timeout)
    parts = out.split(SEP + "\n")
    if len(parts) < len(commands) + 2:
        raise AssertionError("gdb did not run every command (status %d):\n%s\n%s"
                             % (rc, out[-3000:], err[-3000:]))
    return rc, parts[1:len(commands) + 1], err


def lldb_outputs(target_args, commands, env=None, timeout=120):
    # lldb -b stops at the first command that fails; a sourced file with -e false does not, so
    # error cases can be followed by more commands.
    # lldb's stop reports (which may arrive late, inside a later command's output) kept to
    # their two header lines: no disassembly or source around the stop.
    cmds = LLDB_SEP_SETUP + ["settings set stop-disassembly-display never",
            "settings set stop-line-count-before 0", "settings set stop-line-count-after 0"]
    for c in commands:
        cmds += [LLDB_SEP, c]
    cmds.append(LLDB_SEP)
    fd, script = tempfile.mkstemp(prefix="pyu-lldb-", suffix=".cmds")
    with os.fdopen(fd, "w") as f:
        f.write("\n".join(cmds) + "\n")
    try:
        rc, out, err = lldb_batch(target_args, ["command source -e false -s false " + script],
                                  env=_reads_env(env), timeout=timeout)
    finally:
        os.unlink(script)
    parts = re.split(r"(?m)^" + re.escape(SEP) + r"\n", out)
    if len(parts) < len(commands) + 2:
        raise AssertionError("lldb did not run every command (status %d):\n%s\n%s"
                             % (rc, out[-3000:], err[-3000:]))
    res = []
    for p in parts[1:len(commands) + 1]:
        # Drop lldb's echo of the separator and of the command itself, and its asynchronous
        # stop reports, which may land in a later command's output (issue 14).
        lines = [l for l in p.splitlines(True) if not l.startswith("(lldb) ")]
        res.append(strip_stop_reports("".join(lines)))
    # lldb prints command errors on stderr ("error: ..."): keep them for the checks.
    return rc, res, err


def _reads_env(env):
    """The environment changes for one debugger: @env, and PYUNWIND_READS unset unless @env
    sets it, so that a case that did not ask for debugger reads never gets them. Each child
    gets its own environment; os.environ is never changed (cases run concurrently)."""
    out = {"PYUNWIND_READS": None}
    out.update(env or {})
    return out


# lldb's report of a stop or a thread selection: "* thread #2, name = 'python3', stop reason =
# signal SIGSTOP" (or "  thread #2, ..."), then "    frame #0: 0x... lib`func at file:line" and,
# when lldb has the source, a few numbered source lines.
_STOP_REPORT = re.compile(r"(?m)^[* ] thread #\d+, .*stop reason = .*\n"
                          r"(?:    frame #\d+: .*\n(?:(?:-> | {3})\s*\d+\s.*\n|\s*\n)*)?")


def strip_stop_reports(text):
    """@text without lldb's own stop reports (they are not the plugin's output)."""
    return _STOP_REPORT.sub("", text)


def run_debugger(debugger, target_args, commands, env=None, timeout=120):
    if debugger == "gdb":
        return gdb_outputs(target_args, commands, env, timeout=timeout)
    return lldb_outputs(target_args, commands, env, timeout=timeout)


def parse_json(text, what):
    start = text.find("{")
    if start < 0:
        raise AssertionError("%s printed no JSON:\n%s" % (what, text[-2000:]))
    try:
        doc, end = json.JSONDecoder().raw_decode(text[start:])
    except ValueError as e:
        raise AssertionError("%s printed invalid JSON (%s):\n%s" % (what, e, text[-2000:]))
    if text[:start].strip():
        raise AssertionError("%s printed text before the JSON: %r" % (what, text[:start][:500]))
    return doc


def no_traceback(what, *texts):
    for t in texts:
        if TRACEBACK in t or "internal error" in t:
            raise AssertionError("%s showed a Python traceback / internal error:\n%s"
                                 % (what, t[-3000:]))


def target_args(debugger, kind, t, core=None):
    if kind == "live":
        return ["-p", str(t.pid)]
    if debugger == "gdb":
        return [t.executable, core]
    return ["-c", core, t.executable]


# ---- the matrix: JSON against the target's truth --------------------------------------------

# Where the core says the memory came from (its note "memory read from ..."): the adapter must
# read a local process or core file directly, and go through the debugger only when asked to
# or when there is nothing local to read (gdbserver).
READS = {"live": "the live process", "gcore": "the core file", "crash": "the core file",
         "debugger": "a read callback"}


def check_reads(what, doc, want):
    """@doc's notes say the memory was read from @want (a READS value)."""
    notes = [n for n in doc.get("notes", []) if n.startswith("memory read from ")]
    if notes != ["memory read from " + want]:
        raise AssertionError("%s: read through the wrong path: notes say %r, want 'memory "
                             "read from %s'" % (what, notes, want))


# A command that prints the kernel thread id of the debugger's selected thread: gdb prints the
# number; lldb's `thread info` says "thread #2: tid = 1234, ...".
SELECTED = {"gdb": "python print(gdb.selected_thread().ptid[1])", "lldb": "thread info"}


def selected_tid(debugger, text, what):
    if debugger == "lldb":
        m = re.search(r"(?m)^\*? ?thread #\d+: tid = (\d+)", text)
    else:
        m = re.search(r"(?m)^(\d+)$", text)
    if not m:
        raise AssertionError("%s: %r printed no thread id:\n%s" % (what, SELECTED[debugger],
                                                                   text[-1000:]))
    return int(m.group(1))


def check_stacks(debugger, kind, t, core=None, env=None):
    what = "%s %s" % (debugger, kind)
    reads = READS["debugger" if (env or {}).get("PYUNWIND_READS") == "debugger" else kind]
    rc, (all_json, before, one_json, after, text), err = run_debugger(
        debugger, target_args(debugger, kind, t, core),
        ["py-bt --all --json", SELECTED[debugger], "py-bt --json", SELECTED[debugger], "py-bt"],
        env)
    no_traceback(what, all_json, one_json, text, err)
    doc = parse_json(all_json, what + " py-bt --all --json")
    check_reads(what, doc, reads)
    truth = t.truth
    problems = compare(truth, doc)
    if problems:
        raise AssertionError("%s: py-bt --all --json differs from the target's truth:\n  %s"
                             % (what, "\n  ".join(problems)))
    if doc["python"]["hexversion"] != truth["python"]["hexversion"]:
        raise AssertionError("%s: hexversion %r, truth %r"
                             % (what, doc["python"]["hexversion"], truth["python"]["hexversion"]))
    # Without --all: the debugger's selected thread, as the debugger itself says right before
    # and after. In a crash core that is the crashing thread. After attaching it is usually the
    # main thread, but lldb picks among the threads its attach stopped, and under load it has
    # picked another one.
    one = parse_json(one_json, what + " py-bt --json")
    if len(one["threads"]) != 1:
        raise AssertionError("%s: py-bt --json gave %d threads" % (what, len(one["threads"])))
    tid = selected_tid(debugger, before, what)
    if selected_tid(debugger, after, what) != tid:
        raise AssertionError("%s: the debugger's selected thread changed from tid %d to %d "
                             "around py-bt --json:\n%s\n%s" % (what, tid, selected_tid(
                                 debugger, after, what), before, after))
    native = dict((th.get("native_thread_id"), th["thread_id"]) for th in truth["threads"])
    if tid not in native:
        raise AssertionError("%s: the debugger selected tid %d, which the truth does not list"
                             % (what, tid))
    want = native[tid]
    if kind == "crash" and want != truth.get("crash_thread_id"):
        raise AssertionError("%s: the debugger selected thread %s, not the crashing thread %s"
                             % (what, want, truth.get("crash_thread_id")))
    got = one["threads"][0]["thread_id"]
    if got != want:
        raise AssertionError("%s: py-bt picked thread %s, the selected thread is %s (tid %d)"
                             % (what, got, want, tid))
    sub = dict(truth, threads=[th for th in truth["threads"] if th["thread_id"] == want])
    problems = compare(sub, one)
    if problems:
        raise AssertionError("%s: py-bt --json differs:\n  %s" % (what, "\n  ".join(problems)))
    # The text form names the innermost frame of the selected thread with its line.
    f0 = sub["threads"][0]["frames"][0]
    name = f0.get("qualname") or f0["function"]
    if 'line %d, in %s' % (f0["line"], name) not in text.splitlines()[1 if text.startswith(
            "Thread") else 0] and 'line %d, in %s' % (f0["line"], name) not in text:
        raise AssertionError("%s: py-bt text does not show frame #0 (%s line %d):\n%s"
                             % (what, name, f0["line"], text[:2000]))


def target_of(py, program, mode="park"):
    """(key, make) of the target every case of (@py, @program, @mode) shares: the cases only
    read it (the debuggers attach one at a time, under its attach_lock), its gdb core and its
    kernel core are made once."""
    return ("adapters", py.label, program, mode), lambda: Target(py, program,
                                                                 mode=mode).__enter__()


def matrix_case(py, kind, debugger):
    key, make = target_of(py, "scenario", "crash" if kind == "crash" else "park")

    def run():
        with shared(key, make) as t:
            if kind == "crash":
                check_stacks(debugger, kind, t, t.crash_core_once())
            elif kind == "live":
                with t.attach_lock:
                    check_stacks(debugger, kind, t)
            else:
                check_stacks(debugger, kind, t, t.gcore_once())
    return run, [key]


# ---- every command, on the small sample program ---------------------------------------------

EXPECTED_TABLE = r"""
import dis, json, sys
path, name = sys.argv[1], sys.argv[2]
src = open(path).read()
def find(code):
    if code.co_name == name:
        return code
    for c in code.co_consts:
        if hasattr(c, "co_code"):
            r = find(c)
            if r is not None:
                return r
code = find(compile(src, path, "exec"))
out = []
if hasattr(code, "co_positions"):
    for i, p in enumerate(code.co_positions()):
        out.append([2 * i] + list(p))
elif hasattr(code, "co_lines"):
    for s, e, l in code.co_lines():
        for off in range(s, e, 2):
            out.append([off, l, l, None, None])
else:
    starts = dict(dis.findlinestarts(code))
    line = code.co_firstlineno
    for off in range(len(code.co_code)):
        line = starts.get(off, line)
        out.append([off, line, line, None, None])
sys.stdout.write(json.dumps(out))
"""

ROW = re.compile(r"^\s*(->)?\s*(\d+)\s+(\d+)\s+(\S+)\s+(\S+)\s+(\S+)\s+(\S+)\s*$")


def parse_table(text):
    rows = []
    current = None
    for line in text.splitlines():
        m = ROW.match(line)
        if not m:
            continue
        vals = []
        for v in m.groups()[3:]:
            vals.append(None if v in ("-", "None", "null") else int(v))
        row = (int(m.group(2)), int(m.group(3)), vals)
        rows.append(row)
        if m.group(1):
            current = row
    return rows, current


def check_table(py, t, table_text, frame_truth):
    rows, current = parse_table(table_text)
    if not rows:
        raise AssertionError("py-line --table printed no table:\n" + table_text[:2000])
    func = frame_truth["function"]
    out = subprocess.run([py.path, "-c", EXPECTED_TABLE, frame_truth["file"], func],
                         capture_output=True, timeout=60)
    if out.returncode:
        raise AssertionError("expected table: %s" % out.stderr.decode()[-1000:])
    expected = json.loads(out.stdout.decode())
    old = py.version.startswith(("2.", "3.6", "3.7", "3.8", "3.9"))
    for off, line, end_line, col, end_col in expected:
        hit = [r for r in rows if r[0] <= off < r[1]]
        if not hit:
            if line is None:
                continue
            raise AssertionError("table has no range for offset %d" % off)
        got = hit[0][2]
        want = [line, end_line, col, end_col]
        if old:  # before 3.10 the table gives lines only
            got, want = got[:1], want[:1]
        if got != want:
            raise AssertionError("py-line --table at offset %d: %r, the interpreter says %r"
                                 % (off, got, want))
    off = frame_truth["instruction_offset"]
    if current is None or not current[0] <= off < current[1]:
        raise AssertionError("py-line --table marks %r, the frame is at offset %d"
                             % (current, off))


def sample(py):
    """The sample program's target, shared by the cases that attach to it one at a time."""
    key, make = target_of(py, "sample")

    class _Use(object):
        def __enter__(self):
            self.use = shared(key, make)
            t = self.use.__enter__()
            t.attach_lock.acquire()
            self.t = t
            return t

        def __exit__(self, *exc):
            self.t.attach_lock.release()
            self.use.__exit__(*exc)
    return _Use()


SAMPLE = lambda py: [target_of(py, "sample")[0]]  # noqa: E731


def check_commands(py, debugger):
    """py-line (+ --table), py-list, py-up/py-down at both ends, on the main thread."""
    with sample(py) as t:
        main = [th for th in t.truth["threads"] if th["thread_id"] == t.truth["main_thread_id"]][0]
        frames = main["frames"]
        n = len(frames)
        cmds = ["py-down", "py-line", "py-line --table", "py-list", "py-up %d" % (n + 5), "py-up",
                "py-line", "py-down", "py-line 0", "py-list 3,6"]
        rc, outs, err = run_debugger(debugger, ["-p", str(t.pid)], cmds)
        what = debugger + " commands"
        no_traceback(what, err, *outs)
        allout = "\n".join(outs) + err
        if "cannot go down" not in allout:
            raise AssertionError("%s: py-down at the innermost frame gave no error:\n%s"
                                 % (what, outs[0] + err))
        if "cannot go up" not in allout:
            raise AssertionError("%s: py-up past the outermost frame gave no error:\n%s"
                                 % (what, outs[5] + err))
        f0 = frames[0]
        if "line %d" % f0["line"] not in outs[1] or f0["file"] not in outs[1]:
            raise AssertionError("%s: py-line does not show %s:%d:\n%s"
                                 % (what, f0["file"], f0["line"], outs[1]))
        check_table(py, t, outs[2], f0)
        if not re.search(r"(?m)^\s*>\s*%d\b" % f0["line"], outs[3]):
            raise AssertionError("%s: py-list does not mark line %d:\n%s"
                                 % (what, f0["line"], outs[3]))
        last = frames[-1]
        if "#%d " % (n - 1) not in outs[4] or "line %d" % last["line"] not in outs[6]:
            raise AssertionError("%s: py-up did not reach the outermost frame #%d:\n%s\n%s"
                                 % (what, n - 1, outs[4], outs[6]))
        if "#%d " % (n - 2) not in outs[7]:
            raise AssertionError("%s: py-down from the outermost frame:\n%s" % (what, outs[7]))
        if "line %d" % f0["line"] not in outs[8]:
            raise AssertionError("%s: py-line 0:\n%s" % (what, outs[8]))
        listed = [l for l in outs[9].splitlines() if re.match(r"^\s*>?\s*\d+\b", l)]
        if len(listed) != 4:
            raise AssertionError("%s: py-list 3,6 listed %d lines:\n%s"
                                 % (what, len(listed), outs[9]))


def check_thread_switch(py, debugger):
    """py-bt follows the debugger's selected thread; py-up's selection is per thread."""
    with sample(py) as t:
        select = "thread %d" if debugger == "gdb" else "thread select %d"
        cmds = [select % 2, SELECTED[debugger], "py-bt --json", "py-up", select % 1, "py-line",
                select % 2, "py-line"]
        rc, outs, err = run_debugger(debugger, ["-p", str(t.pid)], cmds)
        what = debugger + " thread switch"
        no_traceback(what, err, *outs)
        tid = selected_tid(debugger, outs[1], what)
        doc = parse_json(outs[2], what)
        got = doc["threads"][0]
        if got["native_thread_id"] != tid:
            raise AssertionError("%s: py-bt showed tid %s, the selected thread is %s"
                                 % (what, got["native_thread_id"], tid))
        truth = [th for th in t.truth["threads"] if th["thread_id"] == got["thread_id"]]
        problems = compare(dict(t.truth, threads=truth), doc)
        if problems:
            raise AssertionError("%s:\n  %s" % (what, "\n  ".join(problems)))
        # lldb may print its own "thread select" report late, into the next command's part:
        # look for the frame lines rather than at the start of the part.
        if not re.search(r"(?m)^#0  File", outs[5]) or re.search(r"(?m)^#1  File", outs[5]) \
                or not re.search(r"(?m)^#1  File", outs[7]):
            raise AssertionError("%s: the selected Python frame is not kept per thread:\n%s\n%s"
                                 % (what, outs[5], outs[7]))


LLDB_THREADS = os.path.join(REPO, "tests", "e2e", "lldb_threads.py")


def check_lldb_threads(py, kind):
    """lldb runs the frame-format hook on its event-handler thread (the reports of the attach's
    stop and of `thread select`) while the next commands run: no session or snapshot may be used
    by two threads at once (it corrupted lldb's heap, and lldb hung in its abort handler), and
    every command still answers right. tests/e2e/lldb_threads.py holds the other thread's calls
    long enough that an overlap cannot be missed, and reports them."""
    what = "lldb threads %s" % kind
    key, make = target_of(py, "sample")
    with shared(key, make) as t:
        if kind == "live":
            with t.attach_lock:
                _lldb_threads(what, t, ["-p", str(t.pid)])
        else:
            _lldb_threads(what, t, ["-c", t.gcore_once(), t.executable])


def _lldb_threads(what, t, args):
    cmds = ["command script import " + LLDB_THREADS, "thread select 2", "py-up",
            "thread select 1", "py-bt --all --native --json", "thread info", "py-line",
            "thread select 3", "thread info", "py-line", "pyu-test-threads"]
    rc, outs, err = run_debugger("lldb", args, cmds)
    no_traceback(what, err, *outs)
    record = json.loads(outs[10].strip().splitlines()[-1])
    if not record["other_thread_calls"]:
        raise AssertionError("%s: the hook never ran on another thread than the commands' "
                             "(the case proves nothing): %s" % (what, record))
    if record["overlaps"]:
        raise AssertionError("%s: two threads inside one object at once:\n  %s"
                             % (what, "\n  ".join(record["overlaps"])))
    doc = parse_json(outs[4], what + " py-bt --all --native --json")
    # Native frames of the main thread: a gdb core of the Debian unstable builds may lack the
    # other threads' C stacks (Target.gcore says why), and lldb then has none to give.
    problems = compare(t.truth, doc, allow_kinds=("native",)) + [
        "main thread: no native frames" for th in doc["threads"]
        if th.get("thread_id") == t.truth["main_thread_id"] and
        not any(f.get("kind") == "native" for f in th.get("frames", []))]
    if problems:
        raise AssertionError("%s: py-bt --all --native --json:\n  %s"
                             % (what, "\n  ".join(problems)))
    # py-line in the threads `thread select` chose shows their innermost Python frames.
    by_tid = dict((th.get("native_thread_id"), th) for th in t.truth["threads"])
    for info, line in ((5, 6), (8, 9)):
        tid = selected_tid("lldb", outs[info], what)
        if tid not in by_tid:
            raise AssertionError("%s: lldb selected tid %d, which the truth does not list"
                                 % (what, tid))
        f0 = by_tid[tid]["frames"][0]
        if "line %d, in %s" % (f0["line"], f0["function"]) not in outs[line]:
            raise AssertionError("%s: py-line in tid %d does not show %s line %d:\n%s"
                                 % (what, tid, f0["function"], f0["line"], outs[line]))


# ---- golden text ----------------------------------------------------------------------------

def normalize(text, t):
    # The interpreter's prefix as it reports it (the path it was started by, which may lead
    # through a symbolic link such as a shared .cache) and with links resolved.
    prefixes = set(os.path.dirname(os.path.dirname(f(t.python)))
                   for f in (os.path.realpath, os.path.abspath))
    for prefix in sorted(prefixes, key=len, reverse=True):
        text = text.replace(prefix, "<prefix>")
    text = text.replace(REPO, "<repo>")
    text = re.sub(r"0x[0-9a-f]+", "0x…", text)
    text = re.sub(r"\btid \d+", "tid N", text)
    text = re.sub(r"\b\d+\.\d\d s CPU\b", "N s CPU", text)  # CPU time so far
    return "\n".join(l.rstrip() for l in text.strip().splitlines()) + "\n"


def check_golden(py, debugger):
    """py-bt --all on the sample program equals the version's golden file. With
    PYUNWIND_UPDATE_GOLDEN=1 the gdb case writes that file from its output instead and every
    golden case fails as not checked: updating and checking are two separate runs, so an
    update can never make the run that wrote the file pass."""
    with sample(py) as t:
        rc, (text,), err = run_debugger(debugger, ["-p", str(t.pid)], ["py-bt --all"])
    got = normalize(text, t)
    path = os.path.join(GOLDEN, "sample-py-bt-%s.txt" % py.version.rsplit(".", 1)[0])
    name = os.path.relpath(path, REPO)
    if os.environ.get("PYUNWIND_UPDATE_GOLDEN"):
        said = "left to the gdb case"
        if debugger == "gdb":
            with open(path, "w") as f:
                f.write(got)
            said = "written from gdb's output"
        raise AssertionError("%s: %s, not checked: PYUNWIND_UPDATE_GOLDEN is set; run again "
                             "without it to check both debuggers against it" % (name, said))
    with open(path) as f:
        want = f.read()
    if got != want:
        raise AssertionError("%s py-bt differs from %s:\n--- got\n%s--- want\n%s"
                             % (debugger, name, got, want))


# ---- errors ---------------------------------------------------------------------------------

def _survives(debugger, target_args, what, must_mention):
    rc, (out, after), err = run_debugger(debugger, target_args, ["py-bt --all", "py-bt --all --json"])
    no_traceback(what, out, after, err)
    text = out + err
    if not any(m in text for m in must_mention):
        raise AssertionError("%s: expected a message mentioning one of %r, got:\n%s"
                             % (what, must_mention, text[-2000:]))


def check_not_python(debugger):
    p = subprocess.Popen(["sleep", "600"])
    try:
        wait_asleep(p.pid)
        _survives(debugger, ["-p", str(p.pid)], debugger + " on sleep",
                  ["not a Python", "no Python", "No Python", "Python interpreter"])
    finally:
        p.kill()
        p.wait()


def _sleep_core(workdir):
    """A kernel core of a non-Python program (sleep, killed with SIGSEGV)."""
    import resource
    p = subprocess.Popen(["sleep", "600"], cwd=workdir, preexec_fn=lambda: resource.setrlimit(
        resource.RLIMIT_CORE, (resource.RLIM_INFINITY, resource.RLIM_INFINITY)))
    try:
        wait_asleep(p.pid)
    except HarnessError:
        p.kill()
        p.wait()
        raise
    os.kill(p.pid, signal.SIGSEGV)
    p.wait()
    # The kernel has written the core before the process is reaped.
    for name in ("core", "core.%d" % p.pid):
        path = os.path.join(workdir, name)
        if os.path.exists(path) and os.path.getsize(path) > 0:
            return path
    raise HarnessError("no kernel core of sleep in %s (status %s, core_pattern %r)"
                       % (workdir, p.returncode, core_pattern()))


def check_core_not_python(debugger):
    d = tempfile.mkdtemp(prefix="pyu-sleepcore-")
    try:
        core = _sleep_core(d)
        sleep = shutil.which("sleep")
        args = [sleep, core] if debugger == "gdb" else ["-c", core, sleep]
        _survives(debugger, args, debugger + " on a core of sleep",
                  ["not a Python", "no Python", "No Python", "Python interpreter"])
    finally:
        shutil.rmtree(d, ignore_errors=True)


CLI = os.path.join(REPO, "build", "pyunwind")


def check_truncated_core(py, debugger):
    # A kernel core (no section headers, so the debuggers still open it when cut short),
    # truncated to half: the tail of memory and the files' pages are gone. The adapter reads
    # the core file as the CLI does, so it must say exactly what the CLI says about it: the
    # same partial stack (each thread's frames up to the one that says why it stopped), or
    # the same one-line error as the plugin's own error line - "error: MESSAGE" in lldb, the
    # bare message in gdb - and nothing on its output. A word like "error" somewhere in the
    # debugger's own chatter is not an answer.
    with Target(py, "scenario", mode="crash") as t:
        core = t.crash_core()
        cut = core + ".half"
        with open(core, "rb") as src, open(cut, "wb") as dst:
            dst.write(src.read(os.path.getsize(core) // 2))
        exe = t.executable
        cli = subprocess.run([CLI, "bt", "--all", cut, exe], capture_output=True,
                             timeout=120, stdin=subprocess.DEVNULL)
        cli_out = cli.stdout.decode("utf-8", "replace")
        cli_err = [l for l in cli.stderr.decode("utf-8", "replace").splitlines() if l.strip()]
        args = [exe, cut] if debugger == "gdb" else ["-c", cut, exe]
        rc, (out, js), err = run_debugger(debugger, args, ["py-bt --all", "py-bt --all --json"])
        what = debugger + " on a truncated core"
        no_traceback(what, out, js, err)
        if rc < 0:
            raise AssertionError("%s: the debugger died with signal %d" % (what, -rc))
        if cli.returncode == 0:
            if "<error: " not in cli_out:
                raise AssertionError("%s: the CLI read the half core without a reason to stop "
                                     "(the cut left nothing out?):\n%s" % (what, cli_out[:2000]))
            if out.strip() != cli_out.strip():
                raise AssertionError("%s: py-bt --all differs from the CLI's partial stack:\n"
                                     "--- plugin\n%s\n--- CLI\n%s" % (what, out[-3000:],
                                                                      cli_out[-3000:]))
            check_reads(what, parse_json(js, what + " py-bt --all --json"), READS["crash"])
            return
        if len(cli_err) != 1 or not cli_err[0].startswith("pyunwind: "):
            raise AssertionError("%s: the CLI failed (status %d) without one error line:\n%s"
                                 % (what, cli.returncode, "\n".join(cli_err)))
        want = cli_err[0][len("pyunwind: "):]
        if debugger == "lldb":
            want = "error: " + want
        said = [l for l in err.splitlines() if l == want]
        if len(said) != 2 or out.strip() or js.strip():
            raise AssertionError("%s: want the line %r once for each of the two commands and "
                                 "no output; got output %r and stderr:\n%s"
                                 % (what, want, (out + js)[:1000], err[-3000:]))


# ---- the debugger-read path -----------------------------------------------------------------

def check_gdbserver(py):
    # The harness's gdbserver takes a free port and, when another process took it between the
    # check and gdbserver's bind, starts again on another (it waits for "Listening on port").
    key, make = target_of(py, "scenario")
    with shared(key, make) as t, t.attach_lock:
        with t.gdbserver() as address:
            # Connecting is enough: the adapter sees a remote connection and reads through gdb.
            rc, outs, err = gdb_outputs(
                [t.executable], ["py-bt --all --json"], extra=["target remote " + address])
            no_traceback("gdbserver", outs[0], err)
            doc = parse_json(outs[0], "gdb via gdbserver")
            check_reads("gdb via gdbserver", doc, READS["debugger"])
            problems = compare(t.truth, doc)
            if problems:
                raise AssertionError("via gdbserver:\n  " + "\n  ".join(problems))


def check_memory_write(py, debugger):
    """Memory the debugger writes while the process stands still: the commands show the new
    value at once, through every write path (lldb keeps its stop id: `memory write`, an
    `expression`, a script's SBProcess.WriteMemory; gdb: `set var`, `print` of an assignment,
    gdb.Inferior.write_memory), keep the Python frame selected before the write, and the
    target's own repr of the value, once it runs, is the last one shown."""
    what = "%s memory write" % debugger
    with Target(py, "memwrite") as t:
        addr, old = t.truth["digit_address"], t.truth["x"]
        new = (54321, 777, 4242)
        if debugger == "lldb":
            writes = ["memory write -s 4 0x%x 0x%x" % (addr, new[0]),
                      "expression -- *(unsigned int *)0x%x = %d" % (addr, new[1]),
                      "script lldb.process.WriteMemory(0x%x, (%d).to_bytes(4, 'little'), "
                      "lldb.SBError())" % (addr, new[2])]
        else:
            writes = ["set var *(unsigned int *)0x%x = %d" % (addr, new[0]),
                      "print *(unsigned int *)0x%x = %d" % (addr, new[1]),
                      "python gdb.selected_inferior().write_memory(0x%x, (%d).to_bytes(4, "
                      "'little'))" % (addr, new[2])]
        cmds = ["py-print x", "py-up", writes[0], "py-line", "py-down", "py-print x",
                writes[1], "py-locals", writes[2], "py-bt --locals --json"]
        rc, outs, err = run_debugger(debugger, ["-p", str(t.pid)], cmds)
        no_traceback(what, err, *outs)
        problems = []
        if "local 'x' = %d" % old not in outs[0]:
            problems.append("before any write: %r" % outs[0])
        if not outs[3].lstrip().startswith("#1 "):
            problems.append("the frame selected before the write (#1) is lost: %r" % outs[3])
        if "local 'x' = %d" % new[0] not in outs[5]:
            problems.append("after `%s`: py-print x says %r" % (writes[0], outs[5]))
        if not re.search(r"(?m)^x = %d$" % new[1], outs[7]):
            problems.append("after `%s`: py-locals says %r" % (writes[1], outs[7]))
        doc = parse_json(outs[9], what + " py-bt --locals --json")
        got = [l["repr"] for th in doc["threads"] for f in th["frames"]
               for l in f.get("locals") or [] if l["name"] == "x" and f["function"] == "park"]
        if got != [str(new[2])]:
            problems.append("after the script's write: py-bt --locals --json has x = %r" % got)
        seen = os.path.join(t.workdir, "seen.txt")
        deadline = time.time() + 60
        while not os.path.exists(seen) and time.time() < deadline:
            time.sleep(0.05)
        if not os.path.exists(seen):
            problems.append("the target never saw x change (detached and running?)")
        else:
            with open(seen) as f:
                own = f.read()
            if own != str(new[2]):
                problems.append("the target's own repr(x) is %r, the last shown %d" % (own,
                                                                                      new[2]))
        if problems:
            raise AssertionError("%s:\n%s\n%s" % (what, "\n".join(problems), err[-1500:]))


def check_lldb_debugger_reads(py):
    key, make = target_of(py, "scenario")
    with shared(key, make) as t, t.attach_lock:
        check_stacks("lldb", "live", t, env={"PYUNWIND_READS": "debugger"})


def check_lldb_core_debugger_reads(py):
    # A core's reads through lldb: some addresses fail (memory the core lacks) and the reads
    # after them must not.
    key, make = target_of(py, "scenario")
    with shared(key, make) as t:
        check_stacks("lldb", "gcore", t, t.gcore_once(), env={"PYUNWIND_READS": "debugger"})


def check_gdb_core_debugger_reads(py):
    key, make = target_of(py, "scenario")
    with shared(key, make) as t:
        check_stacks("gdb", "gcore", t, t.gcore_once(), env={"PYUNWIND_READS": "debugger"})


# ---- cases ----------------------------------------------------------------------------------

def cases():
    pys = interpreters()
    out = []
    for py in pys:
        for kind in ("live", "gcore", "crash"):
            for dbg in ("gdb", "lldb"):
                fn, keys = matrix_case(py, kind, dbg)
                out.append(("%s %s %s" % (dbg, kind, py.label), fn, keys))
    for py in pys:
        for dbg in ("gdb", "lldb"):
            out.append(("%s commands %s" % (dbg, py.label),
                        (lambda p, d: lambda: check_commands(p, d))(py, dbg), SAMPLE(py)))
    for py in [p for p in pys if p.label in ("pyenv-2.7", "pyenv-3.10", "sid-3.15")]:
        for dbg in ("gdb", "lldb"):
            out.append(("%s thread-switch %s" % (dbg, py.label),
                        (lambda p, d: lambda: check_thread_switch(p, d))(py, dbg), SAMPLE(py)))
    for py in [p for p in pys if p.label in ("pyenv-3.12", "sid-3.14d")] or pys[:1]:
        for kind in ("live", "gcore"):
            out.append(("lldb threads %s %s" % (kind, py.label),
                        (lambda p, k: lambda: check_lldb_threads(p, k))(py, kind), SAMPLE(py)))
    golden = [p for p in pys if p.label in ("pyenv-3.12", "sid-3.14", "pyenv-2.7")]
    for py in golden:
        for dbg in ("gdb", "lldb"):
            out.append(("%s golden %s" % (dbg, py.label),
                        (lambda p, d: lambda: check_golden(p, d))(py, dbg), SAMPLE(py)))
    ref = [p for p in pys if p.label in ("pyenv-3.12", "sid-3.15")] or pys[:1]
    for dbg in ("gdb", "lldb"):
        out.append(("%s error not-python" % dbg, (lambda d: lambda: check_not_python(d))(dbg)))
        out.append(("%s error core-of-sleep" % dbg,
                    (lambda d: lambda: check_core_not_python(d))(dbg)))
        for py in ref:
            out.append(("%s error truncated-core %s" % (dbg, py.label),
                        (lambda p, d: lambda: check_truncated_core(p, d))(py, dbg)))
    for py in [p for p in pys if p.label in ("pyenv-3.9", "sid-3.14d")] or \
            [p for p in pys if p.version.startswith("3")][:1]:
        for dbg in ("gdb", "lldb"):
            out.append(("%s memory-write %s" % (dbg, py.label),
                        (lambda p, d: lambda: check_memory_write(p, d))(py, dbg)))
    for py in ref:
        park = [target_of(py, "scenario")[0]]
        out.append(("gdb gdbserver %s" % py.label, (lambda p: lambda: check_gdbserver(p))(py),
                    park))
        out.append(("lldb debugger-reads %s" % py.label,
                    (lambda p: lambda: check_lldb_debugger_reads(p))(py), park))
        out.append(("gdb core-debugger-reads %s" % py.label,
                    (lambda p: lambda: check_gdb_core_debugger_reads(p))(py), park))
        out.append(("lldb core-debugger-reads %s" % py.label,
                    (lambda p: lambda: check_lldb_core_debugger_reads(p))(py), park))
    return out


if __name__ == "__main__":
    sys.exit(run_cases(cases(), prefix="adapters"))
