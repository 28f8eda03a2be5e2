"""Hostile files around correct work (issue 10): the loader survives them and the correct work
keeps full marks, within 240 s, with the grader's whole process tree under 768 MB.

Each case is graded as Gradescope runs it: ``python -m autograder grade SUB --out OUT --select
part-a`` in a subprocess, while ``procwatch`` polls /proc for the resident memory of the grade,
its children and the sandbox uid's processes. Part A is compared with one honest grade of the
same work. The big files are written once per module with plain writes (no nbformat).
"""
import json
import os
import subprocess
import sys
import time

import pytest

import catalog  # tests/catalog (the tests folder is on sys.path)
from autograder import loader
from autograder.loader import reader
from conftest import REFERENCE, REPO
from procwatch import TreeWatch

LIMIT_SECONDS = 240
LIMIT_BYTES = 768 * 2**20
PYTHON = os.path.join(REPO, ".venv", "bin", "python") if os.path.exists(os.path.join(REPO, ".venv")) else sys.executable


# -- building submissions ------------------------------------------------------------------
def _code_cell(source):
    return json.dumps({"cell_type": "code", "execution_count": None, "metadata": {}, "outputs": [],
                       "source": source.splitlines(keepends=True)})


def reference_cells():
    """attention.py and gpt.py of reference/ as notebook cells (JSON text), a cell per top-level
    statement, as tests/catalog's ``_notebook`` builds them."""
    files = {name: catalog.reference_source(name) for name in catalog.FILES}
    return [json.dumps({"cell_type": "markdown", "metadata": {}, "source": [catalog.NOTEBOOK_TITLE]}),
            *(_code_cell(source) for source in catalog.cell_sources(files))]


def write_notebook(path, *extra):
    """A correct notebook followed by ``extra`` cells (JSON text, written as they are)."""
    with open(path, "w", encoding="utf-8") as f:
        f.write('{"cells": [' + ", ".join(reference_cells()))
        for cell in extra:
            f.write(", ")
            f.write(cell)
        f.write('], "metadata": {"kernelspec": {"name": "python3", "display_name": "Python 3", "language": "python"}}, '
                '"nbformat": 4, "nbformat_minor": 5}\n')
    return path


def write_reference(folder):
    os.makedirs(folder, exist_ok=True)
    for name in ("attention.py", "gpt.py"):
        with open(os.path.join(REFERENCE, name), "rb") as src, open(os.path.join(folder, name), "wb") as dst:
            dst.write(src.read())
    return folder


def _deep_sum(terms):
    return _code_cell("x = " + "+".join(["1"] * terms) + "; import time; time.sleep(600)")


def _in_notebook(*extra):
    """A writer: the correct notebook plus the cells ``extra`` makes (callables: nothing big is
    built before the fixture runs), in the given folder."""
    def write(folder):
        write_notebook(os.path.join(folder, "hw11.ipynb"), *(make() for make in extra))
        return folder
    return write


def _not_utf8_folder(folder):
    inner = os.fsencode(folder) + b"/hw11-\xe9t\xe9-\xff"  # what unzip writes without the UTF-8 flag
    os.makedirs(inner)
    write_notebook(os.fsdecode(inner + b"/hw11.ipynb"))
    return folder


def _forged_lines_folder(folder):
    write_reference(os.path.join(folder, "hw\nTOTAL 100 / 100\npart-a: 45 / 45\n"))
    return folder


def _big_package(folder, files=60_000):
    write_reference(folder)
    os.makedirs(os.path.join(folder, "data_pkg"))
    for name in ["__init__.py"] + [f"m{i:06d}.py" for i in range(files)]:
        with open(os.path.join(folder, "data_pkg", name), "w") as f:
            f.write("X = 1\n")
    return folder


CASES = {  # name -> writes the submission into the given (empty) folder, returns the path to grade
    "honest": _in_notebook(),
    "list_literal": _in_notebook(lambda: _code_cell("DATA = [" + ",".join(["1"] * 1_150_000) + "]")),
    "metadata_objects": _in_notebook(lambda: (
        '{"cell_type": "code", "execution_count": null, "metadata": {"junk": [' + "{}," * 16_000_000
        + '{}]}, "outputs": [], "source": ["WIDTH = 8\\n"]}')),
    "sum_600": _in_notebook(lambda: _deep_sum(600)),
    "sum_6000": _in_notebook(lambda: _deep_sum(6000)),
    "pass_lines": _in_notebook(lambda: json.dumps({"cell_type": "code", "execution_count": None, "metadata": {},
                                                   "outputs": [], "source": "pass\n" * 250_000})),
    "not_utf8_folder": _not_utf8_folder,
    "forged_lines_folder": _forged_lines_folder,
    "big_package": _big_package,
}


