# pyunwind_core.py - the ctypes binding of libpyunwind and the command logic both debugger
# adapters share: argument parsing, the per-stop snapshot cache and the selected Python frame.
# Nothing here decodes target memory; that is the C core's job. The adapters supply a
# "view" of their debugger (which target, which thread is selected, how to read memory).
#
# It runs inside debuggers' own Pythons and is not typed: the package's typed API is
# pyunwind/__init__.py, so a user's `mypy --strict` (which checks every module of an
# imported package found on MYPYPATH) is not told about this file's insides.
# mypy: ignore-errors
import array
import ctypes
import os
import threading
import time
import signal
import shlex

ABI_VERSION = 9

PYU_FMT_JSON = 0x1
PYU_FMT_SOURCE = 0x2
PYU_FMT_TABLE = 0x4
PYU_FMT_ALL = 0x8
PYU_FMT_LOCALS = 0x10

# Value bounds (enum pyu_limit): option name -> limit number. 0 restores the default.
LIMIT_OPTIONS = {"--max-depth": 1, "--max-items": 2, "--max-chars": 3, "--max-digits": 4,
                 "--max-repr": 5}
PYU_FMT_NATIVE = 0x20
PYU_FMT_NATIVE_ALL = 0x40
PYU_FMT_TREE = 0x80
PYU_FMT_RETAINED = 0x100
# pyu_format_task_frame: what to show of a task's frame.
PYU_TASK_SELECT, PYU_TASK_LINE, PYU_TASK_LIST, PYU_TASK_LOCALS, PYU_TASK_PRINT = range(5)
# pyu_stacks_cython_string's strings; PYU_ABSENT
CYSTR_MODULE, CYSTR_FILE, CYSTR_FUNCTION = range(3)
ABSENT = -(1 << 63)
NATIVE_INLINE, NATIVE_ARTIFICIAL = 1, 2  # what a native frame is when not a stack frame


class PyunwindError(Exception):
    """A user-facing error: printed as one line by the adapters, never as a traceback."""


READ_FN = ctypes.CFUNCTYPE(ctypes.c_uint64, ctypes.c_void_p, ctypes.c_uint64,
                           ctypes.c_void_p, ctypes.c_uint64)
PROGRESS_FN = ctypes.CFUNCTYPE(ctypes.c_int32, ctypes.c_void_p, ctypes.c_uint64,
                               ctypes.c_uint64)


def _candidate_libraries(adapter_dir):
    env = os.environ.get("PYUNWIND_LIB")
    if env:
        yield env
    here = os.path.realpath(adapter_dir)
    # An installed Python package (pip, the Debian package) carries it inside.
    yield os.path.join(here, "libpyunwind.so")
    # Build tree: <checkout>/{gdb,lldb,common}/ next to <checkout>/build/; the Python
    # package at <checkout>/python/pyunwind/.
    yield os.path.join(here, os.pardir, "build", "libpyunwind.so")
    yield os.path.join(here, os.pardir, os.pardir, "build", "libpyunwind.so")
    # Install tree: PREFIX/share/pyunwind/<adapter>/ next to PREFIX/lib/ (or PREFIX/lib/pyunwind/,
    # the Debian package's private directory).
    yield os.path.join(here, os.pardir, os.pardir, os.pardir, "lib", "libpyunwind.so")
    yield os.path.join(here, os.pardir, os.pardir, os.pardir, "lib", "pyunwind", "libpyunwind.so")


# What ctypes is told of each function (result, arguments), by name: read when the function is
# first asked for (_Functions).
_P = ctypes.c_void_p
_PP = ctypes.POINTER(ctypes.c_void_p)
_SIGNATURES = {
    "pyu_abi_version": (ctypes.c_uint32, []),
    "pyu_error_message": (ctypes.c_char_p, [_P]),
    "pyu_error_code": (ctypes.c_int32, [_P]),
    "pyu_error_destroy": (None, [_P]),
    "pyu_free": (None, [_P]),
    "pyu_target_open_pid": (_P, [ctypes.c_int32, _PP]),
    "pyu_target_open_core": (_P, [ctypes.c_char_p, ctypes.c_char_p, _PP]),
    "pyu_target_open_callback": (_P, [READ_FN, _P, _PP]),
    "pyu_target_set_read_cost": (None, [_P, ctypes.c_uint32, ctypes.c_uint32]),
    "pyu_target_add_mapping": (_P, [_P, ctypes.c_uint64, ctypes.c_uint64, ctypes.c_uint64,
                                    ctypes.c_uint32, ctypes.c_char_p]),
    "pyu_target_add_thread": (_P, [_P, ctypes.c_int64]),
    "pyu_target_syscall_registers": (ctypes.c_char_p, [_P]),
    "pyu_target_set_thread_registers": (_P, [_P, ctypes.c_int64,
                                             ctypes.POINTER(ctypes.c_uint64),
                                             ctypes.c_uint32]),
    "pyu_target_set_auxv": (_P, [_P, ctypes.POINTER(ctypes.c_uint64), ctypes.c_uint32]),
    "pyu_target_add_path_map": (_P, [_P, ctypes.c_char_p, ctypes.c_char_p]),
    "pyu_target_set_sysroot": (_P, [_P, ctypes.c_char_p]),
    "pyu_target_add_search_dir": (_P, [_P, ctypes.c_char_p]),
    "pyu_target_set_cwd": (_P, [_P, ctypes.c_char_p]),
    "pyu_target_destroy": (None, [_P]),
    "pyu_target_backend_reads": (ctypes.c_uint64, [_P]),
    "pyu_target_cached_reads": (ctypes.c_uint64, [_P]),
    "pyu_target_track_reads": (None, [_P]),
    "pyu_target_memory_changed": (_P, [_P, ctypes.POINTER(ctypes.c_uint32)]),
    "pyu_stacks_collect": (_P, [_P, _PP]),
    "pyu_stacks_destroy": (None, [_P]),
    "pyu_stacks_thread_count": (ctypes.c_uint32, [_P]),
    "pyu_stacks_find_thread": (ctypes.c_int32, [_P, ctypes.c_int64, ctypes.c_uint64]),
    "pyu_stacks_find_threads": (None, [_P, _P, ctypes.c_uint32, _P]),
    "pyu_stacks_frame_count": (ctypes.c_uint32, [_P, ctypes.c_uint32]),
    "pyu_format_bt": (_P, [_P, ctypes.c_uint32, ctypes.c_uint32, ctypes.c_uint32, _PP]),
    "pyu_format_line": (_P, [_P, ctypes.c_uint32, ctypes.c_uint32, ctypes.c_uint32, _PP]),
    "pyu_format_list": (_P, [_P, ctypes.c_uint32, ctypes.c_uint32, ctypes.c_int64,
                             ctypes.c_int64, _PP]),
    "pyu_stacks_set_limit": (_P, [_P, ctypes.c_uint32, ctypes.c_uint64]),
    "pyu_format_locals": (_P, [_P, ctypes.c_uint32, ctypes.c_uint32, ctypes.c_uint32,
                               _PP]),
    "pyu_format_print": (_P, [_P, ctypes.c_uint32, ctypes.c_uint32, ctypes.c_char_p,
                              ctypes.c_uint32, _PP]),
    "pyu_stacks_add_native_frame": (_P, [_P, ctypes.c_uint32, ctypes.c_uint64,
                                         ctypes.c_uint64, ctypes.c_uint64,
                                         ctypes.c_char_p, ctypes.c_char_p,
                                         ctypes.c_char_p, ctypes.c_int64]),
    "pyu_stacks_set_native_frames": (_P, [_P, ctypes.c_uint32, _P, ctypes.c_uint32,
                                          ctypes.POINTER(ctypes.c_char_p),
                                          ctypes.c_uint32]),
    "pyu_stacks_set_native_threads": (_P, [_P, _P, _P, ctypes.c_uint32, _P,
                                           ctypes.POINTER(ctypes.c_char_p),
                                           ctypes.c_uint32]),
    "pyu_stacks_set_native_error": (_P, [_P, ctypes.c_uint32, ctypes.c_char_p]),
    "pyu_stacks_set_native_kind": (_P, [_P, ctypes.c_uint32, ctypes.c_uint32]),
    "pyu_stacks_clear_native": (_P, [_P, ctypes.c_uint32]),
    "pyu_format_native_frame": (_P, [_P, ctypes.c_uint32, ctypes.c_uint32, _PP]),
    "pyu_stacks_frame_steps": (_P, [_P, ctypes.c_uint32, ctypes.POINTER(ctypes.c_int64),
                                    ctypes.c_uint32, ctypes.POINTER(ctypes.c_uint32)]),
    "pyu_stacks_level_step": (ctypes.c_int64, [_P, ctypes.c_uint32, ctypes.c_uint32]),
    "pyu_stacks_cython_string": (ctypes.c_char_p, [_P, ctypes.c_uint32, ctypes.c_uint32,
                                                   ctypes.c_uint32]),
    "pyu_stacks_cython_line": (ctypes.c_int64, [_P, ctypes.c_uint32, ctypes.c_uint32]),
    "pyu_format_cython_frame": (_P, [_P, ctypes.c_uint32, ctypes.c_uint32, ctypes.c_uint32,
                                     ctypes.c_int64, ctypes.c_int64, ctypes.c_uint32,
                                     _PP]),
    "pyu_format_tasks": (_P, [_P, ctypes.c_int32, ctypes.c_uint32, _PP]),
    "pyu_format_task_frame": (_P, [_P, ctypes.c_char_p, ctypes.c_uint32, ctypes.c_uint32,
                                   ctypes.c_char_p, ctypes.c_int64, ctypes.c_int64,
                                   ctypes.c_uint32, ctypes.POINTER(ctypes.c_uint32),
                                   _PP]),
    "pyu_format_heap": (_P, [_P, ctypes.c_uint32, ctypes.c_uint32, ctypes.c_uint64,
                             ctypes.c_uint32, _PP]),
    "pyu_format_heap_referrers": (_P, [_P, ctypes.c_uint64, ctypes.c_uint32, _PP]),
    "pyu_format_heap_path": (_P, [_P, ctypes.c_uint64, ctypes.c_uint32, _PP]),
    "pyu_stacks_set_progress": (None, [_P, PROGRESS_FN, _P]),
}


