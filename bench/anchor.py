# anchor.py - pyunwind against CPython's own remote unwinder, inside one interpreter of the same
# version as the target (3.14+ has _remote_debugging). Run by bench/run with that interpreter:
#
#   python3.14 bench/anchor.py LIBPYUNWIND PID TRUTH.json RUNS
#
# Each snapshot is one fresh handle on both sides (open the process, find the runtime, walk,
# drop): pyunwind's pyu_target_open_pid + pyu_stacks_collect (+ pyu_format_bt as JSON, or as
# text with source lines, left in the library's buffer: the JSON is checked once, copied into
# Python, before timing), and RemoteUnwinder(pid, all_threads=True).get_stack_trace() (on 3.15+
# also in its mode that reads each thread's status, "anchor_status"). Runs
# alternate between the variants (shuffled each round); medians of the thread's CPU time (user
# + system: both sides' reads are system calls of this thread, and time spent waiting for a CPU
# on a loaded machine is left out), and of wall-clock time, are printed as one JSON object. Both sides' output is checked against
# the truth, every frame of every thread (file, line, function), before anything is timed.
import ctypes
import json
import os
import random
import statistics
import sys
import time

import _remote_debugging

PYU_FMT_JSON, PYU_FMT_SOURCE, PYU_FMT_ALL = 0x1, 0x2, 0x8


class Pyunwind(object):
    def __init__(self, path):
        lib = self.lib = ctypes.CDLL(path)
        P = ctypes.c_void_p
        PP = ctypes.POINTER(P)
        for name, res, args in (
                ("pyu_target_open_pid", P, [ctypes.c_int32, PP]),
                ("pyu_stacks_collect", P, [P, PP]),
                ("pyu_format_bt", P, [P, ctypes.c_uint32, ctypes.c_uint32, ctypes.c_uint32,
                                      ctypes.POINTER(ctypes.c_char_p)]),
                ("pyu_stacks_destroy", None, [P]),
                ("pyu_target_destroy", None, [P]),
                ("pyu_error_message", ctypes.c_char_p, [P]),
                ("pyu_free", None, [P])):
            fn = getattr(lib, name)
            fn.restype, fn.argtypes = res, args
        self.free = lib.pyu_free
        self.free.argtypes = [ctypes.c_void_p]

    def snapshot(self, pid, flags=None, copy=True):
        """One fresh handle: open, collect (and format with @flags), drop. Returns the text
        (or None without @flags, or without @copy: the text stays in the library's buffer, as
        the CLI writes it out, and is freed; copying a 1.5 MB document into a Python str costs
        more than making it)."""
        lib = self.lib
        t, s = ctypes.c_void_p(), ctypes.c_void_p()
        err = lib.pyu_target_open_pid(pid, ctypes.byref(t))
        if err:
            raise RuntimeError(lib.pyu_error_message(err).decode())
        try:
            err = lib.pyu_stacks_collect(t, ctypes.byref(s))
            if err:
                raise RuntimeError(lib.pyu_error_message(err).decode())
            text = None
            if flags is not None:
                raw = ctypes.c_void_p()  # the library's buffer, released with pyu_free
                err = lib.pyu_format_bt(s, 0, flags | PYU_FMT_ALL, 0,
                                        ctypes.cast(ctypes.byref(raw),
                                                    ctypes.POINTER(ctypes.c_char_p)))
                if err:
                    raise RuntimeError(lib.pyu_error_message(err).decode())
                if copy:
                    text = ctypes.string_at(raw.value).decode()
                self.free(raw)
            lib.pyu_stacks_destroy(s)
            return text
        finally:
            lib.pyu_target_destroy(t)


def anchor(pid):
    return _remote_debugging.RemoteUnwinder(pid, all_threads=True).get_stack_trace()


def python_api(pid):
    """The `pyunwind` package of this checkout, with the native module bench/run built for
    this interpreter when it could: (the open target, whether objects are built natively)."""
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(
        __file__))), "python"))
    import pyunwind
    return pyunwind.open_process(pid), pyunwind.native_module()


def api_threads(snap):
    return {t.native_thread_id: [(f.file, f.line, f.qualname or f.function) for f in t.frames]
            for t in snap.threads}


# 3.15's RemoteUnwinder also says what each thread is doing (its status: on a CPU, holding the
# GIL, handling an exception; on a CPU read from /proc/PID/task/TID/stat) in its profiling mode
# "all" (profiling.sampling's PROFILING_MODE_ALL): the like of pyunwind's JSON, whose threads
# carry their system call, CPU time, GIL and exception.
PROFILING_MODE_ALL = 3


def anchor_status(pid):
    return _remote_debugging.RemoteUnwinder(pid, all_threads=True,
                                            mode=PROFILING_MODE_ALL).get_stack_trace()


def has_status_mode(pid):
    try:
        _remote_debugging.RemoteUnwinder(pid, all_threads=True, mode=PROFILING_MODE_ALL)
    except TypeError:  # 3.14: no modes
        return False
    return True


def anchor_threads(result):
    """{native tid: [(file, line, function)]} from get_stack_trace() of 3.14 (ThreadInfo list)
    or 3.15 (InterpreterInfo list of ThreadInfo)."""
    threads = {}
    for item in result:
        for th in (item.threads if hasattr(item, "threads") else [item]):
            frames = []
            for f in th.frame_info:
                line = getattr(f, "lineno", None)
                if line is None and getattr(f, "location", None) is not None:
                    line = f.location[0] if isinstance(f.location, tuple) else \
                        f.location.lineno
                frames.append((f.filename, line, f.funcname))
            threads[th.thread_id] = frames
    return threads


