# target.py - the program `make bench` looks at: builds one scenario, writes the truth about its
# own Python stacks (from sys._current_frames()), prints READY and blocks until killed.
#   python target.py deep TRUTH.json      one thread, a 1,000-deep recursion
#   python target.py threads TRUTH.json   100 threads x 50 frames (plus the main thread)
#   python target.py locals TRUTH.json    the same, with ten locals in every recursing frame
#   python target.py two TRUTH.json       2 threads (the main one and a worker), 10 frames each
# Runs on CPython 3.8+ (native thread ids); nothing here may hold the GIL while blocked.
import json
import os
import sys
import threading
import time

DEEP = 1000
THREADS = 100
THREAD_FRAMES = 50

_release = threading.Lock()
_release.acquire()  # never released: blocked threads sit in a C call without the GIL


WITH_LOCALS = []  # set by the locals scenario: the truth also gives each frame's locals


def _frame_record(f):
    code = f.f_code
    record = {"function": code.co_name,
              "qualname": getattr(code, "co_qualname", code.co_name),
              "file": code.co_filename,
              "line": f.f_lineno}
    if WITH_LOCALS:
        record["locals"] = {name: repr(value) for name, value in f.f_locals.items()}
    return record


def _stack(f):
    frames = []
    while f is not None:
        frames.append(_frame_record(f))
        f = f.f_back
    return frames


def _snapshot(me):
    """Every other thread's stack, innermost first, keyed by thread ident."""
    return {ident: _stack(f) for ident, f in sys._current_frames().items() if ident != me}


def report_when_settled(truth, expected):
    """Runs in a short-lived thread of its own, so that it sees the other threads where they
    block: once @expected threads show the same stacks twice in a row, writes @truth, prints
    READY and ends. The bench waits for the process to drop back to @expected threads."""
    me = threading.get_ident()
    before = None
    while True:
        now = _snapshot(me)
        if len(now) == expected and now == before:
            break
        before = now
        time.sleep(0.05)
    native = {t.ident: t.native_id for t in threading.enumerate()}
    threads = [{"thread_id": ident, "native_thread_id": native.get(ident), "frames": frames}
               for ident, frames in sorted(now.items())]
    doc = {"python": sys.version.split()[0], "pid": os.getpid(), "threads": threads}
    tmp = truth + ".tmp"
    with open(tmp, "w") as out:
        json.dump(doc, out, indent=1)
    os.rename(tmp, truth)
    print("READY", flush=True)


def start_reporter(truth, expected):
    threading.Thread(target=report_when_settled, args=(truth, expected), daemon=True).start()


def block_forever():
    while True:
        _release.acquire()


# ---- (a) one thread, 1,000 Python frames deep --------------------------------------------------

def recurse(n):
    if n > 1:
        return recurse(n - 1)
    block_forever()


def deep(truth):
    # The main thread's stack: <module>, main, deep, recurse() x (DEEP - 4), block_forever.
    sys.setrecursionlimit(DEEP + 500)
    start_reporter(truth, 1)
    recurse(DEEP - 4)


# ---- (b) 100 threads, each 50 Python frames deep -----------------------------------------------

def thread_recurse(n):
    if n > 1:
        return thread_recurse(n - 1)
    block_forever()


def threads(truth):
    # Each worker's stack: Thread._bootstrap, _bootstrap_inner, run, thread_recurse() x
    # (THREAD_FRAMES - 4), block_forever. The main thread blocks too. Threads keep the default
    # stack size: with 1 MB stacks gdb's gcore failed to read them and wrote zeros instead.
    for i in range(THREADS):
        threading.Thread(target=thread_recurse, args=(THREAD_FRAMES - 4,),
                         name="worker-%d" % i, daemon=True).start()
    start_reporter(truth, THREADS + 1)
    block_forever()


# ---- (c) as (b), each recursing frame holding ten locals of the common types -----------------

def locals_recurse(n, label, *rest, **options):
    count = n * 3
    ratio = n / 7.0
    name = "frame-%d" % n
    pair = (n, label)
    items = [n, n + 1, n + 2]
    table = {"n": n, "name": name}
    if n > 1:
        return locals_recurse(n - 1, label, count, ratio, pair=pair, items=items, table=table)
    block_forever()


def locals_threads(truth):
    WITH_LOCALS.append(True)
    for i in range(THREADS):
        threading.Thread(target=locals_recurse, args=(THREAD_FRAMES - 4, "worker-%d" % i),
                         name="worker-%d" % i, daemon=True).start()
    start_reporter(truth, THREADS + 1)
    block_forever()


# ---- (d) 2 threads, a few frames each: what a small service looks like -------------------------

TWO_FRAMES = 10


def two(truth):
    # The worker: Thread._bootstrap, _bootstrap_inner, run, thread_recurse() x (TWO_FRAMES - 4),
    # block_forever; the main thread: <module>, main, two, recurse() x ..., block_forever.
    threading.Thread(target=thread_recurse, args=(TWO_FRAMES - 4,), name="worker",
                     daemon=True).start()
    start_reporter(truth, 2)
    recurse(TWO_FRAMES - 4)


def main():
    scenarios = {"deep": deep, "threads": threads, "locals": locals_threads, "two": two}
    if len(sys.argv) != 3 or sys.argv[1] not in scenarios:
        sys.stderr.write("usage: target.py deep|threads|locals|two TRUTH.json\n")
        return 2
    scenarios[sys.argv[1]](sys.argv[2])
    return 0


if __name__ == "__main__":
    sys.exit(main())
