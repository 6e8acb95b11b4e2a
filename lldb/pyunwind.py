# pyunwind.py for lldb - adds py-bt, py-line, py-list, py-locals, py-print, py-tasks, py-task,
# py-heap, py-up and py-down.
# Load with `command script import /path/to/lldb/pyunwind.py`. This file only translates between
# lldb's SB API and the C core (through python/pyunwind/pyunwind_core.py).
import bisect
import contextlib
import os
import re
import sys
import threading

import lldb

_HERE = os.path.dirname(os.path.realpath(__file__))
# The shared binding is the `pyunwind` Python package's pyunwind_core module, beside this
# directory in a checkout and in an install (PREFIX/share/pyunwind/{gdb,lldb,python}).
for _d in (os.path.join(_HERE, os.pardir, "python", "pyunwind"),):
    _d = os.path.normpath(_d)
    if os.path.isdir(_d) and _d not in sys.path:
        sys.path.insert(0, _d)

import pyunwind_core as core  # noqa: E402

# What one of lldb's memory reads of a live process costs through lldb-server (lldb 16, a local
# process, measured with SBProcess.ReadMemory): about 70 us a read and 20 us a KiB (35 us on an
# idle machine, 80-130 loaded; 24 us a KiB, two thirds of it lldb-server escaping the reply a
# byte at a time: bench/profile.md). Bytes are dear: the core reads only the sectors (2 KiB) a
# miss needs; 512 and 1,024 were measured too and were no faster. A core file's bytes are not.
_LLDB_LIVE_READ_COST = (70, 20)

_SYSROOT_RE = re.compile(r"^ *Sysroot: (.*\S)", re.M)
_FILE_LIST_ITEM_RE = re.compile(r" *\[(\d+)\]: ")


def _file_list(text):
    """The paths of an lldb file-list setting as lldb 16 gives its value: one string,
    "  [0]: /a  [1]: /b c". Items must be numbered 0, 1, ... in order; else none is trusted."""
    parts = _FILE_LIST_ITEM_RE.split(text)
    if parts[0].strip():
        return []
    paths = []
    for i in range(1, len(parts) - 1, 2):
        if int(parts[i]) != len(paths):
            return []
        if parts[i + 1]:
            paths.append(parts[i + 1])
    return paths


def _mapped_core_files():
    """Core files this lldb process has mapped: lldb's SB API does not name a process's core
    file, but lldb maps the file it opened, so /proc/self/maps does."""
    found = []
    try:
        with open("/proc/self/maps") as f:
            lines = f.read().splitlines()
    except OSError:
        return found
    # Each file is looked at once; one mapped executable is a program or library lldb runs
    # (most of the fifty files it maps, each opened 0.1 ms), never a core: lldb maps a core to
    # read it.
    paths, skip = [], set()
    for line in lines:
        parts = line.split(None, 5)
        if len(parts) < 6 or not parts[5].startswith("/"):
            continue
        if "x" in parts[1]:
            skip.add(parts[5])
        else:
            paths.append(parts[5])
    for path in paths:
        if path in skip:
            continue
        skip.add(path)
        if core.is_core_file(path):
            found.append(path)
    return found


