"""1.1 softmax and 1.2 mean_context."""
import numpy as np
from gradescope_utils.autograder_utils.decorators import number, tags, visibility, weight

from .common import PartATest, describe


class TestSoftmax(PartATest):
    def assert_sums_to_one(self, case, axis):
        inputs, got = self.run_case(case)
        x = inputs["x"]
        p = self.assert_shape(case, got, x.shape, notation="x.shape")
        call = describe("softmax", inputs)
        sums = p.sum(axis=axis)
        if not np.all(p >= 0) or not np.allclose(sums, 1.0, atol=1e-5):
            bad = np.unravel_index(np.argmax(np.abs(np.nan_to_num(sums, nan=1e9) - 1)), sums.shape)
            self.explain(f"{call} does not sum to 1 along axis {axis}: got a sum of {sums[bad]:.6g} "
                         f"(slice {tuple(int(i) for i in bad)}, axis {axis} left out), expected 1"
                         + ("" if np.all(p >= 0) else "; it also has negative entries"), "softmax", inputs, got)
        return p

    @weight(1)
    @number("1.1.1")
    @visibility("visible")
    @tags("part-a", "softmax")
    def test_softmax_rows_sum_to_one(self):
        """softmax: rows sum to 1 (default axis=-1, batch dims)"""
        self.assert_sums_to_one("softmax.rows", -1)
        self.assert_sums_to_one("softmax.batch", -1)

    @weight(1)
    @number("1.1.2")
    @visibility("visible")
    @tags("part-a", "softmax")
    def test_softmax_sums_to_one_along_the_axis_asked_for(self):
        """softmax: sums to 1 along axis=0; axis=1 of a 3-D x"""
        self.assert_sums_to_one("softmax.axis0", 0)
        self.assert_sums_to_one("softmax.axis1_3d", 1)

    @weight(1)
    @number("1.1.3")
    @visibility("visible")
    @tags("part-a", "softmax")
    def test_softmax_values(self):
        """softmax: values match the reference"""
        for case in ("softmax.rows", "softmax.batch", "softmax.axis0", "softmax.axis1_3d"):
            self.assert_case(case)

    @weight(1)
    @number("1.1.4")
    @visibility("visible")
    @tags("part-a", "softmax")
    def test_softmax_is_stable_at_1000(self):
        """softmax: no overflow for inputs of 1000 and -1000"""
        self.assert_case("softmax.large")

    @weight(1)
    @number("1.1.5")
    @visibility("after_published")
    @tags("part-a", "softmax")
    def test_softmax_gives_minus_infinity_exactly_zero(self):
        """softmax: -inf entries get a weight of exactly 0"""
        inputs, got = self.run_case("softmax.neg_inf")
        p = self.assert_case("softmax.neg_inf", got, inputs=inputs)
        where = np.isneginf(inputs["x"])
        if np.any(p[where] != 0):
            i = tuple(int(v) for v in np.argwhere(where & (p != 0))[0])
            self.fail(f"{describe('softmax', inputs)} -> the output at index {i}, where x is -inf: "
                      f"got {p[i]:.3g}, expected exactly 0")

    @weight(1)
    @number("1.1.6")
    @visibility("after_published")
    @tags("part-a", "softmax")
    def test_softmax_is_shift_invariant(self):
        """softmax: adding a constant to a row does not change it"""
        p = self.assert_sums_to_one("softmax.shift", -1)
        inputs, got = self.run_case("softmax.shifted")
        q, label = self.output_array("softmax", inputs, got)
        err = np.abs(q - p).max() if q.shape == p.shape else np.inf
        if not err <= 1e-5:
            self.fail(f"{label} (each row of x plus 50, -30 and 7.5) changed: got {q.tolist() if q.size < 20 else q}, "
                      f"expected the same as without the shift, {p.tolist()} (largest difference {err:.3g})")


class TestMeanContext(PartATest):
    @weight(1)
    @number("1.2.1")
    @visibility("visible")
    @tags("part-a", "mean_context")
    def test_mean_context_shape(self):
        """mean_context: (..., T, d) -> (..., d), batch dims"""
        for case in ("mean_context.single", "mean_context.batch", "mean_context.batch2"):
            inputs, got = self.run_case(case)
            self.assert_shape(case, got, inputs["X"].shape[:-2] + inputs["X"].shape[-1:], notation="(..., d)")

    @weight(1)
    @number("1.2.2")
    @visibility("after_published")
    @tags("part-a", "mean_context")
    def test_mean_context_values(self):
        """mean_context: the average over the token axis"""
        for case in ("mean_context.single", "mean_context.batch", "mean_context.batch2"):
            self.assert_case(case)
