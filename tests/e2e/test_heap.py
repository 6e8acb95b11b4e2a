#!/usr/bin/env python3
# test_heap - the heap census end to end: for every interpreter of the matrix, the heap target
# (tests/targets/heap.py: a zoo of known instance counts, containers of known sizes, large
# str/bytes/bytearray, big ints, reference cycles, objects held only by a generator, a
# coroutine, a thread's local or a module global, the collector disabled) takes its own census
# with gc.get_objects(), gc.get_referents() and sys.getsizeof() at a quiescent moment;
# `pyunwind heap --json` must find the same objects on the collector's lists (exactly as many
# of the target's classes, lists and sets, with the same bytes; at least as many of every other
# type, which objects reached through references add to), the zoo's large str, bytes,
# bytearray and int objects, and no type the target's own closure does not have - live, a gdb core and a kernel crash core, from the CLI, gdb and
# lldb; --biggest 3 names the zoo's bytearray, str and bytes objects with their addresses and
# sizes. The text form names the zoo's classes, --top and --min-size cut rows, and damaged
# collector lists (a ring link that points elsewhere) give counted errors, not a crash or hang.
# What keeps objects alive (check_graph): --path gives the expression the target evaluated to
# the object and the root it names (a module global, a list in a dict, a leaf behind an
# attribute, an object only a thread's local holds, what only a suspended generator's,
# coroutine's or asyncio task's frame holds); --referrers names the frames holding an
# object as a local as the target finds them in its own frames, and the suspended frames
# (generators, coroutines) as gc.get_referrers() does, also from memory alone; --retained of
# a dict holding only fresh objects is the getsizeof sum of its closure the target computed.
# Ctrl-C (heap-interrupt): the CLI on a terminal, and gdb and lldb run interactively on a
# pseudo-terminal, Ctrl-C typed once the progress bar shows: what was counted, marked partial
# and interrupted, and the debugger goes on (py-bt, then a whole census).
# One target per interpreter and kind of core.
#
#   tests/e2e/test_heap.py [-j N] [FILTER...]     (make test-heap)
import json
import os
import pty
import select
import signal
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, os.pardir))
from harness import REPO, PtyDebugger, Target, run_cases, selected  # noqa: E402
from test_adapters import run_debugger, parse_json, no_traceback, target_args  # noqa: E402
from test_tasks import cli  # noqa: E402

# gdb and lldb read these (gdb live and on the kernel core, lldb on the gdb core).
ADAPTER_PYTHONS = ("pyenv-2.7", "pyenv-3.9", "pyenv-3.12", "sid-3.14")
DAMAGE_PYTHONS = ("pyenv-2.7", "pyenv-3.11", "sid-3.15")
DAMAGE_SECONDS = 20
# Ctrl-C mid-census: a process of this many objects (bench/heap_target.py), its census from a
# kernel core and live, by the CLI and by the CLI over the ASan/UBSan build of the core.
INTERRUPT_PYTHONS = ("pyenv-3.12", "sid-3.14")
INTERRUPT_OBJECTS = 2000000
BIG_TARGET = os.path.join(REPO, "bench", "heap_target.py")
CLI = os.path.join(REPO, "build", "pyunwind")
SAN_CLI = os.path.join(REPO, "build", "pyunwind-san")
SAN_ENV = dict(os.environ, ASAN_OPTIONS="detect_leaks=1:exitcode=99",
               UBSAN_OPTIONS="halt_on_error=1:exitcode=98")


def wait_parked(pid, timeout=60):
    """Waits until the main thread of @pid blocks in a futex (the target parked on its lock
    after writing the truth): until then its truth document may still be alive."""
    deadline = time.time() + timeout
    while time.time() < deadline:
        try:
            with open("/proc/%d/syscall" % pid) as f:
                if f.read().split()[0] == "202":
                    return
        except (OSError, IndexError):
            pass
        time.sleep(0.02)
    raise AssertionError("the target's main thread did not park within %ds" % timeout)


def exact(name):
    """Types every object of which is tracked: the target's own classes, lists and sets. The
    census must count exactly the target's number of them."""
    return name.startswith("__main__.") or name in ("list", "set")


