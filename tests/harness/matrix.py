# matrix - the interpreters of the test matrix, as tools/pythons lists them.
import os
import subprocess
from collections import namedtuple

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

# label: "pyenv-3.8", "debian-3.11", "sid-3.14", "sid-3.14d"; version: "3.14.10";
# minor: "3.14"; stripped/debug: bools.
Interpreter = namedtuple("Interpreter", "label version path stripped debug minor")

_cache = []


def interpreters():
    """Every interpreter present, in matrix order. Raises RuntimeError if the listing fails."""
    if not _cache:
        listed = os.environ.get("PYUNWIND_MATRIX")
        if listed:
            # tests/run_all lists the matrix once for every step: each listing starts every
            # interpreter.
            with open(listed) as f:
                text = f.read()
        else:
            out = subprocess.run([os.path.join(REPO, "tools", "pythons"), "list"],
                                 capture_output=True, text=True, timeout=300)
            if out.returncode != 0:
                raise RuntimeError("tools/pythons list failed: " + out.stderr.strip())
            text = out.stdout
        for line in text.splitlines():
            p = line.split()
            if len(p) != 5:
                continue
            _cache.append(Interpreter(p[0], p[1], p[2], p[3] == "stripped", p[4] == "debug",
                                      ".".join(p[1].split(".")[:2])))
    return list(_cache)


def by_label(label):
    for py in interpreters():
        if py.label == label:
            return py
    raise KeyError("no interpreter labelled %s in the matrix" % label)


def selected():
    """The matrix, narrowed by PYUNWIND_PYTHONS (space-separated labels or minor versions) when
    set - handy to rerun one failing interpreter."""
    want = os.environ.get("PYUNWIND_PYTHONS", "").split()
    pys = interpreters()
    if want:
        pys = [py for py in pys if py.label in want or py.minor in want]
    return pys
