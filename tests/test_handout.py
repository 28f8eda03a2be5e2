"""The handout: generated from reference/, free of solutions, and its public tests work."""

import importlib.util
import json
import os
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

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


def test_generator_never_writes_the_makefile_or_the_tests():
    names = set(make_handout.render_handout(REFERENCE))
    assert not any(name == "Makefile" or name.startswith("tests") for name in names), names


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


# (c) the public tests pass on the reference and fail on the stubs

def _run_public_tests(hw_dir, test_files, tmp_path):
    """Run handout/tests on the homework files in hw_dir: {test name: failure text or None}."""
    report = tmp_path / "report.xml"
    env = {**os.environ, "HW_DIR": str(hw_dir), "PYTHONDONTWRITEBYTECODE": "1"}
    proc = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
         f"--junitxml={report}", *test_files],
        cwd=HANDOUT, env=env, capture_output=True, text=True, timeout=300,
    )
    assert report.is_file(), f"pytest wrote no report:\n{proc.stdout}\n{proc.stderr}"
    results = {}
    for case in ET.parse(report).iter("testcase"):
        problem = case.find("failure")
        if problem is None:
            problem = case.find("error")
        name = f"{case.get('classname')}.{case.get('name')}"
        results[name] = None if problem is None else f"{problem.get('message')}\n{problem.text}"
    assert results, f"no public tests ran:\n{proc.stdout}\n{proc.stderr}"
    return results


def test_public_tests_all_pass_on_the_reference(tmp_path):
    results = _run_public_tests(REFERENCE, ["tests"], tmp_path)
    failed = {name: text for name, text in results.items() if text is not None}
    assert not failed, "public tests fail on reference/:\n" + "\n".join(
        f"{name}: {text}" for name, text in failed.items())


def test_public_tests_all_fail_on_the_stubs_saying_not_implemented_yet(tmp_path):
    files = ["tests/test_attention.py"]
    if (HANDOUT / "tests" / "test_gpt.py").is_file() and (HANDOUT / "gpt.py").is_file():
        files.append("tests/test_gpt.py")
    results = _run_public_tests(HANDOUT, files, tmp_path)
    wrong = {name: text for name, text in results.items()
             if text is None or "not implemented yet" not in text}
    assert not wrong, "on the stubs, these public tests do not fail with 'not implemented yet':\n" \
        + "\n".join(f"{name}: {'passed' if text is None else text}" for name, text in wrong.items())


# (d) the marker rules of the generator

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
