"""What every Part A check does: run a case on the student's attention.py, compare with the
reference's recorded output, and explain a wrong output that matches a known bug.

Each concept is one module of this package (``softmax.py``, ``attention.py``, ...) holding its
``FUNCTION`` (the contract name), ``cases()`` (seeded inputs, in the contract's argument
order, shared by recording and grading), ``RAISES`` (cases that must raise ValueError, never
recorded), ``signatures(*inputs)`` (what known bugs would return, for the diagnosis) and its
test class. Failure messages start with the call that failed (``softmax(x: (4, 6), axis=0)``),
say got/expected, and end with a diagnosis when the wrong output matches a known bug.
"""
import functools
import importlib
import pkgutil

import numpy as np

from .. import data
from ..base import GradedTest
from ..compare import as_array, check_close, check_dtype, check_shape, close_enough

NOT_RUN = object()


@functools.lru_cache(maxsize=None)
def concepts():
    """{case group: concept module} of every module of this package that declares a FUNCTION."""
    found = {}
    for info in pkgutil.iter_modules(importlib.import_module(__package__).__path__):
        module = importlib.import_module(f"{__package__}.{info.name}")
        if hasattr(module, "FUNCTION"):
            found[getattr(module, "GROUP", module.FUNCTION)] = module
    return found


def concept(case):
    return concepts()[case.split(".")[0]]


def concept_of(function):
    return next(m for m in concepts().values() if m.FUNCTION == function)


@functools.lru_cache(maxsize=None)
def _cases(group):
    return concepts()[group].cases()


def inputs(case):
    """The inputs of ``case`` ("group.name"): a dict of arguments in the contract's order."""
    return _cases(case.split(".")[0])[case]


def function_of(case):
    return concept(case).FUNCTION


def recorded_cases():
    """Every case whose output is recorded, concept by concept, in a fixed order."""
    return [c for g in sorted(concepts()) for c in _cases(g) if c not in getattr(concepts()[g], "RAISES", ())]


def record(call):
    """The expected outputs ``(arrays, meta)``: ``call(name, *args)`` runs the reference's
    ``attention.name``; arrays go to ``data/part_a.npz``, dicts and ints to ``part_a.json``."""
    arrays, meta = {}, {}
    for case in recorded_cases():
        value = call(function_of(case), *inputs(case).values())
        names = getattr(concept(case), "OUTPUTS", None)
        if names:
            arrays.update({f"{case}.{n}": np.asarray(v) for n, v in zip(names, value)})
        elif isinstance(value, (dict, int, np.integer)):
            meta[case] = value  # written as JSON by make_reference
        else:
            arrays[case] = np.asarray(value)
    return arrays, meta


def expected_output(case):
    """The reference's recorded output on ``case``: an int or dict (``part_a.json``), else
    {output: array} for a function of several outputs (``OUTPUTS``), else one array."""
    if case in data.meta("part_a"):
        return data.meta("part_a")[case]
    names, arrays = getattr(concept(case), "OUTPUTS", None), data.arrays("part_a")
    return {n: arrays[f"{case}.{n}"] for n in names} if names else arrays[case]


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


def _same(a, b):
    if isinstance(b, (bool, int, np.integer)):  # counts: exactly
        return not isinstance(a, (bool, dict, list, tuple)) and np.size(a) == 1 and np.asarray(a).item() == b
    if isinstance(b, dict):
        return isinstance(a, dict) and set(a) == set(b) and all(_same(a[k], b[k]) for k in b)
    if isinstance(b, (list, tuple)):
        return isinstance(a, (list, tuple)) and len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b))
    return close_enough(a, b)


def diagnose(function, inputs, actual):
    """A sentence naming the known bug whose output ``actual`` matches, or None. The concept's
    ``signatures`` recompute, in trusted NumPy from the same inputs, what each classic mistake
    returns; variants equal to the right answer on these inputs are skipped (never a guess)."""
    module = next((m for m in concepts().values() if m.FUNCTION == function), None)
    if module is None or actual is None or not hasattr(module, "signatures"):
        return None
    with np.errstate(all="ignore"):
        try:
            variants = module.signatures(*inputs.values())
            _, right = next(variants)
            for text, wrong in variants:
                if not _same(wrong, right) and _same(actual, wrong):
                    return text
        except Exception:  # noqa: BLE001 - a diagnosis is a bonus; it must never break a check
            return None
    return None


