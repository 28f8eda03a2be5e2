"""The handout's public tests and train.py, run as students run them: they pass on the
reference and on every correct variant of the catalog, fail on the stubs and on the common
mistakes, find the homework where the student typed the command, and need torch for Part B
only; train.py reports progress within seconds, on one thread, with plain plot labels."""

import os
import re
import shutil
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
REFERENCE = ROOT / "reference"
HANDOUT = ROOT / "handout"

# (a) the public tests pass on the reference and fail on the stubs

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
    if (HANDOUT / "gpt.py").is_file():
        files.append("tests/test_gpt.py")
    results = _run_public_tests(HANDOUT, files, tmp_path)
    wrong = {name: text for name, text in results.items()
             if text is None or "not implemented yet" not in text}
    assert not wrong, "on the stubs, these public tests do not fail with 'not implemented yet':\n" \
        + "\n".join(f"{name}: {'passed' if text is None else text}" for name, text in wrong.items())


# (b) the public tests catch the common mistakes and pass on every correct variant

CATCHES = {  # catalog bug id -> (public test file, the public test that must fail)
    "a_sdpa_no_sqrt": ("test_attention.py", "test_lecture_example_with_dk_4_divides_the_scores_by_sqrt_dk"),
    "a_sdpa_divides_by_dk": ("test_attention.py",
                             "test_lecture_example_with_dk_4_divides_the_scores_by_sqrt_dk"),
    "b_attn_no_scaling": ("test_gpt.py", "test_attention_divides_the_scores_by_sqrt_of_the_head_size"),
    "b_attn_divides_by_head_size": ("test_gpt.py",
                                    "test_attention_divides_the_scores_by_sqrt_of_the_head_size"),
    "b_sample_temperature_multiplies": (
        "test_gpt.py", "test_sample_next_token_at_temperature_one_half_follows_softmax_of_logits_over_temperature"),
    "b_sample_temperature_after_softmax": (
        "test_gpt.py", "test_sample_next_token_at_temperature_one_half_follows_softmax_of_logits_over_temperature"),
}


def _catalog():
    import catalog  # tests/catalog: mutations of reference/ (the tests folder is on sys.path)
    return catalog


@pytest.mark.parametrize("bug_id", sorted(CATCHES))
def test_a_public_test_catches_the_common_mistake(bug_id, tmp_path):
    catalog = _catalog()
    entry = next((e for e in catalog.bugs() if e.id == bug_id), None)
    assert entry is not None, f"tests/catalog has no bug {bug_id!r} any more: update CATCHES"
    folder = Path(catalog.materialize(entry, str(tmp_path / "submission")))
    test_file, test_name = CATCHES[bug_id]
    results = _run_public_tests(folder, [f"tests/{test_file}", "-k", test_name], tmp_path)
    [(name, failure)] = [(n, t) for n, t in results.items() if n.endswith("." + test_name)]
    assert failure is not None, f"{name} passes on the bug {bug_id} ({entry.note or entry.broken})"
    assert "not implemented yet" not in failure, failure


def _folder_variants():
    return [e for e in _catalog().variants() if e.layout == "folder"]


@pytest.mark.parametrize("entry", _folder_variants(), ids=lambda e: e.id)
def test_public_tests_pass_on_every_correct_variant(entry, tmp_path):
    folder = Path(_catalog().materialize(entry, str(tmp_path / "submission")))
    tested = {"attention.py": "tests/test_attention.py", "gpt.py": "tests/test_gpt.py"}
    files = sorted({tested[entry.file], *(tested[name] for name in entry.more if name in tested)})
    results = _run_public_tests(folder, files, tmp_path)
    failed = {name: text for name, text in results.items() if text is not None}
    assert not failed, f"public tests fail on the correct variant {entry.id}:\n" + "\n".join(
        f"{name}: {text}" for name, text in failed.items())


# (c) where the public tests look, and what they need

def _public_tests_via_make(cwd, hw_dir):
    """`HW_DIR=<hw_dir> make -C <handout> test` typed in a shell in the folder cwd."""
    make = shutil.which("make")
    if make is None:
        pytest.skip("make is not installed")
    env = {k: v for k, v in os.environ.items() if k not in ("PWD", "HW_DIR", "MAKEFLAGS", "MAKELEVEL")}
    env.update(HW_DIR=hw_dir, PYTHONDONTWRITEBYTECODE="1")
    return subprocess.run(["sh", "-c", 'exec make -C "$1" test PYTHON="$2"', "sh", str(HANDOUT),
                           sys.executable], cwd=cwd, env=env, capture_output=True, text=True,
                          timeout=300)


def test_relative_hw_dir_is_the_folder_the_command_was_typed_in(tmp_path):
    student = tmp_path / "my homework"  # a space, as in many students' folders
    student.mkdir()
    for name in ("attention.py", "gpt.py"):
        shutil.copy(REFERENCE / name, student / name)
    proc = _public_tests_via_make(student, ".")
    out = proc.stdout + proc.stderr
    assert proc.returncode == 0, f"the public tests did not pass on a copy of reference/:\n{out}"
    assert " failed" not in out and " passed" in out, out
    # the header names the files tested, with their full paths
    assert f"testing {student / 'attention.py'}" in out, out
    assert f"testing {student / 'gpt.py'}" in out, out


