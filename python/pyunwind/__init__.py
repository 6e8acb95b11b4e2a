"""pyunwind - the Python stacks of a live process or a core file, read from its memory.

A typed API over libpyunwind (the C library the pyunwind CLI and the gdb/lldb commands use)::

    import pyunwind

    with pyunwind.open_core("core.1234") as target:      # or open_process(pid)
        snap = target.collect()
    print(snap.python.version, snap.crash and snap.crash.signal_name)
    for thread in snap.threads:
        for frame in thread.frames:                       # innermost first
            print(thread.native_thread_id, frame.qualname or frame.function, frame.file,
                  frame.line)
    print(snap.signature.hash, snap.signature.frames)
    snap.document()          # the JSON document of `pyunwind bt --json`, as a dict
    pyunwind.triage("core")  # the document of `pyunwind triage --json` (never raises for
                             # the core's own problems: they are its "error")

Everything is decoded by the C library; this module turns its JSON into dataclasses. Errors are
:class:`Error` (subclasses per cause) carrying the library's error code.
"""
import contextlib
import ctypes
import importlib.machinery
import importlib.util
import json
import operator
import os
import sysconfig
import threading
import weakref
import dataclasses
from dataclasses import dataclass, field
from typing import Any, Dict, Iterable, Iterator, List, Mapping, Optional, Tuple, Union

from ._binding import core as _core

__all__ = [
    "Error", "NoMemoryError", "ReadError", "FaultError", "FormatError", "NotPythonError",
    "UnsupportedVersionError", "CorruptError", "ArgumentError", "NotFoundError",
    "PythonInfo", "Local", "Frame", "Thread", "ThreadException", "TracebackEntry", "Crash", "Signature", "Snapshot", "Target",
    "LineRange", "LineTable", "Value", "Awaiting", "Task", "Tasks", "Heap", "HeapType",
    "HeapObject", "HeapError", "Referrer", "Referrers", "HeapStep", "HeapPath",
    "open_process", "open_core", "triage", "library_path", "native_module", "abi_version",
]
__version__ = "0.1.0"

PathMaps = Union[Mapping[str, str], Iterable[Tuple[str, str]]]
FilePath = Union[str, bytes, "os.PathLike[str]", "os.PathLike[bytes]"]  # a file name


# ---- errors -------------------------------------------------------------------------------------

class Error(_core.PyunwindError):
    """A failure of the library. ``code`` is the library's error code (``enum pyu_error_code``
    in pyunwind.h), ``name`` its name ("io", "not_python", ...), ``message`` the text."""

    code = 0
    name = "unknown"

    def __init__(self, message: str, code: Optional[int] = None):
        super().__init__(message)
        self.message = message
        if code is not None:
            self.code = code
            self.name = _ERROR_NAMES.get(code, "unknown")


class NoMemoryError(Error):
    code, name = 1, "nomem"


class ReadError(Error):
    """A file or process could not be opened or read."""
    code, name = 2, "io"


class FaultError(Error):
    """Target memory is not readable (not in the core)."""
    code, name = 3, "fault"


class FormatError(Error):
    """A malformed ELF file, core or line table."""
    code, name = 4, "format"


class NotPythonError(Error):
    """No CPython interpreter in the target."""
    code, name = 5, "not_python"


class UnsupportedVersionError(Error):
    """A CPython version or build pyunwind has no layout for."""
    code, name = 6, "unsupported"


class CorruptError(Error):
    """Interpreter structures that fail validation."""
    code, name = 7, "corrupt"


class ArgumentError(Error, TypeError, ValueError):
    """An argument the library cannot take: of the wrong type, out of range, a frame or
    thread of another snapshot, a target already closed. Also a TypeError and a ValueError,
    as Python's own functions raise for such arguments."""
    code, name = 8, "argument"


class NotFoundError(Error):
    code, name = 9, "not_found"


_ERRORS = dict((c.code, c) for c in (NoMemoryError, ReadError, FaultError, FormatError,
                                    NotPythonError, UnsupportedVersionError, CorruptError,
                                    ArgumentError, NotFoundError))
_ERROR_NAMES = dict((code, c.name) for code, c in _ERRORS.items())


# ---- the library ----------------------------------------------------------------------------------

_P = ctypes.c_void_p
_PP = ctypes.POINTER(ctypes.c_void_p)
_declared: List[Any] = []  # [the library declared]
_declared_lock = threading.Lock()


def _lib() -> Any:
    """The loaded library (found as the adapters find it: PYUNWIND_LIB, next to this package,
    the build tree of a checkout, an install prefix)."""
    try:
        lib = _core.Library.get(os.path.dirname(os.path.abspath(__file__)))
    except _core.PyunwindError as e:
        if isinstance(e, Error):
            raise
        raise ReadError(str(e), 2)
    with _declared_lock:
        if not _declared or _declared[0] is not lib:
            _declare_api(lib)
            _declared[:] = [lib]
    return lib


def _declare_api(lib: Any) -> None:
    """The triage entry points, beside what the shared binding declares."""
    lib.lib.pyu_format_triage.restype = _P
    lib.lib.pyu_format_triage.argtypes = [_P, ctypes.c_char_p, _PP]
    lib.lib.pyu_stacks_crash_thread.restype = ctypes.c_int32
    lib.lib.pyu_stacks_crash_thread.argtypes = [_P]
    lib.lib.pyu_stacks_version.restype = ctypes.c_char_p
    lib.lib.pyu_stacks_version.argtypes = [_P]
    lib.lib.pyu_stacks_hexversion.restype = ctypes.c_uint64
    lib.lib.pyu_stacks_hexversion.argtypes = [_P]
    lib.lib.pyu_stacks_build_flags.restype = ctypes.c_uint32
    lib.lib.pyu_stacks_build_flags.argtypes = [_P]
    lib.lib.pyu_stacks_unwind_native.restype = _P
    lib.lib.pyu_stacks_unwind_native.argtypes = [_P]
    lib.lib.pyu_target_open_core_limited.restype = _P
    lib.lib.pyu_target_open_core_limited.argtypes = [ctypes.c_char_p, ctypes.c_char_p,
                                                     ctypes.c_uint64, _PP]
    lib.lib.pyu_process_hold.restype = _P
    lib.lib.pyu_process_hold.argtypes = [ctypes.c_int32, _PP]
    lib.lib.pyu_hold_count.restype = ctypes.c_uint32
    lib.lib.pyu_hold_count.argtypes = [_P]
    lib.lib.pyu_process_release.restype = None
    lib.lib.pyu_process_release.argtypes = [_P]


_NATIVE_FUNCTIONS = ("pyu_stacks_thread_count", "pyu_stacks_thread_fields",
                     "pyu_stacks_frame_fields", "pyu_stacks_frame_reason",
                     "pyu_stacks_code_count", "pyu_stacks_code_string",
                     "pyu_stacks_code_address", "pyu_stacks_thread_name",
                     "pyu_stacks_thread_activity", "pyu_stacks_thread_activity_text",
                     "pyu_stacks_thread_exception", "pyu_stacks_collect", "pyu_stacks_destroy",
                     "pyu_stacks_version", "pyu_stacks_hexversion", "pyu_stacks_build_flags",
                     "pyu_stacks_frames_match")
_native_state: List[Any] = []  # [module or None], once looked for


def _load_native(here: str) -> Any:
    """The native module built for this interpreter: installed beside this file, or in the
    build tree of a checkout (build/pyext); None when there is none or it does not load."""
    try:
        return importlib.import_module(__name__ + "._native")
    except ImportError:
        pass
    name = "_native" + (sysconfig.get_config_var("EXT_SUFFIX") or ".so")
    repo = os.path.dirname(os.path.dirname(here))
    path = os.path.join(repo, "build", "pyext", name)
    if os.path.basename(os.path.dirname(here)) != "python" or not os.path.exists(path):
        return None
    try:
        loader = importlib.machinery.ExtensionFileLoader(__name__ + "._native", path)
        spec = importlib.util.spec_from_file_location(__name__ + "._native", path,
                                                      loader=loader)
        if spec is None:
            return None
        mod = importlib.util.module_from_spec(spec)
        loader.exec_module(mod)
        return mod
    except (ImportError, OSError):
        return None


def _native_for(lib: Any) -> Any:
    """The native module bound to @lib's functions, or None: then objects are built with
    ctypes from the library's JSON (PYUNWIND_NATIVE=0 forces that)."""
    with _declared_lock:  # looked for once, whichever thread asks first
        if not _native_state:
            mod = None
            if os.environ.get("PYUNWIND_NATIVE", "1") != "0":
                mod = _load_native(os.path.dirname(os.path.abspath(__file__)))
            if mod is not None:
                try:
                    mod.bind(*[ctypes.cast(getattr(lib.lib, n), ctypes.c_void_p).value
                               for n in _NATIVE_FUNCTIONS])
                    # What its take() builds; Snapshot's finalizer becomes its own.
                    mod.classes(Snapshot, Thread, Frame, ctypes.c_void_p, _check)
                except (AttributeError, TypeError, ValueError):
                    mod = None
            _native_state.append(mod)
        return _native_state[0]


def native_module() -> bool:
    """Whether snapshots are built by the native module (else through ctypes and JSON)."""
    return _native_for(_lib()) is not None