class _Functions(object):
    """The library's functions by name, each given its prototype from _SIGNATURES when first
    asked for, not all at once: a debugger's first command loads the library, and declaring
    all fifty cost 0.3-0.5 ms of it, most for functions the command never calls. A function
    the table does not list keeps ctypes' defaults for its caller to set. One the library
    lacks raises _NotUsable (an AttributeError too): the library is not the one this binding
    was written for, which the ABI version check at load should already have said."""

    def __init__(self, cdll, path):
        self._cdll = cdll
        self._path = path

    def __getattr__(self, name):
        if name.startswith("_"):
            raise AttributeError(name)
        try:
            fn = getattr(self._cdll, name)
        except AttributeError as e:
            raise _NotUsable("%s is not a usable libpyunwind (%s); rebuild pyunwind"
                             % (self._path, e))
        sig = _SIGNATURES.get(name)
        if sig is not None:
            fn.restype, fn.argtypes = sig
        setattr(self, name, fn)  # found in the instance from now on, without this call
        return fn


class _NotUsable(PyunwindError, AttributeError):
    pass


class Library(object):
    """The loaded libpyunwind with typed functions. Loaded once per debugger process."""

    _instance = None

    _instance_lock = threading.Lock()

    @classmethod
    def get(cls, adapter_dir):  # type: (str) -> Library
        # One instance per process, made under a lock: two threads loading it at once would
        # otherwise each get a CDLL of their own, one of them never declared further by the
        # callers that declare their own entry points on the first instance they meet.
        with cls._instance_lock:
            if cls._instance is None:
                cls._instance = cls(adapter_dir)
            return cls._instance

    def __init__(self, adapter_dir):
        tried = []
        lib = None
        for path in _candidate_libraries(adapter_dir):
            path = os.path.normpath(path)
            if not os.path.exists(path):
                tried.append(path)
                continue
            try:
                lib = ctypes.CDLL(path)
                break
            except OSError as e:
                tried.append("%s (%s)" % (path, e))
        if lib is None:
            raise PyunwindError("cannot find libpyunwind.so (set PYUNWIND_LIB); tried: "
                                + ", ".join(tried))
        self.path = path
        functions = _Functions(lib, path)
        abi = functions.pyu_abi_version()
        if abi != ABI_VERSION:
            raise PyunwindError("%s has ABI version %d, this adapter needs %d; rebuild or "
                                "reinstall pyunwind" % (path, abi, ABI_VERSION))
        self.lib = functions

    def check(self, err):
        """Raises PyunwindError for a non-NULL struct pyu_error *, releasing it."""
        if err:
            msg = self.lib.pyu_error_message(err)
            self.lib.pyu_error_destroy(err)
            raise PyunwindError(msg.decode("utf-8", "replace") if msg else "unknown error")

    def take_string(self, ptr):
        try:
            return ctypes.string_at(ptr).decode("utf-8", "replace")
        finally:
            self.lib.pyu_free(ptr)


class _Handle(object):
    """An object of the library, released once: by close() or when Python collects it."""

    handle = None
    _destroy = None  # name of the library function that releases the handle

    def close(self):
        if self.handle:
            getattr(self.lib.lib, self._destroy)(self.handle)
            self.handle = None

    def __del__(self):
        try:
            self.close()
        except Exception:
            pass


