# pyapi_check - run by test_pyapi.py under each interpreter, with only the installed `pyunwind`
# package on its path: drives the API against a live process and a core and prints one JSON
# object {"live": bt document, "core": bt document, "triage": triage document,
# "problems": [...]} for the test to compare with the targets' truth and the CLI.
#
#   python pyapi_check.py PID CORE NOT_PYTHON_CORE TEXT_FILE CLI GZIPPED_CORE
#
# CORE "-": the live process alone, read by the checkout's package (PYAPI_FROM=checkout) for an
# interpreter that runs no pip (2.7 - 3.7, the unstable builds).
#
# Every capability of the CLI is also asked through the API and compared with what the CLI
# (CLI, run here on the same stopped process and core) says: locals, value limits, print,
# line tables, source listings, asyncio tasks, native frames.
import dataclasses
import json
import os
import shutil
import struct
import subprocess
import sys
import tempfile

import pyunwind

problems = []


def check(cond, what):
    if not cond:
        problems.append(what)


def expect_error(fn, cls, code, what):
    try:
        fn()
    except cls as e:
        check(e.code == code and e.name == cls.name and isinstance(e, pyunwind.Error) and
              str(e), "%s: %r code %r name %r" % (what, e, e.code, e.name))
        return
    except Exception as e:
        problems.append("%s: raised %r, not %s" % (what, e, cls.__name__))
        return
    problems.append("%s: no error" % what)


pid, core, foreign, text = int(sys.argv[1]), sys.argv[2], sys.argv[3], sys.argv[4]
cli = sys.argv[5]
gz_core = sys.argv[6]
scratch = tempfile.mkdtemp(prefix="pyapi-check-")


def run_cli(*args, json_out=False):
    p = subprocess.run([cli] + [str(a) for a in args], capture_output=True, timeout=300)
    out = p.stdout.decode("utf-8", "replace")
    if p.returncode != 0:
        return None, p.stderr.decode("utf-8", "replace")
    return (json.loads(out) if json_out else out), None


def steady(doc):
    """@doc without what a live process changes between two reads of one stop: the CPU time
    (holding a thread with ptrace wakes it for a moment)."""
    doc = json.loads(json.dumps(doc))
    for th in doc.get("threads", []):
        th.pop("cpu_seconds", None)
    return doc


def same_doc(mine, where, args, what, live=False):
    """The API's document @mine against the CLI's `bt --json ARGS WHERE`."""
    want, err = run_cli("bt", "--json", *(list(args) + [where]), json_out=True)
    if live and want is not None:
        mine, want = steady(mine), steady(want)
    check(want is not None and mine == want, "%s: %s differs from bt --json %s: %s" % (
        where, what, " ".join(map(str, args)), err or
        [k for k in want if mine.get(k) != want[k]] + [
            (i, [k for k in a if a.get(k) != b.get(k)])
            for i, (a, b) in enumerate(zip(mine.get("threads", []), want.get("threads", [])))
            if a != b][:3]))
    return want


def same_exception(fn, cli_args, cls, what, same_message=True):
    """@fn raises @cls where the CLI on @cli_args fails, the CLI's message ending in the API's
    (@same_message)."""
    try:
        fn()
    except pyunwind.Error as e:
        _, err = run_cli(*cli_args)
        check(type(e) is cls and e.code == cls.code and err is not None and e.message and
              (not same_message or err.strip().endswith(e.message.strip())),
              "%s: raised %r, not %s; the CLI said %r" % (what, e, cls.__name__, err))
        return
    problems.append("%s: no error (the CLI: %r)" % (what, run_cli(*cli_args)[1]))


def cli_options_live(target, pid):
    """The CLI's options on a live process (stopped by the test with SIGSTOP; both hold it
    with ptrace as well), through their API equivalents."""
    snap = target.collect(stop=True)
    same_doc(snap.document(), pid, [], "collect(stop=True)", live=True)
    # Native frames of a live process: held with ptrace by the API as by the CLI.
    merged = target.collect(native=True)
    check(target.held == 0, "the process is still held after collect(native=True)")
    want = same_doc(merged.document(), pid, ["--native"], "collect(native=True)", live=True)
    check(any(f.kind == "native" for th in merged.threads for f in th.frames) and
          any(f.kind == "python" for th in merged.threads for f in th.frames),
          "%s: collect(native=True) merged no native and Python frames: %r"
          % (pid, [[f.kind for f in th.frames][:8] for th in merged.threads]))
    if want is not None:
        check([[dataclasses.astuple(f) for f in th.frames] for th in merged.threads] ==
              [[dataclasses.astuple(pyunwind.Frame.from_json(f)) for f in th["frames"]]
               for th in want["threads"]] and
              [th.merge_error for th in merged.threads] ==
              [th.get("merge_error") for th in want["threads"]],
              "%s: typed native frames differ from bt --native's" % pid)
    with target.stopped():
        check(target.held > 0, "stopped() held no thread of %s" % pid)
        limited = target.collect(limit=2)
        same_doc(limited.document(), pid, ["--limit", 2], "collect(limit=2)", live=True)
        full = target.collect()
        check([(len(t.frames), t.frames_omitted) for t in limited.threads] ==
              [(min(2, len(t.frames)), max(0, len(t.frames) - 2)) for t in full.threads] and
              [t.frames[:2] for t in full.threads] == [t.frames for t in limited.threads],
              "%s: collect(limit=2) frames %r" % (pid, [(len(t.frames), t.frames_omitted)
                                                       for t in limited.threads]))
        counts = target.read_counts()
        check(counts[0] > 0 and counts[1] >= 0, "read_counts() %r" % (counts,))


