"""1.8 layer_norm, 1.9 gelu, 1.10 transformer_block."""
import numpy as np
from gradescope_utils.autograder_utils.decorators import number, tags, visibility, weight

from ..cases_part_a import FUTURE_FROM
from .common import PartATest, describe


class TestLayerNorm(PartATest):
    @weight(1.5)
    @number("1.8.1")
    @visibility("visible")
    @tags("part-a", "layer_norm")
    def test_layer_norm_values(self):
        """layer_norm: values with gamma, beta and batch dims"""
        inputs, got = self.run_case("ln.values")
        self.assert_shape("ln.values", got, inputs["x"].shape, notation="x.shape (..., C)")
        self.assert_case("ln.values", got, inputs=inputs)

    @weight(1)
    @number("1.8.2")
    @visibility("visible")
    @tags("part-a", "layer_norm")
    def test_layer_norm_uses_biased_variance(self):
        """layer_norm: mean 0, biased variance 1 (gamma=1, beta=0)"""
        inputs, got = self.run_case("ln.unit")
        y = self.assert_shape("ln.unit", got, inputs["x"].shape, notation="x.shape (..., C)")
        call = describe("layer_norm", inputs)
        mean, var = y.mean(axis=-1), y.var(axis=-1)
        if not np.allclose(mean, 0.0, atol=1e-5):
            self.explain(f"{call}: row means got {np.round(mean, 5).tolist()}, expected 0", "layer_norm", inputs, got)
        if not np.allclose(var, 1.0, atol=1e-4):
            self.explain(f"{call}: row variances (np.var, biased) got {np.round(var, 5).tolist()}, expected 1 "
                         "(up to eps)", "layer_norm", inputs, got)
        self.assert_case("ln.unit", got, inputs=inputs)

    @weight(1.5)
    @number("1.8.3")
    @visibility("after_published")
    @tags("part-a", "layer_norm")
    def test_layer_norm_honours_eps(self):
        """layer_norm: honours eps (tiny variance; eps=1e-5, 1.0)"""
        self.assert_case("ln.tiny")
        self.assert_case("ln.tiny_eps1")


class TestGelu(PartATest):
    @weight(1.5)
    @number("1.9.1")
    @visibility("visible")
    @tags("part-a", "gelu")
    def test_gelu_values(self):
        """gelu: the tanh approximation on [-3, 3]"""
        inputs, got = self.run_case("gelu.grid")
        self.assert_shape("gelu.grid", got, inputs["x"].shape)
        self.assert_case("gelu.grid", got, inputs=inputs)

    @weight(1.5)
    @number("1.9.2")
    @visibility("after_published")
    @tags("part-a", "gelu")
    def test_gelu_batch_and_large_inputs(self):
        """gelu: batch dims and large inputs (-50 .. 50)"""
        inputs, got = self.run_case("gelu.batch")
        self.assert_shape("gelu.batch", got, inputs["x"].shape)
        self.assert_case("gelu.batch", got, inputs=inputs)


class TestTransformerBlock(PartATest):
    @weight(1)
    @number("1.10.1")
    @visibility("visible")
    @tags("part-a", "transformer_block")
    def test_block_shape(self):
        """transformer_block: shape (..., T, C), batch dims"""
        for case in ("block.single", "block.shapes"):
            inputs, got = self.run_case(case)
            self.assert_shape(case, got, inputs["x"].shape, notation="x.shape (..., T, C)")

    @weight(2)
    @number("1.10.2")
    @visibility("visible")
    @tags("part-a", "transformer_block")
    def test_block_values(self):
        """transformer_block: values, GPT-2 layout, 2 heads"""
        self.assert_case("block.single")

    @weight(2)
    @number("1.10.3")
    @visibility("after_published")
    @tags("part-a", "transformer_block")
    def test_block_values_with_batch_dims(self):
        """transformer_block: batch dims, 3 heads, asymmetric c_proj"""
        self.assert_case("block.batch")
        self.assert_case("block.shapes")

    @weight(1)
    @number("1.10.4")
    @visibility("after_published")
    @tags("part-a", "transformer_block")
    def test_block_future_tokens_do_not_change_the_past(self):
        """transformer_block: no peeking at the future"""
        inputs, before = self.run_case("block.future")
        _, after = self.run_case("block.future_changed")
        y0 = self.assert_shape("block.future", before, inputs["x"].shape, notation="x.shape (T, C)")
        y1 = self.assert_shape("block.future_changed", after, inputs["x"].shape, notation="x.shape (T, C)")
        n, call = FUTURE_FROM, describe("transformer_block", inputs)
        self.assert_finite("transformer_block", inputs, y0, before)
        if not np.allclose(y0[:n], y1[:n], rtol=1e-5, atol=1e-6):
            self.explain(f"{call}: after changing the tokens at positions >= {n}, the outputs at positions < {n} "
                         f"got a change of up to {np.abs(y0[:n] - y1[:n]).max():.3g}, expected none: the block's "
                         "attention must be causal", "transformer_block", inputs, before)
        if np.allclose(y0[n:], y1[n:]):
            self.fail(f"{call}: after changing the tokens at positions >= {n}, the outputs there got no change, "
                      "expected them to change")