class Target(_Handle):
    """An open pyu_target. Keeps the read callback referenced for the target's whole life:
    if Python freed it while the core still held the pointer, the debugger would crash."""

    _destroy = "pyu_target_destroy"

    def __init__(self, lib, handle, callback=None):
        self.lib = lib
        self.handle = handle
        self._callback = callback

    @classmethod
    def open_pid(cls, lib, pid):
        h = ctypes.c_void_p()
        lib.check(lib.lib.pyu_target_open_pid(int(pid), ctypes.byref(h)))
        return cls(lib, h)

    @classmethod
    def open_core(cls, lib, core, executable=None):
        h = ctypes.c_void_p()
        exe = executable.encode() if executable else None
        lib.check(lib.lib.pyu_target_open_core(core.encode(), exe, ctypes.byref(h)))
        return cls(lib, h)

    @classmethod
    def open_reader(cls, lib, read, mappings, threads, registers=None, read_cost=None):
        """@read(addr, size) -> bytes (shorter or empty when unreadable); @mappings: iterable
        of (start, end, offset, writable, path); @threads: kernel thread ids; @registers(names)
        -> iterable of (tid, [values]) of the named registers, so that the core can say
        which system call each thread is in: the values up to the first unreadable one (None,
        or the list ending early) are used, so a debugger need not read past it. @read_cost:
        (microseconds a read, microseconds a KiB) of @read where bytes are dear, or None."""

        def trampoline(_arg, addr, buf, size):
            try:
                data = read(addr, size)
                n = min(len(data), size)
                if n:
                    ctypes.memmove(buf, data, n)
                return n
            except Exception:  # any failure is "not readable": never let it reach ctypes
                return 0

        cb = READ_FN(trampoline)
        h = ctypes.c_void_p()
        lib.check(lib.lib.pyu_target_open_callback(cb, None, ctypes.byref(h)))
        t = cls(lib, h, cb)
        if read_cost:
            lib.lib.pyu_target_set_read_cost(h, int(read_cost[0]), int(read_cost[1]))
        try:
            for start, end, offset, writable, path in mappings:
                lib.check(lib.lib.pyu_target_add_mapping(
                    h, start, end, offset, 1 if writable else 0,
                    path.encode() if path else None))
            for tid in threads:
                lib.check(lib.lib.pyu_target_add_thread(h, int(tid)))
            names = (lib.lib.pyu_target_syscall_registers(h) or b"").decode().split()
            for tid, values in (registers(names) if registers and names else ()):
                known = []
                for v in values:  # the number, then the arguments, as far as all are known
                    if v is None:
                        break
                    known.append(v & 0xFFFFFFFFFFFFFFFF)
                arr = (ctypes.c_uint64 * max(len(known), 1))(*known)
                lib.check(lib.lib.pyu_target_set_thread_registers(h, int(tid), arr,
                                                                   len(known)))
        except BaseException:
            t.close()
            raise
        return t

    def set_auxv(self, pairs):
        """The auxiliary vector as the debugger read it, (type, value) pairs: for a target
        the debugger gives no mapping list, its files are found from the dynamic linker's list
        in its memory."""
        pairs = [(int(k), int(v) & 0xFFFFFFFFFFFFFFFF) for k, v in pairs]
        if pairs:
            arr = (ctypes.c_uint64 * (2 * len(pairs)))(*[x for p in pairs for x in p])
            self.lib.check(self.lib.lib.pyu_target_set_auxv(self.handle, arr, len(pairs)))
        return self

    def look_for_files(self, sysroot=None, search_dirs=()):
        """Where the target's files are looked for (the debugger's sysroot and search
        paths); every file is still checked by build ID."""
        if sysroot:
            self.lib.check(self.lib.lib.pyu_target_set_sysroot(self.handle, sysroot.encode()))
        for d in search_dirs:
            if d:
                self.lib.check(self.lib.lib.pyu_target_add_search_dir(self.handle, d.encode()))
        return self

    def set_cwd(self, directory):
        """The target's working directory, for source files named relative to it."""
        self.lib.check(self.lib.lib.pyu_target_set_cwd(self.handle, directory.encode()))
        return self

    def track_reads(self):
        """Remember what is read from here on, for memory_changed()."""
        self.lib.lib.pyu_target_track_reads(self.handle)
        return self

    def memory_changed(self):
        """Whether any byte read since track_reads() now reads differently."""
        changed = ctypes.c_uint32()
        self.lib.check(self.lib.lib.pyu_target_memory_changed(self.handle,
                                                             ctypes.byref(changed)))
        return bool(changed.value)

    def reads(self):
        return (self.lib.lib.pyu_target_backend_reads(self.handle),
                self.lib.lib.pyu_target_cached_reads(self.handle))



def _enc(text):
    return text.encode("utf-8", "surrogateescape") if text else None


_ET_CORE = 4


