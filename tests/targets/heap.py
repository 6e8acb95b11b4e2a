# heap - the end-to-end target for the heap census.
#
#   python heap.py OUTDIR [park|crash]
#
# Builds a zoo of objects whose numbers are known - instances of a plain class, a __slots__
# class, a dict subclass, a class whose instances keep many attributes (3.11+ managed dicts,
# 3.13+ inline values) and one whose dicts were made real, containers of known sizes, large
# str, bytes and bytearray objects, big ints, a reference cycle nobody refers to, objects held
# only by a suspended generator or coroutine, only by a thread's threading.local and only by a
# module global - with the collector disabled from the start, so nothing moves between lists.
# Then, with the other thread parked, the main thread takes the truth itself: every object of
# gc.get_objects() (less the census's own list and frame) counted per type as
# f"{__module__}.{__qualname__}" (builtins bare) with the sum of sys.getsizeof(), and the same
# of everything reached from those through gc.get_referents(); writes it to OUTDIR/truth.json
# ("extra": {"types": {name: [count, bytes]}, "closure": {...}, "atoms": {type: bytes of the
# zoo's large str, bytes, bytearray, int objects}, "largest": [[address, type, bytes] of the
# three largest objects], "zoo": {...}, "paths": the expressions it evaluates to four objects
# and their roots (also of what only a suspended generator's, coroutine's or task's frame
# holds), "frame_referrers": the frames holding FrameHeld as a local,
# "retained": the getsizeof sum of what only RETAIN holds}) and parks on a
# lock nobody releases (crash mode: kills itself with SIGSEGV for a kernel core, with
# its arguments bound before the census so that the call makes no object; 3.7+ first move every
# object into the permanent generation with gc.freeze(), so that ring is walked too). Runs on
# 2.7 and 3.6+.
import gc

gc.disable()
import functools  # noqa: E402
if hasattr(gc, "unfreeze"):
    gc.unfreeze()  # what startup froze (3.12+: the deep-frozen modules' objects) is counted too

import json  # noqa: E402
import os  # noqa: E402
import signal  # noqa: E402
import sys  # noqa: E402
import threading  # noqa: E402
import time  # noqa: E402

OUTDIR = sys.argv[1]
MODE = sys.argv[2] if len(sys.argv) > 2 else "park"
PY3 = sys.version_info[0] >= 3
HOLD = threading.Lock()
HOLD.acquire()

PLAIN, SLOTTED, DICTSUB, WIDE, REALDICT, CYCLES = 1500, 700, 300, 250, 120, 40


class Plain(object):
    def __init__(self, i):
        self.i = i
        self.name = "p"


class Slotted(object):
    __slots__ = ("a", "b")

    def __init__(self, i):
        self.a = i
        self.b = None


class DictSub(dict):
    pass


class Wide(object):
    def __init__(self, i):
        for k in range(12):
            setattr(self, "attr%d" % k, i)


class RealDict(object):
    def __init__(self, i):
        self.x = i
        self.__dict__["y"] = i  # makes the instance dict a real dict on 3.11+


class CycleNode(object):
    def __init__(self):
        self.other = None


class GlobalHeld(object):
    pass


class CoroHeld(object):
    pass


class LocalHeld(object):
    pass


class FrameHeld(object):
    pass


class CellHeld(object):
    pass


class TaskHeld(object):
    pass


class Leaf(object):
    pass


ZOO = {
    "plain": [Plain(i) for i in range(PLAIN)],
    "slotted": [Slotted(i) for i in range(SLOTTED)],
    "dictsub": [DictSub(a=i, b=2, c=3) for i in range(DICTSUB)],
    "wide": [Wide(i) for i in range(WIDE)],
    "realdict": [RealDict(i) for i in range(REALDICT)],
    "lists": [list(range(n)) for n in (0, 1, 7, 100, 5000, 100000)],
    "dicts": [dict((k, k) for k in range(n)) for n in (0, 1, 5, 6, 100, 10000)],
    "sets": [set(range(n)) for n in (0, 3, 5, 100, 10000)],
    "frozensets": [frozenset(range(n)) for n in (1, 50)],
    "tuples": [tuple(range(n)) for n in (2, 30, 3000)],
    "str": "s" * 3000000,
    "text": u"\u20ac" * 100000,
    "bytes": b"b" * 2000000,
    "bytearray": bytearray(4000000),
    "bigints": [7 ** 20000, -(3 ** 9000)],
}
GLOBAL = GlobalHeld()