def cli_options_core(core):
    """The CLI's options on a core, through their API equivalents."""
    with pyunwind.open_core(core) as t:
        # bt --native-all, --thread, --limit, --no-source, the default thread and --frame N.
        snap = t.collect(native="native_all")
        same_doc(snap.document(), core, ["--native-all"], "collect(native='native_all')")
        plain = t.collect(details=False)
        text, err = run_cli("bt", "--no-source", core)
        check(plain.text(source=False) == text, "%s: text(source=False) differs from bt "
              "--no-source: %r" % (core, err or plain.text(source=False)[:300]))
        for th in plain.threads[:3]:
            tid = th.native_thread_id
            check(plain.thread(tid) is th, "thread(%s) is not that thread" % tid)
            same_doc(plain.document(thread=tid), core, ["--thread", tid],
                     "document(thread=%s)" % tid)
            text, err = run_cli("bt", "--thread", tid, "--limit", 1, core)
            check(plain.text(thread=tid, limit=1) == text,
                  "%s: text(thread=%s, limit=1) differs from bt --thread --limit 1: %r"
                  % (core, tid, err or plain.text(thread=tid, limit=1)[:300]))
            for number in (0, 1):
                try:
                    frame = plain.frame(number, thread=tid)
                except pyunwind.NotFoundError:
                    continue
                line, err = run_cli("line", "--thread", tid, "--frame", number, core)
                check(plain.line_text(frame, table=False) == line,
                      "%s: line_text(frame(%d, thread=%s)) differs from line --frame: %r"
                      % (core, number, tid, err))
        expect_error(lambda: plain.thread(1), pyunwind.NotFoundError, 9, "thread(1)")
        line, err = run_cli("line", core)
        check(plain.default_thread is not None and
              plain.line_text(plain.frame(), table=False) == line,
              "%s: the default frame's line differs from `line`'s: %r" % (core, err))
        text, err = run_cli("locals", core)
        check(plain.locals_text(plain.frame()) == text, "%s: locals_text() differs from "
              "`locals`: %r" % (core, err))
        text, err = run_cli("heap", "--top", 5, "--biggest", 2, core)
        check(plain.heap_text(top=5, biggest=2) == text, "%s: heap_text() differs from "
              "`heap`: %r" % (core, err))
        try:
            tasks_text = plain.tasks_text(tree=True, source=False)
        except pyunwind.UnsupportedVersionError:
            tasks_text = None
        text, err = run_cli("tasks", "--tree", "--no-source", core)
        check(tasks_text == text, "%s: tasks_text(tree=True) differs from tasks --tree: %r"
              % (core, err))
        if tasks_text is not None:
            tid = plain.default_thread.native_thread_id
            doc, err = run_cli("tasks", "--json", "--locals", "--thread", tid, core,
                               json_out=True)
            check(plain.tasks_document(thread=tid, locals=True) == doc,
                  "%s: tasks_document(thread, locals=True) differs: %s" % (core, err))
    # Where files are read: --path-map, --sysroot, --search-path, --cwd. The innermost
    # Python frame's file, copied with a mark on each line under a mapped directory and under
    # a sysroot: the listing must come from the copy, as the CLI's.
    with pyunwind.open_core(core) as t:
        frame = t.collect().frame()
    src = frame.file
    check(os.path.isabs(src) and os.path.exists(src), "no source file %r" % src)
    if os.path.isabs(src) and os.path.exists(src):
        with open(src, encoding="utf-8") as f:
            lines = f.read().splitlines()
        mapped = os.path.join(scratch, "mapped")
        sysroot = os.path.join(scratch, "sysroot")
        for root, mark, name in ((mapped, "# via path map", os.path.basename(src)),
                                 (sysroot, "# via sysroot", src.lstrip("/"))):
            path = os.path.join(root, name)
            os.makedirs(os.path.dirname(path), exist_ok=True)
            with open(path, "w", encoding="utf-8") as f:
                f.write("".join(l + "  " + mark + "\n" for l in lines))
        for kwargs, args, mark in (
                ({"path_maps": {os.path.dirname(src): mapped}},
                 ["--path-map", "%s=%s" % (os.path.dirname(src), mapped)], "# via path map"),
                ({"sysroot": sysroot}, ["--sysroot", sysroot], "# via sysroot"),
                ({"search_path": [scratch, mapped], "cwd": scratch},
                 ["--search-path", scratch + ":" + mapped, "--cwd", scratch], None)):
            with pyunwind.open_core(core, **kwargs) as t:
                snap = t.collect()
                f = snap.frame()
                listing, err = run_cli("list", *(args + [core]))
                mine = snap.source(f)
                check(mine == listing and (mark is None or mark in mine),
                      "%s: source() with %s: %r, the CLI %r" % (core, kwargs, mine[:300],
                                                               listing or err))
                same_doc(snap.document(), core, args, "open_core(%s)" % sorted(kwargs))
                text, err = run_cli("bt", *(args + [core]))
                check(snap.text() == text or (mark is not None and mark not in snap.text()),
                      "%s: text() with %s differs from bt's" % (core, kwargs))
    # A memory-only core: none of the files the core names (a path map of / to an empty
    # directory), as the CLI reads it.
    empty = os.path.join(scratch, "empty")
    os.makedirs(empty, exist_ok=True)
    with pyunwind.open_core(core, path_maps={"/": empty}) as t:
        doc = same_doc(t.collect().document(), core, ["--path-map", "/=" + empty],
                       "open_core(path_maps={'/': EMPTY})")
        check(doc is not None and any("memory alone" in n for n in doc.get("notes", [])),
              "%s: memory-only read has no note saying so: %r" % (core, doc and doc["notes"]))
    # A compressed core, and --max-unpacked.
    with pyunwind.open_core(gz_core, max_unpacked="1G") as t:
        same_doc(t.collect().document(), gz_core, ["--max-unpacked", "1G"],
                 "open_core(gzipped, max_unpacked='1G')")
    same_exception(lambda: pyunwind.open_core(gz_core, max_unpacked=4096),
                   ["bt", "--max-unpacked", "4096", gz_core], pyunwind.FormatError,
                   "open_core(gzipped, max_unpacked=4096)")