def abi_version() -> int:
    """The library's ABI version (what ``pyunwind --version`` prints)."""
    return int(_lib().lib.pyu_abi_version())


def library_path() -> str:
    """The path of the libpyunwind.so this module uses."""
    return str(_lib().path)


def _check(lib: Any, err: Any) -> None:
    """Raises the Error subclass for a non-NULL struct pyu_error *, releasing it."""
    if err:
        msg = lib.lib.pyu_error_message(err)
        code = lib.lib.pyu_error_code(err)
        lib.lib.pyu_error_destroy(err)
        text = msg.decode("utf-8", "replace") if msg else "unknown error"
        raise _ERRORS.get(code, Error)(text, code)


def _string(lib: Any, fn: Any, *args: Any) -> str:
    out = ctypes.c_void_p()
    _check(lib, fn(*(args + (ctypes.byref(out),))))
    return str(lib.take_string(out))


def _json(text: str) -> Dict[str, Any]:
    """A JSON object of the library's."""
    d: Dict[str, Any] = json.loads(text)
    return d


def _address(v: Any) -> Optional[int]:
    """An address of the JSON ("0x..."), None when absent."""
    return int(v, 16) if isinstance(v, str) else None if v is None else int(v)


def _address_of(v: Any) -> int:
    """An address the JSON always has."""
    return int(v, 16) if isinstance(v, str) else int(v)


# ---- plain objects --------------------------------------------------------------------------------

@dataclass(frozen=True)
class PythonInfo:
    """The interpreter of the target."""
    version: str
    hexversion: int
    debug_build: bool
    free_threaded: bool

    @classmethod
    def from_json(cls, d: Dict[str, Any]) -> "PythonInfo":
        return cls(d["version"], d["hexversion"], d["debug_build"], d["free_threaded"])


@dataclass(frozen=True)
class Local:
    """A local variable of a frame, as ``py-locals --json`` gives it: ``kind`` is "argument",
    "local", "cell", "free" (a closure's) or "dict" (a name of the namespace dict a module's or
    class body's frame runs in), ``type`` the type's name, ``repr`` bounded as the
    snapshot's limits say, ``address`` the object's (None when unbound)."""
    name: str
    kind: str
    type: Optional[str]
    repr: Optional[str]
    address: Optional[int]

    @classmethod
    def from_json(cls, d: Dict[str, Any]) -> "Local":
        return cls(d["name"], d["kind"], d.get("type"), d.get("repr"),
                   _address(d.get("address")))


@dataclass(frozen=True)
class Frame:
    """One frame. ``kind`` is "python", or "error" for a frame that could not be read (then
    only ``reason`` and ``frame_address`` are set); with ``collect(native=True)`` also
    "native" (a C function: ``function``, ``file``/``line`` when known, ``pc``, ``library``)
    and "cython" (a Cython function: its Python-level name, .pyx file and line). Lines and columns are None when
    CPython has none; columns are UTF-8 byte offsets; ``qualname`` is None before 3.11.
    ``extra`` holds any further keys of the JSON frame object."""
    kind: str
    function: Optional[str] = None
    qualname: Optional[str] = None
    file: Optional[str] = None
    line: Optional[int] = None
    end_line: Optional[int] = None
    column: Optional[int] = None
    end_column: Optional[int] = None
    instruction_offset: Optional[int] = None
    code_address: Optional[int] = None
    frame_address: Optional[int] = None
    reason: Optional[str] = None
    extra: Dict[str, Any] = field(default_factory=dict, compare=False, repr=False)

    _KEYS = ("kind", "function", "qualname", "file", "line", "end_line", "column",
             "end_column", "instruction_offset", "code_address", "frame_address", "address",
             "reason")

    @property
    def locals(self) -> Optional[Tuple[Local, ...]]:
        """The frame's locals when the snapshot was taken with ``locals=True``, else None."""
        got = self.extra.get("locals")
        return None if got is None else tuple(Local.from_json(v) for v in got)

    @property
    def pc(self) -> Optional[int]:
        """A native or Cython frame's program counter (``native=True``)."""
        return _address(self.extra.get("pc"))

    @property
    def library(self) -> Optional[str]:
        """The library a native or Cython frame's code is in (``native=True``)."""
        return self.extra.get("library")

    @classmethod
    def from_json(cls, d: Dict[str, Any]) -> "Frame":
        return cls(kind=d.get("kind", "python"), function=d.get("function"),
                   qualname=d.get("qualname"), file=d.get("file"), line=d.get("line"),
                   end_line=d.get("end_line"), column=d.get("column"),
                   end_column=d.get("end_column"),
                   instruction_offset=d.get("instruction_offset"),
                   code_address=_address(d.get("code_address")),
                   frame_address=_address(d.get("frame_address", d.get("address"))),
                   reason=d.get("reason"),
                   extra=dict((k, v) for k, v in d.items() if k not in cls._KEYS))

    @property
    def name(self) -> Optional[str]:
        """The qualified name where the interpreter has one (3.11+), else the function name."""
        return self.qualname or self.function

    def line_table(self) -> "LineTable":
        """The decoded line table of this frame's code object, from the newest snapshot that
        holds this frame of a target still open (ArgumentError when there is none)."""
        with _open_targets_lock:
            targets = list(_open_targets)
        for target in targets:
            try:
                return target.line_table(self)
            except ArgumentError:
                continue
        raise ArgumentError("the frame is in no snapshot of an open target", 8)


@dataclass(frozen=True)
class TracebackEntry:
    """One entry of an exception's traceback, outermost first as Python prints them: where
    the exception passed (``line_from`` says how the line was found: "bytecode", ...), and
    ``cython`` True for a Cython function's entry."""
    file: Optional[str]
    line: Optional[int]
    function: Optional[str]
    end_line: Optional[int] = None
    column: Optional[int] = None
    end_column: Optional[int] = None
    line_from: Optional[str] = None
    cython: bool = False

    @classmethod
    def from_json(cls, d: Dict[str, Any]) -> "TracebackEntry":
        return cls(d.get("file"), d.get("line"), d.get("function"), d.get("end_line"),
                   d.get("column"), d.get("end_column"), d.get("line_from"),
                   bool(d.get("cython")))


@dataclass(frozen=True)
class ThreadException:
    """The exception a thread handles (what ``sys.exc_info()`` gives in it): its ``type``'s
    name, ``repr``, ``address``, ``message`` (``str()`` of it, when readable; else
    ``message_error`` says why), its ``traceback`` (``TracebackEntry``, outermost first;
    ``traceback_error`` when it could not be read to its end). ``exc["type"]`` and
    ``exc.get("type")`` give the JSON document's values too."""
    type: Optional[str]
    repr: Optional[str]
    address: Optional[int]
    message: Optional[str] = None
    message_error: Optional[str] = None
    traceback: Tuple[TracebackEntry, ...] = ()
    traceback_error: Optional[str] = None
    json: Dict[str, Any] = field(default_factory=dict, compare=False, repr=False)

    @classmethod
    def from_json(cls, d: Dict[str, Any]) -> "ThreadException":
        return cls(d.get("type"), d.get("repr"), _address(d.get("address")), d.get("message"),
                   d.get("message_error"),
                   tuple(TracebackEntry.from_json(e) for e in d.get("traceback") or ()),
                   d.get("traceback_error"), d)

    def __getitem__(self, key: str) -> Any:
        return self.json[key]

    def get(self, key: str, default: Any = None) -> Any:
        return self.json.get(key, default)


def _seconds(v: Any) -> Optional[float]:
    # JSON writes a whole number of seconds as an int; the field (and the native module) says
    # float, so 0 CPU seconds read as 0.0 on both paths.
    return None if v is None else float(v)


def _exception(d: Optional[Dict[str, Any]]) -> Optional[ThreadException]:
    return None if d is None else ThreadException.from_json(d)


@dataclass(frozen=True)
class Thread:
    """One Python thread: ``thread_id`` is threading.get_ident(), ``native_thread_id`` the
    kernel tid (None when unknown), ``holds_gil`` True/False/None (unknown); frames innermost
    first."""
    thread_id: int
    native_thread_id: Optional[int]
    holds_gil: Optional[bool]
    name: Optional[str]
    interpreter_id: Optional[int]
    tstate_address: int
    frames: Tuple[Frame, ...]
    frames_omitted: int = 0
    #: The exception sys.exc_info() gives in the thread (a ThreadException), or None.
    exception: Optional[ThreadException] = field(default=None, compare=False)
    #: What the thread is doing: the system call it is in ("futex"; None when none or not
    #: known), that in plain words ("waiting on a lock", "running"; None when not known), the
    #: fatal signal it received ("SIGSEGV", a core's crashing thread) and the fault address,
    #: its user + system CPU time in seconds (None when not known).
    syscall: Optional[str] = field(default=None, compare=False)
    state: Optional[str] = field(default=None, compare=False)
    signal: Optional[str] = field(default=None, compare=False)
    fault_address: Optional[int] = field(default=None, compare=False)
    cpu_seconds: Optional[float] = field(default=None, compare=False)
    #: In ``syscall`` "restart_syscall" (a timed wait an earlier signal or attach interrupted,
    #: which the kernel resumes so): the wait it resumes ("futex"), None when not known.
    restarted: Optional[str] = field(default=None, compare=False)
    #: With ``collect(native=True)``: why the thread's native and Python frames could not be
    #: merged (None when they were: ``frames`` is then the merged stack), and when they could
    #: not, the native frames apart (``frames`` then holds the Python frames alone).
    merge_error: Optional[str] = field(default=None, compare=False)
    native_frames: Optional[Tuple[Frame, ...]] = field(default=None, compare=False)

    @classmethod
    def from_json(cls, d: Dict[str, Any]) -> "Thread":
        fault = d.get("fault_address")
        native = d.get("native_frames")
        return cls(d["thread_id"], d.get("native_thread_id"), d.get("holds_gil"), d.get("name"),
                   d.get("interpreter_id"), _address_of(d["tstate_address"]),
                   tuple(Frame.from_json(f) for f in d.get("frames", [])),
                   d.get("frames_omitted", 0), _exception(d.get("exception")), d.get("syscall"),
                   d.get("state"), d.get("signal"),
                   _address(fault) if fault is not None else None, _seconds(d.get("cpu_seconds")),
                   d.get("restarted"), d.get("merge_error"),
                   None if native is None else tuple(Frame.from_json(f) for f in native))

    def __iter__(self) -> Iterator[Frame]:
        return iter(self.frames)


