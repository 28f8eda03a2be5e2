"""Attacks change nothing. Each attack of tests/attacks/ is appended to a wrong version of the
reference (so an attack that raised the score would show) and graded through
``python -m autograder grade`` in a subprocess, as Gradescope runs it (as root in CI): the score
never exceeds the same code's honest score, tests the attack does not touch score the same,
results.json is the grader's and valid, nothing the student's code started survives the grade.
Part A only where the attack does not need Part B; Part B's tests that need no training."""
import json
import os
import shutil
import tempfile
import time

import pytest

from attacks import kit
from autograder.grade import grade
from autograder.sandbox import limits

ROOT = limits.running_as_root()
as_root = pytest.mark.skipif(not ROOT, reason="the attacks on the grader are only defended as root")
BUDGET = 420  # grade()'s time budget


@pytest.fixture(scope="module")
def workdir():
    """A folder the sandbox user can reach, like /autograder (pytest's tmp_path is private)."""
    path = tempfile.mkdtemp(prefix="ag-test-attacks-")
    os.chmod(path, 0o755)
    yield path
    shutil.rmtree(path, ignore_errors=True)


@pytest.fixture(scope="module")
def honest_a(workdir):
    sub = kit.submission(os.path.join(workdir, "honest-a"), attention=kit.source("attention"))
    return grade(sub, os.path.join(workdir, "honest-a.json"), ["part-a"])


@pytest.fixture(scope="module")
def honest_b(workdir):
    sub = kit.submission(os.path.join(workdir, "honest-b"), gpt=kit.source("gpt"))
    return grade(sub, os.path.join(workdir, "honest-b.json"), kit.PART_B_QUICK.split(","))


def attack(workdir, name, module="attention", attacks=None, select="part-a", out_mode=0o755, **modules):
    """Grade the wrong ``module`` plus ``attacks`` (default: ``name``) by the command line."""
    folder = os.path.join(workdir, name)
    modules.setdefault(module, kit.source(module, attacks=attacks or [name]))
    sub = kit.submission(os.path.join(folder, "submission"), **modules)
    results = os.path.join(folder, "results")
    os.makedirs(results, exist_ok=True)
    os.chmod(results, out_mode)
    document, seconds, proc = kit.grade_cli(sub, os.path.join(results, "results.json"), select)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert kit.valid(document) and document["execution_time"] < BUDGET
    print(f"{name}: {seconds:.1f} s, score {document['score']}")
    return document, proc, os.path.join(results, "results.json")


def mean_context_outputs(document):
    return "\n".join(t["output"] for t in document["tests"] if "mean_context" in t["tags"])


@as_root
def test_monkeypatching_numpy_unittest_pytest_and_gradescope_utils_changes_nothing(workdir, honest_a):
    document, _, _ = attack(workdir, "patch_frameworks")
    kit.assert_not_better(document, honest_a)


@as_root
def test_monkeypatching_in_the_student_process_never_reaches_the_grader_process(workdir, honest_a):
    import unittest

    import numpy as np
    before = (np.allclose, unittest.TestCase.assertTrue)
    attacked = kit.source("attention", attacks=["patch_frameworks"])
    sub = kit.submission(os.path.join(workdir, "inproc"), attention=attacked)
    document = grade(sub, os.path.join(workdir, "inproc.json"), ["part-a"])
    assert (np.allclose, unittest.TestCase.assertTrue) == before
    kit.assert_not_better(document, honest_a)
    with open(os.path.join(workdir, "inproc.json")) as f:
        assert json.load(f) == document


@as_root
def test_monkeypatching_torch_in_part_b_changes_nothing(workdir, honest_b):
    document, _, _ = attack(workdir, "patch_frameworks_b", module="gpt", attacks=["patch_frameworks"],
                            select=kit.PART_B_QUICK)
    kit.assert_not_better(document, honest_b)


@pytest.mark.parametrize("name, says", [("exit_at_import", "sys.exit(0)"), ("os_exit_at_import", "exit code 0")])
@as_root
def test_exiting_at_import_scores_zero_with_a_message(workdir, honest_a, name, says):
    document, _, _ = attack(workdir, name)
    kit.assert_not_better(document, honest_a, affected=["part-a"])
    assert document["score"] == 0
    assert all("attention.py could not be imported" in t["output"] and says in t["output"] for t in document["tests"])


@as_root
def test_fake_results_printed_by_the_student_reach_neither_the_grader_nor_the_results(workdir, honest_a):
    document, proc, _ = attack(workdir, "fake_output")
    kit.assert_not_better(document, honest_a)
    assert "100.0" not in proc.stdout + proc.stderr and "All tests passed" not in proc.stdout + proc.stderr
    assert "FAKE-OUTPUT-REACHED-GRADER" not in kit.outputs(document)


