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
import ctypes
import json
import os
from dataclasses import dataclass, field
from typing import Any, Dict, Iterable, Iterator, List, Mapping, Optional, Tuple, Union

from ._binding import core as _core

__all__ = [
    "Error", "NoMemoryError", "ReadError", "FaultError", "FormatError", "NotPythonError",
    "UnsupportedVersionError", "CorruptError", "ArgumentError", "NotFoundError",
    "PythonInfo", "Frame", "Thread", "Crash", "Signature", "Snapshot", "Target",
    "open_process", "open_core", "triage", "library_path",
]
__version__ = "0.1.0"

PathMaps = Union[Mapping[str, str], Iterable[Tuple[str, str]]]


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


class ArgumentError(Error):
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
_declared = []


def _lib():
    """The loaded library (found as the adapters find it: PYUNWIND_LIB, next to this package,
    the build tree of a checkout, an install prefix)."""
    try:
        lib = _core.Library.get(os.path.dirname(os.path.abspath(__file__)))
    except _core.PyunwindError as e:
        if isinstance(e, Error):
            raise
        raise ReadError(str(e), 2)
    if not _declared:
        # The triage entry points, beside what the shared binding declares.
        lib.lib.pyu_format_triage.restype = _P
        lib.lib.pyu_format_triage.argtypes = [_P, ctypes.c_char_p, _PP]
        lib.lib.pyu_stacks_crash_thread.restype = ctypes.c_int32
        lib.lib.pyu_stacks_crash_thread.argtypes = [_P]
        _declared.append(True)
    return lib


def library_path() -> str:
    """The path of the libpyunwind.so this module uses."""
    return _lib().path


def _check(lib, err) -> None:
    """Raises the Error subclass for a non-NULL struct pyu_error *, releasing it."""
    if err:
        msg = lib.lib.pyu_error_message(err)
        code = lib.lib.pyu_error_code(err)
        lib.lib.pyu_error_destroy(err)
        text = msg.decode("utf-8", "replace") if msg else "unknown error"
        raise _ERRORS.get(code, Error)(text, code)


def _string(lib, fn, *args) -> str:
    out = ctypes.c_void_p()
    _check(lib, fn(*(args + (ctypes.byref(out),))))
    return lib.take_string(out)