@dataclass(frozen=True)
class Crash:
    """How the process of a core ended: the crashing thread (``python_thread`` False when it
    runs no Python code), the signal (None when the core records none, as in a gcore), its
    si_code and the fault address of SIGSEGV/SIGBUS/SIGILL/SIGFPE/SIGTRAP. ``crashed`` is False
    and ``written_by`` ``"debugger"`` for a core a debugger wrote (gdb's gcore): no crash, no
    signal, and the thread is the one holding the GIL (else the one the core names first)."""
    native_thread_id: Optional[int]
    thread_id: Optional[int]
    python_thread: bool
    signal: Optional[int]
    signal_name: Optional[str]
    signal_code: Optional[int]
    fault_address: Optional[int]
    crashed: bool = True
    written_by: Optional[str] = None

    @classmethod
    def from_json(cls, d: Dict[str, Any]) -> "Crash":
        return cls(d.get("native_thread_id"), d.get("thread_id"), d.get("python_thread", False),
                   d.get("signal"), d.get("signal_name"), d.get("signal_code"),
                   _address(d.get("fault_address")), d.get("crashed", True), d.get("written_by"))


@dataclass(frozen=True)
class Signature:
    """The crash signature: a stable hash (16 hex digits) of the crashing thread's Python
    frames, ``frames`` the "QUALNAME (FILE BASENAME)" entries it was made from, innermost
    first (error frames left out, a recursion's repeats kept once)."""
    hash: str
    frames: Tuple[str, ...]


@dataclass(frozen=True)
class LineRange:
    """Bytecode bytes [``start``, ``end``) of a code object and the source positions they
    run (``co_positions()`` of 3.11+, ``co_lines()`` of 3.10, the line numbers before): lines
    1-based, columns UTF-8 byte offsets, None where CPython has none."""
    start: int
    end: int
    line: Optional[int]
    end_line: Optional[int]
    column: Optional[int]
    end_column: Optional[int]


@dataclass(frozen=True)
class LineTable:
    """A frame's code object's whole line table, decoded (``py-line --table``): ``format``
    ("lnotab", "linetable 3.10", "locations 3.11+"), ``firstlineno``, the bytecode's and the
    table's lengths in bytes, the frame's ``instruction_offset``, every range in order, and
    ``error`` when the table could not be decoded to its end."""
    format: str
    firstlineno: int
    code_length: int
    table_length: int
    code_address: int
    frame_address: int
    instruction_offset: Optional[int]
    ranges: Tuple[LineRange, ...]
    error: Optional[str] = None

    @classmethod
    def from_json(cls, d: Dict[str, Any]) -> "LineTable":
        return cls(d["format"], d["firstlineno"], d["code_length"], d["table_length"],
                   _address_of(d["code_address"]), _address_of(d["frame_address"]),
                   d["instruction_offset"], tuple(LineRange(*r) for r in d["ranges"]),
                   d.get("error"))

    def at(self, offset: int) -> Optional[LineRange]:
        """The range holding bytecode byte @offset (None when none does)."""
        for r in self.ranges:
            if r.start <= offset < r.end:
                return r
        return None


@dataclass(frozen=True)
class Value:
    """What ``print`` found for a name in a frame: ``found`` says where and what ("local
    'name'", "global 'x' .attr (instance dict)"...), ``repr`` the value bounded as the
    snapshot's limits say, ``address`` the object's. ``str()`` is the CLI's line."""
    found: str
    repr: str
    address: Optional[int]

    def __str__(self) -> str:
        return "%s = %s" % (self.found, self.repr)


@dataclass(frozen=True)
class Awaiting:
    """What a task waits on: ``kind`` "task" or "future", its ``address``, ``via`` "await",
    "gather" or "taskgroup", and a future's ``type``."""
    kind: Optional[str]
    address: Optional[int]
    via: Optional[str]
    type: Optional[str] = None


@dataclass(frozen=True)
class Task:
    """An asyncio task (``tasks --json``): ``state`` "pending", "running", "done" or
    "cancelled"; the thread its loop runs on; what it awaits and the tasks awaiting it; its
    stack, innermost first (a suspended task: the coroutines it awaits; the running task: its
    thread's frames down to its coroutine). ``error`` says why a task could not be read."""
    address: Optional[int]
    name: Optional[str]
    state: Optional[str]
    thread_id: Optional[int]
    native_thread_id: Optional[int]
    loop: Optional[int]
    error: Optional[str]
    awaiting: Tuple[Awaiting, ...]
    awaited_by: Tuple[int, ...]
    frames: Tuple[Frame, ...]
    frames_omitted: int = 0

    @classmethod
    def from_json(cls, d: Dict[str, Any]) -> "Task":
        return cls(_address(d.get("address")), d.get("name"), d.get("state"),
                   d.get("thread_id"), d.get("native_thread_id"), _address(d.get("loop")),
                   d.get("error"),
                   tuple(Awaiting(a.get("kind"), _address(a.get("address")), a.get("via"),
                                  a.get("type")) for a in d.get("awaiting") or ()),
                   tuple(_address_of(a) for a in d.get("awaited_by") or ()),
                   tuple(Frame.from_json(f) for f in d.get("frames") or ()),
                   d.get("frames_omitted", 0))


@dataclass(frozen=True)
class Tasks:
    """Every asyncio task of the target (``tasks --json``), with the problems met (``errors``:
    a list that loops, an object that is no task) and how they were found (``notes``)."""
    tasks: Tuple[Task, ...]
    errors: Tuple[str, ...]
    notes: Tuple[str, ...]

    @classmethod
    def from_json(cls, d: Dict[str, Any]) -> "Tasks":
        return cls(tuple(Task.from_json(t) for t in d.get("tasks", [])),
                   tuple(d.get("errors", [])), tuple(d.get("notes", [])))

    def __iter__(self) -> Iterator[Task]:
        return iter(self.tasks)

    def __len__(self) -> int:
        return len(self.tasks)


@dataclass(frozen=True)
class HeapType:
    """One row of the heap census: a type (``module.qualname``, builtins bare), how many of
    its objects were found and their bytes; ``sized_by`` "getsizeof" (exactly as
    ``sys.getsizeof()``) or "basicsize"; ``retained`` with ``retained=True``."""
    type: str
    count: int
    bytes: int
    sized_by: str
    retained: Optional[int] = None

    @classmethod
    def from_json(cls, d: Dict[str, Any]) -> "HeapType":
        return cls(d["type"], d["count"], d["bytes"], d.get("sized_by", "getsizeof"),
                   d.get("retained"))


@dataclass(frozen=True)
class HeapObject:
    """One object of the heap: its address, type, bytes and a bounded repr; ``retained``
    (what it alone keeps alive) where it was asked for and known."""
    address: int
    type: Optional[str]
    bytes: Optional[int]
    repr: Optional[str]
    retained: Optional[int] = None

    @classmethod
    def from_json(cls, d: Dict[str, Any]) -> "HeapObject":
        return cls(_address_of(d["address"]), d.get("type"), d.get("bytes"), d.get("repr"),
                   d.get("retained"))


@dataclass(frozen=True)
class HeapError:
    """A kind of problem the census met (a damaged list, an unreadable type) and how often."""
    message: str
    count: int


@dataclass(frozen=True)
class Heap:
    """The heap census (``pyunwind heap --json``): every object the collector tracks and every
    object those refer to, counted once; ``types`` largest first, ``biggest`` the largest
    single objects; ``partial`` when a limit or an interruption stopped it; ``sources`` how the
    objects were found; ``unreached`` (with ``retained=True``) the objects no root reaches."""
    objects: int
    bytes: int
    tracked: int
    untracked: int
    partial: bool
    interrupted: bool
    sources: Tuple[str, ...]
    errors: Tuple[HeapError, ...]
    types: Tuple[HeapType, ...]
    biggest: Tuple[HeapObject, ...]
    unreached: Optional[int] = None

    @classmethod
    def from_json(cls, d: Dict[str, Any]) -> "Heap":
        return cls(d["objects"], d["bytes"], d.get("tracked", 0), d.get("untracked", 0),
                   bool(d.get("partial")), bool(d.get("interrupted")),
                   tuple(d.get("sources", ())),
                   tuple(HeapError(e["message"], e.get("count", 1))
                         for e in d.get("errors", ())),
                   tuple(HeapType.from_json(t) for t in d.get("types", ())),
                   tuple(HeapObject.from_json(b) for b in d.get("biggest", ())),
                   d.get("unreached"))


