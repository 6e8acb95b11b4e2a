#!/usr/bin/env python3
# test_cython - Cython functions as frames of the merged native stack (py-bt --native, gdb's
# and lldb's bt, pyunwind bt --native), end to end with real Cython and real interpreters.
#
# tests/targets/cython/cymod.pyx is compiled, -O2 -g as setuptools does, by Cython 0.29
# (Debian's cython3, for 2.7, 3.6 and 3.7) or Cython 3 (the unstable suite's, for 3.8+), once
# per interpreter under six module names, each loaded by one target process:
#   cyld    --line-directives: DWARF names the .pyx                      (line_from "dwarf")
#   cyc     plain: DWARF names the generated .c, whose markers give the line (line_from "c_file")
#   cygone  plain, the .c deleted after the build: names from the symbols, no line, said so
#   cystrip plain, stripped of DWARF (strip --strip-debug): names from the symbols, no line
#   cypkg.cysub  plain, the module of a package, compiled from the directory above it (DWARF 5
#           names its C file relative to a relative directory; the frames' module is qualified)
#   cymv    plain, compiled in mv/, whose sources then moved to mv-moved/: lines through the
#           CLI's --path-map, gdb's substitute-path, lldb's target.source-map; none without
# The target blocks threads in Python -> def -> cdef (inlined) -> Python callback, in a method
# of a cdef class, in a generator body, a coroutine body, a fused def, a closure and a lambda;
# and in a Python `except:` around a Cython function that raised two Cython calls deep; crash
# mode adds a Cython function that crashes in C. Truth: the Python frames as the target reports
# them, the Cython frames' .pyx lines from the "@name" marks in the .pyx, whether an inlinable
# function survived inlining from the module's own symbol table, and each handled exception's
# traceback as the target's traceback.extract_tb gives it (its Cython entries' lines are those
# __Pyx_AddTraceback recorded). Checked: the CLI (with and without --path-map), gdb and lldb on
# the live process and on a gdb core, all three on the kernel core of the crash; gdb's and
# lldb's own bt decorated; py-up/py-down and the debugger's frame command selecting Cython
# frames, py-line/py-list/py-locals on them (gdb and lldb, live and kernel core). The cases of
# all interpreters run in parallel (-j); a target, its gdb core and its kernel core are shared
# by every check of that interpreter.
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
from test_native import check_same_numbers, cli_json, debugger_json  # noqa: E402
from test_adapters import no_traceback, run_debugger  # noqa: E402

# Real paths: the files DWARF names are those the compiler saw (.cache may be a symbolic link).
CACHE = os.path.realpath(os.environ.get("PYUNWIND_CACHE") or os.path.join(REPO, ".cache"))
CYTHON_ROOT = os.path.join(CACHE, "cython", "root")
SID_ROOT = os.path.join(CACHE, "sid", "root")
BUILDS = os.path.join(CACHE, "cython", "builds")
PYX = os.path.join(REPO, "tests", "targets", "cython", "cymod.pyx")
CLI = os.path.join(REPO, "build", "pyunwind")
CFLAGS = ["-O2", "-g", "-fwrapv", "-fno-strict-aliasing", "-DNDEBUG", "-fPIC", "-shared"]
MOVED = "cymv"
MODULES = ("cyld", "cyc", "cygone", "cystrip", "cypkg.cysub", MOVED)
LINE_FROM = {"cyld": "dwarf", "cyc": "c_file", "cygone": None, "cystrip": None,
             "cypkg.cysub": "c_file", MOVED: "c_file"}
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


def rel(module):
    """The path of @module's files under a build directory, without the suffix."""
    return "mv/cymv" if module == MOVED else module.replace(".", "/")


