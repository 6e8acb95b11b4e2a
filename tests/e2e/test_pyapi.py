#!/usr/bin/env python3
# test_pyapi - the `pyunwind` Python package, installed the ways users install it, driven under
# every interpreter of the matrix that runs pip (3.8+): a wheel built once by `pip wheel` from
# the checkout (the in-tree backend, offline), `pip install --target` of it per interpreter,
# and `pip install .` straight from the checkout once. Each interpreter then runs
# tests/e2e/pyapi_check.py (with only the installed package on its path) against a live
# process of its own and a shared kernel crash core; the documents it gets must equal the
# targets' truth, and the API's triage document must equal `pyunwind triage --json`.
# Under every interpreter of the matrix, one target that keeps changing (tests/targets/churn.py)
# is read 100 times through one open handle (the checkout's package, in this process): each
# snapshot must equal a fresh handle's of the same stop.
#
#   tests/e2e/test_pyapi.py [-j N] [FILTER...]     (make test-pyapi)
import gzip
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from harness import REPO, Target, HarnessError, compare, run_cases, selected  # noqa: E402
from harness import stopped, interpreters  # noqa: E402
from e2e.test_triage import foreign_core, WORK as TRIAGE_WORK  # noqa: E402
from e2e.test_cython import include_dirs, modules_for, target_env, path_map  # noqa: E402
from e2e.test_cython import check_doc as check_cython_doc  # noqa: E402
from e2e.test_native import cli_json as cli_native_json  # noqa: E402

CLI = os.path.join(REPO, "build", "pyunwind")
CHECK = os.path.join(REPO, "tests", "e2e", "pyapi_check.py")
CHURN = os.path.join(REPO, "tests", "targets", "churn.py")
REPEATS = 100
FIELDS = ("function", "qualname", "file", "line", "end_line", "column", "end_column",
          "instruction_offset")
WORK = tempfile.mkdtemp(prefix="pyu-pyapi-")
SHARED = {}


def run(cmd, timeout=300, **kw):
    p = subprocess.run(cmd, capture_output=True, timeout=timeout, stdin=subprocess.DEVNULL,
                       **kw)
    return p.returncode, p.stdout.decode("utf-8", "replace"), p.stderr.decode("utf-8",
                                                                              "replace")


def runs_pip(py):
    return tuple(int(x) for x in py.version.split(".")[:2]) >= (3, 8) and \
        run([py.path, "-m", "pip", "--version"])[0] == 0


def setup(pys):
    """The wheel, a crash core, a core that is not Python, a text file."""
    wheels = os.path.join(WORK, "wheels")
    rc, out, err = run(["/usr/bin/python3", "-m", "pip", "wheel", "--no-index", "--no-deps",
                        "-w", wheels, REPO], timeout=600)
    if rc != 0:
        raise HarnessError("pip wheel of the checkout failed:\n%s%s" % (out[-2000:],
                                                                         err[-2000:]))
    SHARED["wheel"] = os.path.join(wheels, [n for n in os.listdir(wheels)
                                            if n.endswith(".whl")][0])
    with Target(pys[-1], "scenario", mode="crash") as t:
        core = os.path.join(WORK, "crash.core")
        shutil.move(t.crash_core(), core)
        SHARED["core"], SHARED["core_truth"] = core, t.truth
    fc = foreign_core()
    if not fc:
        raise HarnessError("no core of a non-Python program appeared")
    SHARED["foreign"] = fc
    SHARED["text"] = os.path.join(WORK, "text.txt")
    with open(SHARED["text"], "w") as f:
        f.write("not a core\n")
    rc, out, err = run([CLI, "triage", "--json", core])
    SHARED["cli_triage"] = json.loads(out)
    SHARED["gz"] = core + ".gz"
    with open(core, "rb") as f, gzip.open(SHARED["gz"], "wb", compresslevel=1) as out:
        shutil.copyfileobj(f, out)


