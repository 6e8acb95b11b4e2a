# pyapi_check - run by test_pyapi.py under each interpreter, with only the installed `pyunwind`
# package on its path: drives the API against a live process and a core and prints one JSON
# object {"live": bt document, "core": bt document, "triage": triage document,
# "problems": [...]} for the test to compare with the targets' truth and the CLI.
#
#   python pyapi_check.py PID CORE NOT_PYTHON_CORE TEXT_FILE
import dataclasses
import json
import os
import sys

import pyunwind

problems = []


def check(cond, what):
    if not cond:
        problems.append(what)


def expect_error(fn, cls, code, what):
    try:
        fn()
    except cls as e:
        check(e.code == code and e.name == cls.name and isinstance(e, pyunwind.Error) and
              str(e), "%s: %r code %r name %r" % (what, e, e.code, e.name))
        return
    except Exception as e:
        problems.append("%s: raised %r, not %s" % (what, e, cls.__name__))
        return
    problems.append("%s: no error" % what)


pid, core, foreign, text = int(sys.argv[1]), sys.argv[2], sys.argv[3], sys.argv[4]
here = os.path.dirname(os.path.abspath(pyunwind.__file__))
check(not here.startswith(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))),
      "pyunwind imported from the checkout, not the install: %s" % here)
check(pyunwind.library_path().startswith(here), "library %s not the installed one"
      % pyunwind.library_path())

def plain(snap):
    """Every field of every thread and frame, those left out of == too."""
    return [(dataclasses.astuple(th), th.exception, [f.extra for f in th.frames])
            for th in snap.threads]


def both_ways(target):
    """A snapshot with the native module and one through ctypes and JSON: the same objects."""
    check(pyunwind.native_module(), "no native module for %s" % sys.version.split()[0])
    native = target.collect()
    saved = list(pyunwind._native_state)
    pyunwind._native_state[:] = [None]
    try:
        fallback = target.collect()
    finally:
        pyunwind._native_state[:] = saved
    check(plain(native) == plain(fallback), "native and ctypes snapshots differ:\n%r\n%r"
          % (plain(native)[:2], plain(fallback)[:2]))
    return native


with pyunwind.open_process(pid) as t:
    live = both_ways(t)
check(live.crash is None, "a live process has no crash: %r" % (live.crash,))
check(all(isinstance(th, pyunwind.Thread) for th in live), "threads are Thread objects")
check(all(isinstance(f, pyunwind.Frame) for th in live.threads for f in th),
      "frames are Frame objects")
check(dataclasses.is_dataclass(pyunwind.Frame) and dataclasses.is_dataclass(pyunwind.Thread),
      "Frame and Thread are dataclasses")
for th, dt in zip(live.threads, live.document()["threads"]):
    check(th.thread_id == dt["thread_id"] and len(th.frames) == len(dt["frames"]),
          "Thread %s and its JSON agree" % th.thread_id)
    for f, df in zip(th.frames, dt["frames"]):
        check(f.line == df.get("line") and f.qualname == df.get("qualname") and
              f.frame_address == int(df.get("frame_address", df.get("address")), 16),
              "Frame and its JSON agree: %r / %r" % (f, df))
check("Thread " in live.text() and "File " in live.text(source=False),
      "text() is the bt text")

with pyunwind.open_core(core, path_maps={"/nonexistent-prefix": "/tmp"}) as t:
    snap = both_ways(t)
tri = pyunwind.triage(core)
check(snap.crash is not None and snap.crash.signal == 11 and snap.crash.signal_name == "SIGSEGV"
      and snap.crash.fault_address == 0, "crash: %r" % (snap.crash,))
check(snap.signature.hash == tri["signature"] and list(snap.signature.frames) ==
      tri["signature_frames"], "signature %r vs triage %r" % (snap.signature, tri["signature"]))
ct = snap.crash_thread
check(ct is not None and ct.thread_id == tri["crash"]["thread_id"], "crash_thread")
check(snap.python.version == tri["python"]["version"], "python version")

expect_error(lambda: pyunwind.open_core("/nonexistent/core"), pyunwind.ReadError, 2, "missing")
expect_error(lambda: pyunwind.open_core(text), pyunwind.FormatError, 4, "text file")
expect_error(lambda: pyunwind.open_core(foreign).collect(), pyunwind.NotPythonError, 5,
             "not Python")
bad = pyunwind.triage(text)
check(bad["ok"] is False and bad["error"]["code"] == 4 and bad["path"] == text,
      "triage of a text file: %r" % bad)

json.dump({"live": live.document(), "core": snap.document(), "triage": tri,
           "problems": problems}, sys.stdout)