def same_as_cli(target, where, limits):
    """Locals (with @limits), print, line tables and listings of every thread's innermost
    Python frames through the API, against the CLI on the same @where (pid or core)."""
    cli_limits = []
    for name, value in limits.items():
        cli_limits += ["--max-" + name, value]
    snap = target.collect(locals=True, limits=limits)
    doc, err = run_cli("bt", "--json", "--locals", "--no-stop", *(cli_limits + [where]),
                       json_out=True)
    check(doc is not None, "%s: bt --json --locals: %s" % (where, err))
    if doc is None:
        return
    got = [[[dataclasses.asdict(v) for v in (f.locals or ())] for f in th.frames]
           for th in snap.threads]
    want = [[[dataclasses.asdict(pyunwind.Local.from_json(v)) for v in f.get("locals", [])]
             for f in th["frames"]] for th in doc["threads"]]
    check(got == want, "%s: locals differ from the CLI's" % where)
    checked = 0
    for th in snap.threads:
        frames = [f for f in th.frames if f.kind == "python"]
        if not frames or th.native_thread_id is None:
            continue
        f = frames[0]
        sel = ["--thread", th.native_thread_id, "--frame", 0, "--no-stop"]
        line, err = run_cli("line", "--table", *(sel + [where]))
        check(line is not None and snap.line_text(f) == line, "%s: line --table of thread "
              "%s: %r / %r" % (where, th.native_thread_id, snap.line_text(f)[:200], err))
        lt = snap.line_table(f)
        check(isinstance(lt, pyunwind.LineTable) and lt.code_address == f.code_address and
              (f.instruction_offset is None or
               (lt.at(f.instruction_offset) is not None and
                lt.at(f.instruction_offset).line == f.line)),
              "%s: line_table() of thread %s: %r" % (where, th.native_thread_id, lt))
        listing, err = run_cli("list", *(sel + [where]))
        try:
            mine = snap.source(f)
        except pyunwind.Error as e:  # a file not readable here: the CLI fails too
            mine, why = None, str(e)
        check(mine == listing, "%s: list of thread %s: %r / CLI %r"
              % (where, th.native_thread_id, (mine or why)[-300:], (listing or err)[-300:]))
        check([dataclasses.asdict(v) for v in snap.locals(f)] ==
              [dataclasses.asdict(v) for v in f.locals], "%s: locals() of thread %s"
              % (where, th.native_thread_id))
        for v in f.locals[:2]:
            printed, err = run_cli("print", *(sel + cli_limits + [v.name, where]))
            as_json, _ = run_cli("print", "--json", *(sel + cli_limits + [v.name, where]),
                                 json_out=True)
            try:
                value = snap.print(f, v.name)
                check(as_json is not None and dataclasses.asdict(value) == {
                    "found": as_json["found"], "repr": as_json["repr"],
                    "address": int(as_json["address"], 16) if as_json["address"] else None},
                    "%s: print %s: %r / CLI --json %r" % (where, v.name, value, as_json))
                mine = snap.print_text(f, v.name)
            except pyunwind.Error as e:
                mine = None
                check(printed is None, "%s: print %s raised %r, the CLI printed %r"
                      % (where, v.name, e, printed))
            check(printed is None or mine == printed.rstrip("\n"),
                  "%s: print %s: %r / CLI %r" % (where, v.name, mine, printed))
            checked += 1
    check(checked > 0, "%s: no local printed" % where)
    expect_error(lambda: snap.print(snap.threads[0].frames[0], "no_such_name_anywhere"),
                 pyunwind.NotFoundError, 9, "print of a missing name")
    tasks, err = run_cli("tasks", "--json", "--no-stop", where, json_out=True)
    try:
        mine, typed = snap.tasks_document(), snap.tasks()
    except pyunwind.UnsupportedVersionError:
        mine = typed = None
    check(mine == tasks, "%s: tasks differ from the CLI's (%s)" % (where, err))
    check(tasks is None or (typed == pyunwind.Tasks.from_json(tasks) and
                            [t.name for t in typed] == [t["name"] for t in tasks["tasks"]]),
          "%s: typed tasks differ from the CLI's: %r" % (where, typed))

