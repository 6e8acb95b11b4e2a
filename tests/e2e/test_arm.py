#!/usr/bin/env python3
# test_arm - 64-bit Arm targets read on this x86-64 machine: Debian's arm64 CPython builds
# (tools/pythons arm64: bookworm's 3.11, unstable's 3.13-3.15 and the 3.14 debug build) run
# under qemu-aarch64 -L SYSROOT, each with its own truth. qemu-user writes the guest's own ELF
# core on a fatal signal (qemu_PROGRAM_DATE_PID.core: no NT_FILE, no code pages), so every read
# of such a core finds the files from the dynamic linker's list in its memory. Per build, one
# crash of the rich scenario serves every check: the CLI (JSON and text, --sysroot alone, the
# executable alone, files through --search-path, memory alone, triage, the crashing thread's
# system call, native frames merged through elfutils' aarch64 unwinder past signed return
# addresses, every native frame equal to gdb-multiarch's bt of a copy carrying the kernel's
# NT_ARM_PAC_MASK), gdb-multiarch and lldb; for 3.14, pyunwind cross-built for aarch64 and run
# under qemu reads the core as this build does. One live target (3.11 and 3.14) is read through
# gdb-multiarch on qemu's gdb stub; the values zoo (3.13), the locals zoo (3.14) and the tasks
# zoo (3.15) crash once each and are read by the CLI, gdb-multiarch and lldb as test-values,
# test-locals and test-tasks read kernel cores. Emulation is slow: one target per case, run 2
# at a time.
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
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))  # test_values, test_tasks
from harness import (REPO, Target, HarnessError, compare, interpreters,  # noqa: E402
                     run_cases)
from harness import debuggers  # noqa: E402

CLI = os.path.join(REPO, "build", "pyunwind")
FIELDS = ("function", "qualname", "file", "line", "end_line", "column", "end_column",
          "instruction_offset")


def arm64_interpreters():
    out = subprocess.run([os.path.join(REPO, "tools", "pythons"), "arm64", "--json"],
                         capture_output=True, text=True, timeout=120)
    if out.returncode != 0:
        raise HarnessError("tools/pythons arm64: %s" % out.stderr.strip())
    return json.loads(out.stdout)


