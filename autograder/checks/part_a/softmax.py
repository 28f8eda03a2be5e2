"""1.1 softmax: sums to 1 along the axis asked for, values, stability at 1000 and with -inf."""
import numpy as np

from .. import gpt2
from ..spec import Value, check
from .base import PartATest, describe

FUNCTION = "softmax"


def cases():
    rng = np.random.default_rng(101)
    x = rng.normal(size=(3, 5))
    return {
        "softmax.rows": {"x": 3 * rng.normal(size=(4, 6))},
        "softmax.batch": {"x": 2 * rng.normal(size=(2, 3, 4, 5))},
        "softmax.axis0": {"x": 2 * rng.normal(size=(5, 3)), "axis": 0},
        "softmax.axis1_3d": {"x": 2 * rng.normal(size=(2, 4, 3)), "axis": 1},
        "softmax.large": {"x": np.array([[1000.0, 1000.0, 999.0], [-1000.0, -1000.0, -999.0],
                                         [1000.0, 0.0, -1000.0]])},
        "softmax.neg_inf": {"x": np.array([[0.0, -np.inf, 1.0, -np.inf], [-np.inf, -np.inf, 2.0, -np.inf],
                                           [3.0, 1.0, -np.inf, 0.0]])},
        "softmax.shift": {"x": x},
        "softmax.shifted": {"x": x + np.array([[50.0], [-30.0], [7.5]])},
    }


def signatures(x, axis=-1):
    x = np.asarray(x, dtype=np.float64)
    yield None, gpt2.softmax(x, axis)
    for other in range(x.ndim):
        if other != axis % x.ndim:
            where = " (down each column instead of along each row)" if x.ndim == 2 and other == 0 else ""
            yield f"your softmax sums to 1 along axis {other} instead of the axis asked for (axis={axis}){where}", \
                gpt2.softmax(x, other)
    e = np.exp(x)
    yield "your softmax overflows: subtract each slice's maximum before np.exp", e / e.sum(axis, keepdims=True)
    e = np.exp(x - np.max(np.abs(x), axis=axis, keepdims=True))
    yield "your softmax turns slices holding -inf into NaN: subtract the slice's maximum (not of |x|), " \
          "so exp(-inf - max) = 0", e / e.sum(axis, keepdims=True)


class TestSoftmax(PartATest):
    values = [
        Value("1.1.3", FUNCTION, 1, "softmax: values match the reference",
              "softmax.rows", "softmax.batch", "softmax.axis0", "softmax.axis1_3d", public=True),
        Value("1.1.4", FUNCTION, 1, "softmax: no overflow for inputs of 1000 and -1000", "softmax.large"),
    ]

    def assert_sums_to_one(self, case, axis):
        inputs, got = self.run_case(case)
        p = self.assert_shape(case, got, inputs["x"].shape, notation="x.shape")
        sums = p.sum(axis=axis)
        if not np.all(p >= 0) or not np.allclose(sums, 1.0, atol=1e-5):
            bad = np.unravel_index(np.argmax(np.abs(np.nan_to_num(sums, nan=1e9) - 1)), sums.shape)
            self.explain(f"{describe(FUNCTION, inputs)} does not sum to 1 along axis {axis}: got a sum of "
                         f"{sums[bad]:.6g} (slice {tuple(int(i) for i in bad)}, axis {axis} left out), expected 1"
                         + ("" if np.all(p >= 0) else "; it also has negative entries"), FUNCTION, inputs, got)
        return p

    @check("1.1.1", FUNCTION, 1, "softmax: rows sum to 1 (default axis=-1, batch dims)")
    def test_softmax_rows_sum_to_one(self):
        self.assert_sums_to_one("softmax.rows", -1)
        self.assert_sums_to_one("softmax.batch", -1)

    @check("1.1.2", FUNCTION, 1, "softmax: sums to 1 along axis=0; axis=1 of a 3-D x")
    def test_softmax_sums_to_one_along_the_axis_asked_for(self):
        self.assert_sums_to_one("softmax.axis0", 0)
        self.assert_sums_to_one("softmax.axis1_3d", 1)

    @check("1.1.5", FUNCTION, 1, "softmax: -inf entries get a weight of exactly 0", visibility="after_published")
    def test_softmax_gives_minus_infinity_exactly_zero(self):
        inputs, got = self.run_case("softmax.neg_inf")
        p = self.assert_case("softmax.neg_inf", got)
        where = np.isneginf(inputs["x"])
        if np.any(p[where] != 0):
            i = tuple(int(v) for v in np.argwhere(where & (p != 0))[0])
            self.fail(f"{describe(FUNCTION, inputs)} -> the output at index {i}, where x is -inf: "
                      f"got {p[i]:.3g}, expected exactly 0")

    @check("1.1.6", FUNCTION, 1, "softmax: adding a constant to a row does not change it", visibility="after_published")
    def test_softmax_is_shift_invariant(self):
        p = self.assert_sums_to_one("softmax.shift", -1)
        inputs, got = self.run_case("softmax.shifted")
        q, label = self.output_array(FUNCTION, inputs, got)
        err = np.abs(q - p).max() if q.shape == p.shape else np.inf
        if not err <= 1e-5:
            self.fail(f"{label} (each row of x plus 50, -30 and 7.5) changed: got {q.tolist() if q.size < 20 else q}, "
                      f"expected the same as without the shift, {p.tolist()} (largest difference {err:.3g})")
