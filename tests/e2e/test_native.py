#!/usr/bin/env python3
# test_native - merged native and Python stacks (py-bt --native, pyunwind bt --native) end to
# end: for every interpreter of the matrix, a live process, a gdb core and a kernel crash core of
# tests/targets/native.py, read by the CLI (elfutils unwinding) and by gdb and lldb (their own
# unwinding). The Python side must equal what the target reported about itself; the native
# side's order is checked by where known functions sit: qsort between the Python callback it
# calls and the Python caller, libc's memset inner to the Python frame that called it, eval
# calls re-entered from C (__getattr__, sorted(key=...)) and inline recursion in order. A core
# whose stack was cut must give the "not merged" line, never an interleaving. On Debian's
# python3.11, real libraries call back into Python (tests/targets/native_libs.py: lxml's XPath
# extension function, libyaml reading a Python stream through PyYAML's C loader, numpy's
# frompyfunc): their frames must sit between the callback and its caller, the stripped
# modules' nameless frames must say which module they are, and the native frames must be those
# of the debugger's own bt (gdb's for the CLI; each debugger's own for its py-bt, level for level).
#
#   tests/e2e/test_native.py [-j N] [FILTER...]     (make test-native)
import json
import os
import re
import struct
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from harness import REPO, Target, run_cases, selected, gdb_batch, lldb_batch  # noqa: E402

CLI = os.path.join(REPO, "build", "pyunwind")


def is_qsort(f):
    """libc's qsort (or the merge sort inside it, which calls the callback), as symbols name
    them: qsort, qsort_r, __GI___qsort_r, msort_with_tmp.part.0."""
    fn = f.get("function") or ""
    return f["kind"] == "native" and ("qsort" in fn or fn.startswith("msort"))


def cli_json(*args):
    p = subprocess.run([CLI, "bt", "--json", "--native"] + [str(a) for a in args],
                       capture_output=True, timeout=180, stdin=subprocess.DEVNULL)
    if p.returncode != 0:
        raise AssertionError("pyunwind bt --native %s: status %d: %s"
                             % (" ".join(map(str, args)), p.returncode,
                                p.stderr.decode("utf-8", "replace")[-2000:]))
    return json.loads(p.stdout.decode("utf-8"))


SEP = "@@pyunwind-native-next@@"


def debugger_json(kind, target_args, backtraces=False, setup=()):
    """py-bt --native --all --json in gdb or lldb, after the debugger commands @setup; with
    @backtraces also the debugger's own backtrace of every thread (gdb: with and without frame
    filters). Returns (doc, [texts])."""
    cmds = ["py-bt --native --all --json"]
    if backtraces:
        cmds += ["thread apply all bt", "thread apply all bt -no-filters"] if kind == "gdb" \
            else ["bt all"]
    run = gdb_batch if kind == "gdb" else lldb_batch
    # lldb: the separator is a registered command whose result carries the marker, so it stays
    # in order with the other commands' results ('script print' goes through Python's stdout).
    sep = ("echo %s\\n" % SEP) if kind == "gdb" else "pyu-native-sep"
    seq = [] if kind == "gdb" else [
        "script def _pyu_native_sep(debugger, command, result, internal_dict): "
        "result.PutCString('%s' + '%s')" % (SEP[:5], SEP[5:]),
        "command script add -f _pyu_native_sep pyu-native-sep"]
    seq += list(setup)
    for c in cmds:
        seq += [c, sep]
    rc, out, err = run(target_args, seq, timeout=240)
    parts = out.split(SEP + "\n")
    start = parts[0].find('{"pyunwind"')
    if start < 0 or len(parts) < len(cmds):
        raise AssertionError("%s printed no JSON (status %d):\n%s\n%s"
                             % (kind, rc, out[-3000:], err[-3000:]))
    doc, _ = json.JSONDecoder().raw_decode(parts[0][start:])
    return doc, parts[1:len(cmds)]


