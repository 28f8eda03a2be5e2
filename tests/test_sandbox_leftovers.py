"""What student code leaves behind is removed once its processes are dead: a background process
that filled the temp folder (the disk results.json and the next sandbox need), files in
/dev/shm and /var/tmp, System V shared memory. On a small tmpfs mounted for the test, never
the machine's own /tmp. Runs as root (CI and Gradescope do)."""
import os
import shutil
import subprocess
import tempfile

import pytest

from attacks import kit
from autograder.sandbox import Sandbox, limits
from conftest import call, sandbox_for

pytestmark = pytest.mark.skipif(not limits.running_as_root(), reason="needs root (CI and Gradescope run as root)")
MB = 2**20
SIZE_MB = 32

FILL = """
import os, sys, time
def _fill(folder):
    os.setsid()
    if os.fork():
        os._exit(0)
    held = open(os.path.join(folder, "held"), "wb")  # deleted but open: space only a kill frees
    os.unlink(held.name)
    os.makedirs(os.path.join(folder, "junk", "deeper"), exist_ok=True)
    try:
        for _ in range(128):
            held.write(b"x" * 2**16)
            held.flush()
        for i in range(1000):
            with open(os.path.join(folder, "junk", "deeper" if i % 2 else "", f"f{i}"), "wb") as f:
                for _ in range(128):
                    f.write(b"x" * 2**16)
                    f.flush()
    except OSError:
        pass
    while True:
        time.sleep(1)
def start_filling(folder):
    if os.fork() == 0:
        try:
            _fill(folder)
        finally:
            os._exit(0)
    while os.statvfs(folder).f_bavail > 16:  # until the disk is full
        time.sleep(0.05)
    return "full"
"""


@pytest.fixture
def small_tmp(tmp_path, monkeypatch):  # tmp_path first: pytest picks its base folder once
    """A 32 MB tmpfs as the temp folder of this process (sandbox copies, leftovers' cleaning)."""
    folder = tempfile.mkdtemp(prefix="ag-test-fill-")
    os.chmod(folder, 0o755)
    subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={SIZE_MB}m,mode=1777", "tmpfs", folder], check=True)
    monkeypatch.setattr(tempfile, "tempdir", folder)
    try:
        yield folder
    finally:
        subprocess.run(["umount", "-l", folder], check=False)
        os.rmdir(folder)


def free_mb(folder):
    st = os.statvfs(folder)
    return st.f_bavail * st.f_frsize / MB


def test_a_process_that_filled_the_temp_folder_is_killed_and_its_files_removed(small_tmp, tmp_path):
    with sandbox_for(tmp_path / "sub", FILL + "def ok():\n    return 1\n") as sb:
        assert call(sb, "start_filling", small_tmp) == "full"
        assert free_mb(small_tmp) < 1
        uid = sb.user[1]
    assert free_mb(small_tmp) > SIZE_MB - 1, "the space is back"
    assert not [e for e in os.scandir(small_tmp) if e.stat(follow_symlinks=False).st_uid == uid]
    with open(os.path.join(small_tmp, "results.json"), "wb") as f:  # what the grade writes at the end
        f.write(b" " * MB)
    with Sandbox(str(tmp_path / "sub")) as sb:  # and the next part's sandbox can stage its copies
        assert call(sb, "ok") == 1


LITTER = """
import ctypes, os
def litter():
    libc = ctypes.CDLL(None, use_errno=True)
    shmid = libc.shmget(0, 2**20, 0o1000 | 0o600)  # IPC_PRIVATE, IPC_CREAT
    for folder in ("/dev/shm", "/var/tmp"):
        with open(os.path.join(folder, f"ag-test-litter-{os.getpid()}"), "wb") as f:
            f.write(b"x" * 2**20)
    os.mkdir(f"/var/tmp/ag-test-litter-dir-{os.getpid()}")
    return shmid
"""


def test_files_in_shared_folders_and_system_v_memory_are_removed(tmp_path, monkeypatch):
    monkeypatch.setenv("AUTOGRADER_SANDBOX_NO_NETNS", "1")  # no private IPC namespace, as in Docker
    with sandbox_for(tmp_path / "sub", LITTER) as sb:
        shmid = call(sb, "litter")
        uid = sb.user[1]
        assert shmid >= 0 and f" {shmid} " in open("/proc/sysvipc/shm").read()
        assert [f for f in os.listdir("/var/tmp") if f.startswith("ag-test-litter-")]
    for folder in ("/dev/shm", "/var/tmp"):
        assert not [e.name for e in os.scandir(folder) if e.stat(follow_symlinks=False).st_uid == uid], folder
    rows = [line.split() for line in open("/proc/sysvipc/shm").readlines()[1:]]
    assert not [r for r in rows if r[1] == str(shmid)], "the System V segment is gone"


ATTACK = """

# ---- attack: fill the temp folder from a background process, then carry on ----
import os as _os, time as _time
if _os.fork() == 0:
    try:
        _os.setsid()
        if _os.fork() == 0:
            _i = 0
            while True:  # 64 KB at a time, so the disk ends up full to the last block
                try:
                    with open(_os.path.join({folder!r}, f"fill{{_i // 64}}"), "ab") as _f:
                        _f.write(b"x" * 2**16)
                    _i += 1
                except OSError:
                    _time.sleep(0.2)
    finally:
        _os._exit(0)
_time.sleep(0.5)
"""


def test_correct_work_keeps_full_marks_while_a_background_process_fills_the_temp_folder(small_tmp, tmp_path):
    """The whole grade (both parts) through the CLI with that tmpfs as TMPDIR: results.json is
    written there at the end, after the filler was killed and its files removed."""
    attack = ATTACK.format(folder=small_tmp)  # in both parts: whichever runs first fills the disk of the second
    sub = kit.submission(str(tmp_path / "sub"), attention=kit.source("attention", wrong=False) + attack,
                         gpt=kit.source("gpt", wrong=False) + attack)
    out = os.path.join(small_tmp, "out", "results.json")
    os.makedirs(os.path.dirname(out))
    with kit.PeakMemory(kit.sandbox_uid()) as peak:
        document, seconds, proc = kit.grade_cli(sub, out, env={"TMPDIR": small_tmp}, timeout=300)
    assert kit.valid(document), proc.stderr[-2000:]
    lost = [f"{t['name']}: {t['output'][:200]}" for t in document["tests"] if t["score"] < t["max_score"]]
    assert not lost, "\n".join(lost)
    assert seconds < 240 and peak.peak < 768 * MB, (seconds, peak.peak / MB)
    print(f"graded in {seconds:.0f} s, peak {peak.peak / MB:.0f} MB, free after: {free_mb(small_tmp):.0f} MB")
    shutil.rmtree(os.path.dirname(out))
