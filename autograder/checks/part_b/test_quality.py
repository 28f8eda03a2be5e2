"""Part B, generation quality: the grader trains the student's GPT once per grade with the
trusted loop (fixed seed, initial weights and budget; ``ops_part_b.train``) on the synthetic
language of ``reference/corpus.py``, then judges, here, the validation loss computed from the
returned logits and the samples drawn from the trained model."""
import math

import numpy as np
from gradescope_utils.autograder_utils.decorators import number, tags, visibility, weight

from .. import cases_part_b as cases
from .common import PartBTest

MODEL = ("GPT", "CausalSelfAttention", "MLP", "Block")


def judge(rows, tok, corpus):
    """Sentences of the samples, the fraction in the language, distinct, and looping rows."""
    sentences, looping = [], 0
    for row in rows:
        got = corpus.split_sentences(tok.decode(row))
        sentences += got
        if len(got) >= 2 and len(set(got)) <= len(got) / 2:  # a row repeating itself
            looping += 1
    n = len(sentences)
    return {"sentences": sentences, "n": n, "looping": looping,
            "in_language": sum(map(corpus.is_sentence, sentences)) / n if n else 0.0,
            "distinct": len(set(sentences)) / n if n else 0.0}


def looks_ahead(out, positions):
    """Where the logits of whole windows differ from those of their prefixes (a model that sees
    later tokens has a validation loss that means nothing), or None."""
    full = np.asarray(out["val_logits"])[: len(out["prefix_logits"]), positions]  # (n, P, V)
    prefix = np.asarray(out["prefix_logits"])
    if full.shape != prefix.shape:
        return f"shapes {full.shape} and {prefix.shape}"
    bad = np.abs(full - prefix) > 1e-3 + 1e-3 * np.abs(prefix)
    if bad.any():
        return f"positions {sorted({positions[j] for j in np.argwhere(bad)[:, 1]})}, by up to {np.abs(full - prefix).max():.3g}"
    return None


class TestQuality(PartBTest):
    def trained(self):
        """The training result of this grade, computed once and kept on the context."""
        cache = getattr(self.ctx, "part_b_training", None)
        if cache is None:
            from reference import corpus
            q = self.meta["quality"]
            args, tok, counted = cases.quality_inputs(corpus, q)
            cache = {"error": None}
            try:
                out = self.run_op("train", timeout=q["timeout"], key=("train",), **args)
                N, W = args["val_windows"].shape
                expected = (N, W - 1, args["config"]["vocab_size"])
                if np.shape(out["val_logits"]) != expected:
                    self.fail(f"after training, GPT.forward's logits have shape {np.shape(out['val_logits'])}, "
                              f"expected (B, T, V) = {expected}")
                loss = cases.val_loss(out["val_logits"], args["val_windows"], counted)
                cache.update(loss=loss, judged=judge(out["samples"], tok, corpus), losses=out["losses"],
                             looks_ahead=looks_ahead(out, args["prefix_positions"]))
            except AssertionError as e:  # the student's error, as run_op reported it
                cache["error"] = f"training your GPT failed: {e}"
            self.ctx.part_b_training = cache
        if cache["error"]:
            self.fail(cache["error"])
        return cache

    def examples(self, judged, k=5):
        return "\n".join(f"  {s!r}" for s in judged["sentences"][:k]) or "  (none)"

    @weight(4)
    @number("2.7.1")
    @visibility("visible")
    @tags("part-b", *MODEL)
    def test_trained_validation_perplexity_is_close_to_reference(self):
        """GPT: trained by the grader, its validation perplexity is close to the reference's"""
        q = self.meta["quality"]
        result = self.trained()
        if result["looks_ahead"]:
            self.fail("after training, the logits of whole validation windows differ from those of the windows "
                      f"cut after the predicted position ({result['looks_ahead']}): the model sees later "
                      "tokens, so its validation perplexity is not a prediction and is not scored")
        loss = result["loss"]
        ppl = math.exp(loss) if np.isfinite(loss) else float("inf")
        if np.isfinite(ppl):
            self.ctx.leaderboard.append({"name": "validation perplexity", "value": round(ppl, 4), "order": "asc"})
        limit = q["reference_val_loss"] + q["val_loss_margin"]
        print(f"Trained {q['steps']} steps (batch {q['batch_size']}, block_size {q['block_size']}, "
              f"seed {q['seed']}): validation loss {loss:.4f} nats/char on {q['val_sentences']} whole sentences, "
              f"perplexity {ppl:.4f}; the reference "
              f"reaches {q['reference_val_loss']:.4f} (perplexity {q['reference_val_ppl']:.4f}); the best any "
              f"model can do is about {q['entropy_per_char']:.4f}.")
        if not loss <= limit:
            self.fail(f"the validation loss {loss:.4f} is above {limit:.4f} (the reference's "
                      f"{q['reference_val_loss']:.4f} + {q['val_loss_margin']}): perplexity {ppl:.4f}, limit "
                      f"{math.exp(limit):.4f}. Training loss at the end: {np.mean(result['losses'][-20:]):.4f}")

    @weight(3)
    @number("2.7.2")
    @visibility("visible")
    @tags("part-b", *MODEL)
    def test_trained_samples_are_in_the_language(self):
        """GPT: trained by the grader, its samples are mostly sentences of the language"""
        q = self.meta["quality"]
        judged = self.trained()["judged"]
        print(f"{judged['n']} sentences sampled at temperature {q['temperature']}, "
              f"{judged['in_language']:.0%} in the language; the first ones:\n{self.examples(judged)}")
        if judged["in_language"] < q["in_language_min"]:
            self.fail(f"only {judged['in_language']:.0%} of the {judged['n']} sampled sentences are sentences of "
                      f"the language; expected at least {q['in_language_min']:.0%}")

    @weight(2)
    @number("2.7.3")
    @visibility("visible")
    @tags("part-b", *MODEL)
    def test_trained_samples_are_diverse(self):
        """GPT: trained by the grader, its samples are diverse, not repeating"""
        q = self.meta["quality"]
        judged = self.trained()["judged"]
        if judged["n"] < q["min_sentences"]:
            self.fail(f"the samples hold only {judged['n']} complete sentences in {q['sample_rows']} rows of "
                      f"{q['sample_tokens'] or q['block_size'] - 1} characters (expected at least "
                      f"{q['min_sentences']}); the model rarely ends a sentence")
        if judged["distinct"] < q["distinct_min"] or judged["looping"] > q["looping_rows_max"]:
            self.fail(f"the samples repeat themselves: {judged['distinct']:.0%} of {judged['n']} sentences are "
                      f"distinct (expected at least {q['distinct_min']:.0%}), {judged['looping']} rows loop "
                      f"(at most {q['looping_rows_max']} allowed); the first ones:\n{self.examples(judged)}")
