# tasks - the end-to-end target for asyncio tasks.
#
#   python tasks.py OUTDIR [park|crash]
#
# Two event loops in two threads. Loop 1 runs a few hundred tasks: a chain of tasks each
# awaiting the next (the last one on a future), a gather of sleepers, a TaskGroup (3.11+),
# tasks parked on a future, a queue, a lock and an event, coroutines nested three deep, two
# tasks awaiting each other (a deadlock cycle), and a finished and a
# cancelled task kept alive; a third loop stopped with two tasks parked, in a thread that has
# ended. Loop 2 has a few sleepers, one task (eager on 3.12+) that is running when the
# snapshot is taken (it blocks its loop's thread on pyu_truth.HOLD) and one it made that never
# started. The truth (the document's
# "extra") lists every task as the target sees it: asyncio.all_tasks() of both loops plus the
# kept finished ones - address, name, state, the loop's thread, the coroutine stack (each
# coroutine's frame through cr_await / gi_yieldfrom, innermost first; for the running task its
# thread's frames down to its coroutine) and what it awaits (its _fut_waiter: a task, the
# children of a gather, the tasks of a TaskGroup, or a future). Runs on 3.7+.
import gc
import os
import sys
import threading

# PYU_PURE_ASYNCIO=1: without the C accelerator, every task and future is asyncio's own
# pure-Python class.
if os.environ.get("PYU_PURE_ASYNCIO") == "1":
    sys.modules["_asyncio"] = None
import asyncio  # noqa: E402

sys.dont_write_bytecode = True
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import pyu_truth  # noqa: E402
from pyu_truth import HOLD, arrive  # noqa: E402

SLEEPERS = 200      # in the gather
CHAIN = 6           # tasks awaiting each other
LOOPS = []          # (loop, thread) of both loops
KEEP = []           # finished and cancelled tasks, kept alive
RACERS = 3          # entries of the staggered race
RACING = []         # one item a race entry that has started
ALL = []            # every task made, kept alive (a loop holds its tasks only weakly)
FOREVER = 100000


def spawn(coro, name):
    task = asyncio.get_event_loop().create_task(coro)
    if hasattr(task, "set_name"):
        task.set_name(name)
    ALL.append(task)
    return task


async def sleeper(i):
    await asyncio.sleep(FOREVER + i)


async def chain(depth, fut):
    if depth == 0:
        await fut
    else:
        await spawn(chain(depth - 1, fut), "chain-%d" % (depth - 1))


async def innermost(fut):
    await fut


async def middle(fut):
    await innermost(fut)


async def nested(fut):
    await middle(fut)


async def on_queue(q):
    await q.get()


async def holder(lock, ready):
    await lock.acquire()
    ready.set_result(None)
    await asyncio.sleep(FOREVER)


async def on_lock(lock):
    async with lock:
        pass


async def on_event(ev):
    await ev.wait()


async def gathered():
    await asyncio.gather(*[sleeper(i) for i in range(SLEEPERS)])


async def grouped():
    async with asyncio.TaskGroup() as tg:
        for i in range(3):
            tg.create_task(sleeper(i), name="group-%d" % i)


BOX = {}


async def cycle_a():
    await BOX["b"]


async def cycle_b():
    await BOX["a"]


async def finishes():
    return 42


# ---- async generators: every way a task waits inside one --------------------------------

async def ticker(fut):
    yield 0
    await fut
    yield 1


async def outer_agen(fut):
    async for x in ticker(fut):
        yield x


async def agen_for(fut):
    """async for over a generator that iterates another: consumer <- outer_agen <- ticker."""
    async for _ in outer_agen(fut):
        pass


async def agen_anext(fut):
    g = ticker(fut)
    await g.__anext__()
    if sys.version_info >= (3, 10):
        await anext(g)  # noqa: F821 - a builtin from 3.10
    else:
        await g.__anext__()


async def agen_anext_default(fut):
    g = ticker(fut)
    await anext(g, None)  # noqa: F821
    await anext(g, None)  # noqa: F821


async def agen_asend(fut):
    g = ticker(fut)
    await g.asend(None)
    await g.asend("sent")


async def catcher(fut):
    try:
        yield 0
    except ValueError:
        await fut
        yield 1


