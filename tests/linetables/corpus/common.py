# Line-table corpus: syntax that every interpreter from 2.7 on compiles. Not run, only compiled.
import os
import sys


def decorator(*args, **kwargs):
    def wrap(f):
        return f
    return wrap


@decorator(1,
           2)
@decorator
def decorated(a, b=(1,
                    2), *rest, **kw):
    """Docstring."""
    x = (a +
         b[0] +
         len(rest))
    y = [i * 2
         for i in range(x)
         if i % 3]
    z = dict((k,
              v) for k, v in kw.items())
    s = set(j for j in y)
    return x, y, z, s


def backwards(n):
    total = 0
    while (n >
           0):
        n -= 1
        if n % 2:
            continue
        total += n
    else:
        total = -total
    for i in range(3):
        for j in range(3):
            if i == j:
                break
    return total


def exceptions(path):
    try:
        f = open(path)
    except (IOError,
            OSError) as e:
        return e
    except Exception:
        raise
    else:
        try:
            return f.read()
        finally:
            f.close()
    finally:
        pass


def withs(a, b):
    with open(a) as fa, open(b) as fb:
        with open(a) as fc:
            return fa.read() + fb.read() + fc.read()


def generator(n):
    for i in range(n):
        yield i
        yield (i +
               1)
    x = yield
    yield x


lam = lambda a, b=(lambda: 3): (a,
                                b())
nested = lambda: (lambda: (lambda: 1))


class Outer(object):
    attr = [x for x in range(3)]

    class Inner(object):
        def method(self):
            return self

    @staticmethod
    def static(
            a,
            b):
        return a if a else \
            b

    @property
    def prop(self):
        return (self.
                attr)


def long_call():
    return os.path.join(
        "a",
        "b",
        sys.version,
    ).replace(
        "x", "y"
    )


def conditional(a):
    if a:
        pass
    elif not a:
        return 1
    else:
        return 2
    assert a, (
        "message")
    del a
    return [
        1,
        2,
    ]


def strings():
    return ("one"
            "two"
            """three
four"""
            "five")


if __name__ == "__main__":
    decorated(1)
