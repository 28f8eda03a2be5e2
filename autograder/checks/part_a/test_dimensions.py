"""1.11 attention_shapes and 1.12 gpt_param_count: Recitation 11's dimension exercises."""
import numpy as np
from gradescope_utils.autograder_utils.decorators import number, tags, visibility, weight

from .common import PartATest, describe

NOTATION = {"x": "(B, T, C)", "q": "(B, nh, T, hs)", "k": "(B, nh, T, hs)", "v": "(B, nh, T, hs)",
            "scores": "(B, nh, T, T)", "weights": "(B, nh, T, T)", "z": "(B, nh, T, hs)", "out": "(B, T, C)"}


def _as_shape(value):
    """A shape tuple of ints, or None when ``value`` is not one."""
    try:
        shape = tuple(np.asarray(value).reshape(-1).tolist())
    except Exception:  # noqa: BLE001
        return None
    ok = shape and all(isinstance(n, (int, float)) and not isinstance(n, bool) and float(n).is_integer()
                       for n in shape)
    return tuple(int(n) for n in shape) if ok else None


class TestAttentionShapes(PartATest):
    def assert_shapes(self, case):
        inputs, got = self.run_case(case)
        call, expected = describe("attention_shapes", inputs), self.recorded(case)
        if not isinstance(got, dict):
            self.fail(f"{call}: got a {type(got).__name__}, expected a dict of shape tuples with keys "
                      f"{sorted(expected)}")
        missing = sorted(set(expected) - set(got))
        if missing:
            self.fail(f"{call} has no key(s) {missing}: got keys {sorted(got)}, expected {sorted(expected)}")
        for key, want in expected.items():
            shape = _as_shape(got[key])
            if shape != tuple(want):
                self.explain(f"{call}[{key!r}]: got {shape if shape else got[key]!r}, expected "
                             f"{NOTATION[key]} = {tuple(want)}", "attention_shapes", inputs, got)

    @weight(1)
    @number("1.11.1")
    @visibility("visible")
    @tags("part-a", "attention_shapes")
    def test_femto_and_pico_shapes(self):
        """attention_shapes: femto and pico (B = 1, T = 4)"""
        self.assert_shapes("shapes.femto")
        self.assert_shapes("shapes.pico")

    @weight(1)
    @number("1.11.2")
    @visibility("after_published")
    @tags("part-a", "attention_shapes")
    def test_shapes_with_batch(self):
        """attention_shapes: batches, GPT-2 small, 4 heads of 3"""
        for case in ("shapes.pico_batch", "shapes.gpt2", "shapes.wide_heads"):
            self.assert_shapes(case)


class TestParamCount(PartATest):
    def assert_count(self, case):
        inputs, got = self.run_case(case)
        call, want = describe("gpt_param_count", inputs), self.recorded(case)
        value = got.item() if isinstance(got, np.ndarray) and got.size == 1 else got
        if isinstance(value, bool) or not isinstance(value, (int, float)) or value != want:
            self.explain(f"{call}: got {value!r}, expected {want}", "gpt_param_count", inputs, value)

    @weight(1)
    @number("1.12.1")
    @visibility("visible")
    @tags("part-a", "gpt_param_count")
    def test_femto_and_pico_param_counts(self):
        """gpt_param_count: femto and pico (65 tokens, context 8)"""
        self.assert_count("params.femto")
        self.assert_count("params.pico")

    @weight(1)
    @number("1.12.2")
    @visibility("after_published")
    @tags("part-a", "gpt_param_count")
    def test_other_param_counts(self):
        """gpt_param_count: GPT-2 small and others"""
        for case in ("params.gpt2", "params.small", "params.no_layers"):
            self.assert_count(case)