async def agen_athrow(fut):
    g = catcher(fut)
    await g.__anext__()
    await g.athrow(ValueError("thrown"))


async def closer(fut):
    try:
        yield 0
    finally:
        await fut


async def agen_aclose(fut):
    g = closer(fut)
    await g.__anext__()
    await g.aclose()


async def awaits_task(task):
    yield 0
    await task
    yield 1


async def agen_task(task):
    """An async generator that awaits a task: the consumer waits on that task."""
    async for _ in awaits_task(task):
        pass


# ---- await edges asyncio records itself (3.14+: a future's awaited-by record) ---------------

async def parked(fut):
    await fut


async def race_entry(ev):
    RACING.append(1)
    await ev.wait()


async def racer():
    """The standard library's staggered_race (3.8+), three entries started, none finishing:
    3.14+ record the racing tasks as awaited by this one."""
    import asyncio.staggered
    ev = asyncio.Event()
    await asyncio.staggered.staggered_race([lambda: race_entry(ev)] * RACERS, 0.001)


def register_awaiters(loop):
    """3.14+: tasks registered as awaiting others with future_add_to_awaited_by, some of them
    removed again (their entries left as tombstones in the awaited task's set)."""
    target = spawn(sleeper(11), "registered-target")
    single = spawn(sleeper(12), "registered-single")
    waiters = [spawn(parked(loop.create_future()), "registrant-%d" % i) for i in range(6)]
    for w in waiters:
        asyncio.futures.future_add_to_awaited_by(target, w)
    for w in waiters[1:5:2] + waiters[2:3]:
        asyncio.futures.future_discard_from_awaited_by(target, w)
    asyncio.futures.future_add_to_awaited_by(single, waiters[0])


async def happy_eyeballs(port):
    """loop.create_connection(happy_eyeballs_delay=...) to a listener on 127.0.0.1 whose
    queue is full: the connection attempt (a task of staggered_race) waits until the kernel
    gives up on it (about two minutes), and the caller waits for the race."""
    loop = asyncio.get_event_loop()
    await loop.create_connection(asyncio.Protocol, "127.0.0.1", port, happy_eyeballs_delay=0.01)


LISTENERS = []


def full_listener():
    """A listener on 127.0.0.1 that accepts nothing, its queue filled: a connection to it
    waits for the kernel's SYN retries to run out."""
    import socket
    lst = socket.socket()
    lst.bind(("127.0.0.1", 0))
    lst.listen(0)
    port = lst.getsockname()[1]
    LISTENERS.append(lst)
    for _ in range(3):
        s = socket.socket()
        s.setblocking(False)
        try:
            s.connect(("127.0.0.1", port))
        except BlockingIOError:
            pass
        LISTENERS.append(s)
    return port


# ---- locals of suspended coroutines (py-task, --locals) ------------------------------------

class Request(object):
    def __init__(self, path):
        self.path = path


async def inner_locals(fut, label):
    depth = 2
    await fut
    return depth, label


async def with_locals(fut, request_id):
    request = Request("/slow/%d" % request_id)
    count = 41 + 1
    label = "req-%d" % request_id
    await inner_locals(fut, label)
    return request, count


DEEP = 1030         # coroutines awaiting each other in one task (more than 1,024)


async def deep(n, fut):
    if n == 0:
        await fut
    else:
        await deep(n - 1, fut)


async def never_started():
    await asyncio.sleep(0)


