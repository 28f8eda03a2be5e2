"""Find a submission's files and copy them into a staging folder."""
import os
import shutil
from dataclasses import dataclass, field

from . import notebook

PARTS = {"attention": "part-a", "gpt": "part-b"}  # module name -> the part it is graded in
IGNORED_DIRS = {"__pycache__", "__MACOSX", ".ipynb_checkpoints", ".git", ".venv", "venv", "node_modules"}
MAX_FILE_BYTES = 2 * 2**20


@dataclass
class Submission:
    staged: str                                  # folder the sandbox imports from
    found: dict = field(default_factory=dict)    # module name -> path inside the submission, or None
    notes: list = field(default_factory=list)    # what the loader did, for the student

    def missing_message(self, module):
        return f"{module}.py was not found in your submission" + (
            f" ({'; '.join(self.notes)})" if self.notes else "")


def _walk(root):
    """Files below ``root``, shallowest first, then by name (deterministic)."""
    found = []
    for folder, dirs, files in os.walk(root):
        dirs[:] = sorted(d for d in dirs if d not in IGNORED_DIRS and not d.startswith("."))
        depth = os.path.relpath(folder, root).count(os.sep) + (folder != root)
        found += [(depth, os.path.join(folder, f)) for f in sorted(files)]
    return [p for _, p in sorted(found)]


def _copy_module_folder(folder, staged):
    """The chosen file's .py siblings and packages, so cross-file imports work."""
    for name in sorted(os.listdir(folder)):
        src = os.path.join(folder, name)
        if name.endswith(".py") and os.path.isfile(src) and os.path.getsize(src) <= MAX_FILE_BYTES:
            if not os.path.exists(os.path.join(staged, name)):
                shutil.copyfile(src, os.path.join(staged, name))
        elif os.path.isdir(src) and os.path.exists(os.path.join(src, "__init__.py")) and name not in IGNORED_DIRS:
            if not os.path.exists(os.path.join(staged, name)):
                shutil.copytree(src, os.path.join(staged, name), ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))


def _stage_single_source(source, staged, label, notes):
    """One file holding both parts: ``attention`` and ``gpt`` both re-export it."""
    with open(os.path.join(staged, "submission_code.py"), "w", encoding="utf-8") as f:
        f.write(source)
    for module in PARTS:
        with open(os.path.join(staged, f"{module}.py"), "w", encoding="utf-8") as f:
            f.write(f"# {module} is taken from {label}\nfrom submission_code import *  # noqa: F401,F403\n")
    return Submission(staged, {m: label for m in PARTS}, notes)


def load(path, staged):
    """Stage the submission at ``path`` into the empty folder ``staged``; never raises for bad input."""
    path = os.path.abspath(path)
    os.makedirs(staged, exist_ok=True)
    if not os.path.exists(path):
        return Submission(staged, {m: None for m in PARTS}, [f"the submission path {path} does not exist"])
    if os.path.isfile(path):
        name = os.path.basename(path)
        if name.endswith(".ipynb"):
            source, notes = notebook.extract(path)
            return _stage_single_source(source, staged, name, notes)
        if name in {f"{m}.py" for m in PARTS}:
            _copy_module_folder(os.path.dirname(path), staged)
            shutil.copyfile(path, os.path.join(staged, name))
            return Submission(staged, {m: (name if name == f"{m}.py" else None) for m in PARTS})
        if name.endswith(".py"):
            with open(path, encoding="utf-8", errors="replace") as f:
                return _stage_single_source(f.read(), staged, name, [])
        return Submission(staged, {m: None for m in PARTS}, [f"{name} is not a .py file or a notebook"])

    files = _walk(path)
    found = {}
    for module in PARTS:
        hits = [p for p in files if os.path.basename(p) == f"{module}.py"]
        found[module] = hits[0] if hits else None
    notes = []
    if not any(found.values()):
        notebooks = [p for p in files if p.endswith(".ipynb")]
        if notebooks:
            source, notes = notebook.extract(notebooks[0])
            if len(notebooks) > 1:
                notes.append(f"several notebooks were submitted; graded {os.path.relpath(notebooks[0], path)}")
            return _stage_single_source(source, staged, os.path.relpath(notebooks[0], path), notes)
        notes.append("no attention.py, gpt.py or .ipynb notebook was found in the submission")
    for module, hit in found.items():
        if hit:
            _copy_module_folder(os.path.dirname(hit), staged)
            shutil.copyfile(hit, os.path.join(staged, f"{module}.py"))  # the chosen file always wins
    return Submission(staged, {m: (os.path.relpath(p, path) if p else None) for m, p in found.items()}, notes)
