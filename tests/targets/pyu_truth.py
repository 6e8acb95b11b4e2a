# pyu_truth - what a target program reports about itself, for the end-to-end tests.
#
# Runs on CPython 2.7 and 3.6+, so: no f-strings, no keyword-only arguments, no non-ASCII
# source. A target starts its threads, each of which calls arrive() and then blocks for good on
# HOLD (a lock nobody releases). start_reporter() then starts a reporter thread that waits until
# every thread sits still, writes the truth (every thread's stack as sys._current_frames() sees
# it, the reporter itself left out) to OUTDIR/truth.json atomically, and exits. The harness
# treats the file's appearance as "ready" and waits until the reporter thread is gone.
#
# In crash mode a crasher thread waits for the reporter, adds its own stack as it will be at the
# crash, rewrites the truth and crashes in a foreign call (ctypes.memset(0, 0, 1)), so no Python
# frame sits above the crashing one.
#
# Truth JSON: {"pyunwind_truth": 1, "pid", "mode", "python": {version, hexversion, debug_build,
# executable}, "main_thread_id", ["crash_thread_id"], "threads": [{thread_id, native_thread_id,
# name, scenario, [crashing], frames: [innermost first: {function, qualname, file, line,
# instruction_offset, end_line, column, end_column, positions, traced}]}]}
import ctypes
import dis
import json
import os
import sys
import threading
import time

import pyu_clock

HOLD = threading.Lock()
HOLD.acquire()

_arrived = []
_arrived_lock = threading.Lock()
_native_ids = {}
PY3 = sys.version_info[0] >= 3
HAS_POSITIONS = sys.version_info >= (3, 11)
CALL_OPS = ("CALL", "CALL_FUNCTION", "CALL_METHOD", "CALL_FUNCTION_KW", "CALL_FUNCTION_EX",
            "CALL_KW", "CALL_FUNCTION_VAR", "CALL_FUNCTION_VAR_KW")


def native_id():
    """The kernel thread id of the calling thread (gettid), or None when it cannot be had."""
    get = getattr(threading, "get_native_id", None)
    if get is not None:
        return get()
    try:
        import ctypes
        return ctypes.CDLL(None, use_errno=True).syscall(186)  # SYS_gettid on x86-64
    except Exception:
        return None


def arrive():
    """Called by each thread right before it blocks for good."""
    with _arrived_lock:
        _arrived.append(threading.current_thread().ident)
        _native_ids[threading.current_thread().ident] = native_id()


# Optional hooks a target may set: FRAME_EXTRA(frame) and THREAD_EXTRA(ident) return dicts
# merged into the frame's / thread's truth entry. They run once, on the settled threads.
FRAME_EXTRA = None
THREAD_EXTRA = None
# DOC_EXTRA() returns a dict merged into the truth document (e.g. asyncio tasks), once the
# threads have settled.
DOC_EXTRA = None