async def main1():
    loop = asyncio.get_event_loop()
    fut = loop.create_future()
    spawn(chain(CHAIN - 1, fut), "chain-%d" % (CHAIN - 1))
    spawn(gathered(), "gatherer")
    if sys.version_info >= (3, 11):
        spawn(grouped(), "grouper")
    spawn(nested(loop.create_future()), "nested")
    spawn(on_queue(asyncio.Queue()), "on-queue")
    lock, ready = asyncio.Lock(), loop.create_future()
    spawn(holder(lock, ready), "lock-holder")
    await ready
    spawn(on_lock(lock), "on-lock")
    spawn(on_event(asyncio.Event()), "on-event")
    BOX["a"] = spawn(cycle_a(), "cycle-a")
    BOX["b"] = spawn(cycle_b(), "cycle-b")
    agen_fut = loop.create_future()
    spawn(agen_for(agen_fut), "agen-for")
    spawn(agen_anext(agen_fut), "agen-anext")
    if sys.version_info >= (3, 10):
        spawn(agen_anext_default(agen_fut), "agen-anext-default")
    spawn(agen_asend(agen_fut), "agen-asend")
    spawn(agen_athrow(agen_fut), "agen-athrow")
    spawn(agen_aclose(agen_fut), "agen-aclose")
    spawn(agen_task(spawn(sleeper(7), "agen-awaited")), "agen-task")
    spawn(deep(DEEP - 1, loop.create_future()), "deep")
    spawn(with_locals(loop.create_future(), 7), "with-locals")
    if sys.version_info >= (3, 8):
        spawn(racer(), "racer")
    if sys.version_info >= (3, 14):
        register_awaiters(loop)
    if os.environ.get("PYU_HAPPY_EYEBALLS") == "1":
        spawn(happy_eyeballs(full_listener()), "happy-eyeballs")
    await asyncio.sleep(0.2)  # the race starts its entries 1 ms apart
    # ... or later on a loaded machine, where this thread may wait for a CPU longer than that:
    # the truth is taken once they all have started (an entry starting between the truth and
    # the crash made the two differ by a task, at a load of 40 on 2 CPUs).
    for _ in range(60000):
        if sys.version_info < (3, 8) or len(RACING) >= RACERS:
            break
        await asyncio.sleep(0.001)
    done = spawn(finishes(), "finished")
    cancelled = spawn(sleeper(0), "cancelled")
    KEEP.extend([done, cancelled])
    for _ in range(5):
        await asyncio.sleep(0)
    cancelled.cancel()
    for _ in range(5):
        await asyncio.sleep(0)
    arrive()
    await loop.create_future()


def blocking_task():
    arrive()
    HOLD.acquire()


async def runs_now():
    spawn(never_started(), "never-started")
    blocking_task()


async def main2():
    for i in range(3):
        spawn(sleeper(i), "loop2-sleeper-%d" % i)
    await asyncio.sleep(0)
    if sys.version_info >= (3, 12):
        # 3.12+: an eager task, run at its creation and still running when the snapshot is
        # taken, so asyncio keeps it in its set of eager tasks (3.14+: on the thread's list).
        await asyncio.Task(runs_now(), loop=asyncio.get_event_loop(), name="running",
                           eager_start=True)
    else:
        await spawn(runs_now(), "running")


async def main3():
    for i in range(2):
        spawn(sleeper(i), "stopped-loop-%d" % i)
    await asyncio.sleep(0)


def stopped_loop():
    """A loop that ran, parked two tasks and stopped, in a thread that is gone (3.14+ move
    the tasks of a finished thread to the interpreter's list)."""
    loop = asyncio.new_event_loop()
    asyncio.set_event_loop(loop)
    LOOPS.append((loop, None))
    loop.run_until_complete(main3())


def run_loop(main):
    loop = asyncio.new_event_loop()
    asyncio.set_event_loop(loop)
    LOOPS.append((loop, threading.current_thread()))
    loop.run_until_complete(main())


# ---- the truth ----------------------------------------------------------------------------

# The awaitables of async generators (asend, athrow, anext(agen, default)) show the generator
# they drive only to the collector.
AGEN_AWAITABLES = ("async_generator_asend", "async_generator_athrow", "anext_awaitable")


def driven_generator(awaitable):
    """The async generator (or, for anext(agen, default), the asend awaitable) it drives."""
    for r in gc.get_referents(awaitable):
        if type(r).__name__ in ("async_generator",) + AGEN_AWAITABLES:
            return r
    return None


def coro_frames(coro):
    """Each coroutine's / generator's / async generator's frame through cr_await, gi_yieldfrom
    and ag_await (and the async generator an asend / athrow / anext awaitable drives),
    innermost first."""
    frames = []
    c = coro
    while c is not None and len(frames) < 100000:
        kind = type(c).__name__
        if kind in AGEN_AWAITABLES:
            c = driven_generator(c)
            continue
        if kind not in ("coroutine", "generator", "async_generator"):
            break
        prefix = {"coroutine": "cr_", "generator": "gi_", "async_generator": "ag_"}[kind]
        f = getattr(c, prefix + "frame")
        if f is None:
            break
        frames.append(f)
        c = getattr(c, "gi_yieldfrom" if kind == "generator" else prefix + "await")
    frames.reverse()
    return frames


