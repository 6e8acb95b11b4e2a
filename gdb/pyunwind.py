# pyunwind.py for gdb - adds py-bt, py-line, py-list, py-locals, py-print, py-tasks, py-task,
# py-heap, py-up and py-down.
# Load with `source /path/to/gdb/pyunwind.py`. This file only translates between gdb and the C
# core (through python/pyunwind/pyunwind_core.py): which target, which thread, how to read memory.
import os
import re
import sys

import gdb

_HERE = os.path.dirname(os.path.realpath(__file__))
# The shared binding is the `pyunwind` Python package's pyunwind_core module, beside this
# directory in a checkout and in an install (PREFIX/share/pyunwind/{gdb,lldb,python}).
for _d in (os.path.join(_HERE, os.pardir, "python", "pyunwind"),):
    _d = os.path.normpath(_d)
    if os.path.isdir(_d) and _d not in sys.path:
        sys.path.insert(0, _d)

import pyunwind_core as core  # noqa: E402

_CORE_FILE_RE = re.compile(r"^\s*`(.*)', file type", re.M)


def _open_core_files():
    """The ELF core files this gdb has open, by its file descriptors."""
    found, seen = [], set()
    try:
        fds = os.listdir("/proc/self/fd")
    except OSError:
        return found
    for fd in fds:
        try:
            path = os.readlink("/proc/self/fd/" + fd)
        except OSError:
            continue
        if not path.startswith("/") or path in seen or path.startswith(("/dev/", "/proc/")):
            continue
        seen.add(path)
        if core.is_core_file(path):
            found.append(path)
    return found


def _pthread_id(thread):
    """The pthread id of gdb's @thread (its libthread_db handle), or 0: gdb without
    libthread_db (a core of a stripped libc) raises for it."""
    try:
        return int.from_bytes(bytes(thread.handle()), "little")
    except Exception:
        return 0


