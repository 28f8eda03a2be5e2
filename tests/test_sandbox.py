"""The sandbox keeps its promises: student code runs in another process, as the sandbox user
when we are root, within its limits (time, memory, processes, output), and leaves nothing
behind; only data crosses the pipe. Runs as root (as CI does) and, where it matters, also as
an unprivileged user, the way a student's laptop runs it."""
import json
import os
import shutil
import subprocess
import sys
import tempfile
import textwrap
import time

import numpy as np
import pytest

from attacks import hostile_wire, kit
from autograder.sandbox import StudentError, limits
from autograder.sandbox.runner import OUTPUT_CAP
from autograder.sandbox.worker import wire
from conftest import call, sandbox_for

ROOT = limits.running_as_root()
as_root = pytest.mark.skipif(not ROOT, reason="needs root (CI and Gradescope run as root)")
MB = 2**20


@pytest.fixture
def sandbox(tmp_path):
    """sandbox(source, **options): a Sandbox over a submission whose student.py is ``source``."""
    made = []

    def make(source, **options):
        made.append(sandbox_for(tmp_path, source, **options))
        return made[-1]
    yield make
    for sb in made:
        sb.close()


# -- who the student's code runs as --------------------------------------------------------------
def test_student_code_runs_unprivileged_in_its_own_session(sandbox):
    sb = sandbox("""
        import os, resource
        def who():
            status = dict(l.split(":", 1) for l in open("/proc/self/status"))
            return {"uid": os.getuid(), "euid": os.geteuid(), "groups": os.getgroups(), "sid": os.getsid(0),
                    "pid": os.getpid(), "no_new_privs": int(status["NoNewPrivs"]),
                    "oom": int(open("/proc/self/oom_score_adj").read()),
                    "as": resource.getrlimit(resource.RLIMIT_AS)[0],
                    "nproc": resource.getrlimit(resource.RLIMIT_NPROC)[0], "cwd_writable": os.access(".", os.W_OK),
                    "lib_writable": os.access(__import__("_sandbox_worker").__path__[0], os.W_OK),
                    "staged": [[p, os.stat(p).st_gid, os.stat(p).st_mode & 0o777]
                               for p in ("..", ".", "student.py", __import__("_sandbox_worker").__file__)]}
    """)
    who = call(sb, "who")
    assert who["sid"] == who["pid"], "the worker leads its own session"
    assert who["no_new_privs"] == 1 and who["oom"] == 1000
    assert who["as"] == sb.address_space
    if ROOT:
        assert who["uid"] == who["euid"] == sb.user[1] != 0 and who["groups"] == []
        assert who["nproc"] == sb.max_processes
        assert not who["cwd_writable"] and not who["lib_writable"], "the copies of code are read-only for the student"
        for path, gid, mode in who["staged"]:  # another grade's sandbox user (another uid and gid) reads nothing
            assert gid == sb.user[2] and mode & 0o007 == 0, (path, gid, oct(mode))
    else:
        assert who["uid"] == os.getuid()


# -- time ------------------------------------------------------------------------------------------
def test_a_hang_times_out_and_the_next_call_gets_a_fresh_worker(sandbox):
    sb = sandbox("""
        def hang():
            while True:
                try:
                    while True: pass
                except BaseException:
                    pass
        def ok():
            return 42
    """)
    start = time.monotonic()
    with pytest.raises(StudentError) as e:
        call(sb, "hang", timeout=1.5)
    assert e.value.kind == "timeout" and "did not finish within 1.5 s of CPU time" in str(e.value)
    assert time.monotonic() - start < 5
    assert call(sb, "ok") == 42


# -- memory ----------------------------------------------------------------------------------------
BOMBS = {
    "numpy, fast (800 MB at once)": "import numpy as np\ndef bomb():\n    return np.ones(800 * 2**20 // 8).sum()\n",
    "numpy, too big for the address space": "import numpy as np\ndef bomb():\n    return np.ones(2**29).sum()\n",
    "numpy, slow (20 MB at a time)": ("import numpy as np, time\ndef bomb():\n    keep = []\n    while True:\n"
                                      "        keep.append(np.ones(20 * 2**20 // 8)); time.sleep(0.02)\n"),
    "torch, fast (a 1.2 GB tensor)": "import torch\ndef bomb():\n    return float(torch.ones(300 * 2**20).sum())\n",
    "torch, slow (20 MB at a time)": ("import torch, time\ndef bomb():\n    keep = []\n    while True:\n"
                                      "        keep.append(torch.ones(5 * 2**20)); time.sleep(0.02)\n"),
    "numpy, in forked children": ("import numpy as np, os, time\ndef bomb():\n    for _ in range(3):\n"
                                  "        if os.fork() == 0:\n"
                                  "            keep = np.ones(300 * 2**20 // 8); time.sleep(30)\n"
                                  "    time.sleep(30)\n"),
}


