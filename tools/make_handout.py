"""Generate handout/ from reference/: student stubs, support files and the Recitation 11 notebook.

    python tools/make_handout.py            # (re)write the generated files in handout/
    python tools/make_handout.py --check    # write nothing; exit 1 naming every stale file

In a reference file, every region from a ``### BEGIN SOLUTION`` line to its
``### END SOLUTION`` line becomes one line
``raise NotImplementedError("<qualified name>: not implemented yet")`` at the markers'
indentation; signatures, docstrings and everything else stay. Such files get a one-line
header saying where they come from. Files without markers are copied verbatim.
``reference/recitation11.py`` (cells separated by ``# %%`` lines) becomes
``handout/recitation11.ipynb``. ``docs/CONTRACT.md`` is copied to ``handout/CONTRACT.md``
(students get the contract with the handout). The checks declared ``public=True`` become
``handout/tests/public_cases.json`` (their cases and the reference's recorded outputs, run by
the hand-written ``handout/tests/test_recorded.py``), and the points table of the hand-written
``handout/README.md`` is rewritten between its markers from the checks' declarations. Nothing
else of the hand-written ``README.md``, ``Makefile`` and ``tests/`` is touched. The output
depends on these source files and the recorded data only, byte for byte.
"""

from __future__ import annotations

import argparse
import ast
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

# Reference files the students get, in handout order (a missing one is skipped).
HANDOUT_FILES = ("attention.py", "gpt.py", "corpus.py", "train.py")
# (source in reference/, notebook written to handout/)
NOTEBOOK = ("recitation11.py", "recitation11.ipynb")
# (source in the repository, copy written to handout/)
CONTRACT = ("docs/CONTRACT.md", "CONTRACT.md")
# the public tests recorded from the reference: the cases of the checks declared public=True
PUBLIC_CASES = "tests/public_cases.json"
# docs/CONTRACT.md's table of functions added with their checks (a concept module's CONTRACT_ROW)
ADDED_MARKERS = ("<!-- added: rows that checks declare (CONTRACT_ROW), written by make handout -->", "<!-- /added -->")
# handout/README.md's points table, between these lines, is written from the checks' declarations
POINTS_MARKERS = ("<!-- points: written by make handout from the graded checks -->", "<!-- /points -->")

BEGIN = "### BEGIN SOLUTION"
END = "### END SOLUTION"
HEADER = "# Generated from reference/{name} by `make handout`; staff: edit it there, not here.\n"
MARKDOWN_HEADER = "<!-- Generated from {name} by `make handout`; staff: edit it there, not here. -->\n"
CELL = re.compile(r"^# %%(?P<markdown> \[markdown\])?(?:\s.*)?$")


class MarkerError(ValueError):
    """Unbalanced or misplaced solution markers in a reference file."""


def _qualified_names(source: str, filename: str) -> list[tuple[int, int, str]]:
    """(first line, last line, qualified name) of every function and class in ``source``."""
    try:
        tree = ast.parse(source, filename=filename)
    except SyntaxError as exc:
        raise MarkerError(f"{filename}:{exc.lineno}: not valid Python: {exc.msg}") from None
    spans = []

    def visit(node: ast.AST, prefix: str) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                name = prefix + child.name
                spans.append((child.lineno, child.end_lineno, name))
                visit(child, name + ".")
            else:
                visit(child, prefix)

    visit(tree, "")
    return spans


def _enclosing_name(spans: list[tuple[int, int, str]], lineno: int, default: str) -> str:
    """Qualified name of the innermost function or class around line ``lineno``."""
    inside = [(first, name) for first, last, name in spans if first <= lineno <= last]
    return max(inside)[1] if inside else default