class GdbView(core.DebuggerView):
    """gdb's side: the selected inferior, its connection and the selected thread."""

    def __init__(self, past_main=True):
        self.inferior = gdb.selected_inferior()
        # Unwind past main (gdb stops there by default; lldb and the CLI do not), so that all
        # three list the same frames; the setting is restored after each thread.
        self.past_main = past_main

    def stop_key(self):
        inf = self.inferior
        return (inf.num, inf.pid, _state.generation)

    def memory_generation(self):
        return _state.memory

    def _connection_type(self):
        conn = getattr(self.inferior, "connection", None)
        return conn.type if conn is not None else None

    def _core_file(self):
        # gdb 13's Python does not name the core file. `info target` does, among every section
        # of every file (1 ms); gdb keeps the core open, so with one inferior, one open core
        # file is its core.
        if len(gdb.inferiors()) == 1:
            cores = _open_core_files()
            if len(cores) == 1:
                return cores[0]
        text = gdb.execute("info target", to_string=True)
        if "core dump file" not in text:
            return None
        m = _CORE_FILE_RE.search(text.split("core dump file", 1)[1])
        return m.group(1) if m else None

    def require_process(self):
        inf = self.inferior
        if not inf.is_valid() or inf.pid == 0:
            raise core.PyunwindError("no process: run or attach to a Python program, "
                                     "or open a core file")

    def target_openers(self, lib):
        inf = self.inferior
        forced = os.environ.get("PYUNWIND_READS") == "debugger"
        kind = self._connection_type()
        if not forced and kind == "native" and os.path.exists("/proc/%d/mem" % inf.pid):
            yield "reading /proc", lambda: core.Target.open_pid(lib, inf.pid)
            return
        if not forced and kind == "core":
            path = self._core_file()
            if path and os.path.exists(path):
                yield "reading the core file", \
                    lambda: core.Target.open_core(lib, path, inf.progspace.filename) \
                    .look_for_files(*self._file_settings())
        yield "through gdb's memory reads", \
            lambda: core.Target.open_reader(lib, self._read, self._mappings(), self._threads(),
                                            self._registers) \
            .look_for_files(*self._file_settings()).set_auxv(self._auxv())

    @staticmethod
    def _file_settings():
        """gdb's sysroot (a local directory; "target:" means the files where they are) and
        solib-search-path, for finding a core's files."""
        try:
            sysroot = gdb.parameter("sysroot") or ""
            search = gdb.parameter("solib-search-path") or ""
        except (gdb.error, RuntimeError):
            return None, []
        if sysroot.startswith("target:"):
            sysroot = sysroot[len("target:"):]
        return sysroot or None, [d for d in search.split(":") if d]

    @staticmethod
    def _auxv():
        """(type, value) of each entry of `info auxv` (a remote stub that gives no mapping
        list gives this: the core finds the files from it)."""
        try:
            text = gdb.execute("info auxv", to_string=True)
        except gdb.error:
            return []
        pairs = []
        for line in text.splitlines():
            words = line.split('"', 1)[0].split()  # AT_EXECFN's value is followed by the name
            if len(words) >= 3 and words[0].isdigit():
                try:
                    pairs.append((int(words[0]), int(words[-1], 0)))
                except ValueError:
                    continue
        return pairs

    def _read(self, addr, size):
        try:
            return self.inferior.read_memory(addr, size).tobytes()
        except gdb.MemoryError:
            return b""

    def _threads(self):
        return [t.ptid[1] or t.ptid[0] for t in self.inferior.threads()]

    def _registers(self, names):
        """(tid, [value of each register named, up to the first gdb does not have]) per
        thread (the core uses no value after an unknown one), read in each thread's innermost
        frame; the selected thread and frame are restored."""
        saved = gdb.selected_thread()
        try:
            saved_frame = gdb.selected_frame()
        except gdb.error:
            saved_frame = None
        out = []
        try:
            for th in self.inferior.threads():
                values = []
                try:
                    th.switch()
                    frame = gdb.newest_frame()
                    for name in names:
                        try:
                            values.append(int(frame.read_register(name)))
                        except (gdb.error, ValueError):
                            break
                except gdb.error:
                    continue
                out.append((th.ptid[1] or th.ptid[0], values))
        finally:
            if saved is not None and saved.is_valid():
                saved.switch()
                if saved_frame is not None and saved_frame.is_valid():
                    saved_frame.select()
        return out

    def _mappings(self):
        try:
            text = gdb.execute("info proc mappings", to_string=True)
        except gdb.error:
            return []
        maps = []
        for line in text.splitlines():
            words = line.split()
            if len(words) < 4 or not words[0].startswith("0x"):
                continue
            try:
                start, end, offset = int(words[0], 16), int(words[1], 16), int(words[3], 16)
            except ValueError:
                continue
            rest = words[4:]
            writable = True
            if rest and re.match(r"^[r-][w-][x-][ps]$", rest[0]):
                writable = rest[0][1] == "w"
                rest = rest[1:]
            path = " ".join(rest) if rest else None
            maps.append((start, end, offset, writable, path))
        return maps

    def selected_thread(self):
        th = gdb.selected_thread()
        if th is None:
            raise core.PyunwindError("no thread selected")
        return th.ptid[1] or th.ptid[0], _pthread_id(th)


    def selected_level(self):
        try:
            return gdb.selected_frame().level()
        except (gdb.error, RuntimeError):
            return None

    def native_tids(self):
        return [th.ptid[1] or th.ptid[0] for th in self.inferior.threads()]

    def native_threads(self):
        """(tid, pthread id, frames callback) per thread. The callbacks switch threads; the
        selected thread and frame are restored once, when the iteration ends (or is closed),
        not after every thread: restoring means unwinding the selected thread again. So is
        `backtrace past-main`: each change of a setting costs gdb 50 us, twice a thread."""
        saved = gdb.selected_thread()
        try:
            saved_frame = gdb.selected_frame()
        except gdb.error:
            saved_frame = None
        walk = _NativeWalk(self)
        try:
            for th in self.inferior.threads():
                yield th.ptid[1] or th.ptid[0], (lambda th=th: _pthread_id(th)), \
                    (lambda th=th: walk.frames(th))
        finally:
            walk.close()
            if saved is not None and saved.is_valid():
                if gdb.selected_thread() is None or gdb.selected_thread().ptid != saved.ptid:
                    saved.switch()
                if saved_frame is not None and saved_frame.is_valid() and \
                        saved_frame != gdb.selected_frame():
                    saved_frame.select()


