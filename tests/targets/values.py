# values - the end-to-end target for locals, thread names and exceptions.
#
#   python values.py OUTDIR [park|crash]
#
# Threads park (pyu_truth.HOLD) inside functions whose locals cover every kind (arguments,
# keyword-only, *args, **kwargs, locals, cells, free variables, unbound names), a class body,
# a module body, and every type the value reader knows; one thread handles an exception, one a
# nested one; threads have non-ASCII names. The truth (pyu_truth.py) gains, per frame, its
# locals in the code's own order - name, kind, type, address and repr() read through
# frame.f_locals - and per thread its name and what sys.exc_info() says inside it. A repr that
# would run Python code (a class with its own __repr__, anywhere inside the value) is null:
# only name, kind, type and address are compared then. Frames of functions named huge_* carry
# values too large to repr here: the test checks that pyunwind prints them bounded and fast.
# Runs on 2.7 and 3.6+; 3.x-only syntax lives in values_py3.py.
import os
import sys
import threading

sys.dont_write_bytecode = True
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import pyu_truth  # noqa: E402
from pyu_truth import HOLD, arrive  # noqa: E402

PY3 = sys.version_info[0] >= 3
EXC_INFO = {}


def park():
    """Records what sys.exc_info() says in this thread, then blocks for good."""
    EXC_INFO[threading.current_thread().ident] = sys.exc_info()[1]
    arrive()
    HOLD.acquire()


class Plain(object):
    def __init__(self):
        self.a = 1
        self.b = "two"
        self.c = [3]


class Deleted(object):
    def __init__(self):
        self.x = 1
        self.y = 2
        self.z = 3
        del self.y


class WithRepr(object):
    def __repr__(self):
        return "WithRepr()"


class Slotted(object):
    __slots__ = ("p", "q")

    def __init__(self):
        self.p = 1


def kinds(a, b, *args, **kwargs):
    local_int = a * 2
    unbound_later = None  # noqa: F841
    del unbound_later
    park()
    never_bound = 1  # noqa: F841
    return local_int


def run_kinds():
    kinds(1, "b", 3, 4, key="v", other=None)


def outer_cells(x, y):
    captured = [x, y]

    def inner_free(z):
        seen = (x, captured)
        park()
        return seen, z

    return inner_free(5)


def run_cells():
    outer_cells("ex", 2)


class Methods(object):
    def method(self):
        return self


def gen_func():
    yield 1


def make_cell(value):
    return (lambda: value).__closure__[0]


def all_types():
    # The interpreter's own reprs of frames, code objects, generators, cells and methods.
    frame = sys._getframe()
    code = all_types.__code__
    gen = gen_func()
    cell = make_cell(7)
    bound = Methods().method
    unbound = Methods.method  # 2.7: an unbound method; 3.x: the function
    if PY3:
        import values_py3
        coro, agen = values_py3.async_objects()
    none = None
    true, false = True, False
    ellipsis = Ellipsis
    not_impl = NotImplemented
    zero, neg, small = 0, -1, 256
    big = 2 ** 100
    neg_big = -(2 ** 70) - 12345
    huge_exp = 10 ** 40
    floats = [1.5, -0.0, 0.1, 1e300, 1e-7, 1e16, 123456789.125, float("inf"), float("-inf"),
              float("nan"), 2.5e-300, 1.0]
    cplx = complex(1, -2)
    cplx2 = complex(0, 1.5)
    text = "plain"
    quote1 = "it's"
    quote2 = 'say "hi"'
    quote3 = "both ' and \""
    escapes = "tab\tnl\nnul\x00del\x7f\\"
    latin = u"caf\xe9 \xa0"
    wide = u"\u4e2d\u6587 \u2028"
    astral = u"\U0001f600 \U000e0001"
    lone = u"\ud800" if PY3 else u"x"
    raw = b"bytes\x00\xff'\""
    barr = bytearray(b"ba\x01")
    empty_tuple, one_tuple, pair = (), (1,), (1, "two")
    lst = [1, [2, [3, []]], {}]
    dct = {"a": 1, 2: "b", (1, 2): [None]}
    empty_dict = {}
    st = set([1, 2, 3])
    fst = frozenset(["x"])
    empty_set = set()
    selfref = [1, 2]
    selfref.append(selfref)
    selfdict = {}
    selfdict["self"] = selfdict
    shared = [1]
    twice = [shared, shared]
    exc = ValueError("boom", 42)
    exc_empty = KeyError()
    plain = Plain()
    deleted = Deleted()
    with_repr = WithRepr()
    slotted = Slotted()
    func = all_types
    cls = Plain
    mod = os
    builtin = len
    if not PY3:
        long_small = long(5)  # noqa: F821
        long_neg = -long(2) ** 64  # noqa: F821
        uni = u"uni"
    park()


def huge_values():
    big_str = "x" * (1 << 20)
    big_list = list(range(100000))
    deep = []
    for _ in range(1000):
        deep = [deep]
    big_int = 10 ** 100000
    park()


MODULE_SOURCE = """
x = 1
label = 'module body'
items = [1, 2]
park()
"""