def check_bt_decoration(kind, texts, where):
    """The debugger's own backtrace names the Python frames around qsort: the callback on an
    eval-loop frame inner to qsort, the caller on one outer to it; gdb's without filters not."""
    lines = texts[0].splitlines()
    pos = lambda pred: next((i for i, l in enumerate(lines) if pred(l)), -1)  # noqa: E731
    cb = pos(lambda l: "[Python: " in l and "in compare_blocks" in l)
    q = pos(lambda l: "qsort" in l and "[Python: " not in l and l.lstrip().startswith(
        ("#", "frame #")) and cb >= 0 and lines.index(l) > cb)
    caller = pos(lambda l: "[Python: " in l and "in run_qsort" in l)
    if not (0 <= cb < q < caller):
        raise AssertionError("%s %s bt: expected [Python: compare_blocks] < qsort < "
                             "[Python: run_qsort], found at %s:\n%s"
                             % (where, kind, (cb, q, caller), texts[0][-4000:]))
    if kind == "gdb" and "[Python: " in texts[1]:
        raise AssertionError("%s: bt -no-filters still shows Python frames" % where)


def debugger_doc(kind, target_args):
    return debugger_json(kind, target_args)[0]


def scenario_of(tt):
    if tt.get("crashing"):
        return "crash"
    return tt.get("scenario") or "main"


def position(frames, pred):
    for i, f in enumerate(frames):
        if pred(f):
            return i
    return -1


def is_py(name):
    return lambda f: f["kind"] == "python" and f["function"] == name


def libname(f):
    return os.path.basename(f.get("library") or "")


def check_thread(tt, t, where, extension_frame=None):
    """Problems with one merged thread (JSON) against its truth entry. @extension_frame: whether
    gdb's own backtrace has a frame of _testcapi in the vectorcall thread (None: unknown)."""
    scenario = scenario_of(tt)
    label = "%s thread %s" % (where, scenario)
    frames = t["frames"]
    py = [(f["function"], f["line"]) for f in frames if f["kind"] == "python"]
    want = [(f["function"], f["line"]) for f in tt["frames"]]
    if py != want:
        return ["%s: Python frames %s, the target reported %s" % (label, py[:8], want[:8])]
    if t.get("merge_error") is not None:
        return ["%s: not merged: %s" % (label, t["merge_error"])]
    levels = [f["debugger_level"] for f in frames if f["kind"] == "native"]
    if levels != sorted(levels) or len(set(levels)) != len(levels):
        return ["%s: native frames out of order: debugger levels %s" % (label, levels)]
    numbers = [f["level"] for f in frames if f["kind"] != "python"]
    if numbers != sorted(numbers):
        return ["%s: native frames numbered out of order: %s" % (label, numbers)]
    problems = []

    def order(*preds_names):
        idx = [(position(frames, p), n) for p, n in preds_names]
        if any(i < 0 for i, _ in idx) or [i for i, _ in idx] != sorted(i for i, _ in idx):
            problems.append("%s: expected %s in this order, found at %s" % (
                label, " < ".join(n for _, n in idx), [i for i, _ in idx]))

    if scenario == "qsort":
        order((is_py("compare_blocks"), "compare_blocks"),
              (is_qsort, "qsort"),
              (is_py("run_qsort"), "run_qsort"))
    elif scenario == "crash":
        order((lambda f: f["kind"] == "native" and libname(f).startswith("libc."), "libc"),
              (is_py("crash_point"), "crash_point"))
        if frames and frames[0]["kind"] != "native":
            problems.append("%s: the innermost frame is not the native crash site" % label)
    elif scenario == "getattr":
        order((is_py("__getattr__"), "__getattr__"), (is_py("run_getattr"), "run_getattr"))
    elif scenario == "vectorcall":
        # _testcapi's own function (test_pyobject_vectorcall where symbols name it) is no
        # interpreter plumbing: --native shows it between the callback and its caller whenever
        # gdb's bt has it (a build may compile it to a tail call: then no frame is there).
        ext = (lambda f: f["kind"] == "native" and libname(f).startswith("_testcapi"),
               "a frame of _testcapi")
        if extension_frame:
            order((is_py("vectorcall_blocks"), "vectorcall_blocks"), ext,
                  (is_py("run_vectorcall"), "run_vectorcall"))
        elif extension_frame is False and position(frames, ext[0]) >= 0:
            problems.append("%s: a frame of _testcapi that gdb's bt does not have" % label)
    elif scenario == "sorted":
        order((is_py("key_blocks"), "key_blocks"), (is_py("run_sorted"), "run_sorted"))
    return problems


