"""Everything one grade shares: the staged submission, one sandbox per part, the expected
outputs, the time budget, the leaderboard."""
import json
import os
import time

import numpy as np

from ..sandbox import Sandbox, StudentError

DATA_DIR = os.path.join(os.path.dirname(os.path.dirname(__file__)), "data")
FAILED_BEFORE = ("timeout", "memory", "crashed", "exit", "protocol")


class GradingContext:
    def __init__(self, submission, *, data_dir=DATA_DIR, time_budget=420.0, sandbox_options=None):
        self.submission = submission
        self.data_dir = data_dir
        self.deadline = time.monotonic() + time_budget
        self.sandbox_options = dict(sandbox_options or {})
        self.leaderboard = []
        self._sandboxes = {}
        self._failed = {}      # call key -> why later calls are not made again
        self._data = {}

    # -- student code ------------------------------------------------------------------------
    def sandbox(self, part):
        if part not in self._sandboxes:
            for other in list(self._sandboxes):   # one student process at a time keeps memory low
                self._sandboxes.pop(other).close()
            self._sandboxes[part] = Sandbox(self.submission.staged, **self.sandbox_options)
        return self._sandboxes[part]

    def call(self, part, op, *, module, timeout=None, key=None, **args):
        """Run worker op ``op`` for a test of ``part`` that needs the student's ``module``."""
        if not self.submission.found.get(module):
            raise StudentError("missing", self.submission.missing_message(module))
        key = key or (op, module, args.get("name"))
        if key in self._failed:
            raise StudentError("skipped", self._failed[key])
        if time.monotonic() > self.deadline:
            raise StudentError("budget", "not run: the submission used up the grading time budget earlier "
                                         "(see the tests that timed out)")
        try:
            return self.sandbox(part).call(op, timeout=timeout, module=module, **args)
        except StudentError as e:
            if e.kind in FAILED_BEFORE:
                what = args.get("name") or op
                self._failed[key] = f"not run again: `{what}` failed in an earlier test ({e.message})"
            if e.kind == "import":
                self._failed[key] = e.message
            raise

    def close(self):
        for sb in self._sandboxes.values():
            sb.close()
        self._sandboxes.clear()

    # -- expected outputs ----------------------------------------------------------------------
    def expected(self, name):
        """The arrays of ``data/<name>.npz`` (recorded from the reference by ``make reference``)."""
        if name not in self._data:
            with np.load(os.path.join(self.data_dir, f"{name}.npz"), allow_pickle=False) as npz:
                self._data[name] = {k: npz[k] for k in npz.files}
        return self._data[name]

    def json(self, name):
        key = f"{name}.json"
        if key not in self._data:
            with open(os.path.join(self.data_dir, key)) as f:
                self._data[key] = json.load(f)
        return self._data[key]