class LldbView(core.DebuggerView):
    def interrupted(self):
        # SBDebugger.InterruptRequested (lldb 17+): Ctrl-C while a command runs. Older lldb
        # raises KeyboardInterrupt in the Python that runs next, as gdb does.
        check = getattr(self.debugger, "InterruptRequested", None)
        return bool(check()) if check is not None else False

    def __init__(self, debugger, exe_ctx):
        self.debugger = debugger
        target = exe_ctx.GetTarget() if exe_ctx is not None else None
        if target is None or not target.IsValid():
            target = debugger.GetSelectedTarget()
        self.target = target
        self.process = target.GetProcess() if target and target.IsValid() else None

    def require_process(self):
        p = self.process
        if p is None or not p.IsValid() or p.GetState() in (
                lldb.eStateInvalid, lldb.eStateUnloaded, lldb.eStateDetached,
                lldb.eStateExited, lldb.eStateConnected):
            raise core.PyunwindError("no process: run or attach to a Python program, "
                                     "or open a core file")
        if p.GetState() == lldb.eStateRunning:
            raise core.PyunwindError("the process is running; interrupt it first")

    def stop_key(self):
        p = self.process
        if p is None or not p.IsValid():
            return None
        return (p.GetUniqueID(), p.GetProcessID(), p.GetStopID())

    def writes_unseen(self):
        # `memory write`, `expression` and scripts write a live process without a new stop
        # id and without an event; a core cannot be written.
        p = self.process
        return p is not None and p.IsValid() and p.GetPluginName() != "elf-core"

    def target_openers(self, lib):
        p = self.process
        forced = os.environ.get("PYUNWIND_READS") == "debugger"
        pid = p.GetProcessID()
        exe = self.target.GetExecutable()
        exe_path = exe.fullpath if exe and exe.IsValid() else None
        if not forced and p.GetPluginName() == "elf-core":
            cores = _mapped_core_files()
            if len(cores) == 1:
                yield "reading the core file", \
                    lambda: core.Target.open_core(lib, cores[0], exe_path) \
                    .look_for_files(self._sysroot(), self._search_paths())
        elif not forced and self.target.GetPlatform().GetName() == "host" and pid > 0 \
                and self._same_executable(pid, exe_path):
            yield "reading /proc", lambda: core.Target.open_pid(lib, pid)
            return
        # gdb-remote: a live process through lldb-server; cores and the rest read locally.
        cost = _LLDB_LIVE_READ_COST if p.GetPluginName() == "gdb-remote" else None
        # The modules' sections place every file, _PyRuntime included; listing the memory
        # regions costs a round trip to lldb-server per region (most of the time of a whole
        # py-bt), so they are asked for only when the sections were not enough.
        yield "through lldb's memory reads", \
            lambda: core.Target.open_reader(lib, self._reader(), self._mappings(False),
                                            self._threads(), self._registers, cost)
        yield "through lldb's memory reads and regions", \
            lambda: core.Target.open_reader(lib, self._reader(), self._mappings(True),
                                            self._threads(), self._registers, cost)

    def _sysroot(self):
        """lldb's platform sysroot (`platform select --sysroot DIR host`, as gdb's `set
        sysroot`): the SB API has no getter for it, `platform status` prints it."""
        try:
            res = lldb.SBCommandReturnObject()
            self.target.GetDebugger().GetCommandInterpreter().HandleCommand("platform status",
                                                                            res)
            if not res.Succeeded():
                return None
            m = _SYSROOT_RE.search(res.GetOutput() or "")
        except Exception:  # an lldb that cannot say: no sysroot
            return None
        return m.group(1) if m else None

    def _search_paths(self):
        """lldb's target.exec-search-paths and target.debug-file-search-paths, for finding a
        core's files (each still checked by build ID)."""
        dirs = []
        try:
            dbg = self.target.GetDebugger()
            for name in ("target.exec-search-paths", "target.debug-file-search-paths"):
                values = dbg.GetInternalVariableValue(name, dbg.GetInstanceName())
                for i in range(values.GetSize()):
                    dirs += _file_list(values.GetStringAtIndex(i))
        except Exception:  # an lldb without these settings: nothing extra to search
            return []
        return dirs

    @staticmethod
    def _same_executable(pid, exe_path):
        """Is the process lldb debugs the local process @pid? (lldb-server may be remote.)"""
        try:
            local = os.path.realpath("/proc/%d/exe" % pid)
        except OSError:
            return False
        if not os.path.exists("/proc/%d/mem" % pid):
            return False
        return exe_path is None or os.path.realpath(exe_path) == local or \
            os.path.basename(local).startswith("ld-linux")

    def _reader(self):
        """The read function a debugger-read target calls for each backend read: one SBError
        for all of them, cleared before each read (a live process's ReadMemory clears it, a
        core's does not: one unreadable address would fail every read after it), the methods
        looked up once, the bytes SWIG made handed on as they are. What a read costs is lldb's
        packet (doc/performance.md), but this was 2 of the 4.6 us a read that lldb's own
        memory cache answers."""
        read_memory = self.process.ReadMemory
        err = lldb.SBError()
        clear, succeeded = err.Clear, err.Success

        def read(addr, size):
            clear()
            data = read_memory(addr, size, err)
            return data if data and succeeded() else b""
        return read

    def _threads(self):
        p = self.process
        return [p.GetThreadAtIndex(i).GetThreadID() for i in range(p.GetNumThreads())]

    def _registers(self, names):
        """(tid, [value of each register named, up to the first lldb does not have]) per
        thread, from each thread's innermost frame. The core uses the values up to the first
        unknown one, so the rest are not asked for: lldb 16 has no orig_rax, and each argument
        register asked for anyway was a round trip to lldb-server (50 ms for 100 threads).
        Every thread of a process has the same registers: when the first thread has not the
        first one named, none has, and the other threads are not asked (lldb 16, whose frame
        and register lookups cost 2 ms for 100 threads for nothing)."""
        p = self.process
        out = []
        for i in range(p.GetNumThreads()):
            th = p.GetThreadAtIndex(i)
            frame = th.GetFrameAtIndex(0)
            if not frame or not frame.IsValid():
                continue
            values = []
            for name in names:
                reg = frame.FindRegister(name)
                if reg is None or not reg.IsValid():
                    if not out and not values:
                        return out
                    break
                err = lldb.SBError()
                v = reg.GetValueAsUnsigned(err, 0)
                if not err.Success():
                    break
                values.append(v)
            out.append((th.GetThreadID(), values))
        return out

    def _mappings(self, regions):
        maps = []
        t = self.target
        # Loaded sections of each module give mappings with their file offsets, which is what
        # the core needs to place ELF symbols.
        for i in range(t.GetNumModules()):
            m = t.GetModuleAtIndex(i)
            path = m.GetFileSpec().fullpath
            for j in range(m.GetNumSections()):
                s = m.GetSectionAtIndex(j)
                load = s.GetLoadAddress(t)
                if load == lldb.LLDB_INVALID_ADDRESS:  # most: debug info, symbol tables
                    continue
                size = s.GetByteSize()
                if size == 0:
                    continue
                writable = bool(s.GetPermissions() & lldb.ePermissionsWritable)
                maps.append((load, load + size, s.GetFileOffset(), writable, path))
        if not regions:
            return maps
        # Anonymous writable memory (heap, stacks) from the region list: where a last-resort
        # search for _Py_DebugOffsets looks when no file says where _PyRuntime is.
        regions = self.process.GetMemoryRegions()
        info = lldb.SBMemoryRegionInfo()
        for i in range(regions.GetSize()):
            if not regions.GetMemoryRegionAtIndex(i, info):
                continue
            if info.IsMapped() and info.IsWritable() and not info.GetName():
                maps.append((info.GetRegionBase(), info.GetRegionEnd(), 0, True, None))
        return maps

    def selected_thread(self):
        self.require_process()
        th = self.process.GetSelectedThread()
        if not th or not th.IsValid():
            raise core.PyunwindError("no thread selected")
        return th.GetThreadID(), 0


    def selected_level(self):
        th = self.process.GetSelectedThread() if self.process else None
        if not th or not th.IsValid():
            return None
        frame = th.GetSelectedFrame()
        return frame.GetFrameID() if frame and frame.IsValid() else None

    def native_threads(self):
        p = self.process
        modules = _Modules(self.target)
        for i in range(p.GetNumThreads()):
            th = p.GetThreadAtIndex(i)
            yield th.GetThreadID(), 0, (lambda th=th: _native_frames(th, modules))


