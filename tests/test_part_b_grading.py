"""Part B's graded tests against known submissions: the reference scores full marks, the
handout's stubs score zero, each buggy GPT loses points on a test tagged with what it broke,
and correct code written differently (nanoGPT's layout, other samplers) scores full marks.

Buggy variants are the reference with one replacement each. Only the reference and the
nanoGPT-style model are graded with the training-quality tests (2.7.x); the variants are
graded with the tests of their tag, without training, to keep this file fast.
"""
import json
import math
import os
import shutil

import numpy as np
import pytest

import conftest
from conftest import HANDOUT, REFERENCE, lost_points

NANOGPT_STYLE = os.path.join(os.path.dirname(__file__), "part_b_mutants", "nanogpt_style")
PART_B_POINTS = 50

# name -> (the contract entry it breaks, a phrase its feedback must hold, [(text in reference/gpt.py, replacement)])
BUGS = {
    "no_mask": ("CausalSelfAttention", "future",
                [('att = att.masked_fill(~self.mask[:, :, :T, :T], float("-inf"))', "")]),
    "transposed_mask": ("CausalSelfAttention", "transposed",
                        [("~self.mask[:, :, :T, :T]", "~self.mask[:, :, :T, :T].transpose(-2, -1)")]),
    "no_scaling": ("CausalSelfAttention", "sqrt(hs)",
                   [("(q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(hs))", "q @ k.transpose(-2, -1)")]),
    "heads_merged_without_transpose": ("CausalSelfAttention", "merged",
                                       [("y = y.transpose(1, 2).contiguous().view(B, T, C)",
                                         "y = y.contiguous().view(B, T, C)")]),
    "relu_mlp": ("MLP", "relu", [('self.gelu = nn.GELU(approximate="tanh")', "self.gelu = nn.ReLU()")]),
    "no_position_embedding": ("GPT", "wpe", [("x = self.transformer.drop(tok_emb + pos_emb)",
                                              "x = self.transformer.drop(tok_emb)")]),
    "lm_head_not_tied": ("GPT", "not tied", [("self.transformer.wte.weight = self.lm_head.weight", "pass")]),
    "temperature_multiplies": ("sample_next_token", "should divide",
                               [("logits = logits / temperature", "logits = logits * temperature")]),
    "top_k_one_too_many": ("sample_next_token", "not among the 1 largest",
                           [("k = min(top_k, logits.size(-1))", "k = min(top_k + 1, logits.size(-1))")]),
    "top_k_one_too_few": ("sample_next_token", "off by one",
                          [("k = min(top_k, logits.size(-1))", "k = max(1, min(top_k - 1, logits.size(-1)))")]),
    "generator_ignored": ("sample_next_token", "generator",
                          [("num_samples=1, generator=generator)", "num_samples=1)")]),
    "context_not_cropped": ("generate", "block_size",
                            [("idx_cond = idx[:, -self.config.block_size:]", "idx_cond = idx")]),
    "perplexity_without_exp": ("perplexity", "without exp",
                               [("return math.exp(total_nll / count)", "return total_nll / count")]),
}

# Correct samplers that draw their randomness differently: full marks on sample_next_token.
SAMPLERS = {
    "gumbel_max": [("return torch.multinomial(probs, num_samples=1, generator=generator).squeeze(-1)",
                    "u = torch.rand(probs.shape, generator=generator).clamp_min(1e-20)\n"
                    "    return torch.argmax(torch.log(probs) - torch.log(-torch.log(u)), dim=-1)")],
    "inverse_cdf": [("return torch.multinomial(probs, num_samples=1, generator=generator).squeeze(-1)",
                     "cdf = probs.cumsum(-1)\n"
                     "    u = torch.rand(probs.size(0), 1, generator=generator) * cdf[:, -1:]\n"
                     "    return torch.searchsorted(cdf, u, right=True).clamp(max=probs.size(-1) - 1).squeeze(-1)")],
}


def part_b(document):
    return [t for t in document["tests"] if t["tags"] and t["tags"][0] == "part-b"]


def failures(tests):
    return "\n".join(f"{t['number']} {t['name']}: {t['score']}/{t['max_score']}\n{t['output'][:800]}"
                     for t in tests if t["score"] < t["max_score"])


def variant(tmp_path, replacements, source=os.path.join(REFERENCE, "gpt.py")):
    """A submission folder holding reference/gpt.py with ``replacements`` made (each must match once)."""
    with open(source) as f:
        text = f.read()
    for old, new in replacements:
        assert text.count(old) == 1, f"reference/gpt.py changed: {old!r} is no longer there exactly once"
        text = text.replace(old, new)
    folder = tmp_path / "submission"
    folder.mkdir()
    (folder / "gpt.py").write_text(text)
    return str(folder)


