"""2.3 CausalSelfAttention: nothing flows from later positions (perturbation and gradient probes)
and attention is computed by hand.

The probes use the ``probe`` weights: q = k = 0, so every visible position gets the same
weight whatever the scale of the scores, and the MLP is off. A probe passes when the student's
raw outputs equal the reference's for the same inputs, or those of a known variant that is
causal (its bug is then charged once, by test 2.2.1).
"""
import numpy as np

from .. import gpt2
from ..compare import check_close
from ..spec import check
from . import cases
from .base import PartBTest, fmt_shape
from .diagnose import BUGS

CAUSAL_BUGS = tuple(b for b in BUGS if b not in gpt2.LEAKS)
LEAK = ("the model looks into the future (is the causal mask applied, and the right way round: position t "
        "attends to j <= t?)")


class TestCausality(PartBTest):
    def probe_logits(self, what, **options):
        inputs = [self.data["probe.idx"]] + [self.data[f"probe.changed{t}"] for t in self.meta["probe_positions"]]
        out = self.student(what, "gpt", model=self.model("probe"), calls=[cases.forward(x, **options) for x in inputs])
        return inputs, out

    def judge_variant(self, got, inputs, what):
        """None when ``got`` (one array per input) is a known causal variant's; else the failure message."""
        w = self.weight_set("probe")
        kinds = {self.architecture(g, w, x) for g, x in zip(got, inputs)}
        if len(kinds) == 1 and kinds <= set(CAUSAL_BUGS):
            return None
        leaked = kinds & gpt2.LEAKS
        if leaked:
            return f"{what}: {LEAK}\nLikely cause: {BUGS[sorted(leaked)[0]]}"
        return (f"{what}: not judged, because your logits on the probe's weights are neither the reference's nor "
                "those of a known model (see test 2.2.1 for how they differ); causality is credited only for "
                "outputs the grader can check")

    @check("2.3.1", "CausalSelfAttention", 3, "CausalSelfAttention: future tokens do not change past logits",
           also=("GPT",))
    def test_future_tokens_do_not_change_past_logits(self):
        inputs, out = self.probe_logits("GPT.forward on the causality probe")
        got = [self.logits(o, x, "GPT.forward on the causality probe") for o, x in zip(out, inputs)]
        expected = self.data["probe.logits"]
        if all(check_close(actual=g, expected=e, name="logits") is None for g, e in zip(got, expected)):
            return
        for t, changed in zip(self.meta["probe_positions"], got[1:]):
            msg = check_close(actual=changed[:, :t + 1], expected=got[0][:, :t + 1],
                              name=f"logits[:, :{t + 1}] after changing the tokens after position {t}")
            if msg:
                self.fail(f"changing only the tokens after position t changed your logits at positions <= t, so "
                          f"{LEAK}\n{msg}")
        why = self.judge_variant(got, inputs, "the causality probe")
        if why:
            self.fail(why)

    @check("2.3.2", "CausalSelfAttention", 2, "CausalSelfAttention: position t's logits have zero gradient w.r.t. "
           "later token embeddings", visibility="after_published")
    def test_later_embeddings_get_no_gradient(self):
        idx, t = self.data["probe.idx"], self.meta["grad_position"]
        what = f"the gradient of the logits at position {t} w.r.t. the token embeddings (probe weights)"
        call = dict(fn="gradient", idx=idx, t=t, r=self.data["probe.r"])
        out = self.student(what, "gpt", model=self.model("probe"), calls=[call])[0]
        grad, logits = np.asarray(out["grad"], dtype=np.float64), out["logits"]
        if grad.shape != (*idx.shape, self.config["n_embd"]):
            self.fail(f"{what}: got a gradient of shape {grad.shape}, expected (B, T, C) = "
                      f"{(*idx.shape, self.config['n_embd'])}")
        later, before = np.abs(grad[:, t + 1:]), np.abs(grad[:, :t + 1])
        if later.max(initial=0) > 1e-6 * max(before.max(initial=0), 1e-12):
            where = (np.flatnonzero(later.max(axis=(0, 2)) > 1e-6 * before.max()) + t + 1).tolist()
            self.fail(f"the logits at position {t} have a nonzero gradient w.r.t. the token embeddings at later "
                      f"positions {where} (largest {later.max():.3g}, vs {before.max():.3g} at positions <= t): "
                      "information flows from the future")
        if check_close(actual=logits, expected=self.data["probe.logits"][0], name="logits") is None:
            reference = self.data["probe.grad"]
            msg = check_close(actual=grad, expected=reference, name=f"the gradient {fmt_shape(grad.shape, 'BTC')}",
                              rtol=1e-3, atol=1e-4 * float(np.abs(reference).max()))
            if msg:
                self.fail(f"{what} differs from the reference's, though the logits are the same: is the graph cut "
                          f"somewhere (a .detach(), .data or torch.no_grad inside forward)?\n{msg}")
            return
        why = self.judge_variant([logits], [idx], "the gradient probe")
        if why:
            self.fail(why)
        if not before.max(initial=0) > 0:
            self.fail(f"the logits at position {t} have zero gradient w.r.t. every token embedding; they should "
                      "depend on the tokens at positions <= t")

    @check("2.3.3", "CausalSelfAttention", 2, "CausalSelfAttention: computes attention itself (no "
           "scaled_dot_product_attention or MultiheadAttention)")
    def test_attention_is_computed_by_hand(self):
        idx = self.data["probe.idx"]
        what = "GPT.forward without PyTorch's attention functions"
        out = self.student(what, "gpt", model=self.model("probe"), calls=[cases.forward(idx, no_builtins=True)])[0]
        if out["used"]:
            self.fail(f"your model calls {', '.join(out['used'])}, which this homework asks you to write "
                      "yourself: softmax(q k^T / sqrt(hs)) with the causal mask, then times v")
        got = self.logits(out, idx, what)
        if self.architecture(got, self.weight_set("probe"), idx) is None:
            self.fail(f"{what}: not judged, because the logits are neither the reference's nor a known model's "
                      "on these weights (see test 2.2.1), so the grader cannot tell the model computed them")
