"""A submission folder's files, looked at and copied within fixed limits.

A submission can hold a package of 200,000 files next to ``attention.py``, folders nested
thousands deep, or names that are not UTF-8. The walk reads at most ``MAX_ENTRIES`` directory
entries, breadth first (the shallowest ``attention.py`` wins anyway), without following links.
Staging copies only what an import could need, the graded file's ``.py`` siblings and its
packages' ``.py`` files, with importable names, up to ``MAX_STAGED_FILES`` files and
``MAX_STAGED_BYTES`` bytes. Whenever a limit cuts, a note says what was cut, quoted.
"""
import os
import shutil
import stat
from collections import deque

from .names import listing, quoted

IGNORED_DIRS = {"__pycache__", "__MACOSX", ".ipynb_checkpoints", ".git", ".venv", "venv", "node_modules"}
MAX_FILE_BYTES = 2 * 2**20        # a .py file; bigger ones are not staged
MAX_ENTRIES = 5000                # directory entries the walk looks at (files, folders, links)
MAX_PER_FOLDER = 1000             # of them in one folder, so a folder of data cannot hide src/
MAX_DEPTH = 16                    # folder levels below the submission's root
MAX_STAGED_FILES = 500            # .py files copied next to the graded modules
MAX_STAGED_BYTES = 16 * 2**20
MAX_COPY_ENTRIES = 5000           # directory entries looked at while copying


def _entries(folder, budget):
    """Up to ``budget`` entries of ``folder`` sorted by name, and whether more were left."""
    found, more = [], False
    try:
        with os.scandir(folder) as it:
            for entry in it:
                if len(found) >= budget:
                    more = True
                    break
                found.append(entry)
    except OSError:
        return [], False
    return sorted(found, key=lambda e: e.name), more


def _is_dir(entry):
    try:
        return entry.is_dir(follow_symlinks=False)  # the type the directory listing gave: no stat
    except OSError:
        return False


def _is_file(entry):
    try:
        return entry.is_file(follow_symlinks=False)  # regular files only: no FIFO, device or link
    except OSError:
        return False


def _relative(path, root):
    """The path inside the submission, quoted; the submission's own folder by that name."""
    rel = os.path.relpath(path, root)
    return "the top folder" if rel == "." else quoted(rel)


def _regular(path):
    try:
        return stat.S_ISREG(os.lstat(path).st_mode)
    except OSError:
        return False


def walk(root, notes, wanted=()):
    """Regular files below ``root``: shallowest first, then by path (deterministic). In a folder
    the limits cut or skip, the ``wanted`` names are still looked up directly (two lstat calls)."""
    found, links, cut, left = [], [], [], MAX_ENTRIES
    queue = deque([(0, root)])
    while queue:
        depth, folder = queue.popleft()
        entries, more = _entries(folder, min(left, MAX_PER_FOLDER)) if left > 0 else ([], True)
        left -= len(entries)
        if more:
            cut.append(folder)
            listed = {e.name for e in entries}
            found += [(depth, os.path.join(folder, n)) for n in wanted
                      if n not in listed and _regular(os.path.join(folder, n))]
        for entry in entries:
            if entry.is_symlink():
                links.append(entry.path)
            elif _is_dir(entry):
                if entry.name not in IGNORED_DIRS and not entry.name.startswith(".") and depth < MAX_DEPTH:
                    queue.append((depth + 1, entry.path))
            elif _is_file(entry):
                found.append((depth, entry.path))
    if cut:
        notes.append(f"the submission has more files and folders than the grader looks at ({MAX_ENTRIES} in all, "
                     f"{MAX_PER_FOLDER} in one folder); not looked at: the rest of "
                     f"{', '.join(_relative(f, root) for f in cut[:3])}{' and more' if len(cut) > 3 else ''}")
    if links:
        notes.append(f"symbolic links are not followed ({listing([os.path.relpath(p, root) for p in links])})")
    return [p for _, p in sorted(found)]