_MAX_NATIVE_FRAMES = 8000000  # the core's PYU_MAX_NATIVE_FRAMES


class _Modules(object):
    """The file of each frame's module, by the load address ranges of the modules' sections:
    asked of lldb once a module a command (its sections), not once a frame, where
    SBFrame.GetModule and the file's full path cost 11 us of SB calls."""

    def __init__(self, target):
        self.target = target
        self.starts = []   # sorted starts of self.ranges
        self.ranges = []   # (start, end, path)
        self.seen = set()  # paths whose sections are in self.ranges

    def path(self, frame, pc):
        i = bisect.bisect_right(self.starts, pc) - 1
        if i >= 0 and pc < self.ranges[i][1]:
            return self.ranges[i][2]
        mod = frame.GetModule()
        if not mod.IsValid():
            return None
        path = mod.GetFileSpec().fullpath
        if path is None or path in self.seen:
            return path
        self.seen.add(path)
        for j in range(mod.GetNumSections()):
            sec = mod.GetSectionAtIndex(j)
            load = sec.GetLoadAddress(self.target)
            if load == lldb.LLDB_INVALID_ADDRESS:
                continue
            size = sec.GetByteSize()
            if size:
                bisect.insort(self.ranges, (load, load + size, path))
        self.starts = [r[0] for r in self.ranges]
        return path