here = os.path.dirname(os.path.abspath(pyunwind.__file__))
if os.environ.get("PYAPI_FROM") != "checkout":
    check(not here.startswith(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))),
          "pyunwind imported from the checkout, not the install: %s" % here)
    check(pyunwind.library_path().startswith(here), "library %s not the installed one"
          % pyunwind.library_path())

def plain(snap):
    """Every field of every thread and frame, those left out of == too."""
    return [(dataclasses.astuple(th), th.exception, [f.extra for f in th.frames])
            for th in snap.threads]


def both_ways(target):
    """A snapshot with the native module and one through ctypes and JSON: the same objects."""
    check(pyunwind.native_module(), "no native module for %s" % sys.version.split()[0])
    native = target.collect()
    saved = list(pyunwind._native_state)
    pyunwind._native_state[:] = [None]
    try:
        fallback = target.collect()
    finally:
        pyunwind._native_state[:] = saved
    check(plain(native) == plain(fallback), "native and ctypes snapshots differ:\n%r\n%r"
          % (plain(native)[:2], plain(fallback)[:2]))
    # Equal values of one type too: 0 == 0.0, but a script printing cpu_seconds or checking
    # its type sees the difference (the JSON path once gave an idle thread's 0 as an int).
    check(repr(plain(native)) == repr(plain(fallback)),
          "native and ctypes snapshots' values differ in type:\n%r\n%r"
          % (plain(native)[:2], plain(fallback)[:2]))
    # Whether a thread of this target ran under a clock tick is chance: a document's thread with
    # 0 CPU seconds, built as the JSON path builds it, must give the float the field says.
    check(all(n and n == n.strip() and not n.endswith(";") for n in native.notes),
          "notes with a dangling separator: %r" % (native.notes,))
    idle = dict(native.document()["threads"][0], cpu_seconds=0)
    got = pyunwind.Thread.from_json(idle).cpu_seconds
    check(type(got) is float, "a thread of 0 CPU seconds: cpu_seconds %r, not 0.0" % (got,))
    return native


