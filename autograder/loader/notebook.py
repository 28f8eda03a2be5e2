"""Definitions from a notebook's code cells, without its experiments.

Kept, in notebook order: imports, function and class definitions (decorators included, so
``@dataclass`` classes work), and assignments of constants (no calls). Skipped, and
reported: ``%%`` cell magics (the whole cell), ``%`` magics and ``!`` shell lines, every other
top-level statement (training runs, plots, prints, sleeps), imports of the notebook's own
``attention``/``gpt`` modules, plotting imports (matplotlib...), and definitions that need a name only skipped code defines
(they would fail on import). Nothing is executed here: the result is Python source that the
sandbox imports. A notebook that cannot be read becomes source that raises a clear
ImportError, so every test says why.
"""
import ast
import builtins
import os
import re

import nbformat

# %magic, !shell, `x = !cmd`, `x = %magic`, `obj?` (IPython help)
MAGIC_LINE = re.compile(r"^\s*([%!]|[\w.]+\s*=\s*[%!]|\?*[\w.]+\?{1,2}\s*$)")
OWN_MODULES = {"attention", "gpt", "submission_code"}
DISPLAY_ONLY = {"matplotlib", "seaborn", "plotly", "IPython", "ipywidgets"}  # slow to import, never graded
_SIMPLE = (ast.Constant, ast.Name, ast.Attribute, ast.Tuple, ast.List, ast.Dict, ast.Set, ast.Starred,
           ast.BinOp, ast.UnaryOp, ast.BoolOp, ast.Compare, ast.IfExp, ast.Subscript, ast.Slice,
           ast.JoinedStr, ast.FormattedValue, ast.Lambda, ast.arguments, ast.arg,
           ast.expr_context, ast.operator, ast.unaryop, ast.boolop, ast.cmpop)
MAX_LISTED = 25


def _short(text):
    line = text.strip().splitlines()[0].strip() if text.strip() else ""
    return line if len(line) <= 60 else line[:57] + "..."


def _is_definition(node):
    if isinstance(node, (ast.Import, ast.ImportFrom, ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
        return True
    if isinstance(node, (ast.Assign, ast.AnnAssign)):
        return node.value is None or all(isinstance(n, _SIMPLE) for n in ast.walk(node.value))
    if isinstance(node, ast.Try):  # try: import x / except ImportError: x = None
        return all(_is_definition(n) or isinstance(n, (ast.Pass, ast.Raise))
                   for n in node.body + node.orelse + node.finalbody + [s for h in node.handlers for s in h.body])
    return False


def _loads(node):
    """Names read when ``node`` is evaluated (not those read later by a lambda's body)."""
    found, stack = set(), [node]
    while stack:
        n = stack.pop()
        if isinstance(n, ast.Lambda):
            stack += n.args.defaults + [d for d in n.args.kw_defaults if d is not None]
            continue
        if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load):
            found.add(n.id)
        stack.extend(ast.iter_child_nodes(n))
    return found


def _bound(node):
    """Names a kept statement defines."""
    if isinstance(node, (ast.Import, ast.ImportFrom)):
        return {a.asname or a.name.split(".")[0] for a in node.names}
    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
        return {node.name}
    if isinstance(node, ast.Try):
        return set().union(*(_bound(n) for n in node.body + node.orelse + node.finalbody
                             + [s for h in node.handlers for s in h.body]))
    targets = node.targets if isinstance(node, ast.Assign) else [getattr(node, "target", None)]
    return {n.id for t in targets if t is not None for n in ast.walk(t)
            if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)}


def _eager(node, lazy_annotations):
    """Names that must exist when the statement runs (defaults, decorators, bases, values...)."""
    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
        a = node.args
        parts = node.decorator_list + a.defaults + [d for d in a.kw_defaults if d is not None]
        if not lazy_annotations:
            args = a.posonlyargs + a.args + a.kwonlyargs + [x for x in (a.vararg, a.kwarg) if x]
            parts += [x.annotation for x in args if x.annotation] + ([node.returns] if node.returns else [])
        return set().union(*(_loads(p) for p in parts))
    if isinstance(node, ast.ClassDef):
        needed = set().union(*(_loads(p) for p in node.decorator_list + node.bases + node.keywords))
        local = set()
        for stmt in node.body:
            if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                needed |= _eager(stmt, lazy_annotations) - local
            elif isinstance(stmt, ast.AnnAssign) and lazy_annotations:
                needed |= (_loads(stmt.value) if stmt.value else set()) - local
            else:
                needed |= _loads(stmt) - local
            local |= _bound(stmt) if isinstance(stmt, (ast.Assign, ast.AnnAssign, ast.FunctionDef,
                                                       ast.AsyncFunctionDef, ast.ClassDef)) else set()
        return needed
    if isinstance(node, ast.AnnAssign):
        return (_loads(node.value) if node.value else set()) | (set() if lazy_annotations else _loads(node.annotation))
    if isinstance(node, ast.Assign):
        return _loads(node)
    return set()  # imports, try-imports


