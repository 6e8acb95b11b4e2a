# heap_real - a real program's heap for the heap census: code nobody here wrote, at scale.
#
#   python heap_real.py OUTDIR [park|crash]
#
# Runs the standard library on generated data - a big JSON document decoded, an XML tree parsed
# by xml.etree, collections (deque, OrderedDict, defaultdict, Counter, namedtuple, ChainMap),
# dataclasses, enum, compiled regular expressions, decimal, fractions, array, memoryview,
# bytearray, sets and frozensets, weakrefs, functools.partial, properties, classmethods and
# staticmethods, __slots__ classes, exceptions with their tracebacks, closures, generators,
# coroutines, asyncio tasks suspended on futures, a thread's threading.local - and, when they
# import (Debian's python3-* packages: /usr/bin/python3.11 for every one, other interpreters the
# pure-Python ones), numpy, lxml, yaml, aiohttp, multidict, yarl, uvloop, pygments, pyparsing,
# xmltodict, idna, toml, six. Then, at a quiescent moment (a collection run, the collector
# disabled, the other thread parked), takes the target's own census with heap_truth.py and
# writes OUTDIR/truth.json ("extra": {"types", "closure", "used": the packages that ran, ...});
# parks, or (crash) kills itself with SIGSEGV. Runs on 2.7 and 3.6+.
import gc
import sys

gc.disable()
if hasattr(gc, "unfreeze"):
    gc.unfreeze()  # what startup froze (3.12+: the deep-frozen modules' objects) is counted too
import functools  # noqa: E402
import os  # noqa: E402
import signal  # noqa: E402
import threading  # noqa: E402
import time  # noqa: E402

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import heap_truth  # noqa: E402

OUTDIR = sys.argv[1]
MODE = sys.argv[2] if len(sys.argv) > 2 else "park"
PY3 = sys.version_info[0] >= 3
HOLD = threading.Lock()
HOLD.acquire()
KEEP = {}
USED = []