def case(py, from_source):
    def go():
        if "error" in SHARED:
            raise AssertionError(SHARED["error"])
        site = os.path.join(WORK, "site-" + py.label)
        # The wheel holds the native module of the python that built it: others build their
        # own from the checkout (headers of the unstable builds from where tools/pythons put
        # them).
        tag = "cp%s%s-" % tuple(py.minor.split("."))
        wheel = SHARED["wheel"]
        what = REPO if from_source or tag not in os.path.basename(wheel) else wheel
        env = dict(os.environ, PYUNWIND_PYTHON_INCLUDE=os.pathsep.join(include_dirs(py)))
        rc, out, err = run([py.path, "-m", "pip", "install", "--no-index", "--no-deps",
                            "--disable-pip-version-check", "--target", site, what],
                           timeout=600, env=env)
        assert rc == 0, "pip install %s: status %d\n%s%s" % (what, rc, out[-1500:], err[-1500:])
        env = dict(os.environ, PYTHONPATH=site)
        env.pop("PYUNWIND_LIB", None)
        with Target(py, "scenario") as t:
            with t.stopped():
                rc, out, err = run([py.path, CHECK, str(t.pid), SHARED["core"],
                                    SHARED["foreign"], SHARED["text"], CLI, SHARED["gz"]],
                                   env=env, cwd=WORK)
            assert rc == 0, "pyapi_check: status %d\n%s" % (rc, err[-3000:])
            got = json.loads(out)
            problems = list(got["problems"])
            problems += ["live: " + p for p in compare(t.truth, got["live"], fields=FIELDS)]
        problems += ["core: " + p for p in compare(SHARED["core_truth"], got["core"],
                                                   fields=FIELDS)]
        want = dict(SHARED["cli_triage"])
        if got["triage"] != want:
            diff = [k for k in set(want) | set(got["triage"])
                    if want.get(k) != got["triage"].get(k)]
            problems.append("triage document differs from the CLI's in %s" % sorted(diff))
        assert not problems, "\n".join(problems[:15])
    return go


def old_case(py):
    """An interpreter that runs no pip (2.7 - 3.7, the unstable builds): its live process read
    by the checkout's package (this host's Python), every check of pyapi_check.py's live
    part."""
    def go():
        env = dict(os.environ, PYTHONPATH=os.path.join(REPO, "python"), PYAPI_FROM="checkout")
        with Target(py, "scenario") as t:
            with t.stopped():
                rc, out, err = run([sys.executable, CHECK, str(t.pid), "-", "-", "-", CLI, "-"],
                                   env=env, cwd=WORK)
            assert rc == 0, "pyapi_check: status %d\n%s" % (rc, err[-3000:])
            got = json.loads(out)
            problems = list(got["problems"])
            problems += ["live: " + p for p in compare(t.truth, got["live"], fields=FIELDS)]
        assert not problems, "\n".join(problems[:15])
    return go


def objects_of(snap):
    """Every field of every Thread and Frame of @snap, those left out of == too."""
    import dataclasses
    return [(dataclasses.astuple(th), th.exception, [f.extra for f in th.frames])
            for th in snap.threads]


