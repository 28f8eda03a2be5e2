"""Find a submission's files and copy them into a staging folder.

Only regular files are read: symbolic links are never followed (a link to the grader's own
files would otherwise be staged as the student's work). Looking and copying are bounded
(``files.py``), a notebook is read in a limited child process (``reader.py``), and every name
that reaches ``found`` or ``notes`` is escaped (``names.py``): loading is untrusted work.
"""
import os
import re
from dataclasses import dataclass, field

from . import reader
from .files import MAX_FILE_BYTES, Stager, walk
from .names import clean_note, escaped, shown

PARTS = {"attention": "part-a", "gpt": "part-b"}  # module name -> the part it is graded in
MAX_NOTEBOOK_BYTES = 50 * 2**20  # a notebook with its outputs
CODING = re.compile(rb"^[ \t\f]*#.*?coding[:=][ \t]*([-\w.]+)")


@dataclass
class Submission:
    staged: str                                  # folder the sandbox imports from
    found: dict = field(default_factory=dict)    # module name -> path inside the submission (escaped), or None
    notes: list = field(default_factory=list)    # what the loader did, for the student

    def missing_message(self, module):
        return f"{module}.py was not found in your submission" + (
            f" ({'; '.join(self.notes)})" if self.notes else "")


def _text_problem(path, label):
    """Why the .py file at ``path`` cannot be imported as text, or None."""
    with open(path, "rb") as f:
        data = f.read(MAX_FILE_BYTES + 1)
    if not data.strip():
        return f"{label} is empty"
    if b"\x00" in data:
        return f"{label} contains NUL bytes: is it a binary file, or saved as UTF-16? Save it as UTF-8 text"
    if any(CODING.match(line) for line in data.split(b"\n", 2)[:2]):
        return None  # PEP 263: the file declares its own encoding
    try:
        data.decode("utf-8")
    except UnicodeDecodeError as e:
        line = data[:e.start].count(b"\n") + 1
        return (f"{label} is not UTF-8 text (line {line} has the byte 0x{data[e.start]:02x}): save it with "
                "UTF-8 encoding")
    return None


def _stage_single_source(source, staged, label, notes):
    """One file holding both parts: ``attention`` and ``gpt`` both re-export it."""
    with open(os.path.join(staged, "submission_code.py"), "w", encoding="utf-8", errors="replace") as f:
        f.write(source)
    for module in PARTS:
        with open(os.path.join(staged, f"{module}.py"), "w", encoding="utf-8") as f:
            f.write(f"# {module} is taken from {escaped(label)}\nfrom submission_code import *  # noqa: F401,F403\n")
    return Submission(staged, {m: escaped(label) for m in PARTS}, notes)


def _stage_notebook(path, staged, label, notes):
    if os.path.getsize(path) > MAX_NOTEBOOK_BYTES:
        notes.append(f"the notebook {shown(label)} is over {MAX_NOTEBOOK_BYTES // 2**20} MB; "
                     "clear its outputs and submit again")
        return Submission(staged, {m: None for m in PARTS}, notes)
    source, more = reader.extract(path, shown(label))
    return _stage_single_source(source, staged, label, notes + more)


def _stage_module(module, path, stager, label, notes):
    """Stage ``path`` as ``<module>.py``; False (with a note) when it is too big or unreadable."""
    try:
        return _stage_file(module, path, stager, label, notes)
    except OSError as e:
        notes.append(f"{shown(label)} could not be read ({e.strerror or e}); check its permissions")
        return False


def _stage_file(module, path, stager, label, notes):
    size = os.path.getsize(path)
    if size > MAX_FILE_BYTES:
        notes.append(f"{shown(label)} is {size / 2**20:.1f} MB, over the {MAX_FILE_BYTES // 2**20} MB limit "
                     "for a .py file")
        return False
    problem = _text_problem(path, shown(label))
    if problem:
        notes.append(problem)
    stager.module_folder(os.path.dirname(path))
    stager.copy_graded(path, module)  # the chosen file always wins
    return True


def _load(path, staged):
    if not os.path.exists(path):
        return Submission(staged, {m: None for m in PARTS}, [f"the submission path {shown(path)} does not exist"])
    if os.path.isfile(path):
        name = os.path.basename(path)
        if name.endswith(".ipynb"):
            return _stage_notebook(path, staged, name, [])
        stager = Stager(staged, os.path.dirname(path))
        if name in {f"{m}.py" for m in PARTS}:
            notes = []
            ok = _stage_module(name[:-3], path, stager, name, notes)
            return Submission(staged, {m: (escaped(name) if ok and name == f"{m}.py" else None) for m in PARTS},
                              notes + stager.notes())
        if name.endswith(".py"):
            notes = [p for p in [_text_problem(path, shown(name))] if p]
            with open(path, encoding="utf-8", errors="replace") as f:
                return _stage_single_source(f.read(MAX_FILE_BYTES), staged, name, notes)
        return Submission(staged, {m: None for m in PARTS}, [f"{shown(name)} is not a .py file or a notebook"])

    notes = []
    files = walk(path, notes, wanted=[f"{m}.py" for m in PARTS])
    found = {}
    for module in PARTS:
        hits = [p for p in files if os.path.basename(p) == f"{module}.py"]
        found[module] = hits[0] if hits else None
    if not any(found.values()):
        notebooks = [p for p in files if p.endswith(".ipynb")]
        if notebooks:
            if len(notebooks) > 1:
                notes.append(f"several notebooks were submitted; graded {shown(os.path.relpath(notebooks[0], path))}")
            return _stage_notebook(notebooks[0], staged, os.path.relpath(notebooks[0], path), notes)
        notes.append("no attention.py, gpt.py or .ipynb notebook was found in the submission")
    stager = Stager(staged, path)
    for module, hit in found.items():
        if hit and not _stage_module(module, hit, stager, os.path.relpath(hit, path), notes):
            found[module] = None
    return Submission(staged, {m: (escaped(os.path.relpath(p, path)) if p else None) for m, p in found.items()},
                      notes + stager.notes())


def load(path, staged):
    """Stage the submission at ``path`` into the empty folder ``staged``; never raises for bad input.
    Every string of ``found`` and ``notes`` is valid UTF-8 and holds no newline taken from a name."""
    os.makedirs(staged, exist_ok=True)
    submission = _load(os.path.abspath(path), staged)
    submission.notes = [clean_note(n) for n in submission.notes]  # ``found`` holds escaped() names only
    return submission
