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


SCENARIOS = [("kwonly", run_kwonly, ()), ("nonlocal", counter, ())]