class QemuTarget(Target):
    """A target program run by an aarch64 interpreter under qemu-aarch64 -L SYSROOT."""

    def __init__(self, entry, program, mode):
        self.entry = entry
        self.sysroot = entry["sysroot"]
        self.gdb_socket = None
        # qemu has one thread of its own besides the guest's, in the guest's /proc/self/task.
        Target.__init__(self, entry["path"], program, mode, timeout=300,
                        command=self._command(entry, mode), env={"PYU_TRUTH_HOST_TASKS": "1"})

    def _command(self, entry, mode):
        if mode == "park":
            # Live: qemu's gdb stub on a Unix socket (no network); the guest waits for gdb.
            return ["qemu-aarch64", "-g", os.path.join(self.workdir_for_socket(), "gdb.sock"),
                    "-L", entry["sysroot"], entry["path"]]
        return ["qemu-aarch64", "-L", entry["sysroot"], entry["path"]]

    def workdir_for_socket(self):
        if not hasattr(self, "_sockdir"):
            import tempfile
            self._sockdir = tempfile.mkdtemp(prefix="pyu-gdbstub-")
        return self._sockdir

    def _wait_truth(self):
        if self.mode == "park":
            self._start_gdb()
        return Target._wait_truth(self)

    def _start_gdb(self):
        """gdb-multiarch on the stub: it lets the guest run to its truth, then (once the
        test interrupts qemu with SIGINT, which the stub reports as a stop) reads it."""
        sock = os.path.join(self.workdir_for_socket(), "gdb.sock")
        deadline = time.time() + 60
        while not os.path.exists(sock):
            if time.time() > deadline or self.proc.poll() is not None:
                raise HarnessError("qemu made no gdb socket:\n%s" % self._stderr_tail())
            time.sleep(0.05)
        root = self.sysroot
        cmd = ["gdb-multiarch", "-nx", "-q", "-batch", "-iex", "set pagination off",
               "-iex", "set debuginfod enabled off", "-iex", "set sysroot " + root,
               "-ex", "file " + self.entry["path"],
               "-ex", "target remote | socat - UNIX-CONNECT:" + sock,
               "-ex", "continue", "-ex", "source " + debuggers.GDB_PLUGIN,
               "-ex", "echo " + debuggers.MARK + "\\n", "-ex", "py-bt --all --json",
               "-ex", "echo " + debuggers.MARK + "\\n", "-ex", "py-bt --all --native",
               "-ex", "echo " + debuggers.MARK + "\\n", "-ex", "kill"]
        self.gdb = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                    stderr=subprocess.PIPE)

    def gdb_reads(self):
        """Stops the guest (SIGINT to qemu: the stub reports it to gdb) and returns what gdb
        printed: (py-bt --all --json, py-bt --all --native, stderr)."""
        os.kill(self.proc.pid, signal.SIGINT)
        try:
            out, err = self.gdb.communicate(timeout=self.timeout)
        except subprocess.TimeoutExpired:
            self.gdb.kill()
            out, err = self.gdb.communicate()
            raise HarnessError("gdb-multiarch gave no answer:\n%s\n%s"
                               % (out.decode(errors="replace")[-2000:],
                                  err.decode(errors="replace")[-2000:]))
        parts = out.decode("utf-8", "replace").split(debuggers.MARK)
        if len(parts) < 4:
            raise HarnessError("gdb-multiarch output cut short:\n%s\n%s"
                               % (out.decode(errors="replace")[-3000:],
                                  err.decode(errors="replace")[-2000:]))
        return parts[1].strip(), parts[2], err.decode("utf-8", "replace")

    def close(self):
        gdb = getattr(self, "gdb", None)
        if gdb is not None and gdb.poll() is None:
            gdb.kill()
            gdb.wait()
        Target.close(self)
        if hasattr(self, "_sockdir"):
            shutil.rmtree(self._sockdir, ignore_errors=True)

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


def add_pac_mask_notes(src, dst, mask):
    """Copies the ELF core @src to @dst with an NT_ARM_PAC_MASK note ({data mask, code mask},
    as an arm64 kernel writes it) after each thread's NT_PRSTATUS: the note segment is written
    anew at the end of the file. qemu-user's cores have none, and gdb, told by the auxiliary
    vector that the process signs pointers, stops every backtrace without it ("Register 69
    is not available"). Returns how many notes were added."""
    import struct
    with open(src, "rb") as f:
        data = bytearray(f.read())
    phoff, = struct.unpack_from("<Q", data, 32)
    phnum, = struct.unpack_from("<H", data, 56)
    notes_at = [phoff + 56 * i for i in range(phnum)
                if struct.unpack_from("<I", data, phoff + 56 * i)[0] == 4]  # PT_NOTE
    assert len(notes_at) == 1, "%s: %d note segments" % (src, len(notes_at))
    _, _, off, _, _, filesz = struct.unpack_from("<IIQQQQ", data, notes_at[0])
    pac = struct.pack("<III", 6, 16, 0x406) + b"LINUX\0\0\0" + struct.pack("<QQ", mask, mask)
    notes, at, added = bytearray(), off, 0
    while at + 12 <= off + filesz:
        namesz, descsz, ntype = struct.unpack_from("<III", data, at)
        size = 12 + ((namesz + 3) & ~3) + ((descsz + 3) & ~3)
        notes += data[at:at + size]
        if ntype == 1 and data[at + 12:at + 16] == b"CORE":  # NT_PRSTATUS
            notes += pac
            added += 1
        at += size
    data += bytes(-len(data) % 8)
    struct.pack_into("<Q", data, notes_at[0] + 8, len(data))
    struct.pack_into("<QQ", data, notes_at[0] + 32, len(notes), len(notes))
    data += notes
    with open(dst, "wb") as f:
        f.write(data)
    return added


