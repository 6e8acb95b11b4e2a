# lldb_threads - loaded into lldb after the pyunwind adapter by test_adapters.py's "lldb threads"
# case (`command script import`). lldb runs the adapter on two threads: commands on the command
# interpreter's, and the frame-format hook also on its event-handler thread, which prints stop
# reports and `thread select`'s report while the next command already runs. The adapter's
# sessions and the core's snapshots they own are not thread-safe; this module wraps every method
# of them (pyunwind_core's Session, Target and Stacks) to record any object that two threads
# are inside at once, and holds each call of another thread a while (HOLD seconds) so that
# such an overlap with the next commands cannot be missed. `pyu-test-threads` prints, as JSON,
# how many calls each kind of thread made and the overlaps seen.
import json
import threading
import time
import types

import pyunwind_core as core

HOLD = 0.3
_lock = threading.Lock()
_inside = {}  # id(object) -> {thread ident: depth}
_record = {"command_thread_calls": 0, "other_thread_calls": 0, "overlaps": []}
_command_thread = threading.get_ident()
_depth = {}  # thread ident -> wrapped calls it is inside


def _wrap(cls, name):
    fn = getattr(cls, name)

    def wrapper(self, *args, **kwargs):
        me = threading.get_ident()
        key = id(self)
        with _lock:
            users = _inside.setdefault(key, {})
            outermost = not _depth.get(me)
            _depth[me] = _depth.get(me, 0) + 1
            users[me] = users.get(me, 0) + 1
            others = [t for t, depth in users.items() if t != me and depth]
            if others and len(_record["overlaps"]) < 20:
                _record["overlaps"].append("%s.%s on thread %s while thread %s is inside it"
                                           % (cls.__name__, name, me, others[0]))
            if me == _command_thread:
                _record["command_thread_calls"] += 1
            else:
                _record["other_thread_calls"] += 1
        try:
            if outermost and me != _command_thread:
                time.sleep(HOLD)
            return fn(self, *args, **kwargs)
        finally:
            with _lock:
                users[me] -= 1
                _depth[me] -= 1

    setattr(cls, name, wrapper)


def _print_record(debugger, command, result, internal_dict):
    with _lock:
        result.PutCString(json.dumps(_record))


def __lldb_init_module(debugger, internal_dict):
    for cls in (core.Session, core._Handle, core.Target, core.Stacks):
        for name in sorted(vars(cls)):
            if not name.startswith("__") and isinstance(vars(cls)[name], types.FunctionType):
                _wrap(cls, name)
    debugger.HandleCommand("command script add -f %s._print_record pyu-test-threads"
                           % __name__)
