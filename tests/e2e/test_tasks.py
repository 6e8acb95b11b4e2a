#!/usr/bin/env python3
# test_tasks - asyncio tasks end to end: for every interpreter of the matrix from 3.7, the tasks
# target (tests/targets/tasks.py: two event loops, a few hundred tasks - chains, a gather, a
# TaskGroup, tasks on futures, queues, locks and events, a deadlock cycle, a running task, a
# task that never started, a finished and a cancelled one, and a stopped loop whose thread has
# ended) reports every task; pyunwind's
# `tasks --json` must say the same, field by field - address, name, state, the loop's thread,
# every frame of the coroutine stack, what each task awaits and who awaits it - on a live
# process, a gdb core and a kernel crash core. The text and --tree forms are checked for the
# tasks they name and for the deadlock cycle, --thread for the tasks of one loop. On a subset
# of the matrix the same through gdb and lldb (py-tasks, live and from a gdb core, the tree
# and the errors); on the rest gdb live and on the kernel core, lldb on both cores; the same
# without the C accelerator (pure-Python tasks), and damaged targets: a freed task becomes an
# error entry, a task list that loops (3.14+) an error, never a hang.
#
#   tests/e2e/test_tasks.py [-j N] [FILTER...]     (make test-tasks)
import json
import os
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, os.pardir))
from harness import REPO, Target, run_cases, selected  # noqa: E402
from test_adapters import run_debugger, parse_json, no_traceback, target_args  # noqa: E402

CLI = os.path.join(REPO, "build", "pyunwind")
# gdb and lldb run on these (every interpreter runs the CLI checks).
ADAPTER_PYTHONS = ("pyenv-3.9", "sid-3.14")
# Without the C accelerator (asyncio's pure-Python Task and Future).
PURE_PYTHONS = ("pyenv-3.7", "pyenv-3.12", "sid-3.14")
# Damaged targets: a freed task, and (3.14+) a task list that loops.
DAMAGE_PYTHONS = ("pyenv-3.12", "sid-3.14", "sid-3.15")
# offsetof(TaskObj, task_node) in 3.14 and 3.15 (their .AsyncioDebug section says so too).
TASK_NODE = 152
DAMAGE_SECONDS = 10
FIELDS = ("function", "qualname", "file", "line", "end_line", "column", "end_column",
          "instruction_offset")


def cli(*args):
    try:
        p = subprocess.run([CLI] + [str(a) for a in args], capture_output=True, timeout=120,
                           stdin=subprocess.DEVNULL)
    except subprocess.TimeoutExpired:
        raise AssertionError("pyunwind %s: no answer within 120s" % " ".join(map(str, args)))
    if p.returncode != 0:
        raise AssertionError("pyunwind %s: status %d: %s" % (" ".join(map(str, args)),
                                                              p.returncode, p.stderr.decode()))
    return p.stdout.decode("utf-8", "strict")


def frame_problems(who, tframes, gframes):
    out = []
    kinds = [f.get("kind") for f in gframes if f.get("kind") != "python"]
    if kinds:
        out.append("%s: frames of kind %s: %s" % (who, kinds, [f.get("reason") for f in gframes
                                                                 if f.get("kind") != "python"]))
    gframes = [f for f in gframes if f.get("kind") == "python"]
    if len(gframes) != len(tframes):
        out.append("%s: %d frames %s, truth %d %s" % (
            who, len(gframes), [f.get("function") for f in gframes], len(tframes),
            [f["function"] for f in tframes]))
        return out
    for i, (tf, gf) in enumerate(zip(tframes, gframes)):
        for k in FIELDS:
            if k == "instruction_offset" and tf.get(k) == -1:
                tf = dict(tf, instruction_offset=None)  # not started: JSON says null
            if tf.get(k) is None and k in ("qualname", "end_line", "column", "end_column"):
                continue
            if tf.get(k) != gf.get(k):
                out.append("%s frame #%d (%s): %s is %r, truth %r" % (who, i, tf["function"],
                                                                      k, gf.get(k), tf.get(k)))
    return out


def awaited_by(tasks):
    """address -> set of the addresses of the tasks awaiting it (the truth's reverse edges)."""
    out = {}
    for t in tasks:
        for kind, addr, _ in t["awaiting"]:
            if kind == "task":
                out.setdefault("0x%x" % addr, set()).add(t["address"])
    return out