def generated_c(py, module, line_directives):
    """The C file Cython makes of cymod.pyx as @module (a package's module is compiled as
    Cython is run on one: from the directory above the package), with that .pyx beside it: the
    same for every interpreter a Cython version serves, so made once per Cython."""
    cmd, env, version = cython_command(py)
    with open(PYX, "rb") as f:
        text = f.read()
    digest = hashlib.sha256(text + version.encode()).hexdigest()[:16]
    key = "gen-%s-%s-%s" % (module, "ld" if line_directives else "plain", digest)
    name = module.replace(".", "/")

    def build(tmp):
        if "/" in name:
            os.makedirs(os.path.join(tmp, os.path.dirname(name)))
            open(os.path.join(tmp, os.path.dirname(name), "__init__.py"), "w").close()
        with open(os.path.join(tmp, name + ".pyx"), "wb") as f:
            f.write(text)
        run(cmd + (["--line-directives"] if line_directives else []) +
            ["-o", name + ".c", name + ".pyx"], cwd=tmp, env=env)

    return os.path.join(locked_build(key, build), name + ".c")


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
    """The directory holding the builds of cymod for @py (see the top of this file)."""
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
            base = os.path.join(tmp, rel(m))
            os.makedirs(os.path.dirname(base), exist_ok=True)
            if "." in m:
                open(os.path.join(os.path.dirname(base), "__init__.py"), "w").close()
            shutil.copy(sources[m], base + ".c")
            shutil.copy(sources[m][:-2] + ".pyx", base + ".pyx")
            # relative names, as setuptools compiles: DWARF joins them to the build directory
            # (the moved module's is its own directory; its .so goes beside the others)
            cwd = os.path.dirname(base) if m == MOVED else tmp
            out = os.path.join(tmp, m + ".so") if m == MOVED else base + ".so"
            run(["gcc"] + CFLAGS + ["-I" + d for d in incs] +
                [os.path.relpath(base + ".c", cwd), "-o", out], cwd=cwd)
        os.unlink(os.path.join(tmp, "cygone.c"))
        run(["strip", "--strip-debug", os.path.join(tmp, "cystrip.so")])
        os.unlink(os.path.join(tmp, "cystrip.c"))
        os.rename(os.path.join(tmp, "mv"), os.path.join(tmp, "mv-moved"))

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


def path_map(moddir):
    """The --path-map that leads to the moved module's sources."""
    return ["--path-map", "%s=%s" % (os.path.join(moddir, "mv"), os.path.join(moddir, "mv-moved"))]


def debugger_path_map(kind, moddir):
    """The same rule as the debugger's own setting: gdb's substitute-path, lldb's source-map."""
    frm, to = os.path.join(moddir, "mv"), os.path.join(moddir, "mv-moved")
    if kind == "gdb":
        return ["set substitute-path %s %s" % (frm, to)]
    return ["settings set target.source-map %s %s" % (frm, to)]


def has_symbol(path, name):
    out = run(["nm", path])
    return any(line.split()[-1] == name for line in out.splitlines() if line.split())


def expected_cython(moddir, module, kind, mapped=False):
    """The Cython frames of scenario @kind in @module, innermost first: (qualname, function,
    file, line, line_from); qualname None where the symbol alone cannot tell it (a closure's
    enclosing function reads as a class). The moved module has lines only through the path map
    (@mapped)."""
    pyx = os.path.join(moddir, rel(module) + ".pyx")
    lines = LINE_FROM[module] is not None and (module != MOVED or mapped)
    loc = (lambda mark: (pyx, MARKS[mark], LINE_FROM[module])) if lines else \
        (lambda mark: (None, None, None))
    so = os.path.join(moddir, (module if module == MOVED else rel(module)) + ".so")

    def kept(symbol):
        # a function the compiler may inline: a frame where DWARF describes the inlining, or
        # where it was not inlined
        return module != "cystrip" or has_symbol(so, symbol)

    if kind == "outer":
        inner = kept("__pyx_f_%s_inner" % "".join("%d%s" % (len(p), p)
                                                  for p in module.split(".")))
        return ([("inner", "inner") + loc("inner")] if inner else []) + \
            [("outer", "outer") + loc("outer")]
    if kind == "method":
        return [("Klass.method", "method") + loc("method")]
    if kind in ("generate", "coroutine"):
        name = kind if lines else "<generator>"
        return [(name, name) + loc(kind)]
    if kind == "crash":
        return [("crash", "crash") + loc("crash")]
    if kind == "fused":
        return [("fused_def", "fused_def") + loc("fused_def")]
    if kind == "closure":
        return [("closure.<locals>.inner_fn" if lines else "closure.inner_fn", "inner_fn") +
                loc("inner_fn"),
                ("closure", "closure") + loc("closure")]
    if kind == "lambda":
        lam = kept("__pyx_lambda_funcdef_lambda")
        return ([("with_lambda.<locals>.<lambda>" if lines else "<lambda>", "<lambda>") +
                 loc("lambda")] if lam else []) + \
            [("with_lambda", "with_lambda") + loc("with_lambda")]
    if kind == "raise":
        return []
    raise KeyError(kind)


def check_traceback(tt, t, label):
    """The handled exception's traceback: every entry as the target's extract_tb gives it,
    Cython's (__Pyx_AddTraceback) with the line Cython recorded."""
    want = [tuple(e) for e in tt.get("traceback") or []]
    if len(want) < 3:
        return ["%s: the target reported no traceback of its own: %s" % (label, want)]
    exc = t.get("exception") or {}
    got = [(e["file"], e["line"], e["function"]) for e in exc.get("traceback") or []]
    if got != want:
        return ["%s: traceback %s, the target's extract_tb %s" % (label, got, want)]
    return []


