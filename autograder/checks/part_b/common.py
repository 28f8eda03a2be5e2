"""What Part B's checks share: the recorded data, the reference's weights, and got/expected
helpers for the raw outputs of the worker's ops (``autograder/sandbox/worker/ops_part_b.py``)."""
import numpy as np

from ..base import GradedTest


def fmt_shape(shape, letters):
    """``(B, T, V) = (3, 8, 13)``."""
    return f"({', '.join(letters)}) = {tuple(int(s) for s in shape)}"


class PartBTest(GradedTest):
    part = "part-b"
    module = "gpt"

    # -- recorded data ---------------------------------------------------------------------
    @property
    def data(self):
        return self.ctx.expected("part_b")

    @property
    def meta(self):
        return self.ctx.json("part_b")

    @property
    def config(self):
        return self.meta["config"]

    def weights(self, **overrides):
        """The weights the reference's outputs were recorded with (name -> float32 array)."""
        w = {k[2:]: v for k, v in self.data.items() if k.startswith("w.")}
        return dict(w, **overrides)

    # -- student outputs -------------------------------------------------------------------
    def check(self, message):
        if message:
            self.fail(message)

    def op(self, name, what, **args):
        """Worker op ``name``; a student failure fails the test, saying what was being done."""
        try:
            return self.run_op(name, **args)
        except self.failureException as e:
            self.fail(f"{what}: {e}")

    def forward(self, idx, targets=None, weights=None):
        """The student's forward on the recorded weights; the logits' shape is checked."""
        B, T = np.shape(idx)
        out = self.op("gpt_forward", f"GPT.forward on idx {fmt_shape((B, T), 'BT')}", config=self.config,
                      weights=weights or self.weights(), idx=idx, targets=targets)
        expected = (B, T, self.config["vocab_size"])
        got = np.shape(out["logits"])
        if got != expected:
            self.fail(f"GPT.forward's logits have the wrong shape: got {got}, expected "
                      f"{fmt_shape(expected, 'BTV')} for idx of shape {fmt_shape((B, T), 'BT')}")
        return out

    def tokens(self, out, *, what, shape, letters, vocab):
        """The int64 token ids ``out`` (from the ops ``sample``/``generate``) after checking them."""
        if tuple(out["shape"]) != tuple(shape):
            self.fail(f"{what} returned a tensor of the wrong shape: got {tuple(out['shape'])}, "
                      f"expected {fmt_shape(shape, letters)}")
        if out["dtype"] != "torch.int64":
            self.fail(f"{what} should return a LongTensor (torch.int64), got {out['dtype']}")
        ids = np.asarray(out["tokens"])
        bad = ids[(ids < 0) | (ids >= vocab)]
        if bad.size:
            self.fail(f"{what} returned token ids outside 0..{vocab - 1}: {sorted(set(bad.tolist()))[:5]}")
        return ids

    def raised(self, out, *, what, expected="ValueError"):
        """Fail unless the op (run with ``catch=True``) saw ``expected`` (or a subclass) raised."""
        if out["raised"] is None:
            self.fail(f"{what} did not raise; expected {expected}")
        if expected not in out["raised"]:
            self.fail(f"{what} raised {out['raised'][0]}: {out['message']}\nexpected {expected}")
