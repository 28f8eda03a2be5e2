"""Part B, using a model: the sampler's distribution (chi-square tests computed here), its use
of the generator, GPT.generate, and perplexity."""
import math

import numpy as np
from gradescope_utils.autograder_utils.decorators import number, tags, visibility, weight

from .. import cases_part_b as cases
from ..compare import check_close
from .common import PartBTest, fmt_shape
from .stats import fit_test


def softmax(logits, temperature, top_k=None):
    """softmax(logits / temperature), restricted to the top_k largest logits."""
    z = np.asarray(logits, dtype=np.float64) / temperature
    p = np.exp(z - z.max())
    if top_k is not None:
        p[np.argsort(-z)[top_k:]] = 0.0
    return p / p.sum()


class TestSampler(PartBTest):
    def draws(self, temperature, top_k=None, seed=0, global_seed=0, n_draws=None):
        s = self.meta["sampler"]
        n = n_draws or s["n_draws"]
        what = f"sample_next_token on logits (B, V) = ({n}, {len(s['logits'])}) with temperature {temperature}" \
            + (f" and top_k = {top_k}" if top_k else "")
        out = self.op("sample", what, logits=np.array(s["logits"]), temperature=temperature, top_k=top_k,
                      n_draws=n, seed=seed, global_seed=global_seed)
        return self.tokens(out, what=what, shape=(n,), letters="B", vocab=len(s["logits"]))

    def fits(self, draws, probs, what, hints=()):
        """Fail unless ``draws`` fit ``probs``; ``hints``: (probs of a known bug, what it means)."""
        s = self.meta["sampler"]
        p_value, stat, df, counts = fit_test(draws, probs)
        if p_value < s["alpha"]:
            msg = (f"{what}: the draws do not follow the expected distribution.\n"
                   f"  observed frequencies {np.round(counts / len(draws), 4).tolist()}\n"
                   f"  expected             {np.round(probs, 4).tolist()}\n"
                   f"chi-square {stat:.1f} with {df} degrees of freedom, p = {p_value:.2g}; a correct sampler "
                   f"fails this with probability below {s['alpha']:g}")
            if np.all(draws == np.argmax(probs)):
                msg += "\nLikely cause: every draw is the most likely token, as if sampling were greedy (argmax)"
            msg += "".join(f"\nLikely cause: {text}" for other, text in hints
                           if not np.allclose(other, probs) and fit_test(draws, other)[0] >= s["alpha"])
            self.fail(msg)

    @weight(1)
    @number("2.4.1")
    @visibility("visible")
    @tags("part-b", "sample_next_token")
    def test_temperature_zero_is_argmax(self):
        """sample_next_token: temperature 0 returns the argmax"""
        logits = self.data["argmax.logits"]
        what = f"sample_next_token with temperature 0 on logits {fmt_shape(logits.shape, 'BV')}"
        out = self.op("sample", what, logits=logits, temperature=0.0, seed=0)
        got = self.tokens(out, what=what, shape=logits.shape[:1], letters="B", vocab=logits.shape[1])
        expected = np.argmax(logits, axis=-1)
        if not np.array_equal(got, expected):
            self.fail(f"with temperature 0, got tokens {got.tolist()}, expected the argmax of each row "
                      f"{expected.tolist()}")

    @weight(3)
    @number("2.4.2")
    @visibility("visible")
    @tags("part-b", "sample_next_token")
    def test_draws_follow_softmax_over_temperature(self):
        """sample_next_token: draws follow softmax(logits / temperature)"""
        logits = self.meta["sampler"]["logits"]
        for i, temp in enumerate(self.meta["sampler"]["temperatures"]):
            self.fits(self.draws(temp, seed=100 + i), softmax(logits, temp), f"temperature {temp}", hints=[
                (softmax(logits, 1.0 / temp), f"the draws follow softmax(logits * {temp}): the temperature "
                                              "should divide the logits"),
                (softmax(logits, 1.0), "the draws follow softmax(logits): the temperature has no effect "
                                       "(divide the logits by it before the softmax)")])

    @weight(2)
    @number("2.4.3")
    @visibility("after_published")
    @tags("part-b", "sample_next_token")
    def test_top_k_keeps_the_k_largest(self):
        """sample_next_token: top_k draws only among the k largest logits, in proportion"""
        logits = np.array(self.meta["sampler"]["logits"])
        for i, (k, temp) in enumerate([(1, 1.0)] + self.meta["sampler"]["top_ks"]):
            draws = self.draws(temp, top_k=k, seed=200 + i, n_draws=1000 if k == 1 else None)
            allowed = np.argsort(-logits)[:k]
            outside = np.setdiff1d(np.unique(draws), allowed)
            if len(outside):
                self.fail(f"with top_k = {k} the draws include tokens {outside.tolist()}, which are not among "
                          f"the {k} largest logits (tokens {sorted(allowed.tolist())} of logits {logits.tolist()})")
            never = np.setdiff1d(allowed, draws)
            if k > 1 and len(never):
                hint = f"token(s) {never.tolist()} among the {k} largest were never drawn (is k off by one?)"
            else:
                hint = ""
            self.fits(draws, softmax(logits, temp, k), f"top_k = {k}, temperature {temp}" +
                      (f"; {hint}" if hint else ""))

    @weight(1)
    @number("2.4.4")
    @visibility("after_published")
    @tags("part-b", "sample_next_token")
    def test_generator_seed_fixes_the_draws(self):
        """sample_next_token: the same generator seed reproduces the draws, another seed changes them"""
        a = self.draws(1.0, seed=7, global_seed=1, n_draws=2000)
        b = self.draws(1.0, seed=7, global_seed=2, n_draws=2000)
        if not np.array_equal(a, b):
            self.fail("two calls with generators seeded alike gave different draws: every random draw must "
                      "come from `generator` (e.g. torch.multinomial(probs, 1, generator=generator))")
        if np.array_equal(a, self.draws(1.0, seed=8, global_seed=1, n_draws=2000)):
            self.fail("generators with different seeds gave identical draws: the draws ignore the generator")

    @weight(1)
    @number("2.4.5")
    @visibility("visible")
    @tags("part-b", "sample_next_token")
    def test_negative_temperature_raises(self):
        """sample_next_token: a negative temperature raises ValueError"""
        out = self.op("sample", "sample_next_token with temperature -1", catch=True, n_draws=4,
                      logits=np.array(self.meta["sampler"]["logits"]), temperature=-1.0)
        self.raised(out, what="sample_next_token(logits, temperature=-1.0)")


