"""1.5 causal_mask, 1.6 scaled_dot_product_attention, 1.7 multi_head_attention."""
import numpy as np
from gradescope_utils.autograder_utils.decorators import number, tags, visibility, weight

from ..cases_part_a import FUTURE_FROM
from ..compare import check_equal
from .common import PartATest, describe

SDPA = "scaled_dot_product_attention"


class TestCausalMask(PartATest):
    @weight(1)
    @number("1.5.1")
    @visibility("visible")
    @tags("part-a", "causal_mask")
    def test_causal_mask_is_bool_T_by_T(self):
        """causal_mask: a bool array of shape (T, T)"""
        for T in (1, 5, 8):
            inputs, got = self.run_case(f"mask.T{T}")
            self.output_array("causal_mask", inputs, got, kinds="b")
            self.assert_shape(f"mask.T{T}", got, (T, T), notation="(T, T)")

    @weight(1)
    @number("1.5.2")
    @visibility("visible")
    @tags("part-a", "causal_mask")
    def test_causal_mask_lets_t_see_j_up_to_t(self):
        """causal_mask: True where j <= t"""
        for T in (1, 2, 5, 8):
            inputs, got = self.run_case(f"mask.T{T}")
            m, label = self.output_array("causal_mask", inputs, got, kinds="any")
            msg = check_equal(actual=m.astype(bool), expected=self.expected(f"mask.T{T}"), name=label)
            if msg:
                self.explain(msg, "causal_mask", inputs, m.astype(bool))


class TestScaledDotProductAttention(PartATest):
    @weight(1)
    @number("1.6.1")
    @visibility("visible")
    @tags("part-a", SDPA, "causal_mask")
    def test_lecture_worked_example(self):
        """scaled_dot_product_attention: the lecture's example"""
        _, mask = self.run_case("mask.T2")
        self.assert_case("mask.T2", mask)
        self.assert_case("sdpa.lecture", rtol=1e-4, atol=1e-4)

    @weight(1)
    @number("1.6.2")
    @visibility("visible")
    @tags("part-a", SDPA)
    def test_sdpa_shapes_with_batch_dims(self):
        """scaled_dot_product_attention: shapes of Z, A, batch dims"""
        inputs, got = self.run_case("sdpa.shapes")
        Q, K, V = inputs["Q"], inputs["K"], inputs["V"]
        self.assert_shape("sdpa.shapes", got, Q.shape[:-1] + V.shape[-1:], notation="(B, nh, Tq, dv)",
                          what="Z", index=0)
        self.assert_shape("sdpa.shapes", got, Q.shape[:-1] + K.shape[-2:-1], notation="(B, nh, Tq, Tk)",
                          what="A", index=1)

    @weight(1)
    @number("1.6.3")
    @visibility("visible")
    @tags("part-a", SDPA)
    def test_sdpa_values_without_mask(self):
        """scaled_dot_product_attention: Z and A without a mask"""
        self.assert_case("sdpa.nomask")
        self.assert_case("sdpa.shapes")

    @weight(1.5)
    @number("1.6.4")
    @visibility("after_published")
    @tags("part-a", SDPA)
    def test_sdpa_values_with_causal_mask(self):
        """scaled_dot_product_attention: causal, (B, nh, T, hs)"""
        self.assert_case("sdpa.causal")

    @weight(1)
    @number("1.6.5")
    @visibility("visible")
    @tags("part-a", SDPA)
    def test_sdpa_rows_are_distributions(self):
        """scaled_dot_product_attention: rows of A are distributions"""
        for case in ("sdpa.causal", "sdpa.random_mask"):
            inputs, got = self.run_case(case)
            A, label = self.output_array(SDPA, inputs, self.part_of(SDPA, inputs, got, 1), what="A")
            mask = np.broadcast_to(inputs["mask"], A.shape) if A.shape[-2:] == inputs["mask"].shape else None
            if mask is None:
                self.explain(f"{label} has the wrong shape: got {A.shape}, expected (..., Tq, Tk) = "
                             f"{inputs['Q'].shape[:-1] + inputs['K'].shape[-2:-1]}", SDPA, inputs, got)
            sums, negative = A.sum(axis=-1), " and negative weights" if (A < 0).any() else ""
            if not np.allclose(sums, 1.0, atol=1e-5) or negative:
                worst = np.argmax(np.abs(np.nan_to_num(sums, nan=9) - 1))
                i = tuple(int(v) for v in np.unravel_index(worst, sums.shape))
                self.explain(f"{label}: row {i} got a sum of {sums[i]:.6g}{negative}, expected every row to be "
                             "a distribution (non-negative, sum 1)", SDPA, inputs, got)
            if (A[~mask] != 0).any():
                i = tuple(int(v) for v in np.argwhere(~mask & (A != 0))[0])
                self.explain(f"{label}: masked weight at index {i}: got {A[i]:.3g}, expected exactly 0 "
                             "(mask is False there)", SDPA, inputs, got)

    @weight(1)
    @number("1.6.6")
    @visibility("after_published")
    @tags("part-a", SDPA)
    def test_future_keys_do_not_change_past_outputs(self):
        """scaled_dot_product_attention: no peeking at the future"""
        inputs, before = self.run_case("sdpa.future")
        _, after = self.run_case("sdpa.future_changed")
        Z0, _ = self.output_array(SDPA, inputs, self.part_of(SDPA, inputs, before, 0), what="Z")
        Z1, _ = self.output_array(SDPA, inputs, self.part_of(SDPA, inputs, after, 0), what="Z")
        n, call = FUTURE_FROM, describe(SDPA, inputs)
        if Z0.shape != Z1.shape or Z0.shape[:1] != inputs["Q"].shape[:1]:
            self.explain(f"{call} -> Z: got shape {Z0.shape}, expected (T, dv) = {inputs['V'].shape}", SDPA,
                         inputs, before)
        self.assert_finite(SDPA, inputs, Z0, before, what="Z")
        if not np.allclose(Z0[:n], Z1[:n], rtol=1e-5, atol=1e-6):
            self.explain(f"{call}: after changing the keys and values at positions >= {n}, Z at positions < {n} "
                         f"got a change of up to {np.abs(Z0[:n] - Z1[:n]).max():.3g}, expected none: position t "
                         "must not see the future", SDPA, inputs, before)
        if np.allclose(Z0[n:], Z1[n:]):
            self.fail(f"{call}: after changing the keys and values at positions >= {n}, Z there got no change, "
                      "expected it to change")

    @weight(1)
    @number("1.6.7")
    @visibility("after_published")
    @tags("part-a", SDPA)
    def test_sdpa_arbitrary_broadcast_mask(self):
        """scaled_dot_product_attention: a (Tq, Tk) mask, broadcast"""
        self.assert_case("sdpa.random_mask")


