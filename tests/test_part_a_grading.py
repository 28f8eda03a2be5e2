"""Part A's graded tests judge right: correct work gets full marks, each classic bug loses
points on the tests of the function it breaks (and of its callers only), with a diagnosis."""
import os

import pytest
from conftest import HANDOUT, REFERENCE, lost_points

MUTANTS = os.path.join(os.path.dirname(__file__), "part_a_mutants")
EINSUM = open(os.path.join(MUTANTS, "einsum_attention.py")).read()
REFERENCE_A = open(os.path.join(REFERENCE, "attention.py")).read()
PART_A_POINTS = 50
NAMES = ("softmax", "mean_context", "sinusoidal_positional_encoding", "apply_rope", "causal_mask",
         "scaled_dot_product_attention", "multi_head_attention", "layer_norm", "gelu", "transformer_block",
         "attention_shapes", "gpt_param_count")

# who calls whom in einsum_attention.py: a bug in a key also costs the tests of its values
CALLERS = {
    "softmax": {"scaled_dot_product_attention", "multi_head_attention", "transformer_block"},
    "causal_mask": {"scaled_dot_product_attention", "multi_head_attention", "transformer_block"},
    "scaled_dot_product_attention": {"multi_head_attention", "transformer_block"},
    "multi_head_attention": {"transformer_block"},  # they share the head split
    "layer_norm": {"transformer_block"}, "gelu": {"transformer_block"},
}

# name -> (replacements in einsum_attention.py, the broken contract name, expected diagnosis or None)
BUGS = {
    "softmax_axis0": ([("z = x - x.max(axis=axis, keepdims=True)", "z = x - x.max(axis=0, keepdims=True)"),
                       ("return e / e.sum(axis=axis, keepdims=True)", "return e / e.sum(axis=0, keepdims=True)")],
                      "softmax", "down each column instead of along each row"),
    "sdpa_column_softmax": ([("A = softmax(scores, axis=-1)", "A = softmax(scores, axis=-2)")],
                            "scaled_dot_product_attention", "sum to 1 down each column instead of along each row"),
    "sdpa_no_sqrt": ([("scores = scores / math.sqrt(Q.shape[-1])", "scores = scores")],
                     "scaled_dot_product_attention", "look unscaled"),
    "mask_transposed": ([("return j <= t", "return j >= t")], "causal_mask", "mask looks transposed"),
    "mask_off_by_one": ([("return j <= t", "return j < t")], "causal_mask", "off by one"),
    "pe_sin_cos_swapped": ([("np.where(col % 2 == 0, np.sin(angle), np.cos(angle))",
                             "np.where(col % 2 == 0, np.cos(angle), np.sin(angle))")],
                           "sinusoidal_positional_encoding", "sin and cos look swapped"),
    "rope_wrong_way": ([("out[..., 0::2] = a * c - b * s", "out[..., 0::2] = a * c + b * s"),
                        ("out[..., 1::2] = a * s + b * c", "out[..., 1::2] = -a * s + b * c")],
                       "apply_rope", "rotated the wrong way"),
    "ln_no_eps": ([("np.sqrt(var + eps)", "np.sqrt(var)")], "layer_norm", "ignores eps"),
    "ln_unbiased": ([("var = ((x - mu) ** 2).mean(axis=-1, keepdims=True)",
                      "var = ((x - mu) ** 2).sum(axis=-1, keepdims=True) / (x.shape[-1] - 1)")],
                    "layer_norm", "unbiased variance"),
    "gelu_erf": ([("np.tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * x**3))",
                   "np.vectorize(math.erf)(x / math.sqrt(2.0))")], "gelu", "exact erf GELU"),
    "mha_interleaved_heads": ([("split = [M.reshape(*b, T, n_heads, hs) for M in (q, k, v)]",
                                "split = [np.swapaxes(M.reshape(*b, T, hs, n_heads), -1, -2) for M in (q, k, v)]")],
                              "multi_head_attention", "interleaved columns"),
    "block_c_proj_transposed": ([('y @ p["attn.c_proj.weight"]', 'y @ p["attn.c_proj.weight"].T')],
                                "transformer_block", "c_proj"),
    "block_no_residual": ([('x = x + y @ p["attn.c_proj.weight"]', 'x = y @ p["attn.c_proj.weight"]')],
                          "transformer_block", "residual around attention"),
    "shapes_B_T_nh_hs": ([("heads = (B, nh, T, hs)", "heads = (B, T, nh, hs)")], "attention_shapes",
                         "(B, T, nh, hs)"),
    "params_lm_head_twice": ([("return vocab_size * C + block_size * C", "return 2 * vocab_size * C + block_size * C")],
                             "gpt_param_count", "lm_head"),
    "mean_context_wrong_axis": ([("np.float64).mean(axis=-2)", "np.float64).mean(axis=0)")], "mean_context",
                                "axis 0"),
}


