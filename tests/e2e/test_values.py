#!/usr/bin/env python3
# test_values - the value reader (core/values.h) end to end: for every interpreter of the
# matrix, the catalog target (tests/targets/values_catalog.py) reports id -> repr() of ~250
# objects (every kind the reader knows, each instance-dict layout, cycles, huge values printed
# in their bounded forms); build/values-probe reads the same objects from the live process, a
# gdb core and a kernel crash core, and every answer must equal the target's own text exactly.
# Each probe run must also be quick: the huge values (1 MB str, 100,000-item list, 1,000-deep
# nesting, 100,000-digit int) are bounded, not walked. Damage cases overwrite the headers of
# random catalog objects in copies of a gdb core with random bytes and run the reader built
# with ASan/UBSan over them: every request answered, no report, no hang.
#
#   tests/e2e/test_values.py [-j N] [FILTER...]     (make test-values)
#
# FILTER picks cases by substring ("sid-3.14/", "/crash"); PYUNWIND_PYTHONS narrows the matrix.
# Ends with "test-values: N passed, N failed".
import os
import random
import shutil
import struct
import subprocess
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from harness import REPO, Target, run_cases, selected  # noqa: E402

PROBE = os.path.join(REPO, "build", "values-probe")
PROBE_SAN = os.path.join(REPO, "build", "values-probe-san")
DAMAGE_ROUNDS = 6     # damaged copies of one gdb core per interpreter
DAMAGE_OBJECTS = 40   # objects overwritten per copy
DAMAGE_PYTHONS = ("pyenv-2.7", "pyenv-3.8", "pyenv-3.11", "pyenv-3.12", "sid-3.14",
                  "sid-3.15")
PROBE_SECONDS = 10  # the whole catalog, per view; typically well under a second


def request(v):
    return "%s %s %s" % (v["op"], v["id"], v.get("arg", ""))


def probe(args, values):
    t0 = time.time()
    try:
        p = subprocess.run([PROBE] + args, input="\n".join(request(v) for v in values) + "\n",
                           capture_output=True, text=True, timeout=120)
    except subprocess.TimeoutExpired:
        raise AssertionError("values-probe %s: no answer within 120 s" % " ".join(args))
    elapsed = time.time() - t0
    if p.returncode != 0:
        raise AssertionError("values-probe %s: status %d: %s" % (" ".join(args), p.returncode,
                                                                 p.stderr[-2000:]))
    lines = p.stdout.splitlines()
    assert len(lines) == len(values), "%d answers for %d requests" % (len(lines), len(values))
    return lines, elapsed


def compare(values, lines, what):
    problems = []
    for v, line in zip(values, lines):
        parts = line.split(" ")
        if parts[0] != "OK":
            msg = bytes.fromhex(parts[1]).decode("utf-8", "replace") if len(parts) > 1 else ""
            problems.append("%s: error %s" % (v["name"], msg))
            continue
        got = bytes.fromhex(parts[1]).decode("utf-8", "strict")
        cut = parts[2] == "t"
        if got != v["expect"] or cut != v["cut"]:
            problems.append("%s:\n      got    %r%s\n      python %r%s"
                            % (v["name"], got[:600], " (cut)" if cut else "",
                               v["expect"][:600], " (cut)" if v["cut"] else ""))
    if problems:
        raise AssertionError("%s: %d of %d differ:\n  %s" % (
            what, len(problems), len(values), "\n  ".join(problems[:25])))


def check(args, values, what):
    lines, elapsed = probe(args, values)
    compare(values, lines, what)
    assert elapsed < PROBE_SECONDS, "%s: %.1f s for the catalog" % (what, elapsed)


def views_case(py):
    def run():
        with Target(py, "values_catalog") as t:
            values = t.truth["values"]
            check(["--pid", str(t.pid)], values, "live")
            core = t.gcore()
            check(["--core", core, "--exe", t.executable], values, "gdb core")
    return ("%s/live+gcore" % py.label, run)


def crash_case(py):
    def run():
        with Target(py, "values_catalog", mode="crash") as t:
            core = t.crash_core()
            check(["--core", core, "--exe", t.executable], t.truth["values"], "kernel core")
    return ("%s/crash" % py.label, run)


def load_segments(path):
    """(vaddr, file offset, file size) of each PT_LOAD of an ELF64 core."""
    with open(path, "rb") as f:
        hdr = f.read(64)
        phoff, = struct.unpack_from("<Q", hdr, 32)
        phentsize, phnum = struct.unpack_from("<HH", hdr, 54)
        f.seek(phoff)
        table = f.read(phentsize * phnum)
    segs = []
    for i in range(phnum):
        p_type, _, off, vaddr, _, filesz = struct.unpack_from("<IIQQQQ", table, i * phentsize)
        if p_type == 1:
            segs.append((vaddr, off, filesz))
    return segs


def file_offset(segs, addr):
    for vaddr, off, size in segs:
        if vaddr <= addr < vaddr + size:
            return off + addr - vaddr
    return None


def run_san(args, values, what):
    """The ASan probe must answer every request and exit 0 (an ASan/UBSan report exits 1)."""
    try:
        p = subprocess.run([PROBE_SAN] + args,
                           input="\n".join(request(v) for v in values) + "\n",
                           capture_output=True, text=True, timeout=120,
                           env=dict(os.environ, ASAN_OPTIONS="detect_leaks=1:abort_on_error=1",
                                    UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1"))
    except subprocess.TimeoutExpired:
        raise AssertionError("%s: no answer within 120 s (a hang?)" % what)
    if p.returncode != 0:
        raise AssertionError("%s: status %d:\n%s" % (what, p.returncode, p.stderr[-3000:]))
    lines = p.stdout.splitlines()
    assert len(lines) == len(values), "%s: %d answers for %d requests" % (what, len(lines),
                                                                         len(values))
    return lines


def damage_case(py):
    def run():
        rnd = random.Random(py.label)
        with Target(py, "values_catalog") as t:
            values = t.truth["values"]
            core = t.gcore()
            segs = load_segments(core)
            addrs = sorted(set(int(v["id"], 16) for v in values))
            changed = 0
            for r in range(DAMAGE_ROUNDS):
                copy = "%s.damaged" % core
                shutil.copyfile(core, copy)
                with open(copy, "r+b") as f:
                    for a in rnd.sample(addrs, min(DAMAGE_OBJECTS, len(addrs))):
                        # Header, sizes, item pointers: anywhere in the first 64 bytes.
                        off = file_offset(segs, a + rnd.randrange(0, 64, 8))
                        if off is not None:
                            f.seek(off)
                            f.write(bytes(rnd.getrandbits(8) for _ in range(8 * rnd.randint(1, 4))))
                lines = run_san(["--core", copy, "--exe", t.executable], values,
                                "damaged core, round %d" % r)
                os.unlink(copy)
                changed += sum(1 for v, line in zip(values, lines)
                               if line.split(" ")[0] != "OK" or bytes.fromhex(
                                   line.split(" ")[1]).decode("utf-8", "replace") != v["expect"])
            # The damage must have reached the reader, or the case proves nothing.
            assert changed > DAMAGE_ROUNDS, "only %d answers changed" % changed
    return ("%s/damage" % py.label, run)


def main():
    cases = []
    for py in selected():
        cases.append(views_case(py))
        cases.append(crash_case(py))
        if py.label in DAMAGE_PYTHONS:
            cases.append(damage_case(py))
    return run_cases(cases, prefix="test-values")


if __name__ == "__main__":
    sys.exit(main())