def problems(truth, doc, limit=25):
    out = []
    tracked = truth["extra"]["types"]
    closure = truth["extra"]["closure"]
    got = dict((t["type"], t) for t in doc["types"])
    for name in sorted(set(tracked) | set(got)):
        w, g = tracked.get(name), got.get(name)
        if g is None:
            out.append("%s: missing (truth: %d objects)" % (name, w[0]))
        elif name not in closure:
            out.append("%s: %d objects of a type the target does not have" % (name,
                                                                              g["count"]))
        elif w is None:
            continue  # only reached through references: checked below
        elif exact(name) and g["count"] != w[0]:
            out.append("%s: %d objects, truth %d" % (name, g["count"], w[0]))
        elif g["count"] < w[0]:
            out.append("%s: %d objects, the target tracks %d" % (name, g["count"], w[0]))
        elif g["sized_by"] == "getsizeof" and exact(name) and g["bytes"] != w[1]:
            out.append("%s: %d bytes, truth %d (%d objects)" % (name, g["bytes"], w[1], w[0]))
        elif g["sized_by"] == "getsizeof" and g["bytes"] < w[1]:
            out.append("%s: %d bytes, the target's tracked ones alone %d" % (name, g["bytes"],
                                                                             w[1]))
    # The zoo's large untracked objects are reached (through the ZOO dict and its lists).
    for name, size in truth["extra"]["atoms"].items():
        g = got.get(name)
        if not g or g["bytes"] < size:
            out.append("%s: %s, the zoo's alone are %d bytes" % (name, g, size))
    # --biggest 3: the zoo's bytearray, str and bytes, in that order, with their sizes.
    big = [[b["address"], b["type"], b["bytes"]] for b in doc.get("biggest", [])]
    if big != truth["extra"]["largest"] or any(not b["repr"] for b in doc["biggest"]):
        out.append("the 3 largest objects are %s, truth %s" % (doc.get("biggest"),
                                                               truth["extra"]["largest"]))
    for k, n in truth["extra"]["zoo"].items():
        t = got.get("__main__." + k)
        if not t or t["count"] != n or t["sized_by"] != "getsizeof":
            out.append("zoo class %s: %s, want %d sized by getsizeof" % (k, t, n))
    want = sum(c for c, _ in tracked.values())
    if doc["tracked"] != want:
        out.append("%d objects on the collector's lists, the target has %d" % (doc["tracked"],
                                                                               want))
    if doc["untracked"] <= 0 or doc["objects"] != doc["tracked"] + doc["untracked"]:
        out.append("%d objects: %d tracked, %d reached" % (doc["objects"], doc["tracked"],
                                                          doc["untracked"]))
    if doc["objects"] != sum(t["count"] for t in doc["types"]) or \
            doc["bytes"] != sum(t["bytes"] for t in doc["types"]):
        out.append("totals %d objects, %d bytes are not the sums of the rows"
                   % (doc["objects"], doc["bytes"]))
    if doc["errors"] or doc["partial"]:
        out.append("errors %s, partial %s" % (doc["errors"], doc["partial"]))
    return out[:limit] + (["... %d more" % (len(out) - limit)] if len(out) > limit else [])


def check(truth, doc, what):
    p = problems(truth, doc)
    if p:
        raise AssertionError("%s: %d mismatch(es):\n  %s" % (what, len(p), "\n  ".join(p)))
    return len(doc["types"]), doc["objects"]


def referrer_problems(truth, docs):
    """@docs: `heap --json --referrers ADDR` of each object of the truth's "referrers" (in its
    order), against what gc.get_referrers() found in the target: the same referrers, each
    with the same via, and the object itself named."""
    out = []
    for want, doc in zip(truth["extra"]["referrers"], docs):
        obj = doc.get("object", {})
        if obj.get("address") != want["address"] or obj.get("type") != want["type"] or \
                not obj.get("bytes") or not obj.get("repr"):
            out.append("object %s: %s" % (want["address"], obj))
        got = dict((r["address"], r["via"]) for r in doc.get("referrers", []))
        if got != want["referrers"] or len(doc["referrers"]) != len(got):
            out.append("referrers of %s %s: %s, gc.get_referrers: %s"
                       % (want["type"], want["address"], doc.get("referrers"),
                          want["referrers"]))
    return out


def check_referrers(truth, target, what, *executable):
    docs = [json.loads(cli("heap", "--json", "--referrers", w["address"], target, *executable))
            for w in truth["extra"]["referrers"]]
    p = referrer_problems(truth, docs)
    if p:
        raise AssertionError("%s --referrers:\n  %s" % (what, "\n  ".join(p)))
    text = cli("heap", "--referrers", truth["extra"]["referrers"][0]["address"], target,
               *executable)
    for address, via in truth["extra"]["referrers"][0]["referrers"].items():
        if not any(l.split()[:1] == [address] and (" %s " % via) in l
                   for l in text.splitlines()):
            raise AssertionError("%s --referrers text has no row %s %s:\n%s"
                                 % (what, address, via, text))


def path_problems(truth, docs):
    """@docs: `heap --json --path ADDR` of each object of the truth's "paths": the expression
    the target evaluated to that very object, from the root the target names, and a chain
    that starts at that root's expression and ends at the object."""
    out = []
    for want, doc in zip(truth["extra"]["paths"], docs):
        steps = doc.get("path", [])
        if doc.get("expr") != want["expr"] or doc.get("root") != want["root"] or \
                doc["object"]["address"] != want["address"] or not steps or \
                not want["expr"].startswith(steps[0]["expr"]) or \
                steps[-1]["address"] != want["address"] or steps[-1]["expr"] != want["expr"]:
            out.append("path to %s: %s, the target evaluates %s from %s"
                       % (want["address"], doc, want["expr"], want["root"]))
    return out


def cli_status(*args):
    """The exit status of `pyunwind ARGS`."""
    return subprocess.run([CLI] + [str(a) for a in args], capture_output=True, timeout=120,
                          stdin=subprocess.DEVNULL).returncode


def held_path(truth):
    """The last of the paths to what only a suspended frame holds: (3.7+) the local of a
    task's coroutine, (3.6) a coroutine's local, (2.7) a generator's cell variable."""
    return truth["extra"]["paths"][-2]