def problems(truth, doc, limit=25):
    out = []
    tasks = truth["extra"]["tasks"]
    # 3.14+ take a C task off its thread's list when it finishes: finished tasks are then
    # found only while a list still holds them (never, here).
    if truth["python"]["hexversion"] >= 0x030e0000:
        tasks = [t for t in tasks if t["state"] not in ("done", "cancelled") or
                 any(g["address"] == t["address"] for g in doc["tasks"])]
    got = dict((t["address"], t) for t in doc["tasks"])
    want_by = awaited_by(tasks)
    for tt in tasks:
        who = "task %s (%s)" % (tt["name"], tt["address"])
        gt = got.get(tt["address"])
        if gt is None:
            out.append("%s: missing" % who)
            continue
        if gt.get("error"):
            out.append("%s: error %s" % (who, gt["error"]))
            continue
        for k in ("name", "state", "thread_id"):
            if (tt[k] is not None or k != "name") and gt.get(k) != tt[k]:
                out.append("%s: %s is %r, truth %r" % (who, k, gt.get(k), tt[k]))
        out += frame_problems(who, tt["frames"], gt.get("frames", []))
        want = sorted((k, "0x%x" % a, v) for k, a, v in tt["awaiting"])
        have = sorted((a["kind"], a["address"], a["via"]) for a in gt.get("awaiting", []))
        if want != have:
            out.append("%s: awaiting %s, truth %s" % (who, have[:5], want[:5]))
        if sorted(gt.get("awaited_by", [])) != sorted(want_by.get(tt["address"], ())):
            out.append("%s: awaited by %s, truth %s" % (who, gt.get("awaited_by"),
                                                         sorted(want_by.get(tt["address"], ()))))
    # Tasks the truth does not list may only be finished ones the collector has not freed yet.
    known = set(t["address"] for t in tasks)
    for a, gt in got.items():
        if a not in known and gt.get("state") not in ("done", "cancelled"):
            out.append("task %s (%s, %s) is not in the truth" % (gt.get("name"), a,
                                                                gt.get("state")))
    if doc.get("errors"):
        out.append("errors: %s" % doc["errors"])
    return out[:limit] + (["... %d more" % (len(out) - limit)] if len(out) > limit else [])


def locals_problems(truth, doc, limit=25):
    """Each task frame's locals (`tasks --locals --json`) against the target's f_locals: the
    same names, and the same repr where the truth gives one."""
    out = []
    got = dict((t["address"], t) for t in doc["tasks"])
    for tt in truth["extra"]["tasks"]:
        gt = got.get(tt["address"])
        if gt is None or gt.get("error"):
            continue  # the task comparison says why
        gframes = [f for f in gt.get("frames", []) if f.get("kind") == "python"]
        for i, (tf, gf) in enumerate(zip(tt["frames"], gframes)):
            who = "task %s frame #%d (%s)" % (tt["name"], i, tf["function"])
            if "locals" not in gf:
                out.append("%s: no locals (%s)" % (who, gf.get("locals_error")))
                continue
            have = dict((x["name"], x["repr"]) for x in gf["locals"])
            if set(have) != set(tf["locals"]):
                out.append("%s: locals %s, truth %s" % (who, sorted(have),
                                                        sorted(tf["locals"])))
                continue
            for name, r in tf["locals"].items():
                if r is not None and have[name] != r:
                    out.append("%s: %s = %s, truth %s" % (who, name, have[name], r))
    return out[:limit] + (["... %d more" % (len(out) - limit)] if len(out) > limit else [])


def check_locals(truth, doc, what):
    p = locals_problems(truth, doc)
    n = sum(len(f["locals"]) for t in truth["extra"]["tasks"] for f in t["frames"])
    if p:
        raise AssertionError("%s: locals: %d mismatch(es):\n  %s" % (what, len(p),
                                                                    "\n  ".join(p)))
    if not n:
        raise AssertionError("%s: the truth has no locals to compare" % what)


def check(truth, doc, what):
    p = problems(truth, doc)
    if p:
        raise AssertionError("%s: %d mismatch(es):\n  %s" % (what, len(p), "\n  ".join(p)))


