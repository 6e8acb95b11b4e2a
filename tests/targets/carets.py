# carets - threads parked inside the expressions whose carets differ between versions (calls,
# method calls, attribute chains, binary operations, subscripts, multi-line expressions, tabs,
# non-ASCII and double-width text), for tests/e2e/test_carets.py. Python 3.6+.
#
#   python carets.py OUTDIR [park|crash]
import os
import sys

sys.dont_write_bytecode = True
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import pyu_truth  # noqa: E402
from pyu_truth import HOLD, arrive  # noqa: E402


def block(*args):
    arrive()
    HOLD.acquire()
    return 1


class Obj(object):
    def __init__(self):
        self.attr = self
        self.chain = self

    def meth(self, *args):
        return block(*args)


OBJ = Obj()
数据 = {"键": [0, 1]}


def binop():
    return 1 + block() * 2


def subscript():
    return 数据["键"][block()]


def method_call():
    OBJ.meth(0)


def attribute_chain():
    x = OBJ.attr.chain.meth(1, 2)
    return x


def multi_line():
    return OBJ.attr.meth(
        block(),
        2,
    )


def multi_line_binop():
    y = (OBJ.meth()
         + 2)
    return y


def 函数(值):
    return block(值) + 值


def wide():
    return 函数("参数") * 2


def tabs():
	x = [0]	[block()]
	return x


def whole_line():
    block(Obj())


def main(argv):
    outdir = os.path.abspath(argv[1])
    mode = argv[2] if len(argv) > 2 else "park"
    pyu_truth.start(outdir, mode, [(f.__name__, f, ()) for f in (
        binop, subscript, method_call, attribute_chain, multi_line, multi_line_binop, wide,
        tabs)])
    whole_line()


if __name__ == "__main__":
    main(sys.argv)
