# target - starts a target program under one interpreter, waits for its truth, and makes
# stopped views, gdb cores and kernel crash cores of it. Everything has a timeout; the process
# and its temporary directory are always cleaned up when the Target is closed.
import ctypes
import json
import os
import resource
import shutil
import signal
import subprocess
import tempfile
import threading
import time

from .counts import count
from .matrix import REPO

TARGETS = os.path.join(REPO, "tests", "targets")


def _load_clock():
    # The targets' own clock module (tests/targets/pyu_clock.py): the harness and the targets
    # measure their waits alike.
    import importlib.util
    spec = importlib.util.spec_from_file_location("pyu_clock",
                                                  os.path.join(TARGETS, "pyu_clock.py"))
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


pyu_clock = _load_clock()


class HarnessError(Exception):
    """The target or a tool misbehaved; the message says what happened, in plain words."""


_libc = ctypes.CDLL(None, use_errno=True)
PR_SET_PDEATHSIG = 1


def _child_setup():
    # Runs in the child before exec: cores of any size, and the target dies with the thread
    # that started it, so a killed test run leaves no parked targets behind.
    resource.setrlimit(resource.RLIMIT_CORE, (resource.RLIM_INFINITY, resource.RLIM_INFINITY))
    _libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)


def task_ids(pid):
    try:
        return sorted(int(t) for t in os.listdir("/proc/%d/task" % pid))
    except OSError:
        return []


# The system calls sleep(1) and time.sleep block in (nanosleep, clock_nanosleep), by machine.
_SLEEP_SYSCALLS = {"x86_64": (35, 230), "aarch64": (101, 115)}


def wait_asleep(pid, timeout=60):
    """Polls until process @pid (a `sleep` command, say) blocks in nanosleep or
    clock_nanosleep: past exec, the loader and its start-up, so that what a test reads or
    dumps is the settled program. Raises HarnessError after @timeout seconds."""
    numbers = _SLEEP_SYSCALLS.get(os.uname().machine, ())
    deadline = time.time() + timeout
    while time.time() < deadline:
        try:
            with open("/proc/%d/syscall" % pid) as f:
                words = f.read().split()
            if words and words[0].isdigit() and int(words[0]) in numbers:
                return
            with open("/proc/%d/wchan" % pid) as f:
                if "nanosleep" in f.read():  # where the numbers are not known
                    return
        except OSError:
            pass
        time.sleep(0.01)
    raise HarnessError("process %d did not go to sleep within %ds" % (pid, timeout))


def core_pattern():
    try:
        with open("/proc/sys/kernel/core_pattern") as f:
            return f.read().strip()
    except OSError:
        return "?"