def held_problems(truth, target, what, *args, **kw):
    """--path and --referrers of each object only a suspended generator's, coroutine's or
    task's frame holds (the truth's paths between the module ones and the thread's local, and
    its referrers past the first two). With cells=False, less the one a cell holds."""
    paths = truth["extra"]["paths"][3:-1]
    refs = truth["extra"]["referrers"][2:]
    if not kw.get("cells", True):
        boxed = [p["address"] for p in paths if p["expr"].endswith("['boxed']")]
        paths = [p for p in paths if p["address"] not in boxed]
        refs = [r for r in refs if r["address"] not in boxed]
    p = path_problems({"extra": {"paths": paths}},
                      [json.loads(cli("heap", "--json", "--path", w["address"], target, *args))
                       for w in paths])
    p += referrer_problems({"extra": {"referrers": refs}},
                           [json.loads(cli("heap", "--json", "--referrers", w["address"],
                                           target, *args)) for w in refs])
    if len(paths) != len(refs) or not paths:
        p.append("%d paths and %d referrers of objects only suspended frames hold"
                 % (len(paths), len(refs)))
    return ["%s: %s" % (what, x) for x in p]


def check_paths(truth, target, what, *executable):
    docs = [json.loads(cli("heap", "--json", "--path", w["address"], target, *executable))
            for w in truth["extra"]["paths"]]
    p = path_problems(truth, docs)
    want = truth["extra"]["paths"][-1]
    text = cli("heap", "--path", want["address"], target, *executable).splitlines()
    if text[1:3] != [want["expr"], "  from " + want["root"]]:
        p.append("text form: %r" % text)
    if p:
        raise AssertionError("%s --path:\n  %s" % (what, "\n  ".join(p)))


def frame_referrer_problems(truth, doc):
    """@doc: `heap --json --referrers ADDR` of the object only a thread's frame holds: the
    frames among its referrers are those the target found holding it as a local, with the
    same via and thread (and, before 3.11, where frames are objects, the same address)."""
    want = truth["extra"]["frame_referrers"]
    got = sorted([r["via"], r["thread_id"], r["address"]] for r in doc.get("referrers", [])
                 if r["type"] == "frame")
    exp = sorted(want["referrers"])
    if truth["python"]["hexversion"] >= 0x030b0000:  # frames are not objects: no address
        got = [g[:2] for g in got]
        exp = [e[:2] for e in exp]
    if not exp or got != exp or doc["object"]["address"] != want["address"]:
        return ["frame referrers of %s: %s, the target's frames: %s"
                % (want["address"], doc.get("referrers"), want["referrers"])]
    return []


def retained_problems(truth, path_doc, big_doc):
    """The bytes RETAIN retains (its --path document with --retained) are the getsizeof sum
    of what only it holds, as the target counted it; each of the 3 largest objects, holding
    nothing, retains exactly itself."""
    out = []
    want = truth["extra"]["retained"]
    got = path_doc["object"].get("retained")
    if path_doc["object"]["address"] != want["address"] or got != want["bytes"]:
        out.append("RETAIN %s retains %s, the target counts %d"
                   % (want["address"], got, want["bytes"]))
    for b in big_doc["biggest"]:
        if b.get("retained") != b["bytes"]:
            out.append("%s %s retains %s, not its own %d bytes"
                       % (b["type"], b["address"], b.get("retained"), b["bytes"]))
    rows = big_doc["types"]
    if not rows or any("retained" not in r for r in rows[:64]) or \
            big_doc.get("unreached") is None:
        out.append("rows without retained: %s" % rows[:3])
    return out


def check_retained(truth, target, what, *executable):
    p = retained_problems(
        truth, json.loads(cli("heap", "--json", "--retained", "--path",
                              truth["extra"]["retained"]["address"], target, *executable)),
        json.loads(cli("heap", "--json", "--retained", "--biggest", 3, target, *executable)))
    text = cli("heap", "--retained", "--biggest", 3, "--top", 3, target, *executable)
    if "retained" not in text or not any(l.split()[:3] == [a, str(n), str(n)]
                                         for a, _, n in truth["extra"]["largest"]
                                         for l in text.splitlines()):
        p.append("text form: %r" % text[-1500:])
    if p:
        raise AssertionError("%s --retained:\n  %s" % (what, "\n  ".join(p)))


def check_graph(truth, target, what, *executable):
    """--path, frame referrers and --retained."""
    check_paths(truth, target, what, *executable)
    p = frame_referrer_problems(truth, json.loads(cli(
        "heap", "--json", "--referrers", truth["extra"]["frame_referrers"]["address"], target,
        *executable)))
    if p:
        raise AssertionError("%s --referrers:\n  %s" % (what, "\n  ".join(p)))
    check_retained(truth, target, what, *executable)


