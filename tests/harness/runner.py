# runner - a tiny parallel test runner for the end-to-end tests (pytest is not a dependency).
# A case is (name, callable) or (name, callable, keys): it passes when the callable returns,
# fails when it raises; @keys name the shared things it uses (harness/sharing.py).
# Output: one line per case, then "PREFIX: N passed, N failed" as tests/run_all expects.
import os
import sys
import threading
import time
import traceback
from concurrent.futures import ThreadPoolExecutor

from . import sharing
from .target import HarnessError


def run_cases(cases, jobs=2, prefix="e2e", argv=None):
    """Runs @cases at most @jobs at a time; returns the exit status (0 when all passed).
    argv (default sys.argv[1:]) may hold "-j N" and name filters (substring match). No case
    to run is one failure, never an empty pass."""
    args = list(sys.argv[1:] if argv is None else argv)
    filters = []
    while args:
        a = args.pop(0)
        if a == "-j" and args:
            jobs = int(args.pop(0))
        else:
            filters.append(a)
    if filters:
        cases = [c for c in cases if any(f in c[0] for f in filters)]
    if not cases:
        # An empty matrix or a filter that matches nothing proves nothing: a failure.
        print("FAIL %s: no cases to run (matrix: %s; filters: %s)"
              % (prefix, os.environ.get("PYUNWIND_PYTHONS") or "all", " ".join(filters) or
                 "none"))
        print("%s: 0 passed, 1 failed" % prefix)
        return 1
    sharing.plan([k for c in cases for k in (c[2] if len(c) > 2 else ())])
    lock = threading.Lock()
    counts = [0, 0]

    def one(case):
        name, fn = case[:2]
        t0 = time.time()
        try:
            fn()
            ok, msg = True, ""
        except (AssertionError, HarnessError) as e:
            ok, msg = False, str(e)
        except Exception:
            ok, msg = False, traceback.format_exc()
        with lock:
            counts[0 if ok else 1] += 1
            print("%s %s (%.1fs)%s" % ("ok  " if ok else "FAIL", name, time.time() - t0,
                                       "" if ok else "\n    " + msg.replace("\n", "\n    ")))
            sys.stdout.flush()

    try:
        with ThreadPoolExecutor(max_workers=max(1, jobs)) as pool:
            list(pool.map(one, cases))
    finally:
        sharing.close_all()
    print("%s: %d passed, %d failed" % (prefix, counts[0], counts[1]))
    return 1 if counts[1] else 0