class Target(object):
    """A running target program.

        with Target(py, "scenario") as t:        # py: an Interpreter (or a path)
            t.pid, t.truth, t.workdir
            core = t.gcore()
        with Target(py, "scenario", mode="crash") as t:
            core = t.crash_core()

    @program is a file name in tests/targets (".py" optional) or a path. The program is run as
    `PYTHON PROGRAM WORKDIR MODE` in WORKDIR and must write WORKDIR/truth.json when ready.
    @timeout: seconds of the target's own time (tests/targets/pyu_clock.py: the time it did
    not spend waiting for a CPU other programs had) for each wait on it - to get ready, to lose
    its reporter thread, to crash. @env adds to the environment (MALLOC_ARENA_MAX=1 is set
    unless given). @command: the argv that runs the interpreter, when it is not the
    interpreter's path alone (a dynamic loader started by hand: [LOADER, "--library-path",
    DIRS, PYTHON]). PYUNWIND_KEEP=1 keeps the work directory (truth, cores, stderr) for a look
    after a failure.
    """

    def __init__(self, py, program="scenario", mode="park", timeout=150, keep=False, env=None,
                 command=None):
        self.python = getattr(py, "path", py)
        self.command = list(command) if command else [self.python]
        self.interpreter = py
        self.mode = mode
        self.timeout = timeout
        self.keep = keep or bool(os.environ.get("PYUNWIND_KEEP"))
        if os.sep not in program:
            program = os.path.join(TARGETS, program if program.endswith(".py")
                                   else program + ".py")
        self.program = program
        self.workdir = tempfile.mkdtemp(prefix="pyu-target-")
        self.truth_path = os.path.join(self.workdir, "truth.json")
        self.extra_env = env or {}
        self.proc = None
        self.truth = None
        self.gcore_warnings = []
        self._cores = []
        # Held by whoever attaches to the process (a debugger, gdb making a core) when cases
        # share the target (harness/sharing.py): one tracer at a time.
        self.attach_lock = threading.Lock()
        self._once = {}

    # -- lifecycle --------------------------------------------------------------------------

    def __enter__(self):
        try:
            self.start()
        except BaseException:
            self.close()
            raise
        return self

    def __exit__(self, *exc):
        self.close()

    @property
    def pid(self):
        return self.proc.pid

    def start(self):
        self._out = open(os.path.join(self.workdir, "stdout.txt"), "w")
        self._err = open(os.path.join(self.workdir, "stderr.txt"), "w")
        env = dict(os.environ, PYTHONDONTWRITEBYTECODE="1", PYTHONUNBUFFERED="1",
                   PYTHONIOENCODING="utf-8")
        for var in ("PYTHONPATH", "PYTHONHOME", "PYTHONSTARTUP"):
            env.pop(var, None)
        # One malloc arena instead of one per thread: gdb cores shrink from ~1 GB to ~100 MB.
        env.setdefault("MALLOC_ARENA_MAX", "1")
        env.update(self.extra_env)
        count("target")
        self.proc = subprocess.Popen(self.command + [self.program, self.workdir, self.mode],
                                     cwd=self.workdir, stdin=subprocess.DEVNULL,
                                     stdout=self._out, stderr=self._err, env=env,
                                     preexec_fn=_child_setup)
        self.truth = self._wait_truth()
        if self.mode != "crash":
            self._wait_tasks(len(self.truth["threads"]))

    def _stderr_tail(self):
        try:
            with open(os.path.join(self.workdir, "stderr.txt"), errors="replace") as f:
                return f.read()[-3000:]
        except OSError:
            return ""

    def _wait_truth(self):
        # The target's verdict - truth, error.json or its exit - within self.timeout seconds of
        # the target's own time: on a loaded machine a niced target may get a percent of a CPU,
        # and a debug build compiling its standard library (no .pyc in the private root) then
        # needs minutes of wall-clock time to get ready.
        clock = pyu_clock.Clock(self.pid)
        err_path = os.path.join(self.workdir, "error.json")
        while not clock.expired(self.timeout):
            if os.path.exists(self.truth_path):
                with open(self.truth_path, encoding="utf-8") as f:
                    return json.load(f)
            if os.path.exists(err_path):
                with open(err_path) as f:
                    raise HarnessError("%s: target reported %s" % (self.python, f.read()))
            if self.proc.poll() is not None and not os.path.exists(self.truth_path):
                raise HarnessError("%s exited with status %s before it was ready:\n%s"
                                   % (self.python, self.proc.returncode, self._stderr_tail()))
            time.sleep(0.02)
        raise HarnessError("%s: no truth within %ds of its own time, after %s:\n%s"
                           % (self.python, self.timeout, clock.describe(),
                              self._stderr_tail()))

    def _wait_tasks(self, count):
        # The reporter thread must be gone before anyone looks: the truth leaves it out.
        clock = pyu_clock.Clock(self.pid)
        while not clock.expired(self.timeout):
            n = len(task_ids(self.pid))
            if n == count:
                return
            if self.proc.poll() is not None:
                raise HarnessError("target exited (status %s):\n%s"
                                   % (self.proc.returncode, self._stderr_tail()))
            time.sleep(0.02)
        raise HarnessError("target has %d threads, truth lists %d, after %s"
                           % (len(task_ids(self.pid)), count, clock.describe()))

    def close(self):
        if self.proc is not None and self.proc.poll() is None:
            try:
                os.kill(self.proc.pid, signal.SIGCONT)
                self.proc.kill()
            except OSError:
                pass
            try:
                self.proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                pass
        for f in (getattr(self, "_out", None), getattr(self, "_err", None)):
            if f is not None:
                f.close()
        if not self.keep:
            shutil.rmtree(self.workdir, ignore_errors=True)

    # -- views of the target ----------------------------------------------------------------

    def stopped(self):
        """Context manager: the target stopped with SIGSTOP (every thread) while inside."""
        return _Stopped(self.pid, self.timeout)

    def gcore(self, path=None):
        """A core made by gdb's generate-core-file; returns its path (non-empty, or raises).
        gdb's own "Memory read failed for corefile section" warnings land in
        self.gcore_warnings. Known case: glibc 2.42+ (the Debian unstable builds' private root)
        guards thread stacks with MADV_GUARD_INSTALL pages inside the stack mapping; gdb 13
        cannot read them and leaves the rest of that stack mapping zero in its core - so C-stack
        frames (3.12+ entry frames) of those threads read as zeros from a gdb core, while the
        kernel's crash core has them."""
        path = path or os.path.join(self.workdir, "gcore.%d" % self.pid)
        cmd = ["gdb", "-nx", "-batch", "-p", str(self.pid),
               "-ex", "generate-core-file " + path]
        count("gcore")
        try:
            out = subprocess.run(cmd, capture_output=True, text=True, timeout=180,
                                 stdin=subprocess.DEVNULL)
        except subprocess.TimeoutExpired:
            raise HarnessError("gdb generate-core-file timed out")
        if not os.path.exists(path) or os.path.getsize(path) == 0:
            raise HarnessError("gdb wrote no core (status %d):\n%s%s"
                               % (out.returncode, out.stdout[-2000:], out.stderr[-2000:]))
        self._cores.append(path)
        self.gcore_warnings = [l.strip() for l in out.stderr.splitlines()
                               if "Memory read failed" in l]
        return path

    def _made_once(self, what, make):
        with self.attach_lock:
            if what not in self._once:
                try:
                    self._once[what] = (make(), None)
                except HarnessError as e:
                    self._once[what] = (None, e)
        path, error = self._once[what]
        if error is not None:
            raise error
        return path

    def gcore_once(self):
        """gcore(), made by the first caller and the same path for every later one (cases
        that share the target read one core); its failure is every caller's."""
        return self._made_once("gcore", self.gcore)

    def crash_core_once(self):
        """crash_core(), waited for once; later callers get the same core (or error)."""
        return self._made_once("crash", self.crash_core)

    def crash_core(self):
        """For mode="crash": waits for the crash and returns the kernel core's path. Raises
        HarnessError saying why when the process did not crash or no core file appeared."""
        clock = pyu_clock.Clock(self.pid)
        while self.proc.poll() is None:
            if clock.expired(self.timeout):
                raise HarnessError("target did not crash within %ds of its own time, after %s"
                                   % (self.timeout, clock.describe()))
            time.sleep(0.02)
        # Past the crash and the core's writing (the kernel writes it before the process
        # ends): a bound on how long the target ran, unlike the core file's mtime, which the
        # file system takes from a coarse clock.
        self.ended_by = time.time()
        rc = self.proc.returncode
        if rc != -signal.SIGSEGV:
            raise HarnessError("target ended with status %s, not SIGSEGV:\n%s"
                               % (rc, self._stderr_tail()))
        pattern = core_pattern()
        deadline = time.time() + 30
        names = ("core", "core.%d" % self.pid)
        last = None
        while time.time() < deadline:
            for n in names:
                p = os.path.join(self.workdir, n)
                if os.path.exists(p):
                    size = os.path.getsize(p)
                    if size > 0 and size == last:
                        count("crash core")
                        self._cores.append(p)
                        return p
                    last = size
            time.sleep(0.1)
        if pattern.startswith("|"):
            raise HarnessError("no kernel core: core_pattern pipes cores to a program (%s); "
                               "set it to 'core' to get core files" % pattern)
        raise HarnessError("no kernel core file in %s (core_pattern is %r, RLIMIT_CORE was "
                           "raised)" % (self.workdir, pattern))

    def gdbserver(self):
        """Context manager: gdbserver attached to the target; yields "127.0.0.1:PORT" for
        gdb's `target remote` (the debugger-read path, with no local pid or core to open)."""
        return _GdbServer(self.pid, self.timeout)

    @property
    def executable(self):
        return os.path.realpath(self.python)

    def thread(self, scenario):
        """The truth entry of the thread running @scenario (e.g. "recursion")."""
        for t in self.truth["threads"]:
            if t.get("scenario") == scenario:
                return t
        raise KeyError("no thread for scenario %s" % scenario)