@pytest.mark.parametrize("bomb", BOMBS)
def test_a_memory_bomb_fails_its_call_and_everything_stays_under_768_mb(sandbox, bomb):
    sb = sandbox(BOMBS[bomb] + "def ok():\n    return 1\n")
    with kit.PeakMemory(sb.user[1] if sb.user else -1) as peak:
        with pytest.raises(StudentError) as e:
            call(sb, "bomb", timeout=30)
        time.sleep(0.1)
    assert "memory" in str(e.value).lower(), str(e.value)
    assert peak.peak < 768 * MB, f"all processes together reached {peak.peak / MB:.0f} MB"
    assert call(sb, "ok") == 1
    print(f"{bomb}: {e.value.kind}, peak of all processes {peak.peak / MB:.0f} MB")


# -- processes -------------------------------------------------------------------------------------
@as_root
def test_a_fork_bomb_is_contained_and_leaves_nothing_behind(sandbox):
    sb = sandbox("""
        import os
        def bomb():
            while True:
                try:
                    os.fork()
                except OSError:
                    pass
        def ok():
            return 1
    """)
    with kit.PeakMemory(sb.user[1], period=0.05, pss=True) as peak:  # forks share their pages
        with pytest.raises(StudentError):
            call(sb, "bomb", timeout=5)
    assert peak.peak < 768 * MB
    assert kit.user_processes(sb.user[1]) == []
    assert call(sb, "ok") == 1


ESCAPE = """
    import os, sys, time
    def escape(marker):
        if os.fork() == 0:
            os.setsid()
            if os.fork() == 0:
                os.execv(sys.executable, [sys.executable, "-c", "import time; time.sleep(60)", marker])
            os._exit(0)
        time.sleep(0.5)
        return 1
"""


def test_processes_that_escaped_with_setsid_and_a_double_fork_are_killed_on_close(sandbox):
    marker = f"ag-test-escapee-{os.getpid()}-{time.time()}"
    sb = sandbox(ESCAPE)
    assert call(sb, "escape", marker) == 1
    assert kit.processes_with(marker), "the escapee should be running before close"
    sb.close()
    assert kit.processes_with(marker) == []
    if ROOT:
        assert kit.user_processes(sb.user[1]) == []


@as_root
def test_without_root_the_same_code_runs_without_dropping_privileges_and_still_kills_escapees(tmp_path):
    """A student's laptop: the grader itself runs unprivileged; subreaper + descendants replace kill-by-uid."""
    user = limits.sandbox_user()
    work = tempfile.mkdtemp(prefix="ag-test-nonroot-")
    try:
        shutil.copytree(os.path.join(kit.REPO, "autograder", "sandbox"), os.path.join(work, "agsb", "sandbox"))
        open(os.path.join(work, "agsb", "__init__.py"), "w").close()
        os.makedirs(os.path.join(work, "sub"))
        with open(os.path.join(work, "sub", "student.py"), "w") as f:
            f.write(textwrap.dedent(ESCAPE) + "def uid():\n    return os.getuid()\n")
        marker = f"ag-test-nonroot-escapee-{os.getpid()}"
        script = textwrap.dedent(f"""
            import os, sys, json
            sys.path.insert(0, {work!r})
            from agsb.sandbox import Sandbox
            sb = Sandbox({os.path.join(work, 'sub')!r})
            uid = sb.call("call", module="student", name="uid")["value"]
            sb.call("call", module="student", name="escape", args=[{marker!r}])
            def cmdline(p):
                try:
                    return open(f"/proc/{{p}}/cmdline", "rb").read()
                except OSError:
                    return b""
            alive = any({marker!r}.encode() in cmdline(p) for p in os.listdir("/proc") if p.isdigit())
            sb.close()
            print(json.dumps({{"me": os.getuid(), "student": uid, "alive_before_close": alive, "user": sb.user}}))
        """)
        subprocess.run(["chmod", "-R", "a+rX", work], check=True)
        proc = subprocess.run([sys.executable, "-I", "-c", script], capture_output=True, text=True, timeout=60,
                              preexec_fn=lambda: (os.setgid(user[2]), os.setuid(user[1])), cwd=work,
                              env={"PATH": "/usr/bin:/bin", "HOME": work})
        assert proc.returncode == 0, proc.stderr
        got = json.loads(proc.stdout.strip().splitlines()[-1])
        assert got["me"] == got["student"] == user[1] and got["user"] is None
        assert got["alive_before_close"] and kit.processes_with(marker) == []
    finally:
        shutil.rmtree(work, ignore_errors=True)


@as_root
def test_kill_all_spares_the_grader_its_ancestors_and_root_processes(sandbox):
    sb = sandbox(ESCAPE)
    marker = f"ag-test-kill-all-{os.getpid()}"
    call(sb, "escape", marker)
    rooted = subprocess.Popen(["sleep", "30"])  # a root process, our child
    try:
        table = limits.proc_table()
        assert not {os.getpid(), os.getppid(), 1, rooted.pid} & set(limits.targets(sb.user, [], table))
        assert not {os.getpid(), os.getppid(), 1} & set(limits.targets(None, [os.getpid(), os.getppid(), 1], table))
        limits.kill_all(sb.user)
        assert kit.processes_with(marker) == [] and rooted.poll() is None
    finally:
        rooted.kill()
        rooted.wait()


