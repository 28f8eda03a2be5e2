"""The one reader of /proc: which processes exist, whose they are, what memory and CPU time
they use. The sandbox's tracker and ``kill_all`` use it, and so can tools (bench, validate)
and tests that measure the grader's process tree. Linux only; elsewhere every answer is empty.

Every reader returns None (or skips the process) when the process went away while it was
being read: /proc is a moving target.
"""
import os
import stat
import threading
from collections import namedtuple

PAGE = os.sysconf("SC_PAGE_SIZE") if hasattr(os, "sysconf") else 4096
TICKS = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100
Proc = namedtuple("Proc", "ppid uid state")


def pids():
    """Every process id we can see."""
    try:
        return {int(e) for e in os.listdir("/proc") if e.isdigit()}
    except OSError:
        return set()


def fields(pid):
    """/proc/<pid>/status as {name: text}, or None."""
    try:
        with open(f"/proc/{pid}/status") as f:
            return dict(line.rstrip("\n").split(":\t", 1) for line in f if ":\t" in line)
    except (OSError, ValueError):
        return None


def status(pid):
    """Proc(ppid, real uid, state letter) of ``pid``, or None when it is gone."""
    got = fields(pid)
    try:
        return Proc(int(got["PPid"]), int(got["Uid"].split()[0]), got["State"].split()[0])
    except (TypeError, KeyError, ValueError, IndexError):
        return None


def table():
    """{pid: Proc} for every process we can see."""
    out = {}
    for pid in pids():
        info = status(pid)
        if info:
            out[pid] = info
    return out


def descendants(roots, procs):
    """``roots`` and every process below them in ``procs`` ({pid: Proc})."""
    found, size = set(roots), -1
    while size != len(found):
        size = len(found)
        found |= {pid for pid, p in procs.items() if p.ppid in found}
    return found


def protected(procs):
    """Never signalled: this process, its ancestors and pid 1."""
    keep, pid = {1, os.getpid()}, os.getppid()
    while pid > 1 and pid not in keep:
        keep.add(pid)
        pid = procs[pid].ppid if pid in procs else 0
    return keep


def of_user(uid, procs=None, zombies=False):
    """Pids of ``uid``'s processes (without zombies unless asked)."""
    procs = table() if procs is None else procs
    return sorted(p for p, info in procs.items() if info.uid == uid and (zombies or info.state != "Z"))


def with_marker(marker):
    """Pids (not ours) whose command line contains ``marker``."""
    found = []
    for pid in pids() - {os.getpid()}:
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                if marker.encode() in f.read():
                    found.append(pid)
        except OSError:
            pass
    return sorted(found)


# -- CPU time ------------------------------------------------------------------------------------
def stat_fields(pid):
    """The fields of /proc/<pid>/stat after the command name (bytes; [0] is field 3, the state),
    or None. ``pid`` may be "self". Read as bytes: a process may name itself with any bytes."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            return f.read().rsplit(b")", 1)[1].split()
    except (OSError, IndexError):
        return None


def cpu(pid):
    """(ppid, seconds) of ``pid``: user + system time of all its threads (dead ones included)
    plus that of the children it has waited for (and theirs), or None."""
    rest = stat_fields(pid)
    try:  # ppid is field 4, utime 14, stime 15, cutime 16, cstime 17
        return int(rest[1]), sum(int(x) for x in rest[11:15]) / TICKS
    except (TypeError, IndexError, ValueError):
        return None


class CpuTally:
    """CPU seconds used by a changing set of processes, those that ended included: a process
    that vanished counts in its parent's times when its parent (still in the set) reaped it,
    else (reaped by us, the subreaper) at its last seen value."""

    def __init__(self):
        self.seen, self.gone, self.total = {}, 0.0, 0.0

    def sample(self, members):
        now = {}
        for pid in members:
            got = cpu(pid)
            if got:
                now[pid] = got
        for pid, (ppid, seconds) in self.seen.items():
            if pid not in now and ppid not in now:
                self.gone += seconds
        self.seen = now
        self.total = max(self.total, self.gone + sum(s for _, s in now.values()))
        return self.total


# -- memory --------------------------------------------------------------------------------------
def resident(pid):
    """Resident bytes of ``pid`` (anonymous + file + shared memory pages mapped), or None."""
    try:
        with open(f"/proc/{pid}/statm") as f:
            return int(f.read().split()[1]) * PAGE
    except (OSError, ValueError, IndexError):
        return None


def shmem_devices():
    """Device numbers of the tmpfs file systems mounted here (their files are memory)."""
    devs = set()
    try:
        with open("/proc/self/mountinfo") as f:
            for line in f:
                left, _, right = line.partition(" - ")
                if right.split()[:1] in (["tmpfs"], ["shmem"]):
                    major, minor = left.split()[2].split(":")
                    devs.add(os.makedev(int(major), int(minor)))
    except (OSError, ValueError, IndexError):
        pass
    return devs


def shm_files(members, devices, owner=None, folders=("/dev/shm",)):
    """{(dev, inode): bytes} of the memory-backed files the processes ``members`` hold open
    (memfds; files on a tmpfs, deleted or not), plus, with ``owner``, the files that uid owns
    at the top of ``folders``: memory that no process's resident size shows while unmapped."""
    found = {}
    for pid in members:
        try:
            fds = os.listdir(f"/proc/{pid}/fd")
        except OSError:
            continue
        for fd in fds:
            path = f"/proc/{pid}/fd/{fd}"
            try:
                st = os.stat(path)
                if stat.S_ISREG(st.st_mode) and (st.st_dev in devices or os.readlink(path).startswith("/memfd:")):
                    found[(st.st_dev, st.st_ino)] = st.st_blocks * 512
            except OSError:
                continue
    for folder in folders if owner is not None else ():
        try:
            entries = list(os.scandir(folder))
        except OSError:
            continue
        for entry in entries:
            try:
                st = entry.stat(follow_symlinks=False)
            except OSError:
                continue
            if st.st_uid == owner and stat.S_ISREG(st.st_mode):
                found[(st.st_dev, st.st_ino)] = st.st_blocks * 512
    return found


