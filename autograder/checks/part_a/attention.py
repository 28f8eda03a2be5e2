"""1.6 scaled_dot_product_attention: the lecture's example, shapes, values with and without a
mask, rows that are distributions, and no peeking at the future."""
import numpy as np

from .. import gpt2
from ..spec import Value, check
from .base import PartATest, describe

FUNCTION = "scaled_dot_product_attention"
GROUP = "sdpa"
OUTPUTS = ("Z", "A")
FUTURE_FROM = 3  # sdpa.future and sdpa.future_changed differ only at positions >= 3
BUGS = {
    "columns": "your attention weights sum to 1 down each column instead of along each row "
               "(softmax over the queries; it must be over the keys, the last axis)",
    "unscaled": "your scores look unscaled: they match Q K^T without dividing by sqrt(d_k)",
    "scale_d": "your scores look divided by d_k instead of sqrt(d_k)",
    "scale_dv": "your scores look divided by sqrt(d_v) (the value size) instead of sqrt(d_k)",
    "mask_T": "your mask looks transposed (it lets position t see the future)",
    "mask_inverted": "your mask looks inverted: True means keep, False means set the score to -inf",
    "no_mask": "your attention ignores the mask",
    "mask_zero": "your masked scores look set to 0 instead of -inf, so masked keys still get weight",
    "mask_after": "you zeroed the masked weights after the softmax; set masked scores to -inf before it",
}


def _tril(T):
    return np.tril(np.ones((T, T), dtype=bool))


def cases():
    rng = np.random.default_rng(106)
    n = rng.normal
    Q, K, V = n(size=(6, 4)), n(size=(6, 4)), n(size=(6, 3))
    Q2, K2, V2 = Q.copy(), K.copy(), V.copy()
    K2[FUTURE_FROM:], V2[FUTURE_FROM:] = n(size=(3, 4)), n(size=(3, 3))  # the future's keys and values ...
    Q2[FUTURE_FROM:] = n(size=(3, 4))  # ... and queries: a softmax over the queries then shows as the leak it is
    mask = n(size=(4, 6)) > 0.3
    mask[:, 0] = True  # every query keeps at least one key
    return {
        "sdpa.lecture": {"Q": np.array([[1.0], [2.0]]), "K": np.array([[1.0], [3.0]]),
                         "V": np.array([[10.0], [20.0]]), "mask": _tril(2)},
        "sdpa.shapes": {"Q": n(size=(2, 3, 4, 5)), "K": n(size=(2, 3, 6, 5)), "V": n(size=(2, 3, 6, 7))},
        "sdpa.nomask": {"Q": 1.5 * n(size=(5, 4)), "K": 1.5 * n(size=(6, 4)), "V": n(size=(6, 3))},
        "sdpa.causal": {"Q": 1.5 * n(size=(2, 3, 5, 4)), "K": 1.5 * n(size=(2, 3, 5, 4)),
                        "V": n(size=(2, 3, 5, 6)), "mask": _tril(5)},
        "sdpa.future": {"Q": Q, "K": K, "V": V, "mask": _tril(6)},
        "sdpa.future_changed": {"Q": Q2, "K": K2, "V": V2, "mask": _tril(6)},
        "sdpa.random_mask": {"Q": 1.5 * n(size=(2, 4, 5)), "K": 1.5 * n(size=(2, 6, 5)),
                             "V": n(size=(2, 6, 3)), "mask": mask},
    }


def signatures(Q, K, V, mask=None):
    Q, K, V = (np.asarray(t, dtype=np.float64) for t in (Q, K, V))
    yield None, list(gpt2.attend(Q, K, V, mask))
    for bug, text in BUGS.items():
        try:  # (a transposed mask may not broadcast)
            yield text, list(gpt2.attend(Q, K, V, mask, bug))
        except ValueError:
            pass


