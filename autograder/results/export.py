"""A Gradescope export as ``make regrade`` is given it: the export ``.zip`` (Review Grades >
Export Submissions), the unzipped folder, or a folder above it.

The export folder is the one holding ``submission_metadata.yml`` and one folder per submission
(``submission_123456/``). A zip is unzipped into a private temporary folder (mode 0700), bounded:
at most MAX_ENTRIES entries and MAX_BYTES bytes, no entry outside the folder (absolute paths,
``..``), no symbolic links or other special files (skipped, with a warning). The metadata gives
each submission's submitters (name, SID, email); it is read with PyYAML's ``safe_load``:

    submission_123:
      :submitters:
      - :name: Ada Lovelace
        :sid: '1234'
        :email: ada@example.edu
      :created_at: 2026-11-01 10:00:00.000000000 -04:00
"""
import os
import re
import shutil
import stat
import tempfile
import zipfile
from collections import deque
from dataclasses import dataclass, field

import yaml

METADATA = "submission_metadata.yml"
MAX_ENTRIES = 200_000          # zip entries
MAX_BYTES = 8 * 2**30          # bytes unzipped
MAX_METADATA_BYTES = 64 * 2**20
SEARCH_DEPTH = 3               # folders below the given one searched for the export folder
SEARCH_FOLDERS = 5000
SUBMISSION = re.compile(r"submission_\d+$")
_CHUNK = 1 << 20


class ExportError(Exception):
    """The export cannot be graded; the message says why and what to do."""


@dataclass
class Export:
    folder: str                                   # holds the metadata and one folder per submission
    submissions: list                             # submission folder names, sorted
    people: dict = field(default_factory=dict)    # submission -> [{"name", "sid", "email"}]
    has_metadata: bool = False
    warnings: list = field(default_factory=list)
    temporary: str = ""                           # where a zip was unzipped (removed by close())
    source: str = ""                              # the path given

    @property
    def described(self):
        """Where the export came from, for messages."""
        if self.temporary:
            return f"{self.source} (unzipped into a private temporary folder)"
        return self.folder
    @property
    def without_folder(self):
        """Submissions the metadata lists that have no folder in the export."""
        return sorted(set(self.people) - set(self.submissions))

    def close(self):
        if self.temporary:
            shutil.rmtree(self.temporary, ignore_errors=True)
            self.temporary = ""


def subfolders(folder):
    try:
        entries = list(os.scandir(folder))
    except OSError:
        return []
    return sorted(e.name for e in entries if e.is_dir(follow_symlinks=False)
                  and not e.name.startswith((".", "__")))


def _search(root, wanted):
    """The shallowest folders at or below ``root`` for which ``wanted(folder)`` holds."""
    queue, seen, hits, depth_hit = deque([(root, 0)]), 0, [], None
    while queue and seen < SEARCH_FOLDERS:
        folder, depth = queue.popleft()
        seen += 1
        if depth_hit is not None and depth > depth_hit:
            break
        if wanted(folder):
            hits.append(folder)
            depth_hit = depth
            continue
        if depth < SEARCH_DEPTH:
            queue.extend((os.path.join(folder, name), depth + 1) for name in subfolders(folder))
    return hits


def find_export_folder(root):
    """(the export folder at or below ``root``, whether it holds the metadata)."""
    hits = _search(root, lambda f: os.path.isfile(os.path.join(f, METADATA)))
    if len(hits) > 1:
        raise ExportError(f"{len(hits)} folders under {root} hold a {METADATA} ("
                          + ", ".join(os.path.relpath(h, root) for h in hits[:5])
                          + "): give the one export to grade")
    if hits:
        return hits[0], True
    hits = _search(root, lambda f: any(SUBMISSION.match(n) for n in subfolders(f)))
    return (hits[0] if len(hits) == 1 else root), False


def _text(value):
    return "" if value is None else str(value)


def read_metadata(path):
    """{submission: [{"name", "sid", "email"}]} from ``submission_metadata.yml``; (people, warnings)."""
    try:
        if os.path.getsize(path) > MAX_METADATA_BYTES:
            return {}, [f"{METADATA} is over {MAX_METADATA_BYTES // 2**20} MB; the CSV names no one"]
        with open(path, encoding="utf-8", errors="replace") as f:
            data = yaml.safe_load(f)
    except (OSError, yaml.YAMLError) as e:
        return {}, [f"{METADATA} could not be read ({type(e).__name__}: {e}); the CSV names no one"]
    if not isinstance(data, dict):
        return {}, [f"{METADATA} is not a mapping of submissions; the CSV names no one"]
    people = {}
    for submission, entry in data.items():
        entry = {str(k).lstrip(":"): v for k, v in entry.items()} if isinstance(entry, dict) else {}
        submitters = entry.get("submitters") if isinstance(entry.get("submitters"), list) else []
        people[str(submission)] = [
            {key: _text(person.get(f":{key}", person.get(key))) for key in ("name", "sid", "email")}
            for person in submitters if isinstance(person, dict)]
    return people, []


