# heap_target - the heap census benchmark's target (bench/heap): a process of about
# PYU_BENCH_HEAP_OBJECTS objects (default 5 million) in about 1 GB of heap, a mix of what
# services hold: instances of a class with attribute dicts, lists, tuples, str, int, float and
# small dicts. Then it takes its own census, as a program inside the process would (guppy's or
# objgraph's way): timed, `len(gc.get_objects())` and a per-type sum of sys.getsizeof() over
# them; writes OUTDIR/truth.json with the timings and counts, and parks (crash mode: kills
# itself with SIGSEGV, for a kernel core). The collector is disabled from the start.
#
#   python heap_target.py OUTDIR [park|crash]
import gc

gc.disable()
import json  # noqa: E402
import os  # noqa: E402
import signal  # noqa: E402
import sys  # noqa: E402
import threading  # noqa: E402
import time  # noqa: E402

OUTDIR = sys.argv[1]
MODE = sys.argv[2] if len(sys.argv) > 2 else "park"
OBJECTS = int(os.environ.get("PYU_BENCH_HEAP_OBJECTS", "5000000"))
PER_RECORD = 12  # objects one record makes (see Record)
HOLD = threading.Lock()
HOLD.acquire()


class Record(object):
    """12 objects: the instance, its dict (3.11+: made real by the __dict__ access below), a
    name str, a big int, a list of three str, a tuple of two floats, a small dict and its
    int."""

    def __init__(self, i):
        self.name = "record-%09d " % i + "x" * (300 + i % 200)
        self.ident = 10 ** 20 + i
        self.tags = ["tag-%d-%s" % (i, "t" * (250 + i % 100)) for _ in range(3)]
        self.where = (i * 0.5, i * 0.25)
        self.meta = {"n": 100000 + i}
        self.__dict__["seen"] = None


def type_name(t):
    mod = getattr(t, "__module__", None)
    name = getattr(t, "__qualname__", t.__name__)
    if mod in (None, "builtins", "__builtin__"):
        return name
    return "%s.%s" % (mod, name)


def own_census():
    """What a census from inside the process costs: every tracked object and the sizes of
    those, per type."""
    t0 = time.time()
    objs = gc.get_objects()
    n = len(objs)
    t1 = time.time()
    per = {}
    for o in objs:
        k = type(o)
        per[k] = per.get(k, 0) + sys.getsizeof(o)
    t2 = time.time()
    del objs
    return n, t1 - t0, t2 - t0, len(per)


def write_truth(doc):
    path = os.path.join(OUTDIR, "truth.json")
    with open(path + ".tmp", "w") as f:
        f.write(json.dumps(doc))
    os.rename(path + ".tmp", path)


RECORDS = [Record(i) for i in range(OBJECTS // PER_RECORD)]


def main():
    tracked, list_s, sized_s, types = own_census()
    rss = 0
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    rss = int(line.split()[1]) * 1024
    except OSError:
        pass
    doc = {"pyunwind_truth": 1, "pid": os.getpid(), "mode": MODE,
           "python": {"version": sys.version.split()[0], "hexversion": sys.hexversion,
                      "debug_build": hasattr(sys, "gettotalrefcount"),
                      "executable": sys.executable},
           "main_thread_id": threading.current_thread().ident,
           "threads": [{"thread_id": threading.current_thread().ident, "name": "MainThread",
                        "frames": []}],
           "extra": {"records": len(RECORDS), "tracked": tracked, "types": types,
                     "get_objects_seconds": list_s, "census_seconds": sized_s,
                     "rss": rss}}
    write_truth(doc)
    del doc
    if MODE == "crash":
        os.kill(os.getpid(), signal.SIGSEGV)
    HOLD.acquire()


main()