def _address(v: Optional[str]) -> Optional[int]:
    return int(v, 16) if isinstance(v, str) else v


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
class Frame:
    """One Python frame. ``kind`` is "python", or "error" for a frame that could not be read
    (then only ``reason`` and ``frame_address`` are set). Lines and columns are None when
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
    #: The exception sys.exc_info() gives in the thread ({"type", "repr", "address"}) or None.
    exception: Optional[Dict[str, Any]] = field(default=None, compare=False)
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

    @classmethod
    def from_json(cls, d: Dict[str, Any]) -> "Thread":
        fault = d.get("fault_address")
        return cls(d["thread_id"], d.get("native_thread_id"), d.get("holds_gil"), d.get("name"),
                   d.get("interpreter_id"), _address(d.get("tstate_address")),
                   tuple(Frame.from_json(f) for f in d.get("frames", [])),
                   d.get("frames_omitted", 0), d.get("exception"), d.get("syscall"),
                   d.get("state"), d.get("signal"),
                   _address(fault) if fault is not None else None, d.get("cpu_seconds"),
                   d.get("restarted"))

    def __iter__(self) -> Iterator[Frame]:
        return iter(self.frames)


@dataclass(frozen=True)
class Crash:
    """How the process of a core ended: the crashing thread (``python_thread`` False when it
    runs no Python code), the signal (None when the core records none, as in a gcore), its
    si_code and the fault address of SIGSEGV/SIGBUS/SIGILL/SIGFPE/SIGTRAP."""
    native_thread_id: Optional[int]
    thread_id: Optional[int]
    python_thread: bool
    signal: Optional[int]
    signal_name: Optional[str]
    signal_code: Optional[int]
    fault_address: Optional[int]

    @classmethod
    def from_json(cls, d: Dict[str, Any]) -> "Crash":
        return cls(d.get("native_thread_id"), d.get("thread_id"), d.get("python_thread", False),
                   d.get("signal"), d.get("signal_name"), d.get("signal_code"),
                   _address(d.get("fault_address")))


@dataclass(frozen=True)
class Signature:
    """The crash signature: a stable hash (16 hex digits) of the crashing thread's Python
    frames, ``frames`` the "QUALNAME (FILE BASENAME)" entries it was made from, innermost
    first (error frames left out, a recursion's repeats kept once)."""
    hash: str
    frames: Tuple[str, ...]


class Snapshot:
    """Every thread's Python stack, taken once by :meth:`Target.collect`."""

    def __init__(self, document: Dict[str, Any], triage_document: Dict[str, Any],
                 texts: Dict[bool, str]):
        self._doc = document
        self._triage = triage_document
        self._texts = texts
        self.python = PythonInfo.from_json(document["python"])
        self.threads: List[Thread] = [Thread.from_json(t) for t in document["threads"]]
        self.errors: List[str] = list(document.get("errors", []))
        self.notes: List[str] = list(document.get("notes", []))
        c = triage_document.get("crash")
        has_signal = c is not None and c.get("signal") is not None
        #: The crash of a core (None for a live process, or a core that records no signal).
        self.crash: Optional[Crash] = Crash.from_json(c) if has_signal else None
        self.signature = Signature(triage_document["signature"],
                                   tuple(triage_document["signature_frames"]))

    def __iter__(self) -> Iterator[Thread]:
        return iter(self.threads)

    @property
    def crash_thread(self) -> Optional[Thread]:
        """The thread that crashed (a core), or the GIL holder (a live process); None when
        that thread runs no Python code."""
        tid = (self._triage.get("crash") or {}).get("thread_id")
        for t in self.threads:
            if t.thread_id == tid:
                return t
        return None

    def document(self) -> Dict[str, Any]:
        """The JSON document of ``pyunwind bt --json`` (a fresh copy)."""
        return json.loads(json.dumps(self._doc))

    def triage_document(self, path: Optional[str] = None) -> Dict[str, Any]:
        """The document of ``pyunwind triage --json`` for this snapshot."""
        d = json.loads(json.dumps(self._triage))
        d["path"] = path
        return d

    def text(self, source: bool = True) -> str:
        """What ``pyunwind bt`` prints: every thread, traceback style; ``source=False`` is
        ``--no-source``."""
        return self._texts[bool(source)]


class Target:
    """An open process or core file. Use as a context manager, or call :meth:`close`."""

    def __init__(self, lib, handle, description: str):
        self._lib = lib
        self._handle = handle
        self.description = description

    def __enter__(self) -> "Target":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def __del__(self):
        try:
            self.close()
        except Exception:
            pass

    def close(self) -> None:
        if self._handle:
            self._lib.lib.pyu_target_destroy(self._handle)
            self._handle = None

    def _need_open(self):
        if not self._handle:
            raise ArgumentError("the target is closed", 8)

    def add_path_map(self, source: str, local: str) -> None:
        """Files the target names ``source...`` are read from ``local...`` here."""
        self._need_open()
        _check(self._lib, self._lib.lib.pyu_target_add_path_map(
            self._handle, source.encode(), local.encode()))

    def collect(self) -> Snapshot:
        """Reads every thread's Python stack. Raises NotPythonError, UnsupportedVersionError,
        ...; frames that cannot be read become error frames instead."""
        self._need_open()
        lib = self._lib
        stacks = ctypes.c_void_p()
        _check(lib, lib.lib.pyu_stacks_collect(self._handle, ctypes.byref(stacks)))
        try:
            doc = json.loads(_string(lib, lib.lib.pyu_format_bt, stacks, 0,
                                     _core.PYU_FMT_JSON | _core.PYU_FMT_ALL, 0))
            tri = json.loads(_string(lib, lib.lib.pyu_format_triage, stacks, None))
            texts = dict((source, _string(lib, lib.lib.pyu_format_bt, stacks, 0,
                                          _core.PYU_FMT_ALL |
                                          (_core.PYU_FMT_SOURCE if source else 0), 0))
                         for source in (True, False))
        finally:
            lib.lib.pyu_stacks_destroy(stacks)
        return Snapshot(doc, tri, texts)


def _apply_maps(target: Target, path_maps: PathMaps) -> None:
    items = path_maps.items() if isinstance(path_maps, Mapping) else path_maps
    for source, local in items:
        target.add_path_map(source, local)


def open_process(pid: int) -> Target:
    """A live local process, read through /proc (needs ptrace permission). The process is
    read as it runs: stop it (SIGSTOP, or a debugger) for a consistent picture."""
    lib = _lib()
    h = ctypes.c_void_p()
    _check(lib, lib.lib.pyu_target_open_pid(int(pid), ctypes.byref(h)))
    return Target(lib, h, "process %d" % int(pid))


def open_core(path: str, executable: Optional[str] = None, path_maps: PathMaps = ()) -> Target:
    """An ELF core file (gzip, zstd or xz compressed ones too). ``executable`` is the
    interpreter's executable when the core's own notes do not lead to it; ``path_maps``
    ({"/in/the/core": "/here"} or pairs) for a core from another machine or container."""
    lib = _lib()
    h = ctypes.c_void_p()
    _check(lib, lib.lib.pyu_target_open_core(os.fsencode(path),
                                             os.fsencode(executable) if executable else None,
                                             ctypes.byref(h)))
    t = Target(lib, h, "core %s" % path)
    try:
        _apply_maps(t, path_maps)
    except BaseException:
        t.close()
        raise
    return t


def triage(path: str, executable: Optional[str] = None,
           path_maps: PathMaps = ()) -> Dict[str, Any]:
    """The document ``pyunwind triage --json`` prints for core ``path``: on success the crash,
    signature and crashing thread's frames; when the core cannot be read, ``ok`` is False and
    ``error`` says why (code, name, message) - this never raises for the core's problems."""
    try:
        with open_core(path, executable, path_maps) as t:
            return t.collect().triage_document(path)
    except Error as e:
        return {"pyunwind": 1, "path": path, "ok": False,
                "error": {"code": e.code, "name": e.name, "message": e.message}}