def bad_arguments(target, snap):
    """Arguments of the wrong type or out of range, as a script's bugs pass them: each an
    ArgumentError (also a TypeError and a ValueError, as Python's own functions raise), never
    another exception from inside the package, nor a silent default."""
    frame = snap.frame()
    calls = [
        ("open_process('1')", lambda: pyunwind.open_process("1")),
        ("open_process(None)", lambda: pyunwind.open_process(None)),
        ("open_process(2.0)", lambda: pyunwind.open_process(2.0)),
        ("open_process(2 ** 40)", lambda: pyunwind.open_process(2 ** 40)),
        ("open_process(0)", lambda: pyunwind.open_process(0)),
        ("open_process(True)", lambda: pyunwind.open_process(True)),  # not process 1
        ("open_core(None)", lambda: pyunwind.open_core(None)),
        ("open_core(7)", lambda: pyunwind.open_core(7)),
        ("open_core('')", lambda: pyunwind.open_core("")),
        ("open_core(max_unpacked=-1)", lambda: pyunwind.open_core(text, max_unpacked=-1)),
        ("open_core(max_unpacked='99999999T')",
         lambda: pyunwind.open_core(text, max_unpacked="99999999T")),
        ("heap(min_size='99999999T')", lambda: snap.heap(min_size="99999999T")),
        ("open_process(path_maps=['ab'])", lambda: pyunwind.open_process(pid, path_maps=["ab"])),
        ("open_process(path_maps=5)", lambda: pyunwind.open_process(pid, path_maps=5)),
        ("open_process(sysroot=5)", lambda: pyunwind.open_process(pid, sysroot=5)),
        ("open_process(search_path=5)", lambda: pyunwind.open_process(pid, search_path=5)),
        ("triage(None)", lambda: pyunwind.triage(None)),
        ("collect(limit='2')", lambda: target.collect(limit="2")),
        ("collect(limit=-1)", lambda: target.collect(limit=-1)),
        ("collect(limits={'depth': -1})", lambda: target.collect(limits={"depth": -1})),
        ("collect(limits={'depth': 0})", lambda: target.collect(limits={"depth": 0})),
        ("collect(limits={'items': 'x'})", lambda: target.collect(limits={"items": "x"})),
        ("collect(limits=[('depth', 1)])", lambda: target.collect(limits=[("depth", 1)])),
        ("collect(native='yes')", lambda: target.collect(native="yes")),
        ("print(frame, 5)", lambda: snap.print(frame, 5)),
        ("print_text(frame, None)", lambda: snap.print_text(frame, None)),
        ("thread('x')", lambda: snap.thread("x")),
        ("frame('0')", lambda: snap.frame("0")),
        ("frame(-1)", lambda: snap.frame(-1)),  # the CLI's --frame -1 is a usage error
        ("collect(limit=True)", lambda: target.collect(limit=True)),
        ("document(limit=-1)", lambda: snap.document(limit=-1)),
        ("text(limit=-1)", lambda: snap.text(limit=-1)),
        ("source(frame, -5, -1)", lambda: snap.source(frame, -5, -1)),
        ("heap(top=-1)", lambda: snap.heap(top=-1)),
        ("heap(biggest=-1)", lambda: snap.heap(biggest=-1)),
        ("heap(biggest=100001)", lambda: snap.heap(biggest=100001)),
        ("referrers('0x10')", lambda: snap.referrers("0x10")),
        ("path_to(0)", lambda: snap.path_to(0)),
        ("print(a frame of no snapshot)", lambda: snap.print(pyunwind.Frame("python"), "x")),
    ]
    for what, fn in calls:
        try:
            got = fn()
        except pyunwind.ArgumentError as e:
            check(isinstance(e, TypeError) and isinstance(e, ValueError) and e.code == 8 and
                  e.message, "%s: %r is not also a TypeError and a ValueError" % (what, e))
            continue
        except Exception as e:
            problems.append("%s: raised %s: %s, not ArgumentError" % (what, type(e).__name__, e))
            continue
        problems.append("%s: no error (%r)" % (what, got))
        if isinstance(got, pyunwind.Target):
            got.close()


def shared_by_threads(target, where):
    """One open target used from four Python threads at once (the library runs without the
    GIL): every snapshot as one thread alone takes it (the process is stopped by the test),
    no crash; and closed by one thread while another collects, that one gets ArgumentError."""
    import threading
    want = steady(target.collect(locals=True).document())
    failures = []

    def use():
        try:
            for i in range(4):
                s = target.collect(locals=(i % 2 == 0), details=True)
                f = s.frame()
                s.line_text(f)
                if f.locals:
                    s.print(f, f.locals[0].name)
                if i % 2 == 0:
                    check(steady(s.document()) == want, "%s: a snapshot taken while other "
                          "threads used the target differs from one taken alone" % where)
        except Exception as e:
            failures.append("%s: %s" % (type(e).__name__, e))
    workers = [threading.Thread(target=use) for _ in range(4)]
    for w in workers:
        w.start()
    for w in workers:
        w.join()
    check(not failures, "%s: the target used from 4 threads: %s" % (where, failures[:2]))
    # Closed while another thread collects: that thread's next call is ArgumentError.
    other = pyunwind.open_process(pid) if isinstance(where, int) else pyunwind.open_core(where)
    seen = []
    started = threading.Event()

    def collector():
        try:
            while True:
                other.collect(activity=False, details=False)
                started.set()
        except pyunwind.ArgumentError as e:
            seen.append(e)
        except Exception as e:
            seen.append(e)
        started.set()
    c = threading.Thread(target=collector)
    c.start()
    started.wait(60)
    other.close()
    c.join(60)
    check(len(seen) == 1 and isinstance(seen[0], pyunwind.ArgumentError),
          "%s: a target closed while another thread collects: %r" % (where, seen))
    check("closed" in repr(other) and repr(other).startswith("<pyunwind.Target "),
          "%s: repr of a closed target: %r" % (where, other))
    try:
        with other:
            problems.append("%s: `with` entered a closed target" % where)
    except pyunwind.ArgumentError:
        pass