# The kernel's mask with 48-bit virtual addresses: bits 48-54 (bit 55 tells user from kernel).
PAC_MASK_48 = 0x007f000000000000


def native_pcs(doc):
    """Each thread's native frames (pcs, innermost first) of a `bt --native-all --json`."""
    return dict((t["native_thread_id"], [int(f["pc"], 16) for f in t["frames"]
                                         if f["kind"] == "native"]) for t in doc["threads"])


def gdb_multiarch(entry, exe, core, commands, timeout=180):
    """gdb-multiarch on an aarch64 core with the sysroot (and the interpreter's extension
    modules, which the guest named by their paths here: gdb would look for them under the
    sysroot again); returns the output of each of @commands. gdb is kept from the sysroot's
    separate debug files (Debian's -dbg packages ship the release build's): it unwinds by the
    same call-frame information the CLI has, and loading them took 30 s here."""
    root = entry["sysroot"]
    dynload = os.path.join(root, "usr", "lib", "python" + entry["minor"], "lib-dynload")
    cmd = ["gdb-multiarch", "-nx", "-q", "-batch", "-iex", "set pagination off",
           "-iex", "set debuginfod enabled off", "-iex", "set sysroot " + root,
           "-iex", "set debug-file-directory " + os.path.join(root, "nonexistent"),
           "-iex", "set solib-search-path " + dynload, exe, core,
           "-ex", "source " + debuggers.GDB_PLUGIN]
    for c in commands:
        cmd += ["-ex", "echo " + debuggers.MARK + "\\n", "-ex", c]
    cmd += ["-ex", "echo " + debuggers.MARK + "\\n"]
    p = subprocess.run(cmd, capture_output=True, timeout=timeout, stdin=subprocess.DEVNULL)
    parts = p.stdout.decode("utf-8", "replace").split(debuggers.MARK + "\n")
    if len(parts) < len(commands) + 2:
        raise AssertionError("gdb-multiarch did not run every command:\n%s\n%s"
                             % (p.stdout.decode(errors="replace")[-3000:],
                                p.stderr.decode(errors="replace")[-2000:]))
    return parts[1:len(commands) + 1], p.stderr.decode("utf-8", "replace")


def lldb_arm(entry, exe, core, commands, timeout=180):
    """lldb on an aarch64 core, the executable's libraries looked for in the sysroot."""
    from test_adapters import lldb_outputs
    rc, outs, err = lldb_outputs(["-O", "settings set target.exec-search-paths " +
                                  entry["sysroot"], "-c", core, exe], commands,
                                 timeout=timeout)
    return outs, err


def gdb_bt_pcs(text):
    """The pcs of gdb's `thread apply all bt`, per thread id, innermost first: the frames gdb
    prints an address for (an inlined call's frame shares its caller's pc and prints none)."""
    out, cur = {}, None
    for line in text.splitlines():
        # "Thread 16 (LWP 123):", or with libthread_db "Thread 16 (Thread 0x... (LWP 123)):"
        m = re.match(r"Thread \d+ \(.*\bLWP (\d+)\)", line)
        if m:
            cur = out.setdefault(int(m.group(1)), [])
            continue
        m = re.match(r"#(\d+)\s+(0x[0-9a-f]+)", line)
        if m and cur is not None:
            cur.append(int(m.group(2), 16))
    return out