class Referred(object):
    pass


class RefHolder(object):
    pass


# --referrers: SHARED is held by a module global, a list item, a dict value, a tuple item, a
# set element and an instance attribute; ZOO["lists"][3] by the list of lists alone.
SHARED = Referred()
HOLDER = RefHolder()
HOLDER.ref = SHARED
REFS = {"list": [0, 0, SHARED], "dict": {"k": SHARED}, "tuple": (1, SHARED),
        "set": set([SHARED]), "holder": HOLDER}


# --path: LEAK.cache['k'][3] is reached from sys.modules['__main__'] through an attribute, a dict
# and a list; a FrameHeld object only through the local 'held' of local_holder's frame.
LEAK = RefHolder()
LEAK.cache = {"k": [0, 0, 0, Leaf()]}
# --retained: everything RETAIN holds is made here and held by nothing else (fresh keys, ints
# past the small-int cache, strs and bytes of more than one character), so the bytes it
# retains are the sys.getsizeof() sum of its closure, which main() checks and reports.
RETAIN = {"".join(["ro", "ws"]): [[10 ** 6 + i, "row%d" % i, (i * 1.5, b"xy" * (2 + i % 50))]
                                  for i in range(2000)]}


def make_cycles():
    for _ in range(CYCLES):
        a, b = CycleNode(), CycleNode()
        a.other, b.other = b, a


make_cycles()


def held_by_generator():
    obj = CoroHeld()
    boxed = CellHeld()  # a cell variable: the frame holds the cell, the cell the object

    def inner():
        return boxed
    yield obj is not None and inner is not None


GEN = held_by_generator()
next(GEN)
CORO = None
if sys.version_info >= (3, 5):
    ns = {"CoroHeld": CoroHeld}
    exec("class Suspend(object):\n"
         "    def __await__(self):\n"
         "        yield\n"
         "async def held():\n"
         "    obj = CoroHeld()\n"
         "    await Suspend()\n", ns)
    CORO = ns["held"]()
    CORO.send(None)
    del ns

# 3.7+: a task of an event loop that runs in a thread of its own, suspended in
# worker() on a future nobody completes; what only its coroutine's frame holds (TaskHeld) is
# reached from the task's frame locals alone (the task itself is a C object).
LOOP = TASK = FUTURE = None


def start_loop():
    global LOOP, TASK, FUTURE
    import asyncio
    ns = {"TaskHeld": TaskHeld}
    exec("async def worker(fut):\n"
         "    held = TaskHeld()\n"
         "    await fut\n", ns)
    LOOP = asyncio.new_event_loop()
    FUTURE = LOOP.create_future()
    TASK = LOOP.create_task(ns["worker"](FUTURE))
    if hasattr(TASK, "set_name"):
        TASK.set_name("Worker")
    started = threading.Event()
    LOOP.call_soon(started.set)  # after the task's first step: worker() awaits FUTURE
    loop_thread = threading.Thread(target=LOOP.run_forever, name="loop")
    loop_thread.daemon = True
    loop_thread.start()
    started.wait()


READY = threading.Event()


def local_holder():
    local = threading.local()
    local.obj = LocalHeld()
    held = FrameHeld()
    READY.set()
    HOLD.acquire()
    return local, held


def type_name(t):
    module = getattr(t, "__module__", None)
    name = getattr(t, "__qualname__", None) or t.__name__
    if module in ("builtins", "__builtin__") or not isinstance(module, str):
        return name
    return module + "." + name


