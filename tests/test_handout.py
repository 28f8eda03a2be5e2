"""The handout: generated from reference/, free of solutions; the contract ships in the repository
and the docs name all of it. The public tests and train.py: test_handout_public.py."""

import importlib.util
import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import reference_public_names

ROOT = Path(__file__).resolve().parents[1]
REFERENCE = ROOT / "reference"
HANDOUT = ROOT / "handout"
TOOL = ROOT / "tools" / "make_handout.py"


def _load_tool():
    spec = importlib.util.spec_from_file_location("make_handout", TOOL)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


make_handout = _load_tool()


# (a) the committed handout is what the generator writes

def test_committed_handout_is_up_to_date():
    proc = subprocess.run([sys.executable, str(TOOL), "--check"],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, f"handout/ is stale, run `make handout`:\n{proc.stderr}"


def test_check_names_every_stale_file(tmp_path, capsys):
    assert make_handout.main(["--handout", str(tmp_path)]) == 0
    assert make_handout.main(["--check", "--handout", str(tmp_path)]) == 0
    (tmp_path / "attention.py").write_text("# edited by hand\n")
    (tmp_path / "recitation11.ipynb").unlink()
    capsys.readouterr()
    assert make_handout.main(["--check", "--handout", str(tmp_path)]) == 1
    err = capsys.readouterr().err
    assert "handout/attention.py" in err and "handout/recitation11.ipynb" in err, err


def test_generator_output_is_deterministic():
    assert make_handout.render_handout(REFERENCE) == make_handout.render_handout(REFERENCE)


def test_generator_writes_only_generated_files_and_never_the_hand_written_tests():
    names = set(make_handout.render_handout(REFERENCE))
    assert "Makefile" not in names and "pytest.ini" not in names, names
    tests = {name for name in names if name.startswith("tests")}
    assert tests == {make_handout.PUBLIC_CASES}, tests  # the recorded cases, never a test file
    outside = {name for name in names if name.startswith("..")}
    assert outside == {"../docs/CONTRACT.md"}, outside  # only its generated table of added rows


# (b) no solution line leaks into handout/

def _split_reference():
    """(solution lines, public text): the non-trivial lines inside the markers of every
    reference file the handout uses, and all the reference text outside the markers."""
    solutions, public = set(), []
    for name in (*make_handout.HANDOUT_FILES, make_handout.NOTEBOOK[0]):
        path = REFERENCE / name
        if not path.is_file():
            continue
        inside = False
        for line in path.read_text(encoding="utf-8").splitlines():
            stripped = line.strip()
            if stripped.startswith(make_handout.BEGIN):
                inside = True
            elif stripped.startswith(make_handout.END):
                inside = False
            elif not inside:
                public.append(line)
            elif len(stripped) >= 15 and not stripped.startswith("#"):
                solutions.add(stripped)
    return solutions, "\n".join(public)


def _handout_texts():
    """(path, text) of every file in handout/; a notebook's text is its cells' sources."""
    skip = {"__pycache__", ".pytest_cache", "out", "runs"}  # caches and training outputs
    for path in sorted(HANDOUT.rglob("*")):
        parts = path.relative_to(HANDOUT).parts
        if not path.is_file() or any(p in skip or p.startswith(".") for p in parts):
            continue
        if path.suffix == ".ipynb":
            nb = json.loads(path.read_text(encoding="utf-8"))
            yield path, "\n".join("".join(cell["source"]) for cell in nb["cells"])
        else:
            yield path, path.read_text(encoding="utf-8", errors="replace")


def test_no_solution_line_appears_in_the_handout():
    solutions, public = _split_reference()
    # a line the reference also shows outside the markers (e.g. in a docstring) is no secret
    secrets = {line for line in solutions if line not in public}
    assert len(secrets) > 20, "found few solution lines in reference/: are the markers there?"
    leaks = [f"{path.relative_to(ROOT)}: {line}"
             for path, text in _handout_texts() for line in secrets if line in text]
    assert not leaks, "solution lines in the handout:\n" + "\n".join(sorted(leaks))


# (c) the marker rules of the generator

METHOD = '''class Model:
    def forward(self, x):
        """Doc."""
        y = x + 1
        ### BEGIN SOLUTION
        return y * 2
        ### END SOLUTION
'''


def test_solution_region_becomes_one_raise_at_the_markers_indentation():
    stub = make_handout.strip_solutions(METHOD)
    assert stub == ('class Model:\n'
                    '    def forward(self, x):\n'
                    '        """Doc."""\n'
                    '        y = x + 1\n'
                    '        raise NotImplementedError("Model.forward: not implemented yet")\n')


def test_module_level_function_gets_its_own_name():
    source = "def f():\n    ### BEGIN SOLUTION\n    return 1\n    ### END SOLUTION\n"
    assert make_handout.strip_solutions(source) == \
        'def f():\n    raise NotImplementedError("f: not implemented yet")\n'


@pytest.mark.parametrize("source, problem", [
    ("def f():\n    ### BEGIN SOLUTION\n    return 1\n", "never closed"),
    ("def f():\n    return 1\n    ### END SOLUTION\n", "without"),
    ("def f():\n    ### BEGIN SOLUTION\n    ### BEGIN SOLUTION\n    return 1\n"
     "    ### END SOLUTION\n", "inside the region opened at line 2"),
    ("def f():\n    ### BEGIN SOLUTION\n    return 1\n### END SOLUTION\n", "indented"),
])
def test_unbalanced_markers_raise_a_clear_error(source, problem):
    with pytest.raises(make_handout.MarkerError, match=problem):
        make_handout.strip_solutions(source, filename="reference/x.py")


def test_file_without_markers_is_copied_verbatim():
    source = '"""Support code."""\n\nX = 1  # no markers here\n'
    assert make_handout.render_stub(source, "corpus.py") == source


def test_stub_starts_with_the_generated_header():
    stub = make_handout.render_stub(METHOD, "gpt.py")
    first, rest = stub.split("\n", 1)
    assert first.startswith("# Generated from reference/gpt.py by `make handout`")
    assert rest == make_handout.strip_solutions(METHOD)


def test_notebook_cells_have_stable_ids_and_no_outputs():
    import nbformat

    source = ("header, left out\n"
              "# %% [markdown]\n# # Title\n#\n# text\n\n"
              "# %%\nx = 1\n\n"
              "# %%\nprint(x)\n")
    text = make_handout.render_notebook(source, "demo.py")
    assert text == make_handout.render_notebook(source, "demo.py")
    nb = nbformat.reads(text, as_version=4)
    assert [(c.cell_type, c.id, c.source) for c in nb.cells] == [
        ("markdown", "cell-00", "# Title\n\ntext"), ("code", "cell-01", "x = 1"),
        ("code", "cell-02", "print(x)")]
    assert all(c.outputs == [] and c.execution_count is None for c in nb.cells[1:])


def test_notebook_source_may_not_hold_solution_markers():
    with pytest.raises(make_handout.MarkerError):
        make_handout.render_notebook("# %%\n### BEGIN SOLUTION\nx = 1\n### END SOLUTION\n")


# (d) the contract ships in the repository, and nothing points outside it

CONTRACT = ROOT / "docs" / "CONTRACT.md"


def _contract_table_names():
    """The names in the first column of the Part A and Part B tables of docs/CONTRACT.md."""
    names, part = set(), False
    for line in CONTRACT.read_text(encoding="utf-8").splitlines():
        if line.startswith("## "):
            part = line.startswith(("## Part A", "## Part B"))
        match = re.match(r"\| `(?:\w+\.)?(\w+)", line) if part else None
        if match:
            names.add(match[1])
    return names


def test_the_contract_names_exactly_the_reference_functions_and_classes():
    in_code, in_contract = reference_public_names("attention.py", "gpt.py"), _contract_table_names()
    assert len(in_code) >= 20, sorted(in_code)
    assert in_contract == in_code, (f"only in docs/CONTRACT.md: {sorted(in_contract - in_code)}; "
                                    f"only in reference/: {sorted(in_code - in_contract)}")


@pytest.mark.parametrize("doc", ["docs/CONTRACT.md", "handout/README.md", "handout/CONTRACT.md"])
def test_the_docs_name_every_contract_entry(doc):
    text = (ROOT / doc).read_text(encoding="utf-8")
    missing = sorted(name for name in reference_public_names("attention.py", "gpt.py")
                     if not re.search(rf"`(\w+\.)?{name}[`(]", text))
    assert not missing, f"{doc} does not name {missing} (as `name`)"


def test_the_handout_readme_links_the_contract_and_states_its_easy_to_miss_rules():
    text = (HANDOUT / "README.md").read_text(encoding="utf-8")
    assert "(CONTRACT.md)" in text
    for rule in ("float32", "buffers", "scores zero on its own tests only", "pip install numpy torch pytest"):
        assert rule in text, rule


# built from pieces, so that this file does not match itself
_OUTSIDE = re.compile(r"\.\./+shared\b|/" + "work/shared\\b")


def _repository_files():
    try:
        listed = subprocess.run(["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
                                cwd=ROOT, capture_output=True, text=True, timeout=60, check=True).stdout
        return [ROOT / name for name in listed.split("\0") if name]
    except (OSError, subprocess.CalledProcessError):  # not a git checkout: walk the tree
        skip = {".git", ".venv", "out", "dist", "__pycache__", ".pytest_cache"}
        return [p for p in ROOT.rglob("*") if p.is_file() and not skip & set(p.relative_to(ROOT).parts)]


def test_nothing_in_the_repository_points_outside_it():
    files = _repository_files()
    assert any(p.name == "CONTRACT.md" for p in files), "docs/CONTRACT.md is not in the listing"
    hits = []
    for path in files:
        if not path.is_file():
            continue  # deleted in the work tree
        for number, line in enumerate(path.read_bytes().decode("utf-8", "replace").splitlines(), 1):
            if _OUTSIDE.search(line):
                hits.append(f"{path.relative_to(ROOT)}:{number}: {line.strip()}")
    assert not hits, "these lines point outside the repository (the contract is docs/CONTRACT.md):\n" \
        + "\n".join(hits)