def strip_solutions(source: str, filename: str = "<string>") -> str:
    """``source`` with every solution region replaced by a ``raise NotImplementedError`` line."""
    lines = source.splitlines(keepends=True)
    spans = _qualified_names(source, filename)
    out: list[str] = []
    begin = None  # (line number, indentation) of the open BEGIN marker
    for number, line in enumerate(lines, start=1):
        stripped = line.strip()
        indent = line[: len(line) - len(line.lstrip())]
        if stripped.startswith(BEGIN):
            if begin is not None:
                raise MarkerError(
                    f"{filename}:{number}: {BEGIN!r} inside the region opened at line {begin[0]}"
                )
            begin = (number, indent)
        elif stripped.startswith(END):
            if begin is None:
                raise MarkerError(f"{filename}:{number}: {END!r} without a {BEGIN!r} before it")
            if indent != begin[1]:
                raise MarkerError(
                    f"{filename}:{number}: {END!r} is indented {len(indent)} columns, "
                    f"its {BEGIN!r} at line {begin[0]} {len(begin[1])}"
                )
            name = _enclosing_name(spans, begin[0], default=Path(filename).stem)
            out.append(f'{indent}raise NotImplementedError("{name}: not implemented yet")\n')
            begin = None
        elif begin is None:
            out.append(line)
    if begin is not None:
        raise MarkerError(f"{filename}:{begin[0]}: {BEGIN!r} is never closed by {END!r}")
    result = "".join(out)
    try:
        compile(result, filename, "exec")
    except SyntaxError as exc:
        raise MarkerError(f"{filename}: the stub is not valid Python: {exc}") from None
    return result


def has_markers(source: str) -> bool:
    return any(line.strip().startswith((BEGIN, END)) for line in source.splitlines())


def render_stub(source: str, name: str) -> str:
    """The handout version of reference file ``name``: a stub with a header, or a verbatim copy."""
    if not has_markers(source):
        return source
    stub = strip_solutions(source, filename=f"reference/{name}")
    return HEADER.format(name=name) + stub


def render_notebook(source: str, name: str = NOTEBOOK[0]) -> str:
    """The notebook for a ``# %%``-cell script, as deterministic JSON text.

    Text before the first ``# %%`` line is left out. Markdown cells (``# %% [markdown]``)
    hold comment lines whose leading ``# `` is removed.
    """
    import nbformat  # only the notebook needs it

    if has_markers(source):
        raise MarkerError(f"{name}: solution markers are not allowed in the notebook source")
    cells: list[tuple[str, list[str]]] = []  # (kind, lines)
    for number, line in enumerate(source.splitlines(), start=1):
        match = CELL.match(line)
        if match:
            cells.append(("markdown" if match["markdown"] else "code", []))
        elif cells and cells[-1][0] == "markdown" and line.strip():
            if not line.startswith("#"):
                raise ValueError(f"{name}:{number}: markdown cells hold '#' lines, got {line!r}")
            cells[-1][1].append(line[2:] if line.startswith("# ") else line[1:])
        elif cells:
            cells[-1][1].append(line)

    nb = nbformat.v4.new_notebook(metadata={
        "kernelspec": {"display_name": "Python 3", "language": "python", "name": "python3"},
        "language_info": {"name": "python"},
        "generated_from": f"reference/{name} by `make handout`",
    })
    v4 = nbformat.v4
    for kind, body in cells:
        text = "\n".join(body).strip("\n")
        if not text:
            continue
        new_cell = v4.new_markdown_cell if kind == "markdown" else v4.new_code_cell
        nb.cells.append(new_cell(text, id=f"cell-{len(nb.cells):02d}"))
    nbformat.validate(nb)
    return nbformat.writes(nb).rstrip("\n") + "\n"


def render_handout(reference: Path, root: Path = ROOT) -> dict[str, str]:
    """Every generated handout file: path relative to handout/ -> text. ``root`` is the
    repository that holds ``docs/CONTRACT.md``."""
    files = {}
    for name in HANDOUT_FILES:
        path = reference / name
        if path.is_file():
            files[name] = render_stub(path.read_text(encoding="utf-8"), name)
    source, target = NOTEBOOK
    if (reference / source).is_file():
        files[target] = render_notebook((reference / source).read_text(encoding="utf-8"), source)
    source, target = CONTRACT
    if (root / source).is_file():
        contract = with_added_rows((root / source).read_text(encoding="utf-8"), root)
        files[f"../{source}"] = contract  # the rows a TA's new check declares join the contract itself
        files[target] = MARKDOWN_HEADER.format(name=source) + contract
    files[PUBLIC_CASES] = public_cases(root)
    readme = reference.parent / "handout" / "README.md"
    if readme.is_file():
        files["README.md"] = with_points_table(readme.read_text(encoding="utf-8"), root)
    return files