def check_text(truth, target, what):
    """The text names every task; the tree shows the deadlock cycle and the chain."""
    text = cli("tasks", target)
    tasks = [t for t in truth["extra"]["tasks"] if t["state"] in ("pending", "running")]
    for t in tasks:
        if "Task %s" % t["address"] not in text:
            raise AssertionError("%s: text does not name task %s" % (what, t["address"]))
    tree = cli("tasks", "--tree", target)
    edges = set((t["address"], "0x%x" % a) for t in tasks for k, a, v in t["awaiting"])
    cycle = [a for a, b in edges if (b, a) in edges]
    if len(cycle) != 2 or "(cycle: awaits a task above)" not in tree or \
            any("Task %s" % a not in tree for a in cycle):
        raise AssertionError("%s: tree shows no cycle of %s:\n%s" % (what, cycle, tree[:3000]))
    # A task some task awaits (3.14+: as asyncio records it too) is drawn under it, not as a
    # root of its own (the cycle's tasks aside).
    roots = set(l.split()[1] for l in tree.splitlines() if l.startswith("Task 0x"))
    awaited = set(awaited_by(tasks)) - set(cycle)
    if roots & awaited:
        raise AssertionError("%s: the tree draws awaited tasks as roots: %s"
                             % (what, sorted(roots & awaited)[:5]))
    chain = [t["address"] for t in tasks if t["frames"] and t["frames"][-1]["function"] == "chain"]
    lines = [l for l in tree.splitlines() if any("Task %s " % a in l for a in chain)]
    depth = [len(l) - len(l.lstrip("│ ├└─")) for l in lines]
    if len(lines) < 6 or len(set(depth)) != len(depth):
        raise AssertionError("%s: the chain is not drawn nested:\n%s" % (what,
                                                                       "\n".join(lines)))


def counts(truth):
    tasks = truth["extra"]["tasks"]
    return len(tasks), sum(len(t["frames"]) for t in tasks), sum(len(t["awaiting"])
                                                                  for t in tasks)


def check_one_thread(truth, target, what):
    """--thread: only the tasks whose loop runs on that thread."""
    loop1 = [th for th in truth["threads"] if th.get("scenario") == "loop1"][0]
    doc = json.loads(cli("tasks", "--json", "--thread", loop1["native_thread_id"], target))
    want = set(t["address"] for t in truth["extra"]["tasks"] if t["thread_id"] ==
               loop1["thread_id"] and t["state"] in ("pending", "running"))
    got = set(t["address"] for t in doc["tasks"] if t["state"] in ("pending", "running"))
    if want != got or any(t["thread_id"] != loop1["thread_id"] for t in doc["tasks"]):
        raise AssertionError("%s: --thread gave %d tasks, truth %d on that thread"
                             % (what, len(got), len(want)))


# Tasks waiting inside async generators: the generators each passes through, innermost first
# (after the frames of what the innermost awaits, if a coroutine).
AGEN_CHAINS = {
    "agen-for": ["ticker", "outer_agen", "agen_for"],
    "agen-anext": ["ticker", "agen_anext"],
    "agen-anext-default": ["ticker", "agen_anext_default"],
    "agen-asend": ["ticker", "agen_asend"],
    "agen-athrow": ["catcher", "agen_athrow"],
    "agen-aclose": ["closer", "agen_aclose"],
    "agen-task": ["awaits_task", "agen_task"],
}
DEEP_MIN = 1025


def check_target_made(truth):
    """The target did make what the checks are about: a task behind each form of async
    generator, and a chain deeper than 1,024 (else the comparison would prove nothing)."""
    by_name = dict((t["name"], t) for t in truth["extra"]["tasks"])
    # 3.7 tasks have no names: by their outermost coroutine.
    by_outer = dict((t["frames"][-1]["function"], t) for t in truth["extra"]["tasks"]
                    if t["frames"])
    for name, want in AGEN_CHAINS.items():
        if name == "agen-anext-default" and truth["python"]["hexversion"] < 0x030a0000:
            continue
        got = [f["function"] for f in by_outer[want[-1]]["frames"]]
        if got != want:
            raise AssertionError("the target's task %s waits in %s, expected %s"
                                 % (name, got, want))
    if truth["python"]["hexversion"] >= 0x030e0000:
        # Registered awaiters: 0 and 5 still on the awaited task's set, 1 - 3 removed.
        addr = dict((n, int(t["address"], 16)) for n, t in by_name.items())
        want = {"registrant-0": {addr["registered-target"], addr["registered-single"]},
                "registrant-1": set(), "registrant-2": set(), "registrant-3": set(),
                "registrant-4": {addr["registered-target"]},
                "registrant-5": {addr["registered-target"]}}
        for name, edges in want.items():
            got = set(a for k, a, v in by_name[name]["awaiting"] if k == "task")
            if got != edges:
                raise AssertionError("the target's %s awaits %s, expected %s"
                                     % (name, sorted(got), sorted(edges)))
        racing = [a for k, a, v in by_name["racer"]["awaiting"] if k == "task"]
        if len(racing) != 3:
            raise AssertionError("the target's racer awaits %d racing tasks" % len(racing))
    deepest = max(len(t["frames"]) for t in truth["extra"]["tasks"])
    if deepest < DEEP_MIN:
        raise AssertionError("the target's deepest task has %d frames" % deepest)


