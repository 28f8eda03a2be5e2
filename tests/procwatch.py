"""Peak memory of a process tree while a test runs, sampled by the grader's own /proc reader
(autograder/sandbox/procs.py: the one scanner of the project).

    with TreeWatch(proc.pid, uid=sandbox_uid) as watch:
        proc.wait(timeout=240)
    watch.peak_bytes   # the largest sum of resident memory seen at one poll

The tree is the root process and every descendant (the grade, the loader's child, the sandbox
workers, which the grade adopts as a subreaper), plus every process of ``uid`` (the sandbox
user: a worker that double-forked away still counts). With ``pss``, each process counts its
proportional share of pages shared with others (forks), as a container's accounting does.
"""
import os
import threading

from autograder.sandbox import procs


class TreeWatch:
    def __init__(self, root=None, uid=None, interval=0.02, pss=False):
        self.root, self.uid, self.interval, self.pss = root or os.getpid(), uid, interval, pss
        self.peak_bytes, self.polls = 0, 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self):
        while not self._stop.wait(self.interval):
            self.peak_bytes = max(self.peak_bytes, procs.tree_memory(self.root, self.uid, self.pss))
            self.polls += 1

    @property
    def peak(self):
        return self.peak_bytes

    def __enter__(self):
        self._thread.start()
        return self

    def __exit__(self, *exc):
        self._stop.set()
        self._thread.join()