def _importable(root: Path) -> None:
    """Put ``root`` (the repository holding the autograder package) on ``sys.path``, once."""
    if str(root) not in sys.path:
        sys.path.insert(0, str(root))


def public_cases(root: Path = ROOT) -> str:
    """The cases of the checks declared public, with the reference's recorded outputs (JSON)."""
    _importable(root)
    from autograder.checks import public
    return public.as_json()


def points_table(root: Path = ROOT) -> str:
    """The markdown table of what each contract name is worth, from the checks' declarations."""
    _importable(root)
    from autograder.checks import contract
    rows = ["| part | file | what is graded first | points |", "| --- | --- | --- | --- |"]
    for part, names in contract.points().items():
        total = sum(names.values())
        module = contract.MODULES[part]
        rows += [f"| {part} | `{module}.py` | `{name}` | {points:g} |" for name, points in names.items()]
        rows.append(f"| {part} | | **total** | **{total:g}** |")
    return "\n".join(rows) + "\n"


def _splice(text: str, markers: tuple[str, str], body) -> str:
    """``text`` with what lies between the ``markers`` lines replaced by ``body()`` (called only
    when both markers are there); ``text`` unchanged otherwise."""
    begin, end = markers
    if begin not in text or end not in text:
        return text
    head, rest = text.split(begin, 1)
    return head + begin + "\n" + body() + end + rest.split(end, 1)[1]


def with_added_rows(contract: str, root: Path = ROOT) -> str:
    """``contract`` with, between the added-rows markers (in its Part A section), a table of the
    ``CONTRACT_ROW`` of every Part A concept that declares one (a function added by a TA)."""
    def table() -> str:
        _importable(root)
        from autograder.checks.part_a import base
        rows = [m.CONTRACT_ROW for m in base.concepts().values() if getattr(m, "CONTRACT_ROW", None)]
        return "".join(["| name | contract |\n| --- | --- |\n"] + [f"{row}\n" for row in rows]) if rows else ""
    return _splice(contract, ADDED_MARKERS, table)


def with_points_table(readme: str, root: Path = ROOT) -> str:
    """``readme`` with the text between the points markers replaced by ``points_table``."""
    return _splice(readme, POINTS_MARKERS, lambda: points_table(root))


def output_path(name: str, handout: Path, root: Path = ROOT) -> Path:
    """Where generated file ``name`` goes: a ``../`` name (docs/CONTRACT.md) in the repository
    ``root``, whatever ``--handout`` says; any other name in ``handout``."""
    return root / name[3:] if name.startswith("../") else handout / name


def stale_files(files: dict[str, str], handout: Path, root: Path = ROOT) -> list[str]:
    """The names in ``files`` whose copy (at ``output_path``) is missing or different."""
    stale = []
    for name, text in files.items():
        path = output_path(name, handout, root)
        if not path.is_file() or path.read_bytes() != text.encode("utf-8"):
            stale.append(name)
    return stale


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true",
                        help="write nothing; exit 1 if any generated file is stale")
    parser.add_argument("--reference", type=Path, default=ROOT / "reference",
                        help=argparse.SUPPRESS)
    parser.add_argument("--handout", type=Path, default=ROOT / "handout", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)

    try:
        files = render_handout(args.reference)
    except ValueError as exc:  # MarkerError or a malformed notebook source
        print(f"make_handout: {exc}", file=sys.stderr)
        return 2
    stale = stale_files(files, args.handout)
    if args.check:
        for name in stale:
            print(f"stale: handout/{name} differs from what `make handout` writes", file=sys.stderr)
        if stale:
            print("run `make handout` (python tools/make_handout.py) and commit the result",
                  file=sys.stderr)
        return 1 if stale else 0
    for name in stale:
        path = output_path(name, args.handout)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(files[name].encode("utf-8"))
        print(f"wrote handout/{name}")
    print(f"handout: {len(files)} generated files, {len(stale)} rewritten")
    return 0


if __name__ == "__main__":
    sys.exit(main())