_UNNAMED = ("??",)
# gdb's inlined calls and its frames for functions jumped through (tail calls)
_KINDS = {getattr(gdb, "INLINE_FRAME", -1): core.NATIVE_INLINE,
          getattr(gdb, "TAILCALL_FRAME", -2): core.NATIVE_ARTIFICIAL}
_MAX_NATIVE_FRAMES = 8000000  # the core's PYU_MAX_NATIVE_FRAMES
_NORMAL = getattr(gdb, "NORMAL_FRAME", 0)
_INLINE = getattr(gdb, "INLINE_FRAME", -1)


class _NativeWalk(object):
    """What gdb's unwinding of every thread of one command shares, set up at its first thread:
    the stack pointer's register and `backtrace past-main` (unwinding past main, as lldb and
    the CLI do, so that all three list the same frames; restored by close()); and what gdb
    said of each code address, asked once a command: threads wait in the same few places
    (100 threads, one pc: the frame's name 5 us, its library 3 us, asked once, not 100 times)."""

    def __init__(self, view):
        self.view = view
        self.started = False
        self.sp = None
        self.restore = None
        self.solib_name = gdb.current_progspace().solib_name
        self.libraries = {}  # pc -> gdb's shared library name (None: none)
        # (pc, the type of the frame inner to it) -> (function, file, line) of a normal
        # frame: the same pc names the same function and line wherever it is, except as
        # gdb looks it up: the pc itself in the innermost frame or one called by a signal
        # handler, pc - 1 (the call) in a caller; and a frame that inlined calls at its pc
        # has its line at the call (so one whose inner frame is inlined is not kept).
        self.places = {}

    def frames(self, thread):
        if not self.started:
            self.started = True
            if self.view.past_main and not gdb.parameter("backtrace past-main"):
                gdb.execute("set backtrace past-main on", to_string=True)
                self.restore = "set backtrace past-main off"
        return _native_frames(thread, self)

    def sp_register(self, frame):
        """The architecture's own stack pointer: gdb's "sp" is an alias it looks up among
        every register name at each read (12 us a frame, against 4 for "rsp"). gdb's Python
        does not say which register "sp" stands for (gdbarch_sp_regnum): a register named as
        the known architectures name it is taken only when it reads as "sp" does (its value
        in the innermost frame), else "sp" itself, right on any architecture. A name the
        architecture lacks fails its read: asked that way, not by listing the architecture's
        registers (60 register objects, 0.2 ms of a command's)."""
        if self.sp is None:
            self.sp = "sp"
            try:
                want = int(frame.read_register("sp"))
            except (gdb.error, ValueError):
                return self.sp
            for name in _SP_REGISTERS:
                try:
                    if int(frame.read_register(name)) == want:
                        self.sp = name
                        break
                except (gdb.error, ValueError):  # not a register of this architecture
                    continue
        return self.sp

    def close(self):
        if self.restore:
            gdb.execute(self.restore, to_string=True)
            self.restore = None


# The stack pointer of the architectures that name it other than "sp" (amd64, i386); gdb's
# 16-bit pseudo-registers of both leave "sp" unnamed, so "sp" is the alias or the register.
_SP_REGISTERS = ("rsp", "esp")


def _native_frames(thread, walk):
    """gdb's own unwinding of @thread: (pc, sp, cfa, function, library, file, line, kind) per
    frame, innermost first. Leaves @thread selected: the caller restores the selection."""
    frames = []
    # The file of each frame: the core names it by the target's own mapping of its pc (the
    # same list `info proc mappings` gives, which cost 1 ms a command to ask gdb for), so
    # gdb's shared-library list is only what the core falls back on.
    libraries, places = walk.libraries, walk.places
    try:
        thread.switch()  # nothing when it is selected already
        f = gdb.newest_frame()
        sp_name = walk.sp_register(f)
        inner = None  # the type of the frame inner to f (None: f is the innermost)
        while f is not None and len(frames) < _MAX_NATIVE_FRAMES:
            pc = f.pc()
            try:
                sp = int(f.read_register(sp_name)) & 0xFFFFFFFFFFFFFFFF
            except (gdb.error, ValueError):
                sp = 0
            kind = f.type()
            key = (pc, inner) if kind == _NORMAL and inner != _INLINE else None
            place = places.get(key) if key is not None else None
            if place is None:
                name = f.name()
                # A frame with no name has no debug information, so no line (most frames of
                # a stripped interpreter).
                sal = f.find_sal() if name is not None else None
                # The full name (the compilation directory joined), as lldb gives it: a
                # relative name cannot be opened, and the core reads Cython's generated C
                # files.
                path = sal.symtab.fullname() if sal is not None and sal.symtab is not None \
                    else None
                place = (name if name not in _UNNAMED else None, path,
                         sal.line if path else 0)
                if key is not None:
                    places[key] = place
            library = libraries.get(pc, libraries)
            if library is libraries:
                library = libraries[pc] = walk.solib_name(pc)
            frames.append((pc, sp, 0, place[0], library, place[1], place[2],
                           _KINDS.get(kind, 0)))
            inner = kind
            try:
                f = f.older()
            except gdb.error:
                break
    except gdb.error as e:
        raise core.PyunwindError("gdb could not unwind thread %s: %s" % (thread.num, e))
    return frames


