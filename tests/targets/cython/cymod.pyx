# cython: language_level=3
# cymod - the Cython module of the Cython tests (tests/e2e/test_cython.py), compiled by the test
# for each interpreter, with and without --line-directives. Lines marked "@name" are the truth:
# the .pyx line each Cython frame is executing while the target's threads block.
from libc.string cimport memset


cdef inline int inner(object callback, int n) except -1:
    callback(n)  # @inner
    return n


def outer(callback, int n):
    inner(callback, n + 1)  # @outer
    return n


cdef class Klass:
    cdef int count

    def method(self, callback):
        self.count += 1
        callback(self.count)  # @method
        return self.count


def generate(callback):
    yield 1
    callback(2)  # @generate
    yield 2


async def coroutine(callback):
    callback(4)  # @coroutine


def crash(size_t address):
    memset(<void *>address, 0, 1)  # @crash


ctypedef fused number:
    int
    double


def fused_def(callback, number x):
    callback(x)  # @fused_def
    return x


def closure(callback):
    def inner_fn(n):
        callback(n)  # @inner_fn
    inner_fn(5)  # @closure
    return 0


def with_lambda(callback):
    f = lambda n: callback(n)  # @lambda
    f(6)  # @with_lambda
    return 0


# Raised here, caught in Python: the traceback entries __Pyx_AddTraceback makes carry these lines.
def boom(int n):
    if n > 0:
        raise ValueError("boom %d" % n)  # @boom
    return n


def boom_outer(n):
    boom(n)  # @boom_outer
    return n