def census():
    """({type name: [count, bytes]} of every object the collector tracks, the same of every
    object reached from those through gc.get_referents()), each object once."""
    objs = gc.get_objects()
    me = id(sys._getframe())
    tracked, closure = {}, {}
    seen = set([id(objs), me])
    frontier = []
    for o in objs:
        if id(o) not in seen:
            frontier.append(o)
    seen.update(id(o) for o in objs)
    del objs[:]  # <= 3.10: the list holds this frame, which holds the list
    counts = tracked
    while frontier:
        for o in frontier:
            name = type_name(type(o))
            for table in (counts, closure) if counts is tracked else (closure,):
                entry = table.get(name)
                if entry is None:
                    entry = table[name] = [0, 0]
                entry[0] += 1
                entry[1] += sys.getsizeof(o)
        counts = None
        found = []
        for r in gc.get_referents(*frontier):
            if id(r) not in seen:
                seen.add(id(r))
                found.append(r)
        frontier = found
    return tracked, closure


def referrers_of(obj):
    """{address: via} of what gc.get_referrers() finds for @obj (frames left out: the census
    does not look into them), via as `pyunwind heap --referrers` writes it."""
    out = {}
    for r in gc.get_referrers(obj):
        if type(r).__name__ == "frame" or (type(r) is tuple and len(r) == 1 and r[0] is obj):
            continue  # frames, and the call's own argument tuple (gone after it)
        via = "?" + type_name(type(r))
        # Loops, not generator expressions: those would hold @obj in a cell, a referrer.
        if isinstance(r, (list, tuple)):
            via = ""
            for i, x in enumerate(r):
                if x is obj:
                    via += "[%d]" % i
        elif isinstance(r, dict):
            via = ""
            for k, x in r.items():
                if x is obj:
                    via += "[%r]" % (k,)
        elif isinstance(r, (set, frozenset)):
            via = "(an element)"
        elif isinstance(r, RefHolder):
            via = ".ref"
        out[hex(id(r))] = via
    r = None  # else the last referrer, maybe this very frame, makes a cycle that stays
    return {"address": hex(id(obj)), "type": type_name(type(obj)), "referrers": out}


def frame_locals_of(obj):
    """["local NAME of frame #N", thread id, id(frame)] for each local of every thread's Python
    frames bound to @obj, frames numbered as py-bt numbers them (innermost #0). Run before the
    census: on 3.12 and older, f_locals makes each frame's locals dict, which then stays."""
    out = []
    me = threading.current_thread().ident
    for tid, f in sys._current_frames().items():
        if tid == me:
            continue
        n = 0
        while f is not None:
            for name, value in f.f_locals.items():
                if value is obj:
                    out.append(["local %s of frame #%d" % (name, n), tid, hex(id(f))])
            f = f.f_back
            n += 1
    f = value = None
    return out


def frame_kind(code):
    flags = code.co_flags
    return ("async generator" if flags & 0x200 else "coroutine" if flags & 0x80 else
            "generator" if flags & 0x20 else "frame")


def code_name(code):
    return getattr(code, "co_qualname", None) or code.co_name


def holders_of(expr):
    """{"address", "type", "referrers": {address: via}} of the object @expr evaluates to, from
    gc.get_referrers(), as `pyunwind heap --referrers` writes each via: a frame object (<= 3.10)
    or a generator or coroutine (3.11+, whose frame is inside it) holding it as a local names
    the local and the code ("local obj of generator held_by_generator()"), a cell
    ".cell_contents", a dict its key, a list its index. Only this function's own frame is left
    out: run before the census, as the frames' f_locals this reads stay made (<= 3.12)."""
    obj = eval(expr, {"sys": sys, "TASK": TASK})
    me = sys._getframe()
    out = {}
    for r in gc.get_referrers(obj):
        if r is me:
            continue
        t = type(r).__name__
        frame = code = None
        if t == "frame":
            frame = r
        elif t in ("generator", "coroutine", "async_generator"):
            frame = getattr(r, {"generator": "gi_frame", "coroutine": "cr_frame",
                                "async_generator": "ag_frame"}[t])
        via = "?" + t
        if frame is not None:
            code = frame.f_code
            cells = code.co_cellvars + code.co_freevars
            via = ""
            for name, value in frame.f_locals.items():
                if value is obj and name not in cells:
                    via += "local %s of %s %s()" % (name, frame_kind(code), code_name(code))
        elif t == "cell":
            via = ".cell_contents"
        elif isinstance(r, dict):
            via = ""
            for k, x in r.items():
                if x is obj:
                    via += "[%r]" % (k,)
        out[hex(id(r))] = via
    r = frame = value = x = me = None
    return {"address": hex(id(obj)), "type": type_name(type(obj)), "referrers": out}


