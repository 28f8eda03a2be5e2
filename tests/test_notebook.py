"""The Recitation 11 notebook: generated from reference/recitation11.py, and it runs."""

import importlib.util
import shutil
import sys
from pathlib import Path

import nbformat

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOK = ROOT / "handout" / "recitation11.ipynb"
SOURCE = ROOT / "reference" / "recitation11.py"


def _load_tool():
    path = ROOT / "tools" / "make_handout.py"
    spec = importlib.util.spec_from_file_location("make_handout", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_notebook_is_exactly_what_the_generator_writes():
    expected = _load_tool().render_notebook(SOURCE.read_text(encoding="utf-8"), SOURCE.name)
    assert NOTEBOOK.read_bytes() == expected.encode("utf-8"), "stale notebook: run `make handout`"


def test_notebook_has_no_outputs_or_execution_counts():
    nb = nbformat.read(NOTEBOOK, as_version=4)
    code = [cell for cell in nb.cells if cell.cell_type == "code"]
    assert code, "the notebook has no code cells"
    assert all(cell.outputs == [] and cell.execution_count is None for cell in code)


def test_notebook_runs_top_to_bottom_against_the_reference(tmp_path, monkeypatch, capsys):
    shutil.copy(ROOT / "reference" / "attention.py", tmp_path / "attention.py")
    monkeypatch.chdir(tmp_path)
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setenv("MPLBACKEND", "Agg")
    saved = sys.modules.pop("attention", None)  # the notebook must import the copy beside it
    namespace = {"__name__": "__main__"}
    try:
        nb = nbformat.read(NOTEBOOK, as_version=4)
        for index, cell in enumerate(nb.cells):
            if cell.cell_type != "code":
                continue
            try:
                exec(compile(cell.source, f"<{NOTEBOOK.name} cell {index}>", "exec"), namespace)
            except Exception as exc:
                raise AssertionError(
                    f"cell {index} ({cell.id}) raised {exc!r}:\n{cell.source}") from exc
        assert Path(namespace["scaled_dot_product_attention"].__code__.co_filename).parent \
            == tmp_path, "the notebook did not import attention.py from its own folder"
    finally:
        sys.modules.pop("attention", None)
        if saved is not None:
            sys.modules["attention"] = saved
    assert "19.82" in capsys.readouterr().out  # the worked example's z_2 was printed