def mutate(source, replacements):
    for old, new in replacements:
        assert source.count(old) == 1, f"{old!r} must occur once in the source a mutant is built from"
        source = source.replace(old, new)
    return source


def submit(tmp_path, name, source):
    folder = tmp_path / name
    folder.mkdir()
    (folder / "attention.py").write_text(source)
    return str(folder)


def full_marks(document):
    return {t["name"]: t["output"] for t in document["tests"] if t["score"] < t["max_score"]}


FLOAT32 = '''
def _f32(v):
    if isinstance(v, dict):
        return {k: _f32(x) for k, x in v.items()}
    if isinstance(v, tuple):
        return tuple(_f32(x) for x in v)
    a = np.asarray(v) if isinstance(v, (list, np.ndarray)) else v
    return a.astype(np.float32) if isinstance(a, np.ndarray) and a.dtype.kind in "fi" else v


def _in_float32(fn):
    return lambda *args, **kwargs: _f32(fn(*_f32(args), **_f32(kwargs)))


for _name in ("softmax", "mean_context", "sinusoidal_positional_encoding", "apply_rope",
              "scaled_dot_product_attention", "multi_head_attention", "layer_norm", "gelu", "transformer_block"):
    globals()[_name] = _in_float32(globals()[_name])
'''


def test_reference_gets_full_part_a_marks(grade):
    doc = grade(REFERENCE, select=["part-a"])
    assert {t["tags"][0] for t in doc["tests"]} == {"part-a"}
    assert sum(t["max_score"] for t in doc["tests"]) == PART_A_POINTS
    assert doc["score"] == PART_A_POINTS, full_marks(doc)


def test_part_a_tests_are_well_formed(grade):
    doc = grade(REFERENCE, select=["part-a"])
    names = [t["name"] for t in doc["tests"]]
    assert len(names) == len(set(names))
    for t in doc["tests"]:
        assert t["tags"][0] == "part-a" and len(t["tags"]) >= 2, t
        assert t["number"].startswith("1.") and t["name"].split(":")[0] in t["tags"], t
    visible = sum(t["max_score"] for t in doc["tests"] if t["visibility"] == "visible")
    assert 0.35 * PART_A_POINTS <= visible <= 0.65 * PART_A_POINTS
    assert {t["visibility"] for t in doc["tests"]} == {"visible", "after_published"}


def test_handout_scores_zero_saying_not_implemented(grade):
    doc = grade(HANDOUT, select=["part-a"])
    assert doc["score"] == 0
    for t in doc["tests"]:
        assert "not implemented" in t["output"], (t["name"], t["output"])


@pytest.mark.parametrize("name, source", [("einsum", EINSUM), ("float32", REFERENCE_A + FLOAT32)])
def test_other_correct_implementations_get_full_marks(grade, tmp_path, name, source):
    doc = grade(submit(tmp_path, name, source), select=["part-a"])
    assert doc["score"] == PART_A_POINTS, full_marks(doc)


@pytest.mark.parametrize("bug", sorted(BUGS))
def test_each_bug_loses_points_on_its_own_tests_with_a_diagnosis(grade, tmp_path, bug):
    replacements, broken, diagnosis = BUGS[bug]
    doc = grade(submit(tmp_path, bug, mutate(EINSUM, replacements)), select=["part-a"])
    assert lost_points(doc, broken) > 0, f"{bug} lost no points on tests tagged {broken}"
    allowed = {broken} | CALLERS.get(broken, set())
    for t in doc["tests"]:
        if t["score"] < t["max_score"]:
            assert allowed & set(t["tags"]), f"{bug} also failed {t['name']}: {t['output'][:300]}"
            first = t["output"].lstrip()
            assert first.startswith(NAMES), t["output"][:300]
            assert "calling `" in first or ("got" in first and "expected" in first), t["output"][:300]
    outputs = "\n".join(t["output"] for t in doc["tests"] if broken in t["tags"])
    if diagnosis:
        assert "This looks like a known bug" in outputs and diagnosis in outputs, outputs[:2000]


def test_zeros_of_the_right_shape_score_under_20_percent(grade):
    doc = grade(os.path.join(MUTANTS, "zeros_attention.py"), select=["part-a"])
    assert doc["score"] < 0.2 * PART_A_POINTS, [t["name"] for t in doc["tests"] if t["score"]]


@pytest.mark.parametrize("broken, dependents", [("apply_rope", set()), ("layer_norm", {"transformer_block"})])
def test_one_function_raising_costs_only_its_own_tests(grade, tmp_path, broken, dependents):
    source = REFERENCE_A + f"\n\ndef {broken}(*args, **kwargs):\n    raise RuntimeError('broken on purpose')\n"
    doc = grade(submit(tmp_path, broken, source), select=["part-a"])
    for t in doc["tests"]:
        if ({broken} | dependents) & set(t["tags"]):
            if broken in t["tags"]:
                assert t["score"] == 0 and "broken on purpose" in t["output"], t
        else:
            assert t["score"] == t["max_score"], (t["name"], t["output"])
