# debuggers - runs real gdb and lldb in batch mode with the pyunwind adapters loaded, and
# returns what the commands printed (the debuggers' own start-up chatter cut off); or one
# interactively on a pseudo-terminal (PtyDebugger), for what only a terminal shows and Ctrl-C.
import fcntl
import os
import pty
import re
import select
import struct
import subprocess
import termios
import time

from .counts import count
from .matrix import REPO
from .target import HarnessError

GDB_PLUGIN = os.path.join(REPO, "gdb", "pyunwind.py")
LLDB_PLUGIN = os.path.join(REPO, "lldb", "pyunwind.py")
LLDB = os.environ.get("PYUNWIND_LLDB", "lldb-16")
MARK = "--- pyunwind output ---"


def _run(cmd, timeout, env=None):
    # @env adds to (or, with a value of None, removes from) this process's environment for the
    # child alone: os.environ is never changed, so concurrent cases cannot see each other's.
    child_env = None
    if env:
        child_env = dict(os.environ)
        for k, v in env.items():
            if v is None:
                child_env.pop(k, None)
            else:
                child_env[k] = v
    count("lldb" if cmd[0] == LLDB else os.path.basename(cmd[0]))
    with subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                          stdin=subprocess.DEVNULL, env=child_env) as p:
        try:
            stdout, stderr = p.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            # What the debugger is stuck in, before it is killed: a hang says nothing else
            # (lldb that aborts on a corrupted heap hangs in its own abort handler).
            doing = what_it_does(p.pid)
            p.kill()
            stdout, stderr = p.communicate()
            raise HarnessError("%s gave no answer within %ds; it was doing:\n%s\n"
                               "its last output:\n%s\n%s"
                               % (cmd[0], timeout, doing,
                                  stdout.decode("utf-8", "replace")[-1500:],
                                  stderr.decode("utf-8", "replace")[-1500:]))
    out = stdout.decode("utf-8", "replace")
    return p.returncode, out.split(MARK, 1)[1].lstrip("\n") if MARK in out else out, \
        stderr.decode("utf-8", "replace")


_FRAME_LINE = re.compile(r"^(Thread \d+ |#\d+ )")


def what_it_does(pid, timeout=60, max_lines=80):
    """A hung process's threads - name, state and the kernel's wait channel each - and gdb's
    backtrace of every thread (at most @max_lines lines, within @timeout seconds); a text for
    a timeout's message. Never raises."""
    lines = []
    try:
        tids = sorted(int(t) for t in os.listdir("/proc/%d/task" % pid))
    except OSError as e:
        return "  (its threads cannot be listed: %s)" % e
    for tid in tids[:64]:
        parts = []
        for name in ("comm", "wchan"):
            try:
                with open("/proc/%d/task/%d/%s" % (pid, tid, name)) as f:
                    parts.append(f.read().strip() or "-")
            except OSError:
                parts.append("?")
        try:
            with open("/proc/%d/task/%d/stat" % (pid, tid)) as f:
                state = f.read().rsplit(")", 1)[1].split()[0]
        except (OSError, IndexError):
            state = "?"
        lines.append("  thread %d %s: state %s, waits in %s" % (tid, parts[0], state, parts[1]))
    try:
        bt = subprocess.run(["gdb", "-nx", "-batch", "-iex", "set debuginfod enabled off",
                             "-p", str(pid), "-ex", "thread apply all bt 30"],
                            capture_output=True, timeout=timeout, stdin=subprocess.DEVNULL)
        frames = [l for l in bt.stdout.decode("utf-8", "replace").splitlines()
                  if _FRAME_LINE.match(l)]
        lines += ["  " + l[:200] for l in frames[:max_lines]]
        if len(frames) > max_lines:
            lines.append("  ... %d more lines" % (len(frames) - max_lines))
    except (OSError, subprocess.TimeoutExpired) as e:
        lines.append("  (no backtrace: %s)" % e)
    return "\n".join(lines)


def gdb_cmd(target_args, commands, plugin=GDB_PLUGIN):
    """gdb's argv: @target_args is ["-p", PID] or [EXECUTABLE, CORE]."""
    cmd = ["gdb", "-nx", "-q", "-batch", "-iex", "set pagination off",
           "-iex", "set debuginfod enabled off"] + list(target_args)
    cmd += ["-ex", "echo " + MARK + "\\n", "-ex", "source " + plugin]
    for c in commands:
        cmd += ["-ex", c]
    return cmd


