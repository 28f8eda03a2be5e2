"""1.10 transformer_block: one causal pre-LN GPT-2 block in NumPy, weights (in, out)."""
import numpy as np

from .. import gpt2
from ..spec import Value, check
from .base import PartATest
from .multi_head import HEAD_BUGS

FUNCTION = "transformer_block"
GROUP = "block"
FUTURE_FROM = 3  # block.future and block.future_changed differ only at positions >= 3
BUGS = {
    "c_proj_T": "attn.c_proj.weight looks applied transposed (a missing or extra transpose of c_proj): "
                "weights are laid out (in, out), so y = x @ W + b",
    "no_attn_residual": "the residual around attention looks missing: x = x + attn(ln_1(x))",
    "no_mlp_residual": "the residual around the MLP looks missing: x = x + mlp(ln_2(x))",
    "post_ln": "this looks like a post-LN block; GPT-2 is pre-LN: x = x + attn(ln_1(x))",
    "not_causal": "your block's attention is not causal: position t sees later positions",
    "qkv_interleaved": "q, k, v look taken from interleaved columns; they are the thirds of c_attn's output",
    **dict.fromkeys(("kqv", "qvk", "vkq"), "q, k, v look taken from c_attn's output in the wrong order: "
                                           "q = [:C], k = [C:2C], v = [2C:]"),
    "ln_1_twice": "the MLP's layer norm looks like it uses ln_1's weights; it uses ln_2's",
    **{b: HEAD_BUGS[b] for b in ("heads_interleaved", "split_interleaved", "mask_T", "mask_diagonal", "unscaled",
                                 "columns")},
    "erf": "gelu looks like the exact erf GELU, not the tanh approximation GPT-2 uses",
}


def params(rng, C):
    """One GPT-2 block's parameters, weights (in, out); c_proj is far from symmetric."""
    n = rng.normal
    return {
        "ln_1.weight": 1 + 0.2 * n(size=C), "ln_1.bias": 0.2 * n(size=C),
        "attn.c_attn.weight": 0.5 * n(size=(C, 3 * C)), "attn.c_attn.bias": 0.2 * n(size=3 * C),
        "attn.c_proj.weight": 0.3 * n(size=(C, C)) + np.triu(np.full((C, C), 0.4), 1),
        "attn.c_proj.bias": 0.2 * n(size=C),
        "ln_2.weight": 1 + 0.2 * n(size=C), "ln_2.bias": 0.2 * n(size=C),
        "mlp.c_fc.weight": 0.4 * n(size=(C, 4 * C)), "mlp.c_fc.bias": 0.2 * n(size=4 * C),
        "mlp.c_proj.weight": 0.3 * n(size=(4 * C, C)), "mlp.c_proj.bias": 0.2 * n(size=C),
    }


def cases():
    rng = np.random.default_rng(110)
    x = rng.normal(size=(6, 4))
    x2 = x.copy()
    x2[FUTURE_FROM:] = rng.normal(size=(6 - FUTURE_FROM, 4))
    p4 = params(rng, 4)
    return {
        "block.single": {"x": rng.normal(size=(5, 6)), "params": params(rng, 6), "n_heads": 2},
        "block.batch": {"x": rng.normal(size=(2, 4, 9)), "params": params(rng, 9), "n_heads": 3},
        "block.shapes": {"x": rng.normal(size=(2, 3, 4, 8)), "params": params(rng, 8), "n_heads": 2},
        "block.future": {"x": x, "params": p4, "n_heads": 2},
        "block.future_changed": {"x": x2, "params": p4, "n_heads": 2},
    }


def signatures(x, params, n_heads):
    x = np.asarray(x, dtype=np.float64)
    p = {k: np.asarray(v, dtype=np.float64) for k, v in params.items()}
    yield None, gpt2.block(x, p, n_heads)
    for bug, text in BUGS.items():
        yield text, gpt2.block(x, p, n_heads, bug)


def depends(x, params, n_heads):
    """The block's output when the student's layer_norm or gelu has a known bug: right given that
    bug, which the tests of layer_norm and gelu charge (once), not the block's."""
    x = np.asarray(x, dtype=np.float64)
    p = {k: np.asarray(v, dtype=np.float64) for k, v in params.items()}
    for bug in gpt2.LN_BUGS:
        yield "layer_norm", "ln.values", bug, gpt2.block(x, p, n_heads, bug), \
            lambda x, gamma, beta, eps=1e-5, bug=bug: gpt2.layer_norm(np.asarray(x, float), gamma, beta, eps, bug)
    for bug in gpt2.GELU_BUGS:
        yield "gelu", "gelu.grid", bug, gpt2.block(x, p, n_heads, bug), \
            lambda x, bug=bug: gpt2.gelu(np.asarray(x, float), bug)


class TestTransformerBlock(PartATest):
    values = [
        Value("1.10.2", FUNCTION, 2, "transformer_block: values, GPT-2 layout, 2 heads", "block.single", public=True),
        Value("1.10.3", FUNCTION, 2, "transformer_block: batch dims, 3 heads, asymmetric c_proj", "block.batch",
              "block.shapes", visibility="after_published"),
    ]

    @check("1.10.1", FUNCTION, 1, "transformer_block: shape (..., T, C), batch dims")
    def test_block_shape(self):
        for case in ("block.single", "block.shapes"):
            inputs, got = self.run_case(case)
            self.assert_shape(case, got, inputs["x"].shape, notation="x.shape (..., T, C)")

    @check("1.10.4", FUNCTION, 1, "transformer_block: no peeking at the future", visibility="after_published")
    def test_block_future_tokens_do_not_change_the_past(self):
        inputs, before = self.run_case("block.future")
        _, after = self.run_case("block.future_changed")
        y0 = self.assert_shape("block.future", before, inputs["x"].shape, notation="x.shape (T, C)")
        y1 = self.assert_shape("block.future_changed", after, inputs["x"].shape, notation="x.shape (T, C)")
        self.assert_no_peeking(FUNCTION, inputs, y0, y1, before, changed="the tokens")
