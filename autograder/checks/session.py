"""One grade's access to the student's code: the one place a check's request reaches a sandbox.

* One worker per part at a time (memory stays low), each module imported first, on its own, so
  a hang, an exit or a crash at import is reported once and fails that module's tests only.
* Two phases: every test students can see before grades are published runs first; before the
  first hidden test, every sandbox of the visible phase is closed (every process of its uid
  killed), so code that received visible inputs never receives hidden ones.
* A failure that would only repeat (a hang, a crash, a failed import) is remembered, and the
  same call is not made again; the time budget of the whole grade is enforced here.
"""
import time

from ..sandbox import Sandbox, StudentError
from ..sandbox.runner import WALL_FACTOR, WALL_SLACK

REPEATS = ("timeout", "memory", "crashed", "exit", "protocol", "import")
IMPORT_TIMEOUT = 60.0  # CPU seconds: importing torch takes seconds on half a vCPU; the student's module runs too
PRELOAD = {"part-b": ("torch",)}  # imported before any student code: a failure there is the grader's


class Session:
    def __init__(self, submission, *, deadline, sandbox_options=None, sandbox=None):
        self.submission = submission
        self.sandbox_class = sandbox or Sandbox
        self.deadline = deadline
        self.sandbox_options = dict(sandbox_options or {})
        self.hidden = False      # the phase: False while visible tests run
        self.cache = {}          # per-grade results tests share (the layout, the training run)
        self.isolation = {}      # part -> what the sandbox could enforce (for staff)
        self.staff = []          # notes for staff only (a hidden entry of the results)
        self._sandboxes = {}
        self._imported = set()   # (phase, part, module) whose import was tried
        self._failed = {}        # call key -> why it is not made again

    # -- phases and sandboxes ------------------------------------------------------------------
    def enter(self, hidden):
        """Called before each test: the first hidden test closes every visible-phase sandbox."""
        if hidden and not self.hidden:
            self.close()
            self.hidden = True

    def _sandbox(self, part):
        if part not in self._sandboxes:
            self.close()  # one student process at a time keeps memory low
            options = dict(self.sandbox_options)
            options.setdefault("preload", PRELOAD.get(part, ()))
            self._sandboxes[part] = self.sandbox_class(self.submission.staged, **options)
        return self._sandboxes[part]

    def close(self):
        for part, sb in self._sandboxes.items():
            self.isolation[part] = dict(getattr(sb, "isolation", None) or {}) or self.isolation.get(part)
            sb.close()
        self._sandboxes.clear()

    # -- calls ---------------------------------------------------------------------------------
    def _run(self, part, key, op, timeout, args):
        if key in self._failed:
            raise StudentError("skipped", self._failed[key])
        left = self.deadline - time.monotonic()
        if left <= 0:
            raise StudentError("budget", "not run: the submission used up the grading time budget earlier "
                                         "(see the tests that timed out)")
        sandbox = self._sandbox(part)
        wanted = sandbox.timeout if timeout is None else timeout  # CPU seconds of the student's processes
        wall = min(WALL_FACTOR * wanted + WALL_SLACK, left)       # the backstop, never past the budget
        try:
            return sandbox.call(op, timeout=wanted, wall=wall, **args)
        except StudentError as e:
            if e.kind == "timeout" and wall >= left:
                raise StudentError("budget", f"stopped after {left:.0f} s: the submission used up the grading time "
                                             "budget (see the tests that timed out)", output=e.output) from None
            if e.kind in REPEATS:
                what = "importing it" if key[0] == "import" else f"`{args.get('name') or op}`"
                self._failed[key] = e.message if e.kind == "import" else \
                    f"not run again: {what} failed in an earlier test ({e.message})"
            raise

    def call(self, part, op, *, module, timeout=None, key=None, **args):
        """Worker op ``op`` for a test of ``part`` needing the student's ``module``; its value, or
        ``StudentError`` saying what went wrong in the student's code."""
        if not self.submission.found.get(module):
            raise StudentError("missing", self.submission.missing_message(module))
        if (self.hidden, part, module) not in self._imported:
            self._imported.add((self.hidden, part, module))
            try:
                self._run(part, ("import", module), "has", IMPORT_TIMEOUT, dict(module=module, names=[]))
            except StudentError as e:
                if e.kind == "budget":
                    raise
                self._failed[("import", module)] = _import_message(module, e)
        if ("import", module) in self._failed:
            raise StudentError("import", self._failed[("import", module)])
        return self._run(part, key or (op, module, args.get("name")), op, timeout, dict(args, module=module))


def _import_message(module, error):
    if error.kind == "import":
        return str(error)
    return f"{module}.py could not be imported: while importing, {str(error).replace('your code', 'it', 1)}"
