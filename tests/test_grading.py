"""The graded tests judge right, on the catalog's code (tests/catalog): the reference gets full
marks, the untouched handout zero, each bug loses points on its own tests and, where the grader
promises it, nowhere else, and a known bug is named. `make validate` grades the whole catalog;
this file grades, in this process, the entries that prove those promises (Part B without the
grader's training run, except where training is the point)."""
import math
import os

import numpy as np
import pytest

from autograder.checks import contract
from catalog import entries, materialize
from conftest import HANDOUT, REFERENCE, lost_points

POINTS = {part: sum(names.values()) for part, names in contract.points().items()}  # as declared
BY_ID = {e.id: e for e in entries()}
# who calls whom in sources/einsum_attention.py: a bug in a key may also cost the tests of its values
CALLERS = {
    "softmax": {"scaled_dot_product_attention", "multi_head_attention", "transformer_block"},
    "causal_mask": {"scaled_dot_product_attention", "multi_head_attention", "transformer_block"},
    "scaled_dot_product_attention": {"multi_head_attention", "transformer_block"},
    "multi_head_attention": {"transformer_block"},
    "layer_norm": {"transformer_block"}, "gelu": {"transformer_block"},
}


def lost(document):
    return {t["number"]: t for t in document["tests"] if t["score"] < t["max_score"]}


def explain(document):
    return "\n".join(f"{n} {t['name']}: {t['output'][:400]}" for n, t in sorted(lost(document).items()))


@pytest.fixture(scope="module")
def reference(tmp_path_factory):
    from autograder.grade import grade
    return grade(REFERENCE, str(tmp_path_factory.mktemp("reference") / "results.json"))


@pytest.fixture
def without_training(monkeypatch):
    """Grade without the training-quality tests (2.7.x) and the leaderboard."""
    import autograder.grade
    from autograder.checks import collect, metadata

    def collect_untrained(select=None):
        return [t for t in collect(select) if metadata(t) and not metadata(t)["number"].startswith("2.7.")]
    monkeypatch.setattr(autograder.grade, "collect", collect_untrained)


def grade_entry(grade, tmp_path, entry_id, select):
    return grade(materialize(BY_ID[entry_id], str(tmp_path / entry_id)), select)


def test_the_reference_scores_full_marks_on_every_declared_point(reference):
    for part, points in POINTS.items():
        tests = [t for t in reference["tests"] if t["tags"][0] == part]
        assert sum(t["max_score"] for t in tests) == points
    assert reference["score"] == sum(POINTS.values()), explain(reference)
    assert [e["name"] for e in reference["leaderboard"]] == ["validation perplexity"]


def test_the_tests_are_well_formed(reference):
    names = [t["name"] for t in reference["tests"]]
    assert len(names) == len(set(names))
    for t in reference["tests"]:
        part = {"1": "part-a", "2": "part-b"}[t["number"].split(".")[0]]
        assert t["tags"][0] == part and len(t["tags"]) >= 2, t
    for part, points in POINTS.items():
        visible = sum(t["max_score"] for t in reference["tests"]
                      if t["tags"][0] == part and t["visibility"] == "visible")
        assert 0.35 * points <= visible <= 0.8 * points, (part, visible)
    assert {t["visibility"] for t in reference["tests"]} == {"visible", "after_published"}


def test_the_handout_scores_zero_saying_not_implemented(grade):
    document = grade(HANDOUT)
    assert document["score"] == 0
    for t in document["tests"]:
        assert "not implemented" in t["output"], (t["name"], t["output"][:300])


@pytest.mark.parametrize("entry_id", sorted(i for i in BY_ID if i.startswith("a_einsum_")))
def test_a_bug_of_independently_written_code_costs_its_own_tests_with_a_diagnosis(grade, tmp_path, entry_id):
    entry = BY_ID[entry_id]
    document = grade_entry(grade, tmp_path, entry_id, ["part-a"])
    assert lost_points(document, entry.broken) > 0, f"{entry_id} lost no points on tests tagged {entry.broken}"
    allowed = {entry.broken} | CALLERS.get(entry.broken, set())
    for t in lost(document).values():
        assert allowed & set(t["tags"]), f"{entry_id} also failed {t['name']}: {t['output'][:300]}"
        assert "calling `" in t["output"] or ("got" in t["output"] and "expected" in t["output"]), t["output"][:300]
    feedback = "\n".join(t["output"] for t in document["tests"] if entry.broken in t["tags"])
    assert "This looks like a known bug" in feedback and entry.diagnosis in feedback, feedback[:2000]


@pytest.mark.parametrize("entry_id", ["v_einsum_independent", "v_float32_outputs_wrapped"])
def test_correct_part_a_written_differently_gets_full_marks(grade, tmp_path, entry_id):
    document = grade_entry(grade, tmp_path, entry_id, ["part-a"])
    assert document["score"] == POINTS["part-a"], explain(document)


def test_zeros_of_the_right_shape_score_under_20_percent(grade):
    document = grade(os.path.join(os.path.dirname(__file__), "catalog", "sources", "zeros_attention.py"), ["part-a"])
    assert document["score"] < 0.2 * POINTS["part-a"], [t["name"] for t in document["tests"] if t["score"]]


