"""Student code reaches no network and no other submission: a network namespace where the
kernel allows one, else (Docker's default capabilities, so Gradescope) the worker's seccomp
filter; staged copies private to their sandbox uid; uid locks nobody else can squat.
Runs as root (CI and Gradescope do)."""
import contextlib
import os
import socket
import subprocess
import sys
import threading

import pytest

from autograder.sandbox import limits, uids
from conftest import call, sandbox_for

pytestmark = pytest.mark.skipif(not limits.running_as_root(), reason="needs root (CI and Gradescope run as root)")
REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


class Listener(threading.Thread):
    """A TCP listener on 127.0.0.1 that records what it receives (the hidden inputs a student
    would relay)."""

    def __init__(self, family=socket.AF_INET, host="127.0.0.1"):
        super().__init__(daemon=True)
        self.sock = socket.socket(family)
        self.sock.bind((host, 0))
        self.sock.listen()
        self.sock.settimeout(0.2)
        self.port, self.got, self.done = self.sock.getsockname()[1], [], threading.Event()

    def run(self):
        while not self.done.is_set():
            try:
                conn, _ = self.sock.accept()
            except OSError:
                continue
            conn.settimeout(1)
            try:
                self.got.append(conn.recv(1000))
            except OSError:
                self.got.append(b"(connected)")
            conn.close()

    def __enter__(self):
        self.start()
        return self

    def __exit__(self, *exc):
        self.done.set()
        self.join()
        self.sock.close()


RELAY = """
    import ctypes, os, socket
    libc = ctypes.CDLL(None, use_errno=True)
    def relay(port, port6):
        out = {"ns": os.readlink("/proc/self/ns/net")}
        for name, family, host, p in (("v4", socket.AF_INET, "127.0.0.1", port), ("v6", socket.AF_INET6, "::1", port6)):
            try:
                with socket.create_connection((host, p), timeout=2) as s:
                    s.sendall(b"hidden inputs")
                out[name] = "reached"
            except OSError as e:
                out[name] = e.errno
        # the kernel reads socket()'s family as an int: 2 + 2**32 is AF_INET to it
        fd = libc.socket(ctypes.c_long(socket.AF_INET + (1 << 32)), socket.SOCK_STREAM, 0)
        out["wide"] = ctypes.get_errno() if fd < 0 else "opened"
        out["unix"] = socket.socket(socket.AF_UNIX).fileno() > 0
        out["ptrace"] = ctypes.get_errno() if libc.ptrace(16, os.getppid(), 0, 0) < 0 else "attached"
        return out
"""


def relay(tmp_path):
    with Listener() as v4, Listener(socket.AF_INET6, "::1") as v6:
        with sandbox_for(tmp_path, RELAY) as sb:
            got = call(sb, "relay", v4.port, v6.port)
            isolation = dict(sb.isolation)
    return got, isolation, v4.got + v6.got


def test_student_code_has_no_network_in_a_namespace_where_the_kernel_allows_one(tmp_path):
    got, isolation, received = relay(tmp_path)
    assert got["v4"] != "reached" and got["v6"] != "reached" and received == []
    if not limits.network_namespace_possible():  # Docker's default capabilities: the seccomp path (below)
        assert isolation["network"] == "seccomp", isolation
        return
    assert isolation["network"] == "namespace" and isolation["seccomp"] in ("seccomp", "pyseccomp")
    assert got["ns"] != os.readlink("/proc/self/ns/net"), "the worker has a network namespace of its own"


def test_where_namespaces_are_refused_the_seccomp_filter_keeps_student_code_off_the_network(tmp_path, monkeypatch):
    monkeypatch.setenv("AUTOGRADER_SANDBOX_NO_NETNS", "1")  # as in Docker without CAP_SYS_ADMIN
    got, isolation, received = relay(tmp_path)
    assert isolation["network"] == "seccomp", isolation
    assert received == [], f"the listener received {received}"
    assert got["v4"] == got["v6"] == got["wide"] == 13, got  # EACCES
    assert got["unix"] is True, "Unix sockets (multiprocessing) still work"
    assert got["ptrace"] == 1, got  # EPERM


def test_with_neither_the_sandbox_says_the_network_is_open(tmp_path, monkeypatch):
    """The attribute staff are told from: the same relay reaches the listener (this test can fail)."""
    monkeypatch.setenv("AUTOGRADER_SANDBOX_NO_NETNS", "1")
    monkeypatch.setenv("AUTOGRADER_SANDBOX_NO_SECCOMP", "1")
    got, isolation, received = relay(tmp_path)
    assert isolation["network"] == "open" and isolation["seccomp"].startswith("none")
    assert got["v4"] == "reached" and b"hidden inputs" in received