def _cell_code(index, text, skipped):
    """The cell's source with magic and shell lines blanked (only when it does not parse as is)."""
    try:
        return ast.parse(text), text
    except SyntaxError:
        pass
    lines = text.splitlines()
    for i, line in enumerate(lines):
        if MAGIC_LINE.match(line):
            shell = re.match(r"\s*([\w.]+\s*=\s*)?!", line)
            skipped.append((index, line, "shell command" if shell else "IPython magic"))
            indent = line[:len(line) - len(line.lstrip())]
            lines[i] = indent + "pass" if indent else ""
    text = "\n".join(lines)
    return ast.parse(text), text


def _text_of(node, body, lines):
    """The statement's own lines (comments kept) unless it shares a line with another one."""
    first = min([node.lineno] + [d.lineno for d in getattr(node, "decorator_list", [])])
    k = body.index(node)
    alone = (k == 0 or body[k - 1].end_lineno < first) and (k == len(body) - 1 or body[k + 1].lineno > node.end_lineno)
    return "\n".join(lines[first - 1:node.end_lineno]) if alone else ast.unparse(node)


def unreadable(path, error):
    """Source that raises a clear ImportError, and the note saying why."""
    name = os.path.basename(path)
    if isinstance(error, nbformat.reader.NotJSONError) or isinstance(error, UnicodeDecodeError):
        why = "it is not valid JSON (was the file cut off, or renamed from another format?)"
    else:
        why = f"it is not a valid Jupyter notebook ({type(error).__name__}: {str(error).strip()[:200]})"
    message = (f"the notebook {name} could not be read: {why}. In Jupyter, use File > Download (.ipynb) "
               "and submit that file, or submit attention.py and gpt.py instead.")
    return f"raise ImportError({message!r})\n", [message]


def extract(path):
    """(python source of the notebook's definitions, notes on what was skipped)."""
    try:
        nb = nbformat.read(path, as_version=4)
        cells = [(i, c.get("cell_type"), c.get("source", "")) for i, c in enumerate(nb["cells"], start=1)]
    except Exception as e:  # noqa: BLE001 - any corrupt file is the student's, and gets a message
        return unreadable(path, e)
    defined = set(dir(builtins)) | {"__name__", "__file__", "__doc__"}
    futures, kept, skipped, notes = [], [], [], []
    star = False  # after `from x import *` any name may exist: stop checking
    sources = [src if isinstance(src, str) else "".join(src) for _, kind, src in cells if kind == "code"]
    lazy = any(re.search(r"^from __future__ import .*annotations", s, re.M) for s in sources)
    for index, kind, source in cells:
        source = source if isinstance(source, str) else "".join(source)
        if kind != "code" or not source.strip():
            continue
        if source.lstrip().startswith("%%"):
            skipped.append((index, source, "cell magic, whole cell"))
            continue
        try:
            tree, source = _cell_code(index, source, skipped)
        except SyntaxError as e:
            notes.append(f"cell {index} has a syntax error (line {e.lineno}: {e.msg}); the whole cell was skipped")
            continue
        lines = source.splitlines()
        for node in tree.body:
            text = _text_of(node, tree.body, lines)
            if isinstance(node, ast.Pass) or (isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant)):
                continue  # docstrings and bare strings do nothing
            if isinstance(node, ast.ImportFrom) and node.module == "__future__":
                futures += [text] if text not in futures else []
                continue
            own = {a.name.split(".")[0] for a in node.names} if isinstance(node, ast.Import) else \
                {(node.module or "").split(".")[0]} if isinstance(node, ast.ImportFrom) else set()
            if own & OWN_MODULES:
                skipped.append((index, text, "import of the notebook's own module; its definitions are used"))
            elif own & DISPLAY_ONLY:
                skipped.append((index, text, "plotting/display import, not needed for grading"))
            elif "__all__" in (_bound(node) if isinstance(node, (ast.Assign, ast.AnnAssign)) else ()):
                skipped.append((index, text, "__all__ would hide names: both parts come from this one notebook"))
            elif not _is_definition(node):
                skipped.append((index, text, "top-level code"))
            elif not star and _eager(node, lazy) - defined:
                names = ", ".join(sorted(_eager(node, lazy) - defined))
                skipped.append((index, text, f"needs {names}, which no kept definition above it defines"))
            else:
                kept.append((index, text))
                defined |= _bound(node)
                star = star or "*" in _bound(node)
    if skipped:
        groups = []  # consecutive statements of one cell skipped for one reason: one line
        for i, text, why in skipped:
            if groups and groups[-1][0] == i and groups[-1][2] == why:
                groups[-1][3] += 1
            else:
                groups.append([i, text, why, 0])
        listed = [f"  cell {i}: `{_short(text)}`{f' and {n} more statement' + 's' * (n > 1) if n else ''} ({why})"
                  for i, text, why, n in groups[:MAX_LISTED]]
        more = [f"  ... and {len(groups) - MAX_LISTED} more"] if len(groups) > MAX_LISTED else []
        notes.append("from the notebook only definitions are graded; not executed:\n" + "\n".join(listed + more))
    body, last = [], None
    for index, text in kept:
        body += [f"\n# ---- notebook cell {index} ----"] if index != last else []
        body.append(text)
        last = index
    return "".join(f + "\n" for f in futures) + "\n".join(body) + "\n", notes