@pytest.mark.parametrize("out_mode", [0o755, 0o777])
@as_root
def test_writing_results_json_anywhere_changes_nothing(workdir, honest_a, out_mode):
    """Also with a world-writable results folder, where the student may replace the file while
    grading: the final atomic write, after every student process is dead, wins."""
    document, _, path = attack(workdir, f"write_results_{out_mode:o}", attacks=["write_results"], out_mode=out_mode)
    kit.assert_not_better(document, honest_a, affected=["mean_context"])
    report = mean_context_outputs(document)
    assert "write_results outcomes" in report
    if out_mode == 0o755:  # protected: every attempt on the real file was refused
        assert f"DONE write {path}" not in report and f"DONE replace {path}" not in report
    with open(path) as f:
        assert json.load(f)["tests"] == document["tests"]


@as_root
def test_killing_the_grader_fails_only_the_attacking_function(workdir, honest_a):
    document, _, _ = attack(workdir, "kill_parent")
    kit.assert_not_better(document, honest_a, affected=["mean_context"])


@as_root
def test_a_background_process_cannot_rewrite_the_results_after_grading(workdir, honest_a):
    document, _, path = attack(workdir, "escape_and_rewrite", out_mode=0o777)
    assert kit.processes_with("ag-attack-sleeper") == []
    time.sleep(1.5)  # the sleeper would rewrite every 0.1 s for 10 s
    with open(path) as f:
        assert json.load(f) == document
    kit.assert_not_better(document, honest_a)


@as_root
def test_the_hidden_solution_and_expected_outputs_cannot_be_read(workdir, honest_a):
    document, _, _ = attack(workdir, "read_secrets")
    kit.assert_not_better(document, honest_a, affected=["mean_context"])
    report = mean_context_outputs(document)
    assert "read_secrets: 0 read" in report and "LEAKED" not in report, report[:2000]
    assert "reference/attention.py: PermissionError" in report


@as_root
def test_the_worker_cannot_be_altered_for_the_next_call(workdir, honest_a):
    document, _, _ = attack(workdir, "alter_worker")
    kit.assert_not_better(document, honest_a, affected=["mean_context"])
    assert "WORKER-ALTERED" not in kit.outputs(document)
    report = mean_context_outputs(document)
    assert "refused" in report and "ALTERED" not in report.replace("WORKER-ALTERED", ""), report[:2000]


@as_root
def test_forged_answers_and_junk_on_the_channel_fail_only_the_forging_call(workdir, honest_a):
    document, _, _ = attack(workdir, "channel_junk")
    kit.assert_not_better(document, honest_a, affected=["mean_context"])


@as_root
def test_a_memory_bomb_fails_its_function_and_the_whole_grade_stays_under_768_mb(workdir, honest_a):
    with kit.PeakMemory(limits.sandbox_user()[1]) as peak:
        document, _, _ = attack(workdir, "memory_bomb")
    assert peak.peak < 768 * 2**20, f"{peak.peak / 2**20:.0f} MB"
    assert "memory" in mean_context_outputs(document)
    kit.assert_not_better(document, honest_a, affected=["mean_context"])
    print(f"memory bomb: peak of all processes {peak.peak / 2**20:.0f} MB")


def test_a_hang_fails_its_function_only_and_the_grade_ends(workdir, honest_a):
    sub = kit.submission(os.path.join(workdir, "hang"), attention=kit.source("attention", attacks=["hang"]))
    document = grade(sub, os.path.join(workdir, "hang.json"), ["part-a"], sandbox_options={"timeout": 3})
    assert kit.valid(document)
    assert "did not finish within 3 s" in mean_context_outputs(document)
    kit.assert_not_better(document, honest_a, affected=["mean_context"])
    print(f"hang: {document['execution_time']:.1f} s")


@as_root
def test_an_attack_in_one_part_leaves_the_other_part_graded(workdir, honest_a, honest_b):
    """attention.py escapes into the background and exits at import; gpt.py is graded as usual."""
    document, _, path = attack(workdir, "whole_grade", attacks=["escape_and_rewrite", "os_exit_at_import"],
                               select="part-a," + kit.PART_B_QUICK, out_mode=0o777, gpt=kit.source("gpt"))
    part_a = [t for t in document["tests"] if t["tags"][0] == "part-a"]
    assert part_a and all(t["score"] == 0 for t in part_a)
    honest = {"tests": honest_a["tests"] + honest_b["tests"], "score": honest_a["score"] + honest_b["score"]}
    kit.assert_not_better(document, honest, affected=["part-a"])
    assert kit.processes_with("ag-attack-sleeper") == []
    time.sleep(1)
    with open(path) as f:
        assert json.load(f) == document


