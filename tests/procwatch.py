"""Peak memory of a process tree while a test runs: ``TreeWatch`` of the grader's own /proc
reader (autograder/sandbox/procs.py: the one scanner of the project), kept importable here.

    with TreeWatch(proc.pid, uid=sandbox_uid) as watch:
        proc.wait(timeout=240)
    watch.peak_bytes   # the largest sum of resident memory seen at one poll

The tree is the root process and every descendant (the grade, the loader's child, the sandbox
workers, which the grade adopts as a subreaper), plus every process of ``uid`` (the sandbox
user: a worker that double-forked away still counts). With ``pss``, each process counts its
proportional share of pages shared with others (forks), as a container's accounting does.
"""
from autograder.sandbox.procs import TreeWatch

__all__ = ["TreeWatch"]
