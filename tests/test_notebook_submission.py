"""A notebook submission: only its definitions are graded; magics, shell lines and experiments
are skipped and listed; a corrupt notebook gets a clear message."""
import ast
import os

import nbformat
import pytest
from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook

from autograder.loader import notebook
from conftest import REFERENCE

EXPERIMENTS = [  # (cell source, what the results must list as skipped)
    ("!pip install torch numpy", "!pip install torch numpy"),
    ("%matplotlib inline\nimport matplotlib.pyplot as plt", "%matplotlib inline"),
    ("config = GPTConfig(vocab_size=27, block_size=16, n_layer=2, n_head=2, n_embd=32)\n"
     "model = GPT(config)\n"
     "optimizer = torch.optim.AdamW(model.parameters(), lr=3e-4)\n"
     "losses = []\n"
     "for step in range(100_000):\n"
     "    idx = torch.randint(0, 27, (8, 17))\n"
     "    _, loss = model(idx[:, :-1], idx[:, 1:])\n"
     "    optimizer.zero_grad(); loss.backward(); optimizer.step()\n"
     "    losses.append(loss.item())\n"
     "print(f'final loss {losses[-1]:.3f}')", "config = GPTConfig(vocab_size=27"),
    ("import time\ntime.sleep(600)", "time.sleep(600)"),
    ("plt.plot(losses)\nplt.show()", "`plt.plot(losses)` and 1 more statement (top-level code)"),
    ("%%time\nfor i in range(10**9):\n    pass", "%%time"),
]


def reference_cells(path):
    """A module as a student's notebook: imports in one cell, then one cell per definition."""
    source = open(path, encoding="utf-8").read()
    lines, tree = source.splitlines(), ast.parse(source)
    cells, imports = [], []
    for k, node in enumerate(tree.body):
        first = min([node.lineno] + [d.lineno for d in getattr(node, "decorator_list", [])])
        text = "\n".join(lines[first - 1:node.end_lineno])
        if k == 0 and isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant):
            cells.append(new_markdown_cell(node.value.value))
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            imports.append(text)
        else:
            if imports:
                cells.append(new_code_cell("\n".join(imports)))
                imports = []
            cells.append(new_code_cell(text))
    return cells


def build_notebook(path):
    """The reference's attention.py and gpt.py split into cells, with experiments among them."""
    experiments = [new_code_cell(source) for source, _ in EXPERIMENTS]
    cells = ([new_markdown_cell("# HW11: Building GPT-2")] + experiments[:2]
             + reference_cells(os.path.join(REFERENCE, "attention.py"))
             + reference_cells(os.path.join(REFERENCE, "gpt.py")) + experiments[2:])
    nbformat.write(new_notebook(cells=cells), str(path))
    return path


def extract_cells(tmp_path, *sources):
    path = tmp_path / "nb.ipynb"
    nbformat.write(new_notebook(cells=[new_code_cell(s) for s in sources]), str(path))
    return notebook.extract(str(path))


def test_magics_shell_lines_and_experiments_are_dropped_definitions_kept(tmp_path):
    source, notes = notebook.extract(str(build_notebook(tmp_path / "hw11.ipynb")))
    compile(source, "submission_code.py", "exec")
    for name in ("def softmax", "def transformer_block", "class GPTConfig", "@dataclass", "class GPT(", "def perplexity"):
        assert name in source
    for dropped in ("sleep", "pip", "AdamW", "matplotlib", "plt.", "range(10**9)"):
        assert dropped not in source
    listed = "\n".join(notes)
    for _, shown in EXPERIMENTS:
        assert shown in listed


def test_a_cell_magic_skips_its_whole_cell(tmp_path):
    source, notes = extract_cells(tmp_path, "%%writefile attention.py\ndef softmax(x):\n    return x", "X = 1")
    assert "softmax" not in source and "X = 1" in source
    assert "%%writefile attention.py" in notes[0] and "whole cell" in notes[0]


def test_a_definition_needing_a_skipped_name_is_skipped_so_the_rest_still_imports(tmp_path):
    source, notes = extract_cells(tmp_path, "chars = sorted(set(open('input.txt').read()))\nV = len(chars)",
                                  "VOCAB = V\n\ndef f(x, n=VOCAB):\n    return x\n\ndef g(x):\n    return x + 1")
    namespace = {}
    exec(compile(source, "submission_code.py", "exec"), namespace)  # no NameError, no file read
    assert namespace["g"](1) == 2 and "f" not in namespace
    assert "needs V," in notes[0] and "needs VOCAB," in notes[0]


def test_dunder_all_is_ignored_so_both_parts_stay_visible(tmp_path):
    source, notes = extract_cells(tmp_path, "__all__ = ['softmax']\ndef softmax(x):\n    return x", "class GPT:\n    pass")
    assert "__all__" not in source and "class GPT" in source and "__all__ = ['softmax']" in notes[0]


def test_only_the_definition_runs_from_a_line_shared_with_a_sleep(tmp_path):
    source, _ = extract_cells(tmp_path, "import time; time.sleep(600)\nfrom __future__ import annotations")
    assert "sleep" not in source and "import time" in source
    assert source.startswith("from __future__ import annotations")
    compile(source, "submission_code.py", "exec")


@pytest.mark.parametrize("content", [b"", b'{"cells": [', b"{}", b"\x89PNG\r\n\x1a\n\x00\x00", b'{"cells": 5}'])
def test_a_corrupt_notebook_becomes_a_clear_import_error(tmp_path, content):
    path = tmp_path / "hw11.ipynb"
    path.write_bytes(content)
    source, notes = notebook.extract(str(path))
    with pytest.raises(ImportError, match="the notebook hw11.ipynb could not be read"):
        exec(compile(source, "submission_code.py", "exec"), {})
    assert "could not be read" in notes[0] and "File > Download" in notes[0]


def test_a_corrupt_notebook_grades_to_zero_with_the_reason_and_no_crash(tmp_path, grade):
    folder = tmp_path / "submission"
    folder.mkdir()
    (folder / "hw11.ipynb").write_text('{"cells": [{"cell_type": "code", "source": "def softmax(')
    document = grade(str(folder), select=["part-a"])
    assert document["tests"] and not any("grader" in t["tags"] for t in document["tests"])
    assert document["score"] == 0
    assert "hw11.ipynb could not be read" in document["output"]
    assert all("could not be read" in t["output"] for t in document["tests"])


def test_the_notebook_grades_to_full_marks_quickly_and_says_what_it_skipped(tmp_path, grade):
    folder = tmp_path / "submission"
    folder.mkdir()
    document = grade(str(build_notebook(folder / "hw11.ipynb")))
    failed = [f"{t['name']}: {t['output'][:300]}" for t in document["tests"] if t["status"] != "passed"]
    assert not failed, "\n".join(failed)
    assert document["score"] == sum(t["max_score"] for t in document["tests"]) > 0
    assert document["execution_time"] < 300  # the 600 s sleep and the training loop did not run
    for _, shown in EXPERIMENTS:
        assert shown in document["output"]