@dataclass(frozen=True)
class Referrer:
    """An object (or, with ``type`` "frame", a thread's frame) that refers to the object asked
    about, and how: ``via`` "[3]", "['key']", ".attr", "local x of frame #N", "local x of
    coroutine main()" (a suspended coroutine, generator or their frame object), ..."""
    address: Optional[int]
    type: Optional[str]
    repr: Optional[str]
    via: Optional[str]
    thread_id: Optional[int] = None

    @classmethod
    def from_json(cls, d: Dict[str, Any]) -> "Referrer":
        return cls(_address(d.get("address")), d.get("type"), d.get("repr"), d.get("via"),
                   d.get("thread_id"))


@dataclass(frozen=True)
class Referrers:
    """``heap --referrers ADDR --json``: the object and everything found referring to it
    (``dropped`` referrers past the limit are counted, not listed)."""
    object: HeapObject
    referrers: Tuple[Referrer, ...]
    partial: bool
    dropped: int

    @classmethod
    def from_json(cls, d: Dict[str, Any]) -> "Referrers":
        return cls(HeapObject.from_json(d["object"]),
                   tuple(Referrer.from_json(r) for r in d.get("referrers", ())),
                   bool(d.get("partial")), d.get("dropped", 0))


@dataclass(frozen=True)
class HeapStep:
    """One object on a chain of references from a root, with the expression reaching it."""
    address: int
    type: Optional[str]
    expr: Optional[str]


@dataclass(frozen=True)
class HeapPath:
    """``heap --path ADDR --json``: one shortest chain of references from a root (``root``,
    e.g. "sys.modules['app']" or a frame's local) to the object, root first; ``expr`` the
    whole chain as a Python expression. ``path`` is empty when no root reaches the object."""
    object: HeapObject
    root: Optional[str]
    expr: Optional[str]
    path: Tuple[HeapStep, ...]

    @classmethod
    def from_json(cls, d: Dict[str, Any]) -> "HeapPath":
        return cls(HeapObject.from_json(d["object"]), d.get("root"), d.get("expr"),
                   tuple(HeapStep(_address_of(x["address"]), x.get("type"), x.get("expr"))
                         for x in d.get("path") or ()))


