# memwrite - a target for memory written by a debugger (tests/e2e/test_adapters.py): one thread
# parked with a local int `x` of one 30-bit digit. The truth names the address of that digit
# (the object's address + its size - 4: the digit is the object's last 4 bytes on every 3.x
# build). When a debugger changes the digit and lets the process run, the target writes its own
# repr(x) to WORKDIR/seen.txt: what it sees after the write.
#   PYTHON memwrite.py WORKDIR MODE
import json
import os
import sys
import time


def park(outdir):
    x = 12345
    truth = {"threads": [{"thread_id": None}], "x": x,
             "digit_address": id(x) + sys.getsizeof(x) - 4}
    tmp = os.path.join(outdir, "truth.tmp")
    with open(tmp, "w") as f:
        json.dump(truth, f)
    os.rename(tmp, os.path.join(outdir, "truth.json"))
    while x == int("12345"):  # a new int: the constant 12345 is the object written
        time.sleep(0.02)
    tmp = os.path.join(outdir, "seen.tmp")
    with open(tmp, "w") as f:
        f.write(repr(x))
    os.rename(tmp, os.path.join(outdir, "seen.txt"))
    while True:
        time.sleep(3600)


park(sys.argv[1])
