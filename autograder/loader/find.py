"""Find a submission's files and copy them into a staging folder.

Only regular files are read: symbolic links are never followed (a link to the grader's own
files would otherwise be staged as the student's work), and sizes and counts are bounded.
"""
import os
import re
import shutil
import stat
from dataclasses import dataclass, field

from . import notebook

PARTS = {"attention": "part-a", "gpt": "part-b"}  # module name -> the part it is graded in
IGNORED_DIRS = {"__pycache__", "__MACOSX", ".ipynb_checkpoints", ".git", ".venv", "venv", "node_modules"}
MAX_FILE_BYTES = 2 * 2**20       # a .py file; bigger ones are not staged
MAX_NOTEBOOK_BYTES = 50 * 2**20  # a notebook with its outputs
MAX_FILES = 5000                 # files looked at in a submission folder
CODING = re.compile(rb"^[ \t\f]*#.*?coding[:=][ \t]*([-\w.]+)")


@dataclass
class Submission:
    staged: str                                  # folder the sandbox imports from
    found: dict = field(default_factory=dict)    # module name -> path inside the submission, or None
    notes: list = field(default_factory=list)    # what the loader did, for the student

    def missing_message(self, module):
        return f"{module}.py was not found in your submission" + (
            f" ({'; '.join(self.notes)})" if self.notes else "")


def _regular(path):
    try:
        return stat.S_ISREG(os.lstat(path).st_mode)
    except OSError:
        return False


def _walk(root, notes):
    """Regular files below ``root``, shallowest first, then by name (deterministic)."""
    found, links = [], []
    for folder, dirs, files in os.walk(root):
        links += [os.path.join(folder, d) for d in dirs if os.path.islink(os.path.join(folder, d))]
        dirs[:] = sorted(d for d in dirs if d not in IGNORED_DIRS and not d.startswith(".")
                         and not os.path.islink(os.path.join(folder, d)))
        depth = os.path.relpath(folder, root).count(os.sep) + (folder != root)
        for f in sorted(files):
            path = os.path.join(folder, f)
            if _regular(path):
                found.append((depth, path))
            elif os.path.islink(path):
                links.append(path)
        if len(found) > MAX_FILES:
            notes.append(f"the submission has more than {MAX_FILES} files; only the first ones were looked at")
            break
    if links:
        names = ", ".join(os.path.relpath(p, root) for p in links[:3])
        notes.append(f"symbolic links are not followed ({names}{', ...' if len(links) > 3 else ''})")
    return [p for _, p in sorted(found)]


def _text_problem(path, label):
    """Why the .py file at ``path`` cannot be imported as text, or None."""
    with open(path, "rb") as f:
        data = f.read()
    if not data.strip():
        return f"{label} is empty"
    if b"\x00" in data:
        return f"{label} contains NUL bytes: is it a binary file, or saved as UTF-16? Save it as UTF-8 text"
    if any(CODING.match(line) for line in data.splitlines()[:2]):
        return None  # PEP 263: the file declares its own encoding
    try:
        data.decode("utf-8")
    except UnicodeDecodeError as e:
        line = data[:e.start].count(b"\n") + 1
        return (f"{label} is not UTF-8 text (line {line} has the byte 0x{data[e.start]:02x}): save it with "
                "UTF-8 encoding")
    return None


def _skip_copy(folder, names):
    """For copytree: links, big files and caches stay behind."""
    return [n for n in names if os.path.islink(os.path.join(folder, n)) or n in IGNORED_DIRS or n.endswith(".pyc")
            or (os.path.isfile(os.path.join(folder, n)) and os.path.getsize(os.path.join(folder, n)) > MAX_FILE_BYTES)]