class Snapshot:
    """Every thread's Python stack, taken once by :meth:`Target.collect`. ``threads`` are
    built when the snapshot is taken; the documents and texts (and with them ``crash`` and
    ``signature``) are formatted by the library when first asked for: of a live process, ask
    while it is as it was (stopped), as thread names and exceptions are read then."""

    def __init__(self, target: "Target", stacks: Any, threads: List[Thread]):
        self._target = target
        self._stacks = None  # owned (released by _release) once this is built: see the end
        self._doc: Optional[Dict[str, Any]] = None
        self._triage: Optional[Dict[str, Any]] = None
        self._texts: Dict[Tuple[bool, int, int], str] = {}
        self._bt_flags = 0   # collect()'s PYU_FMT_LOCALS / _NATIVE / _NATIVE_ALL: bt's options
        self._limit = 0      # collect(limit=N): frames per thread
        self.threads: List[Thread] = threads
        self.python = target._python_info(stacks)
        self._serial = 0
        self._errors: Optional[List[str]] = None
        # Last: a snapshot whose building failed does not own @stacks (collect() releases
        # them), so its finalizer cannot release them a second time.
        self._stacks = stacks

    def __repr__(self) -> str:
        return "<pyunwind.Snapshot #%d of %s: Python %s, %d thread%s>" % (
            self._serial, self._target.description, self.python.version, len(self.threads),
            "" if len(self.threads) == 1 else "s")

    # -- the library's snapshot, kept until the documents are had -------------------------

    def _format(self, fn: Any, *args: Any) -> str:
        with self._target._lock:  # the library's objects of one target: one call at a time
            if self._stacks is None:
                raise ArgumentError("the snapshot's target is closed", 8)
            return _string(self._target._lib, fn, self._stacks, *args)

    def _materialize(self) -> None:
        """Formats whatever was not yet, then lets the library's snapshot go (the target is
        closing)."""
        if self._stacks is None:
            return
        try:
            self._document_dict()
            self._triage_dict()
            self.text(True)
            self.text(False)
        finally:
            self._release()

    def _release(self, wait: bool = True, keep: bool = False) -> None:
        """Lets the library's snapshot go, under the target's lock: another thread may be
        formatting this snapshot (close() reaches it through its weak reference) or using the
        target. A finalizer (@wait False) that would have to wait for the lock - and might deadlock
        with its holder - hands the snapshot to the target's next call (its orphans) instead.
        @keep (the finalizer): the newest snapshot of an open target is kept (without its
        target, which would make a cycle) for target.print(frame, ...) and frame.line_table()
        of a frame the script kept without it; the one kept before goes. Everything of
        _kept is touched under the lock."""
        target = self._target
        if not target._lock.acquire(blocking=wait):
            stacks, self._stacks = self._stacks, None
            if stacks is not None:
                target._orphans.append(stacks)  # list.append is atomic; popped under the lock
            return
        try:
            stacks, self._stacks = self._stacks, None
            if stacks is None:
                return
            if keep and self._serial == target._taken and target._handle:
                state = dict(self.__dict__, _stacks=stacks)
                del state["_target"]
                target._drop_kept()
                target._kept = state
            else:
                target._destroy(stacks)
        finally:
            target._lock.release()

    def __del__(self) -> None:
        try:
            self._target._snapshots.pop(self._serial, None)
            self._release(False, True)
        except Exception:
            pass

    def _document_dict(self) -> Dict[str, Any]:
        if self._doc is None:
            lib = self._target._lib
            self._doc = json.loads(self._format(
                lib.lib.pyu_format_bt, 0,
                _core.PYU_FMT_JSON | _core.PYU_FMT_ALL | self._bt_flags, self._limit))
        return self._doc

    def _triage_dict(self) -> Dict[str, Any]:
        if self._triage is None:
            lib = self._target._lib
            self._triage = json.loads(self._format(lib.lib.pyu_format_triage, None))
        return self._triage

    def _where(self, frame: Frame) -> Tuple[int, int]:
        """(thread index, Python frame index) of @frame, one of this snapshot's; for a Cython
        frame (thread index, -1 - its native level), as the debugger commands number it."""
        for ti, th in enumerate(self.threads):
            n = 0
            for f in th.frames:
                if f is frame:
                    if f.kind == "cython" and isinstance(f.extra.get("debugger_level"), int):
                        return ti, -1 - f.extra["debugger_level"]
                    if f.kind not in ("python", "error"):
                        raise ArgumentError("a %s frame has no Python locals or lines"
                                            % f.kind, 8)
                    return ti, n
                if f.kind in ("python", "error"):
                    n += 1
        raise ArgumentError("the frame is not one of this snapshot's", 8)

    def _cython(self, ti: int, fi: int, what: int, first: int = 0, last: int = 0,
                flags: int = 0) -> str:
        """pyu_format_cython_frame on the Cython frame at native level -1 - @fi."""
        return self._format(self._target._lib.lib.pyu_format_cython_frame, ti, -1 - fi, what,
                            _integer(first, "first", 0, _U32), _integer(last, "last", 0, _U32),
                            flags)

    def _thread_index(self, thread: Union[int, Thread]) -> int:
        if isinstance(thread, Thread):
            for i, th in enumerate(self.threads):
                if th is thread:
                    return i
            thread = thread.native_thread_id or thread.thread_id
        tid = _integer(thread, "a thread id")
        with self._target._lock:
            if self._stacks is None:
                raise ArgumentError("the snapshot's target is closed", 8)
            i = self._target._lib.lib.pyu_stacks_find_thread(self._stacks, tid, tid)
        if i < 0:
            raise NotFoundError("no Python thread with id %d" % tid, 9)
        return i

    def thread(self, thread_id: int) -> Thread:
        """The thread whose kernel thread id (or, failing that, threading.get_ident() /
        pthread id) is @thread_id, as the CLI's ``--thread TID``. NotFoundError when none."""
        return self.threads[self._thread_index(thread_id)]

    @property
    def default_thread(self) -> Optional[Thread]:
        """The thread ``line``, ``list``, ``locals`` and ``print`` of the CLI show when no
        ``--thread`` is given: a core's crashing thread (when it runs Python), else the thread
        holding the GIL, else the first (None when there is no thread)."""
        if not self.threads:
            return None
        with self._target._lock:
            i = -1 if self._stacks is None else \
                self._target._lib.lib.pyu_stacks_crash_thread(self._stacks)
        if self._target._pid is None and 0 <= i < len(self.threads):
            return self.threads[int(i)]
        for th in self.threads:
            if th.holds_gil:
                return th
        return self.threads[0]

    def frame(self, number: int = 0, thread: Optional[Union[int, Thread]] = None) -> Frame:
        """Python frame #@number (0 the innermost) of @thread (a Thread, or an id as
        :meth:`thread` takes; None: :attr:`default_thread`), as the CLI's ``--frame N``
        (``--thread TID``) select it. NotFoundError when there is no such frame."""
        th = self.default_thread if thread is None else \
            self.threads[self._thread_index(thread)]
        frames = [f for f in (th.frames if th else ()) if f.kind in ("python", "error")]
        number = _integer(number, "a frame number", 0, _U32)  # the CLI's --frame bounds
        if not 0 <= number < len(frames):
            raise NotFoundError("no Python frame #%d in that thread (%d frames)"
                                % (number, len(frames)), 9)
        return frames[number]

    def locals(self, frame: Frame) -> List[Local]:
        """The locals of @frame in the code's own order (``py-locals``)."""
        lib = self._target._lib
        ti, fi = self._where(frame)
        if fi < 0:
            text = self._cython(ti, fi, _core.PYU_TASK_LOCALS, flags=_core.PYU_FMT_JSON)
        else:
            text = self._format(lib.lib.pyu_format_locals, ti, fi, _core.PYU_FMT_JSON)
        return [Local.from_json(v) for v in json.loads(text)]

    def locals_text(self, frame: Frame) -> str:
        """``pyunwind locals`` (the text, one "name = repr" a line) of @frame."""
        lib = self._target._lib
        ti, fi = self._where(frame)
        if fi < 0:
            return self._cython(ti, fi, _core.PYU_TASK_LOCALS)
        return self._format(lib.lib.pyu_format_locals, ti, fi, 0)

    def print(self, frame: Frame, path: str) -> Value:
        """``py-print``: @path ("name" or "name.attr...") looked up in @frame as Python would
        (local, enclosing, global, builtin; attributes without running code). NotFoundError
        when a part is missing."""
        lib = self._target._lib
        ti, fi = self._where(frame)
        if fi < 0:  # says where its C variables are, as an error
            self._cython(ti, fi, _core.PYU_TASK_PRINT, flags=_core.PYU_FMT_JSON)
        d = json.loads(self._format(lib.lib.pyu_format_print, ti, fi, _print_path(path),
                                    _core.PYU_FMT_JSON))
        return Value(d["found"], d["repr"], _address(d["address"]))

    def print_text(self, frame: Frame, path: str) -> str:
        """:meth:`print` as the CLI's ``print`` says it: the line "local 'name' = repr"."""
        lib = self._target._lib
        ti, fi = self._where(frame)
        if fi < 0:
            self._cython(ti, fi, _core.PYU_TASK_PRINT)
        return self._format(lib.lib.pyu_format_print, ti, fi, _print_path(path), 0).rstrip("\n")

    def line_table(self, frame: Frame) -> LineTable:
        """The whole decoded line table of @frame's code object. NotFoundError for a frame
        that could not be read."""
        lib = self._target._lib
        ti, fi = self._where(frame)
        if fi < 0:
            raise ArgumentError("a Cython frame has no bytecode line table (line_text() shows "
                                "its .pyx line)", 8)
        return LineTable.from_json(json.loads(self._format(lib.lib.pyu_format_line, ti, fi,
                                                           _core.PYU_FMT_JSON)))

    def line_text(self, frame: Frame, table: bool = True) -> str:
        """``py-line`` (``--table``): where @frame is, and its code's whole decoded line
        table, as text."""
        lib = self._target._lib
        ti, fi = self._where(frame)
        flags = _core.PYU_FMT_SOURCE | (_core.PYU_FMT_TABLE if table else 0)
        if fi < 0:
            return self._cython(ti, fi, _core.PYU_TASK_LINE, flags=flags)
        return self._format(lib.lib.pyu_format_line, ti, fi, flags)

    def source(self, frame: Frame, first: int = 0, last: int = 0) -> str:
        """``py-list``: lines @first..@last of @frame's file (0, 0: around its line)."""
        lib = self._target._lib
        ti, fi = self._where(frame)
        if fi < 0:
            return self._cython(ti, fi, _core.PYU_TASK_LIST, first, last)
        return self._format(lib.lib.pyu_format_list, ti, fi, _integer(first, "first", 0, _U32),
                            _integer(last, "last", 0, _U32))

    def tasks(self, thread: Optional[Union[int, Thread]] = None,
              locals: bool = False) -> "Tasks":
        """Every asyncio task, its state, what it awaits and who awaits it, and its stack, as
        ``pyunwind tasks --json`` has them (``thread``: only the tasks whose loop runs on that
        thread, as ``--thread TID``; ``locals=True``: each frame's locals, as ``--locals``).
        UnsupportedVersionError before 3.7."""
        return Tasks.from_json(self.tasks_document(thread, locals))

    def _tasks(self, thread: Optional[Union[int, Thread]], flags: int) -> str:
        lib = self._target._lib
        if thread is None:
            return self._format(lib.lib.pyu_format_tasks, -1, flags | _core.PYU_FMT_ALL)
        return self._format(lib.lib.pyu_format_tasks, self._thread_index(thread), flags)

    def tasks_document(self, thread: Optional[Union[int, Thread]] = None,
                       locals: bool = False) -> Dict[str, Any]:
        """The document of ``pyunwind tasks --json`` (``--thread``, ``--locals``)."""
        return _json(self._tasks(thread, _core.PYU_FMT_JSON |
                                      (_core.PYU_FMT_LOCALS if locals else 0)))

    def tasks_text(self, thread: Optional[Union[int, Thread]] = None, tree: bool = False,
                   source: bool = True, locals: bool = False) -> str:
        """What ``pyunwind tasks`` prints (``--thread``, ``--tree``, ``--no-source`` as
        ``source=False``, ``--locals``)."""
        return self._tasks(thread, (_core.PYU_FMT_TREE if tree else 0) |
                           (_core.PYU_FMT_SOURCE if source else 0) |
                           (_core.PYU_FMT_LOCALS if locals else 0))

    def heap_text(self, top: int = 25, min_size: int = 0, biggest: int = 0,
                  retained: bool = False) -> str:
        """What ``pyunwind heap`` prints (``--top``, default 25 as there; ``--min-size``,
        ``--biggest``, ``--retained``)."""
        lib = self._target._lib
        return self._format(lib.lib.pyu_format_heap,
                            _core.PYU_FMT_RETAINED if retained else 0,
                            _integer(top, "top", 0, _U32), _size(min_size),
                            _integer(biggest, "biggest", 0, _BIGGEST))

    def referrers_text(self, address: int) -> str:
        """What ``pyunwind heap --referrers ADDR`` prints."""
        return self._format(self._target._lib.lib.pyu_format_heap_referrers, _object_address(address), 0)

    def path_text(self, address: int, retained: bool = False) -> str:
        """What ``pyunwind heap --path ADDR`` (``--retained``) prints."""
        return self._format(self._target._lib.lib.pyu_format_heap_path, _object_address(address),
                            _core.PYU_FMT_RETAINED if retained else 0)

    def heap_document(self, top: int = 0, min_size: int = 0, biggest: int = 0,
                      retained: bool = False) -> Dict[str, Any]:
        """The document of ``pyunwind heap --json`` (``--top``, ``--min-size``, ``--biggest``,
        ``--retained``; ``top=0``: every type)."""
        lib = self._target._lib
        flags = _core.PYU_FMT_JSON | (_core.PYU_FMT_RETAINED if retained else 0)
        return _json(self._format(lib.lib.pyu_format_heap, flags, _integer(top, "top", 0, _U32),
                                  _size(min_size), _integer(biggest, "biggest", 0, _BIGGEST)))

    def heap(self, top: int = 0, min_size: int = 0, biggest: int = 0,
             retained: bool = False) -> Heap:
        """The heap census of the target, as ``pyunwind heap --json`` takes it: nothing runs
        in the target. ``retained=True`` adds what each type's objects and each of the
        ``biggest`` objects keep alive."""
        return Heap.from_json(self.heap_document(top, min_size, biggest, retained))

    def referrers(self, address: int) -> Referrers:
        """The objects (and frames) that refer to the object at @address
        (``heap --referrers``). NotFoundError when the census does not meet that object."""
        lib = self._target._lib
        return Referrers.from_json(json.loads(self._format(
            lib.lib.pyu_format_heap_referrers, _object_address(address), _core.PYU_FMT_JSON)))

    def path_to(self, address: int, retained: bool = False) -> HeapPath:
        """One shortest chain of references from a root to the object at @address
        (``heap --path``)."""
        lib = self._target._lib
        flags = _core.PYU_FMT_JSON | (_core.PYU_FMT_RETAINED if retained else 0)
        return HeapPath.from_json(json.loads(self._format(
            lib.lib.pyu_format_heap_path, _object_address(address), flags)))

    # -- what a snapshot says ----------------------------------------------------------------

    def __iter__(self) -> Iterator[Thread]:
        return iter(self.threads)

    @property
    def errors(self) -> List[str]:
        """Problems not tied to one frame."""
        return list(self._document_dict().get("errors", []))

    @property
    def notes(self) -> List[str]:
        """How the interpreter was found, what was worked around."""
        return list(self._document_dict().get("notes", []))

    @property
    def crash(self) -> Optional[Crash]:
        """The crash of a core (None for a live process, or a core that records no signal)."""
        c = self._triage_dict().get("crash")
        return Crash.from_json(c) if c is not None and c.get("signal") is not None else None

    @property
    def signature(self) -> Signature:
        t = self._triage_dict()
        return Signature(t["signature"], tuple(t["signature_frames"]))

    @property
    def crash_thread(self) -> Optional[Thread]:
        """The thread that crashed (a core), or the GIL holder (a live process); None when
        that thread runs no Python code."""
        tid = (self._triage_dict().get("crash") or {}).get("thread_id")
        for t in self.threads:
            if t.thread_id == tid:
                return t
        return None

    def document(self, thread: Optional[Union[int, Thread]] = None,
                 limit: Optional[int] = None) -> Dict[str, Any]:
        """The JSON document of ``pyunwind bt --json`` (a fresh copy); with
        collect(locals=True), native=True, limit=N, as ``bt --json --locals``, ``--native``
        (``--native-all``), ``--limit N``. ``thread``: that thread alone, as ``--thread TID``;
        ``limit`` other than collect()'s."""
        if thread is None and (limit is None or limit == self._limit):
            return _json(json.dumps(self._document_dict()))
        index = -1 if thread is None else self._thread_index(thread)
        return _json(self._format(
            self._target._lib.lib.pyu_format_bt, max(index, 0),
            _core.PYU_FMT_JSON | (_core.PYU_FMT_ALL if index < 0 else 0) | self._bt_flags,
            self._limit if limit is None else _integer(limit, "limit", 0, _U32)))

    def triage_document(self, path: Optional[FilePath] = None) -> Dict[str, Any]:
        """The document of ``pyunwind triage --json`` for this snapshot."""
        d = _json(json.dumps(self._triage_dict()))
        d["path"] = None if path is None else os.fsdecode(path)  # a str, as the CLI's
        return d

    def text(self, source: bool = True, thread: Optional[Union[int, Thread]] = None,
             limit: Optional[int] = None) -> str:
        """What ``pyunwind bt`` prints: every thread, traceback style; ``source=False`` is
        ``--no-source``, ``thread`` ``--thread TID`` (that thread alone), ``limit``
        ``--limit N`` (default: collect()'s). With collect(locals=True) or native=True, as
        ``bt --locals`` and ``bt --native`` (``--native-all``) print it."""
        index = -1 if thread is None else self._thread_index(thread)
        key = (bool(source), index,
               self._limit if limit is None else _integer(limit, "limit", 0, _U32))
        if key not in self._texts:
            lib = self._target._lib
            self._texts[key] = self._format(
                lib.lib.pyu_format_bt, max(index, 0),
                (_core.PYU_FMT_ALL if index < 0 else 0) | self._bt_flags |
                (_core.PYU_FMT_SOURCE if source else 0), key[2])
        return self._texts[key]


