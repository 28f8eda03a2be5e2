"""1.5 causal_mask: a bool (T, T) array, True where position t may attend to j <= t."""
import numpy as np

from ..compare import check_equal
from ..spec import check
from .base import PartATest, expected_output

FUNCTION = "causal_mask"
GROUP = "mask"
KINDS = "b"  # the dtype kinds its output may have (every other function: "f", floats)


def cases():
    return {f"mask.T{T}": {"T": T} for T in (1, 2, 5, 8)}


def signatures(T):
    ones = np.ones((T, T), dtype=bool)
    yield None, np.tril(ones)
    yield "your mask looks transposed (it lets position t see the future)", np.triu(ones)
    yield "your mask is off by one: it hides the diagonal (position t must see itself, j <= t)", np.tril(ones, -1)
    yield "your mask is off by one: it shows one future position (j <= t + 1)", np.tril(ones, 1)
    yield "your mask looks inverted: True must mean 'may attend' (j <= t)", np.triu(ones, 1)


class TestCausalMask(PartATest):
    @check("1.5.1", FUNCTION, 1, "causal_mask: a bool array of shape (T, T)")
    def test_causal_mask_is_bool_T_by_T(self):
        for T in (1, 5, 8):
            _, got = self.run_case(f"mask.T{T}")
            self.assert_shape(f"mask.T{T}", got, (T, T), notation="(T, T)")

    @check("1.5.2", FUNCTION, 1, "causal_mask: True where j <= t")
    def test_causal_mask_lets_t_see_j_up_to_t(self):
        for T in (1, 2, 5, 8):
            inputs, got = self.run_case(f"mask.T{T}")
            m, label = self.output_array(FUNCTION, inputs, got, kinds="any")
            msg = check_equal(actual=m.astype(bool), expected=expected_output(f"mask.T{T}"), name=label)
            if msg:
                self.explain(msg, FUNCTION, inputs, m.astype(bool))
