"""One grade, end to end: load -> sandbox -> checks -> results.json.

The results file is reserved first (a valid fallback document holding the space the final one
needs) and filled in at the end, after every process of the student's code is dead, so a valid
file exists whatever happens, and only this (trusted) process writes it. As root, the grader's
files are first made unreadable to the sandbox user (``limits.protect_grader_files``).
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
from .checks import Session, collect, metadata
from .checks.session import PRELOAD
from .results import TestResult, crash_document, from_runner_json, reserve, summary, to_gradescope_dict, write_reserved
from .sandbox import limits, preflight

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


def _staff_entries(session):
    """Hidden, 0-point entries for what only staff should read (never shown to students)."""
    notes = list(session.staff)
    for part, isolation in sorted(session.isolation.items()):
        network = (isolation or {}).get("network") if isinstance(isolation, dict) else None
        if network == "open":
            notes.append(f"{part}: the sandbox could cut the network neither with a namespace nor with seccomp, "
                         "so student code could reach the network (and send its inputs out)")
    if not notes:
        return []
    part = "part-b" if any("leaderboard" in n for n in notes) else "part-a"
    return [TestResult(name="Staff only: integrity notes", max_score=0.0, number="0.9", tags=[part, "staff"],
                       visibility="hidden", output="\n".join(notes))]


def grade(submission_path, out_path, select=None, *, time_budget=420.0, sandbox_options=None, started=None,
          sandbox=None):
    """Grade ``submission_path`` and write Gradescope's results.json to ``out_path``; returns it.
    The time budget counts from ``started`` (a ``time.monotonic()`` value: the command line passes
    when its process started, so loading counts too), by default from this call. ``sandbox``: the
    class student code runs in (``make bench`` measures isolation against an in-process one)."""
    began = time.monotonic()
    slot = reserve(out_path)
    try:
        limits.protect_grader_files(PACKAGE_DIR, out_path)
    except OSError as e:  # e.g. a read-only file system: grade anyway, say so to staff
        print(f"autograder: could not protect the grader's files from the sandbox user: {e}", file=sys.stderr)
    staging = tempfile.mkdtemp(prefix="ag-staged-")
    session = None
    try:
        preflight(preload=PRELOAD["part-b"])  # the sandbox user can run this Python: else one clear crash, up front
        submission = loader.load(submission_path, os.path.join(staging, "submission"))
        session = Session(submission, deadline=(started or began) + time_budget, sandbox_options=sandbox_options,
                          sandbox=sandbox)
        tests = collect(select)
        expected = {m["name"]: m for m in map(metadata, tests) if m}
        for t in tests:
            t.session = session
        captured = {}
        runner = _Runner(stream=io.StringIO(), buffer=True, post_processor=captured.update, failure_prefix="")
        try:
            runner.run(unittest.TestSuite(tests))
        finally:
            session.close()  # every process of the student's code dead before any verdict is written
        results = from_runner_json(captured, expected) + _staff_entries(session)
        board = [e for e in captured.get("leaderboard", []) if e.get("value") is not None]
        document = to_gradescope_dict(results, execution_time=time.monotonic() - began, leaderboard=board,
                                      output=summary(results, submission.found, submission.notes))
    except Exception:  # noqa: BLE001 - the grader's own crash still yields a valid file
        document = crash_document(traceback.format_exc(), execution_time=time.monotonic() - began)
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    write_reserved(slot, document)  # every sandbox process is dead by now, so nothing can race it
    return document
