"""The base class of every graded test, and how the tests of both parts are found."""
import importlib
import pkgutil
import unittest

from ..sandbox import StudentError
from .spec import Declared, number_key, spec_of


class GradedTest(Declared):
    """A graded test. ``self.session`` (checks/session.py) is set on each instance by the grade."""

    part = "part-a"
    module = "attention"
    session = None
    maxDiff = None

    def setUp(self):
        spec = spec_of(self)
        self.session.enter(hidden=bool(spec and spec.hidden))

    def student(self, what, op="call", *, timeout=None, key=None, errors=False, **args):
        """The one way a check reaches the student's code: worker op ``op`` on ``args``; any failure
        of the student's code fails this test, the message starting with ``what`` was being done.
        With ``errors``, returns ``(value, None)`` or ``(None, the StudentError)`` instead."""
        try:
            value = self.session.call(self.part, op, module=self.module, timeout=timeout, key=key, **args)
        except StudentError as e:
            if errors:
                return None, e
            self.fail(f"{what}: {e}")
        return (value, None) if errors else value


def _tests_of(suite):
    for item in suite:
        if isinstance(item, unittest.TestSuite):
            yield from _tests_of(item)
        else:
            yield item


def board_of(test):
    """The leaderboard column a test sets (gradescope-utils' ``@leaderboard``), or None."""
    return getattr(getattr(test, test._testMethodName), "__leaderboard_column__", None)


def metadata(test):
    """A graded test's Gradescope fields (None for a leaderboard entry, which is not a test)."""
    spec = spec_of(test)
    if spec is None:
        return None
    return {"name": spec.title, "max_score": float(spec.points), "number": spec.number, "tags": list(spec.tags),
            "visibility": spec.visibility}


def _key(test):
    spec = spec_of(test)
    if spec is None:  # a leaderboard entry: after its part's visible tests
        return (False, number_key(getattr(getattr(test, test._testMethodName), "__number__", "")))
    return (spec.hidden, number_key(spec.number))


def collect(select=None):
    """Every graded test of both parts, and the leaderboard entries: the tests students can see
    first, then the hidden ones, each group in number order; with ``select``, only tests
    carrying one of those tags."""
    tests, loader = [], unittest.TestLoader()
    for part in ("part_a", "part_b"):
        package = importlib.import_module(f"{__package__}.{part}")
        for info in pkgutil.iter_modules(package.__path__):
            module = importlib.import_module(f"{package.__name__}.{info.name}")
            tests += [t for t in _tests_of(loader.loadTestsFromModule(module)) if spec_of(t) or board_of(t)]
    for t in tests:
        spec = spec_of(t)
        if spec and spec.part != t.part:
            raise AssertionError(f"{t.id()}: number {spec.number} is not one of {t.part}'s")
    if select:
        tests = [t for t in tests if set(select) & set(getattr(getattr(t, t._testMethodName), "__tags__", ()))]
    return sorted(tests, key=_key)
