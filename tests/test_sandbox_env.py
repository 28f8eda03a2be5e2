"""Faults of the grading machine are never the student's: a Python environment the sandbox user
cannot reach (a clone inside a 0700 /root) stops the grader once, up front, saying what to do;
a module the worker cannot import before any student code runs is a GraderError, not a
failed test of the student."""
import os
import shutil
import sys
import tempfile
import time

import pytest

from autograder.sandbox import GraderError, Sandbox, limits, preflight, runner

as_root = pytest.mark.skipif(not limits.running_as_root(), reason="needs root (CI and Gradescope run as root)")


@pytest.fixture
def private_python():
    """The interpreter reached through a folder only root may enter, like /root/clone/.venv/bin/python."""
    folder = tempfile.mkdtemp(prefix="ag-test-private-")  # 0700, root's
    os.makedirs(os.path.join(folder, "clone"))
    os.symlink(sys.prefix, os.path.join(folder, "clone", ".venv"))  # this environment, seen from inside
    python = os.path.join(folder, "clone", ".venv", "bin", os.path.basename(sys.executable))
    yield folder, python
    shutil.rmtree(folder)


@as_root
def test_a_python_the_sandbox_user_cannot_reach_stops_up_front_saying_what_to_do(tmp_path, private_python):
    folder, python = private_python
    (tmp_path / "student.py").write_text("def f():\n    return 1\n")
    start = time.monotonic()
    with pytest.raises(GraderError) as e:
        Sandbox(str(tmp_path), python=python)
    message = str(e.value)
    assert folder in message and "0700" in message and f"chmod o+x {folder}" in message, message
    assert "not the student's" in message and time.monotonic() - start < 5
    with pytest.raises(GraderError):  # the same answer for a grade's up-front check
        preflight(python=python)
    os.chmod(folder, 0o711)  # the fix the message names: now it runs
    runner._checked.clear()
    with Sandbox(str(tmp_path), python=python) as sb:
        assert sb.call("call", module="student", name="f")["value"] == 1


@as_root
def test_what_the_sandbox_user_cannot_reach_is_named_with_the_folder_that_blocks_it(private_python):
    folder, python = private_python
    user = limits.sandbox_user()
    got = limits.unreachable(user, [(python, os.X_OK), (sys.executable, os.X_OK), ("/etc/passwd", os.R_OK)])
    assert got == [(python, folder)]


def test_a_module_the_worker_cannot_import_before_student_code_is_a_grader_error(tmp_path):
    (tmp_path / "student.py").write_text("def f():\n    return 1\n")
    os.chmod(tmp_path, 0o755)
    with Sandbox(str(tmp_path), preload=("numpy", "ag_no_such_module")) as sb:
        with pytest.raises(GraderError) as e:
            sb.call("call", module="student", name="f")
        assert "could not import ag_no_such_module" in str(e.value) and "not the student's fault" in str(e.value)
        assert "ModuleNotFoundError" in str(e.value)
        start = time.monotonic()
        with pytest.raises(GraderError):  # said again at once, not retried test by test
            sb.call("call", module="student", name="f")
        assert time.monotonic() - start < 0.5
    with Sandbox(str(tmp_path), preload=("numpy",)) as sb:  # the same with what can be imported works
        assert sb.call("call", module="student", name="f")["value"] == 1