def run_module_body():
    ns = {"__name__": "values_module", "park": park}
    exec(compile(MODULE_SOURCE, "<values-module>", "exec"), ns)


def handling():
    try:
        raise ValueError("boom", 42)
    except ValueError:
        park()


def nested_handling():
    try:
        raise KeyError("outer")
    except KeyError:
        try:
            raise TypeError("inner")
        except TypeError:
            park()


def run_class_body_thread():
    # The class statement runs its body, which parks.
    class Parked(object):
        attr = 1
        name = "body"
        park()


# ---- the truth of locals ------------------------------------------------------------------

PURE_TYPES = (type(None), bool, int, float, complex, str, bytes, bytearray, tuple, list, dict,
              set, frozenset, type(Ellipsis), type(NotImplemented), type(all_types), type,
              type(os), type(len))
if not PY3:
    PURE_TYPES += (long, unicode)  # noqa: F821
CONTAINERS = (tuple, list, dict, set, frozenset)


def type_name(t):
    """type(v).__name__, as pyunwind names types."""
    return t.__name__


def own_repr_types():
    """The types of frames, code objects, generators and cells (3.x: coroutines and async
    generators too)."""
    types = (type(sys._getframe()), type(gen_func.__code__), type(gen_func()),
             type(make_cell(1)))
    if PY3:
        import values_py3
        types += tuple(type(x) for x in values_py3.async_objects())
    return types


def pure(v, depth=0):
    """Whether repr(v) runs no Python code: built-in types all the way down, instances
    whose class keeps object's repr, and the interpreter's frames, code objects, generators,
    coroutines, cells and methods of Python functions (of objects whose repr is pure)."""
    if depth > 50:
        return False
    t = type(v)
    if t in own_repr_types():
        return True
    if t is type(Methods().method):
        return type(v.__func__) is type(gen_func) and (v.__self__ is None or
                                                       pure(v.__self__, depth + 1))
    if t in CONTAINERS:
        items = list(v.items()) if t is dict else list(v)
        if t is dict:
            items = [x for kv in items for x in kv]
        return all(x is v or pure(x, depth + 1) for x in items)
    if t in PURE_TYPES:
        return True
    if isinstance(v, BaseException) and t.__repr__ is BaseException.__repr__:
        return all(pure(x, depth + 1) for x in v.args)
    return getattr(t, "__repr__", None) is object.__repr__


def describe(name, kind, v, with_repr):
    return {"name": name, "kind": kind, "type": type_name(type(v)), "address": "0x%x" % id(v),
            "repr": repr(v) if with_repr and pure(v) else None}


def frame_locals(f):
    code = f.f_code
    loc = f.f_locals
    with_repr = not code.co_name.startswith("huge_")
    if not code.co_flags & 1:  # CO_OPTIMIZED: else a module or class body's dict
        return {"locals": [describe(k, "dict", v, with_repr) for k, v in list(loc.items())]}
    nargs = code.co_argcount + getattr(code, "co_kwonlyargcount", 0)
    nargs += bool(code.co_flags & 4) + bool(code.co_flags & 8)
    out, seen = [], set()
    names = (list(code.co_varnames) + [c for c in code.co_cellvars if c not in code.co_varnames]
             + list(code.co_freevars))
    for i, n in enumerate(names):
        if n in seen or n not in loc:
            continue
        seen.add(n)
        kind = ("argument" if i < nargs else "free" if n in code.co_freevars
                else "cell" if n in code.co_cellvars else "local")
        out.append(describe(n, kind, loc[n], with_repr))
    return {"locals": out}


def thread_extra(ident):
    e = EXC_INFO.get(ident)
    if e is None:
        return {"exception": None}
    return {"exception": {"type": type_name(type(e)), "address": "0x%x" % id(e),
                          "repr": repr(e) if pure(e) else None}}


pyu_truth.FRAME_EXTRA = frame_locals
pyu_truth.THREAD_EXTRA = thread_extra


def main(argv):
    outdir = os.path.abspath(argv[1])
    mode = argv[2] if len(argv) > 2 else "park"
    scenarios = [("kinds", run_kinds, ()),
                 ("cells", run_cells, ()),
                 ("types", all_types, ()),
                 ("huge", huge_values, ()),
                 ("class-body", run_class_body_thread, ()),
                 ("module-body", run_module_body, ()),
                 ("except", handling, ()),
                 ("nested-except", nested_handling, ())]
    if PY3:
        import values_py3
        values_py3.park = park
        scenarios += values_py3.SCENARIOS
    threads = pyu_truth.start(outdir, mode, scenarios)
    # Names set after start, so that the scenario names stay what pyu_truth expects for the
    # others: one non-ASCII, one with quotes.
    named = dict((t.name, t) for t in threads)
    wide = u"scenario-kinds \u540d\u524d \xe9"
    named["scenario-kinds"].name = wide if PY3 else wide.encode("utf-8")
    named["scenario-cells"].name = "scenario-cells 'q\"t'"
    park()


if __name__ == "__main__":
    main(sys.argv)