# ---- forged verdicts: only raw outputs the parent re-checks count (docs/THREAT_MODEL.md) -------------
def _attack_text(name):
    with open(os.path.join(kit.HERE, f"{name}.py"), encoding="utf-8") as f:
        return f.read()


@as_root
def test_a_gpt_with_no_model_that_forges_every_op_scores_zero_on_part_b(workdir):
    sub = kit.submission(os.path.join(workdir, "forge-ops"), gpt=_attack_text("forge_op_table"))
    document, _, proc = kit.grade_cli(sub, os.path.join(workdir, "forge-ops.json"), "part-b")
    assert proc.returncode == 0 and kit.valid(document)
    part_b = [t for t in document["tests"] if t["tags"][0] == "part-b"]
    assert len(part_b) > 20 and sum(t["score"] for t in part_b) == 0, \
        [(t["number"], t["score"], t["output"][:200]) for t in part_b if t["score"]]
    assert document["leaderboard"] == []


@as_root
def test_forging_the_training_run_and_the_sampler_scores_no_more_than_the_same_model_honestly(workdir):
    honest_text = kit.source("gpt", wrong=False) + "\n\nFORGE = False\n" + _attack_text("forge_training")
    forged_text = kit.source("gpt", wrong=False) + "\n\n" + _attack_text("forge_training")
    docs = {}
    for name, text in (("honest", honest_text), ("forged", forged_text)):
        sub = kit.submission(os.path.join(workdir, f"garbage-{name}"), gpt=text)
        docs[name], _, proc = kit.grade_cli(sub, os.path.join(workdir, f"garbage-{name}.json"), "part-b")
        assert proc.returncode == 0 and kit.valid(docs[name])
    kit.assert_not_better(docs["forged"], docs["honest"], affected=["part-b"])
    quality = [t for t in docs["forged"]["tests"] if t["number"].startswith("2.7.")]
    assert quality and all(t["score"] == 0 for t in quality), [t["output"][:300] for t in quality]
    assert docs["forged"]["leaderboard"] == [] and docs["honest"]["score"] < 50


@as_root
def test_a_submission_that_only_raises_value_error_scores_nothing(workdir):
    text = _attack_text("raise_value_error")
    sub = kit.submission(os.path.join(workdir, "refuse"), attention=text, gpt=text)
    document, _, proc = kit.grade_cli(sub, os.path.join(workdir, "refuse.json"),
                                      "part-a,GPT,sample_next_token,perplexity")
    assert proc.returncode == 0 and kit.valid(document)
    assert document["score"] == 0, [(t["number"], t["score"]) for t in document["tests"] if t["score"]]


def _fingerprint(args):
    import numpy as np
    return [f"{float(np.sum(np.asarray(a, dtype=float))):.9e}" for a in args
            if isinstance(a, np.ndarray) and a.dtype.kind == "f" and a.size > 1]


@as_root
def test_hidden_inputs_never_reach_code_that_runs_visible_tests(workdir):
    """A relay writes every call's inputs to /tmp and fails the last visible test of Part A with
    what it saw: it saw no input of a hidden test (those go to a fresh worker, after every
    visible-phase process is dead), while the last hidden test shows hidden inputs did arrive."""
    from autograder.checks.part_a.base import inputs
    sub = kit.submission(os.path.join(workdir, "relay"),
                         attention=kit.source("attention", wrong=False, attacks=["relay_inputs"]))
    document, _, proc = kit.grade_cli(sub, os.path.join(workdir, "relay.json"), "part-a")
    assert proc.returncode == 0 and kit.valid(document)
    tests = {t["number"]: t for t in document["tests"]}
    visible, hidden = tests["1.12.1"], tests["1.12.2"]
    assert visible["visibility"] == "visible" and hidden["visibility"] != "visible"
    assert "RELAY-BEGIN" in visible["output"] and "RELAY-BEGIN" in hidden["output"]
    hidden_only = [fp for case in ("sdpa.future_changed", "block.future_changed", "mha.noncausal", "ln.tiny",
                                   "softmax.shifted", "rope.positions") for fp in _fingerprint(inputs(case).values())]
    seen_visible = [t["output"] for t in document["tests"] if t["visibility"] == "visible"] + [document["output"]]
    leaked = [fp for fp in hidden_only if any(fp in text for text in seen_visible)]
    assert not leaked, leaked
    assert any(fp in hidden["output"] for fp in _fingerprint(inputs("sdpa.future_changed").values()))
