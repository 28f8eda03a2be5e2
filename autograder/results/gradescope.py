"""The single place that knows Gradescope's results.json schema.

Specification (summarised in README): top level ``score``, ``execution_time`` (a number),
``output``, ``output_format``, ``visibility``, ``stdout_visibility``, ``extra_data``, ``tests``,
``leaderboard`` (``{name, value, order}``); per test ``score``, ``max_score``, ``status``,
``name``, ``number``, ``output``, ``output_format``, ``tags``, ``visibility``, ``extra_data``.
Outputs are cut well below Gradescope's 100,000 characters.
"""
import json
import os
import tempfile

MAX_OUTPUT = 20_000
MAX_TOP_OUTPUT = 50_000
CRASH_MESSAGE = ("The autograder itself failed while grading this submission. This is not your fault: "
                 "please tell your instructor. Your work has not been lost; it can be regraded.")


def _cut(text, limit):
    text = text or ""
    if len(text) <= limit:
        return text
    return text[: limit - 60] + f"\n... [{len(text) - limit + 60} more characters cut]"


def _test_dict(r):
    return {"name": r.name, "number": r.number, "score": r.score, "max_score": r.max_score,
            "status": r.status, "output": _cut(r.output, MAX_OUTPUT), "output_format": "text",
            "tags": list(r.tags), "visibility": r.visibility, "extra_data": dict(r.extra_data)}


def to_gradescope_dict(results, *, execution_time, output="", leaderboard=(), extra_data=None):
    tests = [_test_dict(r) for r in results]
    return {
        "score": round(sum(t["score"] for t in tests), 4),
        "execution_time": round(float(execution_time), 3),
        "output": _cut(output, MAX_TOP_OUTPUT),
        "output_format": "text",
        "visibility": "visible",
        "stdout_visibility": "hidden",
        "extra_data": dict(extra_data or {}),
        "tests": tests,
        "leaderboard": [{"name": e["name"], "value": e["value"], "order": e.get("order", "asc")}
                        for e in leaderboard],
    }


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


def write_atomic(path, document):
    """Write ``document`` as JSON to ``path`` by replacing it in one step."""
    folder = os.path.dirname(os.path.abspath(path))
    os.makedirs(folder, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=".results-", suffix=".json", dir=folder)
    try:
        with os.fdopen(fd, "w") as f:
            json.dump(document, f, indent=2, allow_nan=False)
            f.write("\n")
        os.chmod(tmp, 0o644)
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise


def write_fallback(path, note="Grading did not finish."):
    """Written before grading starts, so a results file exists whatever happens next."""
    write_atomic(path, crash_document(note))
