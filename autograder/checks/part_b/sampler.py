"""2.4 sample_next_token: its draws against the distribution they must follow (chi-square tests
computed here), its use of the generator, and its error for a negative temperature."""
import numpy as np

from .. import gpt2
from ..spec import check
from .base import PartBTest, fmt_shape
from .stats import fit_test


def distribution(logits, temperature, top_k=None):
    """softmax(logits / temperature) restricted to the top_k largest logits (float64)."""
    z = np.asarray(logits, dtype=np.float64) / temperature
    if top_k is not None:
        z = np.where(np.isin(np.arange(len(z)), np.argsort(-z)[:top_k]), z, -np.inf)
    return gpt2.softmax(z)


class SamplingTest(PartBTest):
    def fits(self, draws, probs, what, hints=()):
        """Fail unless ``draws`` fit ``probs``; ``hints``: (probs of a known bug, what it means)."""
        alpha = self.meta["sampler"]["alpha"]
        p_value, stat, df, counts = fit_test(draws, probs)
        if p_value >= alpha:
            return
        msg = (f"{what}: the draws do not follow the expected distribution.\n"
               f"  observed frequencies {np.round(counts / len(draws), 4).tolist()}\n"
               f"  expected             {np.round(probs, 4).tolist()}\n"
               f"chi-square {stat:.1f} with {df} degrees of freedom, p = {p_value:.2g}; a correct sampler "
               f"fails this with probability below {alpha:g}")
        if np.all(draws == np.argmax(probs)):
            msg += "\nLikely cause: every draw is the most likely token, as if sampling were greedy (argmax)"
        msg += "".join(f"\nLikely cause: {text}" for other, text in hints
                       if not np.allclose(other, probs) and fit_test(draws, other)[0] >= alpha)
        self.fail(msg)

    @staticmethod
    def temperature_hints(logits, temperature, top_k=None):
        return [(distribution(logits, 1.0 / temperature, top_k), f"the draws follow softmax(logits * {temperature}): "
                 "the temperature should divide the logits"),
                (distribution(logits, 1.0, top_k), "the draws follow softmax(logits): the temperature has no effect "
                 "(divide the logits by it before the softmax)")] + (
                [(distribution(logits, temperature), f"the draws follow all the logits: top_k = {top_k} was ignored")]
                if top_k is not None else [])


class TestSampler(SamplingTest):
    def draws(self, temperature, top_k=None, seed=0, global_seed=0, n_draws=None):
        s = self.meta["sampler"]
        n = n_draws or s["n_draws"]
        what = f"sample_next_token on logits (B, V) = ({n}, {len(s['logits'])}) with temperature {temperature}" \
            + (f" and top_k = {top_k}" if top_k else "")
        out = self.student(what, "sample", logits=np.array(s["logits"]), temperature=temperature, top_k=top_k,
                           n_draws=n, seed=seed, global_seed=global_seed)
        return self.tokens(out, what=what, shape=(n,), letters="B", vocab=len(s["logits"]))

    def argmax_is_right(self):
        logits = self.data["argmax.logits"]
        what = f"sample_next_token with temperature 0 on logits {fmt_shape(logits.shape, 'BV')}"
        out = self.student(what, "sample", logits=logits, temperature=0.0, seed=0)
        got = self.tokens(out, what=what, shape=logits.shape[:1], letters="B", vocab=logits.shape[1])
        expected = np.argmax(logits, axis=-1)
        if not np.array_equal(got, expected):
            return f"with temperature 0, got tokens {got.tolist()}, expected the argmax of each row {expected.tolist()}"
        return None

    @check("2.4.1", "sample_next_token", 1, "sample_next_token: temperature 0 returns the argmax")
    def test_temperature_zero_is_argmax(self):
        why = self.argmax_is_right()
        if why:
            self.fail(why)

    @check("2.4.2", "sample_next_token", 3, "sample_next_token: draws follow softmax(logits / temperature)")
    def test_draws_follow_softmax_over_temperature(self):
        logits = self.meta["sampler"]["logits"]
        for i, temp in enumerate(self.meta["sampler"]["temperatures"]):
            self.fits(self.draws(temp, seed=100 + i), distribution(logits, temp), f"temperature {temp}",
                      hints=self.temperature_hints(logits, temp))

    @check("2.4.3", "sample_next_token", 2, "sample_next_token: top_k draws only among the k largest logits, "
           "in proportion", visibility="after_published")
    def test_top_k_keeps_the_k_largest(self):
        logits = np.array(self.meta["sampler"]["logits"])
        for i, (k, temp) in enumerate([(1, 1.0)] + self.meta["sampler"]["top_ks"]):
            draws = self.draws(temp, top_k=k, seed=200 + i, n_draws=1000 if k == 1 else None)
            allowed = np.argsort(-logits)[:k]
            outside = np.setdiff1d(np.unique(draws), allowed)
            if len(outside):
                self.fail(f"with top_k = {k} the draws include tokens {outside.tolist()}, which are not among "
                          f"the {k} largest logits (tokens {sorted(allowed.tolist())} of logits {logits.tolist()})")
            never = np.setdiff1d(allowed, draws)
            hint = f"token(s) {never.tolist()} among the {k} largest were never drawn (is k off by one?)" \
                if k > 1 and len(never) else ""
            what = f"top_k = {k}, temperature {temp}" + (f"; {hint}" if hint else "")
            self.fits(draws, distribution(logits, temp, k), what)

    @check("2.4.4", "sample_next_token", 1, "sample_next_token: the same generator seed reproduces the draws, "
           "another seed changes them", visibility="after_published")
    def test_generator_seed_fixes_the_draws(self):
        a = self.draws(1.0, seed=7, global_seed=1, n_draws=2000)
        b = self.draws(1.0, seed=7, global_seed=2, n_draws=2000)
        if not np.array_equal(a, b):
            self.fail("two calls with generators seeded alike gave different draws: every random draw must "
                      "come from `generator` (e.g. torch.multinomial(probs, 1, generator=generator))")
        if np.array_equal(a, self.draws(1.0, seed=8, global_seed=1, n_draws=2000)):
            self.fail("generators with different seeds gave identical draws: the draws ignore the generator")

    @check("2.4.5", "sample_next_token", 1, "sample_next_token: a negative temperature raises ValueError")
    def test_negative_temperature_raises(self):
        what = "sample_next_token(logits, temperature=-1.0)"
        out = self.student(what, "sample", catch=True, n_draws=4, logits=np.array(self.meta["sampler"]["logits"]),
                           temperature=-1.0)
        self.raised(out, what=what)
        why = self.argmax_is_right()  # no points for refusing: valid arguments must give right values
        if why:
            self.fail(f"{what} raised ValueError, but the same function gives wrong values for valid arguments "
                      f"({why}); a ValueError counts only from a sampler that works")