def check_doc(truth, doc, where, unmergeable=(), extension_frame=None):
    """Every thread of the truth merged and in order; @unmergeable: scenarios allowed to be
    reported "not merged" (with their Python frames intact) - never merged wrongly."""
    problems = []
    threads = {t["thread_id"]: t for t in doc.get("threads", [])}
    for tt in truth["threads"]:
        t = threads.get(tt["thread_id"])
        if t is None:
            problems.append("%s: thread %s missing" % (where, tt["thread_id"]))
            continue
        if t.get("merge_error") is not None and scenario_of(tt) in unmergeable:
            py = [(f["function"], f["line"]) for f in t["frames"] if f["kind"] == "python"]
            if py != [(f["function"], f["line"]) for f in tt["frames"]]:
                problems.append("%s: unmerged thread %s lost Python frames"
                                % (where, scenario_of(tt)))
            continue
        problems += check_thread(tt, t, where, extension_frame)
    if problems:
        raise AssertionError("\n".join(problems))


def has_extension_frame(bt_text):
    """Whether gdb's own backtrace (no frame filters) has a frame in _testcapi: the truth for
    the vectorcall thread (no other thread runs code of _testcapi)."""
    return any(l.startswith("#") and "_testcapi" in l for l in bt_text.splitlines())


def cli_unmergeable(py):
    # None: libffi 3.5's static trampoline page (mapped apart from the library, below it) no
    # longer misplaces libffi for elfutils (core/unwind.c), so the CLI unwinds its closures.
    return ()


def check_full_paths(doc, where):
    """Every library the CLI names is the full path the target maps, live and in a core."""
    short = sorted({f["library"] for t in doc.get("threads", []) for f in t["frames"]
                    if f["kind"] == "native" and f.get("library")
                    and not os.path.isabs(f["library"])})
    if short:
        raise AssertionError("%s: libraries named without their path: %s" % (where, short))


def _plain(name):
    """A function's name without what a compiler or a symbol version added."""
    return re.split(r"[.@]", name or "?")[0]


def merged_segments(t):
    """A merged thread as its Python frames and, between them, its other frames: [(python
    frame or None, {number: set of names})], innermost first."""
    segs, cur = [], {}
    for f in t["frames"]:
        if f["kind"] == "python":
            segs.append((None, cur))
            segs.append(((f["function"], f["line"]), {}))
            cur = {}
        else:
            # a Cython frame by its C function (its Python-level name may come from a .pyx
            # one reader finds and another does not: checked apart)
            name = _plain(f.get("c_function") if f["kind"] == "cython" else f.get("function"))
            cur.setdefault(f["level"], set()).add((f["kind"], name))
    segs.append((None, cur))
    return segs


