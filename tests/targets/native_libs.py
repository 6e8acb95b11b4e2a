# native_libs - real C and Cython libraries calling back into Python, the target of
# tests/e2e/test_native.py's library cases (Debian's python3-lxml, python3-yaml and
# python3-numpy on Debian's own python3.11, which ship their modules stripped):
#
#   python native_libs.py OUTDIR [park|crash]
#
# Threads, each blocked for good on pyu_truth.HOLD inside a Python function a library called:
#   lxml   an XPath extension function, called by libxml2's XPath engine under lxml.etree
#   yaml   the input stream's read(), called by libyaml's reader while yaml.load parses
#          with the C loader (PyYAML's Cython module _yaml)
#   numpy  a Python function numpy calls per element (np.frompyfunc on an object array)
# A library that cannot be imported leaves its thread out (the test says which it needs).
import os
import sys

sys.dont_write_bytecode = True
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import pyu_truth  # noqa: E402
from pyu_truth import HOLD, arrive  # noqa: E402


def blocks_in_callback(*args):
    arrive()
    HOLD.acquire()
    return args[-1] if args else None


def run_lxml():
    from lxml import etree
    ns = etree.FunctionNamespace(None)
    ns["held"] = blocks_in_callback
    doc = etree.fromstring("<a><b>1</b></a>")
    return doc.xpath("held(string(b))")


def run_yaml():
    import yaml

    class HeldStream(object):
        """A file-like input: the C parser (libyaml through _yaml) calls read() from C."""
        def read(self, size):
            return blocks_in_callback("value: 1\n")

    return yaml.load(HeldStream(), Loader=yaml.CLoader)


def run_numpy():
    import numpy as np
    held = np.frompyfunc(blocks_in_callback, 1, 1)
    return held(np.array([1], dtype=object))


def importable(name):
    try:
        __import__(name)
    except ImportError:
        return False
    if name == "yaml":
        import yaml
        return hasattr(yaml, "CLoader")
    return True


def main(argv):
    outdir = os.path.abspath(argv[1])
    mode = argv[2] if len(argv) > 2 else "park"
    scenarios = [(name, fn, ()) for name, module, fn in
                 (("lxml", "lxml.etree", run_lxml), ("yaml", "yaml", run_yaml),
                  ("numpy", "numpy", run_numpy)) if importable(module)]
    pyu_truth.start(outdir, mode, scenarios)
    blocks_in_callback()


if __name__ == "__main__":
    main(sys.argv)