def _frame_entry(f, lasti=None, extras=False):
    code = f.f_code
    if lasti is None:
        lasti = f.f_lasti
    entry = {"function": code.co_name,
             "qualname": getattr(code, "co_qualname", None),
             "file": code.co_filename,
             "line": f.f_lineno,
             "instruction_offset": lasti,
             "end_line": None, "column": None, "end_column": None, "positions": None,
             "traced": f.f_trace is not None}
    if HAS_POSITIONS and lasti >= 0:
        pos = list(code.co_positions())
        if lasti // 2 < len(pos):
            p = pos[lasti // 2]
            entry["positions"] = list(p)
            entry["end_line"], entry["column"], entry["end_column"] = p[1], p[2], p[3]
    if extras and FRAME_EXTRA is not None:
        entry.update(FRAME_EXTRA(f))
    return entry


def stack_of(frame, extras=False):
    """Innermost-first list of frame entries, walked to the bottom."""
    frames = []
    while frame is not None:
        frames.append(_frame_entry(frame, extras=extras))
        frame = frame.f_back
    return frames


def _thread_names():
    return dict((t.ident, t.name) for t in threading.enumerate())


def _thread_entry(ident, frame, names, extras=False):
    name = names.get(ident)
    entry = {"thread_id": ident, "native_thread_id": _native_ids.get(ident),
             "name": name,
             "scenario": (name[len("scenario-"):] if name and name.startswith("scenario-")
                          else None),
             "frames": stack_of(frame, extras)}
    if extras and THREAD_EXTRA is not None:
        entry.update(THREAD_EXTRA(ident))
    return entry


def collect(exclude, extras=False):
    names = _thread_names()
    return [_thread_entry(ident, frame, names, extras)
            for ident, frame in sorted(sys._current_frames().items()) if ident not in exclude]


def _key(threads, restless=()):
    return [(t["thread_id"], [(f["file"], f["line"], f["instruction_offset"])
                              for f in t["frames"]]) for t in threads
            if t["thread_id"] not in restless]


def _document(threads, mode):
    return {"pyunwind_truth": 1,
            "pid": os.getpid(),
            "mode": mode,
            "python": {"version": "%d.%d.%d" % sys.version_info[:3],
                       "hexversion": sys.hexversion,
                       "debug_build": hasattr(sys, "gettotalrefcount"),
                       "executable": sys.executable},
            "main_thread_id": _main_ident,
            "threads": threads,
            "extra": DOC_EXTRA() if DOC_EXTRA is not None else None}


def write_json(outdir, name, doc):
    path = os.path.join(outdir, name)
    tmp = path + ".tmp"
    with open(tmp, "w") as f:
        json.dump(doc, f, indent=1, sort_keys=True)
        f.flush()
        os.fsync(f.fileno())
    os.rename(tmp, path)


_main_ident = threading.current_thread().ident
_report = {}


def _reporter(outdir, expected, mode, exclude, timeout, restless=()):
    # @timeout counts this process's own time: on a loaded machine it may wait minutes for a CPU.
    clock = pyu_clock.Clock()
    me = threading.current_thread().ident
    exclude = set(exclude) | set([me])
    while not clock.expired(timeout):
        with _arrived_lock:
            n = len(_arrived)
        if n >= expected:
            break
        time.sleep(0.01)
    # Still means: two snapshots 50 ms apart agree and no thread is inside arrive().
    prev = None
    threads = None
    while not clock.expired(timeout):
        threads = collect(exclude)
        busy = any(t["frames"] and t["frames"][0]["function"] == "arrive" for t in threads)
        if not busy and prev is not None and _key(prev, restless) == _key(threads, restless):
            break
        prev = threads
        time.sleep(0.05)
    else:
        write_json(outdir, "error.json", {"error": "threads did not settle",
                                              "arrived": len(_arrived), "expected": expected})
        return
    if FRAME_EXTRA is not None or THREAD_EXTRA is not None:
        threads = collect(exclude, extras=True)
    _report["threads"] = threads
    if mode != "crash":
        write_json(outdir, "truth.json", _document(threads, mode))


def start_reporter(outdir, expected, mode="park", exclude=(), timeout=120.0, restless=()):
    """Starts the reporter; @expected threads must call arrive() (the main thread included).
    Threads in @restless (idents) never sit still (a thread spinning in Python): they are
    listed in the truth, as they were at its last snapshot, but not waited for."""
    t = threading.Thread(target=_reporter, name="pyu-reporter",
                         args=(outdir, expected, mode, exclude, timeout, restless))
    t.daemon = True
    t.start()
    return t


def _task_count():
    try:
        return len(os.listdir("/proc/self/task"))
    except OSError:
        return -1


def _crash_call(code, lasti):
    """Offset and line of the first call instruction after @lasti in @code."""
    if PY3:
        instructions = ((i.offset, i.opname) for i in dis.get_instructions(code))
    else:
        instructions = _instructions_27(code)
    for offset, opname in instructions:
        if offset > lasti and opname in CALL_OPS:
            return offset
    return None


def _instructions_27(code):
    co = code.co_code
    i = 0
    while i < len(co):
        op = ord(co[i])
        yield (i, dis.opname[op])
        i += 3 if op >= dis.HAVE_ARGUMENT else 1


def _line_of_offset(code, offset):
    if HAS_POSITIONS:
        return list(code.co_positions())[offset // 2][0]
    line = None
    for start, ln in dis.findlinestarts(code):
        if start > offset:
            break
        line = ln
    return line


def crash_point(outdir, reporter):
    if crash_report(outdir, reporter, sys._getframe()):
        ctypes.memset(0, 0, 1)


def _run_crash(outdir, reporter_box, crash):
    while not reporter_box:
        time.sleep(0.01)
    crash(outdir, reporter_box[0])


def start(outdir, mode, scenarios, crash=crash_point):
    """Starts a thread "scenario-NAME" per (NAME, function, args) of @scenarios, in crash mode
    the thread "scenario-crash", and the reporter. The caller's thread must then block for good
    with arrive(); HOLD.acquire(). Returns the scenario threads. The crash thread runs
    @crash(outdir, reporter), which calls crash_report() right before it crashes."""
    threads = []
    for name, fn, args in scenarios:
        t = threading.Thread(target=fn, args=args, name="scenario-" + name)
        t.daemon = True
        threads.append(t)
    exclude = []
    reporter_box = []
    if mode == "crash":
        crasher = threading.Thread(target=_run_crash, args=(outdir, reporter_box, crash),
                                   name="scenario-crash")
        crasher.daemon = True
        threads.append(crasher)
    for t in threads:
        t.start()
    if mode == "crash":
        exclude.append(crasher.ident)
    # Every scenario thread and the caller's thread block.
    reporter_box.append(start_reporter(outdir, len(scenarios) + 1, mode, exclude))
    return threads


def crash_report(outdir, reporter, frame):
    """Called from the line right above the crashing call: waits for the reporter and for its
    thread to be gone, then writes the truth with this thread as it will be at the crash.
    Returns False (no truth written; the reporter wrote error.json) when the others did not
    settle."""
    reporter.join()  # it ends by its own deadline
    if "threads" not in _report:
        return False
    clock = pyu_clock.Clock()
    # PYU_TRUTH_HOST_TASKS: threads /proc/self/task lists that are not the program's (an
    # emulator's own: qemu-user lists its host threads), else this waits its whole bound.
    expect = len(_report.get("threads", [])) + 1 + int(os.environ.get("PYU_TRUTH_HOST_TASKS",
                                                                      "0") or 0)
    while _task_count() > expect and not clock.expired(30):
        time.sleep(0.01)
    me = _thread_entry(threading.current_thread().ident, frame, _thread_names())
    me["native_thread_id"] = native_id()
    top = me["frames"][0]
    offset = _crash_call(frame.f_code, frame.f_lasti)
    top_new = _frame_entry(frame, offset)
    top_new["line"] = _line_of_offset(frame.f_code, offset)
    top_new["traced"] = top["traced"]
    me["frames"][0] = top_new
    me["crashing"] = True
    threads = list(_report.get("threads", [])) + [me]
    threads.sort(key=lambda t: t["thread_id"])
    doc = _document(threads, "crash")
    doc["crash_thread_id"] = me["thread_id"]
    write_json(outdir, "truth.json", doc)
    return True


