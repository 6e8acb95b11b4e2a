# deep - the target of the deep-stack tests (tests/e2e/test_deep.py).
#
#   python deep.py OUTDIR [park|crash]
#
# A thread recurses until its stack is DEPTH Python frames deep (far past the 10,000 frames
# pyunwind used to stop at), in two runs of repeated frames broken by one other frame, so that
# the traceback module folds them twice. At the bottom it writes OUTDIR/truth.json: every frame
# of its stack as traceback.extract_stack() gives them (outermost first), the text
# traceback.format_stack() makes of them (folded or not, as this version's traceback folds; the
# innermost frame's line is the one it then stays on, marked in this file), and
# both threads' kernel ids; then it sleeps for good (park) or crashes in ctypes.memset(0, 0, 1)
# (crash). The main thread waits in join(). Runs on 2.7 and 3.6+; up to 3.10 every Python call
# is a C call too, so the thread gets a C stack big enough for all of them.
import ctypes
import os
import sys
import threading
import time
import traceback

sys.dont_write_bytecode = True
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import pyu_truth  # noqa: E402

DEPTH = 30005  # Python frames of the deep thread, its entry frames included
BREAK_AT = 12000  # the first run of repeated frames ends this many frames from the bottom
STATE = {}


def marked_line(mark):
    """The number of the line of this file that ends with the comment "# @mark"."""
    with open(os.path.abspath(__file__.replace(".pyc", ".py"))) as f:
        for number, line in enumerate(f, 1):
            if line.rstrip().endswith("# " + mark):
                return number
    raise RuntimeError("no line marked " + mark)


def bottom():
    stack = traceback.extract_stack()
    frames = [[f[0], f[1], f[2]] for f in stack]  # (filename, lineno, name) on every version
    # This frame goes on to where it stays: that line, not the one taken above.
    frames[-1][1] = marked_line("CRASH" if STATE["mode"] == "crash" else "PARK")
    pyu_truth.write_json(STATE["outdir"], "truth.json", {
        "pid": os.getpid(),
        "threads": [{"native_thread_id": STATE["main_tid"], "scenario": "main"},
                    {"native_thread_id": pyu_truth.native_id(), "scenario": "deep",
                     "frames": frames, "format_stack": "".join(traceback.format_stack())}]})
    if STATE["mode"] == "crash":
        ctypes.memset(0, 0, 1)  # CRASH
    while True:
        time.sleep(1000)  # PARK


def other(n):
    return descend(n - 1)  # one frame that breaks the run of descend() frames


def descend(n):
    if n == 0:
        return bottom()
    if n == BREAK_AT:
        return other(n)
    return descend(n - 1)


def run():
    # The frames below descend(): this function, Thread.run, _bootstrap_inner, _bootstrap
    # (on every version), and bottom() itself above them.
    below = len(traceback.extract_stack())
    descend(DEPTH - below - 3)  # n = k .. 0: k + 1 frames, then other() and bottom()


def main(argv):
    STATE["outdir"] = os.path.abspath(argv[1])
    STATE["mode"] = argv[2] if len(argv) > 2 else "park"
    STATE["main_tid"] = pyu_truth.native_id()
    sys.setrecursionlimit(DEPTH + 1000)
    threading.stack_size(64 << 20)  # up to 3.10 the thread uses 10 - 20 MB
    t = threading.Thread(target=run, name="deep")
    t.daemon = True
    t.start()
    t.join()


if __name__ == "__main__":
    main(sys.argv)