def _native_frames(thread, modules):
    """lldb's own unwinding of @thread: (pc, sp, cfa, function, library, file, line, kind)
    per frame, innermost first. Each SB call costs 0.5-6 us through SWIG: each is made once
    a frame, and the next frame is looked at only after an inlined one. The stack pointer is
    asked for only where no cfa of the frame before says it (pyu_stacks_set_native_frames):
    the innermost frame's."""
    frames = []
    n = min(thread.GetNumFrames(), _MAX_NATIVE_FRAMES)
    known_cfa = False
    for i in range(n):
        f = thread.GetFrameAtIndex(i)
        if not f.IsValid():
            break
        name = f.GetFunctionName()
        if name and name.startswith("___lldb_unnamed_symbol"):
            name = None  # lldb's name for a nameless piece of a stripped file
        cfa = f.GetCFA()
        kind = core.NATIVE_ARTIFICIAL if f.IsArtificial() else 0
        if f.IsInlined():
            # lldb 16 sometimes lists a call site's inlined functions without the concrete
            # frame that holds them (seen in _PyEval_EvalFrameDefault of 3.10): the last
            # inlined frame of a stack range then stands for the concrete function, as gdb
            # would list it.
            nxt = thread.GetFrameAtIndex(i + 1) if i + 1 < n else None
            if nxt is None or not nxt.IsValid() or nxt.GetCFA() != cfa:
                name = f.GetFunction().GetName() or name
                kind = 0  # it stands for the stack frame
            elif not kind:
                kind = core.NATIVE_INLINE
        pc = f.GetPC()
        # A return address may lie just past its call, at the end of its module.
        lib = modules.path(f, pc - 1 if i and pc else pc)
        # A frame with no name has no debug information, so no line (3 us a frame saved on
        # a stripped interpreter, whose frames are mostly nameless).
        le = f.GetLineEntry() if name else None
        path = le.GetFileSpec().fullpath if le is not None and le.IsValid() else None
        frames.append((pc, 0 if known_cfa else f.GetSP(), cfa, name, lib, path,
                       le.GetLine() if path else 0, kind))
        known_cfa = cfa not in (0, lldb.LLDB_INVALID_ADDRESS)
    return frames


# lldb calls in from more than one thread: commands run on the command interpreter's thread,
# and the frame-format hook also runs on lldb's event-handler thread, which prints stop reports
# and `thread select`'s report asynchronously - while the next command already runs. A Session
# and the core's snapshot it owns are not thread-safe (two threads adding one thread's native
# frames at once corrupted the heap, and lldb's abort handler then hung in malloc). So each
# thread has a Session of its own, which no other thread touches; the lock below guards only
# the table and is never held across a call into lldb or the core, so no thread ever waits
# for another. Threads past the bound (lldb uses two) get a Session for the one call.
_MAX_SESSIONS = 8
_sessions = {}
_sessions_lock = threading.Lock()


