"""The single place that knows Gradescope's results.json schema, and how it is encoded.

Specification (summarised in README): top level ``score``, ``execution_time`` (a number),
``output``, ``output_format``, ``visibility``, ``stdout_visibility``, ``extra_data``, ``tests``,
``leaderboard`` (``{name, value, order}``); per test ``score``, ``max_score``, ``status``,
``name``, ``number``, ``output``, ``output_format``, ``tags``, ``visibility``, ``extra_data``.

Every string is cleaned here (``clean.py``: no lone surrogates, control characters escaped),
whoever built the document, and ``encode`` gives UTF-8 bytes that strict parsers (jq, Perl's
JSON::PP) accept, cut to fit a byte budget: outputs are shortened, never the scores.
"""
import json
import math

from .clean import clean, clean_text

MAX_OUTPUT = 20_000       # characters of one test's output (Gradescope allows 100,000)
MAX_TOP_OUTPUT = 50_000   # characters of the top-level output
MAX_BYTES = 2 * 2**20     # the encoded document; the results file reserves this much
CRASH_MESSAGE = ("The autograder itself failed while grading this submission. This is not your fault: "
                 "please tell your instructor. Your work has not been lost; it can be regraded.")
TOO_BIG = ("The results were too long for the results file; every test's feedback was cut. "
           "This is not your fault: please tell your instructor.")


def cut(text, limit):
    """``text`` shortened to about ``limit`` characters, saying how much was cut."""
    text = text or ""
    if len(text) <= limit:
        return text
    note = f"\n... [{len(text) - limit + 60} more characters cut]"
    return text[: max(limit - 60, 0)] + note


def _test_dict(r):
    return {"name": r.name, "number": r.number, "score": r.score, "max_score": r.max_score,
            "status": r.status, "output": cut(clean_text(r.output), MAX_OUTPUT), "output_format": "text",
            "tags": list(r.tags), "visibility": r.visibility, "extra_data": dict(r.extra_data)}


def to_gradescope_dict(results, *, execution_time, output="", leaderboard=(), extra_data=None):
    tests = clean([_test_dict(r) for r in results])
    return {
        "score": round(sum(t["score"] for t in tests), 4),
        "execution_time": round(float(execution_time), 3),
        "output": cut(clean_text(output), MAX_TOP_OUTPUT),  # cleaned first: escapes are longer
        "output_format": "text",
        "visibility": "visible",
        "stdout_visibility": "hidden",
        "extra_data": clean(dict(extra_data or {})),
        "tests": tests,
        "leaderboard": clean([{"name": e["name"], "value": _sortable(e.get("value")), "order": e.get("order", "asc")}
                              for e in leaderboard if _sortable(e.get("value")) is not None]),
    }


def _sortable(value):
    """A leaderboard value Gradescope can sort (a finite number or a string), or None."""
    if hasattr(value, "item") and not isinstance(value, (str, int, float)):
        try:
            value = value.item()  # a NumPy scalar
        except (TypeError, ValueError):
            return None
    if isinstance(value, str):
        return value
    if isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value):
        return value
    return None


def crash_document(traceback_text="", execution_time=0.0):
    """A valid results file for when the grader itself failed: a visible notice, the
    traceback only for staff (a hidden entry), no points."""
    from .model import TestResult
    results = [
        TestResult(name="The autograder failed", max_score=0.0, number="0.1", tags=["grader"],
                   output=CRASH_MESSAGE),
        TestResult(name="Autograder traceback (staff only)", max_score=0.0, number="0.2", tags=["grader"],
                   visibility="hidden", output=traceback_text or "(no traceback)"),
    ]
    doc = to_gradescope_dict(results, execution_time=execution_time, output=CRASH_MESSAGE)
    doc["score"] = 0.0
    return doc


def _dump(document):
    text = json.dumps(document, indent=2, ensure_ascii=False, allow_nan=False)
    return (text + "\n").encode("utf-8")


def _shortened(document, limit, top_limit):
    doc = dict(document, output=cut(document.get("output", ""), top_limit))
    doc["tests"] = [dict(t, output=cut(t.get("output", ""), limit)) for t in document.get("tests", [])]
    return doc


def encode(document, max_bytes=MAX_BYTES):
    """``document`` as strict-JSON UTF-8 bytes of at most ``max_bytes`` (outputs cut to fit;
    if even empty outputs do not fit, every test's output is dropped and the top-level output
    says so; scores are always kept). Raises ValueError only if the scores alone do not fit."""
    document = clean(document)
    data = _dump(document)
    if len(data) <= max_bytes:
        return data
    lo, hi = 0, max([len(t.get("output", "")) for t in document.get("tests", [])] + [len(document.get("output", ""))])
    while lo < hi:  # the longest per-output limit that fits (outputs cut to the same length)
        mid = (lo + hi + 1) // 2
        if len(_dump(_shortened(document, mid, max(mid, 2000)))) <= max_bytes:
            lo = mid
        else:
            hi = mid - 1
    data = _dump(_shortened(document, lo, max(lo, 2000)))
    if len(data) <= max_bytes:
        return data
    bare = dict(document, output=TOO_BIG, tests=[dict(t, output="") for t in document.get("tests", [])])
    data = _dump(bare)
    if len(data) > max_bytes:
        raise ValueError(f"the results document needs {len(data)} bytes without any output, "
                         f"over the {max_bytes} bytes reserved")
    return data


def write_atomic(path, document):
    """Write ``document`` to ``path`` by replacing it in one step (see ``store.py``)."""
    from .store import replace_file
    replace_file(path, encode(document))
