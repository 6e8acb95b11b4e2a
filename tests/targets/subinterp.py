# subinterp - one OS thread through several interpreters (3.12+), for tests/e2e/test_subinterp.py:
#   main thread:  main() -> enter() -> sub-interpreter A: a_park()   blocked reading a pipe
#   worker:       worker() -> enter() -> sub-interpreter B: b_park()
#   nested:       nested() -> enter() -> sub-interpreter C: c_outer() -> enter() ->
#                 sub-interpreter D: d_park()
# 3.12 runs code in an interpreter with _xxsubinterpreters.run_string, 3.13 with
# _interpreters.exec, 3.14+ with concurrent.interpreters. Each parked function writes one byte
# to a "ready" pipe; the reporter thread then polls each thread's /proc syscall until it sits in
# read(2), and writes OUTDIR/truth.json: {"threads": {name: native tid}, "interpreters": {...}}.
#
#   python subinterp.py OUTDIR [park]
import json
import os
import sys
import threading

PARK = '''
import os
def {name}():
    os.write({ready}, b"x")
    os.read({block}, 1)
{name}()
'''

NESTED = '''
import os
{imports}
def c_outer():
    run(new(), {inner!r})
c_outer()
'''

if sys.version_info >= (3, 14):
    IMPORTS = ("from concurrent import interpreters\n"
               "new = interpreters.create\n"
               "def run(i, code): i.exec(code)\n")
elif sys.version_info >= (3, 13):
    IMPORTS = ("import _interpreters\n"
               "new = _interpreters.create\n"
               "def run(i, code): _interpreters.exec(i, code)\n")
else:
    IMPORTS = ("import _xxsubinterpreters\n"
               "new = _xxsubinterpreters.create\n"
               "def run(i, code): _xxsubinterpreters.run_string(i, code)\n")
namespace = {}
exec(IMPORTS, namespace)
new, run = namespace["new"], namespace["run"]


def interp_id(i):
    return int(getattr(i, "id", i))


tids = {}
interps = {}


def enter(name, interp, code):
    tids[name] = threading.get_native_id()
    run(interp, code)


def worker(interp, code):
    enter("worker", interp, code)


def nested(interp, code):
    enter("nested", interp, code)


def main(argv):
    outdir = os.path.abspath(argv[1])
    ready_r, ready_w = os.pipe()
    block_r, block_w = os.pipe()  # nobody writes: every reader parks for good
    a, b, c = new(), new(), new()
    interps.update(main=interp_id(a), worker=interp_id(b), nested=interp_id(c))
    park = lambda name: PARK.format(name=name, ready=ready_w, block=block_r)  # noqa: E731
    nested_code = NESTED.format(imports=IMPORTS, inner=park("d_park"))
    threading.Thread(target=worker, args=(b, park("b_park")), daemon=True).start()
    threading.Thread(target=nested, args=(c, nested_code), daemon=True).start()

    def reporter():
        for _ in range(3):
            os.read(ready_r, 1)
        for name, tid in list(tids.items()):
            for _ in range(100000):  # poll until the thread sits in read(2)
                with open("/proc/self/task/%d/syscall" % tid) as f:
                    if f.read().split()[0] == "0":
                        break
        doc = {"pyunwind_truth": 1, "pid": os.getpid(), "threads": tids,
               "interpreters": interps, "python": {"hexversion": sys.hexversion}}
        tmp = os.path.join(outdir, "truth.json.tmp")
        with open(tmp, "w") as f:
            json.dump(doc, f)
        os.rename(tmp, os.path.join(outdir, "truth.json"))

    threading.Thread(target=reporter, daemon=True).start()
    enter("main", a, park("a_park"))


if __name__ == "__main__":
    main(sys.argv)