def is_core_file(path):
    """Whether the file at @path starts as a little-endian ELF core does (e_type ET_CORE):
    how the adapters tell, among the files their debugger has open or mapped, the core it
    reads, which neither debugger's Python names. False when unreadable. Read with the
    system's calls, not a file object (lldb looks at twenty files a command: 8 us each, 4);
    a FIFO among them does not block the open."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    except OSError:
        return False
    try:
        head = os.read(fd, 18)
    except OSError:
        return False
    finally:
        os.close(fd)
    return head[:4] == b"\x7fELF" and len(head) == 18 and \
        int.from_bytes(head[16:18], "little") == _ET_CORE


class ProgressBar(object):
    """The command line's progress bar (core/cli/progress.c), for a debugger's long command:
    drawn on stderr only when it is a terminal, at most ten times a second, and only for work
    longer than that; erased at the end."""
    WIDTH = 30
    EVERY = 0.1

    def __init__(self):
        try:
            self.fd = 2 if os.isatty(2) else None
        except OSError:
            self.fd = None
        self.last = time.monotonic()
        self.drawn = False

    def draw(self, done, total):
        if self.fd is None:
            return
        now = time.monotonic()
        if now - self.last < self.EVERY:
            return
        self.last = now
        if total:
            fill = min(self.WIDTH, int(done * self.WIDTH // total))
            line = "\rheap [%s%s] %d of %d objects looked into (Ctrl-C stops)\033[K" % (
                "#" * fill, "." * (self.WIDTH - fill), done, total)
        else:
            line = "\rheap: %d objects on the collector's lists (Ctrl-C stops)\033[K" % done
        try:
            os.write(self.fd, line.encode())
            self.drawn = True
        except OSError:
            self.fd = None

    def erase(self):
        if self.drawn and self.fd is not None:
            try:
                os.write(self.fd, b"\r\033[K")
            except OSError:
                pass
        self.drawn = False


class Stacks(_Handle):
    _destroy = "pyu_stacks_destroy"

    def __init__(self, target):
        self.target = target
        self.lib = target.lib
        h = ctypes.c_void_p()
        self.lib.check(self.lib.lib.pyu_stacks_collect(target.handle, ctypes.byref(h)))
        self.handle = h

    def thread_count(self):
        return self.lib.lib.pyu_stacks_thread_count(self.handle)

    def frame_count(self, thread):
        return self.lib.lib.pyu_stacks_frame_count(self.handle, thread)

    def find_thread(self, tid, pthread_id):
        return self.lib.lib.pyu_stacks_find_thread(self.handle, tid or 0, pthread_id or 0)

    def find_threads(self, tids):
        """find_thread(tid, 0) of each kernel tid (0: unknown, -1), in one call."""
        tids = array.array("q", tids)
        found = array.array("i", bytes(4 * len(tids)))
        if tids:
            self.lib.lib.pyu_stacks_find_threads(self.handle, tids.buffer_info()[0],
                                                 len(tids), found.buffer_info()[0])
        return found

    def _text(self, fn, *args):
        out = ctypes.c_void_p()
        self.lib.check(fn(self.handle, *(args + (ctypes.byref(out),))))
        return self.lib.take_string(out)

    def add_native_frames(self, threads):
        """Hands the core the native frames of snapshot threads: (thread, frames) pairs, each
        frame (pc, sp, cfa, function, library, file, line, kind), innermost first, unknowns
        None/0; kind: NATIVE_INLINE, NATIVE_ARTIFICIAL (a frame the debugger made up for a
        tail call) or 0. An sp of 0 beside a known cfa is where the frame's stack starts as
        the core works it out (pyu_stacks_set_native_frames). A thread the core refuses gets
        the reason as its native error. One call into the core for all (a ctypes call costs
        2-4 us, a thread's own call as much as its frames' packing where threads have two
        frames), the numbers of all packed by `array` and each distinct name encoded once:
        a call a frame cost 4-5 us, ctypes arrays filled an element at a time as much."""
        index = {None: 0}
        numbers = []
        add = numbers.extend
        ids = array.array("I")
        counts = array.array("I")
        for thread, frames in threads:
            ids.append(thread)
            counts.append(len(frames))
            for pc, sp, cfa, function, library, file, line, kind in frames:
                f = index.get(function)
                if f is None:
                    f = index[function] = len(index)
                lib = index.get(library)
                if lib is None:
                    lib = index[library] = len(index)
                p = index.get(file)
                if p is None:
                    p = index[file] = len(index)
                add((pc or 0, sp or 0, cfa or 0, line if line and line > 0 else 0, kind or 0,
                     f, lib, p))
        packed = array.array("Q", numbers)
        strings = [_enc(text) for text in index if text is not None]
        table = (ctypes.c_char_p * len(strings))(*strings)
        if ids:
            self.lib.check(self.lib.lib.pyu_stacks_set_native_threads(
                self.handle, ids.buffer_info()[0], counts.buffer_info()[0], len(ids),
                packed.buffer_info()[0], table, len(strings)))

    def set_native_error(self, thread, message):
        self.lib.check(self.lib.lib.pyu_stacks_set_native_error(self.handle, thread,
                                                                 _enc(message)))

    def native_frame_text(self, thread, level):
        return self._text(self.lib.lib.pyu_format_native_frame, thread, level)

    def bt(self, thread, flags, limit):
        return self._text(self.lib.lib.pyu_format_bt, thread, flags, limit)

    def frame_steps(self, thread):
        """The frames py-up and py-down step through, innermost first: a Python frame as its
        number, a Cython function as -1 - its native level (see pyu_stacks_frame_steps)."""
        lib = self.lib.lib
        count = ctypes.c_uint32()
        self.lib.check(lib.pyu_stacks_frame_steps(self.handle, thread, None, 0,
                                                  ctypes.byref(count)))
        buf = (ctypes.c_int64 * max(count.value, 1))()
        self.lib.check(lib.pyu_stacks_frame_steps(self.handle, thread, buf, count.value,
                                                  ctypes.byref(count)))
        return list(buf[:count.value])

    def level_step(self, thread, level):
        """What selecting native frame @level selects (a step as frame_steps gives), or None."""
        step = self.lib.lib.pyu_stacks_level_step(self.handle, thread, level)
        return None if step == ABSENT else step

    def cython_location(self, thread, level):
        """(module, .pyx file, line, qualified name) of the Cython function native frame
        @level runs; None when it runs none. Unknown parts are None (the line -1)."""
        lib = self.lib.lib
        line = lib.pyu_stacks_cython_line(self.handle, thread, level)
        if line == ABSENT:
            return None
        text = [lib.pyu_stacks_cython_string(self.handle, thread, level, which)
                for which in (CYSTR_MODULE, CYSTR_FILE, CYSTR_FUNCTION)]
        text = [t.decode("utf-8", "surrogateescape") if t is not None else None for t in text]
        return text[0], text[1], line, text[2]

    def cython_frame(self, thread, level, what, first=0, last=0, flags=0):
        return self._text(self.lib.lib.pyu_format_cython_frame, thread, level, what, first,
                          last, flags)

    def line(self, thread, frame, flags):
        return self._text(self.lib.lib.pyu_format_line, thread, frame, flags)

    def listing(self, thread, frame, first, last):
        return self._text(self.lib.lib.pyu_format_list, thread, frame, first, last)

    def set_limits(self, limits):
        """@limits: {limit number: value}; every limit not named returns to its default."""
        for which in sorted(set(LIMIT_OPTIONS.values())):
            self.lib.check(self.lib.lib.pyu_stacks_set_limit(self.handle, which,
                                                             limits.get(which, 0)))

    def locals(self, thread, frame, flags):
        return self._text(self.lib.lib.pyu_format_locals, thread, frame, flags)

    def tasks(self, thread, flags):
        return self._text(self.lib.lib.pyu_format_tasks, thread, flags)

    def task_frame(self, task, frame, what, path=None, first=0, last=0, flags=0):
        """(text, frame count) of frame @frame of the asyncio task @task (address or name)."""
        count = ctypes.c_uint32()
        out = ctypes.c_void_p()
        self.lib.check(self.lib.lib.pyu_format_task_frame(
            self.handle, task.encode("utf-8", "surrogateescape"), frame, what,
            path.encode("utf-8", "surrogateescape") if path is not None else None, first,
            last, flags, ctypes.byref(count), ctypes.byref(out)))
        return self.lib.take_string(out), count.value

    def _interruptible(self, view, fn, *args):
        """_text() of long work (the heap census) that the debugger's interrupt (Ctrl-C)
        stops with what it had. gdb turns Ctrl-C into a Python SIGINT (PyErr_SetInterrupt),
        handled when Python code next runs - the progress callback - so for the while a
        handler that notes it replaces the one that raises KeyboardInterrupt (which ctypes
        would swallow); lldb's view may also say so when asked. In a debugger whose stderr is
        a terminal, the CLI's progress bar is drawn there (and erased at the end)."""
        stop = []
        bar = ProgressBar() if view is not None else None

        def on_sigint(_signum, _frame):
            stop.append(True)

        def progress(_arg, done, total):
            try:
                if not stop and view is not None and view.interrupted():
                    stop.append(True)
                if bar is not None and not stop:
                    bar.draw(done, total)
            except BaseException:  # never an exception through ctypes into the census
                stop.append(True)
            return 1 if stop else 0

        callback = PROGRESS_FN(progress)  # referenced until the census is over
        lib = self.lib.lib
        previous = None
        try:
            previous = signal.signal(signal.SIGINT, on_sigint)
        except (ValueError, OSError, TypeError):  # not the main thread: KeyboardInterrupt
            pass
        lib.pyu_stacks_set_progress(self.handle, callback, None)
        try:
            return self._text(fn, *args)
        finally:
            lib.pyu_stacks_set_progress(self.handle, PROGRESS_FN(), None)
            if bar is not None:
                bar.erase()
            if previous is not None:
                signal.signal(signal.SIGINT, previous)

    def heap(self, flags, top, min_size, biggest, view=None):
        return self._interruptible(view, self.lib.lib.pyu_format_heap, flags, top, min_size,
                                   biggest)

    def heap_referrers(self, addr, flags, view=None):
        return self._interruptible(view, self.lib.lib.pyu_format_heap_referrers, addr, flags)

    def heap_path(self, addr, flags, view=None):
        return self._interruptible(view, self.lib.lib.pyu_format_heap_path, addr, flags)

    def print_path(self, thread, frame, path, flags):
        return self._text(self.lib.lib.pyu_format_print, thread, frame,
                          path.encode("utf-8", "surrogateescape"), flags)



# ---- command logic shared by both debuggers ---------------------------------------------------

