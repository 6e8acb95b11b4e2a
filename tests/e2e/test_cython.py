#!/usr/bin/env python3
# test_cython - Cython functions as frames of the merged native stack (py-bt --native, gdb's
# and lldb's bt, pyunwind bt --native), end to end with real Cython and real interpreters.
#
# tests/targets/cython/cymod.pyx is compiled, -O2 -g as setuptools does, by Cython 0.29
# (Debian's cython3, for 2.7, 3.6 and 3.7) or Cython 3 (the unstable suite's, for 3.8+), once
# per interpreter under four module names, each loaded by one target process:
#   cyld    --line-directives: DWARF names the .pyx                      (line_from "dwarf")
#   cyc     plain: DWARF names the generated .c, whose markers give the line (line_from "c_file")
#   cygone  plain, the .c deleted after the build: names from the symbols, no line, said so
#   cystrip plain, stripped of DWARF (strip --strip-debug): names from the symbols, no line
# The target blocks threads in Python -> def -> cdef (inlined) -> Python callback, in a method
# of a cdef class, in a generator body and in a coroutine body; crash mode adds a Cython
# function that crashes in C. Truth: the Python frames as the target reports them, the Cython
# frames' .pyx lines from the "@name" marks in the .pyx, whether the cdef function survived
# inlining from the module's own symbol table. Checked: the CLI, gdb and lldb on the live
# process, the CLI and gdb on a gdb core, all three on the kernel core of the crash; gdb's and
# lldb's own bt decorated.
# Builds are cached under the project cache ($PYUNWIND_CACHE or .cache/cython/builds).
#
#   tests/e2e/test_cython.py [-j N] [FILTER...]     (make test-cython)
import fcntl
import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, ".."))
sys.path.insert(0, HERE)
from harness import REPO, Target, run_cases, selected  # noqa: E402
from test_native import cli_json, debugger_json  # noqa: E402

# Real paths: the files DWARF names are those the compiler saw (.cache may be a symbolic link).
CACHE = os.path.realpath(os.environ.get("PYUNWIND_CACHE") or os.path.join(REPO, ".cache"))
CYTHON_ROOT = os.path.join(CACHE, "cython", "root")
SID_ROOT = os.path.join(CACHE, "sid", "root")
BUILDS = os.path.join(CACHE, "cython", "builds")
PYX = os.path.join(REPO, "tests", "targets", "cython", "cymod.pyx")
CLI = os.path.join(REPO, "build", "pyunwind")
CFLAGS = ["-O2", "-g", "-fwrapv", "-fno-strict-aliasing", "-DNDEBUG", "-fPIC", "-shared"]
MODULES = ("cyld", "cyc", "cygone", "cystrip")
LINE_FROM = {"cyld": "dwarf", "cyc": "c_file", "cygone": None, "cystrip": None}
OLD_CYTHON = ("2.7", "3.6", "3.7")  # Cython 3 needs 3.8+


def marks():
    """The .pyx line of each "# @name" mark."""
    out = {}
    with open(PYX) as f:
        for n, line in enumerate(f, 1):
            m = re.search(r"# @(\w+)", line)
            if m:
                out[m.group(1)] = n
    return out


MARKS = marks()


def run(cmd, cwd=None, env=None, timeout=600):
    p = subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout)
    if p.returncode != 0:
        raise AssertionError("%s failed (%d):\n%s%s" % (" ".join(cmd[:4]), p.returncode,
                                                       p.stdout[-2000:], p.stderr[-3000:]))
    return p.stdout


def cython_command(py):
    """(argv prefix, environment, version) of the Cython that compiles for @py."""
    if py.minor in OLD_CYTHON:
        cmd, env = ["/usr/bin/cython3"], dict(os.environ)
    else:
        env = dict(os.environ, PYTHONPATH=os.path.join(CYTHON_ROOT, "usr", "lib", "python3",
                                                       "dist-packages"))
        cmd = ["/usr/bin/python3", "-m", "cython"]
    version = run(cmd + ["--version"], env=env).strip() or "?"
    return cmd, env, version


