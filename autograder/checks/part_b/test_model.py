"""Part B, the model: GPT-2's parameter layout, the forward pass against the reference's, and
causality (probes that change or differentiate later tokens) computed by the model itself."""
import numpy as np
from gradescope_utils.autograder_utils.decorators import number, tags, visibility, weight

from .. import cases_part_b as cases
from ..compare import check_close
from .common import PartBTest, fmt_shape
from .diagnose_gpt import diagnose_logits

MODEL = ("GPT", "CausalSelfAttention", "MLP", "Block")


class TestStructure(PartBTest):
    def structure(self):
        config = self.meta["structure_config"]
        return self.op("gpt_structure", f"building GPT(GPTConfig(**{config}))", config=config)

    @weight(3)
    @number("2.1.1")
    @visibility("visible")
    @tags("part-b", "GPTConfig", *MODEL)
    def test_parameter_names_and_shapes_follow_gpt2(self):
        """GPT: parameter names and shapes follow GPT-2's checkpoint layout"""
        config = self.meta["structure_config"]
        got = {name: tuple(shape) for name, shape in self.structure()["every"]}
        expected = dict(cases.gpt2_parameters(config))
        problems = [f"missing: {n} {expected[n]}" for n in expected if n not in got]
        problems += [f"unexpected: {n} {got[n]}" for n in got if n not in expected]
        problems += [f"{n} has shape {got[n]}, expected {expected[n]}" for n in expected
                     if n in got and got[n] != expected[n]]
        if problems:
            self.fail(f"GPT(GPTConfig(**{config})) does not have GPT-2's parameters (buffers are not counted; "
                      "nn.Linear weights are (out, in)):\n  " + "\n  ".join(problems[:12]))

    @weight(2)
    @number("2.1.2")
    @visibility("visible")
    @tags("part-b", "GPT")
    def test_lm_head_is_tied_to_wte(self):
        """GPT: lm_head.weight is transformer.wte.weight (weight tying)"""
        s = self.structure()
        unique = {name for name, _ in s["unique"]}  # named_parameters() lists a shared tensor once
        if not s["tied"] or {"lm_head.weight", "transformer.wte.weight"} <= unique:
            self.fail("lm_head.weight is not tied to transformer.wte.weight: they are two different tensors; "
                      "tie them (self.transformer.wte.weight = self.lm_head.weight) so both use one (V, C) matrix")

    @weight(2)
    @number("2.1.3")
    @visibility("visible")
    @tags("part-b", "GPT", "GPTConfig")
    def test_parameter_count_matches_formula(self):
        """GPT: parameter count is V*C + block_size*C + L*(12C^2 + 13C) + 2C"""
        config = self.meta["structure_config"]
        got = int(sum(np.prod(shape, dtype=np.int64) for _, shape in self.structure()["unique"]))
        expected = cases.param_count(config)
        hint = ""
        if got == expected + config["vocab_size"] * config["n_embd"]:
            hint = " (one V*C matrix too many: lm_head is not tied to wte)"
        if got != expected:
            self.fail(f"GPT(GPTConfig(**{config})) has {got} parameters (each tensor counted once), "
                      f"expected {expected}{hint}")


    @weight(1)
    @number("2.1.4")
    @visibility("visible")
    @tags("part-b", "GPTConfig")
    def test_gptconfig_fields_and_defaults(self):
        """GPTConfig: a dataclass (vocab_size, block_size, n_layer, n_head, n_embd, dropout=0.0, bias=True)"""
        config = self.meta["structure_config"]
        got = self.structure()["config"]
        fields = list(cases.CONFIG_FIELDS) + ["dropout", "bias"]
        if got["fields"] is None:
            self.fail("GPTConfig should be a @dataclass")
        if got["fields"][:7] != fields:
            self.fail(f"GPTConfig's fields are {got['fields']}; expected {fields}, in this order")
        expected = dict({k: config[k] for k in cases.CONFIG_FIELDS}, dropout=0.0, bias=True)
        wrong = [f"{k} = {got['positional'][k]!r} (expected {v!r})" for k, v in expected.items()
                 if got["positional"][k] != v]
        if wrong:
            self.fail(f"GPTConfig({', '.join(str(config[k]) for k in cases.CONFIG_FIELDS)}) has "
                      + ", ".join(wrong) + " (the defaults are dropout 0.0 and bias True)")


