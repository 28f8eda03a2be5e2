"""A call's time limit counts CPU seconds of all the sandbox's processes (the worker, its
threads, its children, ended and reaped ones included), with wall time as a backstop: a busy
machine or half a vCPU does not cut off correct code, and hiding work in a child does not
escape the limit. Checked with the kernel's accounting (a cpuacct cgroup) and without it
(/proc, as in Docker)."""
import os
import time

import pytest

from autograder.sandbox import StudentError, runner
from conftest import call, sandbox_for

MODES = ["cgroup", "proc"]

SOURCE = """
    import os, time
    def spin(seconds):
        end = time.process_time() + seconds
        while time.process_time() < end:
            pass
    def sleeper(seconds):
        time.sleep(seconds)
        return "woke"
    def child_spins():
        pid = os.fork()
        if pid == 0:
            spin(60)
            os._exit(0)
        os.waitpid(pid, 0)
    def reaped_child_then_sleep(seconds):
        pid = os.fork()
        if pid == 0:
            spin(seconds)
            os._exit(0)
        os.waitpid(pid, 0)  # its CPU time is now the worker's cutime
        time.sleep(30)
    def ok():
        return 1
"""


@pytest.fixture(params=MODES)
def sb(request, tmp_path, monkeypatch):
    if request.param == "proc":
        monkeypatch.setenv("AUTOGRADER_SANDBOX_NO_CGROUP", "1")
    with sandbox_for(tmp_path, SOURCE) as sandbox:
        sandbox.call("has", module="student", names=["ok"])
        if os.geteuid() == 0:
            assert sandbox.isolation["cpu_time"] == ("cgroup" if request.param == "cgroup" else "/proc")
        yield sandbox


def test_waiting_is_not_charged_as_cpu_time(sb):
    """2.5 s of sleep under a 1 s CPU limit: finishes (the old wall limit would have stopped it)."""
    assert call(sb, "sleeper", 2.5, timeout=1.0) == "woke"


def test_cpu_time_of_a_child_counts(sb):
    start = time.monotonic()
    with pytest.raises(StudentError) as e:
        call(sb, "child_spins", timeout=1.0)
    assert e.value.kind == "timeout" and "of CPU time" in e.value.message
    assert time.monotonic() - start < runner.WALL_FACTOR * 1.0 + runner.WALL_SLACK - 1, "stopped by CPU, not wall"
    assert call(sb, "ok") == 1


def test_cpu_time_of_a_reaped_child_counts(sb):
    """The child burns 1.5 s and is reaped; the worker then sleeps: the child's time still counts."""
    with pytest.raises(StudentError) as e:
        call(sb, "reaped_child_then_sleep", 1.5, timeout=1.0)
    assert e.value.kind == "timeout" and "of CPU time" in e.value.message, e.value.message


def test_the_wall_clock_backstop_stops_code_that_only_waits(sb):
    start = time.monotonic()
    with pytest.raises(StudentError) as e:
        call(sb, "sleeper", 60, timeout=0.5, wall=1.5)
    assert e.value.kind == "timeout" and "within 1.5 s" in e.value.message and "waiting" in e.value.message
    assert 1.4 < time.monotonic() - start < 5
