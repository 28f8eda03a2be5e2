"""Operating-system limits for the student's process: who it runs as, what it may use, what it
may read, and how every process it started is found and killed afterwards."""
import ctypes
import os
import pwd
import resource
import signal
import stat
import sys
import time

SANDBOX_USERS = ("ag-student", "nobody")  # setup.sh creates the first; the second is everywhere
PR_SET_CHILD_SUBREAPER, PR_SET_NO_NEW_PRIVS = 36, 38
CLONE_NEWIPC, CLONE_NEWNET = 0x08000000, 0x40000000
_LIBC = ctypes.CDLL(None, use_errno=True)
# Resolved here, never between fork and exec. Linux only (like /proc); elsewhere they do nothing.
_PRCTL = getattr(_LIBC, "prctl", lambda *args: -1)
_UNSHARE = getattr(_LIBC, "unshare", lambda *args: -1)


def running_as_root():
    return os.geteuid() == 0


ANONYMOUS_UIDS = range(64200, 64264)  # setuid needs no passwd entry: a pool for concurrent grades
_claimed = None  # (name, uid, gid, lock fd): this process's sandbox identity, held until it exits


def sandbox_user():
    """(name, uid, gid) of the unprivileged user student code runs as, or None when not root.

    A grade ends by killing every process of its sandbox uid, so two grades on one machine
    must never share one: each process claims a uid with an exclusive lock, trying
    ``ag-student`` (setup.sh creates it), ``nobody``, then anonymous uids, and skipping any
    uid that is locked or already runs processes. ``AUTOGRADER_SANDBOX_USER`` (a name or a
    number) sets one explicitly (no claim: the caller keeps concurrent grades apart).
    """
    global _claimed
    if not running_as_root():
        return None
    wanted = os.environ.get("AUTOGRADER_SANDBOX_USER")
    if wanted:
        return resolve_user(wanted)
    if _claimed is None:
        _claimed = _claim_uid()
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


def _claim_uid():
    import fcntl
    import tempfile
    busy = {info[1] for info in _proc_table().values()}
    for name, uid, gid in _candidates():
        if uid in busy:
            continue
        path = os.path.join(tempfile.gettempdir(), f"ag-sandbox-uid-{uid}.lock")
        try:
            fd = os.open(path, os.O_CREAT | os.O_RDWR | os.O_NOFOLLOW, 0o600)
        except OSError:
            continue
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            os.close(fd)
            continue
        os.set_inheritable(fd, False)
        return name, uid, gid, fd
    raise RuntimeError("no free sandbox uid: every candidate is locked by another grade or runs processes")


def become_subreaper():
    """Orphans of our children (setsid escapees included) are re-parented to us, so we can find them."""
    _PRCTL(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)


def child_setup(user, address_space, max_processes, cpu_seconds, file_bytes=64 * 2**20):
    """The function that runs in the child between fork and exec: only system calls, no imports."""
    def setup():
        os.setsid()
        try:
            with open("/proc/self/oom_score_adj", "w") as f:  # the kernel's OOM killer takes us first
                f.write("1000")
        except OSError:
            pass
        os.nice(5)                                          # the grader stays responsive to a busy child
        for limit, value in ((resource.RLIMIT_AS, address_space), (resource.RLIMIT_CORE, 0),
                             (resource.RLIMIT_FSIZE, file_bytes)):
            resource.setrlimit(limit, (value, value))
        resource.setrlimit(resource.RLIMIT_CPU, (cpu_seconds, cpu_seconds + 5))
        if user is not None:
            _UNSHARE(CLONE_NEWNET | CLONE_NEWIPC)            # best effort: no network, private SysV IPC
            _, uid, gid = user
            resource.setrlimit(resource.RLIMIT_NPROC, (max_processes, max_processes))
            os.setgroups([])
            os.setresgid(gid, gid, gid)
            os.setresuid(uid, uid, uid)
        _PRCTL(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0)             # setuid programs give it nothing
        os.umask(0o077)
    return setup


# -- finding the sandbox's processes ------------------------------------------------------------
def _status(pid):
    """(ppid, real uid, state) of ``pid``, or None when it is gone."""
    try:
        with open(f"/proc/{pid}/status") as f:
            fields = dict(line.split(":", 1) for line in f if ":" in line)
        return int(fields["PPid"]), int(fields["Uid"].split()[0]), fields["State"].split()[0]
    except (OSError, KeyError, ValueError, IndexError):
        return None


def _proc_table():
    """{pid: (ppid, real uid, state)} for every process we can see."""
    table = {}
    for entry in os.listdir("/proc") if os.path.isdir("/proc") else ():
        if entry.isdigit():
            info = _status(entry)
            if info:
                table[int(entry)] = info
    return table


def _protected(table):
    """Never signalled: us, our ancestors and pid 1."""
    keep, pid = {1, os.getpid()}, os.getppid()
    while pid > 1 and pid not in keep:
        keep.add(pid)
        pid = table.get(pid, (0,))[0]
    return keep


def _targets(user, root_pids, table):
    keep = _protected(table)
    if user is not None:  # root: every process of the sandbox user, wherever it went
        return [pid for pid, (_, uid, _) in table.items() if uid == user[1] and uid != 0 and pid not in keep]
    # Not root: every descendant of the processes we started (orphans came back to us, the
    # subreaper). While grading, the parent starts no processes but sandboxes, so all its children count.
    found = set(root_pids) | {pid for pid, (ppid, _, _) in table.items() if ppid == os.getpid()}
    size = 0
    while size != len(found):
        size = len(found)
        found |= {pid for pid, (ppid, _, _) in table.items() if ppid in found}
    return [p for p in found if p in table and p not in keep]


