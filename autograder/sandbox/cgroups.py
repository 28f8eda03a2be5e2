"""The kernel's own accounting of a sandbox, where it can be had: a cgroup (v1) of the
``memory`` controller (it counts anonymous memory, shared memory, memfds and tmpfs files
alike, and its limit is enforced by the kernel) and one of ``cpuacct`` (CPU time of every
process that was ever in it, ended ones included).

Made below the grading process's own cgroups, so they stay inside whatever limits those
have; each is removed when its sandbox closes. Where the controllers are not mounted
writable (Docker's default, so usually on Gradescope; or not root), ``create`` returns None
for that controller and the sandbox falls back to reading /proc (``procs.py``).
``AUTOGRADER_SANDBOX_NO_CGROUP=1`` does the same (simulates such a host).
"""
import itertools
import os
import re
import time

_count = itertools.count()


def _own_dir(controller):
    """The folder of this process's cgroup of the v1 ``controller``, or None."""
    try:
        with open("/proc/self/cgroup") as f:
            paths = {c: path for line in f for _, cs, path in [line.rstrip("\n").split(":", 2)]
                     for c in cs.split(",")}
        with open("/proc/self/mountinfo") as f:
            mounts = [line.split() for line in f]
    except (OSError, ValueError):
        return None
    if controller not in paths:
        return None
    for m in mounts:
        dash = m.index("-")
        if m[dash + 1] == "cgroup" and controller in m[dash + 3].split(","):
            root, point = m[3], m[4]
            rel = os.path.relpath(paths[controller], root) if paths[controller].startswith(root) else None
            for folder in ([os.path.normpath(os.path.join(point, rel))] if rel else []) + [point]:
                if os.path.isfile(os.path.join(folder, "cgroup.procs")):
                    return folder
    return None


def _write(folder, name, value):
    with open(os.path.join(folder, name), "w") as f:
        f.write(str(value))


def _read(folder, name):
    with open(os.path.join(folder, name)) as f:
        return f.read()


def _sweep(parent):
    """Remove empty sandbox cgroups left by grading processes that died."""
    for name in os.listdir(parent):
        m = re.fullmatch(r"ag-sandbox-(\d+)-\d+", name)
        if m and not os.path.exists(f"/proc/{m.group(1)}"):
            try:
                os.rmdir(os.path.join(parent, name))
            except OSError:
                pass


def _make(controller):
    parent = _own_dir(controller)
    if parent is None:
        return None
    try:
        _sweep(parent)
        folder = os.path.join(parent, f"ag-sandbox-{os.getpid()}-{next(_count)}")
        os.mkdir(folder, 0o755)
        return folder
    except OSError:
        return None


class Cgroups:
    """The memory and cpuacct cgroups of one sandbox (each None where it cannot be made)."""

    def __init__(self, memory_limit):
        self.memory = self.cpu = None
        if os.environ.get("AUTOGRADER_SANDBOX_NO_CGROUP") == "1" or os.geteuid() != 0:
            return
        self.memory = _make("memory")
        if self.memory is not None:
            try:
                _write(self.memory, "memory.limit_in_bytes", memory_limit)
                if os.path.exists(os.path.join(self.memory, "memory.memsw.limit_in_bytes")):
                    _write(self.memory, "memory.memsw.limit_in_bytes", memory_limit)  # no swapping past it
            except OSError:
                self._remove("memory")
        self.cpu = _make("cpuacct")

    def join_fds(self):
        """Write-only fds of the ``cgroup.procs`` files (the child writes "0" to join); the
        caller closes them once the child has started."""
        return [os.open(os.path.join(folder, "cgroup.procs"), os.O_WRONLY | os.O_CLOEXEC)
                for folder in (self.memory, self.cpu) if folder is not None]

    # -- readings ----------------------------------------------------------------------------
    def memory_used(self):
        """Bytes charged that the kernel cannot just drop: everything but the file cache
        (so anonymous memory, shared memory and memfds, tmpfs files, kernel memory)."""
        try:
            stats = dict(line.split() for line in _read(self.memory, "memory.stat").splitlines())
            usage = int(_read(self.memory, "memory.usage_in_bytes"))
            return max(0, usage - int(stats.get("total_active_file", 0)) - int(stats.get("total_inactive_file", 0)))
        except (OSError, ValueError):
            return 0

    def oom_kills(self):
        """How many processes the kernel killed for this cgroup's limit so far."""
        try:
            text = _read(self.memory, "memory.oom_control")
            m = re.search(r"^oom_kill (\d+)", text, re.M)
            return int(m.group(1)) if m else 0
        except (OSError, ValueError):
            return 0

    def cpu_seconds(self):
        try:
            return int(_read(self.cpu, "cpuacct.usage")) / 1e9
        except (OSError, ValueError):
            return None

    def tasks(self):
        """Pids still in the cgroups."""
        found = set()
        for folder in (self.memory, self.cpu):
            try:
                found |= {int(p) for p in _read(folder, "cgroup.procs").split()} if folder else set()
            except (OSError, ValueError):
                pass
        return found

    # -- the end -------------------------------------------------------------------------------
    def _remove(self, which):
        folder = getattr(self, which)
        if folder is None:
            return True
        try:
            os.rmdir(folder)
        except FileNotFoundError:
            pass
        except OSError:
            return False
        setattr(self, which, None)
        return True

    def close(self, timeout=2.0):
        """Remove both cgroups (every process in them must be dead); True when done."""
        end = time.monotonic() + timeout
        while not (self._remove("memory") & self._remove("cpu")):
            if time.monotonic() > end:
                return False
            time.sleep(0.02)
        return True
