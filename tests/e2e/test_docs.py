#!/usr/bin/env python3
# test_docs - every command and option the program accepts is documented everywhere a user
# looks: the CLI's --help, the man page (doc/pyunwind.1), the reference (doc/commands.md),
# `help CMD` in real gdb and lldb with the plugin loaded, the Debian package description and
# its gdbinit.d file.
#
# What the program accepts is read from its parsers, not from a list kept here: the CLI's
# commands and options are the option-shaped string literals of core/cli/*.c ("--limit",
# "-j", the --max-* table ...) and the commands compared with its first argument; the debugger
# commands are the keys of HELP in python/pyunwind/pyunwind_core.py (both adapters register
# exactly those), and each one's options the option-shaped literals of its py_* method and of
# the helpers and tables it uses. A new option is therefore checked as soon as the parser
# knows it; each failure line names the option or command and every place it is missing from.
# A single-dash alias compared together with a long option ("-a" with "--all") is covered by
# the long one in the debugger commands' help.
#
#   tests/e2e/test_docs.py        (make test-docs; a few seconds)
import ast
import os
import re
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from harness import REPO, gdb_batch, lldb_batch, run_cases  # noqa: E402

CLI = os.path.join(REPO, "build", "pyunwind")
CORE_PY = os.path.join(REPO, "python", "pyunwind", "pyunwind_core.py")
OPTION = re.compile(r"^--?[a-z](?:[a-z0-9-]*[a-z0-9])?$")  # not a prefix ("--max-")
C_STRING = re.compile(r'"((?:[^"\\\n]|\\.)*)"')
C_COMMAND = re.compile(r'strcmp\(\s*(?:o->command|argv\[1\])\s*,\s*"([a-z][a-z-]*)"\s*\)')
# Seen through the parsers' eyes: these are how help is asked for, not options to document.
HELP_WORDS = {"-h", "--help"}


def read(path):
    with open(os.path.join(REPO, path), encoding="utf-8") as f:
        return f.read()


def strip_c_comments(text):
    return re.sub(r"//[^\n]*|/\*.*?\*/", "", text, flags=re.S)


# ---- what the program accepts ------------------------------------------------------------

def cli_accepts():
    """({command: source file}, {option: source file}) from core/cli/*.c."""
    commands, options = {}, {}
    d = os.path.join(REPO, "core", "cli")
    for name in sorted(os.listdir(d)):
        if not name.endswith(".c"):
            continue
        path = "core/cli/" + name
        text = strip_c_comments(read(path))
        for m in C_COMMAND.finditer(text):
            commands.setdefault(m.group(1), path)
        for m in C_STRING.finditer(text):
            s = m.group(1)
            if OPTION.match(s) and s not in HELP_WORDS:
                options.setdefault(s, path)
    return commands, options


