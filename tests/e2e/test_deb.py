#!/usr/bin/env python3
# test_deb - the Debian package as a user gets it: `make deb` (dpkg-buildpackage, lintian clean
# but for the reasoned overrides), installed on this machine with dpkg, then - with an empty
# HOME, so no init file of ours, and without -nx, so gdb reads its system gdbinit directory as
# it does for users - gdb against a live Python process and a kernel crash core has py-bt;
# lldb gets the commands from the documented one-line import; Debian's python3 imports
# pyunwind; the man page and the CLI are there. `make deb` also builds from a source tarball
# (`git archive` of HEAD) the same package. The package is removed (`dpkg -r`, which keeps the
# gdbinit.d conffile) and gdb starts silently without py-bt, then purged and nothing is left.
# Runs as root or with password-less sudo; one run at a time.
#
#   tests/e2e/test_deb.py     (make test-deb)
import fcntl
import json
import os
import shutil
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from harness import REPO, Target, HarnessError, by_label, compare, selected  # noqa: E402

FIELDS = ("function", "qualname", "file", "line", "end_line", "column", "end_column")
LLDB = os.environ.get("PYUNWIND_LLDB", "lldb-16")
WORK = tempfile.mkdtemp(prefix="pyu-deb-")
HOME = os.path.join(WORK, "home")
os.makedirs(HOME)
ENV = dict(os.environ, HOME=HOME, XDG_CONFIG_HOME=os.path.join(HOME, ".config"))
for var in ("PYUNWIND_LIB", "PYTHONPATH", "PYUNWIND_READS"):
    ENV.pop(var, None)
SUDO = [] if os.geteuid() == 0 else ["sudo", "-n"]
results = [0, 0]


def report(ok, name, msg=""):
    results[0 if ok else 1] += 1
    print("%s %s%s" % ("ok  " if ok else "FAIL", name, "" if ok else
                       "\n    " + msg.replace("\n", "\n    ")))
    sys.stdout.flush()


def run(cmd, timeout=300, **kw):
    p = subprocess.run(cmd, capture_output=True, timeout=timeout, stdin=subprocess.DEVNULL,
                       env=kw.pop("env", ENV), **kw)
    return p.returncode, p.stdout.decode("utf-8", "replace"), p.stderr.decode("utf-8",
                                                                              "replace")


def check(name, fn):
    try:
        fn()
        report(True, name)
        return True
    except (AssertionError, HarnessError, OSError, subprocess.SubprocessError,
            ValueError) as e:
        report(False, name, str(e))
        return False


def json_in(text):
    """The JSON document inside a debugger's output."""
    start = text.find('{"pyunwind"')
    assert start >= 0, "no JSON document in:\n%s" % text[-2000:]
    return json.JSONDecoder().raw_decode(text[start:])[0]


def installed():
    return run(["dpkg-query", "-W", "-f=${Status}", "pyunwind"])[1].startswith("install ok")