def locked_build(key, build):
    """BUILDS/key, made by @build(tmpdir) once: built in a scratch directory, renamed into
    place, under a lock so parallel cases (and test runs) build it once."""
    final = os.path.join(BUILDS, key)
    if os.path.exists(os.path.join(final, "done")):
        return final
    os.makedirs(BUILDS, exist_ok=True)
    with open(os.path.join(BUILDS, key + ".lock"), "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if os.path.exists(os.path.join(final, "done")):
            return final
        shutil.rmtree(final, ignore_errors=True)
        tmp = tempfile.mkdtemp(prefix=key + ".", dir=BUILDS)
        try:
            build(tmp)
            open(os.path.join(tmp, "done"), "w").close()
            os.rename(tmp, final)
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
    return final


def generated_c(py, module, line_directives):
    """The C file Cython makes of cymod.pyx as @module, with that .pyx beside it: the same for
    every interpreter a Cython version serves, so made once per Cython."""
    cmd, env, version = cython_command(py)
    with open(PYX, "rb") as f:
        text = f.read()
    digest = hashlib.sha256(text + version.encode()).hexdigest()[:16]
    key = "gen-%s-%s-%s" % (module, "ld" if line_directives else "plain", digest)

    def build(tmp):
        with open(os.path.join(tmp, module + ".pyx"), "wb") as f:
            f.write(text)
        run(cmd + (["--line-directives"] if line_directives else []) +
            ["-o", module + ".c", module + ".pyx"], cwd=tmp, env=env)

    return os.path.join(locked_build(key, build), module + ".c")


def include_dirs(py):
    out = run([py.path, "-c", "import sysconfig; p = sysconfig.get_paths(); "
               "print(p['include']); print(p['platinclude'])"])
    dirs = []
    for d in map(os.path.realpath, out.split()):
        # the unstable builds' headers are unpacked beside them (tools/pythons)
        if d.startswith(SID_ROOT + os.sep):
            d = CYTHON_ROOT + d[len(SID_ROOT):]
        dirs.append(d)
    if any(d.startswith(CYTHON_ROOT) for d in dirs):
        dirs.append(os.path.join(CYTHON_ROOT, "usr", "include"))  # <x86_64-linux-gnu/...>
    return dirs


def modules_for(py):
    """The directory holding the four builds of cymod for @py (see the top of this file)."""
    sources = {m: generated_c(py, m, m == "cyld") for m in MODULES}
    incs = include_dirs(py)
    h = hashlib.sha256()
    for m in MODULES:
        for path in (sources[m], sources[m][:-2] + ".pyx"):
            with open(path, "rb") as f:
                h.update(f.read())
    h.update(("%s %s %s %s" % (os.path.realpath(py.path), py.version, CFLAGS, incs)).encode())
    key = "%s-%s" % (py.label, h.hexdigest()[:16])

    def build(tmp):
        for m in MODULES:
            shutil.copy(sources[m], os.path.join(tmp, m + ".c"))
            shutil.copy(sources[m][:-2] + ".pyx", os.path.join(tmp, m + ".pyx"))
            # relative names, as setuptools compiles: DWARF joins them to the build directory
            run(["gcc"] + CFLAGS + ["-I" + d for d in incs] + [m + ".c", "-o", m + ".so"],
                cwd=tmp)
        os.unlink(os.path.join(tmp, "cygone.c"))
        run(["strip", "--strip-debug", os.path.join(tmp, "cystrip.so")])
        os.unlink(os.path.join(tmp, "cystrip.c"))

    # The build directory's final name is what DWARF must name: build there directly.
    final = os.path.join(BUILDS, key)
    if not os.path.exists(os.path.join(final, "done")):
        os.makedirs(BUILDS, exist_ok=True)
        with open(os.path.join(BUILDS, key + ".lock"), "w") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            if not os.path.exists(os.path.join(final, "done")):
                shutil.rmtree(final, ignore_errors=True)
                os.makedirs(final)
                build(final)
                open(os.path.join(final, "done"), "w").close()
    return final


def has_symbol(path, name):
    out = run(["nm", path])
    return any(line.split()[-1] == name for line in out.splitlines() if line.split())


def expected_cython(moddir, module, kind):
    """The Cython frames of scenario @kind in @module, innermost first: (qualname, file, line,
    line_from)."""
    pyx = os.path.join(moddir, module + ".pyx")
    lines = LINE_FROM[module] is not None
    loc = (lambda mark: (pyx, MARKS[mark], LINE_FROM[module])) if lines else \
        (lambda mark: (None, None, None))
    if kind == "outer":
        # inlined cdef: a frame where DWARF describes the inlining, or where it was not inlined
        inner = module != "cystrip" or has_symbol(os.path.join(moddir, module + ".so"),
                                                  "__pyx_f_%d%s_inner" % (len(module), module))
        return ([("inner",) + loc("inner")] if inner else []) + [("outer",) + loc("outer")]
    if kind == "method":
        return [("Klass.method",) + loc("method")]
    if kind in ("generate", "coroutine"):
        return [((kind if lines else "<generator>"),) + loc(kind)]
    if kind == "crash":
        return [("crash",) + loc("crash")]
    raise KeyError(kind)


def check_thread(moddir, tt, t, where):
    scenario = tt.get("scenario") or "main"
    if tt.get("crashing"):
        scenario = "crash." + MODULES[0]
    label = "%s thread %s" % (where, scenario)
    frames = t["frames"]
    py = [(f["function"], f["line"]) for f in frames if f["kind"] == "python"]
    want = [(f["function"], f["line"]) for f in tt["frames"]]
    if py != want:
        return ["%s: Python frames %s, the target reported %s" % (label, py[:6], want[:6])]
    if t.get("merge_error") is not None:
        return ["%s: not merged: %s" % (label, t["merge_error"])]
    if "." not in scenario:
        return []
    kind, module = scenario.split(".", 1)
    want_cy = expected_cython(moddir, module, kind)
    got_cy = [(f["qualname"], f["file"], f["line"], f["line_from"])
              for f in frames if f["kind"] == "cython"]
    problems = []
    if got_cy != want_cy:
        problems.append("%s: Cython frames %s, expected %s" % (label, got_cy, want_cy))
    for f in frames:
        if f["kind"] == "cython" and (f["line"] is None) != bool(f["no_line_reason"]):
            problems.append("%s: %s: a line and a reason for none: %s" % (label, f["qualname"],
                                                                          f))
        if f["kind"] == "native" and (f["function"] or "").startswith(("__pyx_", "__Pyx_")):
            problems.append("%s: Cython's own frame %s shown" % (label, f["function"]))
    # placed between the Python frames around them: inner to the caller, outer to the callee
    idx = [i for i, f in enumerate(frames) if f["kind"] == "cython"]
    callee = [i for i, f in enumerate(frames) if f["kind"] == "python"][0]
    caller = [i for i, f in enumerate(frames) if f["kind"] == "python"][1]
    if kind == "crash":
        # memset of one byte is a store the compiler writes into the Cython function itself
        if not idx or frames[0]["kind"] == "python" or not callee > max(idx):
            problems.append("%s: expected the crash site (native or the Cython function), then "
                            "the Cython frames, then Python: %s"
                            % (label, [f["kind"] for f in frames[:8]]))
    elif not idx or not (callee < min(idx) and max(idx) < caller):
        problems.append("%s: Cython frames at %s, not between Python frames %d and %d"
                        % (label, idx, callee, caller))
    return problems


def check_doc(moddir, truth, doc, where, unmergeable=False):
    problems = []
    threads = {t["thread_id"]: t for t in doc.get("threads", [])}
    for tt in truth["threads"]:
        t = threads.get(tt["thread_id"])
        if t is None:
            problems.append("%s: thread %s missing" % (where, tt["thread_id"]))
        elif unmergeable and t.get("merge_error") is not None:
            py = [(f["function"], f["line"]) for f in t["frames"] if f["kind"] == "python"]
            if py != [(f["function"], f["line"]) for f in tt["frames"]]:
                problems.append("%s: unmerged thread %s lost Python frames"
                                % (where, tt.get("scenario")))
        else:
            problems += check_thread(moddir, tt, t, where)
    if problems:
        raise AssertionError("\n".join(problems))


def check_bt(moddir, kind, texts, where):
    """The debugger's own bt names the Cython functions: "[Cython: File ..., line N, in Q]"."""
    text = texts[0]
    for module in ("cyld", "cyc"):
        for qual, file, line, _ in expected_cython(moddir, module, "outer") + \
                expected_cython(moddir, module, "method"):
            want = '[Cython: File "%s", line %d, in %s]' % (file, line, qual)
            if want not in text:
                raise AssertionError("%s %s bt lacks %s:\n%s" % (where, kind, want,
                                                                 text[-3000:]))
    if kind == "gdb" and "[Cython: " in texts[1]:
        raise AssertionError("%s: gdb's bt -no-filters still shows Cython frames" % where)


def check_text(moddir, pid):
    """The text form: the .pyx source line under each Cython frame."""
    out = run([CLI, "bt", "--native", str(pid)])
    pyx = os.path.join(moddir, "cyc.pyx")
    want = 'File "%s", line %d, in outer\n        inner(callback, n + 1)  # @outer\n' % (
        pyx, MARKS["outer"])
    if want not in out:
        raise AssertionError("pyunwind bt --native text lacks\n%s\n%s" % (want, out[-3000:]))


def target_env(moddir):
    return {"PYU_CYMOD_DIR": moddir, "PYU_CYMODS": ",".join(MODULES)}


def case_park(py):
    def go():
        moddir = modules_for(py)
        with Target(py, "cython_calls", env=target_env(moddir)) as t:
            check_doc(moddir, t.truth, cli_json(t.pid), "cli live")
            check_text(moddir, t.pid)
            for kind in ("gdb", "lldb"):
                doc, texts = debugger_json(kind, ["-p", str(t.pid)], backtraces=True)
                check_doc(moddir, t.truth, doc, kind + " live")
                check_bt(moddir, kind, texts, "live")
            core = t.gcore()
            # gdb 13 leaves the guarded stacks of the unstable builds' glibc zero in its cores
            # (see Target.gcore): their threads cannot be merged there, never merged wrongly.
            unm = bool(t.gcore_warnings)
            check_doc(moddir, t.truth, cli_json(core, t.executable), "cli gdb core", unm)
            doc, _ = debugger_json("gdb", [t.executable, core])
            check_doc(moddir, t.truth, doc, "gdb gdb core", unm)
    return go


def case_crash(py):
    def go():
        moddir = modules_for(py)
        with Target(py, "cython_calls", mode="crash", env=target_env(moddir)) as t:
            core = t.crash_core()
            check_doc(moddir, t.truth, cli_json(core, t.executable), "cli kernel core")
            check_doc(moddir, t.truth, debugger_json("gdb", [t.executable, core])[0],
                      "gdb kernel core")
            check_doc(moddir, t.truth, debugger_json("lldb", ["-c", core, t.executable])[0],
                      "lldb kernel core")
    return go


def cases():
    out = []
    for py in selected():
        out.append(("cython %s/live+gcore" % py.label, case_park(py)))
        out.append(("cython %s/crash" % py.label, case_crash(py)))
    return out


if __name__ == "__main__":
    sys.exit(run_cases(cases(), prefix="test-cython"))
