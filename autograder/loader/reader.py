"""A notebook's definitions, read in a limited child process (``child.py``).

The grader never parses a student's notebook itself: a 2 MB list literal takes a gigabyte to
parse, metadata of millions of empty objects as much to decode, and a deep expression can
exhaust the C stack. The child gets the notebook's file on stdin (its path is in no command
line), limits its own memory (``MEMORY_BYTES``) and CPU time, and runs under a wall-clock limit.
If it dies while parsing a cell, that cell is skipped with a note and the notebook is read
again without it (``MAX_ATTEMPTS`` in all, within ``SECONDS``); if it dies reading the JSON, the
notebook is unreadable. Either way the message says it is the notebook's problem and what to do.

    extract(path, label) -> (python source, notes)   # never raises for a bad notebook
"""
import json
import os
import signal
import subprocess
import sys
import time

CHILD = os.path.join(os.path.dirname(os.path.abspath(__file__)), "child.py")
# Address space of the child, about its peak resident size: it starts at ~12 MB, skims a 48 MB
# file in ~60 MB, and parsing takes ~1 KB a syntax node (100,000 lines of `pass`: 105-114 MB;
# a cell beyond ~200,000 nodes gets MemoryError and is skipped with a note).
MEMORY_BYTES = 256 * 2**20
SECONDS = 90        # wall clock for all attempts on one notebook (the skim of 48 MB takes ~2-8 s);
                    # one attempt gets at most half, so a cell that hangs the parser can be skipped
MAX_ATTEMPTS = 3    # a crash in a cell: read again without it, at most twice
MAX_OUTPUT = 32 * 2**20
ADVICE = ("In Jupyter, use File > Download (.ipynb) and submit that file, or submit attention.py and gpt.py "
          "instead.")


def unreadable(label, why, advice=ADVICE):
    """Source that raises a clear ImportError, and the note saying why."""
    message = f"the notebook {label} could not be read: {why}. {advice}"
    return f"raise ImportError({message!r})\n", [message]


def _why(kind, detail):
    if kind == "json":
        return f"it is not valid JSON ({detail}; was the file cut off, or renamed from another format?)"
    if kind == "notebook":
        return f"it is not a valid Jupyter notebook ({detail})"
    return f"reading it needs more memory than the grader allows ({MEMORY_BYTES // 2**20} MB)"


def _death(returncode, timed_out, seconds):
    if timed_out:
        return f"it took longer than the grader allows ({seconds:.0f} s)"
    if returncode is not None and returncode < 0:
        try:
            name = signal.Signals(-returncode).name
        except ValueError:
            name = f"signal {-returncode}"
        if -returncode == signal.SIGXCPU:
            return f"it took more CPU time than the grader allows ({seconds:.0f} s)"
        return f"the reader crashed ({name}: out of memory or stack)"
    return f"the reader failed (exit status {returncode}: out of memory or stack)"


def _run(path, skip, seconds, command):
    """(result dict or None, last cell started or None, why it died or None)."""
    argv = command + [str(MEMORY_BYTES), str(max(1, int(seconds))), *map(str, skip)]
    with open(path, "rb") as stdin:  # the walk found a regular file, never a link
        proc = subprocess.Popen(argv, stdin=stdin, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                                close_fds=True, env={"LC_ALL": "C.UTF-8"}, cwd="/")
    timed_out = False
    try:
        out, _ = proc.communicate(timeout=seconds)
    except subprocess.TimeoutExpired:
        proc.kill()
        out, _ = proc.communicate()
        timed_out = True
    last, result = None, None
    for line in out[:MAX_OUTPUT].split(b"\n"):
        if line.startswith(b">") and line[1:].isdigit():
            last = int(line[1:])
        elif line.startswith(b"=") and not timed_out:
            try:
                result = json.loads(line[1:].decode("utf-8"))
            except ValueError:
                result = None
    if isinstance(result, dict):
        return result, last, None
    return None, last, _death(proc.returncode, timed_out, seconds)


def extract(path, label, *, command=None):
    """(python source of the notebook's definitions, notes) for the notebook at ``path``, shown
    to students as ``label``. ``command`` (tests only) replaces the child's interpreter line."""
    command = command or [sys.executable, "-I", "-S", "-B", CHILD]
    deadline = time.monotonic() + SECONDS
    skip, notes = [], []
    for _ in range(MAX_ATTEMPTS):
        seconds = max(1.0, min(SECONDS / 2, deadline - time.monotonic()))
        try:
            result, last, death = _run(path, skip, seconds, command)
        except OSError as e:  # the file cannot be opened, or the child cannot start
            return unreadable(label, f"it could not be opened ({e.strerror or e})")
        if result is not None and "unreadable" in result:
            return unreadable(label, _why(result["unreadable"], str(result.get("detail", ""))[:300]))
        if result is not None:
            return str(result.get("source", "")), notes + [str(n) for n in result.get("notes", [])]
        if last is None or last in skip or time.monotonic() >= deadline:
            break
        skip.append(last)
        notes.append(f"cell {last} could not be read within the grader's limits ({death}); the whole cell was "
                     "skipped. This is a problem of the notebook: keep data and generated code out of it")
    source, message = unreadable(label, f"{death} while reading it",
                                 "This is a problem of the notebook file, not of your code: clear its outputs "
                                 "(Edit > Clear All Outputs), save it, and submit again, or submit attention.py "
                                 "and gpt.py instead.")
    return source, notes + message
