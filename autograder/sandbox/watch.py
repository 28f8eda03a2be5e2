"""Watching a running worker from the parent: its processes, the memory they hold (shared memory
and memfds included) and the CPU time they used; a thread that stops them over the memory
limit; a thread that drains what they print."""
import os
import threading

from . import kill, procs

SHM_FOLDERS = ("/dev/shm",)  # where files are memory (a tmpfs) that the sandbox user may write


class Tracker:
    """The sandbox's processes (by uid as root, else descendants), their memory and CPU time.
    With ``cgroups`` (a ``cgroups.Cgroups``), the kernel's accounting is used where it exists."""

    def __init__(self, user, root_pid, cgroups=None):
        self.user, self.root, self.cgroups = user, root_pid, cgroups
        self.known, self.lock = {}, threading.Lock()
        self.devices = procs.shmem_devices()
        self.tally = procs.CpuTally()

    def members(self):
        with self.lock:
            now = procs.pids()
            for pid in set(self.known) - now:
                del self.known[pid]
            for pid in now - set(self.known):
                info = procs.status(pid)
                if info:
                    self.known[pid] = info
            if self.user is None:  # the parent of an orphan changes: read it again
                for pid, p in list(self.known.items()):
                    if p.ppid not in now:
                        self.known[pid] = procs.status(pid) or p
            return kill.targets(self.user, [self.root], dict(self.known))

    def memory(self):
        """(bytes the sandbox holds, how many processes): the cgroup's charge where there is one;
        else resident memory plus memory-backed files (memfds, /dev/shm) and System V segments."""
        pids = self.members()
        if self.cgroups is not None and self.cgroups.memory is not None:
            return self.cgroups.memory_used(), len(pids)
        total = sum(procs.resident(pid) or 0 for pid in pids)
        owner = self.user[1] if self.user else None
        total += sum(procs.shm_files(pids, self.devices, owner, SHM_FOLDERS).values())
        if owner is not None:
            total += procs.sysv_shm_bytes(owner)
        return total, len(pids)

    def oom_kills(self):
        return self.cgroups.oom_kills() if self.cgroups is not None and self.cgroups.memory else 0

    def cpu_seconds(self):
        """CPU seconds used by every process of the sandbox so far (ended ones included)."""
        if self.cgroups is not None and self.cgroups.cpu is not None:
            seconds = self.cgroups.cpu_seconds()
            if seconds is not None:
                return seconds
        return self.tally.sample(self.members())


class MemoryWatch(threading.Thread):
    """Polls the memory of all the sandbox's processes while the worker lives (during calls and
    between them); over the limit, or when the kernel killed one of them for its cgroup's limit,
    kills them all and remembers why (``over``: (bytes, processes))."""

    def __init__(self, tracker, limit, cgroup_pids=None):
        super().__init__(daemon=True)
        self.tracker, self.limit, self.cgroup_pids = tracker, limit, cgroup_pids
        self.over, self.done = None, threading.Event()
        self.ooms = tracker.oom_kills()

    def run(self):
        period = 0.05
        while not self.done.wait(period):
            try:
                used, n = self.tracker.memory()
            except OSError:  # a /proc race: look again
                continue
            if used > self.limit or self.tracker.oom_kills() > self.ooms:
                self.over = (max(used, self.limit), n)
                kill.kill_all(self.tracker.user, [self.tracker.root], cgroup_pids=self.cgroup_pids)
                return
            period = 0.01 if used > self.limit / 2 else 0.05  # NumPy faults in up to ~6 GB/s


class Output(threading.Thread):
    """Drains the worker's stdout+stderr so it can never block on a full pipe; keeps the start."""

    def __init__(self, fd, cap):
        super().__init__(daemon=True)
        self.fd, self.cap, self.text = fd, cap, ""

    def run(self):
        while True:
            try:
                chunk = os.read(self.fd, 65536)
            except OSError:
                return
            if not chunk:
                os.close(self.fd)
                return
            self.text += chunk.decode("utf-8", "replace")[:max(0, self.cap - len(self.text))]