@contextlib.contextmanager
def _thread_session():
    me = threading.get_ident()
    with _sessions_lock:
        session = _sessions.get(me)
        if session is None and len(_sessions) < _MAX_SESSIONS:
            session = _sessions[me] = core.Session(_HERE)
    if session is not None:
        yield session
        return
    session = core.Session(_HERE)
    try:
        yield session
    finally:
        session.invalidate()


def current_session():
    """The calling thread's Session, or None before its first command (for bench/)."""
    with _sessions_lock:
        return _sessions.get(threading.get_ident())


class _Command(object):
    name = None

    def __init__(self, debugger, internal_dict):
        pass

    def get_short_help(self):
        return core.HELP[self.name].splitlines()[0]

    def get_long_help(self):
        return core.HELP[self.name]

    def __call__(self, debugger, command, exe_ctx, result):
        try:
            with _thread_session() as session:
                text = core.run(session, LldbView(debugger, exe_ctx), self.name, command)
        except core.PyunwindError as e:
            result.SetError(str(e))
            return
        except Exception as e:  # never let an exception reach lldb
            result.SetError("pyunwind: internal error: %s: %s" % (type(e).__name__, e))
            return
        if text and not text.endswith("\n"):
            text += "\n"
        result.PutCString(text.rstrip("\n"))
        result.SetStatus(lldb.eReturnStatusSuccessFinishResult)


class PyBt(_Command):
    name = "py-bt"


class PyLine(_Command):
    name = "py-line"


class PyList(_Command):
    name = "py-list"


class PyLocals(_Command):
    name = "py-locals"


class PyPrint(_Command):
    name = "py-print"


class PyTasks(_Command):
    name = "py-tasks"


class PyTask(_Command):
    name = "py-task"


class PyHeap(_Command):
    name = "py-heap"


class PyUp(_Command):
    name = "py-up"


class PyDown(_Command):
    name = "py-down"


def frame_python(frame, internal_dict):
    """lldb's frame-format hook (${script.frame:pyunwind.frame_python}): " [Python: ...]"
    after an eval-loop frame, naming the Python frames it runs, " [Cython: ...]" after a Cython
    function; "" for every other frame. Never raises."""
    try:
        thread = frame.GetThread()
        process = thread.GetProcess()
        view = LldbView(process.GetTarget().GetDebugger(), None)
        view.target, view.process = process.GetTarget(), process
        with _thread_session() as session:
            text = session.native_text(view, frame.GetFrameID(), thread.GetThreadID())
    except Exception:
        return ""
    if not text:
        return ""
    return " " + text


_HOOK = "${script.frame:%s.frame_python}" % __name__


def _install_frame_format(debugger):
    """Adds the hook to lldb's current frame-format, just before its final newline, so `bt`
    keeps lldb's own layout. `settings clear frame-format` removes it."""
    result = lldb.SBCommandReturnObject()
    debugger.GetCommandInterpreter().HandleCommand("settings show frame-format", result)
    out = result.GetOutput() or ""
    start, end = out.find('"'), out.rfind('"')
    if start < 0 or end <= start or _HOOK in out:
        return
    fmt = out[start + 1:end]
    if fmt.endswith("\\n"):
        fmt = fmt[:-2] + _HOOK + "\\n"
    else:
        fmt += _HOOK
    debugger.HandleCommand("settings set frame-format \"%s\"" % fmt)


def __lldb_init_module(debugger, internal_dict):
    for cls in (PyBt, PyLine, PyList, PyLocals, PyPrint, PyTasks, PyTask, PyHeap, PyUp,
                PyDown):
        debugger.HandleCommand("command script add --overwrite -c %s.%s %s"
                               % (__name__, cls.__name__, cls.name))
    _install_frame_format(debugger)
