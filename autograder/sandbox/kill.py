"""Finding and killing every process of a sandbox: as root, every process of the sandbox uid,
wherever it went (setsid, double fork); not root, every descendant of the processes we
started (orphans come back to us: we are a child subreaper, ``child.become_subreaper``)."""
import os
import signal
import time

from . import procs, uids


def targets(user, root_pids, table):
    """The pids of ``table`` ({pid: Proc}) that belong to the sandbox, never ours or pid 1."""
    keep = procs.protected(table)
    if user is not None:
        return [pid for pid, p in table.items() if p.uid == user[1] and p.uid != 0 and pid not in keep]
    # While grading, the parent starts no processes but sandboxes, so all its children count.
    found = procs.descendants(set(root_pids) | {pid for pid, p in table.items() if p.ppid == os.getpid()}, table)
    return [p for p in found if p in table and p not in keep]


def _kill_every_process_of(user):
    """One kill(-1, SIGKILL) as the sandbox user: the kernel signals all its processes at once,
    so a fork bomb cannot outrun it; it can reach no other user's process."""
    pid = os.fork()
    if pid == 0:
        try:
            uids.become(user)
            os.kill(-1, signal.SIGKILL)
        finally:
            os._exit(0)
    try:
        os.waitpid(pid, 0)
    except ChildProcessError:  # reaped by a kill_all of another thread
        pass


def _reap(pid):
    try:
        os.waitpid(pid, os.WNOHANG)
    except ChildProcessError:
        pass


def kill_all(user, root_pids=(), rounds=50, cgroup_pids=None):
    """Kill every process of the sandbox user (root) or every descendant we started (not root),
    and reap those that were our children (never the ones in ``root_pids``: their owner waits).
    ``cgroup_pids``: a function giving the pids still in the sandbox's cgroups, killed too."""
    for _ in range(rounds):
        table = procs.table()
        found = targets(user, root_pids, table)
        found += [p for p in (cgroup_pids() if cgroup_pids else ()) if p in table and p not in found
                  and p not in procs.protected(table)]
        for pid in found:  # zombies re-parented to us: collect them
            if table[pid].state == "Z" and table[pid].ppid == os.getpid() and pid not in root_pids:
                _reap(pid)
        if not [p for p in found if table[p].state != "Z"]:
            return
        if user is not None:
            _kill_every_process_of(user)
        for pid in found:
            try:
                os.kill(pid, signal.SIGKILL)
            except OSError:
                pass
        time.sleep(0.01)
