"""2.1 The GPT's structure: GPT-2's parameter names and shapes, weight tying, GPTConfig.

What a model reports about itself (its parameter names, its config's fields) is a claim; each
verdict also rests on what the model computes with the grader's weights loaded by those names.
"""
import numpy as np

from ..spec import check
from . import cases, weights
from .base import MODEL, PartBTest, fmt_shape

FIELDS = ("vocab_size", "block_size", "n_layer", "n_head", "n_embd", "dropout", "bias")  # the contract's order


class TestStructure(PartBTest):
    def parameters(self, config, what):
        return self.student(what, "gpt", model=cases.model(config), calls=[{"fn": "parameters"}])[0]

    def confirm(self, config, set_name, what, **options):
        """The model built with ``options`` computes a GPT-2 (the reference or a known variant) with
        weight set ``set_name`` loaded by name: the names it reports are the ones it uses."""
        idx = self.data["structure.idx"]
        model = self.model(set_name, config, **options)
        out = self.student(what, "gpt", model=model, calls=[cases.forward(idx, repeat=2)])[0]["repeats"]
        got = [self.logits(o, idx, what, vocab=config["vocab_size"]) for o in out]
        w = self.weight_set(set_name)
        if not np.array_equal(got[0], got[1]):
            return "two forward passes in train mode gave different logits (is dropout on by default?)"
        if self.architecture(got[0], w, idx, n_head=config["n_head"]) is None:
            return (f"with GPT-2 weights loaded by these names, the logits {fmt_shape(got[0].shape, 'BTV')} are not "
                    "a GPT-2's, so the names are not the ones your model computes with")
        return None

    @check("2.1.1", "GPT", 3, "GPT: parameter names and shapes follow GPT-2's checkpoint layout",
           also=("GPTConfig", *MODEL))
    def test_parameter_names_and_shapes_follow_gpt2(self):
        config = self.meta["structure_config"]
        what = f"building GPT(GPTConfig(**{config}))"
        got = {name: tuple(shape) for name, shape in self.parameters(config, what)["every"]}
        expected = dict(weights.gpt2_parameters(config))
        problems = [f"missing: {n} {expected[n]}" for n in expected if n not in got]
        problems += [f"unexpected: {n} {got[n]}" for n in got if n not in expected]
        problems += [f"{n} has shape {got[n]}, expected {expected[n]}" for n in expected
                     if n in got and got[n] != expected[n]]
        if problems:
            layout = weights.detect_layout(got, config) == "in_out"
            self.fail(f"GPT(GPTConfig(**{config})) does not have the contract's parameters, GPT-2's in nanoGPT's "
                      "layout (buffers are not counted; nn.Linear weights are (out, in)):\n  "
                      + "\n  ".join(problems[:12])
                      + ("\nYour linear weights are stored (in, out), like Hugging Face's Conv1D: the other tests "
                         "load the grader's weights transposed for you, so this is the only test it costs."
                         if layout else ""))
        why = self.confirm(config, "structure", what)
        if why:
            self.fail(f"{what}: {why}")

    @check("2.1.2", "GPT", 2, "GPT: lm_head.weight is transformer.wte.weight (weight tying)")
    def test_lm_head_is_tied_to_wte(self):
        idx = self.data["forward.idx"]
        what = "GPT.forward with every weight loaded except lm_head.weight"
        model = self.model("generation", drop=("lm_head.weight",))
        out = self.student(what, "gpt", model=model, calls=[cases.forward(idx)])[0]
        got = self.logits(out, idx, what)
        if self.architecture(got, self.weight_set("generation"), idx) is None:
            self.fail("lm_head.weight is not tied to transformer.wte.weight: after loading only "
                      "transformer.wte.weight, the logits are not wte's embeddings projected back onto wte. Tie "
                      "them (self.transformer.wte.weight = self.lm_head.weight) so both use one (V, C) matrix")

    @check("2.1.3", "GPTConfig", 1, "GPTConfig: a dataclass (vocab_size, block_size, n_layer, n_head, n_embd, "
           "dropout=0.0, bias=True)")
    def test_gptconfig_fields_and_defaults(self):
        config = self.meta["structure_config"]
        fields = self.parameters(config, f"building GPT(GPTConfig(**{config}))")["config_fields"]
        if fields is None:
            self.fail("GPTConfig should be a @dataclass")
        if list(fields[:7]) != list(FIELDS):
            self.fail(f"GPTConfig's fields are {fields}; expected {list(FIELDS)}, in this order")
        positional = ", ".join(str(config[k]) for k in FIELDS[:5])
        why = self.confirm(config, "structure", f"building GPT(GPTConfig({positional})) in train mode",
                           positional=True, train=True)
        if why:
            self.fail(f"GPTConfig({positional}), with the defaults for dropout and bias (0.0 and True), does not "
                      f"give the contract's model: {why}")