def check_text(truth, target, what):
    """The text form: the header counts every object; --top and --min-size cut the rows."""
    doc = json.loads(cli("heap", "--json", target))
    text = cli("heap", "--top", "0", target)
    if ("heap: %d objects" % doc["objects"]) not in text.splitlines()[0]:
        raise AssertionError("%s: header %r, JSON %d objects" % (what, text.splitlines()[0],
                                                                 doc["objects"]))
    for k in truth["extra"]["zoo"]:
        if (" __main__." + k) not in text:
            raise AssertionError("%s: text does not name __main__.%s" % (what, k))
    text = cli("heap", "--biggest", "3", target)
    for address, _, size in truth["extra"]["largest"]:
        if not any(l.split()[:2] == [address, str(size)] for l in text.splitlines()):
            raise AssertionError("%s: --biggest 3 does not show %s of %d bytes:\n%s"
                                 % (what, address, size, text[-1500:]))
    top = cli("heap", "--top", "3", "--json", target)
    if len(json.loads(top)["types"]) != 3:
        raise AssertionError("%s: --top 3 gave %d rows" % (what, len(json.loads(top)["types"])))
    big = json.loads(cli("heap", "--min-size", "1M", "--json", target))["types"]
    if not big or any(t["bytes"] < 1 << 20 for t in big):
        raise AssertionError("%s: --min-size 1M gave %s" % (what, big))


def live_case(py):
    def run():
        with Target(py, "heap") as t:
            wait_parked(t.pid)
            with t.stopped():
                n = check(t.truth, json.loads(cli("heap", "--json", "--biggest", 3, t.pid)),
                          "live")
                check_text(t.truth, t.pid, "live")
                check_referrers(t.truth, t.pid, "live")
                check_graph(t.truth, t.pid, "live")
            core = t.gcore()
            check(t.truth, json.loads(cli("heap", "--json", "--biggest", 3, core)), "gdb core")
            check_referrers(t.truth, core, "gdb core")
            check_graph(t.truth, core, "gdb core")
            if py.label in ADAPTER_PYTHONS:
                debugger_check(t, [("gdb", "live", None), ("lldb", "core", core)])
            print("    %s: %d types, %d objects compared" % ((py.label,) + n))
    return run


def crash_case(py):
    def run():
        with Target(py, "heap", mode="crash") as t:
            core = t.crash_core()
            full = json.loads(cli("heap", "--json", "--biggest", 3, core, t.executable))
            check(t.truth, full, "kernel core")
            check_referrers(t.truth, core, "kernel core", t.executable)
            check_graph(t.truth, core, "kernel core", t.executable)
            # Memory alone: every file the core names hidden. The same census, and it says
            # how it found the lists (2.7, 3.6: the generation heads, with no symbol).
            empty = os.path.join(t.workdir, "empty")
            os.makedirs(empty, exist_ok=True)
            mem = json.loads(cli("heap", "--json", "--biggest", 3, "--path-map", "/=" + empty,
                                 core))
            # Static types' names (C strings in the files' read-only data) are not in a
            # kernel core: those types are "<type at 0x...>" and sized and followed as their
            # names would not say. The lists are the same: every tracked object is found.
            if mem["tracked"] != full["tracked"] or mem["partial"] or \
                    any("generation" in e["message"] or "_PyGC" in e["message"]
                        for e in mem["errors"]):
                raise AssertionError("memory alone: %d objects on the collector's lists, with "
                                     "files %d; errors %s" % (mem["tracked"], full["tracked"],
                                                              mem["errors"]))
            if sum(r["count"] for r in mem["types"] if r["type"].startswith("__main__.")) != \
                    sum(r["count"] for r in full["types"] if r["type"].startswith("__main__.")):
                raise AssertionError("memory alone: another count of the zoo's instances")
            # What only suspended frames hold: the same paths and referrers from memory alone.
            # Before 3.8 the cell type has no name in memory alone (its tp_name is in the
            # files, and the types module binds no CellType): cells are counted, not followed,
            # and what only a cell holds has no chain.
            cells = t.truth["python"]["hexversion"] >= 0x03080000
            p = held_problems(t.truth, core, "memory alone", "--path-map", "/=" + empty,
                              cells=cells)
            boxed = [w for w in t.truth["extra"]["paths"] if w["expr"].endswith("['boxed']")]
            if not cells and boxed and cli_status("heap", "--path", boxed[0]["address"], core,
                                                  "--path-map", "/=" + empty) != 1:
                p.append("memory alone: a chain through a cell, whose type has no name")
            if p:
                raise AssertionError("\n  ".join(p))
            if t.truth["python"]["hexversion"] < 0x03070000 and \
                    not any("found in memory alone" in x for x in mem["sources"]):
                raise AssertionError("memory alone: the sources do not say how the lists "
                                     "were found: %s" % mem["sources"])
            if py.label in ADAPTER_PYTHONS:
                debugger_check(t, [("gdb", "core", core)], "kernel core")
    return run


def row_types(text):
    """The type column of the text form's rows."""
    rows = text.split("  type\n", 1)[-1].splitlines()
    return [r.split()[-1] for r in rows if r[:12].strip().isdigit()]


