# heap_truth - a target's own heap census, for the heap tests' targets (heap_real.py): every
# object of gc.get_objects() counted per type as f"{__module__}.{__qualname__}" (builtins bare)
# with the sum of sys.getsizeof(), and the same of everything reached from those: the
# collector's own referents (gc.get_referents: what each type's tp_traverse visits), plus the
# references the collector does not visit but that keep objects alive all the same - every key
# of a dict (tp_traverse skips str keys), the fields of code objects that are stored as they are
# (read as attributes that make nothing: before 3.11 every co_* tuple, str and bytes; 3.11+
# only co_consts, co_names, co_filename, co_name, co_qualname, co_linetable and
# co_exceptiontable, the others being made on each access) and a class's __name__ and
# __qualname__. Runs on 2.7 and 3.6+.
import gc
import json
import os
import sys

HEAPTYPE = 1 << 9
if sys.version_info >= (3, 11):
    CODE_FIELDS = ("co_consts", "co_names", "co_filename", "co_name", "co_qualname",
                   "co_linetable", "co_exceptiontable")
elif sys.version_info >= (3, 10):
    CODE_FIELDS = ("co_code", "co_consts", "co_names", "co_varnames", "co_freevars",
                   "co_cellvars", "co_filename", "co_name", "co_linetable")
else:
    CODE_FIELDS = ("co_code", "co_consts", "co_names", "co_varnames", "co_freevars",
                   "co_cellvars", "co_filename", "co_name", "co_lnotab")
CODE = type(compile("0", "-", "eval"))


def type_name(t):
    module = getattr(t, "__module__", None)
    name = getattr(t, "__qualname__", None) or t.__name__
    if module in ("builtins", "__builtin__") or not isinstance(module, str):
        return name
    return module + "." + name


def more_referents(objs):
    """What keeps objects of @objs alive besides gc.get_referents(): dict keys, code object
    fields, class names."""
    out = []
    for o in objs:
        t = type(o)
        if isinstance(o, dict):
            out.extend(o)
        elif t is CODE:
            for f in CODE_FIELDS:
                out.append(getattr(o, f))
        elif isinstance(o, type) and o.__flags__ & HEAPTYPE:
            out.append(o.__name__)
            out.append(o.__qualname__ if sys.version_info >= (3, 3) else o.__name__)
    o = t = None
    return out


def census():
    """({type name: [count, bytes]} of every object the collector tracks, the same of every
    object reached from those), each object once; this frame and its own list left out."""
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
        refs = gc.get_referents(*frontier)
        refs.extend(more_referents(frontier))
        for r in refs:
            if id(r) not in seen:
                seen.add(id(r))
                found.append(r)
        del refs[:]
        frontier = found
    o = r = None
    return tracked, closure


def write(outdir, doc, name="truth.json"):
    path = os.path.join(outdir, name)
    with open(path + ".tmp", "w") as f:
        f.write(json.dumps(doc))
    os.rename(path + ".tmp", path)
