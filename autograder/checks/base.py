"""The base class of every graded test, and how tests are found and described."""
import importlib
import pkgutil
import unittest

from ..sandbox import StudentError

PART_TAGS = ("part-a", "part-b")


class GradedTest(unittest.TestCase):
    """A graded test. ``self.ctx`` is set by the grading runner on each instance.

    Subclasses set ``part`` and ``module`` and decorate each test method with
    gradescope-utils' ``weight``, ``number``, ``visibility`` and ``tags``.
    """

    part = "part-a"
    module = "attention"
    ctx = None
    maxDiff = None

    def call_student(self, name, *args, timeout=None, **kwargs):
        """``module.name(*args, **kwargs)`` in the sandbox; a student failure fails the test."""
        try:
            return self.ctx.call(self.part, "call", module=self.module, timeout=timeout, name=name,
                                 args=list(args), kwargs=kwargs)["value"]
        except StudentError as e:
            self.fail(f"calling `{name}` failed: {e}")

    def run_op(self, op, *, timeout=None, key=None, **args):
        """Worker op ``op`` (Part B's model ops); a student failure fails the test."""
        try:
            return self.ctx.call(self.part, op, module=self.module, timeout=timeout, key=key, **args)
        except StudentError as e:
            self.fail(f"{e}")


def _iter_tests(suite):
    for item in suite:
        if isinstance(item, unittest.TestSuite):
            yield from _iter_tests(item)
        else:
            yield item


def test_metadata(test):
    method = getattr(test, test._testMethodName)
    return {
        "name": test.shortDescription() or test.id(),
        "max_score": float(getattr(method, "__weight__", 0.0)),
        "number": str(getattr(method, "__number__", "")),
        "tags": list(getattr(method, "__tags__", ())),
        "visibility": getattr(method, "__visibility__", "visible"),
    }


def collect(select=None):
    """Every graded test of both parts, in number order, keeping those carrying a selected tag."""
    tests = []
    loader = unittest.TestLoader()
    for part in ("part_a", "part_b"):
        package = importlib.import_module(f"{__package__}.{part}")
        for info in pkgutil.iter_modules(package.__path__):
            module = importlib.import_module(f"{package.__name__}.{info.name}")
            tests += list(_iter_tests(loader.loadTestsFromModule(module)))
    for t in tests:
        meta = test_metadata(t)
        if not meta["tags"] or meta["tags"][0] not in PART_TAGS:
            raise AssertionError(f"{t.id()} must be tagged with part-a or part-b first, has {meta['tags']}")
    if select:
        wanted = set(select)
        tests = [t for t in tests if wanted & set(test_metadata(t)["tags"])]
    return sorted(tests, key=lambda t: number_key(test_metadata(t)["number"]))


def number_key(number):
    """Numbers are ``part.group.test`` ("1.3.2"); they sort numerically."""
    return tuple(int(p) if p.isdigit() else 10**6 for p in number.split(".")) if number else (10**6,)