_open_targets: "weakref.WeakSet[Target]" = weakref.WeakSet()
_open_targets_lock = threading.Lock()  # threads open and close targets while one looks


class Target:
    """An open process or core file. Use as a context manager, or call :meth:`close`."""

    def __init__(self, lib: Any, handle: Any, description: str, pid: Optional[int] = None):
        self._lib = lib
        self._handle = handle
        # The native module bound to @lib (None: ctypes and JSON): a snapshot's library calls
        # through it cost a fraction of ctypes' (a sampler makes several a snapshot).
        self._native = _native_for(lib)
        # collect()'s common case in one call of the native module (None: no module)
        self._take = self._native.take if self._native else None
        self.description = description
        self._pid = pid        # a live process's; None for a core
        self._hold: Optional[ctypes.c_void_p] = None  # the library's hold (stopped())
        with _open_targets_lock:
            _open_targets.add(self)
        # The snapshots taken and not yet finalized, by serial (each drops its own entry as it
        # goes: a weak set's Python-level bookkeeping cost a sampler a microsecond a snapshot).
        self._snapshots: "Dict[int, weakref.ref[Snapshot]]" = {}
        self._taken = 0        # snapshots taken: the newest holding a frame answers for it
        self._cache: Any = None  # the native module's objects shared by this target's snapshots
        self._python: Optional[PythonInfo] = None  # given again while the library says the same
        self._python_raw: Any = None  # what the native module said that _python was made of
        # The library's target and its snapshots are used by one call at a time: Python
        # threads sharing a target take turns (calls on other targets run in parallel).
        self._lock = threading.RLock()
        self._orphans: List[Any] = []  # snapshots' stacks their finalizers could not release
        self._kept: Optional[Dict[str, Any]] = None  # the newest snapshot, dropped by the script

    def __repr__(self) -> str:
        return "<pyunwind.Target %s%s>" % (self.description, "" if self._handle else ", closed")

    def __enter__(self) -> "Target":
        self._need_open()
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def __del__(self) -> None:
        try:
            self.close()
        except Exception:
            pass

    def close(self) -> None:
        """Lets the process or core go. Snapshots taken keep their threads, documents and
        texts; what needs the target (print, locals, heap, ...) raises ArgumentError after.
        Closing again does nothing."""
        with self._lock:
            if self._handle:
                # Snapshots still held keep what they say: formatted now, before the target
                # goes.
                for ref in list(self._snapshots.values()):
                    snap = ref()
                    if snap is None:
                        continue
                    try:
                        snap._materialize()
                    except Error:
                        snap._release()
                self._drop_kept()
                handle, self._handle = self._handle, None
                with _open_targets_lock:
                    _open_targets.discard(self)
                if handle:
                    self._lib.lib.pyu_target_destroy(handle)
            # Also once closed: a snapshot finalized while close() held the lock left its
            # stacks here after (a snapshot's memory is its own: freed after its target too).
            self._free_orphans()

    def _destroy(self, stacks: Any) -> None:
        """pyu_stacks_destroy(), through the native module when there is one."""
        if self._native:
            self._native.destroy(stacks.value)
        else:
            self._lib.lib.pyu_stacks_destroy(stacks)

    def _free_orphans(self) -> None:
        while self._orphans:
            self._destroy(self._orphans.pop())

    def _drop_kept(self) -> None:
        kept, self._kept = self._kept, None
        if kept is not None and kept["_stacks"] is not None:
            self._destroy(kept["_stacks"])

    def _need_open(self) -> None:
        if not self._handle:
            raise ArgumentError("the target is closed", 8)

    def add_path_map(self, source: str, local: str) -> None:
        """Files the target names ``source...`` are read from ``local...`` here (the CLI's
        ``--path-map FROM=TO``)."""
        frm, to = _path(source, "a path map's source"), _path(local, "a path map's target")
        with self._lock:
            self._need_open()
            _check(self._lib, self._lib.lib.pyu_target_add_path_map(self._handle, frm, to))

    def set_sysroot(self, directory: str) -> None:
        """A file the target names /P is read from @directory/P here, a copy of the target
        machine's root (the CLI's ``--sysroot DIR``); files are still checked by build ID."""
        directory_b = _path(directory, "sysroot")
        with self._lock:
            self._need_open()
            _check(self._lib, self._lib.lib.pyu_target_set_sysroot(self._handle, directory_b))

    def add_search_path(self, directories: Union[str, Iterable[str]]) -> None:
        """Also look for the target's files as DIR/NAME in these directories (a list, or one
        string of them colon-separated, as the CLI's ``--search-path DIRS``)."""
        items: Iterable[Any] = directories
        if isinstance(directories, (str, bytes)) or not isinstance(directories, Iterable):
            items = [directories]
        dirs = [x for d in items for x in _path(d, "a search path directory").split(b":") if x]
        with self._lock:
            self._need_open()
            for d in dirs:
                _check(self._lib, self._lib.lib.pyu_target_add_search_dir(self._handle, d))

    def set_cwd(self, directory: str) -> None:
        """The target's working directory, for source files it names relative to it (the
        CLI's ``--cwd DIR``; a live process has its own unless this is set)."""
        directory_b = _path(directory, "cwd")
        with self._lock:
            self._need_open()
            _check(self._lib, self._lib.lib.pyu_target_set_cwd(self._handle, directory_b))

    def read_counts(self) -> Tuple[int, int]:
        """(reads that reached the process or core file, reads the page cache answered) since
        the target was opened: the counters of the CLI's ``--stats``."""
        with self._lock:
            self._need_open()
            return (self._lib.lib.pyu_target_backend_reads(self._handle),
                    self._lib.lib.pyu_target_cached_reads(self._handle))

    @property
    def held(self) -> int:
        """How many threads of a live process :meth:`stopped` holds now (0 outside it, for a
        core, or when a debugger already traces the process)."""
        with self._lock:  # stopped() frees the hold under it, in the thread that holds
            return int(self._lib.lib.pyu_hold_count(self._hold)) if self._hold else 0

    @contextlib.contextmanager
    def stopped(self) -> Iterator["Target"]:
        """Holds a live process still while the block runs, as the CLI does while it reads
        one: every thread seized and interrupted with ptrace (no signal the program sees),
        then let go, each given back any signal it had stopped for. Nothing for a core, or
        for a process a debugger already traces. Threads that cannot be held (no ptrace
        permission) are read as they run. Enter and leave it in one Python thread: that
        thread is the process's tracer meanwhile. Blocks nest (the outermost holds)."""
        with self._lock:
            self._need_open()
            if self._pid is None or self._hold is not None:
                h = None
            else:
                h = ctypes.c_void_p()
                _check(self._lib, self._lib.lib.pyu_process_hold(self._pid, ctypes.byref(h)))
                self._hold = h
        if h is None:
            yield self
            return
        try:
            yield self
        finally:
            with self._lock:
                self._hold = None
                self._lib.lib.pyu_process_release(h)

    def collect(self, locals: bool = False, native: Union[bool, str] = False,
                activity: bool = True, limits: Optional[Mapping[str, int]] = None,
                details: bool = True, stop: bool = False, limit: int = 0) -> Snapshot:
        """Reads every thread's Python stack. Raises NotPythonError, UnsupportedVersionError,
        ...; frames that cannot be read become error frames instead. ``activity``: read what
        each thread is doing (system call, state, signal, CPU time; two /proc files a thread
        of a live process); False leaves those None. ``locals``: each frame's locals
        (Frame.locals), as ``bt --locals``. ``native``: the native stacks too, unwound with
        elfutils (a live process must be stopped under ptrace by the caller, as a debugger
        does; a core needs nothing), each Python frame inside the native frame that runs it,
        as ``bt --native``; "native_all" keeps the interpreter's own frames.
        ``limits``: bounds on values shown ({"depth", "items", "chars", "digits", "repr"}:
        the CLI's --max-* options). ``details=False``: skip each thread's name and the
        exception it handles (read from the threading module's objects and the thread
        states): ``name`` and ``exception`` are then None; a sampler that needs neither
        saves a third of the time. ``stop=True``: hold a live process still with ptrace while
        it is read, as the CLI does unless ``--no-stop`` (see :meth:`stopped`; native=True on a
        live process always does). ``limit``: at most that many frames per thread (the CLI's
        ``--limit N``; the rest counted in ``Thread.frames_omitted``); 0 all.

        On a live process each call reads the process again (nothing read for an earlier
        snapshot is trusted): call it again for a new snapshot of the same open target.
        Frame (and Thread) objects equal in every field to one of the previous snapshot are
        that object again: a sampler's parked frames cost no new objects."""
        take = self._take
        if take is not None and locals is False and native is False and limits is None and \
                stop is False and limit.__class__ is int and not limit:
            # What a sampler asks for again and again: the native module does the steps of
            # the path below (_collect_native, Snapshot(), _register) in one call.
            with self._lock:
                snap: Snapshot = take(self, activity, details)
                return snap
        if native not in (False, True, "native_all"):
            raise ArgumentError("native is False, True or \"native_all\", not %r" % (native,), 8)
        if limit.__class__ is not int or limit:  # the default 0 needs no checking
            limit = _integer(limit, "limit", 0, _U32)
        bounds = _bounds(limits) if limits is not None else _NO_BOUNDS
        if (stop or native) and self._pid is not None and self._hold is None:
            with self.stopped():
                return self.collect(locals, native, activity, limits, details, False, limit)
        with self._lock:
            if not self._handle:
                self._need_open()
            if self._kept is not None:
                self._drop_kept()  # a new snapshot is the newest
            if self._orphans:
                self._free_orphans()
            if self._native and not (locals or native or bounds or limit):
                return self._collect_native(bool(activity), bool(details))
            return self._collect(bool(locals), native, bool(activity), bounds, bool(details),
                                 limit)

    def _collect_native(self, activity: bool, details: bool) -> Snapshot:
        """_collect() of the native module, without locals, native stacks, bounds or a
        frame limit: what a sampler asks for again and again, in as few Python steps as
        it takes."""
        native = self._native
        err, address = native.collect(self._handle.value)
        if err:
            _check(self._lib, err)
        stacks = ctypes.c_void_p(address)
        try:
            if self._cache is None:
                self._cache = native.Cache()
            threads, with_exception = native.threads(address, Thread, Frame, activity,
                                                     details, self._cache)
            if with_exception:
                threads = self._with_exceptions(stacks, threads, with_exception)
            snap = Snapshot(self, stacks, threads)
        except BaseException:
            self._destroy(stacks)
            raise
        return self._register(snap)

    def _collect(self, locals: bool, native: Union[bool, str], activity: bool,
                 bounds: List[Tuple[int, int]], details: bool, limit: int) -> Snapshot:
        lib = self._lib
        if self._native:
            err, address = self._native.collect(self._handle.value)
            _check(lib, err)
            stacks = ctypes.c_void_p(address)
        else:
            stacks = ctypes.c_void_p()
            _check(lib, lib.lib.pyu_stacks_collect(self._handle, ctypes.byref(stacks)))
        try:
            for which, value in bounds:
                _check(lib, lib.lib.pyu_stacks_set_limit(stacks, which, value))
            if native:
                _check(lib, lib.lib.pyu_stacks_unwind_native(stacks))
            bt_flags = (_core.PYU_FMT_LOCALS if locals else 0) | \
                (_core.PYU_FMT_NATIVE if native else 0) | \
                (_core.PYU_FMT_NATIVE_ALL if native == "native_all" else 0)
            doc = None
            if bt_flags:
                flags = _core.PYU_FMT_JSON | _core.PYU_FMT_ALL | bt_flags
                doc = json.loads(_string(lib, lib.lib.pyu_format_bt, stacks, 0, flags,
                                         int(limit)))
                threads = [Thread.from_json(t) for t in doc["threads"]]
                threads = _quiet(threads, activity, details)
            else:
                threads = _limited(self._threads(stacks, activity, details), int(limit))
            snap = Snapshot(self, stacks, threads)
            snap._bt_flags, snap._limit = bt_flags, int(limit)
            if doc is not None and activity and details:
                snap._doc = doc  # what document() would format again
        except BaseException:
            self._destroy(stacks)
            raise
        return self._register(snap)

    def _register(self, snap: Snapshot) -> Snapshot:
        """@snap numbered and kept (weakly) among the target's snapshots, which close()
        reaches."""
        self._taken += 1
        snap._serial = self._taken
        self._snapshots[snap._serial] = weakref.ref(snap)
        return snap

    def _threads(self, stacks: Any, activity: bool, details: bool) -> List[Thread]:
        native = self._native
        if native is None:
            doc = json.loads(_string(self._lib, self._lib.lib.pyu_format_bt, stacks, 0,
                                     _core.PYU_FMT_JSON | _core.PYU_FMT_ALL, 0))
            return _quiet([Thread.from_json(t) for t in doc["threads"]], activity, details)
        if self._cache is None:
            self._cache = native.Cache()
        threads: List[Thread]
        threads, with_exception = native.threads(stacks.value, Thread, Frame, bool(activity),
                                                 bool(details), self._cache)
        return self._with_exceptions(stacks, threads, with_exception)

    def _with_exceptions(self, stacks: Any, threads: List[Thread],
                         with_exception: Iterable[int]) -> List[Thread]:
        for i in with_exception:
            # A thread's exception and its traceback: that thread's document alone.
            doc = json.loads(_string(self._lib, self._lib.lib.pyu_format_bt, stacks, i,
                                     _core.PYU_FMT_JSON, 0))
            exc = doc["threads"][0].get("exception") if doc["threads"] else None
            threads[i] = dataclasses.replace(threads[i], exception=_exception(exc))
        return threads

    def print(self, frame: Frame, path: str) -> Value:
        """:meth:`Snapshot.print` in the newest snapshot of this target that holds @frame."""
        return self._owner(frame).print(frame, path)

    def line_table(self, frame: Frame) -> LineTable:
        """:meth:`Snapshot.line_table` in the newest snapshot of this target holding @frame."""
        return self._owner(frame).line_table(frame)

    def tasks(self, thread: Optional[Union[int, Thread]] = None,
              locals: bool = False) -> "Tasks":
        """The asyncio tasks of a new snapshot (:meth:`Snapshot.tasks`)."""
        return self.collect(activity=False, details=False).tasks(thread, locals)

    def heap(self, top: int = 0, min_size: int = 0, biggest: int = 0,
             retained: bool = False) -> Heap:
        """The heap census of a new snapshot (:meth:`Snapshot.heap`)."""
        return self.collect(activity=False, details=False).heap(top, min_size, biggest,
                                                                 retained)

    def referrers(self, address: int) -> Referrers:
        """:meth:`Snapshot.referrers` in a new snapshot."""
        return self.collect(activity=False, details=False).referrers(address)

    def path_to(self, address: int, retained: bool = False) -> HeapPath:
        """:meth:`Snapshot.path_to` in a new snapshot."""
        return self.collect(activity=False, details=False).path_to(address, retained)

    def _owner(self, frame: Frame) -> Snapshot:
        # A frame unchanged between snapshots is one object in each: the newest answers.
        with self._lock:
            kept, self._kept = self._kept, None
            if kept is not None:  # the newest snapshot, no longer held by the script
                snap = Snapshot.__new__(Snapshot)
                snap.__dict__.update(kept)
                snap._target = self
                self._snapshots[snap._serial] = weakref.ref(snap)
            snaps = [s for s in (r() for r in list(self._snapshots.values())) if s is not None]
            snaps.sort(key=lambda s: -s._serial)
        for snap in snaps:
            if any(f is frame for th in snap.threads for f in th.frames):
                return snap
        raise ArgumentError("the frame is in no snapshot of this target still held: keep the "
                            "Snapshot that holds it (the newest is kept for you)", 8)

    def _python_info(self, stacks: Any) -> PythonInfo:
        if self._native:
            raw = self._native.info(stacks.value)
            if raw == self._python_raw and self._python is not None:
                return self._python  # what the library said last time: the same object
            version, hexversion, flags = self._python_raw = raw
        else:
            lib = self._lib.lib
            version, hexversion, flags = (lib.pyu_stacks_version(stacks).decode(),
                                          lib.pyu_stacks_hexversion(stacks),
                                          lib.pyu_stacks_build_flags(stacks))
        info = (version, hexversion, bool(flags & 1), bool(flags & 2))
        p = self._python  # the same object again while the interpreter is the same
        if p is None or (p.version, p.hexversion, p.debug_build, p.free_threaded) != info:
            p = self._python = PythonInfo(*info)
        return p


