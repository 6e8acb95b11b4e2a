# churn - a target that never settles, for repeated snapshots of one open process: a thread
# that keeps compiling and running new functions (gen_1, gen_2, ... each a fresh code object,
# freed once it ran, so the next one is often put at the same address) at recursion depths
# that change, threads that start and end, and memory mapped and unmapped.
#
#   python churn.py OUTDIR
#
# Writes OUTDIR/ready (its pid) once all of that runs. Runs on 2.7 and 3.6+.
import os
import sys
import threading
import time

SOURCE = ("def gen_%d(n, depth):\n"
          "    if depth:\n"
          "        return gen_%d(n, depth - 1)\n"
          "    x = 0\n"
          "    for k in range(n):\n"
          "        x += k\n"
          "    return x\n")


def compiler():
    i = 0
    while True:
        i += 1
        ns = {}
        exec(compile(SOURCE % (i, i), "<gen %d>" % i, "exec"), ns)
        ns["gen_%d" % i](3000 + (i % 5) * 1000, i % 9)


def short_lived(n):
    time.sleep(0.001 * (n % 4))


def spawner():
    n = 0
    while True:
        n += 1
        t = threading.Thread(target=short_lived, args=(n,), name="short-%d" % n)
        t.start()
        t.join()


def mapper():
    held = []
    n = 0
    while True:
        n += 1
        held.append(bytearray(300000 + 1000 * (n % 50)))  # each its own mmap
        if len(held) > 8:
            del held[:4]
        time.sleep(0.0005)


def main():
    for fn in (compiler, spawner, mapper):
        t = threading.Thread(target=fn, name=fn.__name__)
        t.daemon = True
        t.start()
    path = os.path.join(sys.argv[1], "ready")
    with open(path + ".tmp", "w") as f:
        f.write(str(os.getpid()))
    os.rename(path + ".tmp", path)
    while True:
        time.sleep(0.01)


if __name__ == "__main__":
    main()
