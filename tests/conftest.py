"""Shared helpers for the project's tests: paths and an in-process grade."""
import ast
import os
import sys
import textwrap

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


def reference_public_names(*files):
    """The names the contract lists for these reference/ files: their public functions and
    classes, and their classes' public methods other than forward that hold a solution region
    (GPT.generate)."""
    names = set()
    for file in files:
        with open(os.path.join(REFERENCE, file), encoding="utf-8") as f:
            source = f.read()
        for node in ast.parse(source).body:
            if isinstance(node, (ast.FunctionDef, ast.ClassDef)) and not node.name.startswith("_"):
                names.add(node.name)
            if isinstance(node, ast.ClassDef):
                names |= {item.name for item in node.body if isinstance(item, ast.FunctionDef)
                          and not item.name.startswith("_") and item.name != "forward"
                          and "### BEGIN SOLUTION" in (ast.get_source_segment(source, item) or "")}
    return names


def sandbox_for(folder, source, **options):
    """A Sandbox (``options``: its keywords) over the submission folder ``folder``, made if
    missing and opened (0755), whose student.py is ``source`` dedented."""
    from autograder.sandbox import Sandbox
    os.makedirs(folder, exist_ok=True)
    with open(os.path.join(folder, "student.py"), "w") as f:
        f.write(textwrap.dedent(source))
    os.chmod(folder, 0o755)
    return Sandbox(str(folder), **options)


def call(sb, name, *args, **kw):
    """The value of student.py's ``name(*args)`` in Sandbox ``sb`` (``kw``: timeout, wall)."""
    return sb.call("call", module="student", name=name, args=list(args), **kw)["value"]


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