def debugger_accepts():
    """({command: [options]}) from pyunwind_core.py: HELP's keys, each one's py_* method."""
    tree = ast.parse(read("python/pyunwind/pyunwind_core.py"))
    help_keys, dispatch = [], set()
    functions, tables = {}, {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and \
                isinstance(node.targets[0], ast.Name):
            name = node.targets[0].id
            if name == "HELP" and isinstance(node.value, ast.Dict):
                help_keys = [k.value for k in node.value.keys if isinstance(k, ast.Constant)]
            elif isinstance(node.value, (ast.Dict, ast.Tuple, ast.List, ast.Set)):
                tables[name] = node.value
        elif isinstance(node, (ast.FunctionDef,)):
            functions.setdefault(node.name, node)
            if node.name == "run":
                for c in ast.walk(node):
                    if isinstance(c, ast.Compare) and isinstance(c.left, ast.Name) and \
                            c.left.id == "name":
                        dispatch.update(x.value for x in c.comparators
                                        if isinstance(x, ast.Constant))

    def options_of(fn, seen):
        """Option literals of @fn and of the module's functions and tables it names; aliases
        (a single-dash literal compared in one tuple with a long one) left out."""
        found, aliases = [], set()
        for node in ast.walk(fn):
            if isinstance(node, ast.Tuple):
                words = [e.value for e in node.elts if isinstance(e, ast.Constant) and
                         isinstance(e.value, str)]
                if any(w.startswith("--") for w in words):
                    aliases.update(w for w in words if OPTION.match(w) and
                                   not w.startswith("--"))
            if isinstance(node, ast.Constant) and isinstance(node.value, str) and \
                    OPTION.match(node.value):
                found.append(node.value)
            name = node.id if isinstance(node, ast.Name) else \
                node.attr if isinstance(node, ast.Attribute) else None
            if name and name not in seen:
                seen.add(name)
                if name in functions:
                    found += options_of(functions[name], seen)
                elif name in tables:
                    found += options_of(tables[name], seen)
        return [o for o in found if o not in aliases and o not in HELP_WORDS]

    commands = {}
    for key in help_keys:
        method = "py_" + key[3:] if key.startswith("py-") else None
        fn = functions.get(method)
        if fn is None and key in ("py-up", "py-down"):
            fn = functions.get("py_move")
        commands[key] = sorted(set(options_of(fn, set()))) if fn is not None else None
    return commands, dispatch


CLI_COMMANDS, CLI_OPTIONS = cli_accepts()
DBG_COMMANDS, DBG_DISPATCH = debugger_accepts()


# ---- where they must be documented -------------------------------------------------------

def mentions(text, word):
    return re.search(r"(?<![\w-])" + re.escape(word) + r"(?![\w-])", text) is not None


def man_text():
    """doc/pyunwind.1 as words: escaped hyphens and font changes undone."""
    t = read("doc/pyunwind.1")
    t = re.sub(r"\\f[BIRP]", "", t)
    return t.replace("\\-", "-").replace("\\&", "")


def cli_help_text():
    texts = []
    for args in (["--help"],) + tuple([c, "--help"] for c in sorted(CLI_COMMANDS)):
        p = subprocess.run([CLI] + args, capture_output=True, timeout=30,
                           stdin=subprocess.DEVNULL)
        texts.append(p.stdout.decode("utf-8", "replace"))
    return "\n".join(texts)


def missing_report(places, items, what):
    """@places: [(name, text)]; @items: {word: origin}. One line per word missing anywhere."""
    lines = []
    for word, origin in sorted(items.items()):
        gone = [name for name, text in places if not mentions(text, word)]
        if gone:
            lines.append("%s %s (%s) is missing from: %s" % (what, word, origin,
                                                            ", ".join(gone)))
    return lines


def case_parsers_found():
    """The extraction must see the commands every version has, else it checks nothing."""
    problems = []
    for c in ("bt", "line", "list", "locals", "print", "tasks", "triage"):
        if c not in CLI_COMMANDS:
            problems.append("CLI command %s not found in core/cli/*.c (strcmp(o->command, ...)"
                            " or strcmp(argv[1], ...)): teach tests/e2e/test_docs.py the "
                            "parser's new shape" % c)
    for o in ("--json", "--limit", "--max-depth", "--path-map", "-j"):
        if o not in CLI_OPTIONS:
            problems.append("CLI option %s not found in core/cli/*.c" % o)
    if not DBG_COMMANDS:
        problems.append("no HELP table in python/pyunwind/pyunwind_core.py")
    for c, opts in sorted(DBG_COMMANDS.items()):
        if opts is None:
            problems.append("debugger command %s has no py_* method in pyunwind_core.py" % c)
    if "--all" not in (DBG_COMMANDS.get("py-bt") or []) or \
            "--max-depth" not in (DBG_COMMANDS.get("py-locals") or []):
        problems.append("py-bt's --all or py-locals' --max-depth not found: the debugger "
                        "options extraction is broken")
    if DBG_DISPATCH != set(DBG_COMMANDS):
        problems.append("run() in pyunwind_core.py dispatches %s, HELP documents %s" % (
            sorted(DBG_DISPATCH), sorted(DBG_COMMANDS)))
    assert not problems, "\n".join(problems)


def cli_items():
    items = dict(("pyunwind " + c, "a command of the CLI, " + src)
                 for c, src in CLI_COMMANDS.items())
    return items


def words(items):
    """{"pyunwind bt": ...} checked as "bt" too: the man page says `.B bt` in a section."""
    return items


def case_cli_help():
    text = cli_help_text()
    problems = missing_report([("pyunwind --help", text)],
                              dict((o, "an option of the CLI, " + src)
                                   for o, src in CLI_OPTIONS.items()), "option")
    for c, src in sorted(CLI_COMMANDS.items()):
        if not re.search(r"pyunwind\s+" + re.escape(c) + r"(?![\w-])", text):
            problems.append("command %s (a command of the CLI, %s) is missing from: "
                            "pyunwind --help" % (c, src))
    assert not problems, "\n".join(problems)


def reference_places():
    return [("doc/pyunwind.1", man_text()), ("doc/commands.md", read("doc/commands.md"))]


def case_reference_cli():
    places = reference_places()
    problems = missing_report(places, dict((o, "an option of the CLI, " + src)
                                           for o, src in CLI_OPTIONS.items()), "option")
    problems += missing_report(places, dict((c, "a command of the CLI, " + src)
                                            for c, src in CLI_COMMANDS.items()), "command")
    assert not problems, "\n".join(problems)


def case_reference_debuggers():
    places = reference_places()
    problems = missing_report(places, dict((c, "a gdb and lldb command, HELP in "
                                            "pyunwind_core.py") for c in DBG_COMMANDS),
                              "command")
    for c, opts in sorted(DBG_COMMANDS.items()):
        problems += missing_report(places, dict((o, "an option of %s, pyunwind_core.py" % c)
                                               for o in opts or []), "option")
    assert not problems, "\n".join(problems)


def debugger_help_sections(run, echo):
    """{command: the text `help command` printed} from one debugger session."""
    cmds = []
    for c in sorted(DBG_COMMANDS):
        cmds += [echo % ("@@" + c + "@@"), "help " + c]
    rc, out, err = run(cmds)
    sections, cur = {}, None
    for line in (out + "\n" + err).splitlines():
        m = re.match(r"^.*@@(py-[a-z-]+)@@\s*$", line)
        if m:
            cur = m.group(1)
            sections[cur] = ""
        elif cur:
            sections[cur] += line + "\n"
    return sections, out + err


def check_debugger_help(name, sections, raw):
    problems = []
    for c, opts in sorted(DBG_COMMANDS.items()):
        text = sections.get(c)
        if text is None:
            problems.append("%s: no output for `help %s`:\n%s" % (name, c, raw[-1500:]))
            continue
        if not re.search(r"Usage:\s+" + re.escape(c) + r"(?![\w-])", text):
            problems.append("%s: `help %s` shows no 'Usage: %s' line:\n%s" % (name, c, c, text))
        for o in opts or []:
            if not mentions(text, o):
                problems.append("option %s (an option of %s, pyunwind_core.py) is missing "
                                "from: %s `help %s`" % (o, c, name, c))
    assert not problems, "\n".join(problems)


def case_gdb_help():
    sections, raw = debugger_help_sections(lambda cmds: gdb_batch([], cmds, timeout=120),
                                           'echo %s\\n')
    check_debugger_help("gdb", sections, raw)


def case_lldb_help():
    sections, raw = debugger_help_sections(lambda cmds: lldb_batch([], cmds, timeout=120),
                                           'script print("%s")')
    check_debugger_help("lldb", sections, raw)


def case_package_texts():
    control = read("debian/control")
    description = control[control.index("Description:"):]
    places_dbg = [("debian/control's Description", description),
                  ("debian/gdbinit.gdb's comment", "\n".join(
                      l for l in read("debian/gdbinit.gdb").splitlines()
                      if l.startswith("#")))]
    problems = missing_report(places_dbg, dict((c, "a gdb and lldb command, HELP in "
                                                "pyunwind_core.py") for c in DBG_COMMANDS),
                              "command")
    problems += missing_report([places_dbg[0]], dict((c, "a command of the CLI, " + src)
                                                     for c, src in CLI_COMMANDS.items()),
                               "command")
    assert not problems, "\n".join(problems)


def case_versions_table():
    """doc/versions.md's table is what tools/versions-table makes of the matrix make test runs."""
    out = subprocess.run([os.path.join(REPO, "tools", "versions-table")], capture_output=True,
                         text=True, timeout=300)
    assert out.returncode == 0, "tools/versions-table failed: " + out.stderr.strip()
    doc = read("doc/versions.md")
    assert out.stdout in doc, ("doc/versions.md's table is not the matrix's; run tools/versions-"
                               "table and put its output in place of the table:\n" + out.stdout)


def api_table():
    """doc/python-api.md's table "The CLI in the API": [(CLI words, API code spans)]."""
    text = read("doc/python-api.md")
    at = text.find("## The CLI in the API")
    rows = []
    for line in text[at:].splitlines()[1:] if at >= 0 else ():
        if line.startswith("## "):
            break
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if not line.startswith("|") or len(cells) < 2 or set(cells[0]) <= set("-"):
            continue
        cli = re.findall(r"`([^`]+)`", cells[0])
        if cli:  # not the header
            rows.append((cli, re.findall(r"`([^`]+)`", cells[1])))
    return rows


def case_python_api():
    """Every CLI command and option has its row in doc/python-api.md's table, and every API
    name the table gives exists in the package, with the keywords it shows."""
    import inspect
    sys.path.insert(0, os.path.join(REPO, "python"))
    import pyunwind
    rows = api_table()
    problems = [] if rows else ["doc/python-api.md has no table under '## The CLI in the API'"]
    documented = set(w for cli, _ in rows for w in cli)
    for word, origin in sorted(list(CLI_OPTIONS.items()) + list(CLI_COMMANDS.items())):
        if word not in documented:
            problems.append("%s (%s) has no row in doc/python-api.md's table 'The CLI in the "
                            "API'" % (word, origin))
    checked = 0
    for cli, spans in rows:
        if not spans:
            problems.append("row %s gives no API name" % cli)
        for span in spans:
            m = re.match(r"^(\w+)\.(\w+)(?:\((.*)\))?$", span)
            if not m:
                continue  # prose ("the typed objects")
            owner = pyunwind if m.group(1) == "pyunwind" else getattr(pyunwind, m.group(1), None)
            fn = getattr(owner, m.group(2), None) if owner is not None else None
            if fn is None:
                problems.append("row %s: %s does not exist in the package" % (cli, span))
                continue
            checked += 1
            if m.group(3) is None or isinstance(fn, property):
                continue
            params = inspect.signature(fn).parameters
            for kw in re.findall(r"(\w+)=", m.group(3)):
                if kw not in params:
                    problems.append("row %s: %s has no keyword %s (it takes %s)"
                                    % (cli, span, kw, ", ".join(params)))
    if checked < 30:
        problems.append("only %d API names found in the table: its shape changed?" % checked)
    assert not problems, "\n".join(problems)


def main():
    cases = [("docs: the versions table is the matrix's", case_versions_table),
             ("docs: the parsers' commands and options are found", case_parsers_found),
             ("docs: pyunwind --help", case_cli_help),
             ("docs: man page and doc/commands.md, the CLI", case_reference_cli),
             ("docs: man page and doc/commands.md, gdb and lldb", case_reference_debuggers),
             ("docs: gdb help", case_gdb_help),
             ("docs: lldb help", case_lldb_help),
             ("docs: debian/control and the gdbinit.d file", case_package_texts),
             ("docs: doc/python-api.md, the CLI in the API", case_python_api)]
    return run_cases(cases, prefix="test-docs")


if __name__ == "__main__":
    sys.exit(main())
