# gen_truth.py - dumps what an interpreter itself says about its line tables, for compare.c.
#
#   python gen_truth.py OUT.gz CORPUS_DIR
#
# Runs unchanged under 2.7 and 3.6-3.15. Compiles the corpus (CORPUS_DIR/*.py whose
# "# min-version: X.Y" first line allows it, plus sources generated here: huge line jumps,
# very long functions, very long lines, ASTs without positions) and every .py file of this
# interpreter's standard library, and writes for every code object (recursively through
# co_consts): co_firstlineno, the raw table (co_lnotab <= 3.9, co_linetable 3.10+), the
# bytecode length and the interpreter's own answer at every instruction:
#   <= 3.9  PyCode_Addr2Line() through ctypes (dis.findlinestarts when ctypes is missing),
#           at every instruction start (2.7: variable-length instructions);
#   3.10    co_lines(), expanded to every 2-byte instruction;
#   3.11+   co_positions(), one tuple per code unit. On 3.11+ the corpus is compiled a second
#           time in a child started with -X no_debug_ranges (tables without columns).
# Files of the standard library that do not compile (py2-only test data, ...) are counted.
#
# Dump (gzip, little-endian): b"PYULT1\n", u16 n + version string, then records:
#   tag u8 1, code: u8 format, i32 firstlineno, u32 code_len, u32 table_len, table bytes,
#       u16 n + name, u8 flags (1: neg valid, 2: past_end valid), i32 neg, i32 past_end
#       (PyCode_Addr2Line at -1 and at code_len; -1 = no line on 3.10+),
#       u32 count, then count entries: format < 3: (i32 offset, i32 line); format 3:
#       (i32 line, end_line, column, end_column) for code unit 0, 1, ...; None = INT32_MIN;
#   tag u8 2, stats: u32 stdlib files compiled, u32 stdlib files skipped, u32 corpus sources;
#   tag u8 0: end.
from __future__ import print_function

import array
import gzip
import os
import struct
import subprocess
import sys
import warnings

NONE = -2147483648
V = sys.version_info[:2]
FORMAT = 0 if V < (3, 0) else 1 if V < (3, 10) else 2 if V < (3, 11) else 3
CODE_TYPE = type(compile("0", "", "eval"))

try:
    import ctypes
    ADDR2LINE = ctypes.pythonapi.PyCode_Addr2Line
    ADDR2LINE.argtypes = (ctypes.py_object, ctypes.c_int)
    ADDR2LINE.restype = ctypes.c_int
except Exception:  # no ctypes in this build: fall back to the dis module's rule
    ADDR2LINE = None


def int_array(values):
    a = array.array("i", values)
    if sys.byteorder != "little":
        a.byteswap()
    return a.tostring() if V < (3, 0) else a.tobytes()


def instruction_starts(code):
    co_code = bytearray(code.co_code)
    if V >= (3, 6):
        return range(0, len(co_code), 2)
    starts, i = [], 0
    have_argument = 90
    while i < len(co_code):
        starts.append(i)
        i += 3 if co_code[i] >= have_argument else 1
    return starts


def lnotab_truth(code):
    starts = instruction_starts(code)
    if ADDR2LINE is not None:
        lines = [ADDR2LINE(code, off) for off in starts]
    else:
        import dis
        table = sorted(dis.findlinestarts(code))
        lines, k, line = [], 0, code.co_firstlineno
        for off in starts:
            while k < len(table) and table[k][0] <= off:
                line = table[k][1]
                k += 1
            lines.append(line)
    flat = []
    for off, line in zip(starts, lines):
        flat.append(off)
        flat.append(line)
    return len(lines), flat