def main():
    py = by_label("debian-3.11") or selected()[-1]
    state = {}

    def build():
        rc, out, err = run(["make", "--no-print-directory", "-s", "deb"], timeout=900,
                           cwd=REPO, env=os.environ)
        assert rc == 0, "make deb: status %d\n%s%s" % (rc, out[-3000:], err[-3000:])
        state["deb"] = os.path.join(REPO, out.strip().splitlines()[-1])
        assert os.path.exists(state["deb"]), "no package at %s" % state["deb"]

    def build_from_archive():
        src = os.path.join(WORK, "src")
        os.makedirs(src)
        archive = subprocess.run(["git", "archive", "--format=tar", "HEAD"], cwd=REPO,
                                 capture_output=True, timeout=120, check=True).stdout
        subprocess.run(["tar", "-x", "-C", src], input=archive, capture_output=True,
                       timeout=120, check=True)
        assert not os.path.exists(os.path.join(src, ".git")), "the archive has a .git"
        rc, out, err = run(["make", "--no-print-directory", "-s", "deb"], timeout=900,
                           cwd=src, env=os.environ)
        assert rc == 0, "make deb from git archive: status %d\n%s%s" % (rc, out[-3000:],
                                                                      err[-3000:])
        deb = os.path.join(src, out.strip().splitlines()[-1])
        assert os.path.exists(deb), "no package at %s" % deb

        def names(path):
            listing = subprocess.run(["dpkg-deb", "-c", path], capture_output=True, timeout=60,
                                     check=True).stdout.decode()
            return set(line.split()[5] for line in listing.splitlines())
        if "deb" in state:
            a, b = names(state["deb"]), names(deb)
            assert a == b, "the tarball's package differs from the checkout's: only in the " \
                "checkout's %s, only in the tarball's %s" % (sorted(a - b), sorted(b - a))

    def install():
        if installed():  # left over by an interrupted run
            run(SUDO + ["dpkg", "--purge", "pyunwind"], env=os.environ)
        rc, out, err = run(SUDO + ["dpkg", "-i", state["deb"]], env=os.environ)
        assert rc == 0 and installed(), "dpkg -i: status %d\n%s%s" % (rc, out, err)

    def gdb(args, commands):
        cmd = ["gdb", "-q", "-batch", "-iex", "set pagination off"] + args
        for c in commands:
            cmd += ["-ex", c]
        return run(cmd, timeout=180)

    def gdb_live():
        with Target(py, "scenario") as t:
            rc, out, err = gdb(["-p", str(t.pid)], ["py-bt --all --json"])
        problems = compare(t.truth, json_in(out), fields=FIELDS)
        assert not problems, "gdb -p: %s\n%s" % (problems[:8], err[-1500:])

    def gdb_core():
        with Target(py, "scenario", mode="crash") as t:
            core = t.crash_core()
            state["core"], state["exe"] = os.path.join(WORK, "core"), t.executable
            shutil.move(core, state["core"])
            state["truth"] = t.truth
        rc, out, err = gdb([state["exe"], state["core"]], ["py-bt --all --json"])
        problems = compare(state["truth"], json_in(out), fields=FIELDS)
        assert not problems, "gdb core: %s\n%s" % (problems[:8], err[-1500:])

    def lldb_core():
        assert "core" in state, "no core (the gdb core case failed)"
        rc, out, err = run([LLDB, "-b", "-o",
                            "command script import /usr/share/pyunwind/lldb/pyunwind.py",
                            "-o", "py-bt --all --json", "-c", state["core"], state["exe"]],
                           timeout=180)
        problems = compare(state["truth"], json_in(out), fields=FIELDS)
        assert not problems, "lldb core: %s\n%s" % (problems[:8], err[-1500:])

    def python_module():
        assert "core" in state, "no core (the gdb core case failed)"
        rc, out, err = run(["/usr/bin/python3", "-c",
                            "import json, sys, pyunwind; "
                            "print(pyunwind.library_path()); "
                            "print(json.dumps(pyunwind.triage(sys.argv[1])))", state["core"]],
                           cwd=WORK)
        assert rc == 0, "python3 -c 'import pyunwind': %s" % err[-1500:]
        lib, doc = out.splitlines()[0], json.loads(out.splitlines()[1])
        assert os.path.realpath(lib) == "/usr/lib/pyunwind/libpyunwind.so", lib
        rc, cli, err = run(["/usr/bin/pyunwind", "triage", "--json", state["core"]])
        assert rc == 0 and json.loads(cli) == doc, \
            "the module's triage document differs from /usr/bin/pyunwind's"

    def cli_and_man():
        rc, out, err = run(["/usr/bin/pyunwind", "--help"])
        assert rc == 0 and "pyunwind triage" in out, out
        rc, out, err = run(["man", "-w", "pyunwind"])
        assert rc == 0 and out.strip() == "/usr/share/man/man1/pyunwind.1.gz", (rc, out, err)

    def gdb_silent():
        rc, out, err = gdb([], [])
        assert rc == 0 and err == "" and out == "", \
            "gdb -batch: status %d, stdout %r, stderr %r" % (rc, out, err)
        rc, out, err = gdb([], ["help py-bt"])
        assert rc == 0 and "Undefined command" not in out + err, \
            "gdb does not know py-bt:\n%s%s" % (out, err)

    def remove():
        rc, out, err = run(SUDO + ["dpkg", "--remove", "pyunwind"], env=os.environ)
        assert rc == 0 and not installed(), "dpkg --remove: %s%s" % (out, err)
        for p in ("/usr/bin/pyunwind", "/usr/share/pyunwind", "/usr/lib/pyunwind"):
            assert not os.path.exists(p), "%s is still there after dpkg --remove" % p
        # The conffile stays until a purge: the case a removed package must survive.
        assert os.path.exists("/etc/gdb/gdbinit.d/pyunwind.gdb"), \
            "dpkg --remove took the conffile: the removed-not-purged state is not tested"
        rc, out, err = gdb([], [])
        assert rc == 0 and err == "" and out == "", \
            "gdb -batch after dpkg --remove: status %d, stdout %r, stderr %r" % (rc, out, err)
        rc, out, err = gdb([], ["help py-bt"])
        assert "Undefined command" in out + err, \
            "gdb still knows py-bt after dpkg --remove:\n%s%s" % (out, err)

    def purge():
        rc, out, err = run(SUDO + ["dpkg", "--purge", "pyunwind"], env=os.environ)
        assert rc == 0 and not installed(), "dpkg --purge: %s%s" % (out, err)
        for p in ("/usr/bin/pyunwind", "/etc/gdb/gdbinit.d/pyunwind.gdb", "/usr/share/pyunwind",
                  "/usr/lib/pyunwind"):
            assert not os.path.exists(p), "%s is still there" % p
        rc, out, err = gdb([], [])
        assert rc == 0 and err == "" and out == "", \
            "gdb -batch after dpkg --purge: status %d, stdout %r, stderr %r" % (rc, out, err)
        rc, out, err = gdb([], ["help py-bt"])
        assert "Undefined command" in out + err, "gdb still knows py-bt:\n%s%s" % (out, err)

    with open(os.path.join(tempfile.gettempdir(), "pyunwind-test-deb.lock"), "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if check("deb: make deb (dpkg-buildpackage, lintian)", build) and \
                check("deb: dpkg -i", install):
            try:
                check("deb: gdb -p PID, no init file of ours", gdb_live)
                check("deb: gdb EXE CORE, no init file of ours", gdb_core)
                check("deb: lldb, the one-line command script import", lldb_core)
                check("deb: python3 -c 'import pyunwind'", python_module)
                check("deb: /usr/bin/pyunwind and man pyunwind", cli_and_man)
                check("deb: gdb starts silently with the package installed", gdb_silent)
            finally:
                check("deb: dpkg --remove: gdb starts silently, no py-bt", remove)
                check("deb: dpkg --purge leaves nothing", purge)
        check("deb: make deb from a source tarball (git archive HEAD)", build_from_archive)
    shutil.rmtree(WORK, ignore_errors=True)
    print("test-deb: %d passed, %d failed" % tuple(results))
    return 1 if results[1] else 0


if __name__ == "__main__":
    sys.exit(main())