class TestGenerate(PartBTest):
    def generate(self, case, new, temperature=0.0, top_k=None, seed=0, global_seed=0):
        idx = self.data[f"{case}.idx"]
        B, T = idx.shape
        what = (f"GPT.generate on idx {fmt_shape(idx.shape, 'BT')} (block_size = {self.config['block_size']}) "
                f"with max_new_tokens = {new}, temperature = {temperature}, top_k = {top_k}")
        out = self.op("generate", what, config=self.config, weights=self.weights(), idx=idx, max_new_tokens=new,
                      temperature=temperature, top_k=top_k, seed=seed, global_seed=global_seed)
        if tuple(out["shape"]) == (B, new):
            self.fail(f"{what} returned only the {new} new tokens {fmt_shape(out['shape'], 'BT')}; the output "
                      f"starts with the prompt: (B, T + max_new_tokens) = {(B, T + new)}")
        return idx, self.tokens(out, what=what, shape=(B, T + new), letters=("B", "T + max_new_tokens"),
                                vocab=self.config["vocab_size"])

    def greedy_follows_own_logits(self, case, what, temperature=0.0, top_k=None):
        """Greedy tokens (temperature 0, or top_k 1), each the argmax of the student's own logits
        for the cropped context before it (so a wrong model loses its points in the forward
        tests, not here); with the reference's model these are the recorded tokens."""
        bs, reference = self.config["block_size"], self.data[f"{case}.greedy"]
        T0 = self.data[f"{case}.idx"].shape[1]
        _, got = self.generate(case, reference.shape[1] - T0, temperature=temperature, top_k=top_k, seed=11)
        how = f"with top_k = {top_k}" if top_k else f"with temperature {temperature}"
        for n in range(T0, got.shape[1]):
            context = got[:, max(0, n - bs):n]
            expected = np.argmax(self.forward(context)["logits"][:, -1], axis=-1)
            if not np.array_equal(got[:, n], expected):
                crop = f", cropped to the last block_size = {bs}" if n > bs else ""
                self.fail(f"{what}: {how} the token at position {n} should be the argmax of the "
                          f"model's logits at the last position of the context tokens [{max(0, n - bs)}:{n}]"
                          f"{crop}: got {got[:, n].tolist()}, expected {expected.tolist()}\n"
                          f"  your output     {got.tolist()}\n  the reference's {reference.tolist()}")

    @weight(2)
    @number("2.5.1")
    @visibility("visible")
    @tags("part-b", "generate")
    def test_prompt_is_kept_and_length_is_right(self):
        """GPT.generate: returns the prompt followed by max_new_tokens new tokens"""
        idx, got = self.generate("generate", 5, temperature=1.0, seed=3)
        if not np.array_equal(got[:, :idx.shape[1]], idx):
            self.fail(f"the output does not start with the prompt: got {got[:, :idx.shape[1]].tolist()}, "
                      f"expected {idx.tolist()}")

    @weight(2)
    @number("2.5.2")
    @visibility("visible")
    @tags("part-b", "generate")
    def test_greedy_tokens_follow_the_logits(self):
        """GPT.generate: greedy tokens are the argmax of the model's last-position logits, step by step"""
        self.greedy_follows_own_logits("generate", "a prompt of 3 tokens")
        self.greedy_follows_own_logits("generate", "a prompt of 3 tokens (temperature and top_k passed on?)",
                                       temperature=1.0, top_k=1)

    @weight(2)
    @number("2.5.3")
    @visibility("after_published")
    @tags("part-b", "generate")
    def test_context_is_cropped_to_block_size(self):
        """GPT.generate: a context longer than block_size is cropped to its last block_size tokens"""
        self.greedy_follows_own_logits("long", f"a prompt longer than block_size = {self.config['block_size']}")

    @weight(1)
    @number("2.5.4")
    @visibility("after_published")
    @tags("part-b", "generate")
    def test_generator_seed_reproduces_generation(self):
        """GPT.generate: the same generator seed reproduces the sampled tokens"""
        _, a = self.generate("generate", 5, temperature=1.0, seed=5, global_seed=1)
        _, b = self.generate("generate", 5, temperature=1.0, seed=5, global_seed=2)
        if not np.array_equal(a, b):
            self.fail("two generations with generators seeded alike differ: pass `generator` on to "
                      f"sample_next_token\n  first  {a.tolist()}\n  second {b.tolist()}")


