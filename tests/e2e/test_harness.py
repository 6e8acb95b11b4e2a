#!/usr/bin/env python3
# test_harness - the end-to-end harness' own tests: on every interpreter of the matrix, the
# target programs start and report truth that holds every scenario, and gdb cores and kernel
# crash cores are produced. Run: tests/e2e/test_harness.py [-j N] [NAME-FILTER...]
import os
import re
import struct
import sys
import threading

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import tempfile  # noqa: E402

from harness import (Target, HarnessError, compare, gdb_batch, lldb_batch,  # noqa: E402
                     run_cases, selected, task_ids, wait_asleep)
from harness.target import pyu_clock  # noqa: E402

SCENARIOS_ALL = ["recursion", "generator", "nested-class", "lambda", "comprehension",
                 "c-between", "exec", "except", "settrace", "trace-loop", "long-lines"]
SCENARIOS_PY3 = ["asyncio", "unicode-name", "unicode-file"]


def source_line(path, line):
    try:
        with open(path, encoding="utf-8") as f:
            for i, text in enumerate(f, 1):
                if i == line:
                    return text.rstrip("\n")
    except OSError:
        return None
    return None


def functions(thread):
    return [f["function"] for f in thread["frames"]]


def check(cond, msg):
    if not cond:
        raise AssertionError(msg)


def check_elf_core(path):
    check(os.path.getsize(path) > 0, "%s is empty" % path)
    with open(path, "rb") as f:
        hdr = f.read(20)
    check(hdr[:4] == b"\x7fELF", "%s is not an ELF file" % path)
    check(struct.unpack_from("<H", hdr, 16)[0] == 4, "%s is not an ELF core (e_type)" % path)


def check_scenario_truth(py, t):
    truth = t.truth
    by = dict((th["scenario"], th) for th in truth["threads"] if th.get("scenario"))
    want = SCENARIOS_ALL + (SCENARIOS_PY3 if py.minor != "2.7" else [])
    missing = [s for s in want if s not in by]
    check(not missing, "scenario threads missing from the truth: %s" % missing)
    check(truth["python"]["version"] == py.version,
          "truth says %s, matrix says %s" % (truth["python"]["version"], py.version))
    check(truth["python"]["debug_build"] == py.debug, "debug_build disagrees with the matrix")
    check(len(truth["threads"]) >= 10, "only %d threads" % len(truth["threads"]))
    main = [th for th in truth["threads"] if th["thread_id"] == truth["main_thread_id"]]
    check(main and main[0]["frames"][0]["function"] == "main_blocks",
          "main thread not parked in main_blocks")
    for name in want:
        th = by[name]
        top = th["frames"][0]
        if top["file"] == "<pyunwind-exec>":
            continue
        text = source_line(top["file"], top["line"])
        check(text is not None and "HOLD.acquire()" in text,
              "%s: top frame %s at %s:%s is %r, not the blocking call"
              % (name, top["function"], top["file"], top["line"], text))
    rec = functions(by["recursion"]).count("recurse")
    check(rec >= 1000, "recursion only %d deep" % rec)
    check(by["long-lines"]["frames"][0]["line"] > 65535, "long-lines not past 65,535")
    check(all(f["traced"] for f in by["settrace"]["frames"][:2]),
          "settrace frames have no trace function")
    loop = by["trace-loop"]["frames"]
    check([f["function"] for f in loop[:2]] == ["_loop_tracer", "looped"] and loop[1]["traced"],
          "trace-loop stack is %s" % functions(by["trace-loop"])[:3])
    check(functions(by["c-between"])[:2] == ["key_blocks", "run_c_between"],
          "c-between stack is %s" % functions(by["c-between"])[:3])
    comp = functions(by["comprehension"])[0]
    # Python 2 list comprehensions run in their function's frame; 3.12+ inlines them again.
    inlined = py.minor == "2.7" or tuple(map(int, py.minor.split("."))) >= (3, 12)
    check(comp == ("run_comprehension" if inlined else "<listcomp>"),
          "comprehension top frame is %s" % comp)
    check(functions(by["generator"])[:2] == ["gen_blocks", "run_generator"],
          "generator stack is %s" % functions(by["generator"])[:3])
    check(functions(by["lambda"])[0] == "<lambda>", "lambda frame missing")
    check(functions(by["except"])[0] == "run_except", "except frame missing")
    check(by["exec"]["frames"][0]["file"] == "<pyunwind-exec>", "exec frame file")
    nested = by["nested-class"]["frames"][0]
    check(nested["function"] == "method", "nested-class top is %s" % nested["function"])
    has_positions = py.minor != "2.7" and tuple(map(int, py.minor.split("."))) >= (3, 11)
    if has_positions:
        check(nested["qualname"] == "Outer.Inner.method", "qualname %s" % nested["qualname"])
    if py.minor != "2.7":
        check(functions(by["asyncio"])[:3] == ["coro_inner", "coro_middle", "coro_outer"],
              "asyncio stack is %s" % functions(by["asyncio"])[:4])
        check(functions(by["unicode-name"])[0] == u"\u00fcn\u00efcode_\u51fd\u6570",
              "unicode-name top is %r" % functions(by["unicode-name"])[0])
        top = by["unicode-file"]["frames"][0]
        check(os.path.basename(top["file"]) == u"mod\u00fcl\u00e9_\u0444\u0430\u0439\u043b.py",
              "unicode-file file is %r" % top["file"])
    check_common(py, t)


