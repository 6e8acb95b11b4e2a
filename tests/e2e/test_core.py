#!/usr/bin/env python3
# test_core - the core alone, end to end: for every interpreter of the matrix, the CLI's JSON
# for a live process, a gdb core and a kernel crash core of the rich scenario, compared field by
# field with what the target reported about itself; plus the CLI's text, line and list output
# and its error cases (not Python, truncated and garbage cores, bad arguments).
#
#   tests/e2e/test_core.py [-j N] [FILTER...]     (make test-core)
#
# FILTER picks cases by substring ("sid-3.14/", "/crash", "errors"); PYUNWIND_PYTHONS narrows
# the matrix (see tests/harness/matrix.py). Ends with "test-core: N passed, N failed".
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from harness import (REPO, Target, HarnessError, compare, run_cases, selected,  # noqa: E402
                     text_frames, wait_asleep)

CLI = os.path.join(REPO, "build", "pyunwind")
FIELDS = ("function", "qualname", "file", "line", "end_line", "column", "end_column",
          "instruction_offset")
EXIT_NOT_PYTHON = 3


def cli(*args, timeout=120):
    """Runs the CLI; returns (status, stdout, stderr). A death by signal fails the test."""
    try:
        p = subprocess.run([CLI] + [str(a) for a in args], capture_output=True, timeout=timeout,
                           stdin=subprocess.DEVNULL)
    except subprocess.TimeoutExpired:
        raise AssertionError("pyunwind %s: no answer within %ds" % (" ".join(map(str, args)),
                                                                     timeout))
    out = p.stdout.decode("utf-8", "strict")  # the CLI must always print valid UTF-8
    err = p.stderr.decode("utf-8", "replace")
    if p.returncode < 0:
        raise AssertionError("pyunwind %s died of signal %d:\n%s"
                             % (" ".join(map(str, args)), -p.returncode, err[-2000:]))
    return p.returncode, out, err


def bt_json(target, *extra, executable=None):
    rc, out, err = cli("bt", "--json", *(extra + (target,) + ((executable,) if executable else ())))
    assert rc == 0, "pyunwind bt --json %s: status %d: %s" % (target, rc, err.strip())
    try:
        return json.loads(out)
    except ValueError as e:
        raise AssertionError("not JSON (%s):\n%s" % (e, out[:2000]))


def check_document(truth, doc, what):
    """The JSON against the truth: python block, then every frame of every thread."""
    problems = []
    py = doc.get("python", {})
    tp = truth["python"]
    if doc.get("pyunwind") != 1:
        problems.append("pyunwind key is %r" % doc.get("pyunwind"))
    for key in ("version", "hexversion", "debug_build"):
        if py.get(key) != tp[key]:
            problems.append("python.%s is %r, truth %r" % (key, py.get(key), tp[key]))
    got_threads = dict((t["thread_id"], t) for t in doc.get("threads", []))
    for tt in truth["threads"]:
        gt = got_threads.get(tt["thread_id"])
        if gt and tt.get("native_thread_id") is not None and \
                gt.get("native_thread_id") is not None and \
                gt["native_thread_id"] != tt["native_thread_id"]:
            problems.append("thread %s: native_thread_id %r, truth %r"
                            % (tt["thread_id"], gt["native_thread_id"], tt["native_thread_id"]))
    problems += compare(truth, doc, fields=FIELDS, limit=12)
    if doc.get("errors"):
        problems.append("errors: %s" % doc["errors"][:3])
    if problems:
        raise AssertionError("%s: %d mismatch(es), first ones:\n%s"
                             % (what, len(problems), "\n".join(problems[:12])))


def check_text(truth, target):
    """The default text output: one header per thread and one File line per frame."""
    rc, out, err = cli("bt", target)
    assert rc == 0, "pyunwind bt %s: status %d: %s" % (target, rc, err.strip())
    headers = len(re.findall(r"^Thread 0x[0-9a-f]+", out, re.M))
    # Runs of repeated frames (the recursion) folded as traceback folds them: counted too.
    frames = text_frames(out)
    want = sum(len(t["frames"]) for t in truth["threads"])
    assert headers == len(truth["threads"]) and frames == want, \
        "text: %d thread headers and %d frames, truth has %d and %d:\n%s" \
        % (headers, frames, len(truth["threads"]), want, out[:1500])
    assert out.startswith("Python %s" % truth["python"]["version"]), out[:200]
    assert "(source not shown" not in out, "unchanged sources called changed:\n" + out[:3000]


