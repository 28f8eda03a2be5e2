"""Setting up the student's process between fork and exec: its session, cgroups, rlimits,
namespaces and identity. Only system calls run there (no imports, no locks): the parent has
threads. The seccomp filter is installed later, by the worker itself before any student code
(``worker/syscalls.py``), because building it needs libseccomp.
"""
import ctypes
import os
import resource

from . import uids

PR_SET_CHILD_SUBREAPER, PR_SET_NO_NEW_PRIVS = 36, 38
CLONE_NEWIPC, CLONE_NEWNET = 0x08000000, 0x40000000
_LIBC = ctypes.CDLL(None, use_errno=True)
# Resolved here, never between fork and exec. Linux only (like /proc); elsewhere they do nothing.
_PRCTL = getattr(_LIBC, "prctl", lambda *args: -1)
_UNSHARE = getattr(_LIBC, "unshare", lambda *args: -1)
_netns = {}


def become_subreaper():
    """Orphans of our children (setsid escapees included) are re-parented to us, so we can find them."""
    _PRCTL(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)


def network_namespace_possible():
    """Whether unshare(CLONE_NEWNET) works here (refused in Docker's default capabilities, so on
    Gradescope). Probed once per process in a child that does nothing else.
    ``AUTOGRADER_SANDBOX_NO_NETNS=1`` answers no (simulates such a host)."""
    if os.environ.get("AUTOGRADER_SANDBOX_NO_NETNS") == "1" or not hasattr(os, "fork"):
        return False
    if "ok" not in _netns:
        pid = os.fork()
        if pid == 0:
            os._exit(0 if _UNSHARE(CLONE_NEWNET | CLONE_NEWIPC) == 0 else 1)
        _, code = os.waitpid(pid, 0)
        _netns["ok"] = os.waitstatus_to_exitcode(code) == 0
    return _netns["ok"]


def child_setup(user, address_space, max_processes, cpu_seconds, file_bytes=64 * 2**20, cgroup_fds=(),
                namespaces=True):
    """The function that runs in the child between fork and exec.

    ``cgroup_fds``: open ``cgroup.procs`` files of the sandbox's cgroups; writing "0" moves
    this process (and so everything it starts) into them before it runs any code.
    """
    def setup():
        os.setsid()
        for fd in cgroup_fds:
            os.write(fd, b"0")
        try:
            with open("/proc/self/oom_score_adj", "w") as f:  # the kernel's OOM killer takes us first
                f.write("1000")
        except OSError:
            pass
        os.nice(5)                                          # the grader stays responsive to a busy child
        for limit, value in ((resource.RLIMIT_AS, address_space), (resource.RLIMIT_CORE, 0),
                             (resource.RLIMIT_FSIZE, file_bytes)):
            resource.setrlimit(limit, (value, value))
        resource.setrlimit(resource.RLIMIT_CPU, (cpu_seconds, cpu_seconds + 5))
        if user is not None:
            if namespaces:
                _UNSHARE(CLONE_NEWNET | CLONE_NEWIPC)        # no network, private SysV IPC
            resource.setrlimit(resource.RLIMIT_NPROC, (max_processes, max_processes))
            uids.become(user)
        _PRCTL(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0)             # setuid programs give it nothing; seccomp allowed
        os.umask(0o077)
    return setup