def check_native_signed(entry, t, core, workdir):
    """--native-all of @core equals the same read of a copy carrying the kernel's
    NT_ARM_PAC_MASK (the mask then comes from the note, not from the mapped addresses), and
    gdb-multiarch's `thread apply all bt` of that copy, frame by frame, in every thread."""
    root = entry["sysroot"]
    doc = json_of("bt", "--native-all", "--json", "--sysroot", root, core)
    apart = [(th["native_thread_id"], th["merge_error"]) for th in doc["threads"]
             if th.get("merge_error")]
    assert not apart, "threads not merged: %s" % apart[:4]
    ours = native_pcs(doc)
    assert sorted(ours) == sorted(th["native_thread_id"] for th in t.truth["threads"]), \
        "native threads %s" % sorted(ours)
    noted = os.path.join(workdir, "pac-mask.core")
    assert add_pac_mask_notes(core, noted, PAC_MASK_48) == len(t.truth["threads"])
    assert native_pcs(json_of("bt", "--native-all", "--json", "--sysroot", root, noted)) \
        == ours, "the core with NT_ARM_PAC_MASK unwinds otherwise"
    # gdb stops at main where it knows the symbol (a debug build's): past it, as the CLI.
    outs, err = gdb_multiarch(entry, t.executable, noted,
                              ["set backtrace past-main on", "set backtrace past-entry on",
                               "thread apply all bt"])
    theirs = gdb_bt_pcs(outs[-1])
    differ = ["thread %d:\n  pyunwind %s\n  gdb      %s"
              % (tid, " ".join("%x" % p for p in pcs), " ".join("%x" % p for p in
                                                            theirs.get(tid, [])))
              for tid, pcs in sorted(ours.items()) if pcs != theirs.get(tid)]
    assert not differ, "native frames differ from gdb-multiarch's bt in %d of %d threads:\n%s" \
        % (len(differ), len(ours), "\n".join(differ[:3]))
    return sum(len(p) for p in ours.values())


def check_memory_only(truth, core, what):
    """@core read with none of the target's files (every path mapped to an empty directory):
    the Python frames still equal the truth, and the notes say memory alone was read."""
    import tempfile
    empty = tempfile.mkdtemp(prefix="pyu-arm-empty-")
    try:
        doc = json_of("bt", "--json", "--path-map", "/=" + empty, core)
    finally:
        os.rmdir(empty)
    check_document(truth, doc, what)
    assert any("read from memory alone" in n for n in doc.get("notes", [])), \
        "%s: not read from memory alone: %s" % (what, doc.get("notes"))


def check_triage(truth, core):
    """`triage --json` of a qemu core: the crashing thread, its signal and the signature by
    the documented rule (test_triage's). qemu's cores carry no NT_SIGINFO: no code, no
    fault address."""
    import test_triage
    try:
        os.rmdir(test_triage.WORK)  # made on import, for test_triage's own cores
    except OSError:
        pass
    rc, out, err = cli("triage", "--json", core)
    assert rc == 0, "triage: status %d: %s" % (rc, err)
    doc = json.loads(out)
    crashing = [th for th in truth["threads"] if th["thread_id"] == truth["crash_thread_id"]]
    assert len(crashing) == 1, "the truth names no crashing thread"
    sig, entries = test_triage.expected_signature(crashing[0]["frames"])
    crash = doc.get("crash", {})
    problems = ["%s is %r, want %r" % (k, got, want) for k, got, want in (
        ("ok", doc.get("ok"), True), ("thread_count", doc.get("thread_count"),
                                      len(truth["threads"])),
        ("crash.thread_id", crash.get("thread_id"), crashing[0]["thread_id"]),
        ("crash.native_thread_id", crash.get("native_thread_id"),
         crashing[0]["native_thread_id"]),
        ("crash.signal_name", crash.get("signal_name"), "SIGSEGV"),
        ("crash.fault_address", crash.get("fault_address"), None),
        ("signature_frames", doc.get("signature_frames"), entries),
        ("signature", doc.get("signature"), sig)) if got != want]
    problems += compare({"threads": crashing},
                        {"threads": [{"thread_id": crashing[0]["thread_id"],
                                      "frames": doc.get("frames", [])}]}, fields=FIELDS)
    assert not problems, "triage: %s" % "\n".join(problems[:12])


CROSS_CC = "aarch64-linux-gnu-gcc"
DEBUG_BUILDS_READ = ("arm64-sid-3.14d",)


