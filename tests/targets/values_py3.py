# values_py3 - the locals of values.py that need Python 3 syntax: keyword-only parameters
# (with and without defaults), positional-only ones where the version has them, nonlocal.
# Imported by values.py on 3.x only; values.py sets `park`.
park = None


def kwonly(a, b=2, *rest, c, d=4, **kw):
    total = a + b + c + d
    park()
    return total


def run_kwonly():
    kwonly(1, 2, 3, c=30, extra="x")


def counter():
    count = 0

    def bump(step):
        nonlocal count
        count += step
        park()
        return count

    return bump(3)


async def coroutine_func():
    return 1


async def async_gen_func():
    yield 1


def async_objects():
    """A coroutine and an async generator, never run (their reprs only)."""
    return coroutine_func(), async_gen_func()


SCENARIOS = [("kwonly", run_kwonly, ()), ("nonlocal", counter, ())]