def _kill_every_process_of(uid, gid):
    """One kill(-1, SIGKILL) as the sandbox user: the kernel signals all its processes at once,
    so a fork bomb cannot outrun it; it can reach no other user's process."""
    pid = os.fork()
    if pid == 0:
        try:
            os.setgroups([])
            os.setresgid(gid, gid, gid)
            os.setresuid(uid, uid, uid)
            os.kill(-1, signal.SIGKILL)
        finally:
            os._exit(0)
    try:
        os.waitpid(pid, 0)
    except ChildProcessError:  # reaped by a kill_all of another thread
        pass


def kill_all(user, root_pids=(), rounds=50):
    """Kill every process of the sandbox user (root) or every descendant we started (not root),
    and reap those that were our children (never the ones in ``root_pids``: their owner waits)."""
    for _ in range(rounds):
        table = _proc_table()
        targets = _targets(user, root_pids, table)
        for pid in targets:  # zombies re-parented to us: collect them
            if table[pid][2] == "Z" and table[pid][0] == os.getpid() and pid not in root_pids:
                _reap(pid)
        if not [p for p in targets if table[p][2] != "Z"]:
            return
        if user is not None:
            _kill_every_process_of(user[1], user[2])
        for pid in targets:
            try:
                os.kill(pid, signal.SIGKILL)
            except OSError:
                pass
        time.sleep(0.01)


def _reap(pid):
    try:
        os.waitpid(pid, os.WNOHANG)
    except ChildProcessError:
        pass


class Tracker:
    """The sandbox's processes and their resident memory, cheap enough to poll every 50 ms:
    /proc/<pid>/status is read once per process, /proc/<pid>/statm on each poll."""

    def __init__(self, user, root_pid):
        self.user, self.root, self.known = user, root_pid, {}

    def pids(self):
        now = {int(e) for e in (os.listdir("/proc") if os.path.isdir("/proc") else ()) if e.isdigit()}
        for pid in set(self.known) - now:
            del self.known[pid]
        for pid in now - set(self.known):
            info = _status(pid)
            if info:
                self.known[pid] = info
        if self.user is None:  # the parent of an orphan changes: read it again
            for pid, (ppid, _, _) in list(self.known.items()):
                if ppid not in now and pid in self.known:
                    self.known[pid] = _status(pid) or self.known[pid]
        return _targets(self.user, [self.root], self.known)

    def rss_bytes(self):
        """(resident bytes of all the sandbox's processes together, how many there are)."""
        total, pids = 0, self.pids()
        for pid in pids:
            try:
                with open(f"/proc/{pid}/statm") as f:
                    total += int(f.read().split()[1]) * resource.getpagesize()
            except (OSError, ValueError, IndexError):
                continue
        return total, len(pids)


# -- what the sandbox user may read -----------------------------------------------------------
def interpreter_reachable(path, uid):
    """Whether ``uid`` (not the owner) can reach and execute ``path``: every folder above needs o+x."""
    real = os.path.realpath(path)
    parts = real.split(os.sep)
    for i in range(2, len(parts)):
        st = os.stat(os.sep.join(parts[:i]) or os.sep)
        if st.st_uid != uid and not st.st_mode & 0o001:
            return False
    return bool(os.stat(real).st_mode & 0o001)


def _inside(path, folder):
    return path == folder or path.startswith(folder.rstrip(os.sep) + os.sep)


def protect_grader_files(package_dir, out_path):
    """As root, before student code runs: take group/other permissions away from what the
    sandbox user must neither read nor write. Owners keep theirs, so it is idempotent and a
    later non-root run by the owner works as before. Returns the paths changed.

    * every entry of the project folder (the parent of ``package_dir``: reference/, autograder/
      with its data, tests/, .git, dist/, out/ ...) except the Python environment the sandbox
      runs (``.venv`` when it lives there); the folder itself keeps o+x so ``.venv`` stays reachable;
    * the packages ``autograder`` and ``reference`` where they are installed (site-packages);
    * the folder of ``out_path`` when it holds files only and is not world-writable (like
      /autograder/results); elsewhere (/tmp) the fallback file owned by root and the atomic
      replace after every sandbox process is dead keep results.json ours.
    Nothing that holds the running interpreter's environment is ever changed.
    """
    if not running_as_root():
        return []
    package_dir = os.path.realpath(package_dir)
    project = os.path.dirname(package_dir)
    envs = {os.path.realpath(p) for p in (sys.prefix, sys.base_prefix, sys.exec_prefix)}
    paths = {package_dir, os.path.join(project, "reference")}
    if os.path.isfile(os.path.join(project, "pyproject.toml")):  # a checkout, not site-packages
        paths |= {os.path.join(project, name) for name in os.listdir(project)}
    folder = os.path.dirname(os.path.abspath(out_path))
    if (os.path.isdir(folder) and not os.stat(folder).st_mode & stat.S_IWOTH
            and all(e.is_file(follow_symlinks=False) for e in os.scandir(folder))):
        paths.add(folder)  # a folder of results files only, like /autograder/results
    changed = []
    for path in sorted(paths):
        try:
            st = os.lstat(path)
        except OSError:
            continue
        if stat.S_ISLNK(st.st_mode) or any(_inside(env, path) for env in envs) or not st.st_mode & 0o077:
            continue
        os.chmod(path, stat.S_IMODE(st.st_mode) & ~0o077)
        changed.append(path)
    return changed