def live_case(py):
    def run():
        with Target(py, "tasks") as t:
            check_target_made(t.truth)
            with t.stopped():
                check(t.truth, json.loads(cli("tasks", "--json", t.pid)), "live")
                check_locals(t.truth, json.loads(cli("tasks", "--json", "--locals", t.pid)),
                             "live")
                check_text(t.truth, t.pid, "live")
                check_one_thread(t.truth, t.pid, "live")
            core = t.gcore()
            check(t.truth, json.loads(cli("tasks", "--json", core)), "gdb core")
            if py.label not in ADAPTER_PYTHONS:
                debugger_check(t, [("gdb", "live", None), ("lldb", "core", core)])
            print("    %s: %d tasks, %d frames, %d awaits compared" % ((py.label,) +
                                                                       counts(t.truth)))
    return run


def crash_case(py):
    def run():
        with Target(py, "tasks", mode="crash") as t:
            core = t.crash_core()
            check(t.truth, json.loads(cli("tasks", "--json", core, t.executable)),
                  "kernel core")
            check_locals(t.truth, json.loads(cli("tasks", "--json", "--locals", core,
                                                 t.executable)), "kernel core")
            debugger_check(t, [("gdb", "core", core), ("lldb", "core", core)], "kernel core")
    return run


def debugger_check(t, runs, source=None):
    """`py-tasks --all --json` in each (debugger, kind, core) of @runs against the truth: every
    interpreter is read by gdb and lldb too (live, gdb core, kernel core between them)."""
    for debugger, kind, core in runs:
        what = "%s %s" % (debugger, source or kind)
        rc, outs, err = run_debugger(debugger, target_args(debugger, kind, t, core),
                                     ["py-tasks --all --json"])
        no_traceback(what, err, *outs)
        check(t.truth, parse_json(outs[0], what), what)


TASK_COMMANDS = ["py-task {addr}", "py-locals", "py-up", "py-locals --json",
                 "py-print request.path", "py-line", "py-list", "py-down", "py-down",
                 "py-task", "py-task --off", "py-task no-such-task"]


def check_task_commands(truth, outs, err, what):
    """py-task selects a task's coroutine stack; py-locals, py-up, py-print, py-line, py-list
    and py-down then work on its frames (compared with the target's own record of them)."""
    task = [t for t in truth["extra"]["tasks"] if t["frames"] and
            t["frames"][-1]["function"] == "with_locals"][0]
    inner, outer = task["frames"]
    label = "Task %s" % task["address"]
    want = [
        (0, [label, "frame #0 of 2", "inner_locals", "line %d" % inner["line"]]),
        (1, ["depth = 2", "label = 'req-7'", "fut = "]),
        (2, [label, "frame #1 of 2", "with_locals", "line %d" % outer["line"]]),
        (4, ["'/slow/7'"]),
        (5, ["line %d" % outer["line"]]),
        (6, ["await inner_locals(fut, label)"]),
        (7, ["frame #0 of 2", "inner_locals"]),
        (9, [label, "frame #0 of 2"]),
    ]
    for i, needles in want:
        for n in needles:
            if n not in outs[i]:
                raise AssertionError("%s: %r printed no %r:\n%s" % (what, TASK_COMMANDS[i],
                                                                     n, outs[i][:1500]))
    start = outs[3].find("[")
    got = dict((x["name"], x["repr"]) for x in json.loads(outs[3][start:]))
    if set(got) != set(outer["locals"]) or any(r is not None and got[k] != r
                                               for k, r in outer["locals"].items()):
        raise AssertionError("%s: py-locals --json of the task's frame #1: %s, truth %s"
                             % (what, got, outer["locals"]))
    if "Bottom (innermost)" not in outs[8] + err:
        raise AssertionError("%s: a second py-down went below frame #0" % what)
    if "no asyncio task named 'no-such-task'" not in outs[11] + err:
        raise AssertionError("%s: py-task of an unknown task: %r" % (what, outs[11]))


