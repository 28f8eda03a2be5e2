"""Who student code runs as: one unprivileged uid per grading process, claimed with a lock.

A grade ends by killing every process of its sandbox uid, so two grades on one machine must
never share one. Each process claims a uid with an exclusive ``flock`` on a file in a
root-only folder (``LOCK_DIRS``: never a world-writable one, where anyone could plant a file,
a folder or a link at the lock's path), skipping every uid that is locked or already runs
processes. Anything at a lock path that is not a regular, root-owned file is removed first.
"""
import fcntl
import os
import pwd
import shutil
import stat

from . import procs

SANDBOX_USERS = ("ag-student", "nobody")  # setup.sh creates the first; the second is everywhere
ANONYMOUS_UIDS = range(64200, 64264)       # setuid needs no passwd entry: a pool for concurrent grades
LOCK_DIRS = ("/run/autograder-sandbox", "/var/lib/autograder-sandbox")
_claimed = None  # (name, uid, gid, lock fd): this process's sandbox identity, held until it exits


def running_as_root():
    return os.geteuid() == 0


def become(user):
    """Become ``user`` (name, uid, gid) for good: no supplementary groups, then its gid, then its
    uid (real, effective and saved). Only system calls: it runs between fork and exec too."""
    _, uid, gid = user
    os.setgroups([])
    os.setresgid(gid, gid, gid)
    os.setresuid(uid, uid, uid)


def sandbox_user():
    """(name, uid, gid) of the unprivileged user student code runs as, or None when not root.

    Tries ``ag-student`` (setup.sh creates it), ``nobody``, then anonymous uids.
    ``AUTOGRADER_SANDBOX_USER`` (a name or a number) sets one explicitly (no claim: the caller
    keeps concurrent grades apart, as tests/conftest.py and regrade do).
    """
    global _claimed
    if not running_as_root():
        return None
    wanted = os.environ.get("AUTOGRADER_SANDBOX_USER")
    if wanted:
        return resolve_user(wanted)
    if _claimed is None:
        _claimed = claim()
    return _claimed[:3]


def resolve_user(spec):
    """(name, uid, gid) of a user name or a uid number (which needs no passwd entry)."""
    try:
        pw = pwd.getpwuid(int(spec)) if spec.isdigit() else pwd.getpwnam(spec)
        name, uid, gid = pw.pw_name, pw.pw_uid, pw.pw_gid
    except KeyError:
        if not spec.isdigit():
            raise RuntimeError(f"sandbox user {spec!r} is not a user on this machine") from None
        name, uid, gid = f"uid {spec}", int(spec), int(spec)
    if uid == 0:
        raise RuntimeError(f"sandbox user {spec!r} is root; pick an unprivileged user")
    return name, uid, gid


def _candidates():
    for name in SANDBOX_USERS:
        try:
            pw = pwd.getpwnam(name)
        except KeyError:
            continue
        if pw.pw_uid != 0:
            yield pw.pw_name, pw.pw_uid, pw.pw_gid
    for uid in ANONYMOUS_UIDS:
        yield f"uid {uid}", uid, uid


def _root_only(path):
    """Whether ``path`` is a real folder of root that only root may change, below folders the
    same holds for (so nobody else can swap it for something else)."""
    try:
        for folder in [path] + [os.path.dirname(path)]:
            st = os.lstat(folder)
            if not stat.S_ISDIR(st.st_mode) or st.st_uid != 0 or st.st_mode & 0o022:
                return False
        return True
    except OSError:
        return False


def lock_dir():
    """A root-only folder for the uid locks, made if needed; None when there is none (not root)."""
    for path in LOCK_DIRS:
        if not _root_only(os.path.dirname(path)):
            continue
        try:
            os.mkdir(path, 0o700)
        except FileExistsError:
            pass
        except OSError:
            continue
        st = os.lstat(path)
        if stat.S_ISDIR(st.st_mode) and st.st_uid == 0:
            if stat.S_IMODE(st.st_mode) != 0o700:
                os.chmod(path, 0o700)
            return path
    return None


def _open_lock(path):
    """An fd of the lock file at ``path``: a regular root-owned file; whatever else squats the
    path (a folder, a link, a fifo, another owner's file) is removed first."""
    for _ in range(3):
        try:
            fd = os.open(path, os.O_CREAT | os.O_RDWR | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC, 0o600)
        except OSError:
            fd = None
        if fd is not None:
            st = os.fstat(fd)
            if stat.S_ISREG(st.st_mode) and st.st_uid == 0 and st.st_nlink == 1:
                return fd
            os.close(fd)
        try:  # squatted: clear it and try again
            if os.path.isdir(path) and not os.path.islink(path):
                shutil.rmtree(path)
            else:
                os.unlink(path)
        except OSError:
            return None
    return None


def claim():
    """Claim a free sandbox uid for this process: (name, uid, gid, lock fd); the lock is held
    until the process exits. Raises RuntimeError when every candidate is taken."""
    folder = lock_dir()
    if folder is None:
        raise RuntimeError(f"no root-only folder for the sandbox uid locks (tried {', '.join(LOCK_DIRS)})")
    busy = {p.uid for p in procs.table().values()}
    for name, uid, gid in _candidates():
        if uid in busy:
            continue
        fd = _open_lock(os.path.join(folder, f"uid-{uid}.lock"))
        if fd is None:
            continue
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            os.close(fd)
            continue
        return name, uid, gid, fd
    raise RuntimeError("no free sandbox uid: every candidate is locked by another grade or runs processes")
