"""Shared helpers for the project's tests: paths and an in-process grade."""
import os
import sys

import pytest

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
REFERENCE = os.path.join(REPO, "reference")
HANDOUT = os.path.join(REPO, "handout")
sys.path.insert(0, REPO)


def pytest_configure(config):
    """As root, claim one sandbox uid for the whole session and hand it to every grade this
    session starts (in-process or in a subprocess), so the tests know whose processes to look
    for; another session or `make validate` running at the same time claims another uid."""
    from autograder.sandbox import GraderError, limits, preflight
    if limits.running_as_root() and not os.environ.get("AUTOGRADER_SANDBOX_USER"):
        os.environ["AUTOGRADER_SANDBOX_USER"] = str(limits.sandbox_user()[1])
    try:  # a clone the sandbox user cannot reach (a 0700 home folder): say so once, not test by test
        preflight(preload=("torch",))
    except GraderError as e:
        pytest.exit(f"the grader cannot run student code here: {e}", returncode=3)


def tests_by_tag(document, tag):
    return [t for t in document["tests"] if tag in t["tags"]]


def lost_points(document, tag):
    """Points lost on the tests carrying ``tag``."""
    return sum(t["max_score"] - t["score"] for t in tests_by_tag(document, tag))


@pytest.fixture
def grade(tmp_path):
    """grade(path, select=None) -> the results.json document (graded in this process)."""
    from autograder.grade import grade as run

    def _grade(path, select=None):
        return run(path, str(tmp_path / "results.json"), select)
    return _grade
