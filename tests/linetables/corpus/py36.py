# min-version: 3.6
# Line-table corpus: 3.6+ syntax (f-strings, async, keyword-only, nonlocal, annotations).
import asyncio


def kwonly(a, *, b=1, **kw) -> int:
    c: int = a + b
    return f"{a!r:>{b}} {c}" \
           f"{kw}"


def closure():
    x = 0

    def inc():
        nonlocal x
        x += 1
        return x
    return inc


async def coro(n):
    await asyncio.sleep(0)
    async with lock() as l:
        async for item in aiter_(n):
            yield_ = [i async for i in aiter_(item)]
            await l.use(yield_)
    return {k: v
            for k, v in enumerate(range(n))}


async def agen():
    for i in range(3):
        yield i
        await asyncio.sleep(0)


def lock():
    return None


def aiter_(n):
    return n


def star(*args):
    first, *rest = args
    return [*rest, *args], {**{}, 'a': first}