def adapter_case(py):
    """gdb and lldb, live and from a gdb core: py-tasks --all --json against the truth; the
    selected (main) thread runs no loop; the tree reads the same in both debuggers."""
    def run():
        trees = {}
        with Target(py, "tasks") as t:
            core = t.gcore()
            for debugger in ("gdb", "lldb"):
                for kind in ("live", "core"):
                    what = "%s %s" % (debugger, kind)
                    rc, outs, err = run_debugger(
                        debugger, target_args(debugger, kind, t, core if kind == "core" else None),
                        ["py-tasks --all --json", "py-tasks --json", "py-tasks --all --tree",
                         "py-tasks --no-such-option", "py-tasks --all --json --locals"])
                    no_traceback(what, err, *outs)
                    check(t.truth, parse_json(outs[0], what), what)
                    check_locals(t.truth, parse_json(outs[4], what), what)
                    mine = parse_json(outs[1], what)["tasks"]
                    if mine:
                        raise AssertionError("%s: the main thread runs no loop, py-tasks "
                                             "listed %d tasks" % (what, len(mine)))
                    if "(cycle: awaits a task above)" not in outs[2]:
                        raise AssertionError("%s: no cycle in the tree:\n%s" % (what,
                                                                                outs[2][:2000]))
                    if "unknown argument '--no-such-option'" not in outs[3] + err:
                        raise AssertionError("%s: a bad option gave no error" % what)
                    addr = [x for x in t.truth["extra"]["tasks"] if x["frames"] and
                            x["frames"][-1]["function"] == "with_locals"][0]["address"]
                    rc, touts, terr = run_debugger(
                        debugger, target_args(debugger, kind, t,
                                              core if kind == "core" else None),
                        [c.format(addr=addr) for c in TASK_COMMANDS])
                    no_traceback(what, terr, *touts)
                    check_task_commands(t.truth, touts, terr, what)
                    # (lldb drops the blank end of a line py-list prints for an empty one)
                    trees[what + " py-task"] = "\n".join(l.rstrip() for o in touts
                                                          for l in o.splitlines())
                    trees[what] = outs[2]
        for kind in ("live", "core", "live py-task", "core py-task"):
            if trees["gdb " + kind] != trees["lldb " + kind]:
                raise AssertionError("gdb and lldb print different %s:\n%s\n%s"
                                     % (kind, trees["gdb " + kind][:1500],
                                        trees["lldb " + kind][:1500]))
    return run


def pure_case(py):
    def run():
        with Target(py, "tasks", env={"PYU_PURE_ASYNCIO": "1"}) as t:
            with t.stopped():
                check(t.truth, json.loads(cli("tasks", "--json", t.pid)), "live, pure-Python")
    return run


def poke(pid, addr, value):
    """Writes the 8-byte @value at @addr of the stopped process @pid."""
    with open("/proc/%d/mem" % pid, "r+b", buffering=0) as f:
        f.seek(addr)
        f.write(value.to_bytes(8, "little"))