class PartATest(GradedTest):
    part = "part-a"
    module = "attention"

    # -- running cases ---------------------------------------------------------------------------
    def run_case(self, case):
        """``(inputs, value)``: the student's output on ``case``; any error of theirs fails the test."""
        function, args = function_of(case), inputs(case)
        value = self.student(f"{describe(function, args)}: calling `{function}` failed", name=function,
                             args=list(args.values()), kwargs={})["value"]
        return args, value

    # -- verdicts --------------------------------------------------------------------------------
    def explain(self, message, function, inputs, value):
        hint = diagnose(function, inputs, value)
        self.fail(message + (f"\nThis looks like a known bug: {hint}." if hint else ""))

    def output_array(self, function, inputs, value, *, what="the output", kinds=None):
        """``value`` as an array after the type and dtype checks; ``what`` names the output."""
        label = f"{describe(function, inputs)} -> {what}"
        kinds = kinds or getattr(concept_of(function), "KINDS", "f")
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

    def assert_no_peeking(self, function, inputs, before, after, value, *, changed, what="the outputs"):
        """``before`` and ``after`` are the outputs (T, ...) on inputs that differ only in ``changed`` at
        positions >= n (``inputs`` are the first): equal at positions < n, different at n and later."""
        n, call = concept_of(function).FUTURE_FROM, describe(function, inputs)
        self.assert_finite(function, inputs, before, value, what=what)
        if not np.allclose(before[:n], after[:n], rtol=1e-5, atol=1e-6):
            self.explain(f"{call}: after changing {changed} at positions >= {n}, {what} at positions < {n} got a "
                         f"change of up to {np.abs(before[:n] - after[:n]).max():.3g}, expected none: position t must "
                         "not see the future", function, inputs, value)
        if np.allclose(before[n:], after[n:]):
            self.fail(f"{call}: after changing {changed} at positions >= {n}, {what} there got no change, expected "
                      "them to change")

    def assert_shape(self, case, value, expected_shape, *, notation=None, what="the output", index=None):
        function, args = function_of(case), inputs(case)
        a, label = self.output_array(function, args, self.part_of(function, args, value, index), what=what)
        msg = check_shape(actual=a, expected_shape=expected_shape, name=label, notation=notation)
        if msg:
            self.explain(msg, function, args, value)
        return a

    def part_of(self, function, inputs, value, index):
        """Output ``index`` of a function returning a pair (``(Z, A)``), checked to be a pair."""
        if index is None:
            return value
        if not isinstance(value, (list, tuple)) or len(value) != 2:
            self.fail(f"{describe(function, inputs)}: got a {type(value).__name__}"
                      f"{' of length ' + str(len(value)) if isinstance(value, (list, tuple)) else ''}, "
                      "expected a pair (Z, A)")
        return value[index]

    def assert_case(self, case, value=NOT_RUN, *, rtol=None, atol=None):
        """The student's output on ``case`` (run now unless given) matches the recorded one."""
        function, args = function_of(case), inputs(case)
        if value is NOT_RUN:
            _, value = self.run_case(case)
        if case in data.meta("part_a"):
            return self._assert_recorded(case, function, args, value)
        names, want = getattr(concept(case), "OUTPUTS", None), expected_output(case)
        tol = {k: v for k, v in (("rtol", rtol), ("atol", atol)) if v is not None}
        arrays = []
        for index, what in enumerate(names or [None]):
            a, label = self.output_array(function, args, self.part_of(function, args, value, index if names else None),
                                         what=what or "the output")
            msg = check_close(actual=a, expected=want[what] if names else want, name=label, **tol)
            if msg and not self.charged_elsewhere(case, args, a):
                self.explain(msg, function, args, value)
            arrays.append(a)
        return arrays if names else arrays[0]

    def charged_elsewhere(self, case, args, actual):
        """True (and says so) when ``actual`` is right given a bug of a function this one calls, a
        bug the student's own function shows on its own case, where its own tests charge it. A
        concept declares its dependencies with ``depends(*inputs)``: (function, its case, a bug,
        this output with that bug, that function's output with it)."""
        depends = getattr(concept(case), "depends", None)
        if depends is None:
            return False
        with np.errstate(all="ignore"):
            for function, own_case, bug, output, own_output in depends(*args.values()):
                if not close_enough(actual, output, rtol=1e-4, atol=1e-5):
                    continue
                _, value = self.run_case(own_case)
                if close_enough(value, own_output(*inputs(own_case).values()), rtol=1e-4, atol=1e-5):
                    print(f"{describe(function_of(case), args)} is right given your `{function}` "
                          f"({bug.replace('_', ' ')}), whose own tests charge that bug, not this one.")
                    return True
        return False

    def _assert_recorded(self, case, function, args, value):
        """A recorded int or dict of shapes (Recitation 11's exercises), compared exactly."""
        call, want = describe(function, args), expected_output(case)
        hook = getattr(concept(case), "compare", None)
        if hook:
            msg = hook(value, want, call)
        else:
            msg = None if value == want else f"{call}: got {value!r}, expected {want!r}"
        if msg:
            self.explain(msg, function, args, value)
        return value

    def run_value(self, spec):
        for case in spec.cases:
            self.assert_case(case, **dict(spec.tol))

    def assert_value_error(self, case, why, works=None):
        """``case`` raises ValueError, and (no points for refusing) the same function still works
        for valid arguments: ``works()`` returns None, or what is wrong."""
        function, args = function_of(case), inputs(case)
        call = describe(function, args)
        out, e = self.student(call, name=function, args=list(args.values()), kwargs={}, errors=True)
        if e is None:
            value = out["value"]
            shape = f" of shape {np.shape(value)}" if isinstance(value, np.ndarray) else ""
            self.fail(f"{call}: got a return value{shape} and no error, expected a ValueError ({why})")
        if e.kind == "raised" and not e.message.startswith("ValueError"):
            self.fail(f"{call}: got {e.message}, expected a ValueError ({why})")
        if e.kind != "raised":
            self.fail(f"{call}: calling `{function}` failed: {e}")
        problem = works() if works else None
        if problem:
            self.fail(f"{call} raised ValueError, but `{function}` does not work for valid arguments ({problem}); "
                      "a ValueError counts only from a function that works")

    def works(self, case):
        """A ``works`` for ``assert_value_error``: ``case``'s values match the reference's."""
        found = []

        def check():
            if not found:
                try:
                    self.assert_case(case)
                    found.append(None)
                except self.failureException as e:
                    found.append(str(e).splitlines()[0])
            return found[0]
        return check