def check_thread(moddir, tt, t, where, mapped=False):
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
    want_cy = expected_cython(moddir, module, kind, mapped)
    got_cy = [(f["qualname"], f["function"], f["file"], f["line"], f["line_from"])
              for f in frames if f["kind"] == "cython"]
    problems = []
    if got_cy != want_cy:
        problems.append("%s: Cython frames %s, expected %s (no line because: %s)"
                        % (label, got_cy, want_cy, [f["no_line_reason"] for f in frames
                                                    if f["kind"] == "cython"]))
    for f in frames:
        if f["kind"] == "cython" and (f["line"] is None) != bool(f["no_line_reason"]):
            problems.append("%s: %s: a line and a reason for none: %s" % (label, f["qualname"],
                                                                          f))
        # a lambda's symbol names no module: it is the extension's own name
        if f["kind"] == "cython" and f["module"] != module and not (
                f["function"] == "<lambda>" and f["module"] == module.split(".")[-1]):
            problems.append("%s: %s: module %r, not %r" % (label, f["qualname"], f["module"],
                                                          module))
        if f["kind"] == "native" and (f["function"] or "").startswith(("__pyx_", "__Pyx_")):
            problems.append("%s: Cython's own frame %s shown" % (label, f["function"]))
    if kind == "raise":
        return problems + check_traceback(tt, t, label)
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


def check_doc(moddir, truth, doc, where, unmergeable=False, mapped=False):
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
            problems += check_thread(moddir, tt, t, where, mapped)
    if problems:
        raise AssertionError("\n".join(problems))


def check_bt(moddir, kind, texts, where):
    """The debugger's own bt names the Cython functions: "[Cython: File ..., line N, in Q]"."""
    text = texts[0]
    for module in ("cyld", "cyc"):
        for qual, _, file, line, _ in expected_cython(moddir, module, "outer") + \
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


SELECT_THREAD = {
    "gdb": "python [t.switch() for t in gdb.selected_inferior().threads() if t.ptid[1] == %d]",
    "lldb": "script lldb.process.SetSelectedThreadByID(%d)"}
SELECT_FRAME = {"gdb": "frame %d", "lldb": "frame select %d"}


def check_select(moddir, kind, args, truth, doc, where):
    """py-up and py-down step through the Cython functions between two Python frames, and the
    debugger's own frame command selects one: py-line shows its .pyx line, py-list lists the
    .pyx around it, py-locals says where its C variables are (cyc, with DWARF) or that nothing
    can read them (cystrip, without). Numbers and the debugger's own levels are those the
    debugger's py-bt --native gave."""
    problems = []
    threads = {t["thread_id"]: t for t in doc["threads"]}
    for module in ("cyc", "cystrip"):
        tt = [x for x in truth["threads"] if x.get("scenario") == "outer." + module][0]
        th = threads[tt["thread_id"]]
        levels = [f["level"] for f in th["frames"] if f["kind"] == "cython"]
        dlevels = [f["debugger_level"] for f in th["frames"] if f["kind"] == "cython"]
        want = expected_cython(moddir, module, "outer")
        label = "%s %s select outer.%s" % (kind, where, module)
        if len(levels) != len(want):
            problems.append("%s: Cython frames at levels %s, expected %s" % (label, levels, want))
            continue
        cmds = [SELECT_THREAD[kind] % th["native_thread_id"]] + ["py-up"] * len(want) + \
            ["py-list", "py-locals", "py-up", "py-down", SELECT_FRAME[kind] % dlevels[0],
             "py-line", "py-list"]
        rc, outs, err = run_debugger(kind, args, cmds)
        no_traceback(label, err, *outs)

        def head(k, qual, file, line):
            return ('cython #%d  File "%s", line %d, in %s' % (k, file, line, qual) if file
                    else "cython #%d  in %s (module %s) [" % (k, qual, module))

        def listed(text, line, mark):
            return any(re.match(r"^\s*>%d\s.*# @%s$" % (line, mark), l)
                       for l in text.splitlines())

        heads = [head(k, w[0], w[2], w[3]) for k, w in zip(levels, want)]
        for i, h in enumerate(heads):
            if not outs[1 + i].startswith(h):
                problems.append("%s: py-up #%d printed %r, expected %r" % (label, i + 1,
                                                                         outs[1 + i][:300], h))
        at = 1 + len(want)
        outer = want[-1]
        if outer[2]:
            if not listed(outs[at], outer[3], "outer"):
                problems.append("%s: py-list lacks >%d:\n%s" % (label, outer[3], outs[at]))
            if "__pyx_v_NAME" not in outs[at + 1] or "Cython function" not in outs[at + 1]:
                problems.append("%s: py-locals: %r" % (label, outs[at + 1]))
        else:
            if "has no .pyx line" not in err:
                problems.append("%s: py-list without a line did not say so: %r"
                                % (label, err[-500:]))
            if "no debug information" not in outs[at + 1]:
                problems.append("%s: py-locals: %r" % (label, outs[at + 1]))
        caller = tt["frames"][1]
        if not outs[at + 2].startswith('#1  File "%s", line %d, in %s' % (
                caller["file"], caller["line"], caller["function"])):
            problems.append("%s: py-up past the Cython frames: %r" % (label, outs[at + 2][:300]))
        if not outs[at + 3].startswith(heads[-1]):
            problems.append("%s: py-down back: %r" % (label, outs[at + 3][:300]))
        if not outs[at + 5].startswith(heads[0]):
            problems.append("%s: py-line after %r: %r" % (label, cmds[at + 4],
                                                          outs[at + 5][:300]))
        inner = want[0]
        if inner[2] and not listed(outs[at + 6], inner[3], inner[0]):
            problems.append("%s: py-list after %r lacks >%d:\n%s" % (label, cmds[at + 4],
                                                                    inner[3], outs[at + 6]))
    if problems:
        raise AssertionError("\n".join(problems))


