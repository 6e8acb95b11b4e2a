# tracebacks - the end-to-end target for handled exceptions' tracebacks (test_tracebacks.py):
# threads that block inside `except:` blocks, each having printed what the interpreter's own
# traceback.format_exception() gives for the exception it handles - nested calls, carets of
# every kind, a recursion, KeyError and argument forms, a class defined here and one from a
# module, non-ASCII and multi-line messages, OSError's errno form; on 3.x chained causes and contexts (scenario
# module tracebacks_py3.py); on 3.11+ exception groups; SyntaxErrors, compiled and raised.
# One thread runs code compiled with a
# RELATIVE file name (rel/relative.py, written into the work directory, which is the target's
# working directory): its source must be found against that directory.
#
#   python tracebacks.py OUTDIR MODE      (CPython 2.7 and 3.6+; started by tests/harness)
#
# Truth: each thread's entry has "format_exception" (the text), "pyunwind_text" (where
# pyunwind is to print something else by design: what only running the target's code could
# tell) and "relative": whether its code came from the relative file.
import os
import sys
import threading
import traceback

sys.dont_write_bytecode = True
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import pyu_truth  # noqa: E402
from pyu_truth import HOLD, arrive  # noqa: E402

PY3 = sys.version_info[0] >= 3
TEXTS = {}  # thread ident -> format_exception text


POSITIONS = {}  # thread ident -> [[line, end_line, column, end_column] per entry]
EXPECT = {}  # thread ident -> the text pyunwind prints where it differs by design


def positions(tb):
    """Each entry's tb_lineno, and on 3.11+ co_positions() at its tb_lasti."""
    out = []
    while tb is not None:
        pos = [tb.tb_lineno, None, None, None]
        if sys.version_info >= (3, 11) and tb.tb_lasti >= 0:
            pos = list(list(tb.tb_frame.f_code.co_positions())[tb.tb_lasti // 2])
        out.append(pos)
        tb = tb.tb_next
    return out


def park(expect=None):
    """Records what format_exception prints for the exception being handled, then blocks.
    @expect(type, value, tb), where given, returns the text pyunwind is to print instead: for
    what it cannot know without running the target's code (documented in doc/tracebacks.md)."""
    ident = threading.current_thread().ident
    TEXTS[ident] = "".join(traceback.format_exception(*sys.exc_info()))
    if expect is not None:
        EXPECT[ident] = expect(*sys.exc_info())
    POSITIONS[ident] = positions(sys.exc_info()[2])
    arrive()
    HOLD.acquire()


pyu_truth.THREAD_EXTRA = lambda ident: {"format_exception": TEXTS.get(ident),
                                        "positions": POSITIONS.get(ident),
                                        "pyunwind_text": EXPECT.get(ident)}


class LocalError(Exception):
    pass


def divide(a, b):
    return a / b


def compute(values):
    total = 0
    for v in values:
        total += divide(10,
                        v)
    return total


def nested_calls():
    try:
        compute([1, 2, 0])
    except ZeroDivisionError:
        park()


def lookup(d):
    return d["missing"]["deeper"]


def key_error():
    try:
        lookup({"present": 1})
    except KeyError:
        park()


def recurse(n):
    if n == 0:
        raise LocalError("bottom reached")
    return recurse(n - 1)


def recursion():
    try:
        recurse(12)
    except LocalError:
        park()


def raise_args(*args):
    raise ValueError(*args)


def many_args():
    try:
        raise_args("two", 2)
    except ValueError:
        park()


def no_args():
    try:
        raise_args()
    except ValueError:
        park()


def module_error():
    import xml.dom
    try:
        raise xml.dom.NotFoundErr("not here")
    except xml.dom.NotFoundErr:
        park()


def text_message():
    try:
        raise LocalError(u"caf\u00e9 \u65e5\u672c\nsecond line")
    except LocalError:
        park()


def os_error():
    try:
        open(os.path.join("no-such-directory", "file.txt"))
    except (IOError, OSError):
        park()


RELATIVE_SOURCE = '''
def relative_inner(x):
    return [x][1]


def relative_outer():
    try:
        relative_inner(1)
    except IndexError:
        park()
'''


# SyntaxErrors as format_exception_only lays them out (file, text, carets per version):
# compiled sources (an indent, tabs, an unclosed bracket, a range of carets, a missing block;
# none whose message is "invalid syntax", which 3.14+ re-examine by running the compiler),
# and ones raised with given details.
SYNTAX_SOURCES = ["  x = 1\n", "def f():\n\tx = [1, 2\n", "f(**x, *y)\n", "for x in y:\npass\n"]
SYNTAX_GIVEN = [("given", ("given.py", 4, 3, "  foo(bar, baz)\n")),
                ("past the end", ("given.py", 2, 40, "\tshort\n"))]
if PY3:  # (2.7 counts a tab as 8 spaces: no TabError)
    SYNTAX_SOURCES.append("if x:\n        a = 1\n\tb = 2\n")
    SYNTAX_GIVEN += [("", ("given.py", 7, 1, "x\n")), ("no line", ("given.py", None, None, None))]
if sys.version_info >= (3, 10):
    SYNTAX_GIVEN += [("ranged", ("given.py", 4, 3, "  foo(bar, baz)\n", 4, 12)),
                     ("lines", ("given.py", 4, 7, "  foo(bar,\n", 5, 2)),
                     ("wide", ("given.py", 1, 6, u"\u65e5\u672c = \u65e5\u672c\n", 1, 8))]


def syntax_error(source):
    try:
        compile(source, "synfile.py", "exec")
    except SyntaxError:
        park()


def syntax_given(args):
    try:
        raise SyntaxError(*args)
    except SyntaxError:
        park()


def relative_file():
    # Compiled with a file name relative to the working directory, as `python app.py` names a
    # script on 2.7 - 3.8.
    name = os.path.join("rel", "relative.py")
    ns = {"park": park}
    exec(compile(RELATIVE_SOURCE, name, "exec"), ns)
    ns["relative_outer"]()


SCENARIOS = [("nested", nested_calls, ()), ("keyerror", key_error, ()),
             ("recursion", recursion, ()), ("args", many_args, ()), ("noargs", no_args, ()),
             ("module", module_error, ()), ("text", text_message, ()),
             ("oserror", os_error, ()),
             ("relative", relative_file, ())]
SCENARIOS += [("syntax%d" % i, syntax_error, (src,)) for i, src in enumerate(SYNTAX_SOURCES)]
SCENARIOS += [("given%d" % i, syntax_given, (a,)) for i, a in enumerate(SYNTAX_GIVEN)]


def main(argv):
    outdir, mode = argv[1], argv[2]
    if not os.path.isdir("rel"):
        os.mkdir("rel")
    with open(os.path.join("rel", "relative.py"), "w") as f:
        f.write(RELATIVE_SOURCE)
    scenarios = list(SCENARIOS)
    if PY3:
        import tracebacks_py3
        import tracebacks_suggest
        tracebacks_py3.park = park
        tracebacks_suggest.park = park
        scenarios += tracebacks_py3.SCENARIOS + tracebacks_suggest.SCENARIOS
    pyu_truth.start(outdir, mode, scenarios)
    arrive()
    HOLD.acquire()


if __name__ == "__main__":
    main(sys.argv)
