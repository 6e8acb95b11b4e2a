# debuggers - runs real gdb and lldb in batch mode with the pyunwind adapters loaded, and
# returns what the commands printed (the debuggers' own start-up chatter cut off).
import os
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
    try:
        p = subprocess.run(cmd, capture_output=True, timeout=timeout, stdin=subprocess.DEVNULL,
                           env=child_env)
    except subprocess.TimeoutExpired:
        raise HarnessError("%s gave no answer within %ds" % (cmd[0], timeout))
    out = p.stdout.decode("utf-8", "replace")
    return p.returncode, out.split(MARK, 1)[1].lstrip("\n") if MARK in out else out, \
        p.stderr.decode("utf-8", "replace")


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
    cmd = [LLDB, "-b", "--no-lldbinit"] + list(target_args)
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