@pytest.mark.parametrize("broken, dependents", [("apply_rope", set()), ("layer_norm", {"transformer_block"})])
def test_one_function_raising_costs_only_its_own_tests(grade, tmp_path, broken, dependents):
    with open(os.path.join(REFERENCE, "attention.py"), encoding="utf-8") as f:
        source = f.read() + f"\n\ndef {broken}(*args, **kwargs):\n    raise RuntimeError('broken on purpose')\n"
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "attention.py").write_text(source)
    document = grade(str(tmp_path / "sub"), ["part-a"])
    for t in document["tests"]:
        if broken in t["tags"]:
            assert t["score"] == 0 and "broken on purpose" in t["output"], t
        elif not dependents & set(t["tags"]):
            assert t["score"] == t["max_score"], (t["name"], t["output"])


# Part B: a model bug is charged by the value test of the whole model (2.2.1) and by the tests that
# really depend on it; a layout or shape slip by the one test about it.
ONLY = {
    "b_attn_no_scaling": {"2.2.1"},
    "b_mlp_relu": {"2.2.1"},
    "b_block_post_ln": {"2.2.1"},
    "b_attn_c_proj_applied_transposed": {"2.2.1", "2.3.1", "2.3.2", "2.3.3"},
    "b_gpt_conv1d_layout": {"2.1.1"},
    "b_gpt_inference_shortcut": {"2.2.1"},
}


@pytest.mark.parametrize("entry_id", sorted(ONLY))
def test_a_model_bug_is_charged_once_on_the_right_tests(grade, tmp_path, without_training, entry_id):
    document = grade_entry(grade, tmp_path, entry_id, ["part-b"])
    where = set(lost(document))
    assert where and where <= ONLY[entry_id], explain(document)
    feedback = "\n".join(t["output"] for t in lost(document).values()).lower()
    assert BY_ID[entry_id].diagnosis.lower() in feedback, feedback[:2000]


@pytest.mark.parametrize("entry_id", ["b_sample_temperature_multiplies", "b_sample_top_k_keeps_k_plus_1",
                                      "b_sample_ignores_generator", "b_generate_no_crop", "b_generate_always_greedy",
                                      "b_ppl_no_exp"])
def test_a_part_b_bug_outside_the_model_loses_points_on_its_tag_and_is_named(grade, tmp_path, without_training,
                                                                             entry_id):
    entry = BY_ID[entry_id]
    document = grade_entry(grade, tmp_path, entry_id, [entry.broken])
    assert lost_points(document, entry.broken) > 0, explain(document)
    feedback = "\n".join(t["output"] for t in lost(document).values()).lower()
    assert entry.diagnosis.lower() in feedback, feedback[:2000]


def test_chi_square_survival_function_matches_closed_forms():
    from autograder.checks.part_b.stats import chi2_sf
    for x in (0.5, 3.0, 30.0, 90.0):
        assert math.isclose(chi2_sf(x, 2), math.exp(-x / 2), rel_tol=1e-9)
        assert math.isclose(chi2_sf(x, 4), math.exp(-x / 2) * (1 + x / 2), rel_tol=1e-9)
    assert math.isclose(chi2_sf(3.841458820694124, 1), 0.05, rel_tol=1e-9)


def test_fit_test_accepts_exact_draws_and_rejects_a_wrong_temperature():
    from autograder.checks.part_b.sampler import distribution
    from autograder.checks.part_b.stats import fit_test
    logits, rng = [0.1, 2.0, -0.8, 0.9, -1.5, 1.4, -0.3, 0.5], np.random.default_rng(0)
    p = distribution(logits, 1.5)
    assert min(fit_test(rng.choice(8, 20_000, p=p), p)[0] for _ in range(20)) > 1e-6
    assert fit_test(rng.choice(8, 20_000, p=distribution(logits, 1 / 1.5)), p)[0] < 1e-100


def test_the_trusted_numpy_gpt2_reproduces_every_recorded_reference_output():
    from autograder.checks import data, gpt2
    d, meta = data.arrays("part_b"), data.meta("part_b")
    n_head = meta["config"]["n_head"]

    def weights(name):
        return {k[len(f"w.{name}."):]: v for k, v in d.items() if k.startswith(f"w.{name}.")}
    for name, key, idx in (("full", "full.forward.logits", "forward.idx"), ("full", "full.short.logits", "short.idx"),
                           ("generation", "gen.forward.logits", "forward.idx")):
        np.testing.assert_allclose(gpt2.logits(weights(name), d[idx], n_head), d[key], rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(gpt2.logits(weights("probe"), d["probe.idx"], n_head), d["probe.logits"][0],
                               rtol=1e-5, atol=1e-5)
    structure = gpt2.logits(weights("structure"), d["structure.idx"], meta["structure_config"]["n_head"])
    np.testing.assert_allclose(structure, d["structure.logits"], rtol=1e-5, atol=1e-5)
    assert math.isclose(gpt2.cross_entropy(d["gen.forward.logits"], d["forward.targets"]), meta["gen_loss"],
                        rel_tol=1e-5)
