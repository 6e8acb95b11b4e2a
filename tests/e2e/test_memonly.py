#!/usr/bin/env python3
# test_memonly - a core is enough: for every interpreter of the matrix, a kernel crash core and a
# gdb core of the rich scenario read by the CLI with none of the target's files available
# (--path-map /=EMPTY: every file the core names is missing), with a different build of the
# interpreter at the original paths (--sysroot OTHER; it must be ignored by build ID), with the
# files only under a sysroot (--sysroot), and only through a local debuginfod server (a real
# `debuginfod` on 127.0.0.1 serving copies of every interpreter's files, none at its original
# path: --sysroot EMPTY). The JSON must equal the
# target's own truth field by field (function, qualname, file, line, end_line, columns,
# instruction offset), the version and build exactly, the notes must say the stack was read
# from memory alone, the GIL holder must agree with a read that had the files, and text output
# must carry no source lines. Damaged cores under the memory-only path (the interpreter list
# head, thread states and the data around them overwritten) must give a clean error or a stack
# whose frames are all right, never a plausible wrong one, within a time bound; the same reads
# by the CLI over the ASan/UBSan build of the core (build/pyunwind-san) must find nothing and
# give the same status and output.
#
#   tests/e2e/test_memonly.py [-j N] [FILTER...]     (make test-memonly)
#
# One crash target and one parked target per interpreter; each core serves every check.
# Ends with "test-memonly: N passed, N failed".
import json
import os
import random
import re
import shutil
import struct
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from harness import (REPO, Target, compare, gdb_batch, lldb_batch, run_cases,  # noqa: E402
                     selected, text_frames)

CLI = os.path.join(REPO, "build", "pyunwind")
CLI_SAN = os.path.join(REPO, "build", "pyunwind-san")  # the same CLI over the ASan/UBSan core
SAN_EXIT = 86
FIELDS = ("function", "qualname", "file", "line", "end_line", "column", "end_column",
          "instruction_offset")
DAMAGED_LABELS = ("pyenv-2.7", "pyenv-3.9", "pyenv-3.12", "sid-3.14")
SCAN_TIME_LIMIT = 60  # seconds for one read of a damaged core
# The adapters follow the debugger's own file settings: gdb's sysroot and solib-search-path,
# lldb's platform sysroot, target.exec-search-paths and target.debug-file-search-paths.
DEBUGGER_LABELS = ("pyenv-3.12", "debian-3.11")
NO_DEBUGINFOD = {"DEBUGINFOD_URLS": None}


# No debuginfod unless a case asks for it: a missing file must not reach out to the network.
BASE_ENV = dict((k, v) for k, v in os.environ.items() if not k.startswith("DEBUGINFOD_"))


def cli(*args, timeout=120, env=None, program=CLI):
    t0 = time.time()
    try:
        p = subprocess.run([program] + [str(a) for a in args], capture_output=True,
                           timeout=timeout, stdin=subprocess.DEVNULL, env=env or BASE_ENV)
    except subprocess.TimeoutExpired:
        raise AssertionError("pyunwind %s: no answer within %ds" % (" ".join(map(str, args)),
                                                                     timeout))
    out = p.stdout.decode("utf-8", "strict")
    err = p.stderr.decode("utf-8", "replace")
    if p.returncode < 0:
        raise AssertionError("pyunwind %s died of signal %d:\n%s"
                             % (" ".join(map(str, args)), -p.returncode, err[-2000:]))
    return p.returncode, out, err, time.time() - t0


def bt_json(*args, env=None):
    rc, out, err, _ = cli("bt", "--json", *args, env=env)
    assert rc == 0, "pyunwind bt --json %s: status %d: %s" % (" ".join(args), rc, err.strip())
    return json.loads(out)


