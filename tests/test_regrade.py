"""The instructor's regrade of a Gradescope export: one results.json per submission, a CSV
summary, a progress bar, and no stop at a broken submission. Part A only, to stay fast."""
import csv
import json
import os
import shutil
import subprocess
import sys

import pytest

from autograder import regrade
from conftest import HANDOUT, REFERENCE, REPO


@pytest.fixture
def export(tmp_path):
    root = tmp_path / "export"
    shutil.copytree(REFERENCE, root / "submission_1001")
    shutil.copytree(HANDOUT, root / "submission_1002")
    (root / "submission_1003").mkdir()  # an empty submission
    (root / "submission_metadata.yml").write_text("submission_1001:\n  :submitters: []\n")
    return root


def test_regrade_writes_results_and_a_summary_row_per_submission(export, tmp_path):
    out = tmp_path / "regraded"
    proc = subprocess.run([sys.executable, "-m", "autograder", "regrade", str(export), "--out", str(out),
                           "--select", "part-a", "--jobs", "2"], cwd=REPO, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr
    assert "graded 3 submissions" in proc.stdout and "0 with errors" in proc.stdout
    assert "3/3" in proc.stderr  # the progress bar
    names = ["submission_1001", "submission_1002", "submission_1003"]
    assert sorted(p for p in os.listdir(out) if os.path.isdir(out / p)) == names
    documents = {n: json.loads((out / n / "results.json").read_text()) for n in names}
    with open(out / "summary.csv", newline="") as f:
        header, *rows = list(csv.reader(f))
    assert header[:4] == ["submission", "total", "part-a", "part-b"] and header[-1] == "error"
    assert header[4:-1] == [t["name"] for t in documents["submission_1001"]["tests"]]
    by_name = {r[0]: dict(zip(header, r)) for r in rows}
    assert sorted(by_name) == names
    full = sum(t["max_score"] for t in documents["submission_1001"]["tests"])
    assert full > 0 and float(by_name["submission_1001"]["total"]) == float(by_name["submission_1001"]["part-a"]) == full
    assert float(by_name["submission_1002"]["total"]) == float(by_name["submission_1003"]["total"]) == 0
    assert all(r["error"] == "" and float(r["part-b"]) == 0 for r in by_name.values())


def test_a_grade_that_hangs_or_crashes_becomes_a_row_with_an_error(export, tmp_path, monkeypatch):
    document, error = regrade.grade_one(str(export / "submission_1001"), str(tmp_path / "slow"), "part-a",
                                        timeout=0.05, users=None)
    assert document is None and "longer than 0.05 s" in error

    real = regrade.grade_one

    def flaky(folder, *args):
        if folder.endswith("submission_1002"):
            raise OSError("disk full")
        return real(folder, *args)
    monkeypatch.setattr(regrade, "grade_one", flaky)
    graded = regrade.regrade(str(export), str(tmp_path / "out"), jobs=1, select="part-a")
    assert graded["submission_1002"] == (None, "regrade failed: OSError: disk full")
    assert graded["submission_1001"][1] == "" and graded["submission_1003"][1] == ""
    with open(tmp_path / "out" / "summary.csv", newline="") as f:
        rows = {r["submission"]: r for r in csv.DictReader(f)}
    assert rows["submission_1002"]["total"] == "" and "disk full" in rows["submission_1002"]["error"]
    assert float(rows["submission_1001"]["total"]) > 0