def importable(name, suffix=""):
    """A name an import statement can reach: an identifier (so no surrogates, no spaces)."""
    return name.endswith(suffix) and name[:len(name) - len(suffix)].isidentifier()


def _size(n):
    return f"{n / 2**20:.1f} MB" if n >= 2**20 else f"{n / 2**10:.0f} KB"


class Stager:
    """Copies files into the staging folder within one budget for the whole submission; at the
    first limit it stops copying and remembers where (``stopped_at``)."""

    def __init__(self, staged, root):
        self.staged, self.root = staged, root
        self.files = self.bytes = 0
        self.entries = MAX_COPY_ENTRIES
        self.stopped_at, self.unnamed = None, []

    def _stop(self, path):
        self.stopped_at = self.stopped_at or path
        return False

    def _copy_file(self, src, dst, size):
        if self.files >= MAX_STAGED_FILES or self.bytes + size > MAX_STAGED_BYTES:
            return self._stop(src)
        try:
            shutil.copyfile(src, dst, follow_symlinks=False)
        except OSError:
            return True  # unreadable: not copied, like a file no import needs; the rest goes on
        self.files += 1
        self.bytes += size
        return True

    def _listing(self, folder):
        """(the folder's entries within the budget, whether all of them fit)."""
        entries, more = _entries(folder, self.entries) if self.entries > 0 else ([], True)
        self.entries -= len(entries)
        return entries, not more

    def _reject(self, entry):
        """True for an entry that is not copied; names that are not UTF-8 are remembered."""
        if any(0xDC80 <= ord(c) <= 0xDCFF for c in entry.name):
            self.unnamed.append(entry.path)
            return True
        return entry.is_symlink() or entry.name in IGNORED_DIRS or entry.name.startswith(".")

    def _copy_entries(self, folder, target, queue):
        """Copy the folder's importable .py files, queue its importable folders; False at a limit."""
        entries, whole = self._listing(folder)
        for entry in entries:
            dst = os.path.join(target, entry.name)
            if self._reject(entry) or os.path.lexists(dst):
                continue
            if importable(entry.name, ".py") and _is_file(entry):
                size = entry.stat(follow_symlinks=False).st_size
                if size <= MAX_FILE_BYTES and not self._copy_file(entry.path, dst, size):
                    return False
            elif importable(entry.name) and _is_dir(entry) and queue is not None:
                queue.append((entry.path, dst))
        return whole or self._stop(folder)

    def module_folder(self, folder):
        """The graded file's .py siblings and packages (folders holding ``__init__.py``), so
        cross-file imports work."""
        if self.stopped_at:
            return
        packages = deque()
        if not self._copy_entries(folder, self.staged, packages):
            return
        for src, dst in packages:
            init = os.path.join(src, "__init__.py")
            if os.path.isfile(init) and not os.path.islink(init) and not self._package(src, dst):
                return

    def _package(self, src, dst):
        """Copy the package's .py files and subfolders, breadth first; False at a limit."""
        queue = deque([(src, dst)])
        while queue:
            folder, target = queue.popleft()
            os.makedirs(target, exist_ok=True)
            if not self._copy_entries(folder, target, queue):
                return False
        return True

    def copy_graded(self, src, module):
        """The graded file itself, always (its size was checked)."""
        shutil.copyfile(src, os.path.join(self.staged, f"{module}.py"), follow_symlinks=False)

    def notes(self):
        notes = []
        if self.stopped_at:
            notes.append(f"only {self.files} files ({_size(self.bytes)}) next to the graded files were copied for "
                         f"imports (the grader copies at most {MAX_STAGED_FILES} .py files and "
                         f"{MAX_STAGED_BYTES // 2**20} MB, looking at {MAX_COPY_ENTRIES} names); not copied: "
                         f"{_relative(self.stopped_at, self.root)} and what follows it")
        if self.unnamed:
            notes.append("names that are not UTF-8 cannot be imported and were not copied: "
                         + listing([os.path.relpath(p, self.root) for p in self.unnamed]))
        return notes
