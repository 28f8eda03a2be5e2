"""2.2 GPT.forward: the logits against the reference's with the same weights, the loss, and the
error for a sequence longer than block_size."""
from .. import gpt2
from ..compare import check_close
from ..spec import check
from . import cases
from .base import MODEL, PartBTest, fmt_shape


class TestForward(PartBTest):
    @check("2.2.1", "GPT", 6, "GPT.forward: logits match the reference's with the same weights", also=MODEL)
    def test_logits_match_reference(self):
        w, names = self.weight_set("full"), ("forward", "short")
        idx = {n: self.data[f"{n}.idx"] for n in names}
        what = "GPT.forward on the grader's weights"
        calls = [cases.forward(idx[n], every_position=False) for n in names]
        out = self.student(what, "gpt", model=self.model("full"), calls=calls)
        for n, o in zip(names, out):
            got = self.logits(o, idx[n], f"GPT.forward(idx) with idx {fmt_shape(idx[n].shape, 'BT')}")
            self.compare_logits(got, self.data[f"full.{n}.logits"], f"logits {fmt_shape(got.shape, 'BTV')} for "
                                f"T = {idx[n].shape[1]}", w, idx[n])

    @check("2.2.2", "GPT", 1, "GPT.forward: loss is the mean cross-entropy over all positions")
    def test_loss_is_mean_cross_entropy(self):
        idx, targets, short = self.data["forward.idx"], self.data["forward.targets"], self.data["short.idx"]
        what = "GPT.forward(idx, targets)"
        out, no_targets = self.student(what, "gpt", model=self.model("generation"),
                                       calls=[cases.forward(idx, targets), cases.forward(short)])
        self.logits(out, idx, what)
        if out["loss"] is None:
            self.fail(f"{what} returned loss None; expected the mean cross-entropy of the logits against the targets")
        expected, reference = self.meta["gen_loss"], self.data["gen.forward.logits"]
        msg = check_close(actual=out["loss"], expected=expected, name=f"{what}'s loss")
        if msg:
            B, T = targets.shape
            hints = {"summed over the B*T positions, not their mean": expected * B * T,
                     "computed with shifted targets; the targets given are already the next tokens":
                         gpt2.cross_entropy(reference[:, :-1], targets[:, 1:])}
            msg += "".join(f"\nLikely cause: your loss looks {h}" for h, v in hints.items()
                           if abs(out["loss"] - v) <= 1e-4 * abs(v) + 1e-5)
            self.fail(msg)
        if no_targets["loss"] is not None:
            self.fail("GPT.forward(idx) without targets should return loss None")

    @check("2.2.3", "GPT", 1, "GPT.forward: T > block_size raises ValueError")
    def test_sequence_longer_than_block_size_raises(self):
        """On the student's own initialised model: the verdict does not depend on weights, so a
        weight layout the grader cannot load costs nothing here."""
        valid, long = self.data["own.idx"], self.data["own.long"]
        what = f"GPT.forward on idx {fmt_shape(long.shape, 'BT')} with block_size = {self.config['block_size']}"
        calls = [{"fn": "parameters", "values": True}, cases.forward(valid), cases.forward(long, catch=True)]
        params, ok, out = self.student(what, "gpt", model=self.model(), calls=calls)
        self.raised(out, what=what)
        self.gate_own(ok["logits"], params, valid, f"{what}: the ValueError")