def check_common(py, t):
    has_positions = py.minor != "2.7" and tuple(map(int, py.minor.split("."))) >= (3, 11)
    for th in t.truth["threads"]:
        for i, f in enumerate(th["frames"]):
            check(f["instruction_offset"] >= 0, "negative f_lasti in %s" % f["function"])
            if has_positions:
                check(f["positions"] is not None and f["qualname"] is not None,
                      "3.11+ frame %s without positions/qualname" % f["function"])
                if not f["traced"]:
                    check(f["positions"][0] == f["line"],
                          "%s #%d %s: positions line %s != f_lineno %s"
                          % (th["name"], i, f["function"], f["positions"][0], f["line"]))
            else:
                check(f["positions"] is None and f["qualname"] is None,
                      "pre-3.11 frame with positions/qualname")
        if py.minor not in ("2.7", "3.6", "3.7"):
            check(th["native_thread_id"] is not None, "no native id for %s" % th["name"])


def case_live(py):
    def run():
        with Target(py, "scenario") as t:
            check_scenario_truth(py, t)
            tids = task_ids(t.pid)
            check(len(tids) == len(t.truth["threads"]), "task count != truth thread count")
            for th in t.truth["threads"]:
                if th["native_thread_id"] is not None:
                    check(th["native_thread_id"] in tids,
                          "native id %s not a task of %d" % (th["native_thread_id"], t.pid))
            with t.stopped():
                check(t.proc.poll() is None, "target died while stopped")
            check_elf_core(t.gcore())
            check(t.proc.poll() is None, "target died after gcore")
    return run


def case_crash(py, program):
    def run():
        with Target(py, program, mode="crash") as t:
            core = t.crash_core()
            check_elf_core(core)
            truth = t.truth
            crash = [th for th in truth["threads"] if th.get("crashing")]
            check(len(crash) == 1 and crash[0]["thread_id"] == truth["crash_thread_id"],
                  "no single crashing thread in the truth")
            top = crash[0]["frames"][0]
            text = source_line(top["file"], top["line"])
            check(top["function"] == "crash_point" and text and "ctypes.memset" in text,
                  "crash frame at %s:%s %r" % (top["file"], top["line"], text))
            if top["positions"] is not None:
                seg = text[top["column"]:top["end_column"]]
                check(seg.startswith("ctypes.memset("), "crash call position covers %r" % seg)
            if program == "scenario":
                check_scenario_truth(py, t)
            else:
                check_common(py, t)
                names = sorted(th["name"] for th in truth["threads"])
                check(names == ["MainThread", "scenario-crash", "scenario-server",
                                "scenario-worker"], "sample threads are %s" % names)
    return run


def as_document(truth):
    """The truth in the shape of pyunwind's JSON, as a perfect unwinder would print it."""
    return {"pyunwind": 1, "threads": [
        {"thread_id": th["thread_id"], "native_thread_id": th["native_thread_id"],
         "frames": [dict(f, kind="python") for f in th["frames"]]} for th in truth["threads"]]}


def case_compare(py):
    def run():
        with Target(py, "sample") as t:
            truth = t.truth
        doc = as_document(truth)
        check(compare(truth, doc) == [], "truth differs from itself: %s" % compare(truth, doc))
        doc["threads"][0]["frames"][1]["line"] += 1
        diff = compare(truth, doc)
        check(len(diff) == 1 and "line" in diff[0], "one wrong line gives %s" % diff)
        doc = as_document(truth)
        doc["threads"][0]["frames"].insert(0, {"kind": "error", "reason": "test"})
        diff = compare(truth, doc)
        check(len(diff) == 1 and "kind error" in diff[0] and "test" in diff[0],
              "a stray error frame is not reported: %s" % diff)
        check(compare(truth, doc, allow_kinds=("error",)) == [],
              "an allowed kind is still compared")
        doc["threads"][0]["frames"].pop(0)
        doc["threads"][0]["frames"].append({"kind": "native", "function": "x"})
        check(len(compare(truth, doc)) == 1, "a stray native frame is not reported")
        doc["threads"][0]["frames"].pop()
        del doc["threads"][1]["frames"][-1]
        diff = compare(truth, doc)
        check(any("frames" in d for d in diff), "a lost frame is not reported: %s" % diff)
        del doc["threads"][2]
        check(any("missing" in d for d in compare(truth, doc)), "a lost thread is not reported")
    return run


