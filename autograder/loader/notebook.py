"""Definitions from a notebook's code cells, without its experiments.

Kept, in notebook order: imports, function and class definitions (decorators included, so
``@dataclass`` classes work), and assignments of constants (no calls). Skipped, and
reported: ``%%`` cell magics (the whole cell), ``%`` magics and ``!`` shell lines, every other
top-level statement (training runs, plots, prints, sleeps), imports of the notebook's own
``attention``/``gpt`` modules, plotting imports (matplotlib...), and definitions that need a
name only skipped code defines (they would fail on import). Nothing is executed here: the
result is Python source that the sandbox imports.

This module runs in the loader's limited child (``child.py``; standard library only, no
package imports), never in the grader: parsing a student's code can exhaust memory or
recurse. Work is linear in the cell's size: a kept statement's text is its source segment
(line and column offsets, so ``x = 1; time.sleep(600)`` keeps only ``x = 1``), never
``ast.unparse``. A cell that is too big, nests too deeply or does not compile is skipped with
a note; the other cells are still used.
"""
import __future__

import ast
import builtins
import re

# %magic, !shell, `x = !cmd`, `x = %magic`, `obj?` (IPython help)
MAGIC_LINE = re.compile(r"^\s*([%!]|[\w.]+\s*=\s*[%!]|\?*[\w.]+\?{1,2}\s*$)")
LAZY = re.compile(r"^from __future__ import [^\n]*annotations", re.M)
OWN_MODULES = {"attention", "gpt", "submission_code"}
DISPLAY_ONLY = {"matplotlib", "seaborn", "plotly", "IPython", "ipywidgets"}  # slow to import, never graded
_SIMPLE = (ast.Constant, ast.Name, ast.Attribute, ast.Tuple, ast.List, ast.Dict, ast.Set, ast.Starred,
           ast.BinOp, ast.UnaryOp, ast.BoolOp, ast.Compare, ast.IfExp, ast.Subscript, ast.Slice,
           ast.JoinedStr, ast.FormattedValue, ast.Lambda, ast.arguments, ast.arg,
           ast.expr_context, ast.operator, ast.unaryop, ast.boolop, ast.cmpop)
_COMPOUND = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.If, ast.For, ast.AsyncFor, ast.While,
             ast.With, ast.AsyncWith, ast.Try) + ((ast.Match, ast.TryStar) if hasattr(ast, "TryStar") else
                                                  (ast.Match,) if hasattr(ast, "Match") else ())
MAX_LISTED = 25
MAX_CELL_CHARS = 2 * 2**20        # a cell's code, as for a .py file; bigger cells are not parsed
MAX_STATEMENT_CHARS = 256 * 2**10  # one kept definition
MAX_SOURCE_CHARS = 2 * 2**20      # all kept definitions (the staged file), as for a .py file
_UNSAFE = re.compile("[\x00-\x1f\x7f-\x9f\u2028\u2029\u200e\u200f\u202a-\u202e\u2066-\u2069\ud800-\udfff`]")


def _visible(ch):
    code = ord(ch.group())
    return "'" if ch.group() == "`" else f"\\x{code:02x}" if code <= 0xFF else f"\\u{code:04x}"


def _short(text):
    """The statement's first line, at most 60 characters, with control characters escaped (it is
    shown between backticks on one line of the results)."""
    line = text.lstrip()[:200].split("\n", 1)[0].strip()
    line = _UNSAFE.sub(_visible, line)
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
    """(tree, text): the cell parsed, with magic and shell lines blanked when it does not parse
    as is. Raises SyntaxError, ValueError (NUL), MemoryError or RecursionError."""
    try:
        return ast.parse(text), text
    except SyntaxError:
        pass
    lines = text.split("\n")
    for i, line in enumerate(lines):
        if MAGIC_LINE.match(line):
            shell = re.match(r"\s*([\w.]+\s*=\s*)?!", line)
            skipped.append((index, line, "shell command" if shell else "IPython magic"))
            indent = line[:len(line) - len(line.lstrip())]
            lines[i] = indent + "pass" if indent else ""
    text = "\n".join(lines)
    return ast.parse(text), text