def check_same_numbers(docs, where):
    """One numbering: the CLI, gdb and lldb (@docs: {reader: doc} of one source) show every
    merged thread with the same Python frames, the same Cython frames, and between each two
    Python frames the same frame numbers, a function named alike numbered alike. (lldb 16
    leaves some inlined calls out; an inlined call has the number of the frame it is inlined
    in, so the numbers stay.) Threads one of them could not merge are left out (the checks of
    each doc say whether that is allowed)."""
    problems = []
    readers = sorted(docs)
    by_tid = {r: {t["native_thread_id"]: t for t in docs[r].get("threads", [])}
              for r in readers}
    compared = 0
    for tid, t in sorted(by_tid[readers[0]].items()):
        ts = [by_tid[r].get(tid) for r in readers]
        if any(x is None or x.get("merge_error") is not None for x in ts):
            continue
        compared += 1
        first = merged_segments(ts[0])
        for r, x in zip(readers[1:], ts[1:]):
            other = merged_segments(x)
            label = "%s thread %s (%s), %s and %s" % (where, tid, t.get("name"), readers[0], r)
            if [p for p, _ in first] != [p for p, _ in other]:
                problems.append("%s: Python frames differ" % label)
                continue
            for i, ((py, a), (_, b)) in enumerate(zip(first, other)):
                if set(a) != set(b):
                    problems.append("%s: frame numbers %s and %s (before Python frame %s)"
                                    % (label, sorted(a), sorted(b), py or i // 2))
                    continue
                names_a = {n: k for k, ns in a.items() for n in ns}
                names_b = {n: k for k, ns in b.items() for n in ns}
                cy_a = {n for n in names_a if n[0] == "cython"}
                cy_b = {n for n in names_b if n[0] == "cython"}
                if cy_a != cy_b:
                    problems.append("%s: Cython frames %s and %s" % (label, cy_a, cy_b))
                for n in set(names_a) & set(names_b):
                    if names_a[n] != names_b[n]:
                        problems.append("%s: %s numbered %d and %d" % (label, n, names_a[n],
                                                                       names_b[n]))
    if problems:
        raise AssertionError("\n".join(problems[:20]))
    return compared


def check_same_libraries(docs):
    """One form of a library's name everywhere: every reader (CLI, gdb, lldb) of every source
    of one process (live, its gdb core; or its kernel core) names the file a native frame runs
    in by the same full path. @docs: {where: doc}."""
    seen = {}  # pc -> (library, where)
    problems = []
    for where, doc in sorted(docs.items()):
        try:
            check_full_paths(doc, where)
        except AssertionError as e:
            problems.append(str(e))
        for t in doc.get("threads", []):
            for f in t["frames"] + (t.get("native_frames") or []):
                if f["kind"] != "native" or not f.get("library"):
                    continue
                first = seen.setdefault(f["pc"], (f["library"], where))
                if first[0] != f["library"]:
                    problems.append("pc %s: %s in %s, %s in %s" % (
                        f["pc"], first[0], first[1], f["library"], where))
    if problems:
        raise AssertionError("\n".join(sorted(set(problems))[:20]))


def debuggers(py):
    """The debuggers that read @py's targets (all of them; PYUNWIND_NATIVE_CLI_ONLY=1 leaves the
    Py_DEBUG builds to the CLI, for a quicker run)."""
    if py.debug and os.environ.get("PYUNWIND_NATIVE_CLI_ONLY"):
        return ()
    return ("gdb", "lldb")


def case_park(py):
    def run():
        with Target(py, "native") as t:
            unm = cli_unmergeable(py)
            ext = None
            gdb_live = None
            if debuggers(py):
                gdb_live = debugger_json("gdb", ["-p", str(t.pid)], backtraces=True)
                ext = has_extension_frame(gdb_live[1][1])
            doc = cli_json(t.pid)
            check_doc(t.truth, doc, "cli live", unm, ext)
            docs = {"cli live": doc}
            for kind in debuggers(py):
                doc, texts = gdb_live if kind == "gdb" else \
                    debugger_json(kind, ["-p", str(t.pid)], backtraces=True)
                check_doc(t.truth, doc, kind + " live", (), ext)
                check_bt_decoration(kind, texts, "live")
                docs[kind + " live"] = doc
            core = t.gcore()
            # gdb 13 leaves stacks guarded by MADV_GUARD_INSTALL pages (glibc 2.42, the
            # unstable builds' root) zero in its cores: no native stack can be unwound there.
            gunm = ("qsort", "getattr", "sorted", "recursion", "main", "vectorcall") \
                if t.gcore_warnings else unm
            doc = cli_json(core, t.executable)
            check_doc(t.truth, doc, "cli gdb core", gunm, ext)
            docs["cli gdb core"] = doc
            if debuggers(py):
                doc = debugger_doc("gdb", [t.executable, core])
                check_doc(t.truth, doc, "gdb gdb core", gunm if t.gcore_warnings else (), ext)
                docs["gdb gdb core"] = doc
                docs["lldb gdb core"] = debugger_doc("lldb", ["-c", core, t.executable])
            check_same_libraries(docs)
            for source in ("live", "gdb core"):
                check_same_numbers({w.split()[0]: d for w, d in docs.items()
                                    if w.endswith(source)}, source)
    return run


def case_crash(py):
    def run():
        with Target(py, "native", mode="crash") as t:
            core = t.crash_core()
            ext = None
            gdb_doc = None
            if debuggers(py):
                gdb_doc, texts = debugger_json("gdb", [t.executable, core], backtraces=True)
                ext = has_extension_frame(texts[1])
            doc = cli_json(core, t.executable)
            check_doc(t.truth, doc, "cli kernel core", cli_unmergeable(py), ext)
            docs = {"cli kernel core": doc}
            if debuggers(py):
                check_doc(t.truth, gdb_doc, "gdb kernel core", (), ext)
                doc = debugger_doc("lldb", ["-c", core, t.executable])
                check_doc(t.truth, doc, "lldb kernel core", (), ext)
                docs.update({"gdb kernel core": gdb_doc, "lldb kernel core": doc})
            check_same_libraries(docs)
            check_same_numbers({w.split()[0]: d for w, d in docs.items()}, "kernel core")
    return run


# ---- real libraries calling back into Python (tests/targets/native_libs.py) -----------------

# scenario: (the Python function the library calls, the caller, the library's module, whether
# Cython made it, the C library under it that calls back)
LIBRARIES = {
    "lxml": ("blocks_in_callback", "run_lxml", "etree", True, "libxml2"),
    "yaml": ("read", "run_yaml", "_yaml", True, "libyaml"),
    "numpy": ("blocks_in_callback", "run_numpy", "_multiarray_umath", False, None),
}
LIBRARY_PYTHONS = ("debian-3.11",)  # Debian's python3-lxml, -yaml and -numpy are built for it


def own_backtraces(kind, text):
    """The debugger's own backtrace of every thread: {kernel tid: [(level, pc)]}, the frames
    it gives an address (gdb: '#N  0x... in', lldb: 'frame #N: 0x...')."""
    import re
    head = re.compile(r"^Thread \d+ \(.*?LWP (\d+)" if kind == "gdb"
                      else r"^\W*thread #\d+: tid = (\d+)")
    line = re.compile(r"^#(\d+)\s+(0x[0-9a-f]+) in " if kind == "gdb"
                      else r"^\W*frame #(\d+): (0x[0-9a-f]+)")
    out, cur = {}, None
    for l in text.splitlines():
        m = head.match(l)
        if m:
            cur = out.setdefault(int(m.group(1)), [])
            continue
        m = line.match(l)
        if m and cur is not None:
            cur.append((int(m.group(1)), int(m.group(2), 16)))
    return out


def check_library_thread(t, scenario, where, own=None, exact=False):
    """One library thread of a merged doc: the library's frames between the Python callback
    and its caller, its nameless frames naming the module, and the native frames as the
    debugger's own backtrace @own [(level, pc)] has them - @exact: the same levels (the
    debugger's own py-bt), else the same frames in the same order (the CLI's unwinder, which
    makes no frames for tail calls the way gdb does from DWARF call sites)."""
    callee, caller, module, cython, clib = LIBRARIES[scenario]
    label = "%s thread %s" % (where, scenario)
    frames = t["frames"]
    problems = []
    of_module = lambda f: f["kind"] == "native" and libname(f).startswith(module + ".")  # noqa
    idx = [position(frames, is_py(callee)), position(frames, of_module),
           position(frames, is_py(caller))]
    if any(i < 0 for i in idx) or idx != sorted(idx):
        problems.append("%s: expected %s < a frame of %s < %s, found at %s"
                        % (label, callee, module, caller, idx))
    if clib and position(frames, lambda f: f["kind"] == "native"
                         and libname(f).startswith(clib)) < 0:
        problems.append("%s: no frame of %s" % (label, clib))
    for f in frames:
        if of_module(f) and not f.get("function") and (
                f.get("extension_module") != module or f.get("cython") is not cython):
            problems.append("%s: frame at %s does not say it is %s module %s: %s" % (
                label, f["pc"], "Cython" if cython else "extension", module, f))
            break
    if own:
        native = [(f["debugger_level"], int(f["pc"], 16)) for f in frames
                  if f["kind"] == "native"]
        if exact:
            have = dict(own)
            wrong = [(lv, hex(pc)) for lv, pc in native if lv in have and have[lv] != pc]
            if wrong:
                problems.append("%s: levels and pcs %s differ from the debugger's own bt %s"
                                % (label, wrong[:4], [(lv, hex(pc)) for lv, pc in own][:30]))
        else:
            pcs = [pc for _, pc in own]
            at = 0
            # the innermost pc (and the calls inlined there) gdb prints without an address
            for _, pc in [n for n in native if n[1] != native[0][1]] if native else []:
                while at < len(pcs) and pcs[at] != pc:
                    at += 1
                if at == len(pcs):
                    problems.append("%s: native frame 0x%x is not in gdb's bt (in order): %s"
                                    % (label, pc, [hex(p) for p in pcs][:30]))
                    break
                at += 1
    return problems


def check_libraries(truth, doc, where, own=None, exact=False, unmergeable=()):
    """Every thread as check_doc; the library threads as check_library_thread."""
    check_doc(truth, doc, where, unmergeable)
    threads = {t["thread_id"]: t for t in doc.get("threads", [])}
    problems = []
    for tt in truth["threads"]:
        scenario = scenario_of(tt)
        t = threads.get(tt["thread_id"])
        if scenario in LIBRARIES and t and t.get("merge_error") is None:
            problems += check_library_thread(
                t, scenario, where,
                (own or {}).get(t.get("native_thread_id") or tt.get("native_thread_id")),
                exact)
    if problems:
        raise AssertionError("\n".join(problems))


def libraries_present(truth, where):
    missing = sorted(set(LIBRARIES) - {scenario_of(tt) for tt in truth["threads"]})
    if missing:
        raise AssertionError("%s: the target could not import %s (Debian's python3-lxml, "
                             "python3-yaml, python3-numpy: make deps)" % (where, missing))


def case_libraries_park(py):
    def run():
        with Target(py, "native_libs") as t:
            libraries_present(t.truth, "live")
            gdb_doc, gdb_texts = debugger_json("gdb", ["-p", str(t.pid)], backtraces=True)
            own = own_backtraces("gdb", gdb_texts[1])
            check_libraries(t.truth, cli_json(t.pid), "cli live", own, exact=True)
            check_libraries(t.truth, gdb_doc, "gdb live", own, exact=True)
            lldb_doc, lldb_texts = debugger_json("lldb", ["-p", str(t.pid)], backtraces=True)
            check_libraries(t.truth, lldb_doc, "lldb live",
                            own_backtraces("lldb", lldb_texts[0]), exact=True)
            core = t.gcore()
            gdb_doc, gdb_texts = debugger_json("gdb", [t.executable, core], backtraces=True)
            own = own_backtraces("gdb", gdb_texts[1])
            check_libraries(t.truth, cli_json(core, t.executable), "cli gdb core", own,
                            exact=True)
            check_libraries(t.truth, gdb_doc, "gdb gdb core", own, exact=True)
    return run


def case_libraries_crash(py):
    def run():
        with Target(py, "native_libs", mode="crash") as t:
            core = t.crash_core()
            libraries_present(t.truth, "kernel core")
            gdb_doc, gdb_texts = debugger_json("gdb", [t.executable, core], backtraces=True)
            own = own_backtraces("gdb", gdb_texts[1])
            check_libraries(t.truth, cli_json(core, t.executable), "cli kernel core", own,
                            exact=True)
            check_libraries(t.truth, gdb_doc, "gdb kernel core", own, exact=True)
            lldb_doc, lldb_texts = debugger_json("lldb", ["-c", core, t.executable],
                                                 backtraces=True)
            check_libraries(t.truth, lldb_doc, "lldb kernel core",
                            own_backtraces("lldb", lldb_texts[0]), exact=True)
    return run


def cases():
    out = []
    for py in selected():
        out.append(("native %s/live+gcore" % py.label, case_park(py)))
        out.append(("native %s/crash" % py.label, case_crash(py)))
        if py.label in LIBRARY_PYTHONS:
            out.append(("native-libs %s/live+gcore" % py.label, case_libraries_park(py)))
            out.append(("native-libs %s/crash" % py.label, case_libraries_crash(py)))
    return out


if __name__ == "__main__":
    sys.exit(run_cases(cases(), prefix="test-native"))
