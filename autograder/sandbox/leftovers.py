"""What the sandbox user left behind after its processes are dead: files and folders in the
world-writable folders (/tmp, /var/tmp, /dev/shm, POSIX message queues, the temp folder),
and System V shared memory, semaphores and message queues. Removed, as root, so a process
that filled the disk or held memory there cannot make the grade fail (results.json must
still be written) or charge the next worker's memory.

Only what the uid owns is removed, and only where it could write: at the top of those folders
and inside world-writable folders below them (like /tmp/.X11-unix). Links are never followed.
"""
import ctypes
import os
import shutil
import stat
import tempfile

from . import procs

FOLDERS = ("/tmp", "/var/tmp", "/dev/shm", "/dev/mqueue", "/run/lock")
IPC_RMID = 0
_LIBC = ctypes.CDLL(None, use_errno=True)


def folders():
    """The world-writable folders to clean, each once (by real path)."""
    out = []
    for folder in (tempfile.gettempdir(),) + FOLDERS:
        real = os.path.realpath(folder)
        if real not in out and os.path.isdir(real):
            out.append(real)
    return out


def _remove(path, st):
    """Remove ``path`` (lstat ``st``); its size in bytes as far as it was known."""
    size = st.st_blocks * 512
    try:
        if stat.S_ISDIR(st.st_mode):
            shutil.rmtree(path)  # fd-based on Linux: never follows a link out of the tree
        else:
            os.unlink(path)
    except FileNotFoundError:
        pass
    return size


def _clean(folder, uid, depth, found):
    try:
        entries = list(os.scandir(folder))
    except OSError:
        return
    for entry in entries:
        try:
            st = entry.stat(follow_symlinks=False)
        except OSError:
            continue
        try:
            if st.st_uid == uid:
                found[0] += 1
                found[1] += _remove(entry.path, st)
            elif stat.S_ISDIR(st.st_mode) and st.st_mode & stat.S_IWOTH and depth > 0:
                _clean(entry.path, uid, depth - 1, found)
        except OSError:
            continue


def _sysv(uid):
    """Remove the System V IPC objects of ``uid`` in this IPC namespace; how many."""
    removed = 0
    for kind, column, ctl in (("shm", "shmid", "shmctl"), ("sem", "semid", "semctl"), ("msg", "msqid", "msgctl")):
        fn = getattr(_LIBC, ctl, None)
        for row in procs.sysv_rows(kind):
            try:
                if uid in (int(row["uid"]), int(row["cuid"])) and fn is not None:
                    args = (int(row[column]), 0, IPC_RMID) if kind == "sem" else (int(row[column]), IPC_RMID, None)
                    removed += fn(*args) == 0
            except (KeyError, ValueError):
                continue
    return removed


def remove(uid, depth=4):
    """Remove everything ``uid`` left in the world-writable folders and its System V IPC
    objects (call once every process of ``uid`` is dead). Returns (entries, bytes, ipc objects)."""
    if uid is None or uid == 0:
        return 0, 0, 0
    found = [0, 0]
    for folder in folders():
        _clean(folder, uid, depth, found)
    return found[0], found[1], _sysv(uid)
