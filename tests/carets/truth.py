# truth.py - runs inside each interpreter of the matrix: for every position the compiler gives
# the instructions of the corpus files (co_positions(), 3.11+), or for every line (older
# versions), what the interpreter's own traceback module prints for a frame there. Prints one
# JSON object per line: {"file", "line", "end_line", "column", "end_column", "text"} where text
# is what follows the '  File ...' line, each line's 4-space traceback indent removed.
# With --positions, renders the positions given on stdin instead (see positions()).
# Python 2.7 and 3.x.
import json
import linecache
import sys
import traceback


def codes(code):
    yield code
    for c in code.co_consts:
        if hasattr(c, "co_code"):
            for sub in codes(c):
                yield sub


def render(path, line, end_line, col, end_col):
    if sys.version_info < (3, 5):
        text = linecache.getline(path, line).strip()
        out = traceback.format_list([(path, line, "f", text or None)])
    else:
        kw = {}
        if sys.version_info >= (3, 11):
            kw = dict(end_lineno=end_line, colno=col, end_colno=end_col)
        fs = traceback.FrameSummary(path, line, "f", **kw)
        out = traceback.StackSummary.from_list([fs]).format()
    text = "".join(out).split("\n", 1)[1]
    return "".join(l[4:] if l.startswith("    ") else l for l in text.splitlines(True))


def main(paths):
    for path in paths:
        with open(path, "rb") as f:
            source = f.read()
        seen = set()
        if sys.version_info >= (3, 11):
            try:
                top = compile(source, path, "exec")
            except SyntaxError:
                continue  # newer syntax than this interpreter reads
            for code in codes(top):
                for pos in code.co_positions():
                    if pos[0] is not None:
                        seen.add(pos)
        else:
            for n in range(1, source.count(b"\n") + 2):
                seen.add((n, n, None, None))
        for pos in sorted(seen, key=lambda p: tuple(-1 if v is None else v for v in p)):
            line, end_line, col, end_col = pos
            sys.stdout.write(json.dumps({"file": path, "line": line, "end_line": end_line,
                                         "column": col, "end_column": end_col,
                                         "text": render(path, line, end_line, col, end_col)}))
            sys.stdout.write("\n")


def positions():
    # --positions: reads [[file, line, end_line, column, end_column], ...] on stdin, prints
    # the list of texts as JSON (the frames of a target, rendered by its own interpreter)
    out = [render(*p) if p[1] is not None else "" for p in json.load(sys.stdin)]
    sys.stdout.write(json.dumps(out))


if __name__ == "__main__":
    if sys.argv[1:] == ["--positions"]:
        positions()
    else:
        main(sys.argv[1:])