def reprs_and_kinds(target, snap, where):
    """What a user sees printing the objects, and the documented values of Local.kind."""
    r = repr(snap)
    check(r.startswith("<pyunwind.Snapshot ") and target.description in r and
          snap.python.version in r and ("%d thread" % len(snap.threads)) in r,
          "%s: repr(snapshot) %r" % (where, r))
    check(repr(target) == "<pyunwind.Target %s>" % target.description,
          "%s: repr(target) %r" % (where, target))
    kinds = set(v.kind for th in snap.threads for f in th.frames for v in (f.locals or ()))
    check(kinds and kinds <= {"argument", "local", "cell", "free", "dict"},
          "%s: Local.kind values %s, not the documented ones" % (where, sorted(kinds)))


def dropped_snapshot(target, where):
    """A frame kept without its snapshot (`frame = target.collect().frame()`): target.print()
    and frame.line_table() still answer from the newest snapshot, as its own snapshot would."""
    snap = target.collect(locals=True)
    f = snap.frame()
    want_table = snap.line_table(f)
    name = f.locals[0].name if f.locals else "__name__"
    want_value = snap.print(f, name)
    del snap, f
    frame = target.collect(locals=True).frame()
    try:
        check(frame.line_table() == want_table and target.line_table(frame) == want_table and
              target.print(frame, name) == want_value,
              "%s: a frame whose snapshot was dropped: %r / %r" % (where, frame.line_table(),
                                                                  want_table))
    except pyunwind.Error as e:
        problems.append("%s: a frame whose snapshot was dropped: %r" % (where, e))


def after_close(where):
    """What a snapshot answers once its target is closed (the doc's list), the same as before;
    what needs the target, ArgumentError."""
    t = pyunwind.open_process(where) if isinstance(where, int) else pyunwind.open_core(where)
    with t:
        snap = t.collect()
        frame = snap.frame()
        ref = pyunwind.open_process(where) if isinstance(where, int) else \
            pyunwind.open_core(where)
        with ref:
            other = ref.collect()
            want = (steady(other.document()), other.text(source=False), other.crash,
                    other.signature, other.errors, other.notes)
    got = (steady(snap.document()), snap.text(source=False), snap.crash, snap.signature,
           snap.errors, snap.notes)
    check(got == want and snap.text() and snap.triage_document()["ok"],
          "%s: after close() the snapshot's document/text/crash/signature differ" % where)
    for what, fn in (("print", lambda: snap.print(frame, "x")),
                     ("locals", lambda: snap.locals(frame)),
                     ("text(limit=1)", lambda: snap.text(limit=1)),
                     ("heap", lambda: snap.heap(top=1)),
                     ("collect", lambda: t.collect())):
        try:
            fn()
            problems.append("%s: %s after close(): no error" % (where, what))
        except pyunwind.ArgumentError:
            pass
        except Exception as e:
            problems.append("%s: %s after close(): %r" % (where, what, e))


def typed_exception(snap, where):
    """The scenario's thread in `except KeyError:` - its exception typed as the doc says
    (attributes, a traceback of TracebackEntry), equal to the document's."""
    doc = snap.document()
    found = 0
    for th, dt in zip(snap.threads, doc["threads"]):
        want = dt.get("exception")
        exc = th.exception
        if want is None:
            check(exc is None, "%s: thread %s: exception %r, the document none" % (where, th.name,
                                                                                   exc))
            continue
        check(isinstance(exc, pyunwind.ThreadException) and
              exc == pyunwind.ThreadException.from_json(want) and exc["type"] == want["type"] and
              exc.address == int(want["address"], 16) and
              [(e.function, e.line) for e in exc.traceback] ==
              [(e.get("function"), e.get("line")) for e in want.get("traceback") or ()] and
              all(isinstance(e, pyunwind.TracebackEntry) for e in exc.traceback),
              "%s: thread %s: exception %r, the document's %r" % (where, th.name, exc, want))
        if th.name == "scenario-except":
            found += 1
            check(exc is not None and exc.type == "KeyError" and "scenario" in (exc.repr or "")
                  and exc.traceback and exc.traceback[-1].function == "run_except",
                  "%s: the thread in `except KeyError` has exception %r" % (where, exc))
    check(found == 1, "%s: no thread scenario-except with an exception: %r"
          % (where, [(th.name, th.exception) for th in snap.threads]))


with pyunwind.open_process(pid) as t:
    live = both_ways(t)
    typed_exception(live, pid)
    dropped_snapshot(t, pid)
    after_close(pid)
    held_snap = t.collect(locals=True)
    bad_arguments(t, held_snap)
    reprs_and_kinds(t, held_snap, pid)
    shared_by_threads(t, pid)
    same_as_cli(t, pid, {"chars": 12, "items": 3})
    cli_options_live(t, pid)
check(live.crash is None, "a live process has no crash: %r" % (live.crash,))
check(all(isinstance(th, pyunwind.Thread) for th in live), "threads are Thread objects")
check(all(isinstance(f, pyunwind.Frame) for th in live.threads for f in th),
      "frames are Frame objects")