def debugger_check(t, runs, source=None):
    """`py-heap --json` in each (debugger, kind, core) of @runs against the truth and the
    same census, type by type, as the CLI's on the same target; the text form's largest
    types the same as from the CLI's."""
    for debugger, kind, core in runs:
        what = "%s %s" % (debugger, source or kind)
        rc, outs, err = run_debugger(debugger, target_args(debugger, kind, t, core),
                                     ["py-heap --json --biggest 3", "py-heap --top 5",
                                      "py-heap --no-such-option",
                                      "py-heap --json --referrers %s"
                                      % t.truth["extra"]["referrers"][0]["address"],
                                      "py-heap --json --path %s"
                                      % t.truth["extra"]["paths"][2]["address"],
                                      "py-heap --json --referrers %s"
                                      % t.truth["extra"]["frame_referrers"]["address"],
                                      "py-heap --json --retained --path %s"
                                      % t.truth["extra"]["retained"]["address"],
                                      "py-heap --json --retained --biggest 3 --top 3",
                                      "py-heap --json --path %s" % held_path(t.truth)["address"],
                                      "py-heap --json --referrers %s"
                                      % t.truth["extra"]["referrers"][-1]["address"]])
        no_traceback(what, err, *outs)
        got = parse_json(outs[0], what)
        check(t.truth, got, what)
        mine = json.loads(cli("heap", "--json", core or t.pid))
        rows = lambda d: dict((r["type"], (r["count"], r["bytes"])) for r in d["types"])  # noqa
        if rows(got) != rows(mine) or got["objects"] != mine["objects"]:
            a, b = rows(got), rows(mine)
            raise AssertionError("%s: py-heap --json differs from the CLI's census: %s"
                                 % (what, dict((k, (a.get(k), b.get(k))) for k in set(a) | set(b)
                                               if a.get(k) != b.get(k))))
        want = cli("heap", "--top", "5", core or t.pid)
        if row_types(outs[1]) != row_types(want) or len(row_types(want)) != 5:
            raise AssertionError("%s: py-heap --top 5 shows other types than the CLI:\n%s\n%s"
                                 % (what, outs[1][:2000], want[:2000]))
        if "unknown argument '--no-such-option'" not in outs[2] + err:
            raise AssertionError("%s: a bad option gave no error" % what)
        p = referrer_problems(t.truth, [parse_json(outs[3], what + " --referrers")])
        p += path_problems({"extra": {"paths": t.truth["extra"]["paths"][2:3]}},
                           [parse_json(outs[4], what + " --path")])
        p += frame_referrer_problems(t.truth, parse_json(outs[5], what + " --referrers"))
        p += retained_problems(t.truth, parse_json(outs[6], what + " --retained --path"),
                               parse_json(outs[7], what + " --retained --biggest"))
        p += path_problems({"extra": {"paths": [held_path(t.truth)]}},
                           [parse_json(outs[8], what + " --path")])
        p += referrer_problems({"extra": {"referrers": t.truth["extra"]["referrers"][-1:]}},
                               [parse_json(outs[9], what + " --referrers")])
        if p:
            raise AssertionError("%s py-heap:\n  %s" % (what, "\n  ".join(p)))


def poke(pid, addr, value):
    with open("/proc/%d/mem" % pid, "r+b", buffering=0) as f:
        f.seek(addr)
        f.write(value.to_bytes(8, "little"))


def damage_case(py):
    """A collector list whose link points at itself (a loop that never returns to its head) and
    one whose link points into nowhere: each walk ends with a counted error, in time, live and
    from a gdb core; the objects before the damage are still counted."""
    def run():
        with Target(py, "heap") as t:
            wait_parked(t.pid)
            doc = json.loads(cli("heap", "--json", t.pid))
            with t.stopped():
                # The census finds no addresses of objects; the zoo's lists of Plain objects are
                # reachable only through Python. Damage the first node of the ring that holds
                # the most objects by making its successor's prev point elsewhere: found as
                # "broken". The node addresses come from the target's own report below.
                addrs = plain_addresses(t)
                poke(t.pid, addrs[0] - gc_head(doc) + 8, addrs[0])   # _gc_prev -> itself
                poke(t.pid, addrs[1] - gc_head(doc), 0x10)           # _gc_next -> nowhere
                core = None
            core = t.gcore()
            for what, target in (("live", t.pid), ("gdb core", core)):
                t0 = time.time()
                got = json.loads(cli("heap", "--json", target))
                took = time.time() - t0
                if took > DAMAGE_SECONDS:
                    raise AssertionError("%s: %.1fs on a damaged heap" % (what, took))
                if not got["errors"] or sum(e["count"] for e in got["errors"]) < 1:
                    raise AssertionError("%s: no error for the damaged lists" % what)
                if got["objects"] <= 0 or got["objects"] >= doc["objects"]:
                    raise AssertionError("%s: %d objects counted, undamaged %d"
                                         % (what, got["objects"], doc["objects"]))
                cli("heap", target)  # the text form finishes too
    return run


def gc_head(doc):
    v = doc["python"]["hexversion"]
    return 32 if v < 0x03080000 else 16


def plain_addresses(t):
    return [int(a, 16) for a in t.truth["extra"]["plain_addresses"]]


