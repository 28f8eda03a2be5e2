"""Code that runs inside the student's process, and nothing else.

This package is copied into the sandbox and imported there as ``_sandbox_worker``; it may
import only the standard library, NumPy and (in ``ops_part_b``) torch, never the rest of the
autograder. Whatever it computes is untrusted: the parent decides every verdict.
"""