def case_debuggers(py):
    # The plumbing alone, with empty plugins: both debuggers see every thread of the target
    # live and in its gdb core.
    def run():
        tmp = tempfile.mkdtemp(prefix="pyu-plugins-")
        gdb_plugin = os.path.join(tmp, "gdb_empty.py")
        lldb_plugin = os.path.join(tmp, "lldb_empty.py")
        with open(gdb_plugin, "w") as f:
            f.write("import gdb\n")
        with open(lldb_plugin, "w") as f:
            f.write("def __lldb_init_module(debugger, internal_dict):\n    pass\n")
        try:
            with Target(py, "sample") as t:
                n = len(t.truth["threads"])
                core = t.gcore()
                for args in (["-p", str(t.pid)], [t.executable, core]):
                    rc, out, err = gdb_batch(args, ["info threads"], plugin=gdb_plugin)
                    got = len([l for l in out.splitlines() if " Thread 0x" in l or " LWP " in l])
                    check(rc == 0 and got == n, "gdb %s: %d threads of %d, status %d:\n%s%s"
                          % (args[0], got, n, rc, out, err))
                with t.gdbserver() as address:
                    rc, out, err = gdb_batch([t.executable, "-ex", "target remote " + address],
                                             ["info threads"], plugin=gdb_plugin)
                    got = len([l for l in out.splitlines() if " Thread " in l])
                    check(got == n, "gdbserver: %d threads of %d, status %d:\n%s%s"
                          % (got, n, rc, out, err))
                check(t.proc.poll() is None, "target died with gdbserver")
                for args in (["-p", str(t.pid)], ["-c", core, t.executable]):
                    rc, out, err = lldb_batch(args, ["thread list"], plugin=lldb_plugin)
                    got = len([l for l in out.splitlines() if l.lstrip("* ").startswith("thread #")])
                    check(rc == 0 and got == n, "lldb %s: %d threads of %d, status %d:\n%s%s"
                          % (args[0], got, n, rc, out, err))
        finally:
            import shutil
            shutil.rmtree(tmp, ignore_errors=True)
    return run


def case_install(py):
    # make install's tree works on its own: the installed CLI and both installed adapters
    # (which can only find the installed library) show the sample's stacks.
    def run():
        import shutil
        import subprocess
        from harness import REPO
        prefix = tempfile.mkdtemp(prefix="pyu-prefix-")
        try:
            out = subprocess.run([os.path.join(REPO, "tools", "install"), prefix],
                                 capture_output=True, text=True, timeout=60)
            check(out.returncode == 0, "tools/install failed: %s" % out.stderr)
            share = os.path.join(prefix, "share", "pyunwind")
            gdb_line = "source %s/gdb/pyunwind.py" % share
            lldb_line = "command script import %s/lldb/pyunwind.py" % share
            check(gdb_line in out.stdout and lldb_line in out.stdout,
                  "install does not print the init lines:\n" + out.stdout)
            # The installed tree alone: no PYUNWIND_LIB for the children (os.environ itself is
            # left alone; other cases run concurrently).
            no_lib = {"PYUNWIND_LIB": None}
            with Target(py, "sample") as t:
                cli = subprocess.run([os.path.join(prefix, "bin", "pyunwind"), "bt", "--all",
                                      str(t.pid)], capture_output=True, text=True, timeout=60)
                check(cli.returncode == 0 and "wait_for_shutdown" in cli.stdout,
                      "installed CLI: status %d\n%s%s" % (cli.returncode, cli.stdout, cli.stderr))
                rc, text, err = gdb_batch(["-p", str(t.pid)], ["py-bt --all"],
                                          plugin=os.path.join(share, "gdb", "pyunwind.py"),
                                          env=no_lib)
                check("wait_for_shutdown" in text and "handle_request" in text,
                      "installed gdb adapter:\n%s%s" % (text, err))
                rc, text, err = lldb_batch(["-p", str(t.pid)], ["py-bt --all"],
                                           plugin=os.path.join(share, "lldb", "pyunwind.py"),
                                           env=no_lib)
                check("wait_for_shutdown" in text and "handle_request" in text,
                      "installed lldb adapter:\n%s%s" % (text, err))
        finally:
            shutil.rmtree(prefix, ignore_errors=True)
    return run


STUCK = {"blocked": "import time\ntime.sleep(10 ** 6)\n",
         "spinning": "while True:\n    pass\n"}


