"""1.3 sinusoidal_positional_encoding and 1.4 apply_rope."""
import numpy as np
from gradescope_utils.autograder_utils.decorators import number, tags, visibility, weight

from ..cases_part_a import RELATIVE_SHIFTS
from .common import PartATest, describe


class TestSinusoidal(PartATest):
    @weight(1)
    @number("1.3.1")
    @visibility("visible")
    @tags("part-a", "sinusoidal_positional_encoding")
    def test_sinusoidal_shape_and_row_zero(self):
        """sinusoidal_positional_encoding: shape (T, d_model), row 0"""
        inputs, got = self.run_case("pe.even")
        T, d = inputs["T"], inputs["d_model"]
        pe = self.assert_shape("pe.even", got, (T, d), notation="(T, d_model)")
        row0 = np.tile([0.0, 1.0], d // 2)
        if not np.allclose(pe[0], row0, atol=1e-6):
            self.explain(f"{describe('sinusoidal_positional_encoding', inputs)} -> row 0 (position 0): "
                         f"got {np.round(pe[0], 4).tolist()}, expected {row0.tolist()} (sin 0 = 0, cos 0 = 1)",
                         "sinusoidal_positional_encoding", inputs, got)

    @weight(1)
    @number("1.3.2")
    @visibility("visible")
    @tags("part-a", "sinusoidal_positional_encoding")
    def test_sinusoidal_values(self):
        """sinusoidal_positional_encoding: values, even d_model"""
        self.assert_case("pe.even")
        self.assert_case("pe.wide")

    @weight(1)
    @number("1.3.3")
    @visibility("after_published")
    @tags("part-a", "sinusoidal_positional_encoding")
    def test_sinusoidal_odd_d_model(self):
        """sinusoidal_positional_encoding: values, odd d_model"""
        self.assert_case("pe.odd")
        self.assert_case("pe.one")

    @weight(1)
    @number("1.3.4")
    @visibility("after_published")
    @tags("part-a", "sinusoidal_positional_encoding")
    def test_sinusoidal_rejects_bad_sizes(self):
        """sinusoidal_positional_encoding: ValueError for bad sizes"""
        self.assert_value_error("pe.negative_T", "T < 0")
        self.assert_value_error("pe.zero_d", "d_model <= 0")
        self.assert_value_error("pe.negative_d", "d_model <= 0")


class TestRope(PartATest):
    @weight(1)
    @number("1.4.1")
    @visibility("visible")
    @tags("part-a", "apply_rope")
    def test_rope_values(self):
        """apply_rope: values, default positions, batch dims"""
        for case in ("rope.single", "rope.batch"):
            inputs, got = self.run_case(case)
            self.assert_shape(case, got, inputs["x"].shape, notation="x.shape (..., T, d)")
            self.assert_case(case, got, inputs=inputs)

    @weight(1)
    @number("1.4.2")
    @visibility("visible")
    @tags("part-a", "apply_rope")
    def test_rope_keeps_norms(self):
        """apply_rope: rotates, keeping each row's norm"""
        for case in ("rope.single", "rope.batch"):
            inputs, got = self.run_case(case)
            x = inputs["x"]
            r = self.assert_shape(case, got, x.shape, notation="x.shape (..., T, d)")
            call = describe("apply_rope", inputs)
            got_n, want_n = np.linalg.norm(r, axis=-1), np.linalg.norm(x, axis=-1)
            if not np.allclose(got_n, want_n, rtol=1e-4, atol=1e-5):
                i = tuple(int(v) for v in np.unravel_index(np.argmax(np.abs(got_n - want_n)), got_n.shape))
                self.explain(f"{call} changed the norm of row {i}: got {got_n[i]:.6g}, expected {want_n[i]:.6g} "
                             "(a rotation keeps lengths)", "apply_rope", inputs, got)
            if np.allclose(r[..., 1:, :], x[..., 1:, :]):
                self.fail(f"{call}: got x back unchanged, expected each row at position p > 0 to be rotated")

    @weight(1)
    @number("1.4.3")
    @visibility("after_published")
    @tags("part-a", "apply_rope")
    def test_rope_dot_products_depend_on_relative_position(self):
        """apply_rope: q.k depends only on the relative position"""
        want = None
        for s in RELATIVE_SHIFTS:
            q_in, q = self.run_case(f"rope.rel_q{s}")
            k_in, k = self.run_case(f"rope.rel_k{s}")
            q = self.assert_shape(f"rope.rel_q{s}", q, q_in["x"].shape)
            k = self.assert_shape(f"rope.rel_k{s}", k, k_in["x"].shape)
            dots = (q * k).sum(axis=-1)
            if want is None:
                want = (self.expected("rope.rel_q0") * self.expected("rope.rel_k0")).sum(axis=-1)
            if not np.allclose(dots, want, rtol=1e-4, atol=1e-5):
                self.explain(f"apply_rope: the dot products of rotated q (positions {q_in['positions'].tolist()}) "
                             f"and k (positions {k_in['positions'].tolist()}): got {np.round(dots, 5).tolist()}, "
                             f"expected {np.round(want, 5).tolist()} (they depend only on the positions' difference)",
                             "apply_rope", q_in, q)

    @weight(1)
    @number("1.4.4")
    @visibility("after_published")
    @tags("part-a", "apply_rope")
    def test_rope_explicit_positions_and_base(self):
        """apply_rope: explicit positions and base"""
        self.assert_case("rope.positions")

    @weight(0.5)
    @number("1.4.5")
    @visibility("after_published")
    @tags("part-a", "apply_rope")
    def test_rope_rejects_odd_d(self):
        """apply_rope: ValueError for an odd d"""
        self.assert_value_error("rope.odd_d", "d = 5 is odd: the columns cannot be paired")
