"""The TA's expected outputs: `make reference` records only the parts whose inputs changed,
`make check-reference` names whatever is stale without running anything, and a recording on any
machine with the pinned versions agrees with the committed one within tolerances far tighter
than grading's (bytes are compared only between two recordings on the same machine)."""
import importlib.util
import os
import subprocess
import sys
import time

import numpy as np
import pytest

from autograder.checks import data
from conftest import REPO

DATA = os.path.join(REPO, "autograder", "data")
# relative tolerances of a re-recording against the committed data (grading's is 1e-4 + 1e-5)
TOLERANCE = {"float64": 1e-12, "float32": 1e-5}
THRESHOLDS = 1e-3  # values a training run calibrates (the reference's validation loss ...)


def _load_tool():
    spec = importlib.util.spec_from_file_location("make_reference", os.path.join(REPO, "tools", "make_reference.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


tool = _load_tool()


@pytest.fixture
def project(tmp_path, monkeypatch):
    """A copy of every input file, and outputs recorded from made-up values (nothing is run)."""
    for files in (f for _, fs in tool.PARTS.values() for f in fs):
        os.makedirs(tmp_path / os.path.dirname(files), exist_ok=True)
        with open(os.path.join(REPO, files), "rb") as src, open(tmp_path / files, "wb") as dst:
            dst.write(src.read())
    values = {"part_a": {"softmax.rows": 1}, "part_b": {"forward.idx": 2}}
    monkeypatch.setattr(tool, "case_values", lambda part, root: values[part])
    recorded = {"part_a": ({"softmax.rows": np.arange(6.0).reshape(2, 3)}, {"params.femto": 123}),
                "part_b": ({"forward.logits": np.ones((1, 2, 3), np.float32)}, {"quality": {"seed": 7}})}
    inputs = {p: tool.input_hashes(str(tmp_path), p) for p in tool.PARTS}
    manifest = tool.write_outputs(str(tmp_path / tool.DATA), recorded, inputs)
    return tmp_path, manifest, values


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


def test_the_manifest_records_each_parts_inputs_outputs_seeds_and_versions(project):
    _, manifest, _ = project
    parts = manifest["parts"]
    assert sorted(parts) == ["part_a", "part_b"]
    assert "reference/attention.py" in parts["part_a"]["inputs"] and "cases" in parts["part_a"]["inputs"]
    assert "reference/gpt.py" in parts["part_b"]["inputs"] and "reference/gpt.py" not in parts["part_a"]["inputs"]
    assert parts["part_b"]["seeds"] == {"quality.seed": 7}
    assert set(parts["part_a"]["versions"]) == {"python", "numpy", "torch"}
    assert sorted(parts["part_a"]["outputs"]) == ["autograder/data/part_a.json", "autograder/data/part_a.npz"]


def test_check_passes_on_fresh_outputs(project, capsys):
    code, out = check(project[0], capsys)
    assert code == 0 and "part_a is up to date" in out and "part_b is up to date" in out


def test_a_changed_file_makes_only_its_part_stale_and_only_that_part_is_recorded(project, capsys):
    root = project[0]
    with open(root / "reference" / "attention.py", "a") as f:
        f.write("\n# an edit\n")
    code, out = check(root, capsys)
    assert code == 1 and "part_a: input changed since the last recording: reference/attention.py" in out
    assert "part_b:" not in out and "make reference" in out
    assert tool.to_record(tool.stale(str(root), str(root / tool.DATA))) == ["part_a"]
    assert tool.to_record(tool.stale(str(root), str(root / tool.DATA)), force=True) == ["part_a", "part_b"]


def test_changed_case_values_make_their_part_stale_but_a_reworded_check_does_not(project, capsys):
    root, _, values = project
    values["part_b"]["forward.idx"] = 3
    code, out = check(root, capsys)
    assert code == 1 and "part_b: input changed since the last recording: cases" in out and "part_a:" not in out


def test_check_names_an_output_edited_by_hand_or_missing(project, capsys):
    root = project[0]
    with open(root / tool.DATA / "part_a.json", "a") as f:
        f.write(" ")
    os.unlink(root / tool.DATA / "part_b.npz")
    code, out = check(root, capsys)
    assert code == 1 and "output differs from what was recorded (edited by hand?): autograder/data/part_a.json" in out
    assert "output missing: autograder/data/part_b.npz" in out


def test_check_without_a_manifest_says_so(tmp_path, capsys):
    code, out = check(tmp_path, capsys)
    assert code == 1 and "manifest.json is missing" in out


def test_check_runs_nothing_and_is_fast():
    outputs = sorted(os.listdir(DATA))
    mtimes = [os.stat(os.path.join(DATA, n)).st_mtime_ns for n in outputs]
    start = time.monotonic()
    subprocess.run([sys.executable, os.path.join(REPO, "tools", "make_reference.py"), "--check"], check=True,
                   capture_output=True)
    assert time.monotonic() - start < 10
    assert [os.stat(os.path.join(DATA, n)).st_mtime_ns for n in outputs] == mtimes


def differences(old, new, path=""):
    """Where two recordings differ by more than TOLERANCE (arrays) or THRESHOLDS / 1e-5 (JSON numbers)."""
    if isinstance(old, dict) and isinstance(new, dict):
        if set(old) != set(new):
            return [f"{path}: keys {sorted(set(old) ^ set(new))}"]
        return [d for k in sorted(old) for d in differences(old[k], new[k], f"{path}.{k}".strip("."))]
    if isinstance(old, np.ndarray):
        if old.dtype != new.dtype or old.shape != new.shape:
            return [f"{path}: {old.dtype}{old.shape} became {new.dtype}{new.shape}"]
        if old.dtype.kind != "f":
            return [] if np.array_equal(old, new) else [f"{path}: values differ"]
        rtol = TOLERANCE[str(old.dtype)]
        scale = max(float(np.abs(old[np.isfinite(old)]).max(initial=0)), 1e-30)
        bad = ~np.isclose(old, new, rtol=rtol, atol=rtol * scale, equal_nan=True)
        if bad.any():
            return [f"{path}: {int(bad.sum())} values differ by up to {np.abs(old - new)[bad].max():.3g}"]
        return []
    if isinstance(old, float) and isinstance(new, (int, float)):
        rtol = THRESHOLDS if path.startswith("quality.") else 1e-5
        return [] if np.isclose(old, new, rtol=rtol, atol=0) else [f"{path}: {old!r} became {new!r}"]
    if isinstance(old, list) and isinstance(new, list) and len(old) == len(new):
        return [d for i, (a, b) in enumerate(zip(old, new)) for d in differences(a, b, f"{path}[{i}]")]
    return [] if old == new else [f"{path}: {old!r} became {new!r}"]


def test_re_recording_agrees_with_the_committed_data_within_tolerance_and_repeats_byte_for_byte(tmp_path):
    """The slow one (it trains Part B's reference model, twice): values against the committed
    files, which another machine recorded (its last bits differ); bytes between two recordings here."""
    stale = [p for ps in tool.stale(REPO, DATA).values() for p in ps]
    if stale:
        pytest.skip("autograder/data is stale (`make check-reference` fails): " + "; ".join(stale))
    inputs = {p: tool.input_hashes(REPO, p) for p in tool.PARTS}
    for run in ("first", "second"):
        tool.write_outputs(str(tmp_path / run), tool.record_parts(REPO), inputs)
    problems = []
    for part in tool.PARTS:
        # read as grading reads them, but uncached (__wrapped__): a cached read may predate a recording
        old, new = DATA, str(tmp_path / "first")
        problems += differences(data.arrays.__wrapped__(part, old), data.arrays.__wrapped__(part, new), part)
        problems += differences(data.meta.__wrapped__(part, old), data.meta.__wrapped__(part, new),
                                part.replace("part_b", "").replace("part_a", ""))
        for ext in ("npz", "json"):
            first = (tmp_path / "first" / f"{part}.{ext}").read_bytes()
            if first != (tmp_path / "second" / f"{part}.{ext}").read_bytes():
                problems.append(f"{part}.{ext}: two recordings on this machine differ (an unseeded draw or a clock?)")
    assert not problems, "\n".join(problems)
