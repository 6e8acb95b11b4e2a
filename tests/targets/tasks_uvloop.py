# tasks_uvloop - the asyncio target of a production-style service: an aiohttp server on uvloop's
# event loop with a few hundred requests parked in a slow handler.
#
#   python tasks_uvloop.py OUTDIR [park|crash]
#
# Runs on an interpreter that has aiohttp and uvloop (Debian's python3-aiohttp and
# python3-uvloop, on Debian's python3). The thread "scenario-server" runs uvloop's loop with the
# server on 127.0.0.1 (an ephemeral port); the thread "scenario-clients" opens REQUESTS
# connections to it and sends one request on each (plain sockets, each with a timeout), then
# blocks. Each request parks in the handler; once all are in, a task of the server's loop
# blocks the loop's thread (it is the running task when the snapshot is taken). The truth is
# that of tasks.py: every task of the loop as asyncio.all_tasks() lists it, its state, the
# loop's thread, its coroutine stack and what it awaits.
import os
import socket
import sys
import threading

sys.dont_write_bytecode = True
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import asyncio  # noqa: E402

import uvloop  # noqa: E402
from aiohttp import web  # noqa: E402

import pyu_truth  # noqa: E402
import tasks as base  # noqa: E402 - the truth of tasks.py
from pyu_truth import HOLD, arrive  # noqa: E402

REQUESTS = 300
CONNECT_SECONDS = 60
PORT = []                  # the server's port, once it listens
LISTENING = threading.Event()
SOCKETS = []               # the clients' connections, kept open


async def slow(request):
    """The slow handler: every request waits here (on a future nobody completes)."""
    state = request.app["state"]
    state["parked"] += 1
    if state["parked"] == REQUESTS:
        state["all_in"].set()
    await state["never"]
    return web.Response(text="unreachable")


def blocking():
    arrive()
    HOLD.acquire()


async def hold_loop(all_in):
    await all_in.wait()
    blocking()


async def serve():
    loop = asyncio.get_event_loop()
    app = web.Application()
    app["state"] = {"parked": 0, "all_in": asyncio.Event(), "never": loop.create_future()}
    app.router.add_get("/slow/{n}", slow)
    runner = web.AppRunner(app)
    await runner.setup()
    # A socket of our own: a host name would have uvloop resolve it on libuv's worker threads,
    # threads no Python code runs on.
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    site = web.SockSite(runner, sock)
    await site.start()
    PORT.append(sock.getsockname()[1])
    LISTENING.set()
    await loop.create_task(hold_loop(app["state"]["all_in"]))


def run_server():
    loop = uvloop.new_event_loop()
    asyncio.set_event_loop(loop)
    base.LOOPS.append((loop, threading.current_thread()))
    loop.run_until_complete(serve())


def run_clients():
    if not LISTENING.wait(CONNECT_SECONDS):
        raise SystemExit("tasks_uvloop: the server did not listen")
    for i in range(REQUESTS):
        s = socket.create_connection(("127.0.0.1", PORT[0]), timeout=CONNECT_SECONDS)
        s.sendall(b"GET /slow/%d HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n" % i)
        SOCKETS.append(s)
    arrive()
    HOLD.acquire()


def main(argv):
    outdir = os.path.abspath(argv[1])
    mode = argv[2] if len(argv) > 2 else "park"
    pyu_truth.DOC_EXTRA = base.tasks_truth
    pyu_truth.start(outdir, mode, [("server", run_server, ()), ("clients", run_clients, ())])
    arrive()
    HOLD.acquire()


if __name__ == "__main__":
    main(sys.argv)