def running_frames(task, ident):
    target = task._coro.cr_frame
    out = []
    f = sys._current_frames().get(ident)
    while f is not None:
        out.append(f)
        if f is target:
            return out
        f = f.f_back
    return []


def awaiting(task, frames):
    """(kind, address, via) of what the task waits on, as pyunwind defines it."""
    if frames and frames[0].f_code.co_name in ("__aexit__", "_aexit"):
        group = frames[0].f_locals.get("self")
        if group is not None and type(group).__name__ == "TaskGroup":
            return [("task", id(t), "taskgroup") for t in group._tasks]
    w = task._fut_waiter
    if w is None:
        return []
    if isinstance(w, asyncio.Task):
        return [("task", id(w), "await")]
    if type(w).__name__ == "_GatheringFuture":
        return [("task" if isinstance(c, asyncio.Task) else "future", id(c), "gather")
                for c in w._children]
    return [("future", id(w), "await")]


# Locals whose repr() runs no Python code and is short: the truth gives their repr; of the
# others only the name.
SIMPLE = (int, str, bool, type(None), float, bytes)


def frame_locals(f):
    out = {}
    for name, value in f.f_locals.items():
        r = repr(value) if type(value) in SIMPLE else None
        out[name] = r if r is not None and len(r) <= 60 else None
    return out


def frame_entry(f):
    e = pyu_truth._frame_entry(f)
    e["locals"] = frame_locals(f)
    return e


def task_entry(task, loop, ident):
    running = asyncio.current_task(loop) is task
    state = ("running" if running else "cancelled" if task.cancelled() else
             "done" if task.done() else "pending")
    if state == "running":
        frames = running_frames(task, ident)
    elif state == "pending":
        frames = coro_frames(task._coro)
    else:
        frames = []
    return {"address": "0x%x" % id(task),
            "name": task.get_name() if hasattr(task, "get_name") else None,
            "state": state,
            "thread_id": ident,
            "frames": [frame_entry(f) for f in frames],
            "awaiting": [list(a) for a in (awaiting(task, frames) if state == "pending"
                                           else [])]}


def registered_edges(tasks, objects):
    """3.14+: the edges asyncio records in each task's awaited-by set (_asyncio_awaited_by),
    added to the waiting task's (a pending one) unless it has an edge to that task already."""
    entries = dict((e["address"], e) for e in tasks)
    for t in objects:
        for w in getattr(t, "_asyncio_awaited_by", None) or ():
            e = entries.get("0x%x" % id(w))
            if e is None or e["state"] != "pending":
                continue
            if not any(a[1] == id(t) for a in e["awaiting"]):
                e["awaiting"].append(["task", id(t), "await"])


def tasks_truth():
    tasks, objects = [], []
    for loop, thread in LOOPS:
        for t in asyncio.all_tasks(loop):
            tasks.append(task_entry(t, loop, thread.ident if thread else None))
            objects.append(t)
    for t in KEEP:
        for loop, thread in LOOPS:
            if t._loop is loop:
                tasks.append(task_entry(t, loop, thread.ident if thread else None))
                objects.append(t)
    registered_edges(tasks, objects)
    return {"tasks": tasks}


def main(argv):
    sys.setrecursionlimit(DEEP + 1000)  # the deep chain is made by nested calls
    outdir = os.path.abspath(argv[1])
    mode = argv[2] if len(argv) > 2 else "park"
    pyu_truth.DOC_EXTRA = tasks_truth
    gone = threading.Thread(target=stopped_loop, name="stopped-loop")
    gone.start()
    gone.join()
    pyu_truth.start(outdir, mode, [("loop1", run_loop, (main1,)),
                                   ("loop2", run_loop, (main2,))])
    arrive()
    HOLD.acquire()


if __name__ == "__main__":
    main(sys.argv)
