"""The instructor's regrade of a Gradescope export (issue 12, item 7; issue 10, item 6): the
export's .zip, its unzipped folder or a folder above it; one results.json per submission; a CSV
naming the submitters (submission_metadata.yml) with a notes column; a progress bar; no stop at
a broken submission; students kept apart (the export closed to others, no paths on a command
line). Real grades use ``--select part-a`` (or one function's tag) to stay fast."""
import csv
import json
import os
import shutil
import stat
import subprocess
import sys
import tempfile
import zipfile

import pytest

from autograder import regrade
from autograder.results import crash_document, export, regrade_csv, to_gradescope_dict
from autograder.results.model import TestResult as Result
from conftest import HANDOUT, REFERENCE, REPO

METADATA = """\
submission_1001:
  :submitters:
  - :name: Ada Lovelace
    :sid: '1234'
    :email: ada@example.edu
  - :name: Charles Babbage
    :sid: 99
    :email: charles@example.edu
  :created_at: 2026-11-01 10:00:00.000000000 -04:00
  :score: 12.0
submission_1002:
  :submitters:
  - :name: Grace Hopper
    :sid: '5678'
    :email: grace@example.edu
  :created_at: 2026-11-02 09:30:00.000000000 -04:00
submission_1003:
  :submitters:
  - :name: "=HYPERLINK(\\"http://x\\")"
    :sid: '9012'
    :email: alan@example.edu
submission_1004:
  :submitters:
  - :name: Barbara Liskov
    :sid: '3456'
    :email: barbara@example.edu
"""
NAMES = ["submission_1001", "submission_1002", "submission_1003"]


