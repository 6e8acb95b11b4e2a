# values_catalog - a target for the value reader's end-to-end test: builds objects of every kind
# the reader knows (and the bounds it applies), reports id(obj) -> repr(obj) as the interpreter
# itself prints it (with the reader's documented short forms where a bound cuts), then parks
# (mode "park") or crashes (mode "crash") so a kernel core holds the same objects.
#
# Runs on CPython 2.7 and 3.6+: no f-strings, ASCII source only (non-ASCII text is written with
# escapes). Truth JSON: {"pyunwind_truth": 1, "threads": [main thread], "values": [{"name",
# "op": repr|type|attrs|getattr|dictget, "id", ["arg"], "expect", "cut"}]}.
import ctypes
import json
import os
import random
import struct
import sys
import threading

PY2 = sys.version_info[0] == 2
if PY2:
    text_type, int_types = unicode, (int, long)  # noqa: F821
    chr_ = unichr  # noqa: F821
else:
    text_type, int_types = str, (int,)
    chr_ = chr
    if hasattr(sys, "set_int_max_str_digits"):
        sys.set_int_max_str_digits(0)

# The reader's default limits (core/values.c pyu_value_limits_default).
DEPTH, ITEMS, CHARS, DIGITS, OUTPUT = 6, 100, 1000, 1000, 4096

KEEP = []  # every object reported stays alive (and at its address) while the target parks


def addr(obj):
    return "%x" % id(obj)


def bounded(obj, depth=0, stack=()):
    """repr(obj) with the reader's bounds applied; returns (text, cut)."""
    t = type(obj)
    if id(obj) in stack and t in (list, tuple, dict):
        return {list: "[...]", tuple: "(...)", dict: "{...}"}[t], False
    if t in (list, tuple, dict, set, frozenset) and depth >= DEPTH and (
            t in (list, tuple, dict) or len(obj)):
        name = {list: "list", tuple: "tuple", dict: "dict", set: "set", frozenset: "set"}[t]
        return "<%s at 0x%x: depth limit>" % (name, id(obj)), True
    if t in (list, tuple):
        parts, cut = [], len(obj) > ITEMS
        for x in list(obj)[:ITEMS]:
            s, c = bounded(x, depth + 1, stack + (id(obj),))
            parts.append(s)
            cut = cut or c
        if len(obj) > ITEMS:
            parts.append("...")
        body = ", ".join(parts)
        if t is tuple:
            return "(" + body + ("," if len(obj) == 1 else "") + ")", cut
        return "[" + body + "]", cut
    if t is dict:
        parts, cut = [], len(obj) > ITEMS
        for k, v in list(obj.items())[:ITEMS]:
            ks, kc = bounded(k, depth + 1, stack + (id(obj),))
            vs, vc = bounded(v, depth + 1, stack + (id(obj),))
            parts.append(ks + ": " + vs)
            cut = cut or kc or vc
        if len(obj) > ITEMS:
            parts.append("...")
        return "{" + ", ".join(parts) + "}", cut
    if t in (set, frozenset):
        name = t.__name__
        if not obj:
            return (name + "([])" if PY2 else name + "()"), False
        parts, cut = [], len(obj) > ITEMS
        for x in list(obj)[:ITEMS]:
            s, c = bounded(x, depth + 1, stack + (id(obj),))
            parts.append(s)
            cut = cut or c
        if len(obj) > ITEMS:
            parts.append("...")
        body = ", ".join(parts)
        if PY2:
            return name + "([" + body + "])", cut
        return ("{" + body + "}" if t is set else name + "({" + body + "})"), cut
    if t in (text_type, bytes, str) and len(obj) > CHARS:
        return repr(obj[:CHARS]) + "...", True
    if t in (bytearray,) and len(obj) > CHARS:
        return "bytearray(" + repr(bytes(obj[:CHARS])) + "...)", True
    if t in int_types and obj.bit_length() > 3000 and (
            obj.bit_length() > 4000 or len(str(abs(obj))) > DIGITS):
        kind = "long" if PY2 else "int"
        return "<%s%s of %d bits at 0x%x>" % ("negative " if obj < 0 else "", kind,
                                             abs(obj).bit_length(), id(obj)), True
    return repr(obj), False


def cut_output(text, cut):
    b = text.encode("utf-8", "surrogatepass")
    if len(b) <= OUTPUT:
        return text, cut
    n = OUTPUT
    while n > 0 and (ord(b[n:n + 1]) & 0xc0) == 0x80:
        n -= 1
    return b[:n].decode("utf-8", "surrogatepass") + "...", True