_LIMITS = {"depth": 1, "items": 2, "chars": 3, "digits": 4, "repr": 5}
_NO_BOUNDS: List[Tuple[int, int]] = []  # never changed: collect() without limits
_U32 = (1 << 32) - 1
_U64 = (1 << 64) - 1


def _integer(value: Any, what: str, low: int = 0, high: int = _U64) -> int:
    """@value as an int in [@low, @high], else ArgumentError (as the CLI refuses such an
    option's value)."""
    # A bool is an int to Python, but open_process(True) reading process 1 is a slip, not a
    # request: the CLI would refuse "True" as a number too.
    try:
        if isinstance(value, bool):
            raise TypeError
        v = operator.index(value)
    except TypeError:
        raise ArgumentError("%s must be an int, not %s" % (what, type(value).__name__), 8)
    if not low <= v <= high:
        raise ArgumentError("%s must be %d to %d, not %d" % (what, low, high, v), 8)
    return v


def _path(value: Any, what: str) -> bytes:
    """A file name (str, bytes or os.PathLike) as the library takes it, else ArgumentError."""
    try:
        b = os.fsencode(value)
    except TypeError:
        raise ArgumentError("%s must be a path (str, bytes or os.PathLike), not %s"
                            % (what, type(value).__name__), 8)
    if not b or b"\0" in b:
        raise ArgumentError("%s must be a non-empty path without NUL, not %r" % (what, value),
                            8)
    return b