def check_memory_only(truth, doc, with_files, what):
    problems = []
    for key in ("version", "hexversion", "debug_build"):
        if doc["python"].get(key) != truth["python"][key]:
            problems.append("python.%s is %r, truth %r"
                            % (key, doc["python"].get(key), truth["python"][key]))
    problems += compare(truth, doc, fields=FIELDS, limit=12)
    if doc.get("errors"):
        problems.append("errors: %s" % doc["errors"][:3])
    if not any("read from memory alone" in n for n in doc.get("notes", [])):
        problems.append("no note says the stack was read from memory alone: %s"
                        % doc.get("notes"))
    gil = dict((t["thread_id"], t["holds_gil"]) for t in with_files["threads"])
    for t in doc["threads"]:
        if t["holds_gil"] is not None and t["holds_gil"] != gil.get(t["thread_id"]):
            problems.append("thread %s: holds_gil %r, with the files %r"
                            % (t["thread_id"], t["holds_gil"], gil.get(t["thread_id"])))
    if problems:
        raise AssertionError("%s: %d problem(s):\n%s" % (what, len(problems),
                                                         "\n".join(problems[:12])))


def check_with_files(truth, doc, where, what):
    """Read with the interpreter's files from @where: the notes name the file used there, and
    the stack equals the truth."""
    problems = compare(truth, doc, fields=FIELDS, limit=12)
    for key in ("version", "hexversion", "debug_build"):
        if doc["python"].get(key) != truth["python"][key]:
            problems.append("python.%s is %r, truth %r"
                            % (key, doc["python"].get(key), truth["python"][key]))
    if doc.get("errors"):
        problems.append("errors: %s" % doc["errors"][:3])
    notes = " ".join(doc.get("notes", []))
    if "(the file here: " + where not in notes or "memory alone" in notes:
        problems.append("the files in %s were not used: %s" % (where, notes[:500]))
    if problems:
        raise AssertionError("%s: %d problem(s):\n%s" % (what, len(problems),
                                                         "\n".join(problems[:12])))


def check_no_source(core, empty, truth):
    """Text output without any file: every frame, no source line."""
    rc, out, err, _ = cli("bt", "--path-map", "/=" + empty, core)
    assert rc == 0, "bt: %s" % err
    frames = text_frames(out)  # a recursion's repeats fold as traceback folds them
    want = sum(len(t["frames"]) for t in truth["threads"])
    assert frames == want, "text: %d frames, truth %d" % (frames, want)
    sources = [l for l in out.splitlines() if l.startswith("        ")]
    assert not sources, "source lines without files: %s" % sources[:3]


# ---- another build at the original paths ----------------------------------------------------

def elf_sections(data):
    shoff, = struct.unpack_from("<Q", data, 0x28)
    shentsize, shnum, shstrndx = struct.unpack_from("<HHH", data, 0x3a)
    secs = [struct.unpack_from("<IIQQQQIIQQ", data, shoff + i * shentsize) for i in range(shnum)]
    strtab = secs[shstrndx]

    def name(sec):
        off = strtab[4] + sec[0]
        return bytes(data[off:data.index(0, off)]).decode()
    return dict((name(sec), sec) for sec in secs)


