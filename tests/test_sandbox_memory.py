"""Memory counts everything: memory held in memfds or /dev/shm files (no process's resident size
shows it while unmapped) stops the call as a `memory` error, both where the kernel accounts
for it (a memory cgroup) and where the sandbox must find it in /proc (no cgroup, as in
Docker); the files are gone afterwards and the next call works."""
import os
import textwrap
import time

import pytest

from autograder.sandbox import Sandbox, StudentError, limits, procs

pytestmark = pytest.mark.skipif(not limits.running_as_root(), reason="needs root (CI and Gradescope run as root)")
MB = 2**20

HOARD = """
    import os, time
    CHUNK = 64 * 2**20  # RLIMIT_FSIZE caps one file at 64 MB: many files, 1.4 GB in all
    def hoard(where):
        keep = []
        for i in range(22):
            if where == "memfd":
                fd = os.memfd_create(f"hoard{i}")
            else:
                fd = os.open(f"/dev/shm/hoard-{os.getpid()}-{i}", os.O_CREAT | os.O_RDWR, 0o600)
            for _ in range(CHUNK // 2**22):
                os.write(fd, b"x" * 2**22)
            keep.append(fd)
        time.sleep(30)
        return len(keep)
    def ok():
        return 1
"""


class Peak(procs.TreeWatch):
    """Peak bytes of this process, its descendants, the sandbox uid's processes and the
    memory-backed files they hold or own in /dev/shm, every 20 ms."""

    def __init__(self, uid):
        super().__init__(os.getpid(), uid)
        self.devices = procs.shmem_devices()

    def sample(self):
        table = procs.table()
        members = procs.descendants({self.root}, table) | set(procs.of_user(self.uid, table))
        return super().sample() + sum(procs.shm_files(members, self.devices, self.uid).values())


@pytest.mark.parametrize("accounting", ["cgroup", "watch"])
@pytest.mark.parametrize("where", ["memfd", "/dev/shm"])
def test_memory_held_in_memfds_or_shared_memory_is_a_memory_error(tmp_path, monkeypatch, accounting, where):
    if accounting == "watch":
        monkeypatch.setenv("AUTOGRADER_SANDBOX_NO_CGROUP", "1")  # as in Docker: /proc only
    (tmp_path / "student.py").write_text(textwrap.dedent(HOARD))
    os.chmod(tmp_path, 0o755)
    with Sandbox(str(tmp_path)) as sb:
        with Peak(sb.user[1]) as peak:
            start = time.monotonic()
            with pytest.raises(StudentError) as e:
                sb.call("call", module="student", name="hoard", args=[where], timeout=30)
        assert sb.isolation["memory"] == ("cgroup" if accounting == "cgroup" else "watch of /proc")
        assert e.value.kind == "memory", str(e.value)
        assert time.monotonic() - start < 20
        assert peak.peak < 768 * MB, f"the grade's processes and files reached {peak.peak / MB:.0f} MB"
        assert not [f for f in os.listdir("/dev/shm") if os.stat(f"/dev/shm/{f}").st_uid == sb.user[1]]
        assert sb.call("call", module="student", name="ok")["value"] == 1
    print(f"{where}, {accounting}: {e.value.message}; peak {peak.peak / MB:.0f} MB")