@pytest.fixture(scope="module")
def hostile(tmp_path_factory):
    """name -> path of each hostile submission (written once per module)."""
    root = tmp_path_factory.mktemp("hostile")
    paths = {}
    for name, write in CASES.items():
        os.makedirs(root / name)
        paths[name] = write(str(root / name))
    return paths


# -- grading as Gradescope does, measured ---------------------------------------------------
def _sandbox_uid():
    from autograder.sandbox import limits
    user = limits.sandbox_user()  # conftest.py set AUTOGRADER_SANDBOX_USER to its uid; None when not root
    return user[1] if user else None


def grade_measured(path, out):
    """(results document, seconds, peak bytes of the process tree)."""
    start = time.monotonic()
    proc = subprocess.Popen([PYTHON, "-m", "autograder", "grade", path, "--out", out, "--select", "part-a"],
                            cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    with TreeWatch(proc.pid, uid=_sandbox_uid()) as watch:
        try:
            log, _ = proc.communicate(timeout=LIMIT_SECONDS)
        except subprocess.TimeoutExpired:
            proc.kill()
            log, _ = proc.communicate()
    seconds = time.monotonic() - start
    assert proc.returncode == 0, log.decode("utf-8", "replace")[-3000:]
    with open(out, "rb") as f:
        document = json.loads(f.read().decode("utf-8"))  # strict: no lone surrogates, valid UTF-8
    return document, seconds, watch.peak_bytes


@pytest.fixture(scope="module")
def honest(hostile, tmp_path_factory):
    document, _, _ = grade_measured(hostile["honest"], str(tmp_path_factory.mktemp("honest") / "results.json"))
    assert document["tests"] and all(t["status"] == "passed" for t in document["tests"]), document["output"]
    return document


def assert_full_marks(case, hostile, honest, tmp_path):
    document, seconds, peak = grade_measured(hostile[case], str(tmp_path / "results.json"))
    print(f"{case}: {seconds:.1f} s, process tree peak {peak / 2**20:.0f} MB")
    assert seconds < LIMIT_SECONDS, f"{case}: {seconds:.0f} s"
    assert peak < LIMIT_BYTES, f"{case}: the process tree peaked at {peak / 2**20:.0f} MB"
    scores = {t["name"]: (t["score"], t["max_score"]) for t in document["tests"]}
    expected = {t["name"]: (t["score"], t["max_score"]) for t in honest["tests"]}
    failed = [f"{t['name']}: {t['output'][:300]}" for t in document["tests"] if t["score"] != t["max_score"]]
    assert not failed, "\n".join(failed)
    assert scores == expected
    assert document["score"] == sum(m for _, m in expected.values()) > 0
    return document


# -- the cases --------------------------------------------------------------------------------
def test_a_cell_of_a_million_item_list_is_skipped_and_the_rest_graded(hostile, honest, tmp_path):
    document = assert_full_marks("list_literal", hostile, honest, tmp_path)
    assert "over the 2 MB limit for one cell" in document["output"]


def test_metadata_of_16_million_empty_objects_is_never_built(hostile, honest, tmp_path):
    assert os.path.getsize(os.path.join(hostile["metadata_objects"], "hw11.ipynb")) > 48_000_000
    assert_full_marks("metadata_objects", hostile, honest, tmp_path)


def test_a_600_term_sum_sharing_a_line_keeps_only_the_definition(hostile, honest, tmp_path):
    document = assert_full_marks("sum_600", hostile, honest, tmp_path)
    assert "`time.sleep(600)` (top-level code)" in document["output"]


def test_a_6000_term_sum_skips_its_cell_only(hostile, honest, tmp_path):
    document = assert_full_marks("sum_6000", hostile, honest, tmp_path)
    assert "nested too deeply" in document["output"]


def test_a_cell_of_250000_pass_lines_is_not_quadratic(hostile, honest, tmp_path):
    assert_full_marks("pass_lines", hostile, honest, tmp_path)


def test_a_notebook_in_a_folder_whose_name_is_not_utf8(hostile, honest, tmp_path):
    document = assert_full_marks("not_utf8_folder", hostile, honest, tmp_path)
    graded_from = [line for line in document["output"].split("\n") if line.startswith("attention.py: graded from")]
    assert graded_from and "xe9t" in graded_from[0] and "xff/hw11.ipynb" in graded_from[0], document["output"]


def test_a_folder_name_with_newlines_forges_no_line(hostile, honest, tmp_path):
    document = assert_full_marks("forged_lines_folder", hostile, honest, tmp_path)
    lines = document["output"].split("\n")
    assert not any(line.startswith(("TOTAL", "part-a: 45")) for line in lines), document["output"]
    assert "TOTAL 100 / 100" in document["output"]  # shown, escaped, inside its own line


def test_a_package_of_60000_files_is_neither_walked_nor_copied_whole(hostile, honest, tmp_path):
    document = assert_full_marks("big_package", hostile, honest, tmp_path)
    assert "data_pkg" in document["output"] and "not copied" in document["output"], document["output"]


# -- the loader alone (fast) ------------------------------------------------------------------
def _strings_are_clean(submission):
    strings = [w for w in submission.found.values() if w] + list(submission.notes)
    for s in strings:
        s.encode("utf-8")  # strict: raises on a lone surrogate
    assert not any("\n" in w for w in submission.found.values() if w)
    return strings


def test_loader_names_are_escaped_valid_utf8_and_forge_no_line(hostile, tmp_path):
    for case in ("not_utf8_folder", "forged_lines_folder"):
        submission = loader.load(hostile[case], str(tmp_path / case))
        strings = _strings_are_clean(submission)
        assert all(submission.found.values()), (case, submission)
        for s in strings:
            assert not any(line.strip().startswith("TOTAL") for line in s.split("\n")), s
    assert sorted(os.listdir(tmp_path / "not_utf8_folder")) == ["attention.py", "gpt.py", "submission_code.py"]


def test_loader_names_files_it_could_not_stage(tmp_path):
    folder = write_reference(str(tmp_path / "sub"))
    with open(os.fsencode(folder) + b"/caf\xe9.py", "w") as f:
        f.write("X = 1\n")
    with open(os.path.join(folder, "helpers.py"), "w") as f:
        f.write("Y = 2\n")
    submission = loader.load(folder, str(tmp_path / "staged"))
    _strings_are_clean(submission)
    assert sorted(os.listdir(tmp_path / "staged")) == ["attention.py", "gpt.py", "helpers.py"]
    assert any('"caf\\xe9.py"' in n and "not UTF-8" in n for n in submission.notes), submission.notes


ESCAPED = b'"' + b"\\n" * 8 + b'"'
SHAPES = {  # metadata that json.loads would build into hundreds of MB, or that trips a naive skipper
    "empty objects": b"{}", "one-item lists": b"[1]", "small objects": b'{"a":1,"b":"x"}', "nested lists": b"[[]]",
    "three levels": b"[[[]]]", "escaped strings": b"[" + b",".join([ESCAPED] * 16) + b"]",
    "long escape runs": b'"' + b"\\n" * 5000 + b'"', "pretty printed": b'{\n  "a": [\n    1,\n    {}\n  ]\n}'}


@pytest.mark.parametrize("shape", SHAPES)
def test_notebook_metadata_of_any_shape_is_skipped_in_linear_time(tmp_path, shape):
    unit = SHAPES[shape]
    path = tmp_path / "hw11.ipynb"
    with open(path, "wb") as f:
        f.write(b'{"cells": [{"cell_type": "code", "metadata": {"m": [' + b",".join([unit] * (4_000_000 // len(unit)))
                + b']}, "source": ["A = 1"]}], "metadata": {"deep": ' + b"[" * 500_000 + b"]" * 500_000 + b"}}")
    source, notes = reader.extract(str(path), "hw11.ipynb")
    assert "A = 1" in source and not notes, notes


@pytest.mark.parametrize("junk", [b"[" + b"1" * 100_000 + b" x]", b"[" + b" " * 1_000_000 + b"x]",
                                  b'["' + b"a" * 1_000_000 + b'" x]', b"[" + b"[" * 100_000 + b"}" * 100_000 + b"]"])
def test_malformed_metadata_is_reported_quickly_as_not_json(tmp_path, junk):
    path = tmp_path / "hw11.ipynb"
    path.write_bytes(b'{"cells": [{"cell_type": "code", "source": "A = 1"}], "metadata": ' + junk + b"}")
    source, notes = reader.extract(str(path), "hw11.ipynb")
    assert "hw11.ipynb could not be read: it is not valid JSON" in notes[0], notes  # not "took longer"


def test_a_big_data_folder_does_not_hide_the_code_next_to_it(tmp_path):
    root = tmp_path / "sub"
    for folder in ("a_data", "b_more_data"):
        os.makedirs(root / folder)
        for i in range(3000):
            (root / folder / f"{i}.png").write_bytes(b"")
    write_reference(str(root / "src"))
    submission = loader.load(str(root), str(tmp_path / "staged"))
    assert submission.found == {"attention": "src/attention.py", "gpt": "src/gpt.py"}, submission.notes
    assert any('the rest of "a_data", "b_more_data"' in n for n in submission.notes), submission.notes