class TestMultiHeadAttention(PartATest):
    @weight(1)
    @number("1.7.1")
    @visibility("visible")
    @tags("part-a", "multi_head_attention")
    def test_mha_shape(self):
        """multi_head_attention: shape (..., T, C), batch dims"""
        for case in ("mha.heads3", "mha.batch"):
            inputs, got = self.run_case(case)
            self.assert_shape(case, got, inputs["X"].shape, notation="X.shape (..., T, C)")

    @weight(1)
    @number("1.7.2")
    @visibility("visible")
    @tags("part-a", "multi_head_attention")
    def test_mha_one_head_is_single_head_attention(self):
        """multi_head_attention: one head is attention then @ W_O"""
        self.assert_case("mha.one_head")

    @weight(2)
    @number("1.7.3")
    @visibility("visible")
    @tags("part-a", "multi_head_attention")
    def test_mha_values_three_heads(self):
        """multi_head_attention: 3 heads, causal"""
        self.assert_case("mha.heads3")

    @weight(1)
    @number("1.7.4")
    @visibility("after_published")
    @tags("part-a", "multi_head_attention")
    def test_mha_not_causal(self):
        """multi_head_attention: causal=False"""
        self.assert_case("mha.noncausal")

    @weight(1.5)
    @number("1.7.5")
    @visibility("after_published")
    @tags("part-a", "multi_head_attention")
    def test_mha_values_with_batch_dims(self):
        """multi_head_attention: 4 heads, batch dims"""
        self.assert_case("mha.batch")

    @weight(0.5)
    @number("1.7.6")
    @visibility("after_published")
    @tags("part-a", "multi_head_attention")
    def test_mha_rejects_indivisible_heads(self):
        """multi_head_attention: ValueError, d_model % n_heads != 0"""
        self.assert_value_error("mha.bad_heads", "d_model = 6 is not divisible by n_heads = 4")