def _safe_parts(name):
    """The path components of a zip entry, or None if it would land outside the folder."""
    if "\x00" in name:
        return None
    parts = [p for p in name.replace("\\", "/").split("/") if p not in ("", ".")]
    if name.startswith(("/", "\\")) or ".." in parts or (parts and re.match(r"^[A-Za-z]:$", parts[0])):
        return None
    return parts


def unzip(path, dest):
    """Unzip ``path`` into the empty folder ``dest``, bounded; returns warnings."""
    warnings, skipped, total = [], [], 0
    try:
        archive = zipfile.ZipFile(path)
    except (OSError, zipfile.BadZipFile) as e:
        raise ExportError(f"{path} is not a readable zip file ({e})") from e
    with archive:
        infos = archive.infolist()
        if len(infos) > MAX_ENTRIES:
            raise ExportError(f"{path} has {len(infos)} entries, over the limit of {MAX_ENTRIES}: unzip it yourself")
        if sum(i.file_size for i in infos) > MAX_BYTES:
            raise ExportError(f"{path} unzips to over {MAX_BYTES // 2**30} GiB: unzip it yourself")
        for info in infos:
            parts = _safe_parts(info.filename)
            kind = stat.S_IFMT(info.external_attr >> 16)
            if not parts or kind not in (0, stat.S_IFREG, stat.S_IFDIR):
                skipped.append(info.filename)
                continue
            target = os.path.join(dest, *parts)
            try:
                if info.is_dir() or kind == stat.S_IFDIR:
                    os.makedirs(target, mode=0o700, exist_ok=True)
                    continue
                os.makedirs(os.path.dirname(target), mode=0o700, exist_ok=True)
                fd = os.open(target, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
                with archive.open(info) as src, os.fdopen(fd, "wb") as dst:
                    while chunk := src.read(_CHUNK):
                        total += len(chunk)
                        if total > MAX_BYTES:
                            raise ExportError(f"{path} unzips to over {MAX_BYTES // 2**30} GiB: unzip it yourself")
                        dst.write(chunk)
            except (OSError, ValueError, zipfile.BadZipFile, EOFError) as e:
                warnings.append(f"zip entry {info.filename!r} was not unzipped ({type(e).__name__}: {e})")
    if skipped:
        warnings.append(f"{len(skipped)} zip entries were skipped (links, special files or paths outside the "
                        f"export): {', '.join(repr(s) for s in skipped[:3])}{', ...' if len(skipped) > 3 else ''}")
    return warnings


def open_export(path):
    """The Export at ``path`` (a .zip, the export folder, or a folder above it). Call close()."""
    path = os.path.abspath(path)
    temporary, warnings = "", []
    if os.path.isfile(path):
        if not zipfile.is_zipfile(path):
            raise ExportError(f"{path} is neither a folder nor a .zip file (expected Gradescope's export)")
        temporary = tempfile.mkdtemp(prefix="ag-export-")  # mode 0700: other users cannot look in
        try:
            warnings += unzip(path, temporary)
        except BaseException:
            shutil.rmtree(temporary, ignore_errors=True)
            raise
        root = temporary
    elif os.path.isdir(path):
        root = path
    else:
        raise ExportError(f"{path} does not exist (expected Gradescope's export: its .zip or the unzipped folder)")
    try:
        folder, has_metadata = find_export_folder(root)
        people = {}
        if has_metadata:
            people, more = read_metadata(os.path.join(folder, METADATA))
            warnings += more
        else:
            warnings.append(f"no {METADATA} found in {path} or below: every folder of "
                            f"{os.path.relpath(folder, root) if folder != root else 'it'} is graded as a "
                            "submission, and the CSV names no one")
    except BaseException:
        if temporary:
            shutil.rmtree(temporary, ignore_errors=True)
        raise
    return Export(folder, subfolders(folder), people, has_metadata, warnings, temporary, path)