def sysv_shm_bytes(uid):
    """Resident bytes of the System V shared memory segments ``uid`` created or owns (those
    of this IPC namespace)."""
    total = 0
    try:
        for row in sysv_rows("shm"):
            if uid in (int(row.get("uid", -1)), int(row.get("cuid", -1))):
                total += int(row.get("rss", row.get("size", 0)))
    except ValueError:
        pass
    return total


def sysv_rows(kind):
    """The System V IPC objects of this IPC namespace of ``kind`` ("shm", "sem" or "msg"): the
    rows of /proc/sysvipc/<kind> as {column: text}; [] when it cannot be read."""
    try:
        with open(f"/proc/sysvipc/{kind}") as f:
            header = f.readline().split()
            return [dict(zip(header, line.split(), strict=False)) for line in f]
    except (OSError, ValueError):
        return []


def tree_memory(root, uid=None, pss=False):
    """Resident (or, with ``pss``, proportional) bytes of ``root``, its descendants and every
    process of ``uid``: what a container's memory limit would see of a grade."""
    procs = table()
    members = descendants({root}, procs) | ({p for p, i in procs.items() if i.uid == uid} if uid is not None else set())
    total = 0
    for pid in members:
        if pss:
            try:
                with open(f"/proc/{pid}/smaps_rollup") as f:
                    total += next(int(line.split()[1]) * 1024 for line in f if line.startswith("Pss:"))
            except (OSError, StopIteration, ValueError):
                pass
        else:
            total += resident(pid) or 0
    return total


class TreeWatch:
    """Peak memory of a process tree, sampled every ``interval`` s in a thread of its own:

        with TreeWatch(proc.pid, uid=sandbox_uid) as watch:
            proc.wait(timeout=240)
        watch.peak   # the largest sample seen (also ``peak_bytes``); ``polls`` samples taken

    A sample is ``tree_memory(root, uid, pss)``: ``root`` (default: this process), its
    descendants and every process of ``uid``. Subclasses may override ``sample``."""

    def __init__(self, root=None, uid=None, interval=0.02, pss=False):
        self.root, self.uid, self.interval, self.pss = root or os.getpid(), uid, interval, pss
        self.peak, self.polls = 0, 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def sample(self):
        return tree_memory(self.root, self.uid, self.pss)

    def _run(self):
        while not self._stop.wait(self.interval):
            self.peak = max(self.peak, self.sample())
            self.polls += 1

    @property
    def peak_bytes(self):
        return self.peak

    def start(self):
        self._thread.start()
        return self

    def stop(self):
        self._stop.set()
        self._thread.join()

    def __enter__(self):
        return self.start()

    def __exit__(self, *exc):
        self.stop()