def census_on_pty(cli_path, args, interrupt, timeout=300):
    """`CLI heap --json ARGS` with stderr on a terminal (a pty) and stdout piped; with
    @interrupt, SIGINT as soon as the progress bar shows it looking into objects. Returns
    (status, stdout, what the terminal got)."""
    master, slave = pty.openpty()
    p = subprocess.Popen([cli_path, "heap", "--json"] + [str(a) for a in args],
                         stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=slave,
                         env=SAN_ENV)
    os.close(slave)
    seen, sent, deadline = b"", False, time.time() + timeout
    try:
        while time.time() < deadline:
            r, _, _ = select.select([master], [], [], 0.1)
            if r:
                try:
                    chunk = os.read(master, 65536)
                except OSError:
                    chunk = b""
                if not chunk and p.poll() is not None:
                    break
                seen += chunk
            elif p.poll() is not None:
                break
            if interrupt and not sent and b"objects looked into" in seen:
                p.send_signal(signal.SIGINT)
                sent = True
        else:
            p.kill()
            raise AssertionError("%s heap: no end within %ds" % (cli_path, timeout))
        out = p.stdout.read()
        p.wait()
    finally:
        os.close(master)
        p.stdout.close()
    if interrupt and not sent:
        raise AssertionError("%s heap: no progress bar on the terminal before it ended "
                             "(status %s):\n%r" % (cli_path, p.returncode, seen[-800:]))
    return p.returncode, out.decode("utf-8", "replace"), seen.decode("utf-8", "replace")


def interrupted_problems(full, rc, out, term):
    """A census stopped by SIGINT: status 130, the JSON of what it had (partial, interrupted,
    fewer objects than the whole and rows that add up to it), and the terminal told."""
    if rc != 130:
        return ["status %s, want 130; terminal: %r" % (rc, term[-800:])]
    try:
        doc = json.loads(out)
    except ValueError:
        return ["no JSON on stdout: %r" % out[:500]]
    p = []
    if not doc["partial"] or not doc.get("interrupted"):
        p.append("partial %s, interrupted %s" % (doc["partial"], doc.get("interrupted")))
    if not 0 < doc["objects"] < full["objects"]:
        p.append("%d objects counted, the whole census has %d" % (doc["objects"],
                                                                  full["objects"]))
    if doc["objects"] != sum(t["count"] for t in doc["types"]) or \
            doc["bytes"] != sum(t["bytes"] for t in doc["types"]):
        p.append("totals are not the sums of the rows")
    if "interrupted" not in term:
        p.append("the terminal was not told: %r" % term[-300:])
    return p


def debugger_interrupt_problems(kind, core, exe, full):
    """gdb or lldb on a pseudo-terminal: `py-heap --json` and `py-heap --retained --json`,
    each with Ctrl-C typed once the bar shows it looking into objects, give the JSON of what
    was counted (partial, interrupted, fewer objects than the whole, rows adding up to the
    totals; no retained sizes), no traceback; then py-bt answers with the target's frames and
    a whole `py-heap --json` counts every object again."""
    p = []
    args = [exe, core] if kind == "gdb" else ["-c", core, exe]
    with PtyDebugger(kind, args, timeout=180) as d:
        for command in ("py-heap --json", "py-heap --retained --json"):
            d.type(command + "\n")
            bar = d.read_until("objects looked into", 300)
            d.type("\x03")  # Ctrl-C, as the terminal sends it: SIGINT to the debugger
            out = d.read_until(d.PROMPT, 300)
            where = "%s %s" % (kind, command)
            if "Traceback" in bar + out or "KeyboardInterrupt" in bar + out:
                p.append("%s: a traceback: %r" % (where, (bar + out)[-1500:]))
                continue
            try:
                doc = json.JSONDecoder().raw_decode(out[out.index('{"version"'):])[0]
            except ValueError:
                p.append("%s: no JSON after Ctrl-C: %r" % (where, out[-1500:]))
                continue
            if not doc["partial"] or not doc.get("interrupted"):
                p.append("%s: partial %s, interrupted %s" % (where, doc["partial"],
                                                             doc.get("interrupted")))
            if not 0 < doc["objects"] < full["objects"]:
                p.append("%s: %d objects counted, the whole census has %d" % (
                    where, doc["objects"], full["objects"]))
            if doc["objects"] != sum(t["count"] for t in doc["types"]) or \
                    doc["bytes"] != sum(t["bytes"] for t in doc["types"]):
                p.append("%s: totals are not the sums of the rows" % where)
            if any("retained" in t for t in doc["types"]):
                p.append("%s: retained sizes of an interrupted census" % where)
        bt = d.command("py-bt", 120)
        if "heap_target.py" not in bt or "in main" not in bt:
            p.append("%s: py-bt after Ctrl-C: %r" % (kind, bt[-1500:]))
        out = d.command("py-heap --json --top 1", 300)
        try:
            doc = json.JSONDecoder().raw_decode(out[out.index('{"version"'):])[0]
            if doc["partial"] or doc["interrupted"] or doc["objects"] != full["objects"]:
                p.append("%s: the census after Ctrl-C: %d objects (want %d), partial %s" % (
                    kind, doc["objects"], full["objects"], doc["partial"]))
        except ValueError:
            p.append("%s: no JSON from the census after Ctrl-C: %r" % (kind, out[-1500:]))
    return p


