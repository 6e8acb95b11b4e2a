# debuggers - runs real gdb and lldb in batch mode with the pyunwind adapters loaded, and
# returns what the commands printed (the debuggers' own start-up chatter cut off).
import os
import re
import subprocess

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
