# sample - a small multi-threaded program for `make demo` and the golden-text tests.
#
#   python sample.py OUTDIR [park|crash]
#
# A main thread and two workers, each blocked for good at a fixed line; OUTDIR/truth.json is
# written when all sit still (see pyu_truth.py). Runs on 2.7 and 3.6+. Keep it small and
# stable: golden files depend on its lines.
import os
import sys

sys.dont_write_bytecode = True
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import pyu_truth  # noqa: E402
from pyu_truth import HOLD, arrive  # noqa: E402


class Worker(object):
    def run(self):
        self.step(3)

    def step(self, n):
        if n == 0:
            arrive()
            HOLD.acquire()
        else:
            self.step(n - 1)


def handle_request(request):
    arrive()
    HOLD.acquire()


def serve_requests():
    handle_request({"path": "/"})


def wait_for_shutdown():
    arrive()
    HOLD.acquire()


def main(argv):
    outdir = os.path.abspath(argv[1])
    mode = argv[2] if len(argv) > 2 else "park"
    pyu_truth.start(outdir, mode, [("worker", Worker().run, ()),
                                   ("server", serve_requests, ())])
    wait_for_shutdown()


if __name__ == "__main__":
    main(sys.argv)