# Frames RemoteUnwinder leaves out at the bottom of a thread (3.14.10 and 3.15 skip the
# threading module's bootstrap: its sampling profiler shows the thread's own function first).
BOOTSTRAP = ("_bootstrap", "_bootstrap_inner", "Thread._bootstrap", "Thread._bootstrap_inner")


def check(name, got, truth, bootstrap_left_out=False):
    """None if @got ({tid: [(file, line, function)]}) has every frame of every thread of the
    truth (@bootstrap_left_out: but threading's bootstrap frames at the bottom); else what
    differs."""
    want = {t["native_thread_id"]: t["frames"] for t in truth["threads"]}
    if bootstrap_left_out:
        for tid, frames in list(want.items()):
            g = got.get(tid, [])
            while len(frames) > len(g) and frames and \
                    frames[-1]["file"].endswith("threading.py") and \
                    (frames[-1]["qualname"] in BOOTSTRAP or frames[-1]["function"] in BOOTSTRAP):
                frames = frames[:-1]
            want[tid] = frames
    if set(got) != set(want):
        return "%s: threads %s, truth %s" % (name, sorted(got), sorted(want))
    for tid, frames in want.items():
        g = got[tid]
        if len(g) != len(frames):
            return "%s: thread %d has %d frames, truth %d" % (name, tid, len(g), len(frames))
        for i, (gf, wf) in enumerate(zip(g, frames)):
            if gf[0] != wf["file"] or gf[1] != wf["line"] or \
                    gf[2] not in (wf["function"], wf["qualname"]):
                return "%s: thread %d frame %d is %s, truth %s:%s %s" % (
                    name, tid, i, gf, wf["file"], wf["line"], wf["qualname"])
    return None


def pyunwind_threads(doc):
    return {t["native_thread_id"]: [(f.get("file"), f.get("line"), f.get("qualname") or
                                     f.get("function")) for f in t["frames"]]
            for t in doc["threads"]}


# Consecutive calls of one sampler in a round (see the sampler rounds in main()).
SAMPLER_BATCH = 5


def main(argv):
    lib_path, pid, truth_path, runs = argv[1], int(argv[2]), argv[3], int(argv[4])
    with open(truth_path) as f:
        truth = json.load(f)
    pyu = Pyunwind(lib_path)
    problems = [check("RemoteUnwinder", anchor_threads(anchor(pid)), truth, True),
                check("pyunwind", pyunwind_threads(json.loads(pyu.snapshot(pid, PYU_FMT_JSON))),
                      truth)]
    variants = {
        "anchor": lambda: anchor(pid),
        "collect": lambda: pyu.snapshot(pid),
        "json": lambda: pyu.snapshot(pid, PYU_FMT_JSON, copy=False),
        "text": lambda: pyu.snapshot(pid, PYU_FMT_SOURCE, copy=False),
        "text_nosource": lambda: pyu.snapshot(pid, 0, copy=False),
    }
    # How a sampler uses both: one open handle, a snapshot after another.
    unwinder = _remote_debugging.RemoteUnwinder(pid, all_threads=True)
    target, native = python_api(pid)
    problems.append(check("pyunwind Python API", api_threads(target.collect(activity=False)),
                          truth))
    problems.append(check("pyunwind Python API (details=False)",
                          api_threads(target.collect(activity=False, details=False)), truth))
    variants["anchor_reused"] = unwinder.get_stack_trace
    # Like for like with RemoteUnwinder (frames and thread ids): no activity, no thread names
    # or exceptions; and with names and exceptions read.
    variants["api_collect"] = lambda: target.collect(activity=False, details=False)
    variants["api_details"] = lambda: target.collect(activity=False)
    if has_status_mode(pid):
        problems.append(check("RemoteUnwinder (mode all)", anchor_threads(anchor_status(pid)),
                              truth, True))
        variants["anchor_status"] = lambda: anchor_status(pid)
    problems = [p for p in problems if p]
    cpu = {k: [] for k in variants}
    wall = {k: [] for k in variants}
    for fn in variants.values():  # warm the page cache and the interpreter
        fn()
    order = list(variants)
    rng = random.Random(14)
    for _ in range(runs):
        # A new order each round: on a loaded machine a fixed order lets the scheduler's
        # time slices fall on the same variant every round.
        rng.shuffle(order)
        for k in order:
            fn = variants[k]
            c0, w0 = time.thread_time(), time.perf_counter()
            fn()
            c1, w1 = time.thread_time(), time.perf_counter()
            cpu[k].append((c1 - c0) * 1000.0)
            wall[k].append((w1 - w0) * 1000.0)
    # How a sampler uses either: the same call again and again, nothing else run between.
    # The rounds above run the other variants between any two calls of one, which leaves the
    # processor's caches cold for whichever runs more code (the Python API: the interpreter's
    # steps, the native module, the library); here each round runs a batch of consecutive
    # calls of the one, then of the other (the order shuffled), each call timed.
    samplers = {"sampler_api": variants["api_collect"],
                "sampler_reused": variants["anchor_reused"]}
    for k in samplers:
        cpu[k] = []
    sampler_order = list(samplers)
    for _ in range(runs):
        rng.shuffle(sampler_order)
        for k in sampler_order:
            fn = samplers[k]
            for _ in range(SAMPLER_BATCH):
                c0 = time.thread_time()
                fn()
                cpu[k].append((time.thread_time() - c0) * 1000.0)
    out = {k: statistics.median(v) for k, v in cpu.items()}
    out["wall"] = {k: statistics.median(v) for k, v in wall.items()}
    out["problems"] = problems
    out["api_native"] = native
    out["sampler_batch"] = SAMPLER_BATCH
    print(json.dumps(out))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
