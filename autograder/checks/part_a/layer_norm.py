"""1.8 layer_norm: over the last axis, biased variance, eps inside the square root."""
import numpy as np

from .. import gpt2
from ..spec import Value, check
from .base import PartATest, describe

FUNCTION = "layer_norm"
GROUP = "ln"
BUGS = {
    "ln_no_eps": "layer_norm ignores eps (it divides by sqrt(var), not sqrt(var + eps))",
    "ln_unbiased": "layer_norm uses the unbiased variance (divides by C - 1); use the biased one, as np.var does "
                   "(and add eps inside the square root, sqrt(var + eps), if it is outside, as in the Annotated "
                   "Transformer's LayerNorm)",
    "ln_unbiased_eps_outside": "layer_norm divides by (std + eps) with the unbiased std, as the Annotated "
                               "Transformer's LayerNorm does; the contract is (x - mean) / sqrt(var + eps) with the "
                               "biased variance (np.var)",
    "ln_eps_outside": "layer_norm adds eps outside the square root: use sqrt(var + eps)",
    "ln_no_affine": "layer_norm ignores gamma and beta",
    "ln_swapped": "layer_norm: gamma and beta look swapped",
}


def cases():
    rng = np.random.default_rng(108)
    tiny = 0.1 + 1e-3 * rng.normal(size=(4, 6))  # variance ~1e-6: eps=1e-5 dominates it
    g, b = 1 + 0.5 * rng.normal(size=6), 0.5 * rng.normal(size=6)
    return {
        "ln.values": {"x": 1 + 2 * rng.normal(size=(2, 4, 6)), "gamma": 1 + 0.5 * rng.normal(size=6),
                      "beta": 0.5 * rng.normal(size=6)},
        "ln.unit": {"x": 2 + 3 * rng.normal(size=(5, 8)), "gamma": np.ones(8), "beta": np.zeros(8)},
        "ln.tiny": {"x": tiny, "gamma": g, "beta": b},
        "ln.tiny_eps1": {"x": tiny, "gamma": g, "beta": b, "eps": 1.0},
    }


def signatures(x, gamma, beta, eps=1e-5):
    x, g, b = (np.asarray(t, dtype=np.float64) for t in (x, gamma, beta))
    yield None, gpt2.layer_norm(x, g, b, eps)
    for bug, text in BUGS.items():
        yield text, gpt2.layer_norm(x, g, b, eps, bug)
    yield "layer_norm ignores the eps it is given (it uses 1e-5 whatever eps is)", gpt2.layer_norm(x, g, b)
    yield "layer_norm normalises over axis 0 (like batch norm), not over the last axis", \
        gpt2.layer_norm(x, g, b, eps, axis=0)


class TestLayerNorm(PartATest):
    values = [
        Value("1.8.1", FUNCTION, 1.5, "layer_norm: values with gamma, beta and batch dims", "ln.values", public=True),
        Value("1.8.3", FUNCTION, 1.5, "layer_norm: honours eps (tiny variance; eps=1e-5, 1.0)", "ln.tiny",
              "ln.tiny_eps1", visibility="after_published"),
    ]

    @check("1.8.2", FUNCTION, 1, "layer_norm: mean 0, biased variance 1 (gamma=1, beta=0)")
    def test_layer_norm_uses_biased_variance(self):
        inputs, got = self.run_case("ln.unit")
        y = self.assert_shape("ln.unit", got, inputs["x"].shape, notation="x.shape (..., C)")
        call = describe(FUNCTION, inputs)
        mean, var = y.mean(axis=-1), y.var(axis=-1)
        if not np.allclose(mean, 0.0, atol=1e-5):
            self.explain(f"{call}: row means got {np.round(mean, 5).tolist()}, expected 0", FUNCTION, inputs, got)
        if not np.allclose(var, 1.0, atol=1e-4):
            self.explain(f"{call}: row variances (np.var, biased) got {np.round(var, 5).tolist()}, expected 1 "
                         "(up to eps)", FUNCTION, inputs, got)
        self.assert_case("ln.unit", got)
