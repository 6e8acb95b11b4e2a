# linetables_ref.py - CPython's own iteration of its line tables, for bench/linetables-run:
# compiles this interpreter's standard library as tests/linetables/gen_truth.py does, then times
# (in CPU time) co_positions() on 3.11+, co_lines() on 3.10 and dis.findlinestarts() before
# (the only in-process iteration those versions have) over every code object. Runs on 2.7+.
from __future__ import print_function

import os
import sys
import time
import warnings

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests",
                                "linetables"))
import gen_truth  # noqa: E402

MIN_SECONDS = 0.3
cpu = getattr(time, "process_time", None) or time.clock


class Collect(object):
    def __init__(self):
        self.codes = []

    def tree(self, code, where):
        stack = [code]
        while stack:
            co = stack.pop()
            self.codes.append(co)
            stack.extend(c for c in co.co_consts if isinstance(c, gen_truth.CODE_TYPE))


def main():
    warnings.simplefilter("ignore")
    c = Collect()
    gen_truth.stdlib(c)
    codes = c.codes
    if sys.version_info >= (3, 11):
        how, table = "co_positions()", lambda co: co.co_linetable
        run = lambda co: co.co_positions()
    elif sys.version_info >= (3, 10):
        how, table = "co_lines()", lambda co: co.co_linetable
        run = lambda co: co.co_lines()
    else:
        import dis
        how, table = "dis.findlinestarts()", lambda co: co.co_lnotab
        run = dis.findlinestarts
    table_bytes = sum(len(table(co)) for co in codes)
    passes, items = 0, 0
    t0 = cpu()
    while True:
        for co in codes:
            for _ in run(co):
                items += 1
        passes += 1
        t = cpu() - t0
        if t >= MIN_SECONDS:
            break
    print("ref_how=%s ref_codes=%d ref_table_bytes=%d ref_bytes_s=%.0f ref_items_s=%.0f"
          % (how.replace(" ", ""), len(codes), table_bytes, table_bytes * passes / t, items / t))


if __name__ == "__main__":
    main()