def task_states(pid):
    states = []
    for tid in os.listdir("/proc/%d/task" % pid):
        try:
            with open("/proc/%d/task/%s/stat" % (pid, tid)) as f:
                states.append(f.read().rsplit(")", 1)[1].split()[0])
        except (OSError, IndexError):
            pass
    return states


# Run by the target's own interpreter: the line information CPython itself gives for the code
# objects named (name, firstlineno) in one file, compiled from the same source. 2.7 and 3.x.
CODE_TRUTH = r"""
import dis, json, sys
path = sys.argv[1]
code = compile(open(path, "rb").read(), path, "exec")
codes, todo = [], [code]
while todo:
    c = todo.pop()
    codes.append(c)
    todo.extend(k for k in c.co_consts if hasattr(k, "co_code"))
result = []
for want in sys.argv[2:]:
    name, first = want.rsplit(":", 1)
    found = [c for c in codes if c.co_name == name and c.co_firstlineno == int(first)]
    out = {"found": bool(found)}
    if found:
        c = found[0]
        out["code_len"] = len(c.co_code)
        if hasattr(c, "co_positions"):
            out["positions"] = [list(p) for p in c.co_positions()]
        elif hasattr(c, "co_lines"):
            out["lines"] = [list(r) for r in c.co_lines()]
        else:
            out["starts"] = [list(r) for r in dis.findlinestarts(c)]
    result.append(out)
sys.stdout.write(json.dumps(result))
"""

TABLE_ROW = re.compile(r"^(  ->|    ) +(\d+) +(\d+) +(\S+) +(\S+) +(\S+) +(\S+)$")


def check_tables(py, outputs):
    """py-line --table outputs against what the interpreter itself reports for those code
    objects: co_positions() per code unit (3.11+), co_lines() (3.10), dis.findlinestarts()
    (older). One interpreter run per source file."""
    by_file = {}
    for out in outputs:
        head = re.search(r'File "(.*)", line \S+, in (\S+)\n', out)
        first = re.search(r"firstlineno (-?\d+),", out)
        assert head and first, "no location or table header:\n" + out[:1000]
        by_file.setdefault(head.group(1), []).append(
            (head.group(2).split(".")[-1], first.group(1), out))
    for path, items in by_file.items():
        p = subprocess.run([py.path, "-c", CODE_TRUTH, path] +
                           ["%s:%s" % (name, first) for name, first, _ in items],
                           capture_output=True, timeout=120)
        truths = json.loads(p.stdout.decode() or "[]")
        assert len(truths) == len(items), "%s: %s" % (py.label, p.stderr.decode()[-500:])
        for (name, first, out), truth in zip(items, truths):
            assert truth["found"], "%s: no code %s at line %s in %s" % (py.label, name, first,
                                                                       path)
            compare_table(py, name, out, truth)


def compare_table(py, name, out, truth):
    rows = [TABLE_ROW.match(l) for l in out.splitlines()]
    rows = [[None if v == "-" else int(v) for v in m.groups()[1:]] for m in rows if m]
    marked = [l for l in out.splitlines() if l.startswith("  ->")]
    assert rows and len(marked) == 1, "table rows %d, marked %d:\n%s" % (len(rows), len(marked),
                                                                          out[:1500])
    ours = {}
    for start, end, line, end_line, col, end_col in rows:
        for off in range(start, end):
            ours[off] = (line, end_line, col, end_col)
    n = truth["code_len"]
    want = {}
    if "positions" in truth:
        for i, pos in enumerate(truth["positions"]):
            want[2 * i] = want[2 * i + 1] = tuple(pos)
        got = ours
    else:
        if "lines" in truth:
            for start, end, line in truth["lines"]:
                for off in range(start, end):
                    want[off] = line
        else:
            starts = truth["starts"]
            for off in range(n):
                line = None
                for a, ln in starts:
                    if a <= off:
                        line = ln
                want[off] = line
        got = dict((o, v[0]) for o, v in ours.items())
    diff = [o for o in range(n) if got.get(o) != want.get(o)]
    assert not diff, "%s %s: table differs from CPython at %d offsets, first %d: ours %r, " \
        "CPython %r" % (py.label, name, len(diff), diff[0], got.get(diff[0]), want.get(diff[0]))