def damage_case(py):
    """A task whose memory no longer holds a task (its type pointer zeroed, as freed memory
    reads) becomes an error entry; on 3.14+ a task list made to loop (a task's list node
    pointing at itself) gives an error, and the read ends in time - live and from a gdb core."""
    def run():
        with Target(py, "tasks") as t:
            tasks = dict((x["name"], int(x["address"], 16)) for x in t.truth["extra"]["tasks"])
            freed, looped = tasks["nested"], tasks["chain-3"]
            lists = t.truth["python"]["hexversion"] >= 0x030e0000
            with t.stopped():
                poke(t.pid, freed + 8, 0)                                # ob_type
                if lists:
                    poke(t.pid, looped + TASK_NODE, looped + TASK_NODE)  # node.next
                docs = [("live", t.pid)]
                core = None
            core = t.gcore()
            docs.append(("gdb core", core))
            for what, target in docs:
                t0 = time.time()
                doc = json.loads(cli("tasks", "--json", target))
                took = time.time() - t0
                if took > DAMAGE_SECONDS:
                    raise AssertionError("%s: %.1fs on a damaged target" % (what, took))
                entry = [x for x in doc["tasks"] if int(x["address"], 16) == freed]
                if len(entry) != 1 or "not a Task" not in (entry[0]["error"] or ""):
                    raise AssertionError("%s: the freed task is %s" % (what, entry))
                if lists and not any("loops" in e for e in doc["errors"]):
                    raise AssertionError("%s: no error for the looping list: %s"
                                         % (what, doc["errors"]))
                cli("tasks", "--tree", target)  # the text forms finish too
    return run


# loop.create_connection(happy_eyeballs_delay=...) parked in staggered_race (3.14+ record the
# racing task as awaited by the caller). The attempt ends when the kernel gives up on it (about
# two minutes): the case reads the target within that, live, from a gdb core and a kernel core.
EYEBALLS_PYTHONS = ("sid-3.14", "sid-3.15")


def eyeballs_case(py):
    def run():
        env = {"PYU_HAPPY_EYEBALLS": "1"}
        with Target(py, "tasks", env=env) as t:
            caller = [x for x in t.truth["extra"]["tasks"] if x["name"] == "happy-eyeballs"][0]
            if not [a for a in caller["awaiting"] if a[0] == "task"]:
                raise AssertionError("the target's create_connection awaits no racing task: %s"
                                     % caller["awaiting"])
            with t.stopped():
                check(t.truth, json.loads(cli("tasks", "--json", t.pid)), "live")
                check_text(t.truth, t.pid, "live")
            core = t.gcore()
            check(t.truth, json.loads(cli("tasks", "--json", core)), "gdb core")
        with Target(py, "tasks", mode="crash", env=env) as t:
            core = t.crash_core()
            check(t.truth, json.loads(cli("tasks", "--json", core, t.executable)),
                  "kernel core")
    return run


# A chain longer than the frames kept (core/tasks.h PYU_TASK_FRAMES_MAX): 3.12+ nest coroutines
# without C recursion, so a real program reaches it with a raised recursion limit.
DEEP_PYTHONS = ("pyenv-3.12",)
FRAMES_KEPT = 100000


def deep_case(py):
    """The innermost frames are kept (the one that waits first), the outer ones counted, in
    JSON and text."""
    def run():
        with Target(py, "tasks_deep") as t:
            want = t.truth["extra"]
            if want["depth"] <= FRAMES_KEPT:
                raise AssertionError("the target's chain has %d frames" % want["depth"])
            with t.stopped():
                doc = json.loads(cli("tasks", "--json", t.pid))
                text = cli("tasks", "--no-source", t.pid)
            task = [x for x in doc["tasks"] if x["address"] == want["address"]][0]
            frames = task["frames"]
            if len(frames) != FRAMES_KEPT or task["frames_omitted"] != want["depth"] - FRAMES_KEPT:
                raise AssertionError("%d frames kept, %d omitted; truth %d in all"
                                     % (len(frames), task["frames_omitted"], want["depth"]))
            p = frame_problems("deep task (innermost)", want["innermost"], frames[:3])
            if p:
                raise AssertionError("\n".join(p))
            line = "(%d more outer coroutine frames not shown: limit %d)" % (
                want["depth"] - FRAMES_KEPT, FRAMES_KEPT)
            if line not in text:
                raise AssertionError("the text does not say %r" % line)
    return run


# uvloop and aiohttp: the interpreter Debian ships them for (python3-uvloop, python3-aiohttp).
UVLOOP_PYTHONS = ("debian-3.11",)
UVLOOP_REQUESTS = 300