VALUES = []


def add(name, obj, expect=None):
    """A repr case (and a type case); @expect overrides the bounded repr (e.g. a default form)."""
    KEEP.append(obj)
    if expect is None:
        text, cut = cut_output(*bounded(obj))
    else:
        text, cut = expect, False
    VALUES.append({"name": name, "op": "repr", "id": addr(obj), "expect": text, "cut": cut})
    VALUES.append({"name": name + "/type", "op": "type", "id": addr(obj),
                   "expect": type(obj).__name__, "cut": False})


def add_attrs(name, obj, twin):
    """The instance attributes of @obj, as vars(@twin) shows them (@twin was built the same
    way; asking @obj itself would turn 3.13+ inline values into a dict)."""
    KEEP.append(obj)
    KEEP.append(twin)
    text = "{" + ", ".join(bounded(k)[0] + ": " + bounded(v)[0]
                           for k, v in (vars(twin).items() if twin is not None else [])) + "}"
    VALUES.append({"name": name + "/attrs", "op": "attrs", "id": addr(obj), "expect": text,
                   "cut": False})


def add_getattr(name, obj, attr, where, value):
    KEEP.append(obj)
    VALUES.append({"name": name + "/getattr", "op": "getattr", "id": addr(obj), "arg": attr,
                   "expect": where + " " + bounded(value)[0], "cut": False})


def add_dictget(name, d, key):
    KEEP.append(d)
    VALUES.append({"name": name + "/dictget", "op": "dictget", "id": addr(d), "arg": str(key),
                   "expect": bounded(d[key])[0], "cut": False})


def default_form(obj):
    return object.__repr__(obj)


# ---- classes used below ------------------------------------------------------------------

class Base(object):
    kind = "base"

    def method(self):
        return 1


class Plain(Base):
    label = "plain"

    def __init__(self, a, b):
        self.a = a
        self.b = b


class WithRepr(object):
    def __repr__(self):
        return "custom!"


class Slotted(object):
    __slots__ = ("x", "y")

    def __init__(self):
        self.x = 1
        self.y = 2


class DictSub(dict):
    pass


class IntSub(int):
    pass


class TupleSub(tuple):
    pass


class ListSub(list):
    pass


class MyError(Exception):
    pass


class Outer(object):
    class Inner(object):
        def method(self):
            return 2


class Meta(type):
    pass


MetaMade = Meta("MetaMade", (object,), {})


def generator_func():
    yield 1


def cell_of(value):
    return (lambda: value).__closure__[0]


def empty_cell():
    if False:
        value = 1

    def read():
        return value
    return read.__closure__[0]


def async_objects():
    """A coroutine and an async generator (never run), made from source: 2.7 cannot parse
    them."""
    ns = {}
    exec("async def coroutine_func():\n    return 1\n"
         "async def async_gen_func():\n    yield 1\n", ns)
    return [("coroutine", ns["coroutine_func"]()), ("async-generator", ns["async_gen_func"]())]


def outer():
    def inner():
        return 1
    return inner


if PY2:
    exec("class OldStyle:\n    tag = 1\n")
else:
    OldStyle = None