class _State(object):
    def __init__(self):
        self.generation = 0
        self.memory = 0  # gdb wrote memory (memory_changed) at the same stop
        self.session = core.Session(_HERE)

    def bump(self, *_args):
        self.generation += 1

    def bump_memory(self, *_args):
        self.memory += 1


def _make_command(name):
    class Command(gdb.Command):
        def __init__(self):
            super(Command, self).__init__(name, gdb.COMMAND_STACK)

        def invoke(self, arg, from_tty):
            try:
                text = core.run(_state.session, GdbView(), name, arg)
            except core.PyunwindError as e:
                raise gdb.GdbError(str(e))
            except gdb.GdbError:
                raise
            except Exception as e:  # never a Python traceback in the user's session
                raise gdb.GdbError("pyunwind: internal error: %s: %s" % (type(e).__name__, e))
            if text and not text.endswith("\n"):
                text += "\n"
            gdb.write(text)

    Command.__doc__ = core.HELP[name]
    Command.__name__ = "PyunwindCommand_" + name.replace("-", "_")
    return Command


# ---- Python frames in gdb's own `bt` ----------------------------------------------------------

try:
    from gdb.FrameDecorator import FrameDecorator as _FrameDecorator
except ImportError:  # a gdb without frame filters
    _FrameDecorator = None


if _FrameDecorator is not None:
    class _PythonFrames(_FrameDecorator):
        """An eval-loop frame with the Python frames it runs after its function name, a Cython
        function with its .pyx location ("[Python: ...]", "[Cython: ...]", made by the core)."""

        def __init__(self, base, text):
            super(_PythonFrames, self).__init__(base)
            self._text = text

        def function(self):
            name = super(_PythonFrames, self).function()
            if not isinstance(name, str) or not name:
                name = self.inferior_frame().name() or "??"  # as gdb prints it without filters
            if not self._text:
                return name
            return "%s %s" % (name, self._text)


class _FrameFilter(object):
    """Decorates `bt` with the Python frames each eval-loop frame runs. `bt -no-filters` or
    `disable frame-filter global pyunwind` give gdb's own backtrace back. Never raises: any
    failure leaves the backtrace undecorated."""

    def __init__(self):
        self.name = "pyunwind"
        self.priority = 100
        self.enabled = True

    def filter(self, frames):
        if _FrameDecorator is None:
            return frames
        try:
            view = GdbView()
            view.require_process()
            _state.session.stacks(view)
        except Exception:
            return frames
        return (self._decorate(view, d) for d in frames)

    @staticmethod
    def _decorate(view, d):
        try:
            text = _state.session.native_text(view, d.inferior_frame().level())
        except Exception:
            text = ""
        return _PythonFrames(d, text)


# Loading twice re-registers the commands but keeps one state and one set of event handlers.
try:
    _state  # noqa: F821 - defined by an earlier load of this file in the same gdb
except NameError:
    _state = _State()
    for _ev in ("cont", "stop", "exited", "new_objfile", "inferior_call", "memory_changed",
                "new_inferior", "new_thread"):
        _registry = getattr(gdb.events, _ev, None)
        if _registry is not None:
            _registry.connect(_state.bump_memory if _ev == "memory_changed" else _state.bump)

for _name in sorted(core.HELP):
    _make_command(_name)()
gdb.frame_filters["pyunwind"] = _FrameFilter()
