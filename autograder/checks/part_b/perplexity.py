"""2.6 perplexity: exp of the mean next-token NLL, on the ``generation`` weights (an attention or
MLP bug changes nothing there; the expected value follows the model the student's forward
computes, so a model bug is charged once, by test 2.2.1)."""
import math

import numpy as np

from .. import gpt2
from ..compare import check_close
from ..spec import check
from .base import PartBTest, fmt_shape


class TestPerplexity(PartBTest):
    def perplexity(self, model):
        windows = self.data["ppl.windows"]
        what = f"perplexity(model, windows {fmt_shape(windows.shape, ('N', 'T + 1'))})"
        out = self.student(what, "gpt", model=model, calls=[dict(fn="perplexity", windows=windows)])[0]
        if out["type"] not in ("float", "float64", "int"):
            self.fail(f"perplexity should return a Python float, got a {out['type']} (use .item() or math.exp)")
        return out["value"]

    @check("2.6.1", "perplexity", 2, "perplexity: exp of the mean negative log-likelihood of the windows' next tokens")
    def test_perplexity_is_exp_of_mean_nll(self):
        windows = self.data["ppl.windows"]
        got = self.perplexity(self.model("generation"))
        x, y = windows[:, :-1], windows[:, 1:]
        bug = self.identify("generation")
        logits = gpt2.logits(self.weight_set("generation"), x, self.config["n_head"], bug)
        expected = self.meta["perplexity"] if bug is None else math.exp(gpt2.cross_entropy(logits, y))
        msg = check_close(actual=got, expected=expected, name="perplexity")
        if msg:
            msg += (f"\nexpected: exp of the mean cross-entropy of the model's logits for windows[:, :-1] "
                    f"{fmt_shape(x.shape, 'NT')} against the targets windows[:, 1:], all N*T predictions weighted "
                    "equally")
            hints = {"the mean negative log-likelihood without exp": math.log(expected),
                     "the mean of per-window perplexities": np.mean([math.exp(gpt2.cross_entropy(
                         logits[i:i + 1], y[i:i + 1])) for i in range(len(y))]),
                     "exp of the mean of per-batch mean losses (a smaller last batch counts too much)":
                         math.exp(np.mean([gpt2.cross_entropy(logits[i:i + 64], y[i:i + 64])
                                           for i in range(0, len(y), 64)])),
                     "computed against the inputs windows[:, :-1] instead of the targets windows[:, 1:]":
                         math.exp(gpt2.cross_entropy(logits, x))}
            msg += "".join(f"\nLikely cause: your value looks like {h}" for h, v in hints.items()
                           if abs(got - v) <= 1e-4 * abs(v) + 1e-5)
            self.fail(msg)

    @check("2.6.2", "perplexity", 1, "perplexity: a model with uniform logits scores vocab_size",
           visibility="after_published")
    def test_uniform_model_scores_vocab_size(self):
        model = self.model("generation")
        zero = np.zeros_like(model["weights"]["transformer.wte.weight"])
        model["weights"].update({"transformer.wte.weight": zero, "lm_head.weight": zero})
        V = self.config["vocab_size"]
        msg = check_close(actual=self.perplexity(model), expected=float(V),
                          name=f"perplexity of a model whose logits are all 0 (V = {V})")
        if msg:
            self.fail(msg)