def lldb_cmd(target_args, commands, plugin=LLDB_PLUGIN):
    """lldb's argv: @target_args is ["-p", PID] or ["-c", CORE, EXECUTABLE]. lldb echoes each
    command as "(lldb) COMMAND" before its output."""
    # The marker is built at run time so that lldb's echo of the command does not contain it.
    # lldb gives lldb-server at least 6 s (its packet timeout, 5 s by default) to answer the
    # handshake of an attach; a loaded machine has taken longer ("attach failed: failed to get
    # reply to handshake packet"). -O runs before the attach; the harness' timeout still holds.
    cmd = [LLDB, "-b", "--no-lldbinit",
           "-O", "settings set plugin.process.gdb-remote.packet-timeout 60"] + list(target_args)
    cmd += ["-o", "script print('%s' + '%s')" % (MARK[:10], MARK[10:]),
            "-o", "command script import " + plugin]
    for c in commands:
        cmd += ["-o", c]
    return cmd


def gdb_batch(target_args, commands, timeout=120, plugin=GDB_PLUGIN, env=None):
    """Runs gdb -batch with the adapter loaded and @commands; returns (status, output of the
    commands, stderr). @env: variables to set (None: unset) for this gdb only."""
    return _run(gdb_cmd(target_args, commands, plugin), timeout, env)


def lldb_batch(target_args, commands, timeout=120, plugin=LLDB_PLUGIN, env=None):
    """Runs lldb -b with the adapter loaded and @commands; returns (status, output from the
    import command on - each command echoed as "(lldb) ..." - and stderr). @env: variables to
    set (None: unset) for this lldb only."""
    return _run(lldb_cmd(target_args, commands, plugin), timeout, env)


class PtyDebugger(object):
    """gdb or lldb run interactively with a pseudo-terminal as its controlling terminal and
    stdin, stdout and stderr (400 columns: nothing wraps), the adapter loaded. Commands are
    typed; output is read until the next prompt. Ctrl-C is typed as a terminal sends it (^C:
    SIGINT to the foreground process group). Use as a context manager: the debugger is killed
    at the end if it did not quit."""
    PROMPT = "pyu-prompt>"

    def __init__(self, kind, target_args, timeout=120):
        self.kind = kind
        master, slave = pty.openpty()
        fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 50, 400, 0, 0))
        if kind == "gdb":
            argv = ["gdb", "-nx", "-q", "-iex", "set pagination off",
                    "-iex", "set debuginfod enabled off", "-iex", "set style enabled off",
                    "-iex", "set width 0", "-iex", "set height 0", "-iex", "set confirm off",
                    "-iex", "set prompt %s " % self.PROMPT] + list(target_args) + [
                        "-ex", "source " + GDB_PLUGIN]
        else:
            argv = [LLDB, "--no-lldbinit", "--no-use-colors"] + list(target_args) + [
                "-o", "settings set prompt '%s '" % self.PROMPT,
                "-o", "command script import " + LLDB_PLUGIN]
        count("lldb" if kind == "lldb" else "gdb")

        def controlling_terminal():
            os.setsid()
            fcntl.ioctl(0, termios.TIOCSCTTY, 0)

        self.p = subprocess.Popen(argv, stdin=slave, stdout=slave, stderr=slave,
                                  preexec_fn=controlling_terminal, close_fds=True,
                                  env=dict(os.environ, TERM="xterm"))
        os.close(slave)
        self.master = master
        self.buf = b""
        self.at = 0
        try:
            self.read_until(self.PROMPT, timeout)
            if kind == "lldb":  # the prompt set by -o shows after the import's output
                self.command("script print(12345 * 2)", timeout)
        except BaseException:
            self.close()
            raise

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def _read(self, wait):
        r, _, _ = select.select([self.master], [], [], wait)
        if not r:
            return False
        try:
            chunk = os.read(self.master, 65536)
        except OSError:
            chunk = b""
        if not chunk:
            raise HarnessError("%s ended: %r" % (self.kind, self.text()[-1500:]))
        self.buf += chunk
        return True

    def text(self, start=0):
        return self.buf[start:].decode("utf-8", "replace").replace("\r", "")

    def read_until(self, pattern, timeout):
        """Reads until @pattern shows after what was read before; returns the text from
        there (the pattern included)."""
        want = pattern.encode()
        deadline = time.time() + timeout
        while want not in self.buf[self.at:]:
            if time.time() > deadline:
                raise HarnessError("%s: no %r within %ds; the terminal shows: %r" % (
                    self.kind, pattern, timeout, self.text(self.at)[-1500:]))
            self._read(0.1)
        end = self.buf.index(want, self.at) + len(want)
        out = self.text(self.at)[:len(self.buf[self.at:end].decode("utf-8", "replace")
                                      .replace("\r", ""))]
        self.at = end
        return out

    def type(self, text):
        os.write(self.master, text.encode())

    def command(self, line, timeout=120):
        """Types @line and returns what the terminal showed until the next prompt."""
        self.type(line + "\n")
        return self.read_until(self.PROMPT, timeout)

    def close(self):
        if self.p.poll() is None:
            try:
                self.type("quit\n")
            except OSError:
                pass
            try:
                self.p.wait(10)
            except subprocess.TimeoutExpired:
                self.p.kill()
                self.p.wait()
        try:
            os.close(self.master)
        except OSError:
            pass
