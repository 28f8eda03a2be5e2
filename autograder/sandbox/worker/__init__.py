"""Code that runs inside the student's process, and nothing else.

This package is copied into the sandbox and imported there as ``_sandbox_worker``; it may
import only the standard library, NumPy, the seccomp bindings (``syscalls.py``, before any
student code) and, in ``ops_part_b`` and ``training``, torch; never the rest of the
autograder. The student's module can replace anything here, so nothing it computes is
trusted: the parent judges only raw outputs of the student's own functions, for inputs and
weights it chose.
"""