_BIGGEST = 100000  # the CLI's bound of --biggest


def _object_address(address: Any) -> int:
    """An object's address (an int, as HeapObject.address; 0 is none)."""
    return _integer(address, "an object's address", 1)


def _print_path(path: Any) -> bytes:
    if not isinstance(path, str):
        raise ArgumentError("a print path is a str such as \"name.attr\", not %s"
                            % type(path).__name__, 8)
    return path.encode()


def _bounds(limits: Optional[Mapping[str, int]]) -> List[Tuple[int, int]]:
    """collect()'s @limits as (the library's limit, value) pairs, checked as the CLI checks
    its --max-* options (a number of at least 1)."""
    if limits is None:
        return []
    if not isinstance(limits, Mapping):
        raise ArgumentError("limits must be a mapping such as {\"depth\": 3}, not %s"
                            % type(limits).__name__, 8)
    out = []
    for name, value in limits.items():
        if name not in _LIMITS:
            raise ArgumentError("unknown limit %r (one of %s)"
                                % (name, ", ".join(sorted(_LIMITS))), 8)
        out.append((_LIMITS[name], _integer(value, "limit %r" % name, 1, _U32)))
    return out


def _limited(threads: List[Thread], limit: int) -> List[Thread]:
    """@threads with at most @limit frames each, the rest counted (as bt --limit)."""
    if not limit:
        return threads
    return [dataclasses.replace(t, frames=t.frames[:limit],
                                frames_omitted=t.frames_omitted + len(t.frames) - limit)
            if len(t.frames) > limit else t for t in threads]


_SIZE_UNITS = {"": 1, "K": 1 << 10, "M": 1 << 20, "G": 1 << 30, "T": 1 << 40}


def _size(size: Union[int, str]) -> int:
    """A byte count: an int, or a string of digits and K, M, G or T as the CLI takes it."""
    if not isinstance(size, str):
        return _integer(size, "a size")
    text = size.strip().upper()
    unit = text[-1:] if text[-1:] in _SIZE_UNITS else ""
    digits = text[:len(text) - len(unit)]
    if not digits.isdigit():
        raise ArgumentError("a size is digits and K, M, G or T, not %r" % (size,), 8)
    return _integer(int(digits) * _SIZE_UNITS[unit], "a size")  # ctypes would wrap past 2^64


def _quiet(threads: List[Thread], activity: bool, details: bool) -> List[Thread]:
    """@threads without what collect() was told not to read."""
    drop: Dict[str, Any] = {}
    if not activity:
        drop.update(syscall=None, state=None, signal=None, fault_address=None,
                    cpu_seconds=None, restarted=None)
    if not details:
        drop.update(name=None, exception=None)
    return [dataclasses.replace(t, **drop) for t in threads] if drop else threads


def _apply_maps(target: Target, path_maps: PathMaps) -> None:
    if isinstance(path_maps, (str, bytes)) or not isinstance(path_maps, Iterable):
        raise ArgumentError("path_maps must be a mapping {source: local} or (source, local) "
                            "pairs, not %s" % type(path_maps).__name__, 8)
    items = path_maps.items() if isinstance(path_maps, Mapping) else path_maps
    for pair in items:
        if isinstance(pair, (str, bytes)) or not isinstance(pair, Iterable) or \
                len(tuple(pair)) != 2:
            raise ArgumentError("a path map is a (source, local) pair, not %r" % (pair,), 8)
        source, local = tuple(pair)
        target.add_path_map(source, local)


def _set_up(t: Target, path_maps: PathMaps, sysroot: Optional[str],
            search_path: Union[str, Iterable[str]], cwd: Optional[str]) -> Target:
    try:
        _apply_maps(t, path_maps)
        if sysroot:
            t.set_sysroot(sysroot)
        if cwd:
            t.set_cwd(cwd)
        t.add_search_path(search_path)
    except BaseException:
        t.close()
        raise
    return t


def open_process(pid: int, path_maps: PathMaps = (), sysroot: Optional[str] = None,
                 search_path: Union[str, Iterable[str]] = (),
                 cwd: Optional[str] = None) -> Target:
    """A live local process, read through /proc (needs ptrace permission). The process is
    read as it runs: hold it still with ``collect(stop=True)`` or :meth:`Target.stopped` (or
    SIGSTOP, or a debugger) for a consistent picture. ``path_maps``, ``sysroot``,
    ``search_path`` and ``cwd``: where its files are read here, as the CLI's
    ``--path-map``, ``--sysroot``, ``--search-path`` and ``--cwd``. ReadError when there is
    no such process or it may not be read."""
    lib = _lib()
    h = ctypes.c_void_p()
    pid = _integer(pid, "a process id", 1, (1 << 31) - 1)
    _check(lib, lib.lib.pyu_target_open_pid(pid, ctypes.byref(h)))
    return _set_up(Target(lib, h, "process %d" % pid, pid), path_maps, sysroot,
                   search_path, cwd)


def open_core(path: "FilePath", executable: Optional["FilePath"] = None, path_maps: PathMaps = (),
              sysroot: Optional[str] = None, search_path: Union[str, Iterable[str]] = (),
              cwd: Optional[str] = None, max_unpacked: Union[int, str] = 0) -> Target:
    """An ELF core file (gzip, zstd or xz compressed ones too). ``executable`` is the
    interpreter's executable when the core's own notes do not lead to it; ``path_maps``
    ({"/in/the/core": "/here"} or pairs) for a core from another machine or container;
    ``sysroot``, ``search_path``, ``cwd`` as the CLI's ``--sysroot``, ``--search-path``,
    ``--cwd``; ``max_unpacked`` (bytes, or "16G") as ``--max-unpacked``: at most that much of
    a compressed core is unpacked (0: $PYUNWIND_MAX_UNPACKED, else 16 GiB)."""
    lib = _lib()
    h = ctypes.c_void_p()
    _check(lib, lib.lib.pyu_target_open_core_limited(
        _path(path, "a core"), _path(executable, "executable") if executable else None,
        _size(max_unpacked), ctypes.byref(h)))
    return _set_up(Target(lib, h, "core %s" % os.fsdecode(path)), path_maps, sysroot, search_path, cwd)


def triage(path: "FilePath", executable: Optional["FilePath"] = None,
           path_maps: PathMaps = ()) -> Dict[str, Any]:
    """The document ``pyunwind triage --json`` prints for core ``path``: on success the crash,
    signature and crashing thread's frames; when the core cannot be read, ``ok`` is False and
    ``error`` says why (code, name, message) - this never raises for the core's problems."""
    _path(path, "a core")  # a bad argument is the caller's problem, not the core's: raised
    try:
        with open_core(path, executable, path_maps) as t:
            return t.collect().triage_document(path)
    except ArgumentError:
        raise
    except Error as e:
        return {"pyunwind": 1, "path": os.fsdecode(path), "ok": False,
                "error": {"code": e.code, "name": e.name, "message": e.message}}
