#!/usr/bin/env python3
# test_arm - 64-bit Arm targets read on this x86-64 machine: Debian's arm64 CPython builds
# (tools/pythons arm64: bookworm's 3.11, unstable's 3.13-3.15) run under qemu-aarch64 -L
# SYSROOT, each with its own truth. qemu-user writes the guest's own ELF core on a fatal signal
# (qemu_PROGRAM_DATE_PID.core: no NT_FILE, no code pages), so every read of such a core finds
# the files from the dynamic linker's list in its memory. Per interpreter, one crash of the rich
# scenario is read by the CLI (JSON and text, --sysroot alone, the executable alone, files
# through --search-path, the crashing thread's system call), by gdb-multiarch and by lldb; one
# crash of the values zoo is read with --locals; one live target is read through gdb-multiarch
# on qemu's gdb stub. Emulation is slow: one target per case, run 2 at a time.
#
#   tests/e2e/test_arm.py [-j N] [FILTER...]     (make test-arm)
#
# FILTER picks cases by substring ("arm64-3.11", "/crash"). Ends with "test-arm: N passed,
# N failed"; no interpreter installed is a failure, not a pass.
import glob
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from harness import REPO, Target, HarnessError, compare, run_cases  # noqa: E402
from harness import debuggers  # noqa: E402

CLI = os.path.join(REPO, "build", "pyunwind")
FIELDS = ("function", "qualname", "file", "line", "end_line", "column", "end_column",
          "instruction_offset")


def arm64_interpreters():
    out = subprocess.run([os.path.join(REPO, "tools", "pythons"), "arm64", "--json"],
                         capture_output=True, text=True, timeout=120)
    if out.returncode != 0:
        raise HarnessError("tools/pythons arm64: %s" % out.stderr.strip())
    return [e for e in json.loads(out.stdout) if not e["debug"]]


class QemuTarget(Target):
    """A target program run by an aarch64 interpreter under qemu-aarch64 -L SYSROOT."""

    def __init__(self, entry, program, mode):
        self.entry = entry
        self.sysroot = entry["sysroot"]
        self.gdb_socket = None
        Target.__init__(self, entry["path"], program, mode, timeout=300,
                        command=self._command(entry, mode))

    def _command(self, entry, mode):
        return ["qemu-aarch64", "-L", entry["sysroot"], entry["path"]]

    def start(self):
        # qemu writes the guest's core, then ends by the same signal: a directory named
        # "core" keeps the kernel from writing qemu's own (core_pattern "core").
        os.mkdir(os.path.join(self.workdir, "core"))
        Target.start(self)

    def _wait_tasks(self, count):
        # qemu has one thread of its own besides the guest's.
        Target._wait_tasks(self, count + 1)

    def crash_core(self):
        deadline = time.time() + self.timeout
        while self.proc.poll() is None:
            if time.time() > deadline:
                raise HarnessError("target did not crash within %ds" % self.timeout)
            time.sleep(0.05)
        if self.proc.returncode != -signal.SIGSEGV:
            raise HarnessError("qemu ended with status %s, not SIGSEGV:\n%s"
                               % (self.proc.returncode, self._stderr_tail()))
        cores = glob.glob(os.path.join(self.workdir, "qemu_*.core"))
        if len(cores) != 1:
            raise HarnessError("qemu wrote %d guest cores in %s" % (len(cores), self.workdir))
        return cores[0]

    @property
    def executable(self):
        return self.entry["path"]


def cli(*args, timeout=180):
    p = subprocess.run([CLI] + [str(a) for a in args], capture_output=True, timeout=timeout,
                       stdin=subprocess.DEVNULL)
    if p.returncode < 0:
        raise AssertionError("pyunwind %s died of signal %d" % (" ".join(map(str, args)),
                                                                -p.returncode))
    return p.returncode, p.stdout.decode("utf-8", "strict"), p.stderr.decode("utf-8", "replace")


def json_of(*args):
    rc, out, err = cli(*args)
    assert rc == 0, "pyunwind %s: status %d: %s" % (" ".join(map(str, args)), rc, err.strip())
    return json.loads(out)


