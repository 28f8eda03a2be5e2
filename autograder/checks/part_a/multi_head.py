"""1.7 multi_head_attention: heads split from consecutive columns, concatenated, projected by W_O."""
import numpy as np

from .. import gpt2
from ..spec import Value, check
from .attention import BUGS as ATTENTION_BUGS
from .base import PartATest

FUNCTION = "multi_head_attention"
GROUP = "mha"
RAISES = ("mha.bad_heads",)
HEAD_BUGS = {
    "heads_interleaved": "multi-head: heads look split from interleaved columns (head h uses columns h*hs:(h+1)*hs)",
    "split_interleaved": "multi-head: heads look split from interleaved columns (head h uses columns h*hs:(h+1)*hs)",
    "heads_no_swap": "multi-head: you reshaped (..., T, C) straight to (..., nh, T, hs); reshape to "
                     "(..., T, nh, hs), then swap axes to (..., nh, T, hs)",
    "scale_C": "your scores look divided by sqrt(C) instead of sqrt(hs), the head size",
    "mask_T": "your mask looks transposed (it lets position t see the future)",
    "mask_diagonal": "your mask is off by one: it hides the diagonal (position t must see itself, j <= t)",
    "columns": ATTENTION_BUGS["columns"], "unscaled": ATTENTION_BUGS["unscaled"],
}


def cases():
    rng = np.random.default_rng(107)

    def case(shape, n_heads, causal=None):
        X = rng.normal(size=shape)
        inputs = dict(zip(("X", "W_Q", "W_K", "W_V", "W_O"), [X, *(0.6 * rng.normal(size=(shape[-1],) * 2)
                                                                   for _ in range(4))]))
        inputs["n_heads"] = n_heads
        if causal is not None:
            inputs["causal"] = causal
        return inputs
    return {"mha.one_head": case((5, 6), 1), "mha.heads3": case((6, 6), 3),
            "mha.noncausal": case((5, 8), 2, causal=False), "mha.batch": case((2, 3, 5, 8), 4, causal=True),
            "mha.bad_heads": case((4, 6), 4)}


def signatures(X, W_Q, W_K, W_V, W_O, n_heads, causal=True):
    X, WQ, WK, WV, WO = (np.asarray(t, dtype=np.float64) for t in (X, W_Q, W_K, W_V, W_O))
    q, k, v = X @ WQ, X @ WK, X @ WV
    yield None, gpt2.heads(q, k, v, n_heads, causal) @ WO
    for bug, text in HEAD_BUGS.items():
        yield text, gpt2.heads(q, k, v, n_heads, causal, bug) @ WO
    yield "you did not multiply the concatenated heads by W_O", gpt2.heads(q, k, v, n_heads, causal)
    yield "you multiplied by the transposed weights (X @ W.T); the contract applies X @ W", \
        gpt2.heads(X @ WQ.T, X @ WK.T, X @ WV.T, n_heads, causal) @ WO.T
    yield ("causal=False was ignored: your attention still hides the future" if causal is False else
           "your attention is not causal: position t sees later positions"), \
        gpt2.heads(q, k, v, n_heads, causal is False) @ WO


class TestMultiHeadAttention(PartATest):
    values = [
        Value("1.7.2", FUNCTION, 1, "multi_head_attention: one head is attention then @ W_O", "mha.one_head"),
        Value("1.7.3", FUNCTION, 2, "multi_head_attention: 3 heads, causal", "mha.heads3", public=True),
        Value("1.7.4", FUNCTION, 1, "multi_head_attention: causal=False", "mha.noncausal",
              visibility="after_published"),
        Value("1.7.5", FUNCTION, 1.5, "multi_head_attention: 4 heads, batch dims", "mha.batch",
              visibility="after_published"),
    ]

    @check("1.7.1", FUNCTION, 1, "multi_head_attention: shape (..., T, C), batch dims")
    def test_mha_shape(self):
        for case in ("mha.heads3", "mha.batch"):
            inputs, got = self.run_case(case)
            self.assert_shape(case, got, inputs["X"].shape, notation="X.shape (..., T, C)")

    @check("1.7.6", FUNCTION, 0.5, "multi_head_attention: ValueError, d_model % n_heads != 0",
           visibility="after_published")
    def test_mha_rejects_indivisible_heads(self):
        self.assert_value_error("mha.bad_heads", "d_model = 6 is not divisible by n_heads = 4",
                                self.works("mha.one_head"))
