"""1.2 mean_context: the average over the token axis, the lecture's first context vector."""
import numpy as np

from ..spec import Value, check
from .base import PartATest

FUNCTION = "mean_context"
CASES = ("mean_context.single", "mean_context.batch", "mean_context.batch2")


def cases():
    rng = np.random.default_rng(102)
    return {f"mean_context.{k}": {"X": rng.normal(size=s)}
            for k, s in (("single", (5, 3)), ("batch", (2, 5, 3)), ("batch2", (3, 2, 4, 6)))}


def signatures(X):
    X = np.asarray(X, dtype=np.float64)
    yield None, X.mean(axis=-2)
    yield "you averaged over axis 0 instead of the token axis (-2)", X.mean(axis=0)
    yield "you averaged over the last axis (the features) instead of the tokens (axis -2)", X.mean(axis=-1)


class TestMeanContext(PartATest):
    values = [Value("1.2.2", FUNCTION, 1, "mean_context: the average over the token axis", *CASES,
                    visibility="after_published")]

    @check("1.2.1", FUNCTION, 1, "mean_context: (..., T, d) -> (..., d), batch dims")
    def test_mean_context_shape(self):
        for case in CASES:
            inputs, got = self.run_case(case)
            self.assert_shape(case, got, inputs["X"].shape[:-2] + inputs["X"].shape[-1:], notation="(..., d)")
