"""Public tests recorded from the reference solution: some graded tests' own cases, with the
reference's outputs (tests/public_cases.json, written by the course staff's `make handout`).

Each case calls a function of your attention.py on the graded test's inputs and compares the
result with the reference's within the grader's tolerance, |got - expected| <= 1e-5 + 1e-4 *
|expected|, so float32 results pass too. Passing them is a good sign, not a guarantee.
"""

import json
from pathlib import Path

import attention
import numpy as np
import pytest

CASES = json.loads((Path(__file__).parent / "public_cases.json").read_text(encoding="utf-8"))


def _value(x):
    """JSON back to what the grader passes: arrays (tagged with their dtype), dicts, numbers."""
    if isinstance(x, dict) and set(x) == {"array", "dtype"}:
        return np.array(x["array"], dtype=x["dtype"])
    if isinstance(x, dict):
        return {k: _value(v) for k, v in x.items()}
    return x


def _compare(got, expected, case, where="the output"):
    if isinstance(expected, dict) and not (set(expected) == {"array", "dtype"}):
        if case["function"] == "scaled_dot_product_attention":  # (Z, A)
            assert isinstance(got, (tuple, list)) and len(got) == 2, f"expected a pair (Z, A), got {type(got).__name__}"
            got = dict(zip(("Z", "A"), got))
        assert isinstance(got, dict), f"{where}: expected a dict with keys {sorted(expected)}, got {type(got).__name__}"
        for key, value in expected.items():
            assert key in got, f"{where}: no key {key!r}"
            _compare(got[key], value, case, f"{where}[{key!r}]")
        return
    expected = _value(expected)
    if isinstance(expected, (int, list)) and not isinstance(expected, np.ndarray):
        got = np.asarray(got).tolist() if isinstance(got, np.ndarray) else got
        got = [int(v) for v in got] if isinstance(got, (tuple, list)) else got
        assert got == expected, f"{where}: got {got!r}, expected {expected!r}"
        return
    got = np.asarray(got)
    assert got.shape == expected.shape, f"{where}: got shape {got.shape}, expected {expected.shape}"
    np.testing.assert_allclose(got, expected, rtol=case["rtol"], atol=case["atol"], err_msg=where)


@pytest.mark.parametrize("case", CASES, ids=[f"{c['number']}-{c['case']}" for c in CASES])
def test_graded_case_matches_the_reference(case):
    got = getattr(attention, case["function"])(*[_value(a) for a in case["args"]])
    _compare(got, case["expected"], case, f"{case['function']} on case {case['case']} (test {case['number']})")