def live_case(py):
    def run():
        with Target(py, "scenario") as t:
            doc = bt_json(t.pid, "--stats")
            check_document(t.truth, doc, "live")
            states = task_states(t.pid)
            assert not any(s in "tT" for s in states), \
                "the process was left stopped: %s" % states
            check_text(t.truth, t.pid)
            # line and list on the deepest thread, by kernel tid.
            rec = t.thread("recursion")
            if rec.get("native_thread_id"):
                rc, out, err = cli("line", "--table", "--thread", rec["native_thread_id"],
                                   t.pid)
                assert rc == 0, "line --table: %s" % err
                top = rec["frames"][0]
                assert "line %s," % top["line"] in out and "\n  ->" in out, out[:1500]
                rc, out, err = cli("list", "--thread", rec["native_thread_id"], "--frame",
                                   1, t.pid)
                assert rc == 0, "list: %s" % err
                assert re.search(r"^ *>%d    " % rec["frames"][1]["line"], out, re.M), out
            # py-line --table of every frame of the except thread (exception tables, try
            # blocks, threading.py's big functions) and of the recursion.
            exc = t.thread("except")
            tables = []
            for tid, i in [(exc["native_thread_id"], i) for i in range(len(exc["frames"]))] + \
                    [(rec["native_thread_id"], 1)]:
                if tid:
                    rc, out, err = cli("line", "--table", "--thread", tid, "--frame", i, t.pid)
                    assert rc == 0, "line --table: %s" % err
                    tables.append(out)
            assert len(tables) >= 5, "only %d line tables checked" % len(tables)
            check_tables(py, tables)
            rc, out, err = cli("bt", "--limit", 3, "--thread", rec["thread_id"], t.pid)
            assert rc == 0 and "more frames not shown: limit 3" in out, out + err
    return run


def check_path_map(core, workdir):
    """--path-map applies to source files: a marked copy of the targets' sources elsewhere is
    what the source lines come from."""
    targets = os.path.join(REPO, "tests", "targets")
    copy = os.path.join(workdir, "mapped-targets")
    os.makedirs(copy)
    for name in os.listdir(targets):
        if name.endswith(".py"):
            with open(os.path.join(targets, name), encoding="utf-8") as f:
                lines = f.read().split("\n")
            with open(os.path.join(copy, name), "w", encoding="utf-8") as f:
                f.write("\n".join(l + "  # via-path-map" if l.strip() else l for l in lines))
    rc, out, err = cli("bt", "--path-map", targets + "=" + copy, core)
    assert rc == 0, "bt --path-map: %s" % err
    assert "HOLD.acquire()  # via-path-map" in out, "path map not applied:\n" + out[:1500]


def gcore_case(py):
    def run():
        with Target(py, "scenario") as t:
            core = t.gcore()
            check_document(t.truth, bt_json(core), "gcore")
            check_text(t.truth, core)
            check_path_map(core, t.workdir)
    return run