class TestForward(PartBTest):
    @weight(6)
    @number("2.2.1")
    @visibility("visible")
    @tags("part-b", *MODEL)
    def test_logits_match_reference(self):
        """GPT.forward: logits match the reference's with the same weights"""
        for case in ("forward", "short"):
            idx = self.data[f"{case}.idx"]
            got = self.forward(idx)["logits"]
            msg = check_close(actual=got, expected=self.data[f"{case}.logits"],
                              name=f"logits {fmt_shape(got.shape, 'BTV')} for T = {idx.shape[1]}")
            if msg:
                why = diagnose_logits(self.weights(), idx, self.config["n_head"], got)
                self.fail(msg + (f"\nLikely cause: {why}" if why else ""))

    @weight(1)
    @number("2.2.2")
    @visibility("visible")
    @tags("part-b", "GPT")
    def test_loss_is_mean_cross_entropy(self):
        """GPT.forward: loss is the mean cross-entropy over all positions"""
        targets = self.data["forward.targets"]
        out = self.forward(self.data["forward.idx"], targets)
        if out["loss"] is None:
            self.fail("GPT.forward(idx, targets) returned loss None; expected the mean cross-entropy")
        logits = out["logits"]
        own = cases.cross_entropy(logits, targets)  # of the student's own logits: a wrong model
        msg = check_close(actual=out["loss"], expected=own,  # loses its points elsewhere
                          name="loss (compared with the mean cross-entropy of your own logits (B, T, V))")
        if msg:
            B, T = targets.shape
            hints = {"summed over the B*T positions, not their mean": own * B * T,
                     "computed with shifted targets; the targets given are already the next tokens":
                         cases.cross_entropy(logits[:, :-1], targets[:, 1:])}
            msg += "".join(f"\nLikely cause: your loss looks {h}" for h, v in hints.items()
                           if abs(out["loss"] - v) <= 1e-4 * abs(v) + 1e-5)
        self.check(msg)
        if self.forward(self.data["short.idx"])["loss"] is not None:
            self.fail("GPT.forward(idx) without targets should return loss None")

    @weight(1)
    @number("2.2.3")
    @visibility("visible")
    @tags("part-b", "GPT")
    def test_sequence_longer_than_block_size_raises(self):
        """GPT.forward: T > block_size raises ValueError"""
        idx = self.data["long.idx"]
        out = self.op("gpt_forward", "GPT.forward", config=self.config, weights=self.weights(), idx=idx, catch=True)
        self.raised(out, what=f"GPT.forward on idx {fmt_shape(idx.shape, 'BT')} with block_size = "
                              f"{self.config['block_size']}")


class TestCausality(PartBTest):
    @weight(3)
    @number("2.3.1")
    @visibility("visible")
    @tags("part-b", "CausalSelfAttention", "GPT")
    def test_future_tokens_do_not_change_past_logits(self):
        """CausalSelfAttention: future tokens do not change past logits"""
        base = self.forward(self.data["probe.idx"])["logits"]
        for t in self.meta["probe_positions"]:
            changed = self.forward(self.data[f"probe.changed{t}"])["logits"]
            msg = check_close(actual=changed[:, :t + 1], expected=base[:, :t + 1],
                              name=f"logits[:, :{t + 1}] after changing the tokens after position {t}")
            if msg:
                self.fail("changing only the tokens after position t changed the logits at positions <= t, "
                          "so the model looks into the future (is the causal mask applied, and the right "
                          f"way round: position t attends to j <= t?)\n{msg}")

    @weight(2)
    @number("2.3.2")
    @visibility("after_published")
    @tags("part-b", "CausalSelfAttention")
    def test_later_embeddings_get_no_gradient(self):
        """CausalSelfAttention: position t's logits have zero gradient w.r.t. later token embeddings"""
        t = self.meta["grad_position"]
        grad = self.op("gpt_grad_probe", "the gradient probe of GPT.forward", config=self.config,
                       weights=self.weights(), idx=self.data["probe.idx"], t=t)["grad"]
        before, after = np.abs(grad[:, :t + 1]), np.abs(grad[:, t + 1:])
        if not before.max() > 0:
            self.fail(f"the logits at position {t} have zero gradient w.r.t. every token embedding; "
                      "they should depend on the tokens at positions <= t")
        leak = after.max(axis=(0, 2)) > 1e-6 * before.max()
        if leak.any():
            where = (np.flatnonzero(leak) + t + 1).tolist()
            self.fail(f"the logits at position {t} have a nonzero gradient w.r.t. the token embeddings at "
                      f"later positions {where} (largest {after.max():.3g}, vs {before.max():.3g} at "
                      "positions <= t): information flows from the future")

    @weight(2)
    @number("2.3.3")
    @visibility("visible")
    @tags("part-b", "CausalSelfAttention")
    def test_attention_is_computed_by_hand(self):
        """CausalSelfAttention: computes attention itself (no scaled_dot_product_attention or MultiheadAttention)"""
        idx = self.data["probe.idx"]
        out = self.op("gpt_forward_no_builtins", "GPT.forward without PyTorch's attention functions",
                      config=self.config, weights=self.weights(), idx=idx)
        if out["used"]:
            self.fail(f"your model calls {', '.join(out['used'])}, which this homework asks you to write "
                      "yourself: softmax(q k^T / sqrt(hs)) with the causal mask, then times v")
        expected = (*idx.shape, self.config["vocab_size"])
        if np.shape(out["logits"]) != expected:
            self.fail(f"GPT.forward's logits have the wrong shape: got {np.shape(out['logits'])}, "
                      f"expected {fmt_shape(expected, 'BTV')}")