def held_paths():
    """The paths to what only suspended frames hold, each expression evaluated here to that
    very object: through the module global holding the generator or coroutine, and (3.7+)
    the local of the task's coroutine as a root of its own."""
    main = "sys.modules['__main__']"
    want = [main + ".GEN.gi_frame.f_locals['obj']", main + ".GEN.gi_frame.f_locals['boxed']"]
    if CORO is not None:
        want.append(main + ".CORO.cr_frame.f_locals['obj']")
    out = []
    for expr in want:
        out.append({"address": hex(id(eval(expr, {"sys": sys}))), "expr": expr, "root": main})
    if TASK is not None:
        coro = TASK.get_coro() if hasattr(TASK, "get_coro") else TASK._coro
        held = eval(held_fetchers([{"expr": "held"}])[0], {"TASK": TASK})
        task = ("task '%s'" % TASK.get_name() if hasattr(TASK, "get_name")
                else "task at 0x%x" % id(TASK))
        out.append({"address": hex(id(held)), "expr": "held",
                    "root": "local 'held' of coroutine %s() (frame #0 of %s)"
                    % (code_name(coro.cr_code), task)})
        coro = held = None
    return out


def held_fetchers(paths):
    """An expression that evaluates to each object of @paths (held_paths())."""
    out = []
    for p in paths:
        if p["expr"] == "held":
            out.append("(TASK.get_coro() if hasattr(TASK, 'get_coro') else TASK._coro)"
                       ".cr_frame.f_locals['held']")
        else:
            out.append(p["expr"])
    return out


def _outside(objs, internal):
    """sys.getrefcount() of each of @objs less the references @internal counts."""
    out = []
    for o in objs:
        out.append(sys.getrefcount(o) - internal.get(id(o), 0))
    o = None
    return out


def retained_closure(obj):
    """The sys.getsizeof() sum of @obj and of everything it reaches through
    gc.get_referents(), after checking by reference counts that nothing else refers to any of
    those: the bytes freed if @obj went."""
    ids, objs, frontier, internal = set([id(obj)]), [obj], [obj], {}
    while frontier:
        found = []
        # gc.get_referents() leaves out the str keys of dicts: added here.
        refs = gc.get_referents(*frontier)
        listed = set(id(x) for x in refs)
        keys = [k for d in frontier if type(d) is dict for k in d if id(k) not in listed]
        for r in refs + keys:
            internal[id(r)] = internal.get(id(r), 0) + 1
            if id(r) not in ids:
                ids.add(id(r))
                found.append(r)
        objs.extend(found)
        frontier = found
    r = d = k = None
    del keys[:], refs[:]
    base = _outside([Leaf()], {})[0]  # an object held by its list alone
    outside = _outside(objs, internal)
    for i in range(1, len(objs)):
        if outside[i] != base:
            raise AssertionError("%r is held from outside RETAIN" % (type(objs[i]),))
    total = sum([sys.getsizeof(x) for x in objs])
    del objs[:], found[:], frontier[:]
    return total


def native_id():
    get = getattr(threading, "get_native_id", None)
    return get() if get is not None else None


def write_truth(doc, name="truth.json"):
    path = os.path.join(OUTDIR, name)
    with open(path + ".tmp", "w") as f:
        f.write(json.dumps(doc))
    os.rename(path + ".tmp", path)