class DebuggerView(object):
    """What an adapter tells the shared logic about its debugger. Subclassed per debugger."""

    def require_process(self):
        """Raises PyunwindError when there is no process or core to look at."""
        raise NotImplementedError

    def stop_key(self):
        """A value that changes whenever the target ran (stop id, or None if unknown)."""
        raise NotImplementedError

    def memory_generation(self):
        """A value that changes whenever the debugger wrote the target's memory at the same
        stop, as far as the debugger tells (gdb's memory_changed event); 0 if it never does."""
        return 0

    def writes_unseen(self):
        """True when the debugger can write the target's memory without stop_key() changing
        or telling us (lldb): a snapshot is then checked against memory before each reuse."""
        return False

    def target_openers(self, lib):
        """Ways to open the current inferior, best first: (description, callable returning
        a Target or raising PyunwindError)."""
        raise NotImplementedError

    def selected_thread(self):
        """(kernel tid, pthread id) of the debugger's selected thread; either may be 0."""
        raise NotImplementedError

    def native_threads(self):
        """(kernel tid, pthread id, frames) for each thread of the debugger, where frames()
        unwinds it: (pc, sp, cfa, function, library, file, line, kind) per frame, innermost
        first (kind: NATIVE_INLINE, NATIVE_ARTIFICIAL - made up for a tail call - or 0). The
        pthread id may be a callable that gives it: it is asked for only when the kernel tid
        (0 when unknown) finds no snapshot thread."""
        raise NotImplementedError

    def native_tids(self):
        """The kernel tids native_threads() will give, in a list, where the view can list
        them cheaply first (then the snapshot's threads are looked up at once); else None."""
        return None

    def interrupted(self):
        """True when the user asked the debugger to stop the command running (its own
        interrupt check), where the debugger offers one to poll; False otherwise."""
        return False

    def selected_level(self):
        """The level of the debugger's selected frame in the selected thread (`frame N`), or
        None when there is none or it cannot be told."""
        return None


def _parse_int(text, what):
    try:
        return int(text, 0)
    except ValueError:
        raise PyunwindError("%s: expected a number, got %r" % (what, text))


def _take_limit(words, i, limits):
    """If words[i] is a limit option (--max-items N or --max-items=N), stores it in @limits
    and returns the index of the next word; otherwise returns None."""
    w = words[i]
    name, eq, value = w.partition("=")
    if name not in LIMIT_OPTIONS:
        return None
    if not eq:
        if i + 1 >= len(words):
            raise PyunwindError("%s needs a number" % name)
        i += 1
        value = words[i]
    n = _parse_int(value, name)
    if n < 1:
        raise PyunwindError("%s must be at least 1" % name)
    limits[LIMIT_OPTIONS[name]] = n
    return i + 1


LIMITS_USAGE = "[--max-depth N] [--max-items N] [--max-chars N] [--max-digits N] [--max-repr N]"


# Rows of py-heap's text form unless --top says otherwise (the CLI's default too).
HEAP_TOP_DEFAULT = 25


def _parse_size(text, what):
    """A size as the CLI takes it: digits, optionally followed by K, M, G or T (powers of 1024)."""
    units = {"": 1, "K": 1 << 10, "M": 1 << 20, "G": 1 << 30, "T": 1 << 40}
    t = text.strip().upper()
    digits = t.rstrip("KMGTB").rstrip()
    unit = t[len(digits):].rstrip("B") if t[len(digits):] != "B" else ""
    if not digits.isdigit() or unit not in units:
        raise PyunwindError("%s needs a size (digits and K, M, G or T), got %r" % (what, text))
    return int(digits) * units[unit]


def _split(arg):
    try:
        return shlex.split(arg or "")
    except ValueError as e:
        raise PyunwindError(str(e))