def uvloop_case(py):
    """An aiohttp server on uvloop with a few hundred requests parked in its slow handler:
    every task with its loop's thread (found whatever the loop's class), stack and edges, live,
    from a gdb core and a kernel core, in the CLI, gdb and lldb; py-tasks / --thread on the
    loop's thread lists them all."""
    def run():
        with Target(py, "tasks_uvloop") as t:
            parked = [x for x in t.truth["extra"]["tasks"]
                      if x["frames"] and x["frames"][0]["function"] == "slow"]
            if len(parked) != UVLOOP_REQUESTS:
                raise AssertionError("the target parked %d requests" % len(parked))
            server = [th for th in t.truth["threads"] if th.get("scenario") == "server"][0]
            with t.stopped():
                check(t.truth, json.loads(cli("tasks", "--json", t.pid)), "live")
                check_locals(t.truth, json.loads(cli("tasks", "--json", "--locals", t.pid)),
                             "live")
                doc = json.loads(cli("tasks", "--json", "--thread", server["native_thread_id"],
                                     t.pid))
                if len(doc["tasks"]) != len(t.truth["extra"]["tasks"]):
                    raise AssertionError("--thread of the loop's thread: %d tasks, truth %d"
                                         % (len(doc["tasks"]), len(t.truth["extra"]["tasks"])))
            core = t.gcore()
            check(t.truth, json.loads(cli("tasks", "--json", core)), "gdb core")
            debugger_check(t, [("gdb", "live", None), ("lldb", "core", core)])
        with Target(py, "tasks_uvloop", mode="crash") as t:
            core = t.crash_core()
            check(t.truth, json.loads(cli("tasks", "--json", core, t.executable)),
                  "kernel core")
            debugger_check(t, [("gdb", "core", core)], "kernel core")
    return run


# Every option that only some subcommands take, and one subcommand that does not take it.
NOT_TAKEN = [("line", "--all"), ("list", "--json"), ("bt", "--tree"), ("locals", "--locals"),
             ("print", "--native"), ("tasks", "--native-all"), ("line", "--no-source"),
             ("bt", "--table"), ("tasks", "--limit", "3"), ("tasks", "--frame", "1"),
             ("bt", "--range", "1,2"), ("list", "--max-items", "3")]


def gone_pid():
    """The PID of a process that has exited and been reaped."""
    p = subprocess.Popen(["true"])
    p.wait()
    return p.pid


def cli_errors_case():
    """A PID no process has is "no process N" (status 1, as for any unreadable target); an
    option a subcommand does not take is a usage error (status 2), for every subcommand."""
    def run():
        pid = gone_pid()
        for cmd in ("bt", "tasks", "locals", "line", "list"):
            p = subprocess.run([CLI, cmd, str(pid)], capture_output=True, timeout=60)
            if p.returncode != 1 or p.stderr.decode().strip() != "pyunwind: no process %d" % pid:
                raise AssertionError("%s on a gone pid: status %d, %r" % (cmd, p.returncode,
                                                                          p.stderr.decode()))
        for cmd, opt, *arg in NOT_TAKEN:
            p = subprocess.run([CLI, cmd, opt] + arg + [str(pid)], capture_output=True,
                               timeout=60)
            want = "pyunwind: %s does not take %s" % (cmd, opt)
            if p.returncode != 2 or want not in p.stderr.decode():
                raise AssertionError("%s %s: status %d, %r" % (cmd, opt, p.returncode,
                                                              p.stderr.decode()))
    return run


def cases():
    out = [("tasks-cli-errors", cli_errors_case())]
    for py in selected():
        if tuple(map(int, py.minor.split("."))) < (3, 7):
            continue
        out.append(("tasks %s" % py.label, live_case(py)))
        out.append(("tasks-crash %s" % py.label, crash_case(py)))
        if py.label in ADAPTER_PYTHONS:
            out.append(("tasks-adapters %s" % py.label, adapter_case(py)))
        if py.label in PURE_PYTHONS:
            out.append(("tasks-pure %s" % py.label, pure_case(py)))
        if py.label in EYEBALLS_PYTHONS:
            out.append(("tasks-eyeballs %s" % py.label, eyeballs_case(py)))
        if py.label in DEEP_PYTHONS:
            out.append(("tasks-deep %s" % py.label, deep_case(py)))
        if py.label in UVLOOP_PYTHONS:
            out.append(("tasks-uvloop %s" % py.label, uvloop_case(py)))
        if py.label in DAMAGE_PYTHONS:
            out.append(("tasks-damaged %s" % py.label, damage_case(py)))
    return out


if __name__ == "__main__":
    sys.exit(run_cases(cases(), prefix="test-tasks"))