def stopped(pid, timeout=60):
    """Context manager: process @pid stopped with SIGSTOP while inside - entered once every
    thread shows the stopped state, not after a guess of how long that takes."""
    return _Stopped(pid, timeout)


class _Stopped(object):
    def __init__(self, pid, timeout):
        self.pid = pid
        self.timeout = timeout

    def __enter__(self):
        os.kill(self.pid, signal.SIGSTOP)
        deadline = time.time() + self.timeout
        while time.time() < deadline:
            states = []
            for tid in task_ids(self.pid):
                try:
                    with open("/proc/%d/task/%d/stat" % (self.pid, tid)) as f:
                        states.append(f.read().rsplit(")", 1)[1].split()[0])
                except (OSError, IndexError):
                    pass
            if states and all(s in "Tt" for s in states):
                return self
            time.sleep(0.01)
        os.kill(self.pid, signal.SIGCONT)
        raise HarnessError("process %d did not stop" % self.pid)

    def __exit__(self, *exc):
        try:
            os.kill(self.pid, signal.SIGCONT)
        except OSError:
            pass


class _GdbServer(object):
    def __init__(self, pid, timeout):
        self.pid = pid
        self.timeout = timeout
        self.proc = None

    def __enter__(self):
        import socket
        for _ in range(20):
            sock = socket.socket()
            sock.bind(("127.0.0.1", 0))
            port = sock.getsockname()[1]
            sock.close()
            self.log = tempfile.TemporaryFile()
            self.proc = subprocess.Popen(["gdbserver", "--attach", "127.0.0.1:%d" % port,
                                          str(self.pid)], stdin=subprocess.DEVNULL,
                                         stdout=self.log, stderr=subprocess.STDOUT)
            deadline = time.time() + self.timeout
            while time.time() < deadline and self.proc.poll() is None:
                self.log.seek(0)
                if b"Listening on port" in self.log.read():
                    return "127.0.0.1:%d" % port
                time.sleep(0.05)
            self.__exit__()
        raise HarnessError("gdbserver did not start listening")

    def __exit__(self, *exc):
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(timeout=10)
        self.proc = None
        if getattr(self, "log", None) is not None:
            self.log.close()
            self.log = None