def _shift_symbol(path, name, delta):
    """Makes @path "another build": its .dynsym value of @name moves by @delta and a byte of
    its GNU build ID changes."""
    import struct
    data = bytearray(open(path, "rb").read())
    shoff, = struct.unpack_from("<Q", data, 0x28)
    shentsize, shnum, shstrndx = struct.unpack_from("<HHH", data, 0x3a)
    secs = [struct.unpack_from("<IIQQQQIIQQ", data, shoff + i * shentsize) for i in range(shnum)]
    strtab = secs[shstrndx]
    def sname(sec):
        off = strtab[4] + sec[0]
        return bytes(data[off:data.index(0, off)]).decode()
    byname = dict((sname(sec), sec) for sec in secs)
    dynsym, dynstr = byname[".dynsym"], byname[".dynstr"]
    for i in range(dynsym[5] // 24):
        at = dynsym[4] + 24 * i
        st_name, = struct.unpack_from("<I", data, at)
        off = dynstr[4] + st_name
        if bytes(data[off:data.index(0, off)]).decode() == name:
            value, = struct.unpack_from("<Q", data, at + 8)
            struct.pack_into("<Q", data, at + 8, value + delta)
            break
    else:
        raise AssertionError("%s has no %s in .dynsym" % (path, name))
    note = byname[".note.gnu.build-id"]
    data[note[4] + note[5] - 1] ^= 0xff
    with open(path, "wb") as f:
        f.write(data)


def other_build_case(py):
    """A core read with a different build of the interpreter on this machine (its build ID
    differs): symbols from that file would be wrong, so the interpreter is found in the
    core's own memory instead, and the stacks are still right."""
    def run():
        with Target(py, "scenario") as t:
            core = t.gcore()
            exe = t.executable
            other = os.path.join(t.workdir, "other-build")
            os.makedirs(other)
            copy = os.path.join(other, os.path.basename(exe))
            shutil.copy(exe, copy)
            _shift_symbol(copy, "_PyRuntime", 0x1000)
            rc, out, err = cli("bt", "--json", "--path-map",
                               os.path.dirname(exe) + "=" + other, core, copy)
            assert rc == 0, "bt with another build: status %d: %s" % (rc, err.strip())
            doc = json.loads(out)
            # The exact patch version may only be in the file's pages, which do not match.
            want = ".".join(t.truth["python"]["version"].split(".")[:2])
            got = doc["python"]["version"]
            assert got == t.truth["python"]["version"] or got == want, \
                "version %r, truth %r" % (got, t.truth["python"]["version"])
            problems = compare(t.truth, doc)
            assert not problems and not doc["errors"], \
                "another build here: %s %s" % (problems, doc["errors"])
    return run


def crash_case(py):
    def run():
        with Target(py, "scenario", mode="crash") as t:
            core = t.crash_core()
            check_document(t.truth, bt_json(core, executable=t.executable), "kernel core")
            # line without --thread shows the crashing thread.
            crasher = [th for th in t.truth["threads"] if th.get("crashing")][0]
            rc, out, err = cli("line", core)
            assert rc == 0, "line: %s" % err
            assert "in %s\n" % (crasher["frames"][0]["qualname"] or
                                crasher["frames"][0]["function"]) in out, out[:1000]
    return run


# ---- text against CPython's own tracebacks -----------------------------------------------------

TEXT_TARGET = os.path.join(os.path.dirname(os.path.abspath(__file__)), "text_target.py")


def parse_bt_text(out):
    """{thread_id: [(file, line, [source and caret lines with the 8-space indent cut to 4])]}"""
    threads, frames = {}, None
    for line in out.splitlines():
        m = re.match(r"^Thread 0x([0-9a-f]+)", line)
        if m:
            frames = threads.setdefault(int(m.group(1), 16), [])
            continue
        m = re.match(r'^#\d+ +File "(.*)", line (\S+), in ', line)
        if m and frames is not None:
            frames.append((m.group(1), m.group(2), []))
        elif line.startswith("        ") and frames:
            frames[-1][2].append(line[4:])
    return threads


def text_case(py):
    """py-bt's source lines and carets equal what the target's traceback module prints for the
    same frames, line for line, on every version (carets.c draws each version's layout)."""
    def run():
        with Target(py, TEXT_TARGET) as t:
            with open(os.path.join(t.workdir, "tracebacks.json"), encoding="utf-8") as f:
                rendered = json.load(f)
            rendered.pop("wide_aware")
            rc, out, err = cli("bt", t.pid)
            assert rc == 0, "bt: %s" % err
            ours = parse_bt_text(out)
            problems, compared = [], 0
            for ident, blocks in sorted(rendered.items()):
                frames = ours.get(int(ident))
                if frames is None:
                    problems.append("thread %s missing from:\n%s" % (ident, out[:800]))
                    continue
                for i, block in enumerate(blocks):
                    lines = block.rstrip("\n").split("\n")
                    head = re.match(r'^  File "(.*)", line (\S+), in ', lines[0])
                    want = lines[1:]
                    if i + 1 >= len(frames):
                        problems.append("thread %s: no frame #%d" % (ident, i + 1))
                        break
                    file, line, got = frames[i + 1]
                    compared += 1
                    if (file, line) != (head.group(1), head.group(2)) or got != want:
                        problems.append("thread %s frame #%d:\n  ours:    %r\n  CPython: %r"
                                        % (ident, i + 1, (file, line, got),
                                           (head.group(1), head.group(2), want)))
            assert compared > 20, "only %d frames compared" % compared
            assert not problems, "%d frame(s) differ:\n%s" % (len(problems),
                                                                "\n".join(problems[:6]))
    return run


# ---- a busy process --------------------------------------------------------------------------

BUSY_PROGRAM = r"""
import os, sys, threading, time
sys.path.insert(0, %r)
import pyu_truth


def spin():
    x = 0
    while True:
        x += 1


def spin_outer():
    spin()


t = threading.Thread(target=spin_outer, name="spinner")
t.daemon = True
t.start()
outdir = sys.argv[1]
pyu_truth.write_json(outdir, "truth.json", {"threads": [{"thread_id": threading.current_thread().ident},
                                                        {"thread_id": t.ident}]})
while True:
    time.sleep(1)
"""


def cpu_ticks(pid):
    with open("/proc/%d/stat" % pid) as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return int(fields[11]) + int(fields[12])


def busy_case(py):
    """A thread spinning in Python: the CLI holds the process still while it reads (every read
    sees one consistent stack) and lets it run on afterwards."""
    def run():
        work = tempfile.mkdtemp(prefix="pyu-busy-")
        program = os.path.join(work, "busy.py")
        with open(program, "w") as f:
            f.write(BUSY_PROGRAM % os.path.join(REPO, "tests", "targets"))
        try:
            with Target(py, program) as t:
                spinner = t.truth["threads"][1]["thread_id"]
                for _ in range(5):
                    doc = bt_json(t.pid)
                    threads = dict((th["thread_id"], th) for th in doc["threads"])
                    frames = threads[spinner]["frames"]
                    names = [f.get("function") for f in frames[:2]]
                    assert names == ["spin", "spin_outer"], "spinner stack: %s" % frames[:3]
                    assert not [f for th in doc["threads"] for f in th["frames"]
                                if f["kind"] != "python"], "error frames: %s" % doc
                    assert sum(1 for th in doc["threads"] if th["holds_gil"]) <= 1
                    assert not any(s in "tT" for s in task_states(t.pid)), "left stopped"
                # It runs on when its CPU time grows; on a loaded machine that may take a while
                # (the target is niced with the test), so wait for it rather than a fixed time.
                before = cpu_ticks(t.pid)
                deadline = time.time() + 60
                while cpu_ticks(t.pid) == before:
                    assert time.time() < deadline, "the process no longer runs (no CPU time " \
                        "in 60 s; state %s)" % task_states(t.pid)
                    time.sleep(0.01)
        finally:
            shutil.rmtree(work, ignore_errors=True)
    return run


# ---- error cases ----------------------------------------------------------------------------

def expect_clean_error(args, want_status=None, want=None):
    rc, out, err = cli(*args)
    lines = [l for l in err.splitlines() if l.strip()]
    assert rc != 0, "pyunwind %s succeeded:\n%s" % (args, out[:500])
    if want_status is not None:
        assert rc == want_status, "pyunwind %s: status %d, want %d: %s" % (args, rc,
                                                                         want_status, err)
    assert lines and lines[0].startswith("pyunwind: "), "no message: %r" % err
    if want:
        assert re.search(want, lines[0]), "message %r lacks %r" % (lines[0], want)
    return lines[0]


def errors_not_python():
    p = subprocess.Popen(["sleep", "60"])
    work = tempfile.mkdtemp(prefix="pyu-core-test-")
    try:
        wait_asleep(p.pid)
        expect_clean_error(["bt", p.pid], EXIT_NOT_PYTHON, "[Pp]ython")
        core = os.path.join(work, "sleep.core")
        subprocess.run(["gdb", "-nx", "-batch", "-p", str(p.pid), "-ex",
                        "generate-core-file " + core], capture_output=True, timeout=120)
        assert os.path.getsize(core) > 0, "gdb made no core of sleep"
        expect_clean_error(["bt", core], EXIT_NOT_PYTHON, "[Pp]ython")
        assert all(s not in "tT" for s in task_states(p.pid)), "sleep left stopped"
    finally:
        p.kill()
        p.wait()
        shutil.rmtree(work, ignore_errors=True)


def errors_garbage():
    work = tempfile.mkdtemp(prefix="pyu-core-test-")
    try:
        def write(name, data):
            path = os.path.join(work, name)
            with open(path, "wb") as f:
                f.write(data)
            return path
        expect_clean_error(["bt", os.path.join(work, "missing")])
        expect_clean_error(["bt", work])
        expect_clean_error(["bt", write("empty", b"")])
        expect_clean_error(["bt", write("text", b"hello world\n" * 100)])
        expect_clean_error(["bt", write("random", os.urandom(65536))])
        expect_clean_error(["bt", write("elfhead", b"\x7fELF\x02\x01\x01" + b"\0" * 57)])
        expect_clean_error(["bt", "/bin/true"])  # an ELF, but no core
        expect_clean_error(["bt", "99999999"])   # digits, but no such process: a file
        expect_clean_error(["bt", "--path-map", "nothing", "1"], 2)
        expect_clean_error(["bt", "--limit", "x", "1"], 2)
        expect_clean_error(["frobnicate", "1"], 2)
        expect_clean_error([], 2)
    finally:
        shutil.rmtree(work, ignore_errors=True)


def errors_truncated(py):
    def run():
        with Target(py, "scenario") as t:
            core = t.gcore()
            size = os.path.getsize(core)
            with open(core, "rb") as f:
                data = f.read()
            outcomes = []
            for frac in (0.02, 0.25, 0.5, 0.75, 0.98):
                cut = core + ".cut"
                with open(cut, "wb") as f:
                    f.write(data[:int(size * frac)])
                rc, out, err = cli("bt", "--json", cut)
                if rc == 0:
                    doc = json.loads(out)  # partial output must still be a valid document
                    assert isinstance(doc.get("threads"), list)
                    outcomes.append("%.2f: %d threads" % (frac, len(doc["threads"])))
                else:
                    lines = [l for l in err.splitlines() if l.strip()]
                    assert len(lines) == 1 and lines[0].startswith("pyunwind: "), \
                        "cut at %.2f: status %d, stderr %r" % (frac, rc, err[:500])
                    outcomes.append("%.2f: error" % frac)
            # Garbage in the second half: flip bytes every 4099 bytes; still no crash, hang
            # or invalid UTF-8 (cli() checks all three).
            mangled = bytearray(data)
            for i in range(len(mangled) // 2, len(mangled), 4099):
                mangled[i] ^= 0x5a
            with open(cut, "wb") as f:
                f.write(bytes(mangled))
            cli("bt", cut)
            cli("bt", "--json", cut)
            print("    truncated %s: %s" % (py.label, ", ".join(outcomes)))
    return run


def _elf_core_head(filesz):
    """An ELF core header with one PT_LOAD of @filesz bytes at offset 4096."""
    import struct
    ident = b"\x7fELF\x02\x01\x01" + b"\0" * 9
    eh = ident + struct.pack("<HHIQQQIHHHHHH", 4, 62, 1, 0, 64, 0, 0, 64, 56, 1, 64, 0, 0)
    ph = struct.pack("<IIQQQQQQ", 1, 4, 4096, 0x400000, 0x400000, filesz, filesz, 4096)
    return eh + ph


def _gzip_zeros(path, head, zeros):
    """@head then @zeros zero bytes as gzip: one member for the head, then copies of one
    member of a MiB of zeros (concatenated members are one stream, as gzip has it)."""
    import zlib

    def member(data):
        z = zlib.compressobj(9, zlib.DEFLATED, 31)
        return z.compress(data) + z.flush()
    mib = member(b"\0" * (1 << 20))
    with open(path, "wb") as f:
        f.write(member(head))
        f.write(mib * (zeros >> 20))
        f.write(member(b"\0" * (zeros & ((1 << 20) - 1))))
    return path


def errors_unpack_bounds():
    """A compressed core that unpacks to far more than its headers promise, one past a
    ceiling, and a CLI killed while unpacking: refused with one line, nothing left in
    $TMPDIR, the unpacked copy never has a name and is mode 0600."""
    work = tempfile.mkdtemp(prefix="pyu-core-test-")
    tmp = os.path.join(work, "tmp")
    os.mkdir(tmp)
    env = dict(os.environ, TMPDIR=tmp)
    env.pop("PYUNWIND_MAX_UNPACKED", None)

    def run(*args, extra_env=None):
        p = subprocess.run([CLI] + list(args), capture_output=True, text=True, timeout=120,
                           env=dict(env, **(extra_env or {})), stdin=subprocess.DEVNULL)
        lines = [l for l in p.stderr.splitlines() if l.strip()]
        assert os.listdir(tmp) == [], "left in TMPDIR: %s" % os.listdir(tmp)
        return p.returncode, lines
    try:
        bomb = _gzip_zeros(os.path.join(work, "bomb.gz"), _elf_core_head(4096), (64 << 20) + 4096)
        assert os.path.getsize(bomb) < (200 << 10)
        rc, lines = run("bt", bomb)
        assert rc == 1 and len(lines) == 1 and "headers promise 8192" in lines[0] and \
            "bomb" in lines[0], (rc, lines)
        rc, lines = run("bt", "--max-unpacked", "1M", bomb)
        assert rc == 1 and "more than 1048576 bytes" in lines[0], (rc, lines)
        rc, lines = run("bt", bomb, extra_env={"PYUNWIND_MAX_UNPACKED": "2K"})
        assert rc == 1 and "ceiling of 2048" in lines[0], (rc, lines)
        rc, lines = run("bt", "--max-unpacked", "many", bomb)
        assert rc == 2 and "--max-unpacked needs a size" in lines[0], (rc, lines)
        # Killed in the middle of unpacking 1 GiB (as promised): nothing is left behind.
        big = _gzip_zeros(os.path.join(work, "big.gz"), _elf_core_head(1 << 30), 1 << 30)
        p = subprocess.Popen([CLI, "bt", big], env=env, stdout=subprocess.DEVNULL,
                             stderr=subprocess.DEVNULL, stdin=subprocess.DEVNULL)
        try:
            seen = None
            deadline = time.time() + 60
            while seen is None and p.poll() is None and time.time() < deadline:
                fd_dir = "/proc/%d/fd" % p.pid
                for fd in os.listdir(fd_dir) if os.path.isdir(fd_dir) else []:
                    try:
                        link = os.readlink(os.path.join(fd_dir, fd))
                        st = os.stat(os.path.join(fd_dir, fd))
                    except OSError:
                        continue
                    if link.startswith(tmp + "/") and st.st_size > 0:
                        seen = (link, st.st_mode & 0o777)
                        break
                time.sleep(0.01)
            assert seen, "never saw the unpacked copy being written"
            assert seen[1] == 0o600, "temporary file mode %o" % seen[1]
            assert os.listdir(tmp) == [], "the unpacked copy has a name: %s" % os.listdir(tmp)
        finally:
            p.kill()
            p.wait()
        assert os.listdir(tmp) == [], "left in TMPDIR after SIGKILL: %s" % os.listdir(tmp)
    finally:
        shutil.rmtree(work, ignore_errors=True)


def main():
    if not os.access(CLI, os.X_OK):
        print("build/pyunwind is missing: run make first")
        print("test-core: 0 passed, 1 failed")
        return 1
    cases = []
    pys = selected()
    for py in pys:
        cases.append(("%s/live" % py.label, live_case(py)))
        cases.append(("%s/gcore" % py.label, gcore_case(py)))
        cases.append(("%s/crash" % py.label, crash_case(py)))
    for py in pys:
        if py.minor != "2.7":
            cases.append(("%s/text" % py.label, text_case(py)))
    for py in pys:
        if py.label in ("pyenv-2.7", "pyenv-3.10", "pyenv-3.12", "sid-3.14", "sid-3.15d"):
            cases.append(("%s/busy" % py.label, busy_case(py)))
    for py in pys:
        if py.label in ("debian-3.11", "sid-3.14"):
            cases.append(("%s/other-build" % py.label, other_build_case(py)))
    cases.append(("errors/not-python", errors_not_python))
    cases.append(("errors/garbage", errors_garbage))
    cases.append(("errors/unpack-bounds", errors_unpack_bounds))
    if pys:
        cases.append(("errors/truncated-%s" % pys[-1].label, errors_truncated(pys[-1])))
        cases.append(("errors/truncated-%s" % pys[0].label, errors_truncated(pys[0])))
    return run_cases(cases, jobs=2, prefix="test-core")


if __name__ == "__main__":
    sys.exit(main())
