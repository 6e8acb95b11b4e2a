# api.py - the Python API as a sampler uses it, on any target version: one open target,
# `collect()` again and again, in the Python that runs the bench (the API runs in the host's
# Python; the target can be any version pyunwind reads). Run by bench/run:
#
#   python3 bench/api.py PID TRUTH.json RUNS
#
# Variants, interleaved (the order shuffled each round), medians of the thread's CPU time:
# "api" collect(activity=False, details=False) (what a sampler reads, like for like with
# RemoteUnwinder: frames and thread ids), "api_details" collect(activity=False) (thread names
# and exceptions too), "c_collect" the library's pyu_stacks_collect alone on the same open
# target (the floor: no Python objects). The snapshot is first checked against the truth, every
# frame of every thread. Prints one JSON object.
import ctypes
import json
import os
import random
import statistics
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                                "python"))
import pyunwind  # noqa: E402


def check(snap, truth):
    """None if @snap has every frame of every thread of the truth; else what differs."""
    got = {t.native_thread_id: [(f.file, f.line, f.qualname or f.function) for f in t.frames]
           for t in snap.threads}
    want = {t["native_thread_id"]: t["frames"] for t in truth["threads"]}
    if set(got) != set(want):
        return "threads %s, truth %s" % (sorted(got), sorted(want))
    for tid, frames in want.items():
        if len(got[tid]) != len(frames):
            return "thread %d has %d frames, truth %d" % (tid, len(got[tid]), len(frames))
        for i, (g, w) in enumerate(zip(got[tid], frames)):
            if g[0] != w["file"] or g[1] != w["line"] or g[2] not in (w["function"],
                                                                       w["qualname"]):
                return "thread %d frame %d is %s, truth %s" % (tid, i, g, w)
    return None


def main(argv):
    pid, truth_path, runs = int(argv[1]), argv[2], int(argv[3])
    with open(truth_path) as f:
        truth = json.load(f)
    target = pyunwind.open_process(pid)
    lib = target._lib.lib

    def c_collect():
        s = ctypes.c_void_p()
        err = lib.pyu_stacks_collect(target._handle, ctypes.byref(s))
        if err:
            raise RuntimeError("pyu_stacks_collect failed")
        lib.pyu_stacks_destroy(s)

    variants = {
        "api": lambda: target.collect(activity=False, details=False),
        "api_details": lambda: target.collect(activity=False),
        "c_collect": c_collect,
    }
    problems = [p for p in (check(target.collect(activity=False, details=False), truth),
                            check(target.collect(activity=False), truth)) if p]
    cpu = {k: [] for k in variants}
    for fn in variants.values():
        fn()
    order = list(variants)
    rng = random.Random(29)
    for _ in range(runs):
        rng.shuffle(order)
        for k in order:
            c0 = time.thread_time()
            variants[k]()
            cpu[k].append((time.thread_time() - c0) * 1000.0)
    out = {k: statistics.median(v) for k, v in cpu.items()}
    out["problems"] = problems
    out["native"] = pyunwind.native_module()
    out["host"] = sys.version.split()[0]
    print(json.dumps(out))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