# -- output ----------------------------------------------------------------------------------------
def test_printed_output_is_captured_and_truncated(sandbox, capfd):
    sb = sandbox("""
        import sys
        def noisy():
            for i in range(200_000):
                print("All tests passed! score 100/100", i)
                print("ERROR", i, file=sys.stderr)
            raise ValueError("after the noise")
    """)
    with pytest.raises(StudentError) as e:
        call(sb, "noisy", timeout=60)
    assert "ValueError: after the noise" in str(e.value) and len(e.value.output) <= OUTPUT_CAP
    assert "All tests passed" not in capfd.readouterr().out, "the student's output never reaches ours"


# -- only data crosses -----------------------------------------------------------------------------
class Weird:
    pass


@pytest.mark.parametrize("value, what", [
    (np.array([1, "a", None], dtype=object), "dtype object"), (Weird(), "Weird"), (np.array(["ab"]), "dtype <U2"),
    (np.zeros(2, dtype=[("a", "f8")]), "only numeric"), ({1: 2}, "key of type int"), (lambda: 1, "function"),
    ({"__ndarray__": "a0"}, "reserved"),
])
def test_the_wire_refuses_anything_but_plain_data(value, what):
    with pytest.raises(wire.WireError, match=what):
        wire.dumps(value)


def test_subclasses_travel_as_plain_values():
    import collections
    import enum
    Pair = collections.namedtuple("Pair", "Z A")
    Level = enum.IntEnum("Level", "LOW HIGH")
    got = wire.loads(wire.dumps({"pair": Pair(np.eye(2), 1.5), "level": Level.HIGH}))
    assert type(got["level"]) is int and got["level"] == 2 and np.array_equal(got["pair"][0], np.eye(2))


def test_a_million_empty_objects_cost_the_parent_little_memory_and_time():
    """4 MB of JSON that json.loads would turn into 150 MB of dicts in 15 s: refused before parsing."""
    import struct
    import tracemalloc
    doc = b"[" + b",".join([b"{}"] * 1_000_000) + b"]"
    payload = struct.pack(">I", len(doc)) + doc + wire.dumps(None)[4 + len(b"null"):]
    tracemalloc.start()
    start = time.monotonic()
    with pytest.raises(wire.WireError, match="values"):
        wire.loads(payload)
    seconds, peak = time.monotonic() - start, tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    assert seconds < 1 and peak < 16 * MB, (seconds, peak / MB)
    with pytest.raises(wire.WireError, match="more than 100000 values"):  # the worker refuses to send one
        wire.dumps([{}] * 1_000_000, where="the value f returned")
    assert wire.loads(wire.dumps([{"a": 1.5}] * 40_000)) == [{"a": 1.5}] * 40_000  # big enough for real answers


def test_a_million_empty_objects_from_student_code_are_its_bad_output(sandbox):
    sb = sandbox("def many():\n    return [{} for _ in range(1_000_000)]\ndef ok():\n    return 1\n")
    with pytest.raises(StudentError) as e:
        call(sb, "many")
    assert e.value.kind == "bad_output" and "NumPy array" in e.value.message
    assert call(sb, "ok") == 1


@pytest.mark.parametrize("name", hostile_wire.PAYLOADS)
def test_the_parent_decodes_hostile_bytes_only_into_a_wire_error(name):
    start = time.monotonic()
    with pytest.raises(wire.WireError):
        wire.loads(hostile_wire.PAYLOADS[name])
    assert time.monotonic() - start < 2


# -- the grader's files --------------------------------------------------------------------------
@as_root
def test_protecting_the_grader_files_is_idempotent_and_keeps_the_environment_reachable(tmp_path):
    results = tempfile.mkdtemp(prefix="ag-test-results-")
    os.chmod(results, 0o755)
    try:
        out = os.path.join(results, "results.json")
        open(out, "w").close()
        package = os.path.join(kit.REPO, "autograder")
        limits.protect_grader_files(package, out)
        assert limits.protect_grader_files(package, out) == [], "a second run changes nothing"
        for name in ("reference", "autograder", "tests", ".git"):
            path = os.path.join(kit.REPO, name)
            if os.path.exists(path):
                assert os.stat(path).st_mode & 0o077 == 0 and os.stat(path).st_mode & 0o700 == 0o700, name
        assert os.stat(results).st_mode & 0o777 == 0o700
        assert limits.interpreter_reachable(sys.executable, limits.sandbox_user()[1])
        assert os.stat(tempfile.gettempdir()).st_mode & 0o1777 == 0o1777, "/tmp is never changed"
    finally:
        shutil.rmtree(results)


def test_protecting_the_grader_files_changes_nothing_when_not_root(monkeypatch, tmp_path):
    monkeypatch.setattr(limits, "running_as_root", lambda: False)
    assert limits.protect_grader_files(os.path.join(kit.REPO, "autograder"), str(tmp_path / "r.json")) == []