class Session(object):
    """Per-debugger state: the snapshot of the current stop and the selected Python frame."""

    def __init__(self, adapter_dir):
        self.adapter_dir = adapter_dir
        self._key = None
        self._memory = 0  # the view's memory_generation() the snapshot was taken at
        self._target = None
        self._stacks = None
        # thread index -> selected frame: a Python frame's number, or -1 - the native level
        # of a Cython function (the steps of Stacks.frame_steps)
        self._selected = {}
        self._levels = {}  # thread index -> the debugger's frame level last seen
        self._task = None  # py-task: [task, selected frame, frame count] until the next stop
        self._native = set()  # thread indexes whose native frames the snapshot has
        self._failed = None  # (stop key, message) of the last stop no snapshot was had for
        self._cwd = None  # the target's working directory py-bt --cwd gave, for every snapshot

    def lib(self):
        return Library.get(self.adapter_dir)

    def invalidate(self):
        if self._stacks is not None:
            self._stacks.close()
        if self._target is not None:
            self._target.close()
        self._key = self._target = self._stacks = None
        self._selected = {}
        self._levels = {}
        self._task = None
        self._native = set()

    def stacks(self, view, check_memory=True):
        view.require_process()
        key = view.stop_key()
        keep_selection = None
        memory = view.memory_generation()
        if self._stacks is not None and key is not None and key == self._key:
            # A write the debugger reports (gdb) changes the memory generation; one it does
            # not (lldb's `memory write`, `expression`) leaves the stop id, and the snapshot
            # goes when a byte it read reads differently. Either way the Python frames each
            # thread has selected stay: the process did not run.
            if memory == self._memory and not (check_memory and view.writes_unseen() and
                                               self._target_changed()):
                return self._stacks
            keep_selection = (self._selected, self._levels)
        if key is not None and self._failed is not None and self._failed[0] == key:
            raise PyunwindError(self._failed[1])  # asked again at the same stop (lldb's
            # frame-format hook asks for every frame): the answer has not changed
        self.invalidate()
        lib = self.lib()
        errors = []
        # The view offers ways to read the target, best first (direct reader, then the
        # debugger's own reads). The first that opens answers: the debugger's reads are for a
        # target the direct reader cannot open. A core file the reader opened has said what
        # it holds; the debugger reading the same core would fill what the core lacks with
        # the files' on-disk data - a stale interpreter state, not the crashed one. When none
        # opens, the user sees why each failed.
        for how, opener in view.target_openers(lib):
            try:
                target = opener()
            except PyunwindError as e:
                errors.append((how, str(e)))
                continue
            try:
                if view.writes_unseen():
                    target.track_reads()
                stacks = Stacks(target)
            except PyunwindError as e:
                target.close()
                errors.append((how, str(e)))
                break
            self._target, self._stacks, self._key = target, stacks, key
            if self._cwd:
                target.set_cwd(self._cwd)
            self._memory = memory
            if keep_selection:
                self._selected, self._levels = keep_selection
            return stacks
        if not errors:
            raise PyunwindError("no way to read this target")
        msg = errors[0][1]
        for how, e in errors[1:]:
            if e != errors[0][1]:
                msg += " (%s: %s)" % (how, e)
        self._failed = (key, msg)
        raise PyunwindError(msg)

    def _target_changed(self):
        try:
            return self._target.memory_changed()
        except PyunwindError:
            return True  # cannot tell: read it again

    def native(self, view, stacks, threads):
        """Hands the core the debugger's native frames of snapshot threads @threads (indexes;
        None = all), once per stop."""
        want = None if threads is None else set(threads) - self._native
        if want is not None and not want:
            return
        unwound = []
        # The kernel's ids of every thread at once where the view lists them first (one
        # call into the core, not one a thread).
        tids = view.native_tids()
        found = dict(zip(tids, stacks.find_threads(tids))) if tids is not None else None
        for tid, pthread_id, frames in view.native_threads():
            # The kernel's id first: a debugger's pthread id may cost more to ask for than
            # the lookup (gdb without libthread_db raises for it) and is asked only when the
            # kernel's id finds no thread.
            if not tid:
                idx = -1
            elif found is not None and tid in found:
                idx = found[tid]
            else:
                idx = stacks.find_thread(tid, 0)
            if idx < 0:
                pthread_id = pthread_id() if callable(pthread_id) else pthread_id
                if pthread_id:
                    idx = stacks.find_thread(tid, pthread_id)
            if idx < 0 or idx in self._native or (want is not None and idx not in want):
                continue
            try:
                unwound.append((idx, frames()))
            except PyunwindError as e:
                stacks.set_native_error(idx, str(e))
            self._native.add(idx)
        stacks.add_native_frames(unwound)

    def native_text(self, view, level, tid=None, pthread_id=0):
        """The Python frames native frame @level of thread @tid (default: the selected one)
        runs, as "File ..., line N, in NAME" lines innermost first ("" if none)."""
        # The frame-format hook runs once per native frame of a `bt`: the memory is checked
        # by the commands, not at every frame.
        stacks = self.stacks(view, check_memory=False)
        if tid is None:
            thread = self._thread(view, stacks)
        else:
            thread = stacks.find_thread(tid, pthread_id)
            if thread < 0:
                return ""
        self.native(view, stacks, [thread])
        return stacks.native_frame_text(thread, level)

    def target_reads(self):
        return self._target.reads() if self._target is not None else (0, 0)

    def _thread(self, view, stacks):
        tid, pthread_id = view.selected_thread()
        idx = stacks.find_thread(tid, pthread_id)
        if idx < 0:
            raise PyunwindError("the selected thread (tid %s) runs no Python code; "
                                "'py-bt --all' shows every Python thread" % (tid or "?"))
        return idx

    def _frame(self, stacks, thread, arg, view=None):
        """The frame a command works on: Python frame #@arg, else the selected one - a Python
        frame's number (>= 0), or -1 - the native level of a selected Cython function."""
        n = stacks.frame_count(thread)
        if arg is None and view is not None:
            self._follow_debugger(view, stacks, thread)
            if self._selected.get(thread, 0) < 0:
                return self._selected[thread]
        if n == 0:
            raise PyunwindError("the selected thread has no Python frames")
        frame = self._selected.get(thread, 0) if arg is None else _parse_int(arg, "frame")
        if frame < 0 or frame >= n:
            raise PyunwindError("no Python frame #%d (the thread has %d)" % (frame, n))
        return frame

    def _follow_debugger(self, view, stacks, thread):
        """When the debugger's own selected frame moved (`frame N`, `up`, `down`) to a Cython
        function or an eval-loop frame, that frame (its innermost Python one) is selected."""
        level = view.selected_level()
        if level is None:
            return
        before = self._levels.get(thread, 0)
        self._levels[thread] = level
        if level == before:
            return
        self.native(view, stacks, [thread])
        step = stacks.level_step(thread, level)
        if step is not None:
            self._selected[thread] = step

    def _note_level(self, view, thread):
        """Remembers the debugger's frame level, so that only a later move follows it."""
        level = view.selected_level()
        if level is not None:
            self._levels[thread] = level

    # Each command returns the text to print.

    def py_bt(self, view, arg):
        flags, limit, limits, cwd = PYU_FMT_SOURCE, 0, {}, None
        words = _split(arg)
        i = 0
        while i < len(words):
            w = words[i]
            nxt = _take_limit(words, i, limits)
            if nxt is not None:
                i = nxt
                continue
            if w in ("-a", "--all"):
                flags |= PYU_FMT_ALL
            elif w in ("-j", "--json"):
                flags |= PYU_FMT_JSON
            elif w == "--no-source":
                flags &= ~PYU_FMT_SOURCE
            elif w == "--locals":
                flags |= PYU_FMT_LOCALS
            elif w in ("-n", "--native"):
                flags |= PYU_FMT_NATIVE
            elif w == "--native-all":
                flags |= PYU_FMT_NATIVE | PYU_FMT_NATIVE_ALL
            elif w in ("-l", "--limit") and i + 1 < len(words):
                i += 1
                limit = _parse_int(words[i], "--limit")
                if limit < 0:
                    raise PyunwindError("--limit must not be negative")
            elif w.startswith("--limit="):
                limit = _parse_int(w.split("=", 1)[1], "--limit")
            elif w == "--cwd" and i + 1 < len(words):
                i += 1
                cwd = words[i]
            else:
                raise PyunwindError("py-bt: unknown argument %r; usage: py-bt [--all] [--json] "
                                    "[--limit N] [--no-source] [--locals] [--cwd DIR] "
                                    "[--native | --native-all] %s" % (w, LIMITS_USAGE))
            i += 1
        stacks = self.stacks(view)
        if cwd is not None:
            self._cwd = cwd
            self._target.set_cwd(cwd)
        thread = 0 if flags & PYU_FMT_ALL else self._thread(view, stacks)
        stacks.set_limits(limits)
        if flags & PYU_FMT_NATIVE:
            self.native(view, stacks, None if flags & PYU_FMT_ALL else [thread])
        return stacks.bt(thread, flags, limit)

    def _value_args(self, cmd, arg, usage):
        """Parses [--json] and the limit options; returns (flags, limits, other words)."""
        flags, limits, rest = 0, {}, []
        words = _split(arg)
        i = 0
        while i < len(words):
            nxt = _take_limit(words, i, limits)
            if nxt is not None:
                i = nxt
                continue
            w = words[i]
            if w in ("-j", "--json"):
                flags |= PYU_FMT_JSON
            elif w.startswith("-") and not w.lstrip("-").isdigit():
                raise PyunwindError("%s: unknown argument %r; usage: %s" % (cmd, w, usage))
            else:
                rest.append(w)
            i += 1
        return flags, limits, rest

    def py_locals(self, view, arg):
        usage = "py-locals [N] [--json] " + LIMITS_USAGE
        flags, limits, rest = self._value_args("py-locals", arg, usage)
        if len(rest) > 1:
            raise PyunwindError("py-locals: usage: " + usage)
        stacks = self.stacks(view)
        if self._task_selected(stacks):
            stacks.set_limits(limits)
            frame = _parse_int(rest[0], "frame") if rest else self._task[1]
            return self._task_call(stacks, frame, PYU_TASK_LOCALS, flags=flags)
        thread = self._thread(view, stacks)
        frame = self._frame(stacks, thread, rest[0] if rest else None, view)
        if frame < 0:
            return stacks.cython_frame(thread, -1 - frame, PYU_TASK_LOCALS, flags=flags)
        stacks.set_limits(limits)
        return stacks.locals(thread, frame, flags)

    def py_print(self, view, arg):
        usage = "py-print NAME[.ATTR...] [--json] " + LIMITS_USAGE
        flags, limits, rest = self._value_args("py-print", arg, usage)
        if len(rest) != 1:
            raise PyunwindError("py-print: usage: " + usage)
        stacks = self.stacks(view)
        if self._task_selected(stacks):
            stacks.set_limits(limits)
            return self._task_call(stacks, self._task[1], PYU_TASK_PRINT, path=rest[0],
                                   flags=flags)
        thread = self._thread(view, stacks)
        frame = self._frame(stacks, thread, None, view)
        if frame < 0:
            return stacks.cython_frame(thread, -1 - frame, PYU_TASK_PRINT, flags=flags)
        stacks.set_limits(limits)
        return stacks.print_path(thread, frame, rest[0], flags)

    def py_tasks(self, view, arg):
        flags = PYU_FMT_SOURCE
        for w in _split(arg):
            if w in ("-a", "--all"):
                flags |= PYU_FMT_ALL
            elif w in ("-j", "--json"):
                flags |= PYU_FMT_JSON
            elif w in ("-t", "--tree"):
                flags |= PYU_FMT_TREE
            elif w == "--no-source":
                flags &= ~PYU_FMT_SOURCE
            elif w == "--locals":
                flags |= PYU_FMT_LOCALS
            else:
                raise PyunwindError("py-tasks: unknown argument %r; usage: py-tasks [--all] "
                                    "[--json] [--tree] [--no-source] [--locals]" % w)
        stacks = self.stacks(view)
        thread = -1 if flags & PYU_FMT_ALL else self._thread(view, stacks)
        return stacks.tasks(thread, flags)

    def py_heap(self, view, arg):
        usage = ("usage: py-heap [--json] [--top N] [--min-size SIZE] [--biggest N] "
                 "[--retained] | [--json] --referrers ADDR | [--json] [--retained] --path ADDR")
        flags, top, min_size, biggest, referrers, path_to = 0, None, 0, 0, 0, 0
        words = _split(arg)
        i = 0
        while i < len(words):
            w = words[i]
            if w in ("-j", "--json"):
                flags |= PYU_FMT_JSON
            elif w == "--retained":
                flags |= PYU_FMT_RETAINED
            elif w in ("--referrers", "--path") and i + 1 < len(words):
                i += 1
                n = _parse_int(words[i], w)
                if n <= 0:
                    raise PyunwindError("%s needs an object's address (0x...)" % w)
                if w == "--path":
                    path_to = n
                else:
                    referrers = n
            elif w in ("--top", "--min-size", "--biggest") and i + 1 < len(words):
                i += 1
                if w == "--min-size":
                    min_size = _parse_size(words[i], w)
                else:
                    n = _parse_int(words[i], w)
                    if n < 0 or (w == "--biggest" and n > 100000):
                        raise PyunwindError("%s must be 0 or more (--biggest: at most 100000)"
                                            % w)
                    if w == "--top":
                        top = n
                    else:
                        biggest = n
            else:
                raise PyunwindError("py-heap: unknown argument %r; %s" % (w, usage))
            i += 1
        if path_to:
            return self.stacks(view).heap_path(path_to, flags, view)
        if referrers:
            return self.stacks(view).heap_referrers(referrers, flags & PYU_FMT_JSON, view)
        if top is None:
            top = 0 if flags & PYU_FMT_JSON else HEAP_TOP_DEFAULT
        return self.stacks(view).heap(flags, top, min_size, biggest, view)

    def py_line(self, view, arg):
        flags, frame_arg = PYU_FMT_SOURCE, None
        for w in _split(arg):
            if w in ("-t", "--table"):
                flags |= PYU_FMT_TABLE
            elif frame_arg is None and not w.startswith("-"):
                frame_arg = w
            else:
                raise PyunwindError("py-line: unknown argument %r; usage: py-line [N] [--table]"
                                    % w)
        stacks = self.stacks(view)
        if self._task_selected(stacks):
            frame = _parse_int(frame_arg, "frame") if frame_arg else self._task[1]
            return self._task_call(stacks, frame, PYU_TASK_LINE, flags=flags)
        thread = self._thread(view, stacks)
        frame = self._frame(stacks, thread, frame_arg, view)
        if frame < 0:
            return stacks.cython_frame(thread, -1 - frame, PYU_TASK_LINE, flags=flags)
        return stacks.line(thread, frame, flags)

    def py_list(self, view, arg):
        words = _split(arg)
        if len(words) > 1:
            raise PyunwindError("py-list: usage: py-list [N | START,END]")
        stacks = self.stacks(view)
        task = self._task_selected(stacks)
        if not task:
            thread = self._thread(view, stacks)
            frame = self._frame(stacks, thread, None, view)
        first = last = 0
        if words:
            if "," in words[0]:
                a, b = words[0].split(",", 1)
                first, last = _parse_int(a, "START"), _parse_int(b, "END")
                if first < 1 or last < first:
                    raise PyunwindError("py-list: need 1 <= START <= END")
            else:
                n = _parse_int(words[0], "line")
                if n < 1:
                    raise PyunwindError("py-list: line numbers start at 1")
                first, last = max(1, n - 5), n + 5
        if task:
            return self._task_call(stacks, self._task[1], PYU_TASK_LIST, first=first,
                                   last=last)
        if frame < 0:
            return stacks.cython_frame(thread, -1 - frame, PYU_TASK_LIST, first, last)
        return stacks.listing(thread, frame, first, last)

    def py_move(self, view, arg, direction):
        words = _split(arg)
        if len(words) > 1:
            raise PyunwindError("usage: py-%s [N]" % ("up" if direction > 0 else "down"))
        count = _parse_int(words[0], "count") if words else 1
        stacks = self.stacks(view)
        task = self._task_selected(stacks)
        if task:
            n, cur = self._task[2], self._task[1]
        else:
            # The thread's frames with the Cython functions between them: its native frames
            # are asked for once per stop.
            thread = self._thread(view, stacks)
            self._follow_debugger(view, stacks, thread)
            self.native(view, stacks, [thread])
            steps = stacks.frame_steps(thread)
            n = len(steps)
            selected = self._selected.get(thread, 0)
            cur = steps.index(selected) if selected in steps else \
                steps.index(0) if 0 in steps else 0
        if n == 0:
            raise PyunwindError("the selected thread has no Python frames")
        new = cur + direction * count
        if new >= n:
            if cur == n - 1:
                raise PyunwindError("Initial Python frame selected; you cannot go up.")
            new = n - 1
        if new < 0:
            if cur == 0:
                raise PyunwindError("Bottom (innermost) Python frame selected; "
                                    "you cannot go down.")
            new = 0
        if task:
            text = self._task_call(stacks, new, PYU_TASK_SELECT, flags=PYU_FMT_SOURCE)
            self._task[1] = new
            return text
        step = steps[new]
        self._selected[thread] = step
        self._note_level(view, thread)
        if step < 0:
            return stacks.cython_frame(thread, -1 - step, PYU_TASK_LINE, flags=PYU_FMT_SOURCE)
        return stacks.line(thread, step, PYU_FMT_SOURCE)

    # py-task: a task's coroutine frames stand for the thread's until the next stop.

    def _task_selected(self, stacks):
        return self._task is not None

    def _task_call(self, stacks, frame, what, path=None, first=0, last=0, flags=0):
        text, count = stacks.task_frame(self._task[0], frame, what, path, first, last, flags)
        self._task[2] = count
        return text

    def py_task(self, view, arg):
        words = _split(arg)
        if len(words) > 1 or (words and words[0].startswith("-") and words[0] != "--off"):
            raise PyunwindError("py-task: usage: py-task [ADDRESS | NAME | --off]")
        stacks = self.stacks(view)
        if not words:
            if self._task is None:
                raise PyunwindError("no task selected; py-task ADDRESS | NAME selects one")
            return self._task_call(stacks, self._task[1], PYU_TASK_SELECT,
                                   flags=PYU_FMT_SOURCE)
        if words[0] == "--off":
            self._task = None
            return "py-locals, py-print, py-line, py-list, py-up and py-down are on the " \
                   "selected thread's frames again\n"
        text, count = stacks.task_frame(words[0], 0, PYU_TASK_SELECT, flags=PYU_FMT_SOURCE)
        self._task = [words[0], 0, count]
        return text