def interrupt_case(py):
    """Progress and Ctrl-C on a big heap: piped, no bar and the whole census; on a terminal,
    a bar, and SIGINT once it shows stops the census with what it had (status 130, partial
    and interrupted JSON), from a kernel core by the CLI and the ASan/UBSan CLI (no leak, no
    error), by gdb and lldb (debugger_interrupt_problems), and live - where the process must
    be released afterwards, neither stopped nor traced."""
    env = {"PYU_BENCH_HEAP_OBJECTS": str(INTERRUPT_OBJECTS)}

    def run():
        with Target(py, BIG_TARGET, mode="crash", timeout=600, env=env) as t:
            core = t.crash_core()
            p = subprocess.run([CLI, "heap", "--json", core, t.executable], timeout=300,
                               capture_output=True, stdin=subprocess.DEVNULL)
            if p.returncode != 0 or p.stderr:
                raise AssertionError("piped: status %d, stderr %r (want 0 and nothing)"
                                     % (p.returncode, p.stderr[-500:]))
            full = json.loads(p.stdout)
            if full["partial"] or full["interrupted"] or \
                    full["objects"] < INTERRUPT_OBJECTS:
                raise AssertionError("piped: %d objects, partial %s" % (full["objects"],
                                                                       full["partial"]))
            rc, out, term = census_on_pty(CLI, [core, t.executable], False)
            if rc != 0 or json.loads(out)["objects"] != full["objects"] or \
                    "objects looked into" not in term:
                raise AssertionError("terminal, not interrupted: status %s, bar %s"
                                     % (rc, "objects looked into" in term))
            for who in (CLI, SAN_CLI):
                rc, out, term = census_on_pty(who, [core, t.executable], True)
                p = interrupted_problems(full, rc, out, term)
                if p:
                    raise AssertionError("%s, kernel core:\n  %s" % (who, "\n  ".join(p)))
            for kind in ("gdb", "lldb"):
                p = debugger_interrupt_problems(kind, core, t.executable, full)
                if p:
                    raise AssertionError("%s, kernel core:\n  %s" % (kind, "\n  ".join(p)))
        with Target(py, BIG_TARGET, timeout=600, env=env) as t:
            wait_parked(t.pid)
            rc, out, term = census_on_pty(CLI, [t.pid], True)
            p = interrupted_problems(full, rc, out, term)
            with open("/proc/%d/status" % t.pid) as f:
                status = dict(l.split(":", 1) for l in f.read().splitlines() if ":" in l)
            if status["TracerPid"].strip() != "0" or status["State"].split()[0] not in "SR":
                p.append("the process is left %s, traced by %s" % (status["State"].strip(),
                                                                 status["TracerPid"].strip()))
            if p:
                raise AssertionError("live:\n  %s" % "\n  ".join(p))
    return run


# ---- real programs: tests/targets/heap_real.py -----------------------------------------------

# gdb and lldb read these (gdb live, lldb on the gdb core); debian-3.11 runs Debian's own
# python3-* packages, extension modules included.
REAL_ADAPTER_PYTHONS = ("pyenv-2.7", "pyenv-3.12", "debian-3.11", "sid-3.14")
# What a code object holds that the target cannot see without making it anew (3.11+: its
# co_localsplusnames tuple and co_localspluskinds bytes): at most one of each per code object.
CODE_HIDDEN = ("tuple", "bytes")
# Types code objects hold (or are): reached through fields the target's own closure reads only
# in part, they are compared as at most the closure.
CODE_HELD = ("str", "bytes", "tuple", "int", "float", "complex", "frozenset", "code",
             "NoneType", "bool", "ellipsis")


def real_problems(truth, doc):
    """The census of a real program against the target's own: the collector's lists exactly;
    every type the target tracks at least as often; exactly as many objects of every type whose
    every instance the target found is tracked; the same bytes as sys.getsizeof() (sized by
    getsizeof) of every type of which the census found as many objects as the target; no type
    the target's closure lacks and never more objects of a type than that closure holds (3.11+
    tuple and bytes: but for one of each per code object); what is missing is said in the
    header ("not looked into")."""
    out = []
    tracked, closure = truth["extra"]["types"], truth["extra"]["closure"]
    got = dict((t["type"], t) for t in doc["types"])
    hidden = 0
    if truth["python"]["hexversion"] >= 0x030b0000:
        hidden = closure.get("code", [0])[0]
    missing = 0
    for name in sorted(set(tracked) | set(got)):
        w, c, g = tracked.get(name, [0, 0]), closure.get(name), got.get(name)
        if g is None:
            out.append("%s: missing (the target tracks %d)" % (name, w[0]))
            continue
        if c is None:
            out.append("%s: %d objects of a type the target does not have" % (name,
                                                                              g["count"]))
            continue
        if g["count"] < w[0]:
            out.append("%s: %d objects, the target tracks %d" % (name, g["count"], w[0]))
        limit = c[0] + (hidden if name in CODE_HIDDEN else 0)
        if g["count"] > limit:
            out.append("%s: %d objects, more than the %d the target reaches" % (name,
                                                                             g["count"], c[0]))
        if c[0] == w[0] and name not in CODE_HELD and g["count"] != w[0]:
            out.append("%s: %d objects, truth %d (all tracked)" % (name, g["count"], w[0]))
        elif g["count"] == c[0] and g["sized_by"] == "getsizeof" and g["bytes"] != c[1]:
            out.append("%s: %d bytes, truth %d (%d objects)" % (name, g["bytes"], c[1], c[0]))
        missing += max(0, c[0] - g["count"])
    want = sum(n for n, _ in tracked.values())
    if doc["tracked"] != want:
        out.append("%d objects on the collector's lists, the target has %d" % (doc["tracked"],
                                                                               want))
    if doc["objects"] != sum(t["count"] for t in doc["types"]) or \
            doc["bytes"] != sum(t["bytes"] for t in doc["types"]):
        out.append("totals %d objects, %d bytes are not the sums of the rows"
                   % (doc["objects"], doc["bytes"]))
    if doc["errors"] or doc["partial"]:
        out.append("errors %s, partial %s" % (doc["errors"], doc["partial"]))
    if missing and not any(x.startswith("not looked into: ") for x in doc["sources"]):
        out.append("%d objects of the target's closure not found, and the header does not say "
                   "what was not looked into: %s" % (missing, doc["sources"]))
    return out


