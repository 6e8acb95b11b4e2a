# tasks_deep - a task whose coroutine awaits a chain of DEPTH coroutines, more than pyunwind
# keeps (100,000 frames): the innermost must be kept and the rest counted.
#
#   python tasks_deep.py OUTDIR [park]
#
# Needs an interpreter that runs nested coroutines without C recursion (3.12+). The truth (the
# document's "extra"): the task's address, the chain's length as the target walks it through
# cr_await, and its innermost and outermost frames.
import asyncio
import os
import sys
import threading

sys.dont_write_bytecode = True
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import pyu_truth  # noqa: E402
from pyu_truth import HOLD, arrive  # noqa: E402

DEPTH = 120000
KEEP = []


async def deep(n, fut):
    if n == 0:
        await fut
    else:
        await deep(n - 1, fut)


def truth():
    task = KEEP[0]
    frames, c = [], task._coro
    while c is not None and type(c).__name__ == "coroutine":
        frames.append(c.cr_frame)
        c = c.cr_await
    frames.reverse()
    return {"address": "0x%x" % id(task), "depth": len(frames),
            "innermost": [pyu_truth._frame_entry(f) for f in frames[:3]],
            "outermost": pyu_truth._frame_entry(frames[-1])}


async def main():
    loop = asyncio.get_event_loop()
    KEEP.append(loop.create_task(deep(DEPTH - 1, loop.create_future())))
    await asyncio.sleep(0.1)
    arrive()
    HOLD.acquire()


def run_loop():
    loop = asyncio.new_event_loop()
    asyncio.set_event_loop(loop)
    loop.run_until_complete(main())


if __name__ == "__main__":
    sys.setrecursionlimit(DEPTH + 1000)
    pyu_truth.DOC_EXTRA = truth
    pyu_truth.start(os.path.abspath(sys.argv[1]), sys.argv[2] if len(sys.argv) > 2 else "park",
                    [("loop", run_loop, ())])
    arrive()
    HOLD.acquire()