def test_default_hw_dir_is_the_handout_and_the_header_says_so(tmp_path):
    proc = _public_tests_via_make(tmp_path, "")
    out = proc.stdout + proc.stderr
    assert proc.returncode != 0 and "not implemented yet" in out, out
    assert f"testing {HANDOUT / 'attention.py'}" in out, out


def test_a_missing_homework_file_skips_only_its_own_tests(tmp_path):
    shutil.copy(REFERENCE / "attention.py", tmp_path / "attention.py")
    proc = _public_tests_via_make(tmp_path, str(tmp_path))
    out = proc.stdout + proc.stderr
    assert proc.returncode == 0, out
    assert f"missing {tmp_path / 'gpt.py'}" in out and "test_gpt.py was not run" in out, out
    assert "test_attention.py" in out and " passed" in out, out


def test_part_a_tests_run_without_torch(tmp_path):
    """With torch missing, Part A's public tests pass and Part B's are skipped, saying why."""
    report = tmp_path / "report.xml"
    script = ("import sys; sys.modules['torch'] = None  # import torch now fails\n"
              "import pytest; sys.exit(pytest.main(['-p', 'no:cacheprovider', "
              f"'--junitxml={report}', 'tests']))")
    env = {**os.environ, "HW_DIR": str(REFERENCE), "PYTHONDONTWRITEBYTECODE": "1"}
    proc = subprocess.run([sys.executable, "-c", script], cwd=HANDOUT, env=env,
                          capture_output=True, text=True, timeout=300)
    out = proc.stdout + proc.stderr
    assert proc.returncode == 0, out
    suite = next(ET.parse(report).iter("testsuite"))
    assert int(suite.get("errors")) == 0 and int(suite.get("failures")) == 0, out
    assert int(suite.get("tests")) >= 20, out  # Part A's tests ran
    assert "SKIPPED" in out and "Part B needs PyTorch" in out, out
    assert "torch is not installed" in out, out  # the header says it too


# (d) train.py: fast feedback, one thread, defaults in --help, plain tick labels

def _training_folder(tmp_path):
    """A student's folder: the handout's train.py and corpus.py with the reference's gpt.py."""
    for name in ("train.py", "corpus.py"):
        shutil.copy(HANDOUT / name, tmp_path / name)
    for name in ("gpt.py", "attention.py"):
        shutil.copy(REFERENCE / name, tmp_path / name)
    return tmp_path


def _python(args, cwd, timeout=300):
    env = {**os.environ, "MPLBACKEND": "Agg", "PYTHONDONTWRITEBYTECODE": "1"}
    return subprocess.run([sys.executable, *args], cwd=cwd, env=env, capture_output=True,
                          text=True, timeout=timeout)


def test_train_py_prints_progress_early_and_writes_its_outputs(tmp_path):
    folder = _training_folder(tmp_path)
    proc = _python(["train.py", "--steps", "12", "--eval-every", "100", "--train-sentences", "300",
                    "--n-layer", "1", "--n-head", "2", "--n-embd", "16", "--block-size", "32",
                    "--sample-tokens", "20", "--out", "run"], folder)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    lines = proc.stdout.splitlines()
    assert "1 torch thread (--threads)" in proc.stdout, proc.stdout
    steps = [line.split("|")[0].split()[1] for line in lines if line.startswith("step ")]
    assert steps == ["10/12", "12/12"], proc.stdout  # a line after 10 steps, then the evaluation
    assert "val " in lines[[i for i, line in enumerate(lines) if line.startswith("step ")][-1]]
    for name in ("loss.png", "samples.txt", "model.pt"):
        assert (folder / "run" / name).stat().st_size > 0, name


def test_train_py_help_shows_the_defaults(tmp_path):
    proc = _python(["train.py", "--help"], _training_folder(tmp_path))
    assert proc.returncode == 0, proc.stderr
    text = " ".join(proc.stdout.split())
    for default in ("(default: 1200)", "(default: out)", "(default: 0.01)", "(default: 64)"):
        assert default in text, text
    assert "--threads" in text and "(default: 1)" in text.split("--threads", 2)[-1], text


def test_train_py_log_axes_label_ticks_with_plain_numbers(tmp_path):
    script = """
import matplotlib.pyplot as plt
import train
for low, high in [(0.34, 3.1), (1.4, 2.8), (0.01, 30.0)]:
    fig, ax = plt.subplots()
    ax.plot([0, 1], [low, high])
    ax.set_yscale("log")
    train._plain_log_ticks(ax)
    fig.canvas.draw()
    labels = [t.get_text() for t in ax.get_yticklabels() + ax.get_yticklabels(minor=True)]
    print(low, high, [x for x in labels if x])
"""
    proc = _python(["-c", script], _training_folder(tmp_path))
    assert proc.returncode == 0, proc.stderr
    rows = proc.stdout.strip().splitlines()
    assert len(rows) == 3, proc.stdout
    for row in rows:
        labels = row.split("[", 1)[1]
        assert labels.count("'") >= 4, row  # at least two labels
        assert not re.search(r"\\times|\^|e[-+−]|10\^", labels), row  # no 4x10^-1, no 1e-01
    assert "'0.4'" in rows[0] and "'2'" in rows[0], rows[0]
    assert "'1.6'" in rows[1], rows[1]
