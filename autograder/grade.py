"""One grade, end to end: load -> sandbox -> checks -> results.json.

A fallback results file is written before anything else and replaced atomically at the end,
after every process of the student's code is dead, so a valid file exists whatever happens,
and only this (trusted) process writes it. As root, the grader's files are first made
unreadable to the sandbox user (``limits.protect_grader_files``; docs/THREAT_MODEL.md).
"""
import io
import os
import shutil
import sys
import tempfile
import time
import traceback
import unittest

from gradescope_utils.autograder_utils.json_test_runner import JSONTestResult, JSONTestRunner

from . import loader
from .checks import GradingContext, collect, test_metadata
from .results import crash_document, from_runner_json, to_gradescope_dict, write_atomic, write_fallback
from .sandbox import limits

PACKAGE_DIR = os.path.dirname(os.path.abspath(__file__))
GRADER_FAULT = "The grader failed on this test; this is not your fault, please tell your instructor.\n"


class _Result(JSONTestResult):
    """gradescope-utils' result, telling the grader's own errors apart from failed checks."""

    def addError(self, test, err):
        exc_type, exc, tb = err  # unittest needs an exception instance (it walks __cause__)
        fault = RuntimeError(f"{GRADER_FAULT}({exc_type.__name__}: {exc})")
        super().addError(test, (RuntimeError, fault, tb))


class _Runner(JSONTestRunner):
    resultclass = _Result


def _summary(results, submission):
    lines = []
    for module, where in submission.found.items():
        lines.append(f"{module}.py: " + (f"graded from {where}" if where else "not found"))
    lines += [f"note: {n}" for n in submission.notes]
    for part in ("part-a", "part-b"):
        rs = [r for r in results if r.tags and r.tags[0] == part]
        if rs:
            lines.append(f"{part}: {sum(r.score for r in rs):g} / {sum(r.max_score for r in rs):g} points "
                         "")
    return "\n".join(lines)


def grade(submission_path, out_path, select=None, *, time_budget=420.0, sandbox_options=None):
    """Grade ``submission_path`` and write Gradescope's results.json to ``out_path``; returns it."""
    start = time.monotonic()
    write_fallback(out_path)
    try:
        limits.protect_grader_files(PACKAGE_DIR, out_path)
    except OSError as e:  # e.g. a read-only file system: grade anyway, say so to staff
        print(f"autograder: could not protect the grader's files from the sandbox user: {e}", file=sys.stderr)
    staging = tempfile.mkdtemp(prefix="ag-staged-")
    ctx = None
    try:
        submission = loader.load(submission_path, os.path.join(staging, "submission"))
        ctx = GradingContext(submission, time_budget=time_budget, sandbox_options=sandbox_options)
        tests = collect(select)
        expected = {test_metadata(t)["name"]: test_metadata(t) for t in tests}
        for t in tests:
            t.ctx = ctx
        captured = {}
        runner = _Runner(stream=io.StringIO(), buffer=True, post_processor=captured.update, failure_prefix="")
        runner.run(unittest.TestSuite(tests))
        ctx.close()
        results = from_runner_json(captured, expected)
        document = to_gradescope_dict(results, execution_time=time.monotonic() - start,
                                      output=_summary(results, submission), leaderboard=ctx.leaderboard)
    except Exception:  # noqa: BLE001 - the grader's own crash still yields a valid file
        document = crash_document(traceback.format_exc(), execution_time=time.monotonic() - start)
    finally:
        if ctx is not None:
            ctx.close()
        shutil.rmtree(staging, ignore_errors=True)
    _write_results(out_path, document)
    return document


def _write_results(out_path, document):
    """The final, atomic write; every sandbox process is dead by now, so nothing can race it."""
    try:
        write_atomic(out_path, document)
    except IsADirectoryError:  # a folder planted where results go (a world-writable out folder)
        shutil.rmtree(out_path, ignore_errors=True)
        write_atomic(out_path, document)