def repeat_case(py):
    """100 snapshots through one open handle of a process that keeps changing, each equal to a
    fresh handle's at the same stop; the process must really have changed between them."""
    def go():
        sys.path.insert(0, os.path.join(REPO, "python"))
        import pyunwind
        workdir = tempfile.mkdtemp(prefix="churn-", dir=WORK)
        proc = subprocess.Popen([py.path, CHURN, workdir], stdin=subprocess.DEVNULL,
                                stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        try:
            deadline = time.time() + 120
            while not os.path.exists(os.path.join(workdir, "ready")):
                assert proc.poll() is None, "churn.py exited: %s" % proc.stderr.read()[-2000:]
                assert time.time() < deadline, "churn.py not ready in 120 s"
                time.sleep(0.01)
            problems, names = [], set()
            with pyunwind.open_process(proc.pid) as target:
                for i in range(REPEATS):
                    with stopped(proc.pid):
                        snap = target.collect()
                        kept, objects = snap.document(), objects_of(snap)
                        with pyunwind.open_process(proc.pid) as fresh:
                            snap = fresh.collect()
                            want, fresh_objects = snap.document(), objects_of(snap)
                        if i % 10 == 0:
                            # A sampler's call (the native module's one-call path) against
                            # the same asked the Python way (limits={} takes it).
                            quick = target.collect(activity=False, details=False)
                            slow = target.collect(activity=False, details=False, limits={})
                            if sorted(vars(quick)) != sorted(vars(slow)) or \
                                    objects_of(quick) != objects_of(slow) or \
                                    quick.python != slow.python:
                                problems.append("snapshot %d: collect(activity=False, "
                                                "details=False) differs from its Python "
                                                "path's" % i)
                    # The objects too: those the kept handle gives again must be what a
                    # fresh handle builds.
                    if objects != fresh_objects:
                        problems.append("snapshot %d: its Thread/Frame objects differ from a "
                                        "fresh handle's: %r / %r" % (
                                            i, [t for t in objects if t not in fresh_objects][:1],
                                            [t for t in fresh_objects if t not in objects][:1]))
                    if kept != want:
                        diff = [k for k in want if kept.get(k) != want[k]]
                        problems.append("snapshot %d differs from a fresh handle's in %s: %s"
                                        % (i, diff, json.dumps(kept.get(diff[0]))[:600]
                                           if diff else ""))
                    names.update(f.get("function") for t in kept["threads"]
                                 for f in t["frames"]
                                 if (f.get("function") or "").startswith("gen_"))
                    time.sleep(0.003)
            # The process changed between the snapshots (else equal proves nothing).
            if len(names) < 10:
                problems.append("only %d distinct gen_N functions seen in %d snapshots: %s"
                                % (len(names), REPEATS, sorted(names)))
            assert not problems, "\n".join(problems[:5])
        finally:
            proc.kill()
            proc.wait()
    return go


def copy_over(src_path, path):
    """The file at @src_path copied to @path: in place when @path exists (the same inode),
    else a new executable file."""
    if os.path.exists(path):
        with open(src_path, "rb") as src, open(path, "r+b") as dst:
            shutil.copyfileobj(src, dst)
            dst.truncate()
    else:
        shutil.copyfile(src_path, path)
        os.chmod(path, 0o755)


def static_interpreters():
    """Interpreters of the whole matrix whose executable holds the runtime (no libpython:
    what the library keeps of an interpreter file between handles is of that file), one per
    minor version, newest first."""
    found = {}
    for py in reversed(interpreters()):
        if py.debug or py.minor in found:
            continue
        rc, out, _ = run(["ldd", py.path])
        if rc == 0 and "libpython" not in out:
            found[py.minor] = py
    return list(found.values())


def one_path_case():
    """Two interpreters at one path in turn, the second copied over the first in place (the
    same inode), each read through a fresh handle in this one process: what the library
    keeps of an interpreter file between handles (where its runtime is, its version) must not
    be given to the other file. Then the first again, over the second."""
    def go():
        sys.path.insert(0, os.path.join(REPO, "python"))
        import pyunwind
        pys = static_interpreters()
        assert len(pys) >= 2, "fewer than two statically linked interpreters in the matrix: %s" \
            % [py.label for py in pys]
        a, b = pys[0], pys[-1]
        bindir = tempfile.mkdtemp(prefix="one-path-", dir=WORK)
        path = os.path.join(bindir, "python3")
        inode = None
        for py in (a, b, a):
            prefix = run([py.path, "-c", "import sys; print(sys.prefix)"])[1].strip()
            copy_over(py.path, path)
            st = os.stat(path)
            assert inode in (None, st.st_ino), "the copy is another inode"
            inode = st.st_ino
            with Target(py, "scenario", command=[path], env={"PYTHONHOME": prefix}) as t:
                with t.stopped():
                    with pyunwind.open_process(t.pid) as target:
                        snap = target.collect()
                        version, doc = snap.python.version, snap.document()
                assert version == py.version, "%s at %s read as %s" % (py.label, path, version)
                problems = compare(t.truth, doc, fields=FIELDS)
                assert not problems, "%s at %s: %s" % (py.label, path, "\n".join(problems[:5]))
    return go


def is_non_pie(path):
    """Whether @path is an ET_EXEC ELF file (a non-PIE executable: mapped at the addresses its
    program headers name)."""
    with open(path, "rb") as f:
        head = f.read(18)
    return head[:4] == b"\x7fELF" and head[5] == 1 and head[16:18] == b"\x02\x00"


def non_pie_case():
    """Non-PIE interpreters (Debian's) at one path in turn, copied over each other in place
    (the same inode), two processes of each one after the other, each read through a fresh
    handle in this one process: the library keeps the start of /proc/PID/maps of a non-PIE
    executable for the next open of a process of the same file (by its identity, from
    /proc/PID/exe), and must not give one file's lines to another; the second process of a
    file is read through the lines kept from the first."""
    def go():
        sys.path.insert(0, os.path.join(REPO, "python"))
        import pyunwind
        pys = [py for py in static_interpreters() if is_non_pie(py.path)]
        assert len(pys) >= 2, "fewer than two non-PIE interpreters in the matrix: %s" \
            % [py.label for py in static_interpreters()]
        a, b = pys[0], pys[-1]
        bindir = tempfile.mkdtemp(prefix="non-pie-", dir=WORK)
        path = os.path.join(bindir, "python3")
        for py in (a, b, a):
            prefix = run([py.path, "-c", "import sys; print(sys.prefix)"])[1].strip()
            copy_over(py.path, path)
            for _ in range(2):
                with Target(py, "scenario", command=[path],
                            env={"PYTHONHOME": prefix}) as t:
                    with t.stopped():
                        with pyunwind.open_process(t.pid) as target:
                            snap = target.collect()
                            version, doc = snap.python.version, snap.document()
                            notes = snap.notes
                    assert version == py.version, "%s at %s read as %s" % (
                        py.label, path, version)
                    # The file's name whole: at the note's end, or before "; " or " (".
                    assert any(re.search(r"in %s($|;| \()" % re.escape(path), n)
                               for n in notes), \
                        "%s at %s: the notes name another file: %s" % (py.label, path, notes)
                    problems = compare(t.truth, doc, fields=FIELDS)
                    assert not problems, "%s at %s: %s" % (py.label, path,
                                                          "\n".join(problems[:5]))
    return go


LINETABLE = os.path.join(REPO, "tests", "targets", "linetable.py")


def line_table_case(py):
    """frame.line_table() of a live target of any version, read from this host's Python,
    against the target's own decoding of the same code object: co_positions() (3.11+),
    co_lines() (3.10+), dis.findlinestarts() (every version)."""
    def go():
        sys.path.insert(0, os.path.join(REPO, "python"))
        import pyunwind
        workdir = tempfile.mkdtemp(prefix="linetable-", dir=WORK)
        proc = subprocess.Popen([py.path, LINETABLE, workdir], stdin=subprocess.DEVNULL,
                                stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        try:
            deadline = time.time() + 60
            while not os.path.exists(os.path.join(workdir, "ready")):
                assert proc.poll() is None, "linetable.py exited: %s" % proc.stderr.read()
                assert time.time() < deadline, "linetable.py not ready in 60 s"
                time.sleep(0.01)
            with open(os.path.join(workdir, "truth.json")) as f:
                truth = json.load(f)
            problems = []
            with stopped(proc.pid), pyunwind.open_process(proc.pid) as target:
                snap = target.collect()
                frames = [f for th in snap.threads for f in th.frames
                          if f.function == "parked"]
                assert frames, "no parked() frame in %r" % snap.threads
                lt = frames[0].line_table()
                assert lt == target.line_table(frames[0]) == snap.line_table(frames[0])
            if (lt.firstlineno, lt.code_length) != (truth["firstlineno"],
                                                    truth["code_length"]):
                problems.append("firstlineno, code length %s, the target's %s" % (
                    (lt.firstlineno, lt.code_length),
                    (truth["firstlineno"], truth["code_length"])))
            if lt.error or not lt.ranges or lt.at(frames[0].instruction_offset or 0) is None:
                problems.append("table %r" % (lt,))
            for i, pos in enumerate(truth.get("positions", [])):
                r = lt.at(2 * i)
                got = r and [r.line, r.end_line, r.column, r.end_column]
                if got != pos:
                    problems.append("code unit %d: %s, co_positions() %s" % (i, got, pos))
            for start, end, line in truth.get("lines", []):
                for off in range(start, end, 2):
                    r = lt.at(off)
                    if r is None or r.line != line:
                        problems.append("offset %d: line %s, co_lines() %s"
                                        % (off, r and r.line, line))
            for off, line in truth["starts"]:
                r = lt.at(off)
                if line is not None and (r is None or r.line != line):
                    problems.append("offset %d: line %s, dis.findlinestarts() %s"
                                    % (off, r and r.line, line))
            assert not problems, "\n".join(problems[:10])
        finally:
            proc.kill()
            proc.wait()
    return go


def steady(doc):
    """@doc without the CPU times (holding a thread with ptrace wakes it for a moment)."""
    doc = json.loads(json.dumps(doc))
    for th in doc.get("threads", []):
        th.pop("cpu_seconds", None)
    return doc


def cython_case(py):
    """Cython functions as frames through the API: collect(native=True) of a live process
    (the API holds it with ptrace, as the CLI does) with the moved module's sources path-mapped,
    against the target's truth as test-cython checks the CLI, and against `pyunwind bt --native
    --json` of the same stop; a Cython frame's .pyx line and listing through the API."""
    def go():
        sys.path.insert(0, os.path.join(REPO, "python"))
        import pyunwind
        moddir = modules_for(py)
        maps = {os.path.join(moddir, "mv"): os.path.join(moddir, "mv-moved")}
        problems = []
        with Target(py, "cython_calls", env=target_env(moddir)) as t:
            with t.stopped():
                with pyunwind.open_process(t.pid, path_maps=maps) as target:
                    snap = target.collect(native=True)
                    doc = snap.document()
                    cython = [(th, f) for th in snap.threads for f in th.frames
                              if f.kind == "cython"]
                    for th, f in cython:
                        if not f.line:
                            continue
                        line = snap.line_text(f, table=False)
                        if os.path.basename(f.file) not in line or \
                                ("line %d" % f.line) not in line:
                            problems.append("line_text() of Cython frame %s (%s:%s): %r"
                                            % (f.qualname, f.file, f.line, line[:300]))
                        listing = snap.source(f)
                        if not any(re.match(r"\s*>\s*%d\s" % f.line, l)
                                   for l in listing.splitlines()):
                            problems.append("source() of Cython frame %s marks no line %d: %r"
                                            % (f.qualname, f.line, listing[:300]))
                want = cli_native_json(*path_map(moddir) + [t.pid])
            check_cython_doc(moddir, t.truth, doc, "api live", mapped=True)
        if not any(f.file and f.file.endswith(".pyx") and f.line for _, f in cython):
            problems.append("no Cython frame with a .pyx line among %d" % len(cython))
        if steady(doc) != steady(want):
            problems.append("collect(native=True).document() differs from bt --native --json "
                            "in %s" % [k for k in want if doc.get(k) != want[k]])
        typed = [[(f.kind, f.function, f.qualname, f.file, f.line) for f in th.frames]
                 for th in snap.threads]
        if typed != [[(f["kind"], f.get("function"), f.get("qualname"), f.get("file"),
                       f.get("line")) for f in th["frames"]] for th in want["threads"]]:
            problems.append("typed frames differ from bt --native --json's")
        assert not problems, "\n".join(problems[:10])
    return go


def mypy_case():
    """The package's typed API passes mypy --strict (Debian's python3-mypy, from make deps);
    the adapters' shared binding it imports is checked where the package calls it."""
    rc, out, err = run(["/usr/bin/python3", "-m", "mypy", "--strict", "--follow-imports=silent",
                        "--no-incremental", os.path.join(REPO, "python", "pyunwind",
                                                        "__init__.py")], timeout=600)
    assert rc == 0, "mypy --strict python/pyunwind: status %d\n%s%s" % (rc, out[-3000:],
                                                                         err[-2000:])
    # A user's script, checked as a user checks it: `mypy --strict script.py` with the package
    # on MYPYPATH, every module of the package followed (its binding module too).
    script = os.path.join(WORK, "typed_user.py")
    with open(script, "w") as f:
        f.write(TYPED_USER)
    rc, out, err = run(["/usr/bin/python3", "-m", "mypy", "--strict", "--no-incremental",
                        script], timeout=600,
                       env=dict(os.environ, MYPYPATH=os.path.join(REPO, "python")))
    assert rc == 0, "mypy --strict of a script using the API: status %d\n%s%s" % (
        rc, out[-3000:], err[-2000:])


TYPED_USER = """
from typing import Dict, List, Optional, Tuple

import pyunwind


def look(pid: int, core: str) -> List[Tuple[str, int]]:
    out: List[Tuple[str, int]] = []
    with pyunwind.open_process(pid, path_maps={"/a": "/b"}) as target:
        snap: pyunwind.Snapshot = target.collect(locals=True, limits={"depth": 2}, limit=5)
        for thread in snap:
            name: Optional[str] = thread.name
            for frame in thread:
                if frame.kind == "python" and frame.line is not None:
                    out.append((frame.name or "?", frame.line))
                    for local in frame.locals or ():
                        shown: Optional[str] = local.repr
                    value: pyunwind.Value = target.print(frame, "self")
                    table: pyunwind.LineTable = frame.line_table()
                    where: Optional[pyunwind.LineRange] = table.at(frame.instruction_offset or 0)
        tasks: pyunwind.Tasks = target.tasks()
        heap: pyunwind.Heap = target.heap(top=3)
        doc: Dict[str, object] = snap.document()
        counts: Tuple[int, int] = target.read_counts()
        with target.stopped() as held:
            n: int = held.held
    try:
        pyunwind.open_core(core, max_unpacked="1G").collect(native="native_all")
    except pyunwind.ArgumentError as e:
        code: int = e.code
    except pyunwind.Error as e:
        message: str = e.message
    triaged: Dict[str, object] = pyunwind.triage(core)
    return out
"""


def doc_examples():
    """The examples of doc/python-api.md as the page has them: {name: source}."""
    with open(os.path.join(REPO, "doc", "python-api.md"), encoding="utf-8") as f:
        text = f.read()
    out = {}
    for block in text.split("```python\n")[1:]:
        code = block.split("```", 1)[0]
        first = code.splitlines()[0]
        if first.startswith("# example: "):
            out[first[len("# example: "):].strip()] = code
    return out


def examples_case(py):
    """The page's triage script over a directory of cores, and its sampler on a live process,
    run as a user would (the checkout's package), their output checked against the CLI's
    triage and the target's truth."""
    def go():
        if "error" in SHARED:
            raise AssertionError(SHARED["error"])
        examples = doc_examples()
        assert set(examples) >= {"triage_dir.py", "sampler.py", "leak_hunt.py"}, \
            sorted(examples)
        work = tempfile.mkdtemp(prefix="examples-", dir=WORK)
        for name, code in examples.items():
            with open(os.path.join(work, name), "w") as f:
                f.write(code)
        env = dict(os.environ, PYTHONPATH=os.path.join(REPO, "python"))
        cores = os.path.join(work, "cores")
        os.mkdir(cores)
        os.symlink(SHARED["core"], os.path.join(cores, "crash.core"))
        os.symlink(SHARED["text"], os.path.join(cores, "notes.txt"))
        rc, out, err = run([sys.executable, os.path.join(work, "triage_dir.py"), cores],
                           env=env)
        assert rc == 0, "triage_dir.py: status %d\n%s" % (rc, err[-2000:])
        want = SHARED["cli_triage"]
        problems = []
        head = "%s  1 core(s), e.g. crash.core (%s, Python %s)" % (
            want["signature"], want["crash"]["signal_name"], want["python"]["version"])
        lines = out.splitlines()
        if head not in lines:
            problems.append("triage_dir.py: no line %r in:\n%s" % (head, out))
        else:
            at = lines.index(head) + 1
            got = [l.strip() for l in lines[at:at + len(want["signature_frames"])]]
            if got != want["signature_frames"]:
                problems.append("triage_dir.py: frames %r, the CLI's %r"
                                % (got, want["signature_frames"]))
        if not any(l.startswith("notes.txt: not triaged: ") for l in lines):
            problems.append("triage_dir.py: the text file not reported:\n%s" % out)
        # The leak hunt on the core: the CLI's census, row for row, and each of the largest
        # objects with the chain the CLI's --path gives (or none where it finds none).
        rc, out, err = run([sys.executable, os.path.join(work, "leak_hunt.py"), SHARED["core"]],
                           env=env)
        assert rc == 0, "leak_hunt.py: status %d\n%s" % (rc, err[-2000:])
        rc, cli_heap, err = run([CLI, "heap", "--json", "--top", "5", "--biggest", "3",
                                 SHARED["core"]])
        assert rc == 0, "pyunwind heap: status %d\n%s" % (rc, err[-2000:])
        cli_heap = json.loads(cli_heap)
        want = ["%d objects, %d bytes" % (cli_heap["objects"], cli_heap["bytes"])]
        want += ["%10d %12d  %s" % (r["count"], r["bytes"], r["type"]) for r in cli_heap["types"]]
        for b in cli_heap["biggest"]:
            rc, p, _ = run([CLI, "heap", "--json", "--path", b["address"], SHARED["core"]])
            want.append("%#x %s %d bytes: %s" % (int(b["address"], 16), b["type"], b["bytes"],
                                                json.loads(p)["expr"] if rc == 0 else
                                                "(no root reaches it)"))
        if out.splitlines() != want:
            problems.append("leak_hunt.py printed:\n%s\nthe CLI says:\n%s"
                            % (out, "\n".join(want)))
        with Target(py, "scenario") as t:
            rc, out, err = run([sys.executable, os.path.join(work, "sampler.py"), str(t.pid),
                                "1.5"], env=env)
            assert rc == 0, "sampler.py: status %d\n%s" % (rc, err[-2000:])
            lines = out.splitlines()
            n = int(lines[0].split()[0])
            tops = set()
            for th in t.truth["threads"]:
                if th["frames"]:
                    f = th["frames"][0]
                    tops.add((f.get("qualname") or f["function"], f["file"], f["line"]))
            entries = []
            for l in lines[1:]:
                count, rest = l.split(None, 1)
                name, where = rest.rsplit(" (", 1)
                path, line = where[:-1].rsplit(":", 1)
                entries.append((int(count), (name, path, int(line))))
            if n < 5:
                problems.append("sampler.py: %d snapshots in 1.5 s" % n)
            for count, key in entries:
                if key not in tops or count != n:
                    problems.append("sampler.py: %r counted %d of %d, not a parked thread's "
                                    "innermost frame in %d snapshots" % (key, count, n, n))
            if len(entries) != min(10, len(tops)):
                problems.append("sampler.py: %d entries for %d parked places"
                                % (len(entries), len(tops)))
        assert not problems, "\n".join(problems[:10])
    return go


def main():
    pys = [py for py in selected() if runs_pip(py)]
    cases = [("pyapi repeat %s" % py.label, repeat_case(py)) for py in selected()]
    cases += [("pyapi line table %s" % py.label, line_table_case(py)) for py in selected()]
    cases += [("pyapi cython %s" % py.label, cython_case(py)) for py in selected()]
    cases.append(("pyapi mypy --strict", mypy_case))
    cases.append(("pyapi one path, two interpreters in turn", one_path_case()))
    cases.append(("pyapi one path, two non-PIE interpreters in turn, two processes each",
                  non_pie_case()))
    cases += [("pyapi %s (the checkout's package from this host's Python)" % py.label,
               old_case(py)) for py in selected() if py not in pys]
    if pys:
        try:
            setup(pys)
        except (HarnessError, OSError, ValueError, subprocess.SubprocessError) as e:
            SHARED["error"] = "set-up: %s" % e
        cases.append(("pyapi doc examples", examples_case(pys[-1])))
        cases += [("pyapi %s%s" % (py.label, " (pip install . from the checkout)"
                                  if i == 0 else ""), case(py, i == 0))
                 for i, py in enumerate(pys)]
    else:
        cases += [("pyapi: an interpreter that runs pip",
                  lambda: (_ for _ in ()).throw(AssertionError("none in the matrix")))]
    try:
        return run_cases(cases, prefix="test-pyapi")
    finally:
        if not os.environ.get("PYUNWIND_KEEP"):
            shutil.rmtree(WORK, ignore_errors=True)
            shutil.rmtree(TRIAGE_WORK, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
