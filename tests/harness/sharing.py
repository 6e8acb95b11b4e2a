# sharing - things several cases read, made once: a target that serves every check of its
# (interpreter, program, mode), its gdb core, its kernel crash core. The runner says how many
# of the cases it runs use each key (a case's third field); the thing is made by the first
# user, handed to each, and closed when the last is done (or when the run ends). A failure to
# make it fails every case that uses it, each with the same error.
#
#   cases.append((name, fn, [key]))              # fn: with shared(key, make) as thing: ...
import threading

_lock = threading.Lock()
_items = {}   # key -> _Item
_planned = {}  # key -> cases still to use it


class _Item(object):
    def __init__(self):
        self.lock = threading.Lock()  # held while the thing is made
        self.made = False
        self.thing = None
        self.error = None
        self.users = 0


def plan(keys):
    """Sets how many cases of this run use each key (@keys: one entry per use)."""
    with _lock:
        _planned.clear()
        for k in keys:
            _planned[k] = _planned.get(k, 0) + 1


class shared(object):
    """Context manager: the thing @make() made for @key, once per run; its close() is called
    after the last planned use."""

    def __init__(self, key, make):
        self.key, self.make = key, make

    def __enter__(self):
        with _lock:
            item = _items.setdefault(self.key, _Item())
            item.users += 1
        with item.lock:
            if not item.made:
                item.made = True
                try:
                    item.thing = self.make()
                except BaseException as e:
                    item.error = e
        self.item = item
        if item.error is not None:
            self._release()
            raise item.error
        return item.thing

    def __exit__(self, *exc):
        self._release()

    def _release(self):
        item, done = self.item, False
        with _lock:
            item.users -= 1
            left = _planned.get(self.key, 1) - 1
            _planned[self.key] = left
            if left <= 0 and item.users == 0:
                _items.pop(self.key, None)
                done = True
        if done:
            _close(item)


def _close(item):
    if item.thing is not None and hasattr(item.thing, "close"):
        try:
            item.thing.close()
        except Exception:
            pass
    item.thing = None


def close_all():
    """Closes whatever is left (cases that failed before their use, a filtered run)."""
    with _lock:
        items = list(_items.values())
        _items.clear()
        _planned.clear()
    for item in items:
        _close(item)
