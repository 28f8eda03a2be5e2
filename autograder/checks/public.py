"""The handout's recorded public tests: the cases of every check declared ``public=True``, with
the reference's recorded outputs, published as JSON by ``make handout``
(``handout/tests/public_cases.json``) and run by ``handout/tests/test_recorded.py``. The same
cases, the same outputs and the same tolerance as the graded check (mugrade's publish/submit),
and only checks students can see anyway: a hidden check cannot be public (``spec.Value``).
"""
import json

import numpy as np

from . import contract
from .compare import ATOL, RTOL
from .part_a import base as part_a
from .spec import PARTS


def _plain(value):
    """A case's input or output as JSON (arrays as nested lists, dtype kept in a tag)."""
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    if isinstance(value, np.ndarray):  # JSON has no infinities: "inf", "-inf" and "nan" as strings
        items = value.tolist()
        if value.dtype.kind == "f" and not np.isfinite(value).all():
            items = json.loads(json.dumps(items).replace("-Infinity", '"-inf"').replace("Infinity", '"inf"')
                               .replace("NaN", '"nan"'))
        return {"array": items, "dtype": str(value.dtype)}
    return value.item() if isinstance(value, np.generic) else value


def cases():
    """[{number, title, function, case, args, expected, rtol, atol}] of every public check, in number order."""
    found = []
    for spec in contract.checks():
        if not spec.public or spec.part != PARTS["1"]:
            continue
        tol = dict(spec.tol)
        for case in spec.cases:
            module = part_a.concept(case)
            try:
                expected = part_a.expected_output(case)
            except KeyError:
                raise SystemExit(f"check {spec.number} is public, but the reference's output on case {case!r} was "
                                 "never recorded: run `make reference` before `make handout`") from None
            found.append({"number": spec.number, "title": spec.title, "function": module.FUNCTION, "case": case,
                          "args": list(part_a.inputs(case).values()), "expected": expected,
                          "rtol": tol.get("rtol", RTOL), "atol": tol.get("atol", ATOL)})
    return found


def as_json():
    return json.dumps(_plain(cases()), indent=None, separators=(",", ":"), allow_nan=False) + "\n"