class _Segments:
    """Statement texts by line and column offsets (columns are UTF-8 byte offsets)."""

    def __init__(self, text):
        self.data = text.encode("utf-8")
        self.starts = [0] + [m.end() for m in re.finditer(b"\n", self.data)]

    def lines(self, first, last):
        end = self.starts[last] - 1 if last < len(self.starts) else len(self.data)
        return self.data[self.starts[first - 1]:end].decode("utf-8")

    def span(self, node):
        return self.data[self.starts[node.lineno - 1] + node.col_offset:
                         self.starts[node.end_lineno - 1] + node.end_col_offset].decode("utf-8")


def _statements(tree, text):
    """(node, text) of each top-level statement. A statement alone on its lines keeps its whole
    lines (comments too); one sharing a line with another is cut out by its columns."""
    segments, body = _Segments(text), tree.body
    for k, node in enumerate(body):
        if isinstance(node, ast.Pass) or (isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant)):
            yield node, None  # docstrings and bare strings do nothing
            continue
        first = min([node.lineno] + [d.lineno for d in getattr(node, "decorator_list", [])])
        alone = isinstance(node, _COMPOUND) or (
            (k == 0 or body[k - 1].end_lineno < first) and (k == len(body) - 1 or body[k + 1].lineno > node.end_lineno))
        yield node, segments.lines(first, node.end_lineno) if alone else segments.span(node)


