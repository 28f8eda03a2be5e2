"""Regrade a Gradescope export: ``python -m autograder regrade EXPORT [--out DIR] [--jobs N] [--select TAGS]``.

Every folder of EXPORT (``submission_123456/`` ...; files such as ``submission_metadata.yml``
are ignored) is graded by its own ``python -m autograder grade`` process, N at a time, into
``DIR/<submission>/results.json`` (its printed output in ``grade.log`` beside it). One
submission that crashes or hangs the grader becomes a row with an error; the others go on.
``DIR/summary.csv`` has a row per submission: submission, total, part-a, part-b, one column
per test, then error.

As root, each grade claims a sandbox uid of its own (a grade kills every process of its uid
when it ends); with AUTOGRADER_SANDBOX_USER set, all would share it, so grades run one at a time.
"""
import csv
import json
import os
import queue
import signal
import subprocess
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor

from .sandbox import limits

PACKAGE_PARENT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PARTS = ("part-a", "part-b")


def submissions(export):
    """The submission folders of an export, sorted by name."""
    return sorted(e.name for e in os.scandir(export) if e.is_dir() and not e.name.startswith((".", "__")))


def sandbox_users():
    """Users a grade may run student code as, one per concurrent grade (None: not root, no limit)."""
    if limits.running_as_root() and os.environ.get("AUTOGRADER_SANDBOX_USER"):
        return [os.environ["AUTOGRADER_SANDBOX_USER"]]
    return None  # each grade claims its own uid (or is not root)


def _stop(proc, user):
    """End a grade that ran over its time: SIGTERM lets it clean up, SIGKILL after 10 s."""
    proc.send_signal(signal.SIGTERM)
    try:
        proc.wait(timeout=10)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()
    if user is not None:  # whatever its student code left running
        limits.kill_all(limits.resolve_user(user))


def grade_one(folder, out_dir, select, timeout, users):
    """Grade one submission in its own process; returns (results document or None, error or "")."""
    os.makedirs(out_dir, exist_ok=True)
    results = os.path.join(out_dir, "results.json")
    if os.path.exists(results):
        os.unlink(results)
    cmd = [sys.executable, "-m", "autograder", "grade", folder, "--out", results, "--quiet"]
    cmd += ["--select", select] if select else []
    user = users.get() if users is not None else None
    env = dict(os.environ, **({"AUTOGRADER_SANDBOX_USER": user} if user else {}))
    error = ""
    try:
        with open(os.path.join(out_dir, "grade.log"), "w") as log:
            proc = subprocess.Popen(cmd, cwd=PACKAGE_PARENT, env=env, stdout=log, stderr=subprocess.STDOUT,
                                    stdin=subprocess.DEVNULL)
            try:
                code = proc.wait(timeout=timeout)
                error = f"the grader exited with code {code} (see grade.log)" if code else ""
            except subprocess.TimeoutExpired:
                _stop(proc, user)
                error = f"the grade took longer than {timeout:g} s and was stopped"
    finally:
        if users is not None:
            users.put(user)
    try:
        with open(results) as f:
            document = json.load(f)
    except (OSError, ValueError) as e:
        return None, error or f"no readable results.json ({type(e).__name__})"
    if not error and any("grader" in t.get("tags", []) for t in document.get("tests", [])):
        error = "the grader failed on this submission (see results.json)"
    return document, error


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
                self.stream.write(f"{line}  {name}{': ' + error if error else ''}\n")
            self.stream.flush()


def summary_rows(graded):
    """(header, rows) of the CSV from {submission: (document, error)}."""
    tests = {}
    for document, _ in graded.values():
        for t in (document or {}).get("tests", []):
            if "grader" not in t.get("tags", []):
                tests.setdefault(t["name"], tuple(int(p) if p.isdigit() else 10**6 for p in t.get("number", "").split(".")))
    names = sorted(tests, key=lambda n: (tests[n], n))
    rows = []
    for name, (document, error) in sorted(graded.items()):
        by_name = {t["name"]: t for t in (document or {}).get("tests", [])}
        parts = [sum(t["score"] for t in by_name.values() if t.get("tags", [None])[0] == p) for p in PARTS]
        total = document.get("score", sum(parts)) if document else ""
        rows.append([name, total] + (parts if document else ["", ""])
                    + [by_name[n]["score"] if n in by_name else "" for n in names] + [error])
    return ["submission", "total", *PARTS, *names, "error"], rows


def regrade(export, out, jobs=None, select="", timeout=900.0):
    """Grade every submission of ``export`` into ``out``; returns {submission: (document, error)}."""
    export, out = os.path.abspath(export), os.path.abspath(out)
    names = submissions(export)
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
    print(f"regrading {len(names)} submissions from {export}, {jobs} at a time", file=sys.stderr)
    progress, graded = Progress(len(names)), {}

    def work(name):
        try:
            graded[name] = grade_one(os.path.join(export, name), os.path.join(out, name), select, timeout, users)
        except Exception as e:  # noqa: BLE001 - one broken submission never stops the others
            graded[name] = (None, f"regrade failed: {type(e).__name__}: {e}")
        progress.update(name, graded[name][1])

    os.makedirs(out, exist_ok=True)
    with ThreadPoolExecutor(max_workers=jobs) as ex:
        list(ex.map(work, names))
    header, rows = summary_rows(graded)
    with open(os.path.join(out, "summary.csv"), "w", newline="") as f:
        csv.writer(f).writerows([header] + rows)
    return graded