class TestScaledDotProductAttention(PartATest):
    values = [
        Value("1.6.1", FUNCTION, 1, "scaled_dot_product_attention: the lecture's example", "mask.T2", "sdpa.lecture",
              also=("causal_mask",), rtol=1e-4, atol=1e-4),
        Value("1.6.3", FUNCTION, 1, "scaled_dot_product_attention: Z and A without a mask", "sdpa.nomask",
              "sdpa.shapes", public=True),
        Value("1.6.4", FUNCTION, 1.5, "scaled_dot_product_attention: causal, (B, nh, T, hs)", "sdpa.causal",
              visibility="after_published"),
        Value("1.6.7", FUNCTION, 1, "scaled_dot_product_attention: a (Tq, Tk) mask, broadcast", "sdpa.random_mask",
              visibility="after_published"),
    ]

    @check("1.6.2", FUNCTION, 1, "scaled_dot_product_attention: shapes of Z, A, batch dims")
    def test_sdpa_shapes_with_batch_dims(self):
        inputs, got = self.run_case("sdpa.shapes")
        Q, K, V = inputs["Q"], inputs["K"], inputs["V"]
        self.assert_shape("sdpa.shapes", got, Q.shape[:-1] + V.shape[-1:], notation="(B, nh, Tq, dv)", what="Z",
                          index=0)
        self.assert_shape("sdpa.shapes", got, Q.shape[:-1] + K.shape[-2:-1], notation="(B, nh, Tq, Tk)", what="A",
                          index=1)

    @check("1.6.5", FUNCTION, 1, "scaled_dot_product_attention: rows of A are distributions")
    def test_sdpa_rows_are_distributions(self):
        for case in ("sdpa.causal", "sdpa.random_mask"):
            inputs, got = self.run_case(case)
            A, label = self.output_array(FUNCTION, inputs, self.part_of(FUNCTION, inputs, got, 1), what="A")
            if A.shape[-2:] != inputs["mask"].shape:
                self.explain(f"{label} has the wrong shape: got {A.shape}, expected (..., Tq, Tk) = "
                             f"{inputs['Q'].shape[:-1] + inputs['K'].shape[-2:-1]}", FUNCTION, inputs, got)
            mask = np.broadcast_to(inputs["mask"], A.shape)
            sums, negative = A.sum(axis=-1), " and negative weights" if (A < 0).any() else ""
            if not np.allclose(sums, 1.0, atol=1e-5) or negative:
                worst = np.argmax(np.abs(np.nan_to_num(sums, nan=9) - 1))
                i = tuple(int(v) for v in np.unravel_index(worst, sums.shape))
                self.explain(f"{label}: row {i} got a sum of {sums[i]:.6g}{negative}, expected every row to be "
                             "a distribution (non-negative, sum 1)", FUNCTION, inputs, got)
            if (A[~mask] != 0).any():
                i = tuple(int(v) for v in np.argwhere(~mask & (A != 0))[0])
                self.explain(f"{label}: masked weight at index {i}: got {A[i]:.3g}, expected exactly 0 "
                             "(mask is False there)", FUNCTION, inputs, got)

    @check("1.6.6", FUNCTION, 1, "scaled_dot_product_attention: no peeking at the future", visibility="after_published")
    def test_future_keys_do_not_change_past_outputs(self):
        inputs, before = self.run_case("sdpa.future")
        _, after = self.run_case("sdpa.future_changed")
        Z0, _ = self.output_array(FUNCTION, inputs, self.part_of(FUNCTION, inputs, before, 0), what="Z")
        Z1, _ = self.output_array(FUNCTION, inputs, self.part_of(FUNCTION, inputs, after, 0), what="Z")
        if Z0.shape != Z1.shape or Z0.shape[:1] != inputs["Q"].shape[:1]:
            self.explain(f"{describe(FUNCTION, inputs)} -> Z: got shape {Z0.shape}, expected (T, dv) = "
                         f"{inputs['V'].shape}", FUNCTION, inputs, before)
        self.assert_no_peeking(FUNCTION, inputs, Z0, Z1, before, changed="the queries, keys and values", what="Z")