def target_env(moddir):
    return {"PYU_CYMOD_DIR": moddir, "PYU_CYMODS": ",".join(MODULES)}


def case_park(py):
    def go():
        moddir = modules_for(py)
        with Target(py, "cython_calls", env=target_env(moddir)) as t:
            docs = {"cli": cli_json(t.pid)}
            check_doc(moddir, t.truth, docs["cli"], "cli live")
            check_doc(moddir, t.truth, cli_json(*path_map(moddir) + [t.pid]),
                      "cli live --path-map", mapped=True)
            check_text(moddir, t.pid)
            for kind in ("gdb", "lldb"):
                doc, texts = debugger_json(kind, ["-p", str(t.pid)], backtraces=True)
                check_doc(moddir, t.truth, doc, kind + " live")
                check_bt(moddir, kind, texts, "live")
                check_select(moddir, kind, ["-p", str(t.pid)], t.truth, doc, "live")
                docs[kind] = doc
            check_same_numbers(docs, "live")
            core = t.gcore()
            # gdb 13 leaves the guarded stacks of the unstable builds' glibc zero in its cores
            # (see Target.gcore): their threads cannot be merged there, never merged wrongly.
            unm = bool(t.gcore_warnings)
            docs = {"cli": cli_json(*path_map(moddir) + [core, t.executable])}
            check_doc(moddir, t.truth, docs["cli"], "cli gdb core --path-map", unm, mapped=True)
            docs["gdb"], _ = debugger_json("gdb", [t.executable, core])
            check_doc(moddir, t.truth, docs["gdb"], "gdb gdb core", unm)
            docs["lldb"], _ = debugger_json("lldb", ["-c", core, t.executable])
            check_doc(moddir, t.truth, docs["lldb"], "lldb gdb core", unm)
            check_same_numbers(docs, "gdb core")
    return go


def case_crash(py):
    def go():
        moddir = modules_for(py)
        with Target(py, "cython_calls", mode="crash", env=target_env(moddir)) as t:
            core = t.crash_core()
            docs = {"cli": cli_json(*path_map(moddir) + [core, t.executable])}
            check_doc(moddir, t.truth, docs["cli"], "cli kernel core --path-map", mapped=True)
            for kind, args in (("gdb", [t.executable, core]),
                               ("lldb", ["-c", core, t.executable])):
                doc = debugger_json(kind, args)[0]
                check_doc(moddir, t.truth, doc, kind + " kernel core")
                check_select(moddir, kind, args, t.truth, doc, "kernel core")
                docs[kind] = doc
            check_same_numbers(docs, "kernel core")
            for kind, args in (("gdb", [t.executable, core]),
                               ("lldb", ["-c", core, t.executable])):
                doc = debugger_json(kind, args, setup=debugger_path_map(kind, moddir))[0]
                # Both debuggers name a C file by where their rule found it, so the .pyx
                # beside it is named there too (it must be); the lines must be those of the
                # build, compared under the build's name.
                text = json.dumps(doc)
                moved = json.dumps(os.path.join(moddir, "mv-moved") + os.sep)[1:-1]
                if moved not in text:
                    raise AssertionError("%s kernel core, its own path map: no frame names "
                                         "the moved source under %s" % (kind, moved))
                doc = json.loads(text.replace(
                    moved, json.dumps(os.path.join(moddir, "mv") + os.sep)[1:-1]))
                check_doc(moddir, t.truth, doc, kind + " kernel core, its own path map",
                          mapped=True)
    return go


def cases():
    out = []
    for py in selected():
        out.append(("cython %s/live+gcore" % py.label, case_park(py)))
        out.append(("cython %s/crash" % py.label, case_crash(py)))
    return out


if __name__ == "__main__":
    sys.exit(run_cases(cases(), prefix="test-cython"))
