"""Operating-system limits for the student's process: who it runs as, what it may use, and
how every process it started is found and killed afterwards."""
import ctypes
import os
import pwd
import resource
import signal
import time

SANDBOX_USERS = ("ag-student", "nobody")  # setup.sh creates the first; the second is everywhere
PR_SET_CHILD_SUBREAPER = 36


def running_as_root():
    return os.geteuid() == 0


def sandbox_user():
    """(name, uid, gid) of the unprivileged user student code runs as, or None when not root."""
    if not running_as_root():
        return None
    wanted = os.environ.get("AUTOGRADER_SANDBOX_USER")
    for name in ((wanted,) if wanted else SANDBOX_USERS):
        try:
            pw = pwd.getpwnam(name)
        except KeyError:
            continue
        if pw.pw_uid != 0:
            return pw.pw_name, pw.pw_uid, pw.pw_gid
    raise RuntimeError(f"none of the sandbox users {SANDBOX_USERS} exists; run setup.sh or set AUTOGRADER_SANDBOX_USER")


def become_subreaper():
    """Orphans of our children (setsid escapees included) are re-parented to us, so we can find them."""
    try:
        ctypes.CDLL(None, use_errno=True).prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)
    except (OSError, AttributeError):
        pass


def child_setup(user, memory_bytes, max_processes, cpu_seconds):
    """Returns the function that runs in the child between fork and exec."""
    def setup():
        os.setsid()
        resource.setrlimit(resource.RLIMIT_AS, (memory_bytes, memory_bytes))
        resource.setrlimit(resource.RLIMIT_CPU, (cpu_seconds, cpu_seconds + 5))
        resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
        resource.setrlimit(resource.RLIMIT_FSIZE, (256 * 2**20, 256 * 2**20))
        if user is not None:
            _, uid, gid = user
            resource.setrlimit(resource.RLIMIT_NPROC, (max_processes, max_processes))
            os.setgroups([])
            os.setgid(gid)
            os.setuid(uid)
        os.umask(0o077)
    return setup


def _proc_table():
    """{pid: (ppid, real uid)} for every process we can see."""
    table = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/status") as f:
                fields = dict(line.split(":", 1) for line in f if ":" in line)
            table[int(entry)] = (int(fields["PPid"]), int(fields["Uid"].split()[0]))
        except (OSError, KeyError, ValueError):
            continue
    return table


def _targets(user, root_pids):
    table = _proc_table()
    if user is not None:
        uid = user[1]
        return [pid for pid, (_, u) in table.items() if u == uid]
    # Not root: every descendant of the processes we started (orphans came back to us).
    # While grading, the parent starts no processes but sandboxes, so all its children count.
    me = os.getpid()
    found = set(root_pids) | {pid for pid, (ppid, _) in table.items() if ppid == me}
    changed = True
    while changed:
        changed = False
        for pid, (ppid, _) in table.items():
            if pid not in found and ppid in found:
                found.add(pid)
                changed = True
    return [p for p in found if p in table and p != me]


def kill_all(user, root_pids=(), rounds=50):
    """Kill every process of the sandbox user (root) or every descendant we started (not root)."""
    for _ in range(rounds):
        targets = _targets(user, root_pids)
        if not targets:
            break
        for pid in targets:
            try:
                os.kill(pid, signal.SIGKILL)
            except OSError:
                pass
        _reap()
        time.sleep(0.01)
    _reap()


def _reap():
    while True:
        try:
            pid, _ = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            return


def tree_rss_bytes(user, root_pids):
    """Resident memory of all the sandbox's processes together."""
    total = 0
    for pid in _targets(user, root_pids):
        try:
            with open(f"/proc/{pid}/statm") as f:
                total += int(f.read().split()[1]) * resource.getpagesize()
        except (OSError, ValueError, IndexError):
            continue
    return total


def interpreter_reachable(path, uid):
    """Whether ``uid`` (not the owner) can reach and execute ``path``: every folder above needs o+x."""
    real = os.path.realpath(path)
    parts = real.split(os.sep)
    for i in range(2, len(parts)):
        st = os.stat(os.sep.join(parts[:i]) or os.sep)
        if st.st_uid != uid and not st.st_mode & 0o001:
            return False
    return bool(os.stat(real).st_mode & 0o001)
