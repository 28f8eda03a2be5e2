"""Where results.json lives on disk: its space is reserved before any student code runs, and the
final document is written into that reserved file, so a full disk cannot cost a correct grade.

    slot = reserve(path)            # first thing a grade does: a valid fallback document,
    ...                             # padded with spaces to MAX_BYTES (JSON allows trailing spaces)
    write_reserved(slot, document)  # last: written in place over the reserved bytes, then cut

A background process that fills the disk (``/tmp`` as a world-writable results folder, or the
container's disk) makes a fresh write fail with ENOSPC; overwriting blocks that are already
ours does not need any. ``encode`` cuts outputs so the document always fits the reservation.
The file is made beside ``path`` and renamed over it (a planted symbolic link is replaced, a
planted folder removed), and written through the descriptor kept open, so what sits at
``path`` by the end is checked again before the grade returns.
"""
import errno
import os
import shutil
import stat
import tempfile
from dataclasses import dataclass

from .gradescope import MAX_BYTES, crash_document, encode

FALLBACK_NOTE = "Grading did not finish."
_CHUNK = 64 * 1024
_FULL = (errno.ENOSPC, errno.EDQUOT, errno.EFBIG)


@dataclass
class ResultsFile:
    """A results file whose space is held: ``fd`` stays open for the final write."""
    path: str
    fd: int
    size: int   # bytes reserved (the final document is cut to fit)

    def at_path(self):
        """Whether ``path`` is still this very file (not replaced, moved or removed)."""
        try:
            here, ours = os.lstat(self.path), os.fstat(self.fd)
        except OSError:
            return False
        return (here.st_dev, here.st_ino) == (ours.st_dev, ours.st_ino) and ours.st_nlink > 0

    def close(self):
        if self.fd >= 0:
            os.close(self.fd)
            self.fd = -1


def _write_all(fd, data, offset=None):
    view = memoryview(data)
    while view:
        n = os.write(fd, view) if offset is None else os.pwrite(fd, view, offset)
        if offset is not None:
            offset += n
        view = view[n:]


def _sync(fd):
    """fsync, where the file system supports it; a full disk or an I/O error is raised."""
    try:
        os.fsync(fd)
    except OSError as e:
        if e.errno not in (errno.EINVAL, errno.EROFS, errno.ENOTSUP):
            raise


def _rename_over(tmp, path):
    """``os.replace``, removing a folder planted at ``path`` first (never following links)."""
    try:
        os.replace(tmp, path)
    except OSError:
        if not (os.path.isdir(path) and not os.path.islink(path)):
            raise
        shutil.rmtree(path)
        os.replace(tmp, path)


def _fresh(path):
    """(fd, temporary path) of a new file beside ``path``."""
    folder = os.path.dirname(os.path.abspath(path))
    os.makedirs(folder, exist_ok=True)
    return tempfile.mkstemp(prefix=".results-", suffix=".json", dir=folder)


def replace_file(path, data, mode=0o644):
    """Write ``data`` to a new file beside ``path`` and rename it over ``path`` in one step."""
    fd, tmp = _fresh(path)
    try:
        _write_all(fd, data)
        os.fchmod(fd, mode)
        _sync(fd)
        os.close(fd)
        fd = -1
        _rename_over(tmp, path)
    except BaseException:
        if fd >= 0:
            os.close(fd)
        if os.path.lexists(tmp):
            os.unlink(tmp)
        raise


def reserve(path, nbytes=MAX_BYTES, note=FALLBACK_NOTE):
    """Put a valid fallback document at ``path``, padded with spaces to ``nbytes``, and keep it
    open. If the disk fills while padding, the reservation is what fit (the final write then
    tries a fresh file first). Raises OSError only when not even the fallback can be written."""
    data = encode(crash_document(note))
    fd, tmp = _fresh(path)
    try:
        _write_all(fd, data)
        os.fchmod(fd, 0o644)
        size = len(data)
        try:
            while size < nbytes:
                n = os.write(fd, b" " * min(_CHUNK, nbytes - size))
                size += n
            _sync(fd)
        except OSError as e:
            if e.errno not in _FULL:
                raise
        _rename_over(tmp, path)
    except BaseException:
        os.close(fd)
        if os.path.lexists(tmp):
            os.unlink(tmp)
        raise
    return ResultsFile(os.path.abspath(path), fd, os.fstat(fd).st_size)


def _open_existing(path):
    """A ResultsFile for a results file reserved by another process (``path`` as text)."""
    fd = os.open(path, os.O_WRONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
    st = os.fstat(fd)
    if not stat.S_ISREG(st.st_mode):
        os.close(fd)
        raise OSError(errno.EINVAL, "not a regular file", path)
    return ResultsFile(os.path.abspath(path), fd, st.st_size)


def _in_place(slot, data):
    _write_all(slot.fd, data, offset=0)
    os.ftruncate(slot.fd, len(data))
    try:
        _sync(slot.fd)
    except OSError:
        pass  # the bytes are in the page cache over blocks already ours


def _put_back(slot, data):
    """``path`` no longer is our file (something replaced or removed it): make it so again."""
    if os.path.isdir(slot.path) and not os.path.islink(slot.path):
        shutil.rmtree(slot.path)
    try:
        replace_file(slot.path, data)
    except OSError as e:
        if e.errno not in _FULL or os.fstat(slot.fd).st_nlink == 0:
            raise
        fd, tmp = _fresh(slot.path)  # no room for a copy: link our own file back instead
        os.close(fd)
        os.unlink(tmp)
        os.link(f"/proc/self/fd/{slot.fd}", tmp, follow_symlinks=True)
        _rename_over(tmp, slot.path)


def write_reserved(slot, document):
    """Write ``document`` into the reserved results file ``slot`` (a ResultsFile from
    ``reserve``, or the path of a file reserved earlier) and close it. The document is cut to
    fit the reservation; if the reservation came out short, a fresh file is tried first."""
    if not isinstance(slot, ResultsFile):
        try:
            slot = _open_existing(os.fspath(slot))
        except OSError:  # nothing reserved there (missing, or a folder planted): a fresh file
            replace_file(os.fspath(slot), encode(document, MAX_BYTES))
            return
    try:
        data = encode(document, MAX_BYTES)
        if len(data) > slot.size:
            try:
                replace_file(slot.path, data)
                return
            except OSError:
                data = encode(document, slot.size)
        _in_place(slot, data)
        if not slot.at_path():
            _put_back(slot, data)
    finally:
        slot.close()
