"""1.4 apply_rope: rotary position encoding; values, norms, relative positions, explicit positions."""
import numpy as np

from ..spec import Value, check
from .base import PartATest, describe

FUNCTION = "apply_rope"
GROUP = "rope"
RAISES = ("rope.odd_d",)
RELATIVE_SHIFTS = (0, 3, 40)


def cases():
    rng = np.random.default_rng(104)
    q, k = rng.normal(size=(4, 8)), rng.normal(size=(4, 8))
    pq, pk = np.array([0.0, 1.0, 2.0, 5.0]), np.array([2.0, 0.0, 2.0, 9.0])
    found = {
        "rope.single": {"x": rng.normal(size=(6, 8))},
        "rope.batch": {"x": rng.normal(size=(2, 3, 5, 4))},
        "rope.positions": {"x": rng.normal(size=(4, 6)), "positions": np.array([3.0, 0.0, 7.0, 12.0]), "base": 100.0},
        "rope.odd_d": {"x": rng.normal(size=(3, 5))},
    }
    for s in RELATIVE_SHIFTS:  # q at positions pq + s, k at pk + s: q.k depends on pq - pk only
        found[f"rope.rel_q{s}"] = {"x": q, "positions": pq + s}
        found[f"rope.rel_k{s}"] = {"x": k, "positions": pk + s}
    return found


def rotate(x, positions=None, base=10000.0, sign=1.0, half=False, freq_step=2, start=0):
    T, d = x.shape[-2:]
    pos = np.arange(start, start + T) if positions is None else np.asarray(positions, dtype=np.float64)
    theta = sign * pos[..., None] * base ** (-freq_step * np.arange(d // 2) / d)  # (..., T, d/2)
    x0, x1 = (x[..., : d // 2], x[..., d // 2:]) if half else (x[..., 0::2], x[..., 1::2])  # half: GPT-NeoX's pairs
    r0, r1 = x0 * np.cos(theta) - x1 * np.sin(theta), x0 * np.sin(theta) + x1 * np.cos(theta)
    return np.concatenate([r0, r1], axis=-1) if half else np.stack([r0, r1], axis=-1).reshape(x.shape)


def signatures(x, positions=None, base=10000.0):
    x = np.asarray(x, dtype=np.float64)
    yield None, rotate(x, positions, base)
    yield "your RoPE pairs look rotated the wrong way (direction -theta): out[2i] = x[2i] cos - x[2i+1] sin", \
        rotate(x, positions, base, sign=-1.0)
    yield "your RoPE pairs column i with column i + d/2 (rotate-half); the contract pairs 2i with 2i+1", \
        rotate(x, positions, base, half=True)
    yield "your RoPE frequencies use base**(-i/d); they are base**(-2i/d)", rotate(x, positions, base, freq_step=1)
    yield "your RoPE ignores the positions it is given (it uses 0..T-1)", rotate(x, None, base)
    yield "your default positions start at 1; they start at 0 (position 0 is not rotated)", \
        rotate(x, positions, base, start=1)


class TestRope(PartATest):
    values = [
        Value("1.4.1", FUNCTION, 1, "apply_rope: values, default positions, batch dims", "rope.single", "rope.batch",
              public=True),
        Value("1.4.4", FUNCTION, 1, "apply_rope: explicit positions and base", "rope.positions",
              visibility="after_published"),
    ]

    def rotation_problem(self, case):
        """None when the output on ``case`` is a rotation of each row (the norm kept, rows at p > 0
        changed), else what is wrong (the message, and whether a diagnosis applies)."""
        inputs, got = self.run_case(case)
        x = inputs["x"]
        r = self.assert_shape(case, got, x.shape, notation="x.shape (..., T, d)")
        call = describe(FUNCTION, inputs)
        got_n, want_n = np.linalg.norm(r, axis=-1), np.linalg.norm(x, axis=-1)
        if not np.allclose(got_n, want_n, rtol=1e-4, atol=1e-5):
            i = tuple(int(v) for v in np.unravel_index(np.argmax(np.abs(got_n - want_n)), got_n.shape))
            return (f"{call} changed the norm of row {i}: got {got_n[i]:.6g}, expected {want_n[i]:.6g} "
                    "(a rotation keeps lengths)"), inputs, got
        if np.allclose(r[..., 1:, :], x[..., 1:, :]):
            return f"{call}: got x back unchanged, expected each row at position p > 0 to be rotated", None, None
        return None, None, None

    @check("1.4.2", FUNCTION, 1, "apply_rope: rotates, keeping each row's norm")
    def test_rope_keeps_norms(self):
        for case in ("rope.single", "rope.batch"):
            message, inputs, got = self.rotation_problem(case)
            if message and inputs:
                self.explain(message, FUNCTION, inputs, got)
            elif message:
                self.fail(message)

    @check("1.4.3", FUNCTION, 1, "apply_rope: q.k depends only on the relative position", visibility="after_published")
    def test_rope_dot_products_depend_on_relative_position(self):
        """On the student's own dot products: the same for every shift of both positions, and
        not those of the unrotated vectors (so any rotary pairing passes, the contract's or not)."""
        dots = {}
        for s in RELATIVE_SHIFTS:
            q_in, q = self.run_case(f"rope.rel_q{s}")
            k_in, k = self.run_case(f"rope.rel_k{s}")
            q = self.assert_shape(f"rope.rel_q{s}", q, q_in["x"].shape)
            k = self.assert_shape(f"rope.rel_k{s}", k, k_in["x"].shape)
            dots[s] = (q * k).sum(axis=-1)
            if not np.allclose(dots[s], dots[0], rtol=1e-4, atol=1e-5):
                self.explain(f"apply_rope: the dot products of rotated q (positions {q_in['positions'].tolist()}) and "
                             f"k (positions {k_in['positions'].tolist()}): got {np.round(dots[s], 5).tolist()}, "
                             f"expected the same as with both shifted back by {s}, {np.round(dots[0], 5).tolist()} "
                             "(they depend only on the positions' difference)", FUNCTION, q_in, q)
        plain = (q_in["x"] * k_in["x"]).sum(axis=-1)
        moved = q_in["positions"] != k_in["positions"]
        if np.allclose(dots[0][moved], plain[moved], rtol=1e-4, atol=1e-5):
            self.explain(f"apply_rope: q and k at different positions kept the dot products of the unrotated vectors "
                         f"{np.round(plain, 5).tolist()}: nothing was rotated by position", FUNCTION, q_in, q)

    @check("1.4.5", FUNCTION, 0.5, "apply_rope: ValueError for an odd d", visibility="after_published")
    def test_rope_rejects_odd_d(self):
        def works():
            return self.rotation_problem("rope.single")[0]
        self.assert_value_error("rope.odd_d", "d = 5 is odd: the columns cannot be paired", works)