def build():
    rnd = random.Random(7)
    # Singletons and numbers.
    for name, obj in [("None", None), ("True", True), ("False", False),
                      ("Ellipsis", Ellipsis), ("NotImplemented", NotImplemented)]:
        add(name, obj)
    ints = [0, 1, -1, 5, 255, 256, 257, 1000, 1024, 1025, -5, -6, 2 ** 30 - 1, 2 ** 30,
            2 ** 31, 2 ** 60, 2 ** 62, 2 ** 63, -2 ** 63, 2 ** 64, 10 ** 100, -10 ** 100,
            7 ** 300, 3 ** 2000, -(3 ** 2000), 10 ** 999, 10 ** 1000, 10 ** 1000 - 1]
    for i, n in enumerate(ints):
        add("int%d" % i, n)
    add("int-100000-digits", 10 ** 100000)
    add("int-negative-huge", -(7 ** 50000))
    if PY2:
        add("long-small", long(5))  # noqa: F821
        add("long-neg", -long(2) ** 70)  # noqa: F821
        add("int-maxint", sys.maxint)  # noqa: F821
        add("int-minint", -sys.maxint - 1)  # noqa: F821
    floats = [0.0, -0.0, 1.0, -1.0, 1.5, 0.1, 1 / 3.0, 1e16, 1e15, 1e-4, 1e-5, 1.5e-05,
              123456789.123, 1e22, 5e-324, 1.7976931348623157e308, float("inf"),
              float("-inf"), float("nan"), 2.0 ** -1022, 100.0, 12345678901234567.0]
    for _ in range(60):
        x = struct.unpack("<d", struct.pack("<Q", rnd.getrandbits(64)))[0]
        if x == x and abs(x) != float("inf"):
            floats.append(x)
    for i, x in enumerate(floats):
        add("float%d" % i, x)
    for i, z in enumerate([1j, -1j, 1 + 2j, -1.5 - 2j, complex(0, -0.0), complex(-0.0, 1),
                           complex(1.5, 0), complex(float("inf"), float("nan"))]):
        add("complex%d" % i, z)
    # Text.
    texts = [u"", u"a", u"it's", u'say "hi"', u"both ' and \"", u"tab\there\nnl\rcr",
             u"\x00\x1f\x7f", u"\x80\x9f\xa0\xad\xff", u"caf\xe9", u"\u20ac \u2028 \u202e",
             u"\U0001F600 \U000e0001 \U0010ffff", u"a\\b", u"\u0378\u0301\ufeff",
             u"\u4e2d\u6587", u"\u00e9" * 5]
    if not PY2:
        texts.append(u"\ud800 lone")
    for i, s in enumerate(texts):
        add("str%d" % i, s)
    add("str-1MB", u"x" * (1 << 20))
    add("str-wide-long", u"\u0416" * 3000)
    for i, b in enumerate([b"", b"abc", b"it's", b"\x00\xff\x7f\x80\t\n\r\\", b"'\""]):
        add("bytes%d" % i, b)
    add("bytes-long", b"y" * 5000)
    add("bytearray0", bytearray())
    add("bytearray1", bytearray(b"x\x00'"))
    # Containers.
    add("tuple0", ())
    add("tuple1", (1,))
    add("tuple2", (1, "two"))
    add("list0", [])
    add("list1", [1])
    add("list-nested", [1, [2, [3, []]], (4,)])
    add("dict0", {})
    add("dict-str", {"a": 1, "b": [2], "c": {"d": None}})
    add("dict-int", dict((i, i * i) for i in range(20)))
    d = dict((i, str(i)) for i in range(30))
    for i in range(0, 30, 4):
        del d[i]
    d[0] = "back"
    add("dict-deleted", d)
    add("dict-200", dict((i, i) for i in range(200)))
    add("dict-mixed", {1: "x", "k": 2.5, (1, 2): None, None: True})
    add("set0", set())
    add("set-ints", set([1, 2, 3, 100, 1000]))
    s = set(range(40))
    for i in range(0, 40, 3):
        s.discard(i)
    add("set-discarded", s)
    add("set-strs", set(["alpha", "beta", "gamma"]))
    add("frozenset0", frozenset())
    add("frozenset1", frozenset([1, (2, 3)]))
    add("list-100000", list(range(100000)))
    add("set-500", set(range(500)))
    deep = []
    for _ in range(1000):
        deep = [deep]
    add("nest-1000", deep)
    add("list-output-bound", ["z" * 100] * 60)
    # Self references; an object met twice that is not a cycle prints twice.
    cyc = [1, 2]
    cyc.append(cyc)
    add("list-self", cyc)
    dself = {}
    dself["self"] = dself
    add("dict-self", dself)
    inner_l = []
    tup = (inner_l,)
    inner_l.append(tup)
    add("tuple-cycle", tup)
    shared = [1]
    add("shared-twice", [shared, shared, {"k": shared}])
    # Exceptions.
    for i, e in enumerate([ValueError("boom", 42), ValueError("boom"), ValueError(),
                           KeyError("k"), MyError("x"), Exception([1, 2], {"a": 1}),
                           RuntimeError(u"\u20ac")]):
        add("exc%d" % i, e)
    # Default forms: instances, functions, builtins, classes, modules.
    p = Plain(1, "two")
    add("instance", p, default_form(p))
    w = WithRepr()
    add("custom-repr", w, default_form(w))
    o = object()
    add("object", o)
    add("function", outer)
    add("nested-function", outer())
    add("lambda", lambda: 0)
    add("builtin", len)
    add("builtin-method", KEEP.append)
    # The interpreter's own reprs of code objects, generators, coroutines, cells, methods.
    add("code", outer.__code__)
    add("code-lambda", (lambda: 0).__code__)
    add("generator", (x for x in [1]))
    add("generator-func", generator_func())
    add("cell", cell_of(7))
    add("cell-instance", cell_of(Plain(1, 2)))
    add("cell-empty", empty_cell())
    add("bound-method", Plain(1, 2).method)
    add("bound-method-nested", Outer.Inner().method)
    add("method-of-class", Base.method)  # 2.7: an unbound method; 3.x: the function
    if not PY2:
        for name, obj in async_objects():
            add(name, obj)
    for name, cls in [("class-int", int), ("class-object", object), ("class-plain", Plain),
                      ("class-nested", Outer.Inner), ("class-exc", ValueError),
                      ("class-type", type), ("class-meta", MetaMade), ("class-dictsub", DictSub)]:
        add(name, cls)
    add("module-os", os)
    add("module-sys", sys)
    add("module-main", sys.modules["__main__"])
    add("module-json", json)
    if not PY2:
        add("module-frozen", sys.modules.get("_frozen_importlib"))
    # Subclasses that keep the builtin repr.
    add("listsub", ListSub([1, 2]))
    ds = DictSub(a=1)
    ds.attr = "x"
    add("dictsub", ds)
    # Instance attributes of each layout (a twin built the same way gives the truth).
    def pair(make):
        return make(), make()
    a, b = pair(lambda: Plain(1, "two"))
    add_attrs("plain", a, b)

    def with_del():
        x = Plain(1, 2)
        x.c = 3
        del x.a
        return x
    a, b = pair(with_del)
    add_attrs("after-del", a, b)

    def other_order():
        x = Plain(0, 0)
        x.z = 1
        x.y = 2
        return x
    a, b = pair(other_order)
    add_attrs("other-order", a, b)

    def many():
        x = Plain(0, 0)
        for i in range(50):
            setattr(x, "attr%d" % i, i)
        return x
    a, b = pair(many)
    add_attrs("many-attrs", a, b)
    m = Plain([1], {"k": 2})
    vars(m)  # the dict exists now (3.11+: no longer values only)
    add_attrs("materialized", m, m)
    add_attrs("slots", Slotted(), None)
    add_attrs("dictsub", ds, ds)
    i1, i2 = IntSub(5), IntSub(5)
    i1.tag = i2.tag = "int-sub"
    add_attrs("intsub", i1, i2)
    add("intsub", i1)
    t1, t2 = TupleSub((1, 2, 3)), TupleSub((1, 2, 3))
    t1.tag = t2.tag = "tuple-sub"
    add_attrs("tuplesub", t1, t2)
    e1, e2 = MyError("e"), MyError("e")
    e1.code = e2.code = 7
    add_attrs("exception", e1, e2)
    if PY2:
        old1, old2 = OldStyle(), OldStyle()
        old1.v = old2.v = 1
        add_attrs("oldstyle", old1, old2)
        add("oldstyle-instance", old1)
        add("oldstyle-class", OldStyle)
        add_getattr("oldstyle-class-attr", old1, "tag", "class OldStyle", 1)
        add_getattr("oldstyle-instance-attr", old1, "v", "instance", 1)
    # getattr through instance, class MRO and module dicts.
    g = Plain(10, "bee")
    add_getattr("instance-attr", g, "b", "instance", "bee")
    add_getattr("class-attr", g, "label", "class Plain", "plain")
    add_getattr("inherited-attr", g, "kind", "class Base", "base")
    add_getattr("class-object-attr", Plain, "kind", "class Base", "base")
    add_getattr("module-attr", os, "sep", "module", os.sep)
    # dict lookups by str and int key.
    dd = {"name": "value", 12345678901: "big", 7: [7]}
    add_dictget("str-key", dd, "name")
    add_dictget("int-key", dd, 12345678901)
    add_dictget("small-int-key", dd, 7)


def main():
    outdir, mode = sys.argv[1], sys.argv[2]
    build()
    truth = {"pyunwind_truth": 1, "pid": os.getpid(), "mode": mode,
             "python": {"version": sys.version.split()[0], "hexversion": sys.hexversion},
             "threads": [{"thread_id": threading.current_thread().ident, "frames": []}],
             "values": VALUES}
    tmp = os.path.join(outdir, "truth.json.tmp")
    with open(tmp, "w") as f:
        json.dump(truth, f)
    os.rename(tmp, os.path.join(outdir, "truth.json"))
    if mode == "crash":
        ctypes.memset(0, 0, 1)
    hold = threading.Lock()
    hold.acquire()
    hold.acquire()


if __name__ == "__main__":
    main()
