# tracebacks_py3 - the 3.x scenarios of tracebacks.py: explicit causes, implicit contexts,
# a suppressed context, and on 3.11+ exception groups (nested, wider than the fifteen members
# the traceback module shows) and notes. `park` is set by tracebacks.py.
import sys

park = None


def fail(kind, msg):
    raise kind(msg)


def cause():
    try:
        try:
            fail(KeyError, "first")
        except KeyError as e:
            raise RuntimeError("second") from e
    except RuntimeError:
        park()


def context():
    try:
        try:
            fail(OverflowError, "first")
        except OverflowError:
            {}["x"]
    except KeyError:
        park()


def suppressed():
    try:
        try:
            fail(TypeError, "hidden")
        except TypeError:
            raise ValueError("shown") from None
    except ValueError:
        park()


def three_deep():
    try:
        try:
            try:
                fail(ArithmeticError, "one")
            except ArithmeticError as e:
                raise LookupError("two") from e
        except LookupError:
            fail(AttributeError, "three")
    except AttributeError:
        park()


SCENARIOS = [("cause", cause, ()), ("context", context, ()), ("suppressed", suppressed, ()),
             ("three", three_deep, ())]

if sys.version_info >= (3, 11):
    def raise_group():
        errors = []
        for i in range(3):
            try:
                fail(ValueError, "member %d" % i)
            except ValueError as e:
                errors.append(e)
        inner = ExceptionGroup("inner", [TypeError("t"), KeyError("k")])
        raise ExceptionGroup("outer", errors + [inner])

    def group():
        try:
            raise_group()
        except ExceptionGroup:
            park()

    def wide_group():
        try:
            raise ExceptionGroup("wide", [ValueError(i) for i in range(17)])
        except ExceptionGroup:
            park()

    def group_cause():
        try:
            try:
                fail(KeyError, "origin")
            except KeyError as e:
                raise ExceptionGroup("grouped", [RuntimeError("a")]) from e
        except ExceptionGroup:
            park()

    def notes():
        try:
            e = ValueError("noted")
            e.add_note("first note\nits second line")
            e.add_note("")
            e.add_note("last")
            raise e
        except ValueError:
            park()

    SCENARIOS += [("group", group, ()), ("widegroup", wide_group, ()),
                  ("groupcause", group_cause, ()), ("notes", notes, ())]