def case_stuck(py, kind):
    """A target that never reports: the wait for its truth, measured in the target's own time
    so that a loaded machine does not end it early, still ends - after its timeout when the
    target is blocked, after the wall-clock ceiling at the latest - with a failure."""
    def run():
        import time
        work = tempfile.mkdtemp(prefix="pyu-stuck-")
        program = os.path.join(work, "stuck.py")
        with open(program, "w") as f:
            f.write(STUCK[kind])
        timeout = 5
        limit = pyu_clock.CEILING * timeout + 10
        outcome = []

        def attempt():
            try:
                with Target(py, program, timeout=timeout):
                    outcome.append(None)
            except HarnessError as e:
                outcome.append(e)
        t0 = time.time()
        waiter = threading.Thread(target=attempt)
        waiter.daemon = True  # a wait that never ends must not keep the run from ending
        try:
            waiter.start()
            waiter.join(limit)
            took = time.time() - t0
            check(outcome, "the wait for a stuck target's truth did not end within %d s" % limit)
            check(outcome[0] is not None, "a target that never reports was taken as ready")
            check("no truth within %ds" % timeout in str(outcome[0]),
                  "wrong failure: %s" % outcome[0])
            if kind == "blocked":
                # Blocked, it waits for no CPU: its own time is the wall-clock time.
                check(took < 2 * timeout + 5, "a blocked target took %.0f s to give up on"
                      % took)
        finally:
            import shutil
            shutil.rmtree(work, ignore_errors=True)
    return run


def case_hung_debugger():
    """A debugger that never answers: the harness gives up after its timeout, kills it, and
    says what it was stuck in - each thread's wait channel and gdb's backtrace (the way
    test-locals' lldb hang was found: lldb's abort handler waiting on malloc's lock)."""
    def run():
        import subprocess
        import time
        from harness import debuggers
        # The timeout: the message, and the process gone. (What it was doing then may be
        # lldb's own start-up on a loaded machine.)
        tmp = tempfile.mkdtemp(prefix="pyu-hung-")
        asleep = os.path.join(tmp, "asleep")
        plugin = os.path.join(tmp, "lldb_empty.py")
        with open(plugin, "w") as f:
            f.write("def __lldb_init_module(debugger, internal_dict):\n    pass\n")
        cmd = debuggers.lldb_cmd([], ["script import time; open(%r, 'w').close(); "
                                      "time.sleep(10 ** 6)" % asleep], plugin=plugin)
        try:
            t0 = time.time()
            try:
                debuggers._run(cmd, 3)
                check(False, "lldb sleeping for good was taken as an answer")
            except HarnessError as e:
                msg = str(e)
            check("gave no answer within 3s; it was doing:\n  thread " in msg,
                  "wrong failure: %s" % msg)
            check(time.time() - t0 < 3 + 60 + 30, "the hung debugger was not ended in time")
            # What it says of a debugger known to be stuck: lldb asleep in a command (the
            # marker is the new lldb's: the first may have got as far).
            if os.path.exists(asleep):
                os.unlink(asleep)
            p = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                 stderr=subprocess.DEVNULL)
            try:
                deadline = time.time() + 120
                while not os.path.exists(asleep) and time.time() < deadline and \
                        p.poll() is None:
                    time.sleep(0.05)
                check(os.path.exists(asleep), "lldb never ran the sleeping command")
                wait_asleep(p.pid)
                doing = debuggers.what_it_does(p.pid)
            finally:
                p.kill()
                p.wait()
            check(re.search(r"(?m)^  thread %d \S+: state S, waits in \S+$" % p.pid,
                            doing), "no state of lldb's main thread in:\n%s" % doing)
            check(re.search(r"(?m)^  #\d+ .*nanosleep", doing),
                  "no backtrace of the sleep in:\n%s" % doing)
        finally:
            import shutil
            shutil.rmtree(tmp, ignore_errors=True)
    return run


def main():
    pys = selected()
    if not pys:
        print("no interpreters found (run make pythons)")
        print("test-harness: 0 passed, 1 failed")
        return 1
    cases = []
    for py in pys:
        cases.append(("live+gcore %s" % py.label, case_live(py)))
        cases.append(("crash-core %s" % py.label, case_crash(py, "scenario")))
        cases.append(("crash-core sample %s" % py.label, case_crash(py, "sample")))
    cases.append(("compare %s" % pys[-1].label, case_compare(pys[-1])))
    cases.append(("debuggers %s" % pys[-1].label, case_debuggers(pys[-1])))
    cases.append(("install %s" % pys[-1].label, case_install(pys[-1])))
    cases.append(("hung debugger", case_hung_debugger()))
    for kind in sorted(STUCK):
        cases.append(("stuck %s %s" % (kind, pys[-1].label), case_stuck(pys[-1], kind)))
    return run_cases(cases, jobs=2, prefix="test-harness")


if __name__ == "__main__":
    sys.exit(main())