def check_aarch64_build(core, root):
    """pyunwind built for aarch64 (core/ and the CLI, by Debian's cross compiler, with no
    optional library: this machine has no arm64 zlib or elfutils) and run under qemu-aarch64
    reads @core as this machine's build does: no x86-only code outside the architecture
    tables, and nothing that depends on the host's byte order or word size beyond what the two
    share. Returns the seconds the build took."""
    import tempfile
    started = time.time()
    work = tempfile.mkdtemp(prefix="pyu-arm-build-")
    try:
        subprocess.run([os.path.join(REPO, "tools", "configure-build"), work], check=True,
                       env=dict(os.environ, PKG_CONFIG="false"), capture_output=True)
        sources = sorted(glob.glob(os.path.join(REPO, "core", "*.c")) +
                         glob.glob(os.path.join(REPO, "core", "layouts", "*.c")) +
                         glob.glob(os.path.join(REPO, "core", "cli", "*.c")))
        objects = []
        for src in sources:
            obj = os.path.join(work, "%d.o" % len(objects))
            p = subprocess.run([CROSS_CC, "-std=c11", "-D_GNU_SOURCE", "-O0", "-Wall", "-Wextra",
                                "-Werror", "-Wshadow", "-Wno-missing-field-initializers",
                                "-fvisibility=hidden", "-iquote", os.path.join(REPO, "core"),
                                "-include", os.path.join(work, "config.h"), "-c", src, "-o",
                                obj], capture_output=True, text=True)
            assert p.returncode == 0, "%s for aarch64: %s" % (os.path.relpath(src, REPO),
                                                             p.stderr[-2000:])
            objects.append(obj)
        exe = os.path.join(work, "pyunwind")
        p = subprocess.run([CROSS_CC, "-o", exe] + objects + ["-pthread"], capture_output=True,
                           text=True)
        assert p.returncode == 0, "linking for aarch64: %s" % p.stderr[-2000:]
        built = time.time() - started
        for args in (["bt", "--json", "--sysroot", root, core], ["triage", "--json", core]):
            p = subprocess.run(["qemu-aarch64", "-L", "/usr/aarch64-linux-gnu", exe] + args,
                               capture_output=True, timeout=300, stdin=subprocess.DEVNULL)
            assert p.returncode == 0, "aarch64 pyunwind %s: status %d: %s" % (
                args[0], p.returncode, p.stderr.decode(errors="replace")[-2000:])
            rc, here, err = cli(*args)
            assert json.loads(p.stdout) == json.loads(here), \
                "aarch64 pyunwind %s differs from this machine's:\n%s\n---\n%s" % (
                    args[0], p.stdout.decode(errors="replace")[:2000], here[:2000])
        return built
    finally:
        shutil.rmtree(work, ignore_errors=True)


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
            want = frames_text(text)
            # --native: elfutils' aarch64 unwinder over the same core (the files from the
            # link map); every thread's Python frames placed in its native stack. Unstable's
            # libraries sign return addresses (pointer authentication), stripped by the mask
            # the mapped addresses give (qemu's cores have no NT_ARM_PAC_MASK).
            rc, native, err = cli("bt", "--native", "--sysroot", root, core)
            assert rc == 0, err
            blocks = re.split(r"^(?=Thread 0x)", native, flags=re.M)[1:]
            headers = len(blocks)
            unwound = sum(1 for b in blocks if re.search(r"^native #0 ", b, re.M))
            assert headers == len(t.truth["threads"]) and unwound == headers, \
                "native frames for %d of %d threads:\n%s" % (unwound, headers, native[:3000])
            assert "not merged" not in native, "native frames not merged:\n%s" % native[:3000]
            assert frames_text(native) == want, "--native changed the Python frames"
            # Every native frame of every thread equals gdb-multiarch's bt.
            frames = check_native_signed(entry, t, core, t.workdir)
            # A core is enough: none of the files (the memory-only path), and triage.
            check_memory_only(t.truth, core, "qemu core, memory alone")
            check_triage(t.truth, core)
            print("    %s: %d native frames equal to gdb-multiarch's" % (entry["label"], frames))
            # pyunwind built for aarch64 reads the same core the same (once).
            if entry["label"] == "arm64-sid-3.14":
                print("    aarch64 build: %.0f s, reads the core as this build"
                      % check_aarch64_build(core, root))
            # gdb-multiarch and lldb on the same core print what the CLI prints.
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