def check_real(truth, doc, what):
    p = real_problems(truth, doc)
    if p:
        raise AssertionError("%s: %d mismatch(es):\n  %s" % (what, len(p), "\n  ".join(p[:40])))
    closure = sum(n for n, _ in truth["extra"]["closure"].values())
    return doc["objects"], closure


def check_real_graph(truth, target, what, *executable):
    """--referrers and --path of the deque only KEEP holds, against gc.get_referrers() and the
    expression the target evaluated."""
    want = truth["extra"]["graph"]
    refs = json.loads(cli("heap", "--json", "--referrers", want["address"], target,
                          *executable))
    got = dict((r["address"], r["via"]) for r in refs["referrers"])
    path = json.loads(cli("heap", "--json", "--path", want["address"], target, *executable))
    if got != want["referrers"] or path.get("expr") != want["expr"] or \
            path.get("root") != want["root"]:
        raise AssertionError("%s: referrers %s (gc.get_referrers: %s), path %s from %s (the "
                             "target evaluates %s)" % (what, got, want["referrers"],
                                                       path.get("expr"), path.get("root"),
                                                       want["expr"]))


def real_debugger_check(t, debugger, kind, core):
    """`py-heap --json` in @debugger: the same census as the CLI's, type by type."""
    what = "%s %s" % (debugger, kind)
    rc, outs, err = run_debugger(debugger, target_args(debugger, kind, t, core),
                                 ["py-heap --json"], timeout=600)
    no_traceback(what, err, *outs)
    got = parse_json(outs[0], what)
    check_real(t.truth, got, what)
    mine = json.loads(cli("heap", "--json", core or t.pid))
    rows = lambda d: dict((r["type"], (r["count"], r["bytes"])) for r in d["types"])  # noqa
    if rows(got) != rows(mine):
        a, b = rows(got), rows(mine)
        raise AssertionError("%s: py-heap --json differs from the CLI's census: %s"
                             % (what, dict((k, (a.get(k), b.get(k))) for k in set(a) | set(b)
                                           if a.get(k) != b.get(k))))


def real_case(py):
    def run():
        with Target(py, "heap_real", timeout=600) as t:
            wait_parked(t.pid)
            with t.stopped():
                n = check_real(t.truth, json.loads(cli("heap", "--json", t.pid)), "live")
                check_real_graph(t.truth, t.pid, "live")
            core = t.gcore()
            check_real(t.truth, json.loads(cli("heap", "--json", core)), "gdb core")
            check_real_graph(t.truth, core, "gdb core")
            if py.label in REAL_ADAPTER_PYTHONS:
                real_debugger_check(t, "gdb", "live", None)
                real_debugger_check(t, "lldb", "core", core)
            print("    %s: %d objects found, %d in the target's closure; packages: %s"
                  % ((py.label,) + n + (" ".join(t.truth["extra"]["used"]) or "none",)))
    return run


def real_crash_case(py):
    def run():
        with Target(py, "heap_real", mode="crash", timeout=600) as t:
            core = t.crash_core()
            full = json.loads(cli("heap", "--json", core, t.executable))
            check_real(t.truth, full, "kernel core")
            check_real_graph(t.truth, core, "kernel core", t.executable)
            empty = os.path.join(t.workdir, "empty")
            os.makedirs(empty, exist_ok=True)
            mem = json.loads(cli("heap", "--json", "--path-map", "/=" + empty, core))
            if mem["tracked"] != full["tracked"] or mem["partial"]:
                raise AssertionError("memory alone: %d objects on the collector's lists, with "
                                     "files %d" % (mem["tracked"], full["tracked"]))
    return run


def cases():
    out = []
    for py in selected():
        out.append(("heap %s" % py.label, live_case(py)))
        out.append(("heap-crash %s" % py.label, crash_case(py)))
        out.append(("heap-real %s" % py.label, real_case(py)))
        out.append(("heap-real-crash %s" % py.label, real_crash_case(py)))
        if py.label in DAMAGE_PYTHONS:
            out.append(("heap-damaged %s" % py.label, damage_case(py)))
        if py.label in INTERRUPT_PYTHONS:
            out.append(("heap-interrupt %s" % py.label, interrupt_case(py)))
    return out


if __name__ == "__main__":
    sys.exit(run_cases(cases(), prefix="test-heap"))