def other_build(path, dest):
    """A copy of the ELF file @path at @dest that is "another build": its GNU build ID differs,
    and _PyRuntime / interp_head / PyCode_Type in .dynsym (those present) move by 4 KiB, so
    trusting it would misplace the interpreter."""
    data = bytearray(open(path, "rb").read())
    secs = elf_sections(data)
    if ".dynsym" in secs and ".dynstr" in secs:
        dynsym, dynstr = secs[".dynsym"], secs[".dynstr"]
        for i in range(dynsym[5] // 24):
            at = dynsym[4] + 24 * i
            st_name, = struct.unpack_from("<I", data, at)
            off = dynstr[4] + st_name
            name = bytes(data[off:data.index(0, off)])
            if name in (b"_PyRuntime", b"interp_head", b"PyCode_Type", b"Py_Version"):
                value, = struct.unpack_from("<Q", data, at + 8)
                struct.pack_into("<Q", data, at + 8, value + 0x1000)
    note = secs[".note.gnu.build-id"]
    data[note[4] + note[5] - 1] ^= 0xff
    os.makedirs(os.path.dirname(dest), exist_ok=True)
    with open(dest, "wb") as f:
        f.write(data)


def build_id_in_first_page(path):
    """Whether the GNU build ID note of @path lies in its first page, which is all a core keeps
    of a file's read-only data (patchelf, which the test cache uses on Debian unstable's
    interpreters, moves the headers and leaves the note further in)."""
    data = open(path, "rb").read(1 << 20)
    note = elf_sections(bytearray(data if len(data) < (1 << 20) else open(path, "rb").read())
                        ).get(".note.gnu.build-id")
    return note is not None and note[4] + note[5] <= 4096


def python_files(py):
    """The interpreter's own ELF files: its executable and the libpython it loads (ldd)."""
    exe = os.path.realpath(py.path)
    files = [exe]
    out = subprocess.run(["ldd", exe], capture_output=True, text=True, timeout=60).stdout
    for line in out.splitlines():
        m = re.search(r"=> (/\S*libpython\S*) ", line)
        if m:
            files.append(os.path.realpath(m.group(1)))
    return files


def unpatched(py):
    """For a Debian unstable build: Debian's own executable (tools/pythons keeps it beside the
    patchelf'd one) and how to run it: {"python", "loader", "library_path", "home"}."""
    out = subprocess.run([os.path.join(REPO, "tools", "pythons"), "unpatched", py.label],
                         capture_output=True, text=True, timeout=120)
    if out.returncode != 0:
        raise AssertionError("Debian's own executable of %s is missing (make pythons keeps "
                             "it): %s" % (py.label, out.stderr.strip()))
    return json.loads(out.stdout)


def served_files(py):
    """The files of @py the debuginfod server serves: the interpreter's own, and for a Debian
    unstable build Debian's executable instead of the patchelf'd one (same build ID, but
    patchelf moved its contents: only Debian's file matches the process that ran it)."""
    if py.label.startswith("sid-"):
        try:
            return [unpatched(py)["python"]]
        except AssertionError:
            pass  # the case says so
    return python_files(py)


class Debuginfod(object):
    """A real debuginfod server on 127.0.0.1 (a free port) serving copies of @files from a
    private directory; started, polled until its scan has indexed them all, stopped."""

    def __init__(self, files, timeout=120):
        self.dir = tempfile.mkdtemp(prefix="pyu-debuginfod-")
        serve = os.path.join(self.dir, "files")
        for i, f in enumerate(files):
            d = os.path.join(serve, str(i))
            os.makedirs(d)
            shutil.copy(f, d)
        import socket
        s = socket.socket()
        s.bind(("127.0.0.1", 0))
        self.port = s.getsockname()[1]
        s.close()
        self.log = open(os.path.join(self.dir, "server.log"), "w")
        self.proc = subprocess.Popen(
            ["debuginfod", "-F", serve, "-p", str(self.port), "-d",
             os.path.join(self.dir, "db.sqlite"), "-t", "0", "-g", "0"],
            stdout=self.log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
        self.url = "http://127.0.0.1:%d" % self.port
        deadline = time.time() + timeout
        want = len(files)
        import urllib.request
        while True:
            if self.proc.poll() is not None:
                raise AssertionError("debuginfod exited (status %s)" % self.proc.returncode)
            try:
                text = urllib.request.urlopen(self.url + "/metrics", timeout=5).read().decode()
                m = re.search(r'^scanned_files_total\{source="file"\} (\d+)', text, re.M)
                idle = re.search(r'^thread_busy\{role="scan"\} 0', text, re.M)
                if m and int(m.group(1)) >= want and idle:
                    break
            except OSError:
                pass
            if time.time() > deadline:
                raise AssertionError("debuginfod did not index %d files within %ds"
                                     % (want, timeout))
            time.sleep(0.2)

    def env(self, cache):
        return dict(BASE_ENV, DEBUGINFOD_URLS=self.url, DEBUGINFOD_CACHE_PATH=cache)

    def close(self):
        self.proc.terminate()
        try:
            self.proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        self.log.close()
        shutil.rmtree(self.dir, ignore_errors=True)


# ---- Debian's own executable, fetched by build ID ----------------------------------------------

def debian_executable(py, server, empty, work):
    """The test cache's Debian unstable interpreters are patchelf'd to run from a private root,
    which moves their build-ID note out of the first page, the only part of a read-only file a
    core keeps: their cores cannot name the build to fetch. Debian's executable as shipped keeps
    the note there; run through the private root's loader (ld.so PROGRAM, which maps it as the
    kernel would, from offset 0), its kernel and gdb cores must be read with the file fetched
    from debuginfod by build ID (another build at its path), and from memory alone."""
    info = unpatched(py)
    command = [info["loader"], "--library-path", info["library_path"], info["python"]]
    env = {"PYTHONHOME": info["home"]}
    if not build_id_in_first_page(info["python"]):
        raise AssertionError("Debian's %s has its build-ID note past the first page"
                             % info["python"])
    cores = []
    with Target(py, "scenario", mode="crash", command=command, env=env) as t:
        core = os.path.join(work, "debian-crash.core")
        shutil.move(t.crash_core(), core)
        cores.append(("kernel core", core, t.truth))
    with Target(py, "scenario", command=command, env=env) as t:
        core = os.path.join(work, "debian-gcore.core")
        t.gcore(core)
        cores.append(("gdb core", core, t.truth))
    other = os.path.join(work, "other-debian")
    other_build(info["python"], other + info["python"])
    sysroot = os.path.join(work, "sysroot-debian")
    os.makedirs(os.path.dirname(sysroot + info["python"]))
    shutil.copy(info["python"], sysroot + info["python"])
    for what, core, truth in cores:
        what = "Debian's executable, " + what
        with_files = bt_json(core)
        problems = compare(truth, with_files, fields=FIELDS, limit=12)
        assert not problems, "%s, with its file: %s" % (what, "\n".join(problems))
        check_memory_only(truth, bt_json("--path-map", "/=" + empty, core), with_files,
                          "%s, no files" % what)
        cache = os.path.join(work, "debuginfod-debian")
        check_with_files(truth, bt_json("--sysroot", other, core, env=server.env(cache)),
                         cache, "%s, debuginfod" % what)
        shutil.rmtree(cache, ignore_errors=True)
        check_with_files(truth, bt_json("--sysroot", sysroot, core, other + info["python"]),
                         sysroot, "%s, sysroot and another executable" % what)
    return "Debian's executable: kernel and gdb cores, fetched by build ID"


# ---- the debuggers' own settings -----------------------------------------------------------

def adapter_json(out, what):
    if "{" not in out:
        raise AssertionError("%s: no JSON in the output:\n%s" % (what, out[-2000:]))
    return json.loads(out[out.index("{"):out.rindex("}") + 1])


def debugger_settings(core, truth, files, empty, sysroot, other, work):
    """py-bt --all --json in gdb and lldb on @core, the interpreter's files found only through
    each debugger's own settings: the files under a sysroot (@sysroot), or loose in a
    directory named by a search-path setting while the sysroot (@empty) has none of them. lldb
    is given the executable as a machine where the package was upgraded has it: another build
    (under @other), which lldb would otherwise hand to the adapter as the target's own."""
    loose = os.path.join(work, "loose")
    os.makedirs(loose, exist_ok=True)
    for path in files:
        shutil.copy(path, loose)
    exe = other + files[0]
    runs = [
        ("gdb, sysroot", sysroot, gdb_batch,
         ["-iex", "set sysroot " + sysroot, "--core", core], []),
        ("gdb, solib-search-path", loose, gdb_batch,
         ["-iex", "set sysroot " + empty, "-iex",
          "set solib-search-path /nonexistent:" + loose, "--core", core], []),
        ("lldb, platform sysroot", sysroot, lldb_batch,
         ["-O", "platform select --sysroot %s host" % sysroot, "-c", core, exe], []),
        ("lldb, target.exec-search-paths", loose, lldb_batch,
         ["-O", "platform select --sysroot %s host" % empty, "-c", core, exe],
         ["settings set target.exec-search-paths /nonexistent " + loose]),
        ("lldb, target.debug-file-search-paths", loose, lldb_batch,
         ["-O", "platform select --sysroot %s host" % empty, "-c", core, exe],
         ["settings set target.debug-file-search-paths " + loose]),
    ]
    for what, where, debugger, args, settings in runs:
        rc, out, err = debugger(args, settings + ["py-bt --all --json"], env=NO_DEBUGINFOD)
        doc = adapter_json(out, what)
        check_with_files(truth, doc, where, "kernel core in " + what)
    return "%d debugger settings followed" % len(runs)


# ---- damaged cores ---------------------------------------------------------------------------

def core_loads(path):
    """[(vaddr, memsz, offset, filesz)] of the PT_LOAD segments of the core at @path."""
    with open(path, "rb") as f:
        eh = f.read(64)
        phoff, = struct.unpack_from("<Q", eh, 0x20)
        phentsize, phnum = struct.unpack_from("<HH", eh, 0x36)
        f.seek(phoff)
        table = f.read(phentsize * phnum)
    loads = []
    for i in range(phnum):
        p_type, _flags, off, vaddr, _paddr, filesz, memsz, _align = \
            struct.unpack_from("<IIQQQQQQ", table, i * phentsize)
        if p_type == 1:
            loads.append((vaddr, memsz, off, filesz))
    return loads


def file_offset(loads, addr):
    for vaddr, memsz, off, filesz in loads:
        if vaddr <= addr < vaddr + filesz:
            return off + addr - vaddr
    return None


def written_text(value, written):
    """@value (a name the damaged core gave) holds the bytes of a word the damage wrote (up to
    the word's first NUL): the damage landed in the characters of a string, which on 3.12+ may
    be one of the runtime's static strings near the head - memory really says that name. In a
    one-byte string each byte is a character (U+0000-U+00FF), so the bytes are looked for as
    those characters too, not only as UTF-8 (a pointer's bytes are mostly above 0x7f)."""
    if not isinstance(value, str):
        return False
    data = value.encode("utf-8", "surrogatepass")
    prefixes = [w.split(b"\0")[0] for w in written]
    return any(len(p) >= 4 and (p in data or p.decode("latin-1") in value) for p in prefixes)


def cut_by_written(value, want, written):
    """@value (a name the damaged core gave) is the start of the true name @want and the damage
    wrote a word with a zero byte: on 3.12+ the damage may land in one of the runtime's static
    strings near the head ("<lambda>" and the like), and a zero written into its length or its
    characters cuts it short - memory really says that shorter name."""
    return (isinstance(value, str) and isinstance(want, str) and len(value) < len(want) and
            want.startswith(value) and any(b"\0" in w for w in written))


def relaxed_check(truth, doc, written=()):
    """Whatever a damaged core gives must be right as far as it goes: every Python frame before
    a thread's first error frame equals the truth's frame at that position. A function or file
    name may differ only by the very bytes the damage wrote into it (@written: those words), or
    wholly when its other two fields are the truth's (its str object was among the damage)."""
    tt = dict((t["thread_id"], t) for t in truth["threads"])
    for t in doc["threads"]:
        want = tt.get(t["thread_id"])
        if want is None:
            continue  # a damaged list may lead to thread states the truth names otherwise
        for i, f in enumerate(t["frames"]):
            if f["kind"] != "python":
                break
            if i >= len(want["frames"]):
                return "thread %s: frame #%d beyond the truth's %d" % (t["thread_id"], i,
                                                                        len(want["frames"]))
            w = want["frames"][i]
            for k in ("function", "file", "line"):
                # The name's str object itself may lie in the damaged words (3.12+ keep
                # names like '<module>' as static objects inside _PyRuntime, near the head):
                # a header overwritten garbles the whole name. Still the right frame when
                # its two other fields are the truth's.
                others_right = all(f.get(o) == w.get(o)
                                   for o in ("function", "file", "line") if o != k)
                if f.get(k) != w.get(k) and not (k != "line" and (
                        written_text(f.get(k), written) or
                        cut_by_written(f.get(k), w.get(k), written) or
                        (others_right and written))):
                    return "thread %s frame #%d: %s %r, truth %r" % (t["thread_id"], i, k,
                                                                    f.get(k), w.get(k))
    return None


SAN_ENV = dict(BASE_ENV, ASAN_OPTIONS="exitcode=%d:detect_leaks=1" % SAN_EXIT,
               UBSAN_OPTIONS="halt_on_error=1:print_stacktrace=1:exitcode=%d" % SAN_EXIT)


def sanitized(args, rc, out, what):
    """Runs the CLI over the ASan/UBSan build of the core with @args: no finding, and the same
    status and output as the plain build gave (@rc, @out)."""
    rc2, out2, err2, _ = cli(*args, timeout=SCAN_TIME_LIMIT * 4, env=SAN_ENV, program=CLI_SAN)
    findings = [l for l in err2.splitlines() if "Sanitizer" in l or "runtime error" in l]
    assert rc2 != SAN_EXIT and not findings, "%s under ASan/UBSan: status %d:\n%s" % (
        what, rc2, "\n".join(err2.splitlines()[:40]))
    assert rc2 == rc and out2 == out, "%s under ASan/UBSan: status %d, plain build %d%s" % (
        what, rc2, rc, "" if rc2 != rc else "; the output differs")


def damaged_cases(core, truth, doc, empty, workdir):
    """Overwrites the interpreter list head, thread states and random words near the head in
    copies of @core; each copy read memory-only must fail cleanly or be right."""
    head = None
    for n in doc.get("notes", []):
        m = re.search(r"interpreter list head at (0x[0-9a-f]+)", n)
        m = m or re.search(r"_Py_DebugOffsets cookie at (0x[0-9a-f]+)", n)
        if m:
            head = int(m.group(1), 16)
    assert head, "no head address in the notes: %s" % doc.get("notes")
    loads = core_loads(core)
    path = os.path.join(workdir, "damaged.core")
    shutil.copyfile(core, path)  # one copy, patched and restored per variant
    rng = random.Random(head)
    variants = []
    variants.append(("head zeroed", [(head, b"\0" * 8)]))
    tstates = [int(t["tstate_address"], 16) for t in doc["threads"]]
    variants.append(("thread states zeroed", [(a, b"\0" * 64) for a in tstates]))
    variants.append(("thread states scrambled",
                     [(a, bytes(rng.randrange(256) for _ in range(256))) for a in tstates[:3]]))
    for seed in range(3):
        writes = []
        for _ in range(200):
            a = (head - 32768 + rng.randrange(65536)) & ~7
            writes.append((a, struct.pack("<Q", rng.choice([0, head, head + 8, rng.getrandbits(64),
                                                            tstates[0]]))))
        variants.append(("words near the head %d" % seed, writes))
    # The undamaged core read from memory alone, under ASan/UBSan too.
    args = ("bt", "--json", "--path-map", "/=" + empty, core)
    rc, out, _, _ = cli(*args)
    sanitized(args, rc, out, "undamaged")
    outcomes = ["undamaged and every damaged copy also under ASan/UBSan"]
    size = os.path.getsize(path)
    for name, writes in variants:
        saved = []
        fd = os.open(path, os.O_RDWR)
        try:
            for addr, b in writes:
                off = file_offset(loads, addr)
                if off is not None and off + len(b) <= size:
                    saved.append((off, os.pread(fd, len(b), off)))
                    os.pwrite(fd, b, off)
        finally:
            os.close(fd)
        rc, out, err, secs = cli("bt", "--json", "--path-map", "/=" + empty, path,
                                 timeout=SCAN_TIME_LIMIT)
        sanitized(("bt", "--json", "--path-map", "/=" + empty, path), rc, out, name)
        fd = os.open(path, os.O_RDWR)
        try:
            for off, b in reversed(saved):
                os.pwrite(fd, b, off)
        finally:
            os.close(fd)
        if rc == 0:
            got = json.loads(out)
            problem = relaxed_check(truth, got, [b for _, b in writes if len(b) == 8])
            assert not problem, "%s: a wrong stack: %s" % (name, problem)
            outcomes.append("%s: %d threads (%.1fs)" % (name, len(got["threads"]), secs))
        else:
            lines = [l for l in err.splitlines() if l.strip()]
            assert len(lines) == 1 and lines[0].startswith("pyunwind: "), \
                "%s: status %d, stderr %r" % (name, rc, err[:500])
            assert rc in (1, 3, 4), "%s: status %d: %s" % (name, rc, lines[0])
            if rc == 3:
                assert "bytes of" in lines[0], "%s: the error does not say what was " \
                    "scanned: %s" % (name, lines[0][:300])
            outcomes.append("%s: error (%.1fs)" % (name, secs))
    return outcomes


# ---- the cases -------------------------------------------------------------------------------

def interpreter_case(py, server):
    def run():
        empty = tempfile.mkdtemp(prefix="pyu-memonly-empty-")
        work = tempfile.mkdtemp(prefix="pyu-memonly-")
        try:
            cores = []
            with Target(py, "scenario", mode="crash") as t:
                core = os.path.join(work, "crash.core")
                shutil.move(t.crash_core(), core)
                cores.append(("kernel core", core, t.truth))
            with Target(py, "scenario") as t:
                core = os.path.join(work, "gcore.core")
                t.gcore(core)
                cores.append(("gdb core", core, t.truth))
            files = python_files(py)
            other, sysroot = os.path.join(work, "other-root"), os.path.join(work, "sysroot")
            for path in files:
                other_build(path, other + path)
                os.makedirs(os.path.dirname(sysroot + path), exist_ok=True)
                shutil.copy(path, sysroot + path)
            report = []
            for what, core, truth in cores:
                with_files = bt_json(core)
                doc = bt_json("--path-map", "/=" + empty, core)
                check_memory_only(truth, doc, with_files, "%s, no files" % what)
                # Another build at the original paths: refused by build ID.
                doc2 = bt_json("--sysroot", other, core)
                check_memory_only(truth, doc2, with_files, "%s, another build" % what)
                # The files only under a sysroot.
                check_with_files(truth, bt_json("--sysroot", sysroot, core), sysroot,
                                 "%s, sysroot" % what)
                # The executable named with the core is another build: the sysroot's is used
                # (when the core has the build ID to tell; else memory alone).
                has_id = all(build_id_in_first_page(f) for f in files)
                doc5 = bt_json("--sysroot", sysroot, core, other + files[0])
                if has_id:
                    check_with_files(truth, doc5, sysroot,
                                     "%s, sysroot and another executable" % what)
                else:
                    check_memory_only(truth, doc5, with_files, "%s, sysroot and another "
                                      "executable, no build ID in the core" % what)
                # The files only through debuginfod (and another build in their place).
                # Fetching needs the build ID, which the core holds only when the note is
                # in the file's first page; else the read is still right, from memory alone.
                cache = os.path.join(work, "debuginfod-cache")
                doc3 = bt_json("--sysroot", other, core, env=server.env(cache))
                if has_id:
                    check_with_files(truth, doc3, cache, "%s, debuginfod" % what)
                else:
                    check_memory_only(truth, doc3, with_files,
                                      "%s, debuginfod without a build ID in the core" % what)
                    report.append("%s of the patchelf'd executable: no build ID in the core, "
                                  "debuginfod not asked" % what)
                shutil.rmtree(cache, ignore_errors=True)
                if what == "kernel core" and py.label in DEBUGGER_LABELS:
                    report.append(debugger_settings(core, truth, files, empty, sysroot, other,
                                                    work))
                if what == "kernel core":
                    check_no_source(core, empty, truth)
                    if py.label in DAMAGED_LABELS:
                        report += damaged_cases(core, truth, doc, empty, work)
            if py.label.startswith("sid-"):
                report.append(debian_executable(py, server, empty, work))
            if report:
                print("    %s: %s" % (py.label, "; ".join(report)))
        finally:
            shutil.rmtree(work, ignore_errors=True)
            shutil.rmtree(empty, ignore_errors=True)
    return run


def main():
    if not os.access(CLI, os.X_OK) or not os.access(CLI_SAN, os.X_OK):
        print("build/pyunwind or build/pyunwind-san is missing: run make test-memonly")
        print("test-memonly: 0 passed, 1 failed")
        return 1
    pys = selected()
    files = [f for py in pys for f in served_files(py)]
    server = Debuginfod(files)
    try:
        cases = [(py.label, interpreter_case(py, server)) for py in pys]
        return run_cases(cases, jobs=2, prefix="test-memonly")
    finally:
        server.close()


if __name__ == "__main__":
    sys.exit(main())
