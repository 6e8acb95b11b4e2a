# linetable - a target that reports its own line table: the function it parks in, parked(),
# as its interpreter decodes it (co_positions() on 3.11+, co_lines() on 3.10,
# dis.findlinestarts() before), written to OUTDIR/truth.json before it parks for good.
#
#   python linetable.py OUTDIR
#
# Runs on 2.7 and 3.6+.
import dis
import json
import os
import sys
import time


def parked(out):
    x = [i * 2
         for i in range(3)]
    with open(os.path.join(out, "ready"), "w") as f:
        f.write(str(x))
    while True:
        time.sleep(
            1000)


def truth(code):
    t = {"firstlineno": code.co_firstlineno, "code_length": len(code.co_code)}
    if hasattr(code, "co_positions"):
        t["positions"] = [list(p) for p in code.co_positions()]
    if hasattr(code, "co_lines"):
        t["lines"] = [list(l) for l in code.co_lines()]
    t["starts"] = [list(s) for s in dis.findlinestarts(code)]
    return t


def main():
    out = sys.argv[1]
    code = getattr(parked, "__code__", None) or parked.func_code
    with open(os.path.join(out, "truth.json"), "w") as f:
        json.dump(truth(code), f)
    parked(out)


if __name__ == "__main__":
    main()