class _Extraction:
    def __init__(self, lazy):
        self.lazy = lazy
        self.defined = set(dir(builtins)) | {"__name__", "__file__", "__doc__"}
        self.futures, self.kept, self.skipped, self.notes = {}, [], [], []
        self.star = False  # after `from x import *` any name may exist: stop checking
        self.size = 0

    def cell(self, index, source):
        """Add the definitions of code cell ``index`` (its source text)."""
        if not source.strip():
            return
        if source.lstrip().startswith("%%"):
            self.skipped.append((index, source, "cell magic, whole cell"))
            return
        if len(source) > MAX_CELL_CHARS:
            self.notes.append(f"cell {index} holds {len(source) / 2**20:.1f} MB of code, over the "
                              f"{MAX_CELL_CHARS // 2**20} MB limit for one cell; the whole cell was skipped. Keep data "
                              "and generated code out of the notebook")
            return
        source = source.replace("\r\n", "\n").replace("\r", "\n")
        if not source.isascii():
            fixed = source.encode("utf-8", "replace").decode("utf-8")  # lone surrogates (JSON "\ud800")
            if fixed != source:
                self.notes.append(f"cell {index} holds characters that are not valid text (lone surrogates); "
                                  "they were replaced by '?'")
                source = fixed
        skipped = []
        try:
            tree, source = _cell_code(index, source, skipped)
        except SyntaxError as e:
            self.skipped += skipped
            msg = _UNSAFE.sub(_visible, str(e.msg))[:200]
            self.notes.append(f"cell {index} has a syntax error (line {e.lineno}: {msg}); the whole cell was skipped")
            return
        except ValueError as e:  # NUL characters
            self.notes.append(f"cell {index} cannot be parsed ({_UNSAFE.sub(_visible, str(e))[:200]}); "
                              "the whole cell was skipped")
            return
        for node, text in _statements(tree, source):
            if text is not None:
                self._statement(index, node, text, skipped)
        self.skipped += skipped

    def _statement(self, index, node, text, skipped):
        if isinstance(node, ast.ImportFrom) and node.module == "__future__":
            names = [a.name for a in node.names]  # moved to the top; one unknown would fail the whole file
            unknown = [n for n in names if n not in __future__.all_feature_names]
            if unknown:
                skipped.append((index, text, f"no such __future__ feature: {', '.join(unknown)}"))
            else:
                self.futures.update(dict.fromkeys(names))
            return
        own = {a.name.split(".")[0] for a in node.names} if isinstance(node, ast.Import) else \
            {(node.module or "").split(".")[0]} if isinstance(node, ast.ImportFrom) else set()
        try:
            why = self._why_skipped(node, own, text)
        except RecursionError:  # compile() of a deeply nested expression
            why = "nested too deeply to compile"
        except MemoryError:
            why = "needs more memory to compile than the grader allows"
        if why:
            skipped.append((index, text, why))
            return
        self.kept.append((index, text))
        self.size += len(text)
        self.defined |= _bound(node)
        self.star = self.star or "*" in _bound(node)

    def _why_skipped(self, node, own, text):
        if own & OWN_MODULES:
            return "import of the notebook's own module; its definitions are used"
        if own & DISPLAY_ONLY:
            return "plotting/display import, not needed for grading"
        if "__all__" in (_bound(node) if isinstance(node, (ast.Assign, ast.AnnAssign)) else ()):
            return "__all__ would hide names: both parts come from this one notebook"
        if not _is_definition(node):
            return "top-level code"
        missing = set() if self.star else _eager(node, self.lazy) - self.defined
        if missing:
            return f"needs {', '.join(sorted(missing))}, which no kept definition above it defines"
        if len(text) > MAX_STATEMENT_CHARS:
            return f"{len(text) / 2**10:.0f} KB, over the {MAX_STATEMENT_CHARS // 2**10} KB limit for one definition"
        if self.size + len(text) > MAX_SOURCE_CHARS:
            return f"the definitions kept reach the {MAX_SOURCE_CHARS // 2**20} MB limit of a .py file"
        try:  # what the sandbox will compile: a definition that cannot would fail the whole import
            compile(ast.Module(body=[node], type_ignores=[]), "<cell>", "exec", dont_inherit=True)
        except SyntaxError as e:
            return f"does not compile: {_UNSAFE.sub(_visible, str(e.msg))[:200]}"
        return None

    def result(self):
        notes = list(self.notes)
        if self.skipped:
            groups = []  # consecutive statements of one cell skipped for one reason: one line
            for i, text, why in self.skipped:
                if groups and groups[-1][0] == i and groups[-1][2] == why:
                    groups[-1][3] += 1
                else:
                    groups.append([i, text, why, 0])
            listed = [f"  cell {i}: `{_short(text)}`{f' and {n} more statement' + 's' * (n > 1) if n else ''} ({why})"
                      for i, text, why, n in groups[:MAX_LISTED]]
            more = [f"  ... and {len(groups) - MAX_LISTED} more"] if len(groups) > MAX_LISTED else []
            notes.append("from the notebook only definitions are graded; not executed:\n" + "\n".join(listed + more))
        body, last = [], None
        for index, text in self.kept:
            body += [f"\n# ---- notebook cell {index} ----"] if index != last else []
            body.append(text)
            last = index
        futures = f"from __future__ import {', '.join(self.futures)}\n" if self.futures else ""
        return futures + "\n".join(body) + "\n", notes


def _text(source):
    """(text, None) or (None, why): ``source`` is the text or a callable that decodes it."""
    try:
        return (source() if callable(source) else source), None
    except (ValueError, MemoryError, RecursionError) as e:
        return None, "its source is not text" if isinstance(e, ValueError) else "its source is too big to decode"


def definitions(cells, on_cell=None):
    """(python source of the definitions, notes on what was skipped) of ``cells``: a list of
    (cell number, source), the source a str or a callable returning it. ``on_cell(number)`` is
    called before each cell is parsed. A cell whose parse runs out of memory or recursion is
    skipped with a note; the other cells are still used."""
    lazy = any(LAZY.search(text or "") for text, _ in (_text(source) for _, source in cells))
    work = _Extraction(lazy)
    for index, source in cells:
        if on_cell:
            on_cell(index)
        text, problem = _text(source)
        if problem:
            work.notes.append(f"cell {index} could not be read ({problem}); the whole cell was skipped")
            continue
        try:
            work.cell(index, text)
        except MemoryError:
            work.notes.append(f"cell {index} could not be read: parsing it needs more memory than the grader allows; "
                              "the whole cell was skipped. Keep data and generated code out of the notebook")
        except RecursionError:
            work.notes.append(f"cell {index} could not be read: its code is nested too deeply to parse; "
                              "the whole cell was skipped")
        text = None
    return work.result()
