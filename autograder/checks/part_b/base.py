"""What Part B's checks share: the recorded data, the weights in the student's layout, running
the student's GPT, and the gates that make a verdict rest on raw outputs the parent re-checked.

Every Part B verdict compares the student's raw outputs with the reference's for the same
weights and inputs: recorded by ``make reference`` for the fixed weight sets, or computed here
by the trusted NumPy GPT-2 for weights only known at grade time (a model's own initialisation).
"""
import numpy as np

from ... import sandbox
from .. import data
from ..base import GradedTest
from ..compare import check_close, shape_str
from . import cases, weights
from .diagnose import diagnose, variants


def fmt_shape(shape, letters):
    """``(B, T, V) = (3, 8, 13)``."""
    return shape_str(shape, f"({', '.join(letters)})")


MODEL = ("CausalSelfAttention", "MLP", "Block")  # the classes every whole-model check also depends on


class PartBTest(GradedTest):
    part = "part-b"
    module = "gpt"

    # -- recorded data -------------------------------------------------------------------------
    @property
    def data(self):
        return data.arrays("part_b")

    @property
    def meta(self):
        return data.meta("part_b")

    @property
    def config(self):
        return self.meta["config"]

    def weight_set(self, name, drop=()):
        """Recorded weight set ``name`` (nanoGPT layout), without the names in ``drop``."""
        prefix = f"w.{name}."
        found = {k[len(prefix):]: v for k, v in self.data.items() if k.startswith(prefix)}
        return {k: v for k, v in found.items() if k not in drop}

    # -- the student's model ---------------------------------------------------------------------
    def layout(self):
        """How the student's model stores linear weights, read once per grade from its own
        parameter shapes ("out_in", nn.Linear's, when they cannot tell)."""
        if "layout" not in self.session.cache:
            layout = "out_in"
            try:
                out = self.session.call(self.part, "gpt", module=self.module, key=("layout",),
                                        model=cases.model(self.config), calls=[{"fn": "parameters"}])
                layout = weights.detect_layout({n: tuple(s) for n, s in out[0]["every"]}, self.config) or "out_in"
            except (sandbox.StudentError, KeyError, TypeError, ValueError, IndexError):
                pass
            self.session.cache["layout"] = layout
        return self.session.cache["layout"]

    def model(self, set_name=None, config=None, drop=(), **options):
        """The worker's ``model`` argument: GPT(config) with weight set ``set_name`` in the student's
        layout (None: the model's own initialisation)."""
        w = None if set_name is None else weights.to_layout(self.weight_set(set_name, drop), self.layout())
        return cases.model(config or self.config, w, **options)


    def logits(self, out, idx, what, vocab=None):
        """``out["logits"]`` after checking it is (B, T, V) for ``idx`` (B, T); the message names the
        call and both shapes (nanoGPT's inference shortcut gives (B, 1, V), some tutorials (B*T, V))."""
        B, T = np.shape(idx)
        expected = (B, T, vocab or self.config["vocab_size"])
        got = tuple(np.shape(out["logits"]))
        if got != expected:
            hint = ""
            if got == (B, 1, expected[2]) and T > 1:
                hint = " (only the last position's logits: return every position's, x[:, [-1], :] is not the contract)"
            elif got == (B * T, expected[2]):
                hint = " (flattened to (B*T, V): return them as (B, T, V) and flatten only inside the loss)"
            self.fail(f"{what}: the logits have shape {got}, expected {fmt_shape(expected, 'BTV')} for idx of "
                      f"shape {fmt_shape((B, T), 'BT')}{hint}")
        return np.asarray(out["logits"])

    def compare_logits(self, got, expected, name, w=None, idx=None):
        """Fail unless ``got`` matches ``expected``; with weights and inputs, say which known bug it looks like."""
        msg = check_close(actual=got, expected=expected, name=name)
        if msg:
            why = diagnose(w, idx, self.config["n_head"], got) if w is not None else None
            self.fail(msg + (f"\nLikely cause: {why}" if why else ""))

    # -- gates ---------------------------------------------------------------------------------
    def architecture(self, got, w, idx, candidates=None, n_head=None):
        """"reference", a known bug, or None: which model reproduces the student's logits ``got``
        for weights ``w`` (nanoGPT layout) and ``idx`` (lenient about (B, 1, V) and (B*T, V))."""
        n_head = n_head or self.config["n_head"]
        got = np.asarray(got, dtype=np.float64)
        B, T = np.shape(idx)
        last = got.ndim == 3 and got.shape[:2] == (B, 1) and T > 1
        if got.ndim == 2 and got.shape[0] == B * T:
            got = got.reshape(B, T, -1)
        try:
            found = variants(w, idx, n_head, candidates, rtol=1e-4, atol=1e-5)  # {None: reference, bug: logits}
        except (KeyError, ValueError, IndexError):
            return None
        for bug, z in found.items():
            z = z[:, -1:] if last else z
            if z.shape == got.shape and np.allclose(got, z, rtol=1e-4, atol=1e-5):
                return bug or "reference"
        return None

    def identify(self, set_name="generation"):
        """The known bug (see ``architecture``) the student's GPT computes with weight set
        ``set_name``, read once per grade from its logits for forward.idx: None for the reference,
        and when no known model matches or the call fails (then the reference is expected)."""
        key = ("identify", set_name)
        if key not in self.session.cache:
            idx, found = self.data["forward.idx"], None
            try:
                out = self.session.call(self.part, "gpt", module=self.module, key=key, model=self.model(set_name),
                                        calls=[cases.forward(idx)])
                found = self.architecture(out[0]["logits"], self.weight_set(set_name), idx)
                found = None if found == "reference" else found
            except (sandbox.StudentError, KeyError, TypeError, ValueError, IndexError):
                pass
            self.session.cache[key] = found
        return self.session.cache[key]

    def gate_own(self, got, params, idx, what):
        """For a check on the student's own initialised model, whose verdict does not depend on the
        weights: GPT.forward's logits ``got`` for ``idx`` must be a GPT-2's (the reference
        architecture's or a known variant's) for the parameters the model reported (``params``, the
        result of a ``parameters`` call with values), so a stub cannot pass for a model."""
        values = params.get("values") or {}
        layout = weights.detect_layout({n: np.shape(v) for n, v in values.items()}, self.config)
        if layout is None:
            self.fail(f"{what}: not judged, because your GPT's parameters are not GPT-2's (names and shapes), so its "
                      "outputs cannot be checked (see test 2.1.1)")
        w = weights.from_layout(values, layout)
        got = np.asarray(got, dtype=np.float64)
        if not got.size or np.ptp(got) < 1e-7 or np.ptp(w["transformer.wte.weight"]) < 1e-6:
            self.fail(f"{what}: not judged, because your GPT's logits or token embeddings are constant, so it cannot "
                      "be told from a stub")
        if self.architecture(got, w, idx) is None:
            self.fail(f"{what}: not judged, because GPT.forward's logits for idx {fmt_shape(np.shape(idx), 'BT')} "
                      "are not those of a GPT-2 with your model's own parameters (nor of any known variant), so the "
                      "grader cannot tell that they come from your model (see test 2.2.1)")

    # -- small got/expected helpers --------------------------------------------------------------
    def tokens(self, out, *, what, shape, letters, vocab):
        """The int64 token ids ``out`` (from ``sample``/``generate``) after checking them."""
        if tuple(out["shape"]) != tuple(shape):
            self.fail(f"{what} returned a tensor of the wrong shape: got {tuple(out['shape'])}, "
                      f"expected {fmt_shape(shape, letters)}")
        if out["dtype"] != "torch.int64":
            self.fail(f"{what} should return a LongTensor (torch.int64), got {out['dtype']}")
        ids = np.asarray(out["tokens"])
        bad = ids[(ids < 0) | (ids >= vocab)]
        if bad.size:
            self.fail(f"{what} returned token ids outside 0..{vocab - 1}: {sorted(set(bad.tolist()))[:5]}")
        return ids

    def raised(self, out, *, what, expected="ValueError"):
        """Fail unless the call (made with ``catch``) raised ``expected`` (or a subclass)."""
        if out.get("raised") is None:
            self.fail(f"{what} did not raise; expected {expected}")
        if expected not in out["raised"]:
            self.fail(f"{what} raised {out['raised'][0]}: {out.get('message', '')}\nexpected {expected}")
