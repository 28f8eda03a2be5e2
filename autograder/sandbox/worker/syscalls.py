"""The seccomp filter the worker installs on itself before any student code runs (it holds for
every thread and child the student starts, and no process can remove it).

Denied: sockets of every family but Unix and netlink (so no IPv4, IPv6, packet or vsock
connection, even where no network namespace could be made, as in Docker's default
capabilities), ``ptrace`` and ``process_vm_readv``/``writev`` (no reading another process's
memory), and io_uring (which could open sockets without the ``socket`` system call). Other
architectures' system calls (i386's ``int 0x80``) kill the process: libseccomp's default.

Built with libseccomp, through its own Python bindings (``seccomp``, Debian/Ubuntu's
``python3-seccomp``) or ``pyseccomp`` (the same API over the same library, from PyPI).
"""
import errno

AF_UNIX, AF_NETLINK, AF_MAX = 1, 16, 64
DENIED = ("ptrace", "process_vm_readv", "process_vm_writev")
NOT_THERE = ("io_uring_setup", "io_uring_enter", "io_uring_register")  # ENOSYS: libraries fall back


def _bindings():
    reasons = []
    for name in ("seccomp", "pyseccomp"):
        try:
            return __import__(name), reasons
        except Exception as e:  # noqa: BLE001 - a missing library raises RuntimeError or OSError too
            reasons.append(f"{name}: {type(e).__name__}: {e}")
    return None, reasons


def install():
    """Install the filter; {"by": module name, "denied": [...]} or {"error": why not}."""
    lib, reasons = _bindings()
    if lib is None:
        return {"error": "no libseccomp bindings (" + "; ".join(reasons) + ")"}
    try:
        f = lib.SyscallFilter(lib.ALLOW)
        for family in range(AF_MAX):
            if family not in (AF_UNIX, AF_NETLINK):  # the kernel reads an int: compare the low 32 bits
                f.add_rule(lib.ERRNO(errno.EACCES), "socket", lib.Arg(0, lib.MASKED_EQ, 0xFFFFFFFF, family))
        denied = ["socket (all but AF_UNIX, AF_NETLINK)"]
        for name, code in [(n, errno.EPERM) for n in DENIED] + [(n, errno.ENOSYS) for n in NOT_THERE]:
            try:
                f.add_rule(lib.ERRNO(code), name)
                denied.append(name)
            except Exception:  # noqa: BLE001 - a system call this kernel or libseccomp does not know
                pass
        f.load()
    except Exception as e:  # noqa: BLE001 - whatever libseccomp refuses, the parent is told
        return {"error": f"{lib.__name__}: {type(e).__name__}: {e}"}
    return {"by": lib.__name__, "denied": denied}