def live_case(entry):
    def run():
        with QemuTarget(entry, "scenario", "park") as t:
            doc_text, native, err = t.gdb_reads()
            try:
                doc = json.loads(doc_text)
            except ValueError:
                raise AssertionError("py-bt --json through the stub is not JSON:\n%s\n%s"
                                     % (doc_text[:2000], err[-2000:]))
            check_document(t.truth, doc, "live through gdb-multiarch on qemu's stub")
            # --native through gdb: gdb's own aarch64 unwinder (no DWARF in Debian's
            # binaries) loses its way in the asyncio thread's stack; every other thread's
            # Python frames are placed in its native stack. Unstable's C library signs its
            # return addresses (pointer authentication), which gdb 13 does not strip through
            # qemu 7.2's stub: its native stacks end in the C library there.
            if entry["suite"] != "bookworm":
                return
            headers = len(re.findall(r"^Thread 0x", native, re.M))
            apart = native.count("not merged")
            assert headers == len(t.truth["threads"]) and "native #" in native and apart <= 1, \
                "native frames through the stub: %d of %d threads not merged:\n%s" \
                % (apart, headers, native[:3000])
    return run


def values_case(entry):
    """The values zoo crashed under qemu: every value's repr read from the qemu core equals
    the target's own (tests/values/probe.c, as test-values reads kernel cores)."""
    def run():
        import test_values
        with QemuTarget(entry, "values_catalog", "crash") as t:
            core = t.crash_core()
            test_values.check(["--core", core, "--exe", t.executable], t.truth["values"],
                              "qemu core")
    return run


def locals_case(entry):
    """The locals zoo (tests/targets/values.py) crashed under qemu: `bt --locals --json` of the
    qemu core by the CLI (with the files, and from memory alone), gdb-multiarch and lldb, each
    against the target's own locals, thread names and exceptions (test_locals' checks)."""
    def run():
        import test_locals
        from test_adapters import parse_json, no_traceback
        with QemuTarget(entry, "values", "crash") as t:
            core = t.crash_core()
            wide = test_locals.WIDE
            test_locals.check_doc(t.truth, json_of("bt", "--json", "--locals", "--sysroot",
                                                   t.sysroot, *(wide + [core])), "qemu core")
            test_locals.check_memory_only(t.truth, core, "qemu core, memory alone")
            command = "py-bt --all --locals --json " + " ".join(wide)
            for name, read in (("gdb-multiarch", gdb_multiarch), ("lldb", lldb_arm)):
                (out,), err = read(entry, t.executable, core, [command])
                no_traceback(name, err, out)
                test_locals.check_doc(t.truth, parse_json(out, name), name + ", qemu core")
            print("    %s: %d frames, %d locals, %d reprs compared" % (
                (entry["label"],) + test_locals.counts(t.truth)))
    return run


def tasks_case(entry):
    """The tasks zoo crashed under qemu: py-tasks' JSON from the qemu core (--sysroot alone),
    by the CLI, gdb-multiarch and lldb, against the target's own asyncio registries."""
    def run():
        import test_tasks
        from test_adapters import parse_json, no_traceback
        with QemuTarget(entry, "tasks", "crash") as t:
            core = t.crash_core()
            test_tasks.check(t.truth, json_of("tasks", "--json", "--sysroot", t.sysroot, core),
                             "qemu core")
            for name, read in (("gdb-multiarch", gdb_multiarch), ("lldb", lldb_arm)):
                (out,), err = read(entry, t.executable, core, ["py-tasks --all --json"])
                no_traceback(name, err, out)
                test_tasks.check(t.truth, parse_json(out, name), name + ", qemu core")
    return run