def main():
    holder = threading.Thread(target=local_holder, name="local-holder")
    holder.daemon = True
    holder.start()
    READY.wait()
    if sys.version_info >= (3, 7):
        start_loop()
    time.sleep(0.3)  # the holder blocks on HOLD, the loop in its selector
    frame_held = [o for o in gc.get_objects() if type(o) is FrameHeld][0]
    frame_refs = frame_locals_of(frame_held)
    frame_held_address = hex(id(frame_held))
    frame_held = None
    # What only suspended frames hold: the paths to it and its referrers, taken before the
    # census (reading f_locals makes each frame's locals dict on <= 3.12, which then stays).
    gen_paths = held_paths()
    gen_refs = [holders_of(fetch) for fetch in held_fetchers(gen_paths)]
    # Made before the census and kept to the end, as everything the census counts.
    held_root = "local 'held' of %s of thread 0x%x" % (
        frame_refs[0][0].split(" of ", 1)[1] if frame_refs else "?",
        frame_refs[0][1] if frame_refs else 0)
    # Made before the census: calling them makes no object (a bound method, an argument tuple:
    # 2.7 copies a *args tuple, 3.x passes it on; 3.6 makes one for a partial's call).
    crash_args = (os.getpid(), signal.SIGSEGV)
    crash = functools.partial(os.kill, *crash_args)
    park = HOLD.acquire
    main_tid = native_id()
    # First calls make what stays: argument-name tuples of open() and os.rename(), the slots
    # 2.7 fills in a type on first use.
    write_truth({"warm-up": [1]}, "warm-up.json")
    census()
    referrers_of(SHARED)  # its first call, too, leaves something on 2.7
    types, closure = census()
    refs = [referrers_of(SHARED), referrers_of(ZOO["lists"][3])]  # not in the census
    # --path: the chains from the roots, checked here to evaluate to the object.
    paths = []
    for obj, expr in ((GLOBAL, "sys.modules['__main__'].GLOBAL"),
                      (ZOO["lists"][3], "sys.modules['__main__'].ZOO['lists'][3]"),
                      (LEAK.cache["k"][3], "sys.modules['__main__'].LEAK.cache['k'][3]")):
        if eval(expr, {"sys": sys}) is not obj:
            raise AssertionError(expr)
        paths.append({"address": hex(id(obj)), "expr": expr,
                      "root": "sys.modules['__main__']"})
    paths.extend(gen_paths)
    paths.append({"address": frame_held_address, "expr": "held", "root": held_root})
    obj = None
    retained = {"address": hex(id(RETAIN)), "bytes": retained_closure(RETAIN)}
    atoms = {}
    for o in [ZOO["str"], ZOO["text"], ZOO["bytes"], ZOO["bytearray"]] + ZOO["bigints"]:
        atoms[type_name(type(o))] = atoms.get(type_name(type(o)), 0) + sys.getsizeof(o)
    largest = [[hex(id(o)), type_name(type(o)), sys.getsizeof(o)]
               for o in (ZOO["bytearray"], ZOO["str"], ZOO["bytes"])]
    threads = [{"thread_id": threading.current_thread().ident, "native_thread_id": main_tid,
                "name": "MainThread", "frames": []},
               {"thread_id": holder.ident, "native_thread_id": None, "name": "local-holder",
                "frames": []}]
    threads += [{"thread_id": t.ident, "native_thread_id": None, "name": t.name, "frames": []}
                for t in threading.enumerate() if t.name == "loop"]
    doc = {"pyunwind_truth": 1, "pid": os.getpid(), "mode": MODE,
           "python": {"version": sys.version.split()[0], "hexversion": sys.hexversion,
                      "debug_build": hasattr(sys, "gettotalrefcount"),
                      "executable": sys.executable},
           "main_thread_id": threading.current_thread().ident, "threads": threads,
           "extra": {"types": types, "closure": closure,
                     "atoms": atoms, "largest": largest,
                     "referrers": refs + gen_refs, "paths": paths, "retained": retained,
                     "frame_referrers": {"address": frame_held_address,
                                         "referrers": frame_refs},
                     "plain_addresses": [hex(id(o)) for o in ZOO["plain"][:2]],
                     "zoo": {"Plain": PLAIN, "Slotted": SLOTTED, "DictSub": DICTSUB,
                             "Wide": WIDE, "RealDict": REALDICT, "CycleNode": 2 * CYCLES}}}
    write_truth(doc)
    del doc, types, closure, threads, atoms, largest, refs, paths, retained
    if MODE == "crash":
        if hasattr(gc, "freeze"):
            gc.freeze()  # 3.7+: every object into the permanent generation's list
        if PY3:
            os.kill(*crash_args)
        else:
            crash()
    park()


main()
