"""What every Part A check does: run a case on the student's attention.py, compare, explain.

Failure messages start with the call that failed (``softmax(x: (4, 6), axis=0) ...``), say
got/expected, and end with a diagnosis when the wrong output matches a known bug.
"""
import numpy as np

from ...sandbox import StudentError
from .. import cases_part_a as cases
from ..base import GradedTest
from ..compare import as_array, check_close, check_dtype, check_shape
from ..diagnose import diagnose

NOT_RUN = object()


def describe(function, inputs):
    """``softmax(x: (4, 6), axis=0)``: arrays by shape, everything else by value."""
    parts = []
    for k, v in inputs.items():
        if isinstance(v, dict):
            parts.append(f"{k}: {{{len(v)} GPT-2 block weights}}")
        elif isinstance(v, np.ndarray) and (v.ndim > 1 or v.size > 4):
            parts.append(f"{k}: {tuple(v.shape)}")
        else:
            parts.append(f"{k}={np.asarray(v).tolist() if isinstance(v, np.ndarray) else v!r}")
    return f"{function}({', '.join(parts)})"


class PartATest(GradedTest):
    part = "part-a"
    module = "attention"

    # -- running cases -------------------------------------------------------------------------
    def call(self, function, inputs):
        """``function(*inputs.values())`` in the sandbox; raises ``StudentError``."""
        return self.ctx.call(self.part, "call", module=self.module, name=function, args=list(inputs.values()),
                             kwargs={})["value"]

    def run_case(self, case):
        """``(inputs, value)``: the student's output on ``case``; any error of theirs fails the test."""
        function, inputs = cases.function_of(case), cases.inputs(case)
        try:
            return inputs, self.call(function, inputs)
        except StudentError as e:
            self.fail(f"{describe(function, inputs)}: calling `{function}` failed: {e}")

    def expected(self, key):
        return self.ctx.expected("part_a")[key]

    def recorded(self, case):
        return self.ctx.json("part_a")[case]

    # -- verdicts ----------------------------------------------------------------------------------
    def explain(self, message, function, inputs, value):
        hint = diagnose(function, inputs, value)
        self.fail(message + (f"\nThis looks like a known bug: {hint}." if hint else ""))

    def output_array(self, function, inputs, value, *, what="the output", kinds=None):
        """``value`` as an array after the type and dtype checks; ``what`` names the output."""
        label = f"{describe(function, inputs)} -> {what}"
        kinds = kinds or ("b" if function == "causal_mask" else "f")
        a, msg = as_array(value, name=label)
        msg = msg or check_dtype(actual=a, kinds=kinds, name=label)
        if msg:
            self.explain(msg, function, inputs, value)
        return a, label

    def assert_finite(self, function, inputs, a, value, what="the output"):
        bad = ~np.isfinite(a)
        if bad.any():
            i = tuple(int(v) for v in np.argwhere(bad)[0])
            self.explain(f"{describe(function, inputs)} -> {what}: got {a[i]} at index {i} ({int(bad.sum())} "
                         "entries not finite), expected finite values", function, inputs, value)

    def assert_shape(self, case, value, expected_shape, *, notation=None, what="the output", index=None):
        function, inputs = cases.function_of(case), cases.inputs(case)
        part = self.part_of(function, inputs, value, index)
        a, label = self.output_array(function, inputs, part, what=what)
        msg = check_shape(actual=a, expected_shape=expected_shape, name=label, notation=notation)
        if msg:
            self.explain(msg, function, inputs, value)
        return a

    def assert_case(self, case, value=NOT_RUN, *, inputs=None, rtol=None, atol=None):
        """The student's output on ``case`` (run now unless given) matches the recorded one."""
        function = cases.function_of(case)
        if value is NOT_RUN:
            inputs, value = self.run_case(case)
        inputs = inputs or cases.inputs(case)
        outputs = [("Z", 0), ("A", 1)] if function == "scaled_dot_product_attention" else [(None, None)]
        tol = {k: v for k, v in (("rtol", rtol), ("atol", atol)) if v is not None}
        arrays = []
        for what, index in outputs:
            expected = self.expected(f"{case}.{what}" if what else case)
            part = self.part_of(function, inputs, value, index)
            a, label = self.output_array(function, inputs, part, what=what or "the output")
            msg = check_close(actual=a, expected=expected, name=label, **tol)
            if msg:
                self.explain(msg, function, inputs, value)
            arrays.append(a)
        return arrays if len(arrays) > 1 else arrays[0]

    def part_of(self, function, inputs, value, index):
        """Output ``index`` of a function returning a tuple (``(Z, A)``), checked to be a pair."""
        if index is None:
            return value
        if not isinstance(value, (list, tuple)) or len(value) != 2:
            self.fail(f"{describe(function, inputs)}: got a {type(value).__name__}"
                      f"{' of length ' + str(len(value)) if isinstance(value, (list, tuple)) else ''}, "
                      "expected a pair (Z, A)")
        return value[index]

    def assert_value_error(self, case, why):
        function, inputs = cases.function_of(case), cases.inputs(case)
        call = describe(function, inputs)
        try:
            value = self.call(function, inputs)
        except StudentError as e:
            if e.kind == "raised" and e.message.startswith("ValueError"):
                return
            if e.kind == "raised":
                self.fail(f"{call}: got {e.message}, expected a ValueError ({why})")
            self.fail(f"{call}: calling `{function}` failed: {e}")
        shape = f" of shape {np.shape(value)}" if isinstance(value, np.ndarray) else ""
        self.fail(f"{call}: got a return value{shape} and no error, expected a ValueError ({why})")
