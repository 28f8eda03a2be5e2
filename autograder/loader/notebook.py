"""Definitions from a notebook's code cells, without its experiments.

Kept: imports, function and class definitions, and assignments of constants (no calls).
Skipped, and reported: IPython magics and shell lines (``%``, ``!``), and every other
top-level statement (training runs, plots, prints, sleeps). Nothing is executed here.
"""
import ast

import nbformat

_SIMPLE = (ast.Constant, ast.Name, ast.Attribute, ast.Tuple, ast.List, ast.Dict, ast.Set,
           ast.BinOp, ast.UnaryOp, ast.Subscript, ast.Slice, ast.expr_context, ast.operator, ast.unaryop,
           ast.Lambda, ast.arguments, ast.arg, ast.Compare, ast.cmpop, ast.BoolOp, ast.boolop)


def _is_definition(node):
    if isinstance(node, (ast.Import, ast.ImportFrom, ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
        return True
    if isinstance(node, (ast.Assign, ast.AnnAssign)):
        value = node.value
        return value is None or all(isinstance(n, _SIMPLE) for n in ast.walk(value))
    if isinstance(node, ast.Try):  # try: import x / except ImportError: ...
        return all(_is_definition(n) for n in node.body)
    return False


def _segment(source, node):
    """The node's full source lines, decorators included."""
    start = min([node.lineno] + [d.lineno for d in getattr(node, "decorator_list", [])])
    return "\n".join(source.splitlines()[start - 1:node.end_lineno])


def _first_line(source, node):
    line = source.splitlines()[node.lineno - 1].strip()
    return line if len(line) <= 60 else line[:57] + "..."


def extract(path):
    """(python source of the notebook's definitions, notes on what was skipped)."""
    try:
        nb = nbformat.read(path, as_version=4)
    except Exception as e:  # noqa: BLE001 - any corrupt file
        return "", [f"the notebook {path.rsplit('/', 1)[-1]} could not be read ({type(e).__name__}: "
                    f"{str(e)[:200]}); is it a valid .ipynb file?"]
    kept, skipped, notes = [], [], []
    for index, cell in enumerate(nb.cells, start=1):
        if cell.cell_type != "code":
            continue
        lines = cell.source.splitlines()
        magics = sum(1 for ln in lines if ln.lstrip().startswith(("%", "!")))
        source = "\n".join("" if ln.lstrip().startswith(("%", "!")) else ln for ln in lines)
        if magics:
            skipped.append(f"cell {index}: {magics} magic/shell line(s)")
        try:
            tree = ast.parse(source)
        except SyntaxError as e:
            notes.append(f"cell {index} has a syntax error (line {e.lineno}: {e.msg}); it was skipped")
            continue
        for node in tree.body:
            if _is_definition(node):
                kept.append(f"# cell {index}\n" + _segment(source, node))
            else:
                skipped.append(f"cell {index}: `{_first_line(source, node)}`")
    if skipped:
        notes.append("not executed from the notebook (only definitions are graded): " + "; ".join(skipped[:20])
                     + (f"; and {len(skipped) - 20} more" if len(skipped) > 20 else ""))
    return "\n\n".join(kept) + "\n", notes
