# scenario_py3 - the scenarios of scenario.py that need Python 3 syntax: asyncio coroutines
# (async def), a non-ASCII function name and a module with a non-ASCII file name. Imported by
# scenario.py on 3.x only.
import asyncio
import os

from pyu_truth import HOLD, arrive


async def coro_inner():
    arrive()
    HOLD.acquire()


async def coro_middle():
    await coro_inner()


async def coro_outer():
    await coro_middle()


def run_asyncio():
    loop = asyncio.new_event_loop()
    asyncio.set_event_loop(loop)
    loop.run_until_complete(coro_outer())


def ünïcode_函数():
    arrive()
    HOLD.acquire()


def run_unicode_name():
    ünïcode_函数()


UNICODE_FILE = "modülé_файл.py"
UNICODE_SOURCE = """from pyu_truth import HOLD, arrive


def блок():
    arrive()
    HOLD.acquire()
"""


def scenarios(gendir, load_module):
    path = os.path.join(gendir, UNICODE_FILE)
    with open(path, "w", encoding="utf-8") as f:
        f.write(UNICODE_SOURCE)
    mod = load_module("pyu_unicode_file", path)
    return [("asyncio", run_asyncio, ()),
            ("unicode-name", run_unicode_name, ()),
            ("unicode-file", mod.блок, ())]