def lines310_truth(code):
    n = len(code.co_code)
    end = n
    ranges = list(code.co_lines())
    for start, stop, line in ranges:
        end = max(end, stop)
    lines = [NONE] * ((end + 1) // 2)
    for start, stop, line in ranges:
        for off in range(start, stop, 2):
            lines[off // 2] = NONE if line is None else line
    flat = []
    for i, line in enumerate(lines):
        flat.append(2 * i)
        flat.append(line)
    return len(lines), flat


def positions_truth(code):
    flat = [NONE if v is None else v for p in code.co_positions() for v in p]
    return len(flat) // 4, flat


class Dump(object):
    def __init__(self, out):
        self.out = out
        self.codes = 0

    def code(self, code, name):
        if FORMAT <= 1:
            table = code.co_lnotab
            count, flat = lnotab_truth(code)
        elif FORMAT == 2:
            table = code.co_linetable
            count, flat = lines310_truth(code)
        else:
            table = code.co_linetable
            count, flat = positions_truth(code)
        flags, neg, past = 0, 0, 0
        if ADDR2LINE is not None:
            flags |= 1
            neg = ADDR2LINE(code, -1)
            # Past the end: Py_DEBUG builds of 3.10+ assert on it, release builds answer.
            if FORMAT <= 1 or not hasattr(sys, "gettotalrefcount"):
                flags |= 2
                past = ADDR2LINE(code, len(code.co_code))
        name = name.encode("utf-8", "replace")[:65535]
        self.out.write(struct.pack("<BBiII", 1, FORMAT, code.co_firstlineno,
                                   len(code.co_code), len(table)))
        self.out.write(table)
        self.out.write(struct.pack("<H", len(name)) + name)
        self.out.write(struct.pack("<BiiI", flags, neg, past, count))
        self.out.write(int_array(flat))
        self.codes += 1

    def tree(self, code, where):
        stack = [code]
        while stack:
            co = stack.pop()
            self.code(co, "%s:%s:%d" % (where, co.co_name, co.co_firstlineno))
            for c in reversed(co.co_consts):
                if isinstance(c, CODE_TYPE):
                    stack.append(c)


def min_version(src):
    first = src.split(b"\n", 1)[0]
    if first.startswith(b"# min-version:"):
        return tuple(int(x) for x in first.split(b":")[1].strip().split(b"."))
    return (2, 7)


def generated_sources():
    """Sources too big to commit: line jumps past 255 and 65535 both ways, offsets that need
    EXTENDED_ARG, columns past 255 and 65535, an expression spanning 70,000 lines."""
    out = []
    blank = lambda n: "\n" * n
    src = ("def jumps(a):\n    x = 1\n" + blank(300) + "    y = 2\n" + blank(70000) +
           "    while x:\n        x -= 1\n" + blank(70000) +
           "        if a:\n            break\n" + blank(300) +
           "    return (x,\n" + blank(70000) + "            y)\n" +
           "def after():\n    return jumps(\n" + blank(1000) + "1)\n")
    out.append(("gen_jumps.py", src))
    body = "".join("        v%d = a + %d\n" % (i, i) for i in range(12000))
    src = ("def long_function(a):\n    if a:\n" + body + "    else:\n        v0 = 0\n" +
           "    while a:\n" + body +
           "        a -= 1\n    return v0\n")
    out.append(("gen_long.py", src))
    # columns past 255 and 65535: 300 long names on one line (a longer chain would hit the
    # compiler's recursion limit in debug builds)
    names = ["x%d_%s" % (i, "w" * 240) for i in range(300)]
    out.append(("gen_wide.py", "def wide(x):\n    " + " = ".join(names) + " = x\n" +
                "    return (" + " + ".join(names) + ",\n        x)\n" +
                "def indented():\n    if 1:\n" + " " * 300 + "return 1\n"))
    out.append(("gen_module.py", "a = 1\n" + blank(66000) + "b = a\n" + blank(300) +
                "def late():\n    return b\n"))
    return out


def positionless_asts():
    """ASTs whose nodes carry line 0 or -1 and no columns: code with missing location info."""
    import ast
    result = []
    for lineno, col in ((0, -1), (-1, -1), (0, 0), (3, -1)):
        tree = ast.parse("x = 1\ndef f(a):\n    return a + 1\n")
        call = ast.Expr(value=ast.Call(func=ast.Name(id="f", ctx=ast.Load()),
                                       args=[ast.Name(id="x", ctx=ast.Load())], keywords=[]))
        for node in ast.walk(call):
            node.lineno = lineno
            node.col_offset = col
            if "end_lineno" in getattr(node, "_attributes", ()):
                node.end_lineno = None
                node.end_col_offset = None
        tree.body.append(call)
        try:
            result.append(("ast_line%d_col%d" % (lineno, col), compile(tree, "<ast>", "exec")))
        except (TypeError, ValueError, SystemError):
            pass  # this version refuses such positions; the others are still covered
    return result


def corpus(dump, corpus_dir):
    n = 0
    for fn in sorted(os.listdir(corpus_dir)):
        if not fn.endswith(".py"):
            continue
        with open(os.path.join(corpus_dir, fn), "rb") as f:
            src = f.read()
        if V < min_version(src):
            continue
        dump.tree(compile(src, fn, "exec", 0, True), "corpus/" + fn)
        n += 1
    for fn, src in generated_sources():
        dump.tree(compile(src, fn, "exec", 0, True), "corpus/" + fn)
        n += 1
    for name, code in positionless_asts():
        dump.tree(code, "corpus/" + name)
        n += 1
    return n


def stdlib(dump):
    root = os.path.dirname(os.path.abspath(os.__file__))
    ok = skipped = 0
    for d, dirs, files in os.walk(root):
        dirs[:] = sorted(x for x in dirs if x not in ("site-packages", "dist-packages"))
        for fn in sorted(files):
            if not fn.endswith(".py"):
                continue
            path = os.path.join(d, fn)
            try:
                with open(path, "rb") as f:
                    src = f.read()
                code = compile(src, path, "exec", 0, True)
            except Exception:  # SyntaxError, ValueError (NUL bytes), RecursionError, ...
                skipped += 1
                continue
            dump.tree(code, os.path.relpath(path, root))
            ok += 1
    return ok, skipped


def main():
    warnings.simplefilter("ignore")
    out_path, corpus_dir = sys.argv[1], sys.argv[2]
    if len(sys.argv) > 3 and sys.argv[3] == "--corpus-only":  # child: raw records, no header
        with open(out_path, "wb") as f:
            corpus(Dump(f), corpus_dir)
        return
    with gzip.open(out_path, "wb", 1) as f:
        ver = sys.version.split()[0].encode("ascii")
        f.write(b"PYULT1\n" + struct.pack("<H", len(ver)) + ver)
        dump = Dump(f)
        n = corpus(dump, corpus_dir)
        if V >= (3, 11):
            part = out_path + ".nodebug"
            subprocess.check_call([sys.executable, "-X", "no_debug_ranges", __file__,
                                   part, corpus_dir, "--corpus-only"])
            with open(part, "rb") as p:
                f.write(p.read())
            os.unlink(part)
            n *= 2
        ok, skipped = stdlib(dump)
        f.write(struct.pack("<BIII", 2, ok, skipped, n))
        f.write(struct.pack("<B", 0))
    sys.stderr.write("gen_truth %s: %d code objects, %d stdlib files, %d skipped\n"
                     % (sys.version.split()[0], dump.codes, ok, skipped))


if __name__ == "__main__":
    main()