def _copy_module_folder(folder, staged):
    """The chosen file's .py siblings and packages, so cross-file imports work."""
    for name in sorted(os.listdir(folder)):
        src, dst = os.path.join(folder, name), os.path.join(staged, name)
        if os.path.exists(dst) or os.path.islink(src):
            continue
        if name.endswith(".py") and _regular(src) and os.path.getsize(src) <= MAX_FILE_BYTES:
            shutil.copyfile(src, dst)
        elif os.path.isdir(src) and _regular(os.path.join(src, "__init__.py")) and name not in IGNORED_DIRS:
            shutil.copytree(src, dst, symlinks=True, ignore=_skip_copy)


def _stage_single_source(source, staged, label, notes):
    """One file holding both parts: ``attention`` and ``gpt`` both re-export it."""
    with open(os.path.join(staged, "submission_code.py"), "w", encoding="utf-8") as f:
        f.write(source)
    for module in PARTS:
        with open(os.path.join(staged, f"{module}.py"), "w", encoding="utf-8") as f:
            f.write(f"# {module} is taken from {label}\nfrom submission_code import *  # noqa: F401,F403\n")
    return Submission(staged, {m: label for m in PARTS}, notes)


def _stage_notebook(path, staged, label, notes):
    if os.path.getsize(path) > MAX_NOTEBOOK_BYTES:
        notes.append(f"the notebook {label} is over {MAX_NOTEBOOK_BYTES // 2**20} MB; "
                     "clear its outputs and submit again")
        return Submission(staged, {m: None for m in PARTS}, notes)
    source, more = notebook.extract(path)
    return _stage_single_source(source, staged, label, notes + more)


def _stage_module(module, path, staged, label, notes):
    """Stage ``path`` as ``<module>.py``; False (with a note) when it is too big to grade."""
    size = os.path.getsize(path)
    if size > MAX_FILE_BYTES:
        notes.append(f"{label} is {size / 2**20:.1f} MB, over the {MAX_FILE_BYTES // 2**20} MB limit for a .py file")
        return False
    problem = _text_problem(path, label)
    if problem:
        notes.append(problem)
    _copy_module_folder(os.path.dirname(path), staged)
    shutil.copyfile(path, os.path.join(staged, f"{module}.py"))  # the chosen file always wins
    return True


def load(path, staged):
    """Stage the submission at ``path`` into the empty folder ``staged``; never raises for bad input."""
    path = os.path.abspath(path)
    os.makedirs(staged, exist_ok=True)
    if not os.path.exists(path):
        return Submission(staged, {m: None for m in PARTS}, [f"the submission path {path} does not exist"])
    if os.path.isfile(path):
        name = os.path.basename(path)
        if name.endswith(".ipynb"):
            return _stage_notebook(path, staged, name, [])
        if name in {f"{m}.py" for m in PARTS}:
            notes = []
            ok = _stage_module(name[:-3], path, staged, name, notes)
            return Submission(staged, {m: (name if ok and name == f"{m}.py" else None) for m in PARTS}, notes)
        if name.endswith(".py"):
            notes = [p for p in [_text_problem(path, name)] if p]
            with open(path, encoding="utf-8", errors="replace") as f:
                return _stage_single_source(f.read(MAX_FILE_BYTES), staged, name, notes)
        return Submission(staged, {m: None for m in PARTS}, [f"{name} is not a .py file or a notebook"])

    notes = []
    files = _walk(path, notes)
    found = {}
    for module in PARTS:
        hits = [p for p in files if os.path.basename(p) == f"{module}.py"]
        found[module] = hits[0] if hits else None
    if not any(found.values()):
        notebooks = [p for p in files if p.endswith(".ipynb")]
        if notebooks:
            if len(notebooks) > 1:
                notes.append(f"several notebooks were submitted; graded {os.path.relpath(notebooks[0], path)}")
            return _stage_notebook(notebooks[0], staged, os.path.relpath(notebooks[0], path), notes)
        notes.append("no attention.py, gpt.py or .ipynb notebook was found in the submission")
    for module, hit in found.items():
        if hit and not _stage_module(module, hit, staged, os.path.relpath(hit, path), notes):
            found[module] = None
    return Submission(staged, {m: (os.path.relpath(p, path) if p else None) for m, p in found.items()}, notes)