check(dataclasses.is_dataclass(pyunwind.Frame) and dataclasses.is_dataclass(pyunwind.Thread),
      "Frame and Thread are dataclasses")
for th, dt in zip(live.threads, live.document()["threads"]):
    check(th.thread_id == dt["thread_id"] and len(th.frames) == len(dt["frames"]),
          "Thread %s and its JSON agree" % th.thread_id)
    for f, df in zip(th.frames, dt["frames"]):
        check(f.line == df.get("line") and f.qualname == df.get("qualname") and
              f.frame_address == int(df.get("frame_address", df.get("address")), 16),
              "Frame and its JSON agree: %r / %r" % (f, df))
check("Thread " in live.text() and "File " in live.text(source=False),
      "text() is the bt text")

if core == "-":
    shutil.rmtree(scratch, ignore_errors=True)
    json.dump({"live": live.document(), "problems": problems}, sys.stdout)
    sys.exit(0)

with pyunwind.open_core(core, path_maps={"/nonexistent-prefix": "/tmp"}) as t:
    snap = both_ways(t)
    typed_exception(snap, core)
    dropped_snapshot(t, core)
    shared_by_threads(t, core)
    same_as_cli(t, core, {})
    merged = t.collect(native=True)
    doc, err = run_cli("bt", "--json", "--native", core, json_out=True)
    check(doc is not None and [[dataclasses.astuple(f) for f in th.frames]
                               for th in merged.threads] ==
          [[dataclasses.astuple(pyunwind.Frame.from_json(f)) for f in th["frames"]]
           for th in doc["threads"]], "core: native frames differ from bt --native's (%s)"
          % err)
    check(any(f.kind == "native" for th in merged.threads for f in th.frames),
          "core: no native frame in collect(native=True)")
    # The heap census, its referrers and a path, typed, against the CLI on the same core.
    hdoc, err = run_cli("heap", "--json", "--biggest", 3, "--retained", core, json_out=True)
    heap = snap.heap(biggest=3, retained=True)
    check(hdoc is not None and snap.heap_document(biggest=3, retained=True) == hdoc,
          "core: heap document differs from the CLI's (%s)" % err)
    check(heap == pyunwind.Heap.from_json(hdoc) and heap.objects == hdoc["objects"] and
          [(r.type, r.count, r.bytes, r.retained) for r in heap.types] ==
          [(r["type"], r["count"], r["bytes"], r.get("retained")) for r in hdoc["types"]] and
          len(heap.biggest) == 3, "core: typed heap differs from the CLI's")
    big = heap.biggest[0].address
    rdoc, err = run_cli("heap", "--json", "--referrers", hex(big), core, json_out=True)
    refs = snap.referrers(big)
    check(rdoc is not None and refs == pyunwind.Referrers.from_json(rdoc) and
          refs.object.address == big and
          [r.via for r in refs.referrers] == [r["via"] for r in rdoc["referrers"]],
          "core: referrers of %#x differ from the CLI's (%s)" % (big, err))
    # A path: to what the main module's __name__ is (a root reaches it), and to each of the
    # largest objects (the API raises NotFoundError exactly where the CLI finds no chain).
    outer = [f for f in snap.threads[0].frames if f.kind == "python"][-1]
    named = snap.print(outer, "__name__").address
    for addr in [named] + [b.address for b in heap.biggest]:
        pdoc, err = run_cli("heap", "--json", "--path", hex(addr), core, json_out=True)
        try:
            path = snap.path_to(addr)
        except pyunwind.NotFoundError:
            check(pdoc is None and addr != named, "core: no path to %#x, the CLI: %s"
                  % (addr, pdoc))
            continue
        check(pdoc is not None and path == pyunwind.HeapPath.from_json(pdoc) and
              path.expr == pdoc["expr"] and path.path[-1].address == addr,
              "core: path to %#x differs from the CLI's (%s)" % (addr, err))
cli_options_core(core)
tri = pyunwind.triage(core)
import pathlib  # noqa: E402
check(pyunwind.triage(pathlib.Path(core)) == tri, "triage(pathlib.Path(core)) differs from "
      "triage(core): %r" % pyunwind.triage(pathlib.Path(core)).get("path"))
check(snap.crash is not None and snap.crash.signal == 11 and snap.crash.signal_name == "SIGSEGV"
      and snap.crash.fault_address == 0, "crash: %r" % (snap.crash,))
check(snap.signature.hash == tri["signature"] and list(snap.signature.frames) ==
      tri["signature_frames"], "signature %r vs triage %r" % (snap.signature, tri["signature"]))
ct = snap.crash_thread
check(ct is not None and ct.thread_id == tri["crash"]["thread_id"], "crash_thread")
check(snap.python.version == tri["python"]["version"], "python version")

