"""The one way to grade in a process of its own: ``python -m autograder grade --paths-from-env``.

``make regrade``, ``make validate`` and ``make bench`` all call ``grade_in_process``. The
submission and results paths travel in the child's environment, never on its command line
(which any user can read in /proc). It measures what the callers report: wall and CPU seconds
(the grade's and its sandboxes'), and, on request, the peak memory of the grade's process
tree and of the sandbox uid's processes, sampled by ``sandbox/procs.py``.
"""
import json
import os
import signal
import subprocess
import sys
import threading
import time
from dataclasses import dataclass

from .sandbox import procs

PACKAGE_PARENT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SUBMISSION_ENV, OUT_ENV = "AUTOGRADER_SUBMISSION", "AUTOGRADER_OUT"


@dataclass
class Graded:
    document: dict | None    # the results.json it wrote, or None
    returncode: int | None   # None when it was stopped
    seconds: float
    cpu_seconds: float       # the grade's and every process it waited for (its sandboxes)
    peak_bytes: int = 0      # with ``watch``: the peak of the tree and of the sandbox uid's processes
    timed_out: bool = False
    error: str = ""          # why there is no document


def _stop(proc, grace=10.0):
    """SIGTERM lets the grade close its sandboxes and write its results; SIGKILL after ``grace``."""
    proc.send_signal(signal.SIGTERM)
    try:
        proc.wait(timeout=grace)
    except subprocess.TimeoutExpired:
        proc.kill()


def grade_in_process(submission, out, *, select=None, env=None, timeout=None, log=None, watch=False, uid=None):
    """Grade ``submission`` into ``out`` in a child process (cwd: the project, so this checkout's
    grader runs). ``log``: a file object for its printed output; ``watch``: measure the peak
    memory of its process tree and of the processes of ``uid`` (its sandbox user)."""
    if os.path.lexists(out):
        os.unlink(out)
    cmd = [sys.executable, "-m", "autograder", "grade", "--paths-from-env", "--quiet"]
    cmd += ["--select", select] if select else []
    child_env = dict(os.environ if env is None else env, **{SUBMISSION_ENV: str(submission), OUT_ENV: str(out)})
    start = time.monotonic()
    proc = subprocess.Popen(cmd, cwd=PACKAGE_PARENT, env=child_env, stdin=subprocess.DEVNULL,
                            stdout=log or subprocess.DEVNULL, stderr=subprocess.STDOUT if log else subprocess.DEVNULL)
    peak = procs.TreeWatch(proc.pid, uid).start() if watch else None
    timer = threading.Timer(timeout, _stop, (proc,)) if timeout else None
    if timer:
        timer.start()
    try:
        _, status, usage = os.wait4(proc.pid, 0)  # with the CPU time of the grade and its sandboxes
        proc.returncode = os.waitstatus_to_exitcode(status)
    finally:
        if timer:
            timer.cancel()
        if peak:
            peak.stop()
    timed_out = bool(timer) and time.monotonic() - start >= timeout
    graded = Graded(None, proc.returncode, time.monotonic() - start, usage.ru_utime + usage.ru_stime,
                    peak.peak if peak else 0, timed_out)
    try:
        with open(out, encoding="utf-8") as f:
            graded.document = json.load(f)
    except (OSError, ValueError) as e:
        graded.error = f"no results file ({type(e).__name__})"
    return graded