def strip_nt_file(src, dst):
    """Copies the ELF core @src to @dst with its NT_FILE note made a note of a type nobody
    reads (same size): a core that names no files, as qemu-user writes them."""
    import struct
    with open(src, "rb") as f:
        data = bytearray(f.read())
    phoff, = struct.unpack_from("<Q", data, 32)
    phnum, = struct.unpack_from("<H", data, 56)
    stripped = 0
    for i in range(phnum):
        p_type, _, off, _, _, filesz = struct.unpack_from("<IIQQQQ", data, phoff + 56 * i)
        if p_type != 4:  # PT_NOTE
            continue
        at, end = off, off + filesz
        while at + 12 <= end:
            namesz, descsz, ntype = struct.unpack_from("<III", data, at)
            if ntype == 0x46494C45:  # NT_FILE
                struct.pack_into("<I", data, at + 8, 0xEEEEEEEE)
                stripped += 1
            at += 12 + ((namesz + 3) & ~3) + ((descsz + 3) & ~3)
    assert stripped == 1, "%s: %d NT_FILE notes" % (src, stripped)
    with open(dst, "wb") as f:
        f.write(data)


def x86_64_case(py):
    """The same discovery on x86-64: a kernel core of the scenario with its NT_FILE note
    stripped, read with --sysroot / alone and with the executable and --search-path."""
    def run():
        with Target(py, "scenario", mode="crash") as t:
            core = t.crash_core()
            bare = core + ".bare"
            strip_nt_file(core, bare)
            check_document(t.truth, json_of("bt", "--json", "--sysroot", "/", bare),
                           "x86-64 core without NT_FILE, --sysroot /")
            libdirs = "/usr/lib/x86_64-linux-gnu:/lib/x86_64-linux-gnu"
            check_document(t.truth, json_of("bt", "--json", "--search-path", libdirs, bare,
                                            t.executable),
                           "x86-64 core without NT_FILE, executable and --search-path")
    return run


def main():
    if not os.access(CLI, os.X_OK):
        print("build/pyunwind is missing: run make first")
        print("test-arm: 0 passed, 1 failed")
        return 1
    for tool in ("qemu-aarch64", "gdb-multiarch", CROSS_CC):
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
    x86 = [py for py in interpreters() if py.label == "debian-3.11"]
    cases.append(("x86-64/debian-3.11/no-nt-file", x86_64_case(x86[0]) if x86 else
                  lambda: (_ for _ in ()).throw(AssertionError("debian-3.11 is missing "
                                                               "(make deps installs it)"))))
    for e in entries:
        # Debian's -dbg builds run under qemu too, at about 8 times a release build's CPU
        # time (an unoptimised interpreter, emulated): one of them is read here, 3.14d.
        if e["debug"] and e["label"] not in DEBUG_BUILDS_READ:
            continue
        # The longest case first, so that the other job's cases run beside it.
        cases.insert(0 if e["debug"] else len(cases), ("%s/crash" % e["label"], crash_case(e)))
        # Live through the stub: one build of each kind of discovery (3.11's static tables,
        # 3.14's debug offsets); each live target costs as much emulation as a crash.
        if e["label"] in ("arm64-3.11", "arm64-sid-3.14"):
            cases.append(("%s/live" % e["label"], live_case(e)))
        # The values and tasks zoos once each: the same readers as on x86-64.
        if e["label"] == "arm64-sid-3.13":
            cases.append(("%s/values" % e["label"], values_case(e)))
        if e["label"] == "arm64-sid-3.15":
            cases.append(("%s/tasks" % e["label"], tasks_case(e)))
        if e["label"] == "arm64-sid-3.14":
            cases.append(("%s/locals" % e["label"], locals_case(e)))
    return run_cases(cases, jobs=2, prefix="test-arm")


if __name__ == "__main__":
    sys.exit(main())
