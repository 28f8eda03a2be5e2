"""The TA's expected outputs: `make reference` writes them deterministically, `make
check-reference` names whatever is stale without running anything."""
import importlib.util
import json
import os
import shutil
import subprocess
import sys
import time

import numpy as np
import pytest

from conftest import REPO

DATA = os.path.join(REPO, "autograder", "data")


def _load_tool():
    spec = importlib.util.spec_from_file_location("make_reference", os.path.join(REPO, "tools", "make_reference.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


tool = _load_tool()


@pytest.fixture
def project(tmp_path):
    """A copy of every input, and outputs recorded from made-up values (nothing is run)."""
    for pattern in tool.INPUT_PATTERNS:
        folder = os.path.dirname(pattern)
        os.makedirs(tmp_path / folder, exist_ok=True)
        for path in tool.glob.glob(os.path.join(REPO, pattern)):
            shutil.copy(path, tmp_path / folder)
    recorded = {"part_a": ({"softmax.rows": np.arange(6.0).reshape(2, 3)}, {"params.femto": 123}),
                "part_b": ({"forward.logits": np.ones((1, 2, 3), np.float32)}, {"quality": {"seed": 7}})}
    manifest = tool.write_outputs(str(tmp_path), str(tmp_path / tool.DATA), recorded, tool.input_hashes(str(tmp_path)))
    return tmp_path, manifest


def check(root, capsys):
    code = tool.main(["--check", "--root", str(root)])
    captured = capsys.readouterr()
    return code, captured.out + captured.err


def test_the_npz_writer_is_deterministic_whatever_the_order_or_time(tmp_path):
    a = {"b": np.arange(5, dtype=np.int64), "a.x": np.eye(3, dtype=np.float32), "c": np.array([True, False])}
    first = tool.npz_bytes(a)
    time.sleep(1.1)  # a zip timestamp would change here
    assert tool.npz_bytes(dict(reversed(list(a.items())))) == first
    (tmp_path / "x.npz").write_bytes(first)
    with np.load(tmp_path / "x.npz", allow_pickle=False) as z:
        assert z.files == ["a.x", "b", "c"]
        for key, value in a.items():
            assert z[key].dtype == value.dtype and np.array_equal(z[key], value)
    with pytest.raises(ValueError, match="object arrays"):
        tool.npz_bytes({"bad": np.array([{}], dtype=object)})


def test_the_manifest_records_seeds_versions_and_every_hash(project):
    root, manifest = project
    assert manifest["seeds"] == {"part_a": {}, "part_b": {"quality.seed": 7}}
    assert set(manifest["versions"]) == {"python", "numpy", "torch"}
    assert "reference/gpt.py" in manifest["inputs"] and "autograder/checks/cases_part_a.py" in manifest["inputs"]
    assert sorted(manifest["outputs"]) == [f"autograder/data/part_{p}.{e}" for p in "ab" for e in ("json", "npz")]


def test_check_passes_on_fresh_outputs(project, capsys):
    code, out = check(project[0], capsys)
    assert code == 0 and "up to date" in out


def test_check_names_a_changed_input(project, capsys):
    root, _ = project
    with open(root / "reference" / "gpt.py", "a") as f:
        f.write("\n# an edit\n")
    code, out = check(root, capsys)
    assert code == 1 and "input changed since the last recording: reference/gpt.py" in out and "make reference" in out


def test_check_names_new_and_removed_inputs(project, capsys):
    root, _ = project
    (root / "autograder" / "checks" / "cases_part_c.py").write_text("")
    os.unlink(root / "reference" / "corpus.py")
    code, out = check(root, capsys)
    assert code == 1 and "new input, not recorded: autograder/checks/cases_part_c.py" in out
    assert "input recorded but gone: reference/corpus.py" in out


def test_check_names_an_output_edited_by_hand_or_missing(project, capsys):
    root, _ = project
    with open(root / tool.DATA / "part_a.json", "a") as f:
        f.write(" ")
    os.unlink(root / tool.DATA / "part_b.npz")
    code, out = check(root, capsys)
    assert code == 1 and "output differs from what was recorded (edited by hand?): autograder/data/part_a.json" in out
    assert "output missing: autograder/data/part_b.npz" in out


def test_check_without_a_manifest_says_so(tmp_path, capsys):
    code, out = check(tmp_path, capsys)
    assert code == 1 and "manifest.json is missing" in out


def test_check_runs_nothing_and_is_fast(project):
    root, _ = project
    outputs = sorted(os.listdir(root / tool.DATA))
    mtimes = [os.stat(root / tool.DATA / n).st_mtime_ns for n in outputs]
    start = time.monotonic()
    subprocess.run([sys.executable, os.path.join(REPO, "tools", "make_reference.py"), "--check", "--root", str(root)],
                   check=True, capture_output=True)
    assert time.monotonic() - start < 5
    assert [os.stat(root / tool.DATA / n).st_mtime_ns for n in outputs] == mtimes


def changed_keys(a, b, prefix=""):
    """["quality.reference_seconds", ...]: the paths at which two JSON documents differ."""
    if not (isinstance(a, dict) and isinstance(b, dict)):
        return [prefix.rstrip(".") or "(the whole file)"] if a != b else []
    return [k for key in sorted(set(a) | set(b)) for k in changed_keys(a.get(key), b.get(key), f"{prefix}{key}.")]


def test_regenerating_gives_the_committed_files_byte_for_byte(tmp_path):
    """The slow one (it trains Part B's reference model): run once, against the committed data."""
    problems = tool.stale(REPO, DATA)
    if problems:
        pytest.skip("autograder/data is stale (`make check-reference` fails): " + "; ".join(problems))
    with open(os.path.join(DATA, tool.MANIFEST)) as f:
        committed = json.load(f)
    tool.write_outputs(REPO, str(tmp_path), tool.record_parts(REPO), tool.input_hashes(REPO))
    differ = []
    for path in committed["outputs"]:
        name = os.path.basename(path)
        with open(os.path.join(DATA, name), "rb") as f1, open(tmp_path / name, "rb") as f2:
            old, new = f1.read(), f2.read()
        if old != new and name.endswith(".json"):
            keys = changed_keys(json.loads(old), json.loads(new))
            differ.append(f"{name}: {keys} differ between two recordings (a wall-clock time or an unseeded draw?)")
        elif old != new:
            differ.append(f"{name}: bytes differ between two recordings")
    assert not differ, "\n".join(differ)