expect_error(lambda: pyunwind.open_core("/nonexistent/core"), pyunwind.ReadError, 2, "missing")
expect_error(lambda: pyunwind.open_core(text), pyunwind.FormatError, 4, "text file")
expect_error(lambda: pyunwind.open_core(foreign).collect(), pyunwind.NotPythonError, 5,
             "not Python")
# Each way the CLI fails, as the documented exception.
same_exception(lambda: pyunwind.open_process(2 ** 22 + 12345), ["bt", 2 ** 22 + 12345],
               pyunwind.ReadError, "no such process", same_message=False)
# A child that has exited and is not yet waited for (a zombie: no memory left to read), and a
# kernel thread: said so, as the CLI says it.
zombie = subprocess.Popen([sys.executable, "-c", "pass"])
while True:
    with open("/proc/%d/stat" % zombie.pid) as f:
        if f.read().rsplit(")", 1)[1].split()[0] == "Z":
            break
same_exception(lambda: pyunwind.open_process(zombie.pid), ["bt", zombie.pid], pyunwind.ReadError,
               "a process that has exited, not yet waited for")
zombie.wait()


def kernel_thread():
    """A kernel thread's pid (PF_KTHREAD in /proc/PID/stat's flags), None where none is seen
    (a PID namespace of its own)."""
    for name in sorted(os.listdir("/proc"), key=lambda n: (len(n), n)):
        if name.isdigit():
            try:
                with open("/proc/%s/stat" % name) as f:
                    fields = f.read().rsplit(")", 1)[1].split()
            except OSError:
                continue
            if int(fields[6]) & 0x00200000:
                return int(name)
    return None


kthread = kernel_thread()
if kthread is not None:
    same_exception(lambda: pyunwind.open_process(kthread), ["bt", kthread],
                   pyunwind.NotPythonError, "a kernel thread (%d)" % kthread)
truncated = os.path.join(scratch, "truncated.core")
with open(core, "rb") as f, open(truncated, "wb") as out:
    out.write(f.read(1000))
same_exception(lambda: pyunwind.open_core(truncated), ["bt", truncated], pyunwind.FormatError,
               "a core cut after 1000 bytes")
# Cut a page into its memory: collect() fails reading it (FaultError, as the CLI's bt), and says
# why, as triage() does - the core is truncated - not only "cannot read memory at 0x...".
with open(core, "rb") as f:
    elf = f.read(1 << 16)
phoff, phnum = struct.unpack_from("<Q", elf, 32)[0], struct.unpack_from("<H", elf, 56)[0]
headers = [struct.unpack_from("<IIQQQQQQ", elf, phoff + 56 * i) for i in range(phnum)]
data_at = min(h[2] for h in headers if h[0] == 1 and h[5] > 0)  # PT_LOAD with file bytes
cut_in_memory = os.path.join(scratch, "cut-in-memory.core")
with open(core, "rb") as f, open(cut_in_memory, "wb") as out:
    out.write(f.read(data_at + 4096))
same_exception(lambda: pyunwind.open_core(cut_in_memory).collect(), ["bt", cut_in_memory],
               pyunwind.FaultError, "a core cut a page into its memory")
try:
    pyunwind.open_core(cut_in_memory).collect()
except pyunwind.Error as e:
    check("the core file is truncated" in e.message,
          "a core cut in its memory: collect() does not say the core is truncated: %s" % e)
same_exception(lambda: pyunwind.open_core(foreign).collect(), ["bt", foreign],
               pyunwind.NotPythonError, "a core of a program that is not Python")
same_exception(lambda: pyunwind.open_core(text), ["bt", text], pyunwind.FormatError,
               "a text file")
if os.geteuid() == 0:
    # Permission: a child that gave up root, reading the root-owned process and core.
    r, w = os.pipe()
    child = os.fork()
    if child == 0:
        os.close(r)
        os.setgroups([])
        os.setgid(65534)
        os.setuid(65534)
        got = []
        for what in (lambda: pyunwind.open_process(pid).collect(),
                     lambda: pyunwind.open_core(core).collect()):
            try:
                what()
                got.append(None)
            except pyunwind.Error as e:
                got.append([type(e).__name__, e.code, e.message])
        os.write(w, json.dumps(got).encode())
        os._exit(0)
    os.close(w)
    with os.fdopen(r) as f:
        got = json.loads(f.read() or "null")
    os.waitpid(child, 0)
    check(got is not None and [g and g[:2] for g in got] == [["ReadError", 2]] * 2,
          "without permission: %r, not ReadError for the process and the core" % (got,))
bad = pyunwind.triage(text)
check(bad["ok"] is False and bad["error"]["code"] == 4 and bad["path"] == text,
      "triage of a text file: %r" % bad)

shutil.rmtree(scratch, ignore_errors=True)
json.dump({"live": live.document(), "core": snap.document(), "triage": tri,
           "problems": problems}, sys.stdout)