@pytest.fixture
def without_training(monkeypatch):
    """Grade without the training-quality tests (2.7.x)."""
    import autograder.grade
    from autograder.checks import collect, test_metadata

    def collect_untrained(select=None):
        return [t for t in collect(select) if not test_metadata(t)["number"].startswith("2.7.")]
    monkeypatch.setattr(autograder.grade, "collect", collect_untrained)


def test_chi_square_survival_function_matches_closed_forms():
    from autograder.checks.part_b.stats import chi2_sf
    for x in (0.5, 3.0, 30.0, 90.0):
        assert math.isclose(chi2_sf(x, 2), math.exp(-x / 2), rel_tol=1e-9)
        assert math.isclose(chi2_sf(x, 4), math.exp(-x / 2) * (1 + x / 2), rel_tol=1e-9)
    assert math.isclose(chi2_sf(3.841458820694124, 1), 0.05, rel_tol=1e-9)


def test_fit_test_accepts_exact_draws_and_rejects_a_wrong_temperature():
    from autograder.checks.part_b.stats import fit_test
    from autograder.checks.part_b.test_sampling import softmax
    logits, rng = [0.1, 2.0, -0.8, 0.9, -1.5, 1.4, -0.3, 0.5], np.random.default_rng(0)
    p = softmax(logits, 1.5)
    assert min(fit_test(rng.choice(8, 20_000, p=p), p)[0] for _ in range(20)) > 1e-6
    assert fit_test(rng.choice(8, 20_000, p=softmax(logits, 1 / 1.5)), p)[0] < 1e-100


def test_numpy_gpt_reproduces_the_recorded_reference_logits():
    from autograder.checks.part_b.diagnose_gpt import gpt_logits
    data_dir = os.path.join(conftest.REPO, "autograder", "data")
    with open(os.path.join(data_dir, "part_b.json")) as f:
        n_head = json.load(f)["config"]["n_head"]
    with np.load(os.path.join(data_dir, "part_b.npz")) as data:
        weights = {k[2:]: data[k] for k in data.files if k.startswith("w.")}
        for case in ("forward", "short"):
            expected = gpt_logits(weights, data[f"{case}.idx"], n_head)
            np.testing.assert_allclose(data[f"{case}.logits"], expected, rtol=1e-5, atol=1e-5)


def test_reference_scores_full_part_b_marks(grade):
    document = grade(REFERENCE, ["part-b"])
    tests = part_b(document)
    assert sum(t["max_score"] for t in tests) == PART_B_POINTS
    assert not failures(tests), failures(tests)
    assert [e["name"] for e in document["leaderboard"]] == ["validation perplexity"]


def test_handout_stubs_score_zero(grade):
    tests = part_b(grade(HANDOUT, ["part-b"]))
    assert len(tests) > 0 and all(t["score"] == 0 for t in tests), [t["name"] for t in tests if t["score"]]
    assert all("not implemented yet" in t["output"] for t in tests), [t["output"][:200] for t in tests]


@pytest.mark.parametrize("bug", sorted(BUGS))
def test_buggy_gpt_loses_points_on_its_tag_and_is_named(bug, grade, tmp_path, without_training):
    tag, phrase, replacements = BUGS[bug]
    document = grade(variant(tmp_path, replacements), [tag])
    assert conftest.tests_by_tag(document, tag)
    assert lost_points(document, tag) > 0, f"{bug} lost no points on the tests tagged {tag}"
    feedback = "\n".join(t["output"] for t in conftest.tests_by_tag(document, tag)).lower()
    assert phrase.lower() in feedback, f"{bug}: the feedback does not say {phrase!r}:\n{feedback[:3000]}"


@pytest.mark.parametrize("sampler", sorted(SAMPLERS))
def test_other_correct_samplers_score_full_marks(sampler, grade, tmp_path, without_training):
    document = grade(variant(tmp_path, SAMPLERS[sampler]), ["sample_next_token", "generate"])
    assert not failures(part_b(document)), failures(part_b(document))


def test_nanogpt_style_model_scores_full_marks(grade, tmp_path):
    folder = tmp_path / "nanogpt"
    shutil.copytree(NANOGPT_STYLE, folder)
    tests = part_b(grade(str(folder), ["part-b"]))
    assert sum(t["max_score"] for t in tests) == PART_B_POINTS
    assert not failures(tests), failures(tests)