def make_export(root):
    """Gradescope's layout: <root>/assignment_42_export/{submission_metadata.yml, submission_*/}."""
    folder = root / "assignment_42_export"
    shutil.copytree(REFERENCE, folder / "submission_1001", ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copytree(HANDOUT, folder / "submission_1002", ignore=shutil.ignore_patterns("__pycache__", ".pytest_cache"))
    (folder / "submission_1003").mkdir()  # an empty submission
    (folder / "submission_metadata.yml").write_text(METADATA)  # 1004 is listed but has no folder
    return folder


def zip_folder(folder, path):
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as z:
        for dirpath, dirs, files in os.walk(folder):
            for d in dirs:  # folder entries too: an empty submission is an empty folder
                z.write(os.path.join(dirpath, d), os.path.relpath(os.path.join(dirpath, d), folder.parent))
            for f in files:
                full = os.path.join(dirpath, f)
                z.write(full, os.path.relpath(full, folder.parent))
    return path


def run_regrade(export_path, out, *extra):
    proc = subprocess.run([sys.executable, "-m", "autograder", "regrade", str(export_path), "--out", str(out),
                           "--select", "part-a", "--jobs", "2", *extra],
                          cwd=REPO, capture_output=True, text=True, timeout=900)
    assert proc.returncode == 0, proc.stderr
    return proc


def read_csv(path):
    with open(path, newline="", encoding="utf-8") as f:
        header, *rows = list(csv.reader(f))
    return header, {r[0]: dict(zip(header, r, strict=True)) for r in rows}


def test_regrading_the_export_zip_writes_results_and_a_named_csv_row_per_submission(tmp_path):
    folder = make_export(tmp_path / "unzipped")
    archive = zip_folder(folder, tmp_path / "assignment_42_export.zip")
    out = tmp_path / "regraded"
    unzipped_before = {n for n in os.listdir(tempfile.gettempdir()) if n.startswith("ag-export-")}
    proc = run_regrade(archive, out)
    assert "graded 3 submissions" in proc.stdout and "0 with errors" in proc.stdout
    assert "3/3" in proc.stderr  # the progress bar
    assert sorted(p for p in os.listdir(out) if os.path.isdir(out / p)) == NAMES
    documents = {n: json.loads((out / n / "results.json").read_text()) for n in NAMES}
    header, rows = read_csv(out / "summary.csv")
    assert header[:7] == ["submission", "names", "sids", "emails", "total", "part-a", "part-b"]
    assert header[-1] == "notes"
    assert header[7:-1] == [t["name"] for t in documents["submission_1001"]["tests"]]
    assert sorted(rows) == NAMES + ["submission_1004"]
    ada = rows["submission_1001"]
    assert ada["names"] == "Ada Lovelace; Charles Babbage"
    assert ada["sids"] == "1234; 99" and ada["emails"] == "ada@example.edu; charles@example.edu"
    full = sum(t["max_score"] for t in documents["submission_1001"]["tests"])
    assert full > 0 and float(ada["total"]) == float(ada["part-a"]) == full and ada["notes"] == ""
    handout, empty = rows["submission_1002"], rows["submission_1003"]
    assert (handout["names"], handout["sids"], handout["emails"]) == ("Grace Hopper", "5678", "grace@example.edu")
    assert float(handout["total"]) == float(empty["total"]) == 0
    assert handout["notes"] == "" and empty["notes"] == regrade_csv.NO_FILES  # the two rows differ
    assert empty["names"] == "'=HYPERLINK(\"http://x\")"  # never a formula in a spreadsheet
    assert rows["submission_1004"]["names"] == "Barbara Liskov" and rows["submission_1004"]["total"] == ""
    assert "no folder in the export" in rows["submission_1004"]["notes"]
    unzipped_after = {n for n in os.listdir(tempfile.gettempdir()) if n.startswith("ag-export-")}
    assert not unzipped_after - unzipped_before, "the unzipped copy is removed"


def test_the_parent_of_the_unzipped_export_is_found_not_graded_as_one_submission(tmp_path):
    make_export(tmp_path / "downloads")
    found = export.open_export(str(tmp_path / "downloads"))
    assert found.folder == str(tmp_path / "downloads" / "assignment_42_export")
    assert found.submissions == NAMES and found.has_metadata and found.without_folder == ["submission_1004"]
    assert [p["name"] for p in found.people["submission_1001"]][0] == "Ada Lovelace"
    out = tmp_path / "regraded"
    proc = run_regrade(tmp_path / "downloads", out, "--select", "mean_context")
    assert "graded 3 submissions" in proc.stdout
    _, rows = read_csv(out / "summary.csv")
    assert rows["submission_1003"]["notes"] == regrade_csv.NO_FILES and rows["submission_1001"]["names"]


def test_what_is_not_an_export_is_refused_with_a_clear_message(tmp_path):
    (tmp_path / "notes.txt").write_text("not a zip")
    for bad in (tmp_path / "notes.txt", tmp_path / "missing"):
        proc = subprocess.run([sys.executable, "-m", "autograder", "regrade", str(bad)], cwd=REPO,
                              capture_output=True, text=True, timeout=120)
        assert proc.returncode == 2 and "Gradescope's export" in proc.stderr, proc.stderr
    twice = tmp_path / "two"
    for name in ("a", "b"):
        (twice / name).mkdir(parents=True)
        (twice / name / "submission_metadata.yml").write_text("{}")
    with pytest.raises(export.ExportError, match="2 folders"):
        export.open_export(str(twice))


def test_a_zip_is_unzipped_bounded_without_escapes_or_links(tmp_path, monkeypatch):
    archive = tmp_path / "export.zip"
    with zipfile.ZipFile(archive, "w") as z:
        z.writestr("e/submission_metadata.yml", "submission_1:\n  :submitters: []\n")
        z.writestr("e/submission_1/attention.py", "x = 1\n")
        z.writestr("../escaped.py", "evil")
        z.writestr("/abs/olute.py", "evil")
        z.writestr("e/submission_1/../../../up.py", "evil")
        link = zipfile.ZipInfo("e/submission_1/link.py")
        link.external_attr = (stat.S_IFLNK | 0o777) << 16
        z.writestr(link, "/etc/passwd")
    found = export.open_export(str(archive))
    try:
        unzipped = found.temporary
        assert stat.S_IMODE(os.stat(unzipped).st_mode) == 0o700
        assert found.submissions == ["submission_1"]
        files = sorted(os.path.relpath(os.path.join(d, f), unzipped) for d, _, fs in os.walk(unzipped) for f in fs)
        assert files == ["e/submission_1/attention.py", "e/submission_metadata.yml"]
        assert any("4 zip entries were skipped" in w for w in found.warnings), found.warnings
        assert not os.path.lexists(tmp_path / "escaped.py") and not os.path.lexists("/abs/olute.py")
    finally:
        found.close()
    assert not os.path.exists(unzipped)
    monkeypatch.setattr(export, "MAX_ENTRIES", 3)
    with pytest.raises(export.ExportError, match="entries"):
        export.open_export(str(archive))
    monkeypatch.setattr(export, "MAX_ENTRIES", 100)
    monkeypatch.setattr(export, "MAX_BYTES", 10)
    with pytest.raises(export.ExportError, match="unzips to over"):
        export.open_export(str(archive))


def test_metadata_that_cannot_be_read_names_no_one_but_grades_all(tmp_path):
    folder = tmp_path / "e"
    (folder / "submission_7").mkdir(parents=True)
    (folder / "submission_metadata.yml").write_text("submission_7: [unclosed\n")
    found = export.open_export(str(folder))
    assert found.submissions == ["submission_7"] and found.people == {}
    assert any("could not be read" in w for w in found.warnings)
    (folder / "submission_metadata.yml").unlink()
    found = export.open_export(str(tmp_path))  # no metadata: the folder of submission_* folders
    assert found.folder == str(folder) and not found.has_metadata and found.submissions == ["submission_7"]


def _grader_fault_document():
    from autograder.grade import GRADER_FAULT  # the sentence the grader really writes
    tests = [Result("softmax: rows", 1, 1, "1.1.1", ["part-a", "softmax"]),
             Result("softmax: values", 1, 0, "1.1.2", ["part-a", "softmax"],
                    output=GRADER_FAULT + "(IndexError: index 3 is out of bounds)")]
    return to_gradescope_dict(tests, execution_time=1.0, output="attention.py: graded from \"attention.py\"")


class FakeGrade:
    """Stands in for the `python -m autograder grade` subprocess: checks what a student's code
    could see while it runs (the command line, the export's mode), then writes a document."""

    def __init__(self, export_folder, out, documents):
        self.export_folder, self.out, self.documents, self.seen = export_folder, out, documents, []
        self.popen = subprocess.Popen  # the real one, for a process that ends as the grade would

    def __call__(self, cmd, cwd=None, env=None, **kwargs):
        submission, results = env[regrade.SUBMISSION_ENV], env[regrade.OUT_ENV]
        name = os.path.basename(submission)
        self.seen.append({"cmd": cmd, "name": name, "export_mode": stat.S_IMODE(os.stat(self.export_folder).st_mode),
                          "out_mode": stat.S_IMODE(os.stat(self.out).st_mode),
                          "reachable": os.path.isdir(submission)})
        document = self.documents.get(name)
        if document is not None:
            with open(results, "w") as f:
                json.dump(document, f)
        return self.popen([sys.executable, "-c", f"raise SystemExit({0 if document is not None else 1})"])


def test_grader_faults_errors_and_students_kept_apart_in_the_regrade(tmp_path, monkeypatch, capsys):
    folder = make_export(tmp_path)
    os.chmod(folder, 0o755)
    out = tmp_path / "out"
    fine = to_gradescope_dict([Result("softmax: rows", 1, 1, "1.1.1", ["part-a", "softmax"]),
                               Result("Staff only: integrity notes", 0, 0, "0.9", ["part-a", "staff"], "hidden",
                                      output="part-a: the network was open")], execution_time=1.0)
    fake = FakeGrade(folder, out, {"submission_1001": fine, "submission_1002": _grader_fault_document(),
                                   "submission_1003": crash_document("Traceback ...")})
    monkeypatch.setattr(regrade.launch.subprocess, "Popen", fake)
    graded = regrade.regrade(str(tmp_path), str(out), jobs=2, select="part-a")
    assert stat.S_IMODE(os.stat(folder).st_mode) == 0o755, "the export's mode is restored"
    for seen in fake.seen:
        assert seen["export_mode"] == 0o700 and seen["out_mode"] == 0o700 and seen["reachable"]
        assert not any(str(tmp_path) in arg or "submission_" in arg for arg in seen["cmd"]), seen["cmd"]
        assert "--paths-from-env" in seen["cmd"]
    assert graded["submission_1001"][1] == ""
    assert graded["submission_1002"][1] == "grader fault in 1 test (see results.json)"
    assert "the grader crashed" in graded["submission_1003"][1]
    header, rows = read_csv(out / "summary.csv")
    assert rows["submission_1002"]["notes"] == "grader fault in 1 test (see results.json)"
    assert rows["submission_1002"]["total"] == "1.0"
    assert rows["submission_1003"]["total"] == "" and "the grader crashed" in rows["submission_1003"]["notes"]
    assert rows["submission_1001"]["notes"] == regrade_csv.STAFF_NOTES  # not an error
    assert "Staff only: integrity notes" not in header


def test_a_grade_that_hangs_or_crashes_becomes_a_row_with_a_note(tmp_path, monkeypatch):
    folder = make_export(tmp_path)
    document, error = regrade.grade_one(str(folder / "submission_1001"), str(tmp_path / "slow"), "part-a",
                                        timeout=0.05, users=None)
    assert error.startswith("timed out after 0.05 s")

    real = regrade.grade_one

    def flaky(path, *args):
        if path.endswith("submission_1002"):
            raise OSError("disk full")
        return real(path, *args)
    monkeypatch.setattr(regrade, "grade_one", flaky)
    graded = regrade.regrade(str(folder), str(tmp_path / "out"), jobs=1, select="mean_context")
    assert graded["submission_1002"] == (None, "regrade failed: OSError: disk full")
    assert graded["submission_1001"][1] == "" and graded["submission_1003"][1] == ""
    _, rows = read_csv(tmp_path / "out" / "summary.csv")
    assert rows["submission_1002"]["total"] == "" and "disk full" in rows["submission_1002"]["notes"]
    assert float(rows["submission_1001"]["total"]) > 0


def test_grade_takes_its_paths_from_the_environment(tmp_path):
    out = tmp_path / "r.json"
    env = dict(os.environ, AUTOGRADER_SUBMISSION=HANDOUT, AUTOGRADER_OUT=str(out))
    proc = subprocess.run([sys.executable, "-m", "autograder", "grade", "--paths-from-env", "--select", "softmax",
                           "--quiet"], cwd=REPO, env=env, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    assert json.loads(out.read_text())["tests"]
    del env["AUTOGRADER_OUT"]
    proc = subprocess.run([sys.executable, "-m", "autograder", "grade", "--paths-from-env"], cwd=REPO, env=env,
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2 and "AUTOGRADER_OUT" in proc.stderr


SNOOP = """

import os as _os
_SEEN = []
for _pid in _os.listdir("/proc"):
    try:
        _cmd = open(f"/proc/{_pid}/cmdline", "rb").read().replace(b"\\0", b" ")
    except OSError:
        continue
    if b"autograder" in _cmd and b" grade" in _cmd:
        _SEEN.append(_cmd.decode(errors="replace"))
_SEEN += [f"{k}={v}" for k, v in _os.environ.items() if k in ("AUTOGRADER_SUBMISSION", "AUTOGRADER_OUT")]
for _path in (EXPORT, EXPORT + "/submission_1001/attention.py", OUT + "/submission_1001/results.json"):
    try:
        _SEEN.append(str(_os.listdir(_path)) if _os.path.isdir(_path) else open(_path).read()[:200])
    except OSError as _e:
        _SEEN.append(type(_e).__name__)


def mean_context(X):
    raise RuntimeError("SEEN " + repr(_SEEN))
"""


@pytest.mark.skipif(os.geteuid() != 0, reason="students are kept apart only when the grader is root")
def test_a_submission_cannot_read_its_neighbours_in_the_export(tmp_path, request):
    base = tempfile.mkdtemp(prefix="ag-regrade-")  # readable by everyone, as an export may be (tmp_path is not)
    request.addfinalizer(lambda: shutil.rmtree(base, ignore_errors=True))
    for folder in (base, os.path.join(base, "export")):
        os.makedirs(folder, exist_ok=True)
        os.chmod(folder, 0o755)
    folder, out = os.path.join(base, "export"), os.path.join(base, "out")
    shutil.copytree(REFERENCE, os.path.join(folder, "submission_1001"), ignore=shutil.ignore_patterns("__pycache__"))
    with open(os.path.join(folder, "submission_1001", "attention.py"), "a") as f:
        f.write("\n# NEIGHBOUR-SECRET-42\n")
    os.makedirs(os.path.join(folder, "submission_1002"))
    source = open(os.path.join(REFERENCE, "attention.py")).read()
    with open(os.path.join(folder, "submission_1002", "attention.py"), "w") as f:
        f.write(source + f"\nEXPORT, OUT = {folder!r}, {out!r}\n" + SNOOP)
    with open(os.path.join(folder, "submission_metadata.yml"), "w") as f:
        f.write("submission_1001:\n  :submitters: []\nsubmission_1002:\n  :submitters: []\n")
    for path, dirs, files in os.walk(base):
        for name in dirs + files:
            os.chmod(os.path.join(path, name), 0o755 if name in dirs else 0o644)
    proc = subprocess.run([sys.executable, "-m", "autograder", "regrade", folder, "--out", out,
                           "--select", "mean_context"], cwd=REPO, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr
    outputs = [t["output"] for t in json.load(open(os.path.join(out, "submission_1002", "results.json")))["tests"]]
    seen = next(o for o in outputs if "SEEN " in o)
    assert "PermissionError" in seen, seen[:2000]  # the export and the results were closed to the student
    assert "NEIGHBOUR-SECRET-42" not in seen and "submission_1001" not in seen, seen[:2000]
    assert folder not in seen.replace(f"EXPORT, OUT = {folder!r}", ""), seen[:2000]  # no path on a command line
    assert stat.S_IMODE(os.stat(folder).st_mode) == 0o755
