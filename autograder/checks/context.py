"""Everything one grade shares: the staged submission, one sandbox per part, the expected
outputs, the time budget, the leaderboard."""
import json
import os
import time

import numpy as np

from ..sandbox import Sandbox, StudentError

DATA_DIR = os.path.join(os.path.dirname(os.path.dirname(__file__)), "data")
FAILED_BEFORE = ("timeout", "memory", "crashed", "exit", "protocol", "import")
IMPORT_TIMEOUT = 60.0  # importing torch takes seconds on half a vCPU; the student's module runs too


class GradingContext:
    def __init__(self, submission, *, data_dir=DATA_DIR, time_budget=420.0, sandbox_options=None):
        self.submission = submission
        self.data_dir = data_dir
        self.deadline = time.monotonic() + time_budget
        self.sandbox_options = dict(sandbox_options or {})
        self.leaderboard = []
        self._sandboxes = {}
        self._imported = set()  # (part, module) whose import was tried in that part's sandbox
        self._failed = {}       # call key -> why later calls are not made again
        self._data = {}

    # -- student code ------------------------------------------------------------------------
    def sandbox(self, part):
        if part not in self._sandboxes:
            for other in list(self._sandboxes):   # one student process at a time keeps memory low
                self._sandboxes.pop(other).close()
            self._sandboxes[part] = Sandbox(self.submission.staged, **self.sandbox_options)
        return self._sandboxes[part]

    def _run(self, part, key, op, timeout, **args):
        """One worker op; a failure that would only repeat (a hang, a crash, a failed import) is
        remembered under ``key`` so the same call is not made again."""
        if key in self._failed:
            raise StudentError("skipped", self._failed[key])
        left = self.deadline - time.monotonic()
        if left <= 0:
            raise StudentError("budget", "not run: the submission used up the grading time budget earlier "
                                         "(see the tests that timed out)")
        sandbox = self.sandbox(part)
        wanted = getattr(sandbox, "timeout", 30.0) if timeout is None else timeout
        try:
            return sandbox.call(op, timeout=min(wanted, left), **args)
        except StudentError as e:
            if e.kind == "timeout" and left < wanted:
                raise StudentError("budget", f"stopped after {left:.0f} s: the submission used up the grading time "
                                             "budget (see the tests that timed out)", output=e.output) from None
            if e.kind in FAILED_BEFORE:
                what = "importing it" if key[0] == "import" else f"`{args.get('name') or op}`"
                self._failed[key] = e.message if e.kind == "import" else \
                    f"not run again: {what} failed in an earlier test ({e.message})"
            raise

    def call(self, part, op, *, module, timeout=None, key=None, **args):
        """Run worker op ``op`` for a test of ``part`` that needs the student's ``module``.
        The module is imported first, on its own, so a hang, an exit or a crash at import is
        reported once, as such, and fails every test of that module without being re-run."""
        if not self.submission.found.get(module):
            raise StudentError("missing", self.submission.missing_message(module))
        if (part, module) not in self._imported:
            self._imported.add((part, module))
            try:
                self._run(part, ("import", module), "has", IMPORT_TIMEOUT, module=module, names=[])
            except StudentError as e:
                if e.kind == "budget":
                    raise
                self._failed[("import", module)] = self._import_message(module, e)
        if ("import", module) in self._failed:
            raise StudentError("import", self._failed[("import", module)])
        return self._run(part, key or (op, module, args.get("name")), op, timeout, module=module, **args)

    @staticmethod
    def _import_message(module, error):
        if error.kind == "import":
            return str(error)
        return f"{module}.py could not be imported: while importing, {str(error).replace('your code', 'it', 1)}"

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
