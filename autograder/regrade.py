"""Regrade a Gradescope export: ``python -m autograder regrade EXPORT [--out DIR] [--jobs N] [--select TAGS]``.

EXPORT is the export's ``.zip``, the unzipped folder, or a folder above it (``results/export.py``
finds the folder holding ``submission_metadata.yml`` and one folder per submission). Every
submission folder is graded by its own ``python -m autograder grade`` process, N at a time,
into ``DIR/<submission>/results.json`` (its printed output in ``grade.log`` beside it). One
submission that crashes or hangs the grader becomes a row with a note; the others go on.
``DIR/summary.csv`` (``results/regrade_csv.py``): submission, names, sids, emails, total,
part-a, part-b, one column per test, notes.

Students are kept apart: while grading, the export folder and DIR are closed to other users
(mode 0700, restored after; a zip is unzipped into a private folder), and each grade gets its
submission and results paths in its environment (AUTOGRADER_SUBMISSION, AUTOGRADER_OUT), never
on a command line, which any user can read in /proc.

As root, each grade claims a sandbox uid of its own (a grade kills every process of its uid
when it ends); with AUTOGRADER_SANDBOX_USER set, all would share it, so grades run one at a time.
"""
import contextlib
import os
import queue
import stat
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor

from . import launch
from .results import export as gradescope_export
from .results import regrade_csv
from .results.clean import one_line
from .sandbox import limits

SUBMISSION_ENV, OUT_ENV = launch.SUBMISSION_ENV, launch.OUT_ENV


def sandbox_users():
    """Users a grade may run student code as, one per concurrent grade (None: not root, no limit)."""
    if limits.running_as_root() and os.environ.get("AUTOGRADER_SANDBOX_USER"):
        return [os.environ["AUTOGRADER_SANDBOX_USER"]]
    return None  # each grade claims its own uid (or is not root)


@contextlib.contextmanager
def closed_to_others(folder):
    """Mode 0700 on ``folder`` while the block runs (its mode restored after): no other user,
    the sandbox users included, can list it or reach anything inside."""
    try:
        mode = stat.S_IMODE(os.stat(folder).st_mode)
        if mode & 0o077:
            os.chmod(folder, mode & 0o700)
    except OSError as e:
        print(f"regrade: could not close {folder} to other users ({e}); student code may be able to read "
              "other submissions", file=sys.stderr)
        yield
        return
    try:
        yield
    finally:
        if mode & 0o077:
            with contextlib.suppress(OSError):
                os.chmod(folder, mode)


def grade_one(folder, out_dir, select, timeout, users):
    """Grade one submission in its own process; returns (results document or None, error or "")."""
    os.makedirs(out_dir, exist_ok=True)
    user = users.get() if users is not None else None
    env = dict(os.environ, **({"AUTOGRADER_SANDBOX_USER": user} if user else {}))
    try:
        with open(os.path.join(out_dir, "grade.log"), "w") as log:
            graded = launch.grade_in_process(folder, os.path.join(out_dir, "results.json"), select=select or None,
                                             env=env, timeout=timeout, log=log)
    finally:
        if user is not None:  # whatever its student code left running
            limits.kill_all(limits.resolve_user(user))
        if users is not None:
            users.put(user)
    error = f"timed out after {timeout:g} s (the grade was stopped)" if graded.timed_out else (
        f"the grader exited with code {graded.returncode} (see grade.log)" if graded.returncode else "")
    if graded.document is None:
        return None, "; ".join(p for p in (error, graded.error) if p)
    return graded.document, error or regrade_csv.grade_error(graded.document)


class Progress:
    """``[#####.....] 3/10  1 error  0:42`` on stderr, redrawn in place on a terminal."""

    def __init__(self, total, stream=sys.stderr):
        self.total, self.done, self.errors, self.stream = total, 0, 0, stream
        self.start, self.lock = time.monotonic(), threading.Lock()
        self.tty = stream.isatty()

    def update(self, name, error):
        with self.lock:
            self.done += 1
            self.errors += bool(error)
            filled = int(30 * self.done / max(self.total, 1))
            secs = int(time.monotonic() - self.start)
            line = (f"[{'#' * filled}{'.' * (30 - filled)}] {self.done}/{self.total}  "
                    f"{self.errors} error{'s' * (self.errors != 1)}  {secs // 60}:{secs % 60:02d}")
            if self.tty:
                self.stream.write(f"\r{line}" + ("\n" if self.done == self.total else ""))
            else:
                self.stream.write(f"{line}  {one_line(name)}{': ' + one_line(error) if error else ''}\n")
            self.stream.flush()


def summary_rows(graded, export=None):
    """(header, rows) of the CSV from {submission: (document, error)} and the Export."""
    if export is None:
        return regrade_csv.rows(graded)
    return regrade_csv.rows(graded, export.people, has_metadata=export.has_metadata,
                            without_folder=export.without_folder)


def _grade_all(export, out, jobs, select, timeout):
    names = export.submissions
    pool = sandbox_users()
    jobs = max(1, jobs or os.cpu_count() or 1)
    users = None
    if pool is not None:
        if jobs > len(pool):
            print(f"running as root with {len(pool)} sandbox user(s) ({', '.join(pool)}): "
                  f"{len(pool)} grade(s) at a time instead of {jobs}", file=sys.stderr)
        jobs = min(jobs, len(pool))
        users = queue.Queue()
        for u in pool[:jobs]:
            users.put(u)
    print(f"regrading {len(names)} submissions from {one_line(export.described)}, {jobs} at a time",
          file=sys.stderr)
    progress, graded = Progress(len(names)), {}

    def work(name):
        try:
            graded[name] = grade_one(os.path.join(export.folder, name), os.path.join(out, name), select, timeout,
                                     users)
        except Exception as e:  # noqa: BLE001 - one broken submission never stops the others
            graded[name] = (None, f"regrade failed: {type(e).__name__}: {e}")
        progress.update(name, graded[name][1])

    with ThreadPoolExecutor(max_workers=jobs) as ex:
        list(ex.map(work, names))
    return graded


def regrade(export, out, jobs=None, select="", timeout=900.0):
    """Grade every submission of ``export`` (a .zip, the export folder or a folder above it) into
    ``out``; returns {submission: (document or None, error)}. Raises results.export.ExportError
    when ``export`` is not a Gradescope export."""
    out = os.path.abspath(out)
    found = gradescope_export.open_export(export)
    try:
        for warning in found.warnings:
            print(f"regrade: {one_line(warning)}", file=sys.stderr)
        os.makedirs(out, mode=0o700, exist_ok=True)
        with closed_to_others(found.folder), closed_to_others(out):
            graded = _grade_all(found, out, jobs, select, timeout)
            header, rows = summary_rows(graded, found)
            regrade_csv.write(os.path.join(out, "summary.csv"), header, rows)
    finally:
        found.close()
    return graded
