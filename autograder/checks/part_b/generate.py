"""2.5 GPT.generate: the prompt and the length, greedy tokens along the model's argmax path,
cropping to block_size, its generator, and its draws at a temperature and with top_k.

The value checks use the ``generation`` weights (inert blocks: an attention or MLP bug changes
nothing there). The expected tokens and distributions are the reference's (recorded), or, when
the student's forward computes a known variant of it on those weights, that variant's
(computed here), so a model bug is charged once, by test 2.2.1.
"""
import numpy as np

from .. import gpt2
from ..spec import check
from . import cases
from .base import fmt_shape
from .sampler import SamplingTest, distribution


class TestGenerate(SamplingTest):
    def generate(self, model, idx, new, what, **kwargs):
        call = dict(fn="generate", idx=idx, max_new_tokens=new, **kwargs)
        out = self.student(what, "gpt", model=model, calls=[call])[0]
        return self.checked(out, idx, new, what)

    def checked(self, out, idx, new, what):
        B, T = idx.shape
        if tuple(out["shape"]) == (B, new):
            self.fail(f"{what} returned only the {new} new tokens {fmt_shape(out['shape'], 'BT')}; the output "
                      f"starts with the prompt: (B, T + max_new_tokens) = {(B, T + new)}")
        return self.tokens(out, what=what, shape=(B, T + new), letters=("B", "T + max_new_tokens"),
                           vocab=self.config["vocab_size"])

    def own(self, calls, what):
        """``calls`` on the student's own initialised model, after a forward the parent re-checks."""
        valid = self.data["own.idx"]
        calls = [{"fn": "parameters", "values": True}, cases.forward(valid), *calls]
        params, ok, *results = self.student(what, "gpt", model=self.model(), calls=calls)
        self.gate_own(ok["logits"], params, valid, what)
        return results

    def expected_path(self, case):
        """The greedy path the student's model should take from prompt ``case`` on the generation weights."""
        bug = self.identify("generation")
        if bug is None:
            return self.data[f"{case}.greedy"]
        return cases.greedy_path(self.weight_set("generation"), self.data[f"{case}.idx"], cases.GREEDY[case],
                                 self.config["block_size"], bug, self.config["n_head"])

    def greedy(self, case, what, **kwargs):
        idx, expected = self.data[f"{case}.idx"], self.expected_path(case)
        bs, T0 = self.config["block_size"], self.data[f"{case}.idx"].shape[1]
        got = self.generate(self.model("generation"), idx, expected.shape[1] - T0, what, seed=11, **kwargs)
        how = ", ".join(f"{k} = {v}" for k, v in kwargs.items())
        for n in range(T0, got.shape[1]):
            if not np.array_equal(got[:, n], expected[:, n]):
                crop = f", cropped to the last block_size = {bs}" if n > bs else ""
                self.fail(f"{what}: with {how} the token at position {n} should be the argmax of the model's logits "
                          f"at the last position of the context tokens [{max(0, n - bs)}:{n}]{crop}: got "
                          f"{got[:, n].tolist()}, expected {expected[:, n].tolist()}\n  your output {got.tolist()}\n"
                          f"  expected    {expected.tolist()}")

    @check("2.5.1", "generate", 2, "GPT.generate: returns the prompt followed by max_new_tokens new tokens")
    def test_prompt_is_kept_and_length_is_right(self):
        idx = self.data["gen.idx"]
        what = f"GPT.generate on idx {fmt_shape(idx.shape, 'BT')} with max_new_tokens = 5 (your model's own weights)"
        [out] = self.own([dict(fn="generate", idx=idx, max_new_tokens=5, temperature=1.0, seed=3)], what)
        got = self.checked(out, idx, 5, what)
        if not np.array_equal(got[:, :idx.shape[1]], idx):
            self.fail(f"the output does not start with the prompt: got {got[:, :idx.shape[1]].tolist()}, "
                      f"expected {idx.tolist()}")

    @check("2.5.2", "generate", 2, "GPT.generate: greedy tokens are the argmax of the model's last-position "
           "logits, step by step")
    def test_greedy_tokens_follow_the_logits(self):
        self.greedy("gen", "GPT.generate from a prompt of 3 tokens", temperature=0.0)
        self.greedy("gen", "GPT.generate from a prompt of 3 tokens (temperature and top_k passed on?)",
                    temperature=1.0, top_k=1)

    @check("2.5.3", "generate", 2, "GPT.generate: a context longer than block_size is cropped to its last "
           "block_size tokens", visibility="after_published")
    def test_context_is_cropped_to_block_size(self):
        self.greedy("long", f"GPT.generate from a prompt longer than block_size = {self.config['block_size']}",
                    temperature=0.0)

    @check("2.5.4", "generate", 1, "GPT.generate: the same generator seed reproduces the sampled tokens",
           visibility="after_published")
    def test_generator_seed_reproduces_generation(self):
        idx = self.data["gen.idx"]
        what = "GPT.generate twice with generators seeded alike (your model's own weights)"
        a, b = self.own([dict(fn="generate", idx=idx, max_new_tokens=5, temperature=1.0, seed=5, global_seed=g)
                         for g in (1, 2)], what)
        a, b = self.checked(a, idx, 5, what), self.checked(b, idx, 5, what)
        if not np.array_equal(a, b):
            self.fail("two generations with generators seeded alike differ: pass `generator` on to "
                      f"sample_next_token\n  first  {a.tolist()}\n  second {b.tolist()}")

    @check("2.5.5", "generate", 2, "GPT.generate: at a temperature and with top_k, new tokens follow the "
           "model's distribution", visibility="after_published")
    def test_draws_follow_the_models_distribution(self):
        prompt, n = self.data["dist.prompt"], self.meta["sampler"]["n_draws"]
        bug = self.identify("generation")
        z = self.data["dist.logits"][0] if bug is None else gpt2.logits(
            self.weight_set("generation"), prompt, self.config["n_head"], bug)[0, -1]
        rows = np.repeat(prompt, n, axis=0)  # (N, T): N draws of the next token after one prompt
        for i, (temp, top_k) in enumerate(self.meta["sampler"]["generate"]):
            what = (f"GPT.generate on {n} copies of one prompt, 1 new token, temperature {temp}"
                    + (f", top_k = {top_k}" if top_k else ""))
            got = self.generate(self.model("generation"), rows, 1, what, temperature=temp, top_k=top_k, seed=300 + i)
            self.fits(got[:, -1], distribution(z, temp, top_k), what, hints=self.temperature_hints(z, temp, top_k))