def stdlib():
    import array
    import collections
    import decimal
    import fractions
    import json
    import re
    import weakref
    import xml.etree.ElementTree as ET

    records = [{"id": i, "name": "user%d" % i, "score": i * 0.25, "ok": i % 3 == 0,
                "tags": ["t%d" % (i % 17), "x"], "none": None,
                "nested": {"a": [i, i + 1, {"b": "c" * (i % 40)}]}} for i in range(6000)]
    KEEP["json"] = json.loads(json.dumps({"records": records, "total": len(records)}))
    del records
    parts = ["<root>"] + ['<item id="%d" kind="k%d">text %d<sub>%s</sub></item>tail'
                          % (i, i % 7, i, "v" * (i % 30)) for i in range(3000)] + ["</root>"]
    KEEP["xml"] = ET.fromstring("".join(parts))
    KEEP["deque"] = collections.deque(range(10000))
    KEEP["deque_small"] = collections.deque("abc", maxlen=5)
    KEEP["ordered"] = collections.OrderedDict(("k%d" % i, i) for i in range(2000))
    dd = collections.defaultdict(list)
    for i in range(3000):
        dd["g%d" % (i % 97)].append(i)
    KEEP["defaultdict"] = dd
    KEEP["counter"] = collections.Counter("abracadabra" * 500)
    Point = collections.namedtuple("Point", "x y z")
    KEEP["points"] = [Point(i, -i, str(i)) for i in range(2000)]
    KEEP["chain"] = collections.ChainMap({"a": 1}, {"b": 2}) if PY3 else None
    KEEP["regex"] = [re.compile(r"(?P<w%d>\w+)-%d[a-z]{%d}" % (i, i, i % 5 + 1))
                     for i in range(150)]
    KEEP["matches"] = [p.match("abc-%dxyzab" % i) for i, p in enumerate(KEEP["regex"])]
    KEEP["decimal"] = [decimal.Decimal(i) / 7 for i in range(1000)]
    KEEP["fractions"] = [fractions.Fraction(i, 7 + i % 13) for i in range(1000)]
    KEEP["array_d"] = array.array("d", range(10000))
    KEEP["array_b"] = array.array("b", [1, 2, 3])
    ba = bytearray(b"x" * 100000)
    ba.extend(b"y" * 777)
    KEEP["bytearray"] = ba
    KEEP["memoryview"] = memoryview(ba)[10:5000]
    KEEP["sets"] = [set(range(i)) for i in range(0, 300, 7)]
    KEEP["frozensets"] = [frozenset(("f%d" % j) for j in range(i)) for i in range(1, 60, 5)]
    KEEP["tuples"] = [tuple(range(i)) for i in range(40)]
    KEEP["floats"] = [i / 3.0 for i in range(3000)]
    KEEP["bigints"] = [10 ** (i % 200) + i for i in range(2000)]
    KEEP["complex"] = [complex(i, -i) for i in range(100)]
    KEEP["text"] = [u"\u00e9t\u00e9 %d \u20ac \U0001f600" % i for i in range(500)]

    class Node(object):
        def __init__(self, v):
            self.v = v
            self.children = []

    class Slotted(object):
        __slots__ = ("a", "b", "__weakref__")

        def __init__(self, a):
            self.a = a
            self.b = str(a)

    class Props(object):
        def __init__(self):
            self._x = 1

        @property
        def x(self):
            return self._x

        @classmethod
        def make(cls):
            return cls()

        @staticmethod
        def helper(a):
            return a

    nodes = [Node(i) for i in range(3000)]
    for i, n in enumerate(nodes[1:], 1):
        nodes[(i - 1) // 3].children.append(n)
    KEEP["tree"] = nodes[0]
    slotted = [Slotted(i) for i in range(2000)]
    KEEP["slotted"] = slotted
    KEEP["weakrefs"] = [weakref.ref(s) for s in slotted[:500]]
    KEEP["weakdict"] = weakref.WeakValueDictionary((i, s) for i, s in enumerate(slotted[:300]))
    KEEP["props"] = [Props.make() for _ in range(200)]
    KEEP["partials"] = [functools.partial(int, base=b) for b in range(2, 30)]
    KEEP["bound"] = [p.__init__ for p in KEEP["props"][:50]]

    def make_closure(n):
        total = [n]

        def add(x):
            total[0] += x
            return total[0]
        return add
    KEEP["closures"] = [make_closure(i) for i in range(300)]

    def gen(n):
        local = ["g%d" % n] * 3
        for i in range(n):
            yield local[0], i
    gens = [gen(i + 5) for i in range(200)]
    for g in gens:
        next(g)
    KEEP["generators"] = gens
    errors = []
    for i in range(200):
        try:
            {}["missing%d" % i]
        except KeyError:
            errors.append(sys.exc_info()[1])
    KEEP["errors"] = errors
    if not PY3:
        return
    KEEP["traces"] = [e.__traceback__ for e in errors[:50]]
    import enum
    class Color(enum.Enum):
        RED = 1
        GREEN = 2
        BLUE = 3

    class Perm(enum.IntFlag):
        R = 4
        W = 2
        X = 1

    KEEP["enums"] = [Color(i % 3 + 1) for i in range(500)] + [Perm.R | Perm.W]
    asyncio_part()
    if sys.version_info < (3, 7):
        return
    import dataclasses

    Item = dataclasses.make_dataclass("Item", [("name", str), ("price", float),
                                               ("qty", int, dataclasses.field(default=0))])
    KEEP["dataclasses"] = [Item("item%d" % i, i * 1.5, i) for i in range(2000)]
    if sys.version_info >= (3, 10):
        Pair = dataclasses.make_dataclass("Pair", ["left", "right"], slots=True)
        KEEP["slot_dataclasses"] = [Pair(i, str(i)) for i in range(1000)]



ASYNCIO_PART = """
import asyncio


def asyncio_part(KEEP):
    loop = asyncio.new_event_loop()
    futures = [loop.create_future() for _ in range(100)]

    async def waiter(i, fut):
        data = {"request": i, "payload": "p" * (i % 50)}
        await fut
        return data

    async def consumer(i):
        value = await asyncio.gather(*(waiter(i * 10 + j, futures[(i * 10 + j) % 100])
                                       for j in range(3)))
        return value

    tasks = [loop.create_task(consumer(i)) for i in range(50)]
    loop.run_until_complete(asyncio.sleep(0))
    loop.run_until_complete(asyncio.sleep(0))

    async def plain():
        await asyncio.sleep(0)
    KEEP["asyncio"] = (loop, futures, tasks, plain())
"""


def asyncio_part():
    """Tasks suspended on futures (3.5+ syntax: compiled here, so that 2.7 can read this file)."""
    ns = {}
    exec(ASYNCIO_PART, ns)
    ns["asyncio_part"](KEEP)


def packages():
    """Debian's python3-* packages, where they import: each that ran goes into USED."""
    if not PY3:
        return
    if "/usr/lib/python3/dist-packages" not in sys.path:
        sys.path.append("/usr/lib/python3/dist-packages")
    tries = [("yaml", try_yaml), ("numpy", try_numpy), ("lxml", try_lxml),
             ("multidict", try_multidict), ("yarl", try_yarl), ("aiohttp", try_aiohttp),
             ("uvloop", try_uvloop), ("pygments", try_pygments),
             ("pyparsing", try_pyparsing), ("xmltodict", try_xmltodict), ("idna", try_idna),
             ("toml", try_toml), ("six", try_six)]
    for name, run in tries:
        try:
            run()
        except Exception:
            continue  # not installed for this interpreter, or too new for it
        USED.append(name)


def try_yaml():
    import yaml
    doc = {"services": [{"name": "svc%d" % i, "ports": [80 + i, 443], "env": {"A": str(i)}}
                        for i in range(300)]}
    KEEP["yaml"] = yaml.safe_load(yaml.safe_dump(doc))


def try_numpy():
    import numpy
    KEEP["numpy"] = [numpy.arange(1000.0), numpy.zeros((50, 40), dtype=numpy.int32),
                     numpy.array(["a", "bc"]), numpy.arange(100)[::3]]


def try_lxml():
    from lxml import etree
    root = etree.fromstring("<r>" + "".join('<e n="%d">t%d</e>' % (i, i)
                                            for i in range(2000)) + "</r>")
    KEEP["lxml"] = (root, root.findall("e")[:100])


def try_multidict():
    import multidict
    KEEP["multidict"] = [multidict.CIMultiDict([("K%d" % i, str(i)), ("k%d" % i, "x")])
                         for i in range(200)]


def try_yarl():
    import yarl
    KEEP["yarl"] = [yarl.URL("http://example.invalid/p/%d?q=%d" % (i, i)) for i in range(200)]


def try_aiohttp():
    from aiohttp import web
    ns = {"web": web}
    exec("async def handler(request):\n    return web.Response(text='ok')\n", ns)
    app = web.Application()
    for i in range(50):
        app.router.add_get("/r%d" % i, ns["handler"])
    KEEP["aiohttp"] = app


def try_uvloop():
    import uvloop
    loop = uvloop.new_event_loop()
    handles = [loop.call_later(3600 + i, len, "x") for i in range(30)]
    KEEP["uvloop"] = (loop, handles)


def try_pygments():
    from pygments import highlight
    from pygments.formatters import HtmlFormatter
    from pygments.lexers import PythonLexer
    src = "def f(x):\n    return [i * x for i in range(10)]\n" * 50
    KEEP["pygments"] = highlight(src, PythonLexer(), HtmlFormatter())


def try_pyparsing():
    import pyparsing as pp
    expr = pp.delimitedList(pp.Word(pp.alphas) | pp.Word(pp.nums))
    KEEP["pyparsing"] = [expr.parseString("a, 1, bc, 23, def")]


def try_xmltodict():
    import xmltodict
    KEEP["xmltodict"] = xmltodict.parse("<a>" + "<b x='1'>y</b>" * 300 + "</a>")


def try_idna():
    import idna
    KEEP["idna"] = [idna.encode(u"b\u00fccher%d.example" % i) for i in range(100)]


def try_toml():
    import toml
    KEEP["toml"] = toml.loads("\n".join('k%d = "v%d"' % (i, i) for i in range(300)))


def try_six():
    import six
    KEEP["six"] = [six.moves.range(3), six.text_type("x")]


READY = threading.Event()


def local_holder():
    local = threading.local()
    local.data = {"thread": [str(i) for i in range(100)]}
    KEEP["local"] = local
    READY.set()
    HOLD.acquire()
    return local


def main():
    stdlib()
    packages()
    holder = threading.Thread(target=local_holder, name="local-holder")
    holder.daemon = True
    holder.start()
    READY.wait()
    time.sleep(0.3)  # the holder blocks on HOLD
    # The program's garbage collected once, as a running program's would be by now; then
    # nothing moves between the lists while both censuses are taken.
    gc.collect()
    if hasattr(gc, "unfreeze"):
        gc.unfreeze()  # (3.12: something of the above froze the startup's objects again)
    crash_args = (os.getpid(), signal.SIGSEGV)
    crash = functools.partial(os.kill, *crash_args)
    park = HOLD.acquire
    main_tid = threading.current_thread().ident
    # --referrers and --path of the deque: KEEP holds it alone (gc.get_referrers, frames left
    # out), and the target evaluates the expression to that very object.
    held = KEEP["deque"]
    expr = "sys.modules['__main__'].KEEP['deque']"
    if eval(expr, {"sys": sys}) is not held:
        raise AssertionError(expr)
    referrers = {}
    for r in gc.get_referrers(held):
        if type(r).__name__ != "frame":
            referrers[hex(id(r))] = "['deque']" if r is KEEP else "?" + type(r).__name__
    r = None
    graph = {"address": hex(id(held)), "expr": expr, "root": "sys.modules['__main__']",
             "referrers": referrers}
    held = None
    heap_truth.write(OUTDIR, {"warm-up": [1]}, "warm-up.json")
    heap_truth.census()
    types, closure = heap_truth.census()
    threads = [{"thread_id": main_tid, "native_thread_id": None, "name": "MainThread",
                "frames": []},
               {"thread_id": holder.ident, "native_thread_id": None, "name": "local-holder",
                "frames": []}]
    doc = {"pyunwind_truth": 1, "pid": os.getpid(), "mode": MODE,
           "python": {"version": sys.version.split()[0], "hexversion": sys.hexversion,
                      "debug_build": hasattr(sys, "gettotalrefcount"),
                      "executable": sys.executable},
           "main_thread_id": main_tid, "threads": threads,
           "extra": {"types": types, "closure": closure, "used": USED, "graph": graph}}
    heap_truth.write(OUTDIR, doc)
    del doc, types, closure, threads
    if MODE == "crash":
        if hasattr(gc, "freeze"):
            gc.freeze()
        if PY3:
            os.kill(*crash_args)
        else:
            crash()
    park()


main()
