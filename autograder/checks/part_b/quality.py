"""2.7 Generation quality: the grader trains the student's GPT (the one loop, fixed seed, starting
weights and budget) and judges the weights it gets back, here.

The worker returns the trained weights. On fresh random inputs the parent checks that the
student's model with those weights computes what the reference architecture (or a known causal
variant of it) computes with them; then it computes the validation loss on sentences that
never leave this process, and draws the samples itself with its own generator. Nothing the
worker reports about its training is taken on trust.
"""
import math
import secrets

import numpy as np
from gradescope_utils.autograder_utils import decorators as gs

from .. import gpt2
from ..spec import check
from . import cases, quality_data, weights
from .base import MODEL, PartBTest


class TestQuality(PartBTest):
    def trained(self):
        """This grade's training result, computed once and shared by the quality tests."""
        cache = self.session.cache.get("training")
        if cache is None:
            cache = self.session.cache["training"] = {"error": None}
            try:
                cache.update(self._train())
            except self.failureException as e:
                cache["error"] = str(e)
        if cache["error"]:
            self.fail(cache["error"])
        return cache

    def _train(self):
        from reference import corpus
        q = self.meta["quality"]
        d, layout = quality_data.data(corpus, q), self.layout()
        out = self.student("training your GPT with the grader's loop", "train", timeout=q["timeout"], key=("train",),
                           **quality_data.train_args(d, q, layout))
        w = weights.from_layout(out.get("weights") or {}, layout)
        wrong = [n for n, shape in weights.gpt2_parameters(d.config) if tuple(np.shape(w.get(n))) != shape]
        if wrong:
            self.fail(f"after training, your GPT's parameters are not GPT-2's ({', '.join(wrong[:4])} ...), so the "
                      "grader cannot evaluate them (see test 2.1.1)")
        V, T = d.config["vocab_size"], d.config["block_size"]
        fresh = np.random.default_rng(secrets.randbits(64)).integers(0, V, (4, T))  # unknown to the student
        res = self.student("your trained GPT on new inputs", "gpt", model=cases.model(d.config, out["weights"]),
                           calls=[cases.forward(fresh)])
        arch = self.architecture(res[0]["logits"], w, fresh, n_head=q["n_head"])
        if arch is None:
            self.fail("after training, your GPT's logits on new inputs are not what a GPT-2 computes with the "
                      "weights it returned (nor a known variant of it), so the grader cannot evaluate it outside "
                      "your process: see test 2.2.1 for how your model's logits differ from the reference's")
        if arch in gpt2.LEAKS:
            self.fail("after training, your GPT computes a model that sees later tokens "
                      f"({arch.replace('_', ' ')}; see tests 2.2.1 and 2.3.1), so its validation loss would not be "
                      "a prediction and is not scored")
        bug = None if arch == "reference" else arch
        loss, judged = quality_data.evaluate(w, d, q, corpus, bug)
        return dict(loss=loss, judged=judged, losses=np.asarray(out.get("losses", [])), arch=arch)

    def examples(self, judged, k=5):
        return "\n".join(f"  {s!r}" for s in judged["sentences"][:k]) or "  (none)"

    @check("2.7.1", "GPT", 4, "GPT: trained by the grader, its validation perplexity is close to the reference's",
           also=MODEL)
    def test_trained_validation_perplexity_is_close_to_reference(self):
        q, result = self.meta["quality"], self.trained()
        loss = result["loss"]
        ppl = math.exp(loss) if np.isfinite(loss) else float("inf")
        limit = q["reference_val_loss"] + q["val_loss_margin"]
        print(f"Trained {q['steps']} steps (batch {q['batch_size']}, block_size {q['block_size']}, seed {q['seed']}); "
              f"the grader computed the validation loss of the weights it got back: {loss:.4f} nats/char on "
              f"{q['val_sentences']} whole sentences, perplexity {ppl:.4f}; the reference reaches "
              f"{q['reference_val_loss']:.4f} (perplexity {q['reference_val_ppl']:.4f}); the best any model can do is "
              f"about {q['entropy_per_char']:.4f}.")
        if not loss <= limit:
            tail = result["losses"][-20:]
            self.fail(f"the validation loss {loss:.4f} is above {limit:.4f} (the reference's "
                      f"{q['reference_val_loss']:.4f} + {q['val_loss_margin']}): perplexity {ppl:.4f}, limit "
                      f"{math.exp(limit):.4f}."
                      + (f" Training loss at the end: {np.mean(tail):.4f}" if len(tail) else ""))

    @check("2.7.2", "GPT", 3, "GPT: trained by the grader, its samples are mostly sentences of the language",
           also=MODEL)
    def test_trained_samples_are_in_the_language(self):
        q, judged = self.meta["quality"], self.trained()["judged"]
        print(f"{judged['n']} sentences sampled by the grader at temperature {q['temperature']}, "
              f"{judged['in_language']:.0%} in the language; the first ones:\n{self.examples(judged)}")
        if judged["in_language"] < q["in_language_min"]:
            self.fail(f"only {judged['in_language']:.0%} of the {judged['n']} sampled sentences are sentences of "
                      f"the language; expected at least {q['in_language_min']:.0%}")

    @check("2.7.3", "GPT", 2, "GPT: trained by the grader, its samples are diverse, not repeating", also=MODEL)
    def test_trained_samples_are_diverse(self):
        q, judged = self.meta["quality"], self.trained()["judged"]
        if judged["n"] < q["min_sentences"]:
            self.fail(f"the samples hold only {judged['n']} complete sentences in {q['sample_rows']} rows of "
                      f"{q['sample_tokens'] or q['block_size'] - 1} characters (expected at least "
                      f"{q['min_sentences']}); the model rarely ends a sentence")
        if judged["distinct"] < q["distinct_min"] or judged["looping"] > q["looping_rows_max"]:
            self.fail(f"the samples repeat themselves: {judged['distinct']:.0%} of {judged['n']} sentences are "
                      f"distinct (expected at least {q['distinct_min']:.0%}), {judged['looping']} rows loop "
                      f"(at most {q['looping_rows_max']} allowed); the first ones:\n{self.examples(judged)}")

    @gs.number("2.7.9")
    @gs.tags("part-b", "GPT")
    @gs.leaderboard("validation perplexity", "asc")
    def test_leaderboard_validation_perplexity(self, set_leaderboard_value=None):
        """The leaderboard: validation perplexity of the grader's training run (never below the entropy bound)."""
        q, result = self.meta["quality"], self.trained()
        loss = result["loss"]
        if not np.isfinite(loss):
            return
        if loss < q["entropy_per_char"]:
            self.session.staff.append(f"leaderboard value not published: validation loss {loss:.4f} nats/char is "
                                      f"below the language's entropy {q['entropy_per_char']:.4f}, which no model "
                                      "trained only on the training stream can reach (trained on the validation "
                                      "sentences, or weights from elsewhere?)")
            return
        set_leaderboard_value(round(math.exp(loss), 4))
