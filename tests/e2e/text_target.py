# -*- coding: utf-8 -*-
# text_target - a target for test_core's text check: threads blocked on source lines that make
# tracebacks interesting (non-ASCII and double-width text, a call in the middle of a line, a
# call spanning lines, nested calls), each of which renders its own stack with CPython's
# traceback module before blocking. pyunwind's py-bt text must show the same source lines and
# carets as that rendering.
#
#   python3 text_target.py OUTDIR [park]      (Python 3.6+; started by tests/harness)
#
# Writes OUTDIR/tracebacks.json ({thread ident: [rendered frame, ...] innermost first, the
# blocking helper itself left out; "wide_aware": whether carets count double-width characters}) before the harness's OUTDIR/truth.json appears.
import json
import os
import sys
import threading
import time
import traceback

sys.dont_write_bytecode = True
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "targets"))
import pyu_truth  # noqa: E402
from pyu_truth import HOLD, arrive  # noqa: E402

_rendered = {}
_lock = threading.Lock()
ñ = "ñ"


def render(frame):
    """The frames from @frame outwards as a traceback prints them (oldest first), with the
    column range of each frame's current instruction on 3.11+ as tracebacks show it."""
    summaries = []
    while frame is not None:
        code = frame.f_code
        extra = {}
        if sys.version_info >= (3, 11):
            pos = list(code.co_positions())[frame.f_lasti // 2]
            extra = dict(end_lineno=pos[1], colno=pos[2], end_colno=pos[3])
        summaries.append(traceback.FrameSummary(code.co_filename, frame.f_lineno, code.co_name,
                                                **extra))
        frame = frame.f_back
    return traceback.StackSummary.from_list(list(reversed(summaries))).format()


def wait_here(*args):
    # The callers are suspended in the call to this function from here on, so their rendering
    # now is their rendering while blocked.
    text = render(sys._getframe(1))
    with _lock:
        _rendered[threading.current_thread().ident] = list(reversed(text))
    arrive()
    HOLD.acquire()


def call_mid_line():
    ñame = 1 + wait_here("日本語", ñ)  # コメント
    return ñame


def call_spanning_lines():
    résultat = wait_here(
        "x",
        "y")
    return résultat


def whole_line():
    wait_here()


def nested_calls():
    return len(str(wait_here(1)))


def wide_text():
    値 = {"キー": wait_here("値")}
    return 値


def indented_deeper():
    if True:
        for _ in (1,):
            while True:
                return [wait_here(ñ), "é"][0]


def annotated():
    # 3.14+ evaluate the annotations in a code object of their own, __annotate__, whose name is
    # not on its first line (the def line); older versions evaluate them here, at the def.
    def foo(a: wait_here("annotation")) -> int:
        return a
    return foo.__annotations__


SCENARIOS = (annotated, call_mid_line, call_spanning_lines, whole_line, nested_calls, wide_text,
             indented_deeper)


def main(argv):
    outdir = os.path.abspath(argv[1])
    threads = [threading.Thread(target=fn, name="text-" + fn.__name__) for fn in SCENARIOS]
    for t in threads:
        t.daemon = True
        t.start()
    while True:
        with _lock:
            if len(_rendered) == len(threads):
                break
        time.sleep(0.01)
    doc = dict((str(k), v) for k, v in _rendered.items())
    # Early 3.11 releases place carets by characters, not by terminal columns.
    doc["wide_aware"] = hasattr(traceback, "_display_width")
    pyu_truth.write_json(outdir, "tracebacks.json", doc)
    pyu_truth.start_reporter(outdir, len(threads) + 1)
    arrive()
    HOLD.acquire()


if __name__ == "__main__":
    main(sys.argv)