# -- neighbours ------------------------------------------------------------------------------------
SNOOP = """
    import glob, os
    def snoop(secret_word):
        found, tried = [], 0
        paths = glob.glob("/tmp/ag-sandbox-*/submission/*.py") + glob.glob("/tmp/ag-sandbox-*/home/*")
        paths += [f"/tmp/{d}/submission/secret.py" for d in os.listdir("/tmp") if d.startswith("ag-sandbox-")]
        for pid in filter(str.isdigit, os.listdir("/proc")):
            paths += [f"/proc/{pid}/cwd/secret.py", f"/proc/{pid}/root/tmp", f"/proc/{pid}/environ"]
        for path in paths:
            tried += 1
            try:
                with open(path, "rb") as f:
                    if secret_word.encode() in f.read():
                        found.append(path)
            except OSError:
                pass
        return {"found": found, "tried": tried}
"""


def test_a_neighbouring_grade_cannot_read_the_other_submission(tmp_path):
    """Two grades at once (a regrade): each sandbox runs as its own uid, and the copies it makes
    (workdir, lib/, submission/, home/) are closed to the other's uid."""
    other = uids.claim()  # the uid a second grading process would claim
    try:
        a_dir, b_dir = tmp_path / "a", tmp_path / "b"
        a_dir.mkdir()
        b_dir.mkdir()
        word = f"SECRET-{os.getpid()}-{id(tmp_path)}"
        (a_dir / "secret.py").write_text(f"WORD = {word!r}\n")
        with sandbox_for(a_dir, "import secret\ndef hold():\n    return secret.WORD[:3]\n") as a, \
                sandbox_for(b_dir, SNOOP, user=other[:3]) as b:
            assert a.user[1] != b.user[1]
            assert call(a, "hold") == "SEC"  # a's worker is alive
            with open(os.path.join(a.workdir, "home", "note"), "w") as f:  # what a's code would keep there
                f.write(word)
            got = call(b, "snoop", word)
            assert got["tried"] > 10 and got["found"] == [], got["found"]
    finally:
        os.close(other[3])


# -- uid locks -------------------------------------------------------------------------------------
def test_planted_files_at_the_old_lock_paths_change_nothing():
    """The old locks lived in the world-writable /tmp, where anyone could plant a folder or a
    link at every lock path (then no uid could be claimed and honest work scored 0)."""
    planted = []
    try:
        for i, (_, uid, _) in enumerate(uids._candidates()):
            path = f"/tmp/ag-sandbox-uid-{uid}.lock"
            if os.path.lexists(path):
                continue
            if i % 3 == 0:
                os.mkdir(path)
            elif i % 3 == 1:
                os.symlink("/etc/passwd", path)
            else:
                with open(path, "w") as f:
                    f.write("squatted")
                os.chown(path, 64263, 64263)
            planted.append(path)
        assert planted
        env = {k: v for k, v in os.environ.items() if k != "AUTOGRADER_SANDBOX_USER"}
        script = ("from autograder.sandbox import Sandbox; import sys; "
                  "sb = Sandbox(sys.argv[1]); print(sb.user[1], sb.call('ping')); sb.close()")
        sub = os.path.join(REPO, "reference")
        proc = subprocess.run([sys.executable, "-c", script, sub], cwd=REPO, env=env, capture_output=True, text=True,
                              timeout=120)
        assert proc.returncode == 0, proc.stderr[-2000:]
        assert proc.stdout.split()[-1] == "pong"
    finally:
        for path in planted:
            with contextlib.suppress(FileNotFoundError):
                if os.path.isdir(path) and not os.path.islink(path):
                    os.rmdir(path)
                else:
                    os.unlink(path)


def test_a_squatted_path_in_the_lock_folder_is_cleared():
    folder = uids.lock_dir()
    st = os.stat(folder)
    assert st.st_uid == 0 and st.st_mode & 0o777 == 0o700 and not folder.startswith("/tmp")
    path = os.path.join(folder, "uid-test-squat.lock")
    for plant in (lambda: os.mkdir(path), lambda: os.symlink("/etc/passwd", path)):
        plant()
        fd = uids._open_lock(path)
        try:
            assert fd is not None and os.path.isfile(path) and not os.path.islink(path)
        finally:
            os.close(fd)
            os.unlink(path)
    assert open("/etc/passwd").read().startswith("root:"), "the link's target is untouched"