HELP = {
    "py-bt": """Print the Python stack of the selected thread, innermost frame first.
Usage: py-bt [--all] [--json] [--limit N] [--no-source] [--locals] [--cwd DIR]
             [value limits] [--native | --native-all]
  --all        every Python thread of every interpreter, with thread ids and GIL holder
  --native     the native frames too, each Python frame inside the native frame that runs
               it; the interpreter's own frames (eval loop, call helpers) hidden
  --native-all the same with every native frame
  --json       the machine-readable JSON document (schema in pyunwind's doc/json.md), nothing
               else
  --limit N    at most N frames per thread
  --no-source  leave out the source lines
  --locals     each frame's locals (name = repr), each thread's name and the exception it
               is handling, with its traceback as the target's traceback module prints it
  --cwd DIR    the target's working directory, against which file names relative to it are
               read (a live process: its own); kept for the later commands""" + "\n" + "VALUE_LIMITS",
    "py-locals": """Print the locals of the selected Python frame, or of frame #N.
Usage: py-locals [N] [--json] [value limits]
One "name = repr" a line, in the code's own order: arguments (*args, **kwargs included),
locals, cell and free variables; unbound names are left out. Module and class bodies show
their locals dict. Nothing in the target runs: reprs are read from memory.
  --json  a JSON list of {"name", "kind", "type", "repr", "address"}""" + "\n" + "VALUE_LIMITS",
    "py-print": """Print a name as the selected Python frame sees it.
Usage: py-print NAME[.ATTR...] [--json] [value limits]
Looks NAME up as Python would (local, enclosing, global, builtin) and says where it was
found; .ATTR parts follow instance, class and module dicts without running properties,
descriptors or __getattr__.""" + "\n" + "VALUE_LIMITS",
    "py-line": """Show the location of the selected Python frame, or of frame #N.
Usage: py-line [N] [--table]
Prints file, line, end line, columns, instruction offset and the source line with carets.
  --table  the whole decoded line table of the frame's code object, current range marked""",
    "py-list": """List the source around the selected Python frame's line.
Usage: py-list [N | START,END]
  N          lines around line N of that file
  START,END  lines START to END""",
    "py-tasks": """Print the asyncio tasks of the selected thread's event loop.
Usage: py-tasks [--all] [--json] [--tree] [--no-source] [--locals]
Each task with its name, state (pending, running, done, cancelled), the thread its loop runs
on, what it waits on (a task, a gather's children, a TaskGroup's tasks, a future), who waits
on it, and its stack: the coroutines it awaits, innermost first (the running task: its
thread's frames). Nothing in the target runs.
  --all        the tasks of every event loop of every thread
  --tree       the await graph as a tree; a cycle of tasks awaiting each other is marked
  --json       the machine-readable JSON document (schema in pyunwind's doc/asyncio.md)
  --no-source  leave out the source lines
  --locals     each coroutine frame's locals (name = repr)""",
    "py-task": """Select an asyncio task's coroutine stack for the frame commands.
Usage: py-task [ADDRESS | NAME | --off]
ADDRESS (0x...) or NAME: a task as py-tasks lists it. Until the program runs again (or
--off), py-locals, py-print, py-line, py-list, py-up and py-down work on the task's coroutine
frames, innermost (#0) first, as they work on a thread's frames. Without an argument: the
selected task frame.""",
    "py-heap": """Print what the target's objects are: a census by type, largest first.
Usage: py-heap [--json] [--top N] [--min-size SIZE] [--biggest N] [--retained]
       py-heap [--json] --referrers ADDR
       py-heap [--json] [--retained] --path ADDR
Every object the collector tracks (each generation and the permanent one, of every
interpreter) and every object those refer to (str, int, bytes, code objects ...), counted once
per type (module.qualname, builtins bare) with its bytes as sys.getsizeof() reports them; types
whose __sizeof__ is their own are sized by tp_basicsize and marked so. Nothing in the target
runs. Ctrl-C stops the census: what it counted until then is printed, marked partial.
  --top N          the N types with the most bytes (default 25; 0: every type)
  --min-size SIZE  leave out types with fewer bytes in all (K, M, G, T)
  --biggest N      also the N largest objects: address, bytes, type and a short repr
  --referrers ADDR the object at ADDR and the objects that refer to it, each with how
                   (via: [3], ['key'], .attr), and the frames holding it as a local
                   (via: local x of frame #N; a suspended generator's or coroutine's:
                   local x of coroutine main())
  --path ADDR      a shortest chain of references from a root (a module of sys.modules,
                   a local of a thread's frame or of a waiting asyncio task's coroutine,
                   an exception being handled) to the object
                   at ADDR, as a Python expression (sys.modules['app'].CACHE['k'][3])
  --retained       the bytes each row's type, each of the largest objects (or the --path
                   object) keeps alive: what would be freed if it became unreachable
  --json           the machine-readable JSON document (every type unless --top)""",
    "py-up": """Select the Python frame that called the selected one (toward the outermost).
Usage: py-up [N]
Cython functions running between Python frames are frames too (as py-bt --native shows
them): py-line and py-list then show their .pyx source, py-locals says where their C
variables can be read. Selecting a Cython function or an eval-loop frame with the
debugger's own frame command selects it (its innermost Python frame) here too.""",
    "py-down": """Select the Python frame called by the selected one (toward the innermost).
Usage: py-down [N]
Steps through Cython functions as py-up does.""",
}


_VALUE_LIMITS = """Value limits (defaults suit a terminal):
  --max-depth N   containers nested deeper print as ...
  --max-items N   elements shown per container
  --max-chars N   characters shown of a str or bytes
  --max-digits N  decimal digits of an int before a short form
  --max-repr N    bytes of one repr"""
for _k in HELP:
    HELP[_k] = HELP[_k].replace("VALUE_LIMITS", _VALUE_LIMITS)


def run(session, view, name, arg):
    """Runs command @name; returns its text. Raises PyunwindError for user errors."""
    if name == "py-bt":
        return session.py_bt(view, arg)
    if name == "py-line":
        return session.py_line(view, arg)
    if name == "py-list":
        return session.py_list(view, arg)
    if name == "py-locals":
        return session.py_locals(view, arg)
    if name == "py-print":
        return session.py_print(view, arg)
    if name == "py-tasks":
        return session.py_tasks(view, arg)
    if name == "py-task":
        return session.py_task(view, arg)
    if name == "py-heap":
        return session.py_heap(view, arg)
    if name == "py-up":
        return session.py_move(view, arg, +1)
    if name == "py-down":
        return session.py_move(view, arg, -1)
    raise PyunwindError("unknown command " + name)