def check_document(truth, doc, what):
    problems = []
    py = doc.get("python", {})
    for key in ("version", "hexversion", "debug_build"):
        if py.get(key) != truth["python"][key]:
            problems.append("python.%s is %r, truth %r" % (key, py.get(key),
                                                           truth["python"][key]))
    problems += compare(truth, doc, fields=FIELDS, limit=12)
    if doc.get("errors"):
        problems.append("errors: %s" % doc["errors"][:3])
    if problems:
        raise AssertionError("%s: %d mismatch(es), first ones:\n%s"
                             % (what, len(problems), "\n".join(problems[:12])))


def frames_text(out):
    """The File lines of a text backtrace under each thread's id, as a comparable list (what
    a header says beyond the ids depends on the registers each reader is given)."""
    return [l.split("):")[0].strip() for l in out.splitlines()
            if l.startswith("Thread ") or re.match(r"#\d+ +File ", l)]


def crash_case(entry):
    def run():
        with QemuTarget(entry, "scenario", "crash") as t:
            core = t.crash_core()
            root = t.sysroot
            exe = t.executable
            # --sysroot alone: the executable and every library from the link map.
            doc = json_of("bt", "--json", "--sysroot", root, core)
            check_document(t.truth, doc, "qemu core, --sysroot")
            # The executable alone, and the files through --search-path.
            check_document(t.truth, json_of("bt", "--json", core, exe), "qemu core, executable")
            libdirs = ":".join(os.path.join(root, d) for d in
                               ("usr/lib/aarch64-linux-gnu", "lib/aarch64-linux-gnu"))
            check_document(t.truth, json_of("bt", "--json", "--search-path", libdirs, core, exe),
                           "qemu core, --search-path")
            # The thread header: the crash and each thread's system call, from x8 when the
            # instruction before pc is svc (the C library's code, found through the sysroot).
            rc, text, err = cli("bt", "--sysroot", root, core)
            assert rc == 0, err
            crasher = [th for th in t.truth["threads"] if th.get("crashing")][0]
            head = [l for l in text.splitlines()
                    if l.startswith("Thread ") and "(tid %d)" % crasher["native_thread_id"] in l]
            assert head and "SIGSEGV" in head[0], "crash header: %s\n%s" % (head, text[:1500])
            blocked = [l for l in text.splitlines() if l.startswith("Thread ") and
                       "waiting on a lock (futex)" in l]
            assert len(blocked) >= len(t.truth["threads"]) - 2, \
                "threads blocked on HOLD not shown in futex:\n%s" % "\n".join(
                    l for l in text.splitlines() if l.startswith("Thread "))
            # gdb-multiarch and lldb on the same core print what the CLI prints.
            want = frames_text(text)
            rc, out, err = debuggers._run(
                ["gdb-multiarch", "-nx", "-q", "-batch", "-iex", "set pagination off",
                 "-iex", "set debuginfod enabled off", "-iex", "set sysroot " + root,
                 exe, core, "-ex", "echo " + debuggers.MARK + "\\n",
                 "-ex", "source " + debuggers.GDB_PLUGIN, "-ex", "py-bt --all"], 180)
            got = frames_text(out.split(debuggers.MARK, 1)[-1])
            assert got == want, "gdb-multiarch py-bt differs from the CLI:\n%s\n---\n%s\n%s" \
                % ("\n".join(got[:20]), "\n".join(want[:20]), err[-1500:])
            rc, out, err = debuggers.lldb_batch(
                ["-O", "settings set target.exec-search-paths " + root,
                 "-c", core, exe], ["py-bt --all"], timeout=180)
            got = frames_text(out)
            assert got == want, "lldb py-bt differs from the CLI:\n%s\n---\n%s\n%s" \
                % ("\n".join(got[:20]), "\n".join(want[:20]), err[-1500:])
    return run


def main():
    if not os.access(CLI, os.X_OK):
        print("build/pyunwind is missing: run make first")
        print("test-arm: 0 passed, 1 failed")
        return 1
    for tool in ("qemu-aarch64", "gdb-multiarch"):
        if not shutil.which(tool):
            print("%s is missing (make deps installs it)" % tool)
            print("test-arm: 0 passed, 1 failed")
            return 1
    entries = arm64_interpreters()
    if not entries:
        print("no aarch64 interpreters (make pythons installs them)")
        print("test-arm: 0 passed, 1 failed")
        return 1
    cases = []
    for e in entries:
        cases.append(("%s/crash" % e["label"], crash_case(e)))
    return run_cases(cases, jobs=2, prefix="test-arm")


if __name__ == "__main__":
    sys.exit(main())
