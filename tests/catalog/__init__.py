"""Catalogs of submissions that prove the grader right: buggy ones it must catch, correct
ones it must give full marks.

Every entry is a small declarative mutation of `reference/` (not a copy of it):

    Replace("GPT.forward", '''def forward(self, idx, targets=None): ...''')  # a def by name
    Sub("np.tril(", "np.triu(")                                   # one unique snippet
    Append('''def helper(): ...''')                                # new top-level code

An entry may start `file` from an independently written correct file of ``sources/``
(``base="einsum_attention.py"``) instead of the reference's, so the grader is also proven on
code that is not the reference's, with its bugs.

    bugs()      -> the Entry list of bugs_part_a.py and bugs_part_b.py
    variants()  -> the Entry list of correct_variants.py
    materialize(entry, dest) -> the path to grade (a folder, or a folder holding a notebook)

A mutation whose target is missing from the reference raises CatalogError, so the catalog
cannot silently rot when the reference changes.
"""
from __future__ import annotations

import ast
import os
import textwrap
from dataclasses import dataclass, field

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
REFERENCE = os.path.join(REPO, "reference")
SOURCES = os.path.join(os.path.dirname(os.path.abspath(__file__)), "sources")
FILES = ("attention.py", "gpt.py")
PART = {"attention.py": "part-a", "gpt.py": "part-b"}


class CatalogError(Exception):
    """A catalog entry does not apply to the reference."""


@dataclass(frozen=True)
class Replace:
    """Replace the top-level def/class `target` ("name" or "Class.method") by `source`.
    Decorators are kept unless `source` brings its own (starts with "@")."""
    target: str
    source: str


@dataclass(frozen=True)
class Sub:
    """Replace the snippet `old`, which must occur exactly once, by `new`."""
    old: str
    new: str


@dataclass(frozen=True)
class Append:
    """Add `source` at the end of the file."""
    source: str


@dataclass(frozen=True)
class Entry:
    id: str
    file: str                       # the file the mutations apply to
    mutations: tuple = ()
    broken: str | None = None       # contract name that must lose points (bugs only)
    diagnosis: str | None = None    # substring expected in the feedback (case-insensitive)
    more: dict = field(default_factory=dict)   # other file -> mutations (variants)
    extra: dict = field(default_factory=dict)  # new file name -> source
    layout: str = "folder"          # "folder" | "nested" | "notebook"
    note: str = ""
    base: str | None = None         # a file of sources/ that `file` starts from, instead of the reference's

    @property
    def part(self):
        return PART[self.file]


def bug(id, file, broken, *mutations, diagnosis=None, note="", base=None):
    return Entry(id, file, tuple(mutations), broken, diagnosis, note=note, base=base)


def _find(tree, target):
    node, body = None, tree.body
    for name in target.split("."):
        node = next((n for n in body if isinstance(n, (ast.FunctionDef, ast.ClassDef))
                     and n.name == name), None)
        if node is None:
            raise CatalogError(f"no def or class {target!r} in the reference")
        body = node.body
    return node


def apply(text, mutation, where=""):
    """`text` with one mutation applied; CatalogError if its target is not there."""
    if isinstance(mutation, Sub):
        count = text.count(mutation.old)
        if count != 1:
            raise CatalogError(f"{where}: snippet found {count} times (need 1): {mutation.old!r}")
        return text.replace(mutation.old, mutation.new)
    if isinstance(mutation, Append):
        return text.rstrip("\n") + "\n\n\n" + textwrap.dedent(mutation.source).strip("\n") + "\n"
    if isinstance(mutation, Replace):
        node = _find(ast.parse(text), mutation.target)
        source = textwrap.dedent(mutation.source).strip("\n")
        start = node.lineno
        if source.startswith("@") and node.decorator_list:
            start = min(d.lineno for d in node.decorator_list)
        indent = " " * node.col_offset
        new = [indent + ln if ln.strip() else "" for ln in source.splitlines()]
        lines = text.splitlines()
        return "\n".join(lines[:start - 1] + new + lines[node.end_lineno:]) + "\n"
    raise CatalogError(f"{where}: unknown mutation {mutation!r}")


def reference_source(name):
    with open(os.path.join(REFERENCE, name), encoding="utf-8") as f:
        return f.read()


def base_source(name):
    """A correct file written independently of the reference (``sources/``), that entries mutate."""
    with open(os.path.join(SOURCES, name), encoding="utf-8") as f:
        return f.read()


def sources(entry):
    """{file name: text} of the whole submission: both reference files (or ``entry.base`` for
    ``entry.file``), mutated, plus extras."""
    out = {name: reference_source(name) for name in FILES}
    if entry.base:
        out[entry.file] = base_source(entry.base)
    plan = {entry.file: tuple(entry.mutations), **{k: tuple(v) for k, v in entry.more.items()}}
    for name, mutations in plan.items():
        for m in mutations:
            out[name] = apply(out[name], m, where=f"{entry.id} ({name})")
        try:
            ast.parse(out[name])
        except SyntaxError as e:
            raise CatalogError(f"{entry.id}: {name} does not parse after mutation: {e}") from None
    for name, text in entry.extra.items():
        out[name] = textwrap.dedent(text).lstrip("\n")
    return out


NOTEBOOK_TITLE = "# HW11: attention and GPT-2"  # the notebook's first (markdown) cell


def cell_sources(files):
    """The code cells' sources of a notebook holding both parts of ``files`` ({name: text}): per
    file of FILES, a cell per top-level statement (from its decorators; not the module
    docstring), then an experiment cell the loader must skip."""
    for name in FILES:
        text = files[name]
        lines = text.splitlines()
        for node in ast.parse(text).body:
            if isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant):
                continue  # the module docstring
            start = min([node.lineno] + [d.lineno for d in getattr(node, "decorator_list", [])])
            yield "\n".join(lines[start - 1:node.end_lineno])
        yield f"%matplotlib inline\nprint('done with {name}')"


def _notebook(files, dest):
    """One .ipynb holding both parts, a cell per top-level statement, with prose and an
    experiment cell the loader must skip."""
    import nbformat
    cells = [nbformat.v4.new_markdown_cell(NOTEBOOK_TITLE)]
    cells += [nbformat.v4.new_code_cell(source) for source in cell_sources(files)]
    nb = nbformat.v4.new_notebook(cells=cells)
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    path = os.path.join(dest, "hw11_submission.ipynb")
    nbformat.write(nb, path)
    return path


def materialize(entry, dest):
    """Write `entry`'s submission under the folder `dest`; returns the path to grade."""
    files = sources(entry)
    os.makedirs(dest, exist_ok=True)
    if entry.layout == "notebook":
        _notebook(files, dest)
        return dest
    folder = os.path.join(dest, "hw11-final", "src") if entry.layout == "nested" else dest
    os.makedirs(folder, exist_ok=True)
    if entry.layout == "nested":
        with open(os.path.join(dest, "README.txt"), "w") as f:
            f.write("my submission\n")
    for name, text in files.items():
        with open(os.path.join(folder, name), "w", encoding="utf-8") as f:
            f.write(text)
    return dest


def bugs():
    from . import bugs_part_a, bugs_part_b
    return list(bugs_part_a.BUGS) + list(bugs_part_b.BUGS)


def variants():
    from . import correct_variants
    return list(correct_variants.VARIANTS)


def entries():
    return bugs() + variants()