class TestPerplexity(PartBTest):
    def perplexity(self, weights=None):
        windows = self.data["ppl.windows"]
        out = self.op("perplexity", f"perplexity(model, windows {fmt_shape(windows.shape, ('N', 'T + 1'))})",
                      config=self.config, weights=weights or self.weights(), windows=windows)
        if out["type"] not in ("float", "float64", "int"):
            self.fail(f"perplexity should return a Python float, got a {out['type']} (use .item() or math.exp)")
        return out["value"]

    @weight(2)
    @number("2.6.1")
    @visibility("visible")
    @tags("part-b", "perplexity")
    def test_perplexity_is_exp_of_mean_nll(self):
        """perplexity: exp of the mean negative log-likelihood of the windows' next tokens"""
        windows = self.data["ppl.windows"]
        got = self.perplexity()
        # from the student's own logits, so a wrong model loses its points in the forward tests;
        # with the reference's model this is the reference's perplexity
        x, y = windows[:, :-1], windows[:, 1:]
        logits = self.forward(x)["logits"]
        expected = math.exp(cases.cross_entropy(logits, y))
        msg = check_close(actual=got, expected=expected, name="perplexity")
        if msg:
            msg += (f"\nexpected: exp of the mean cross-entropy of your model's logits for windows[:, :-1] "
                    f"{fmt_shape(x.shape, 'NT')} against the targets windows[:, 1:], all N*T predictions "
                    f"weighted equally (the reference's model gives {self.meta['perplexity']:.6g})")
            hints = {"the mean negative log-likelihood without exp": math.log(expected),
                     "the mean of per-window perplexities": np.mean([math.exp(cases.cross_entropy(
                         logits[i:i + 1], y[i:i + 1])) for i in range(len(y))]),
                     "exp of the mean of per-batch mean losses (a smaller last batch counts too much)":
                         math.exp(np.mean([cases.cross_entropy(logits[i:i + 64], y[i:i + 64])
                                           for i in range(0, len(y), 64)])),
                     "computed against the inputs windows[:, :-1] instead of the targets windows[:, 1:]":
                         math.exp(cases.cross_entropy(logits, x))}
            msg += "".join(f"\nLikely cause: your value looks like {h}" for h, v in hints.items()
                           if abs(got - v) <= 1e-4 * abs(v) + 1e-5)
        self.check(msg)

    @weight(1)
    @number("2.6.2")
    @visibility("after_published")
    @tags("part-b", "perplexity")
    def test_uniform_model_scores_vocab_size(self):
        """perplexity: a model with uniform logits scores vocab_size"""
        zero = np.zeros_like(self.weights()["transformer.wte.weight"])
        got = self.perplexity(self.weights(**{"transformer.wte.weight": zero, "lm_head.weight": zero}))
        V = self.config["vocab_size"]
        self.check(check_close(actual=got, expected=float(V),
                               name=f"perplexity of a model whose logits are all 0 (V = {V})"))
