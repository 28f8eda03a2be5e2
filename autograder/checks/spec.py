"""How a graded check is declared: once, with its number, contract name, points and visibility.

A property check is a test method decorated with ``@check(...)``; a plain value check is one
``Value(...)`` row in its class's ``values`` list (each of its cases compared with the
reference's recorded output). Both carry the same fields; the part (``1.x`` is Part A, ``2.x``
Part B), the tags (the part, then the contract names) and the test's name are derived here and
applied through gradescope-utils' own decorators, which its JSON runner reads.
"""
import re
import unittest
from dataclasses import dataclass

from gradescope_utils.autograder_utils import decorators as gs

from ..results.model import number_key  # noqa: F401 - checks/base.py sorts with it

PARTS = {"1": "part-a", "2": "part-b"}
VISIBLE = "visible"  # shown before grades are published; every other visibility is hidden until then


@dataclass(frozen=True)
class Check:
    number: str            # "1.6.3": part . concept . test
    name: str              # the contract name it grades (its first tag after the part)
    points: float
    title: str             # what the student reads: "softmax: values match the reference"
    visibility: str = VISIBLE
    also: tuple = ()       # further contract names it exercises
    cases: tuple = ()      # a value check's cases (recorded outputs of the reference)
    tol: tuple = ()        # a value check's tolerance overrides, (("rtol", 1e-4), ...)
    public: bool = False   # also one of the handout's public tests (a visible value check's cases)

    @property
    def part(self):
        return PARTS[self.number.split(".")[0]]

    @property
    def tags(self):
        return (self.part, self.name, *self.also)

    @property
    def hidden(self):
        return self.visibility != VISIBLE


def Value(number, name, points, title, *cases, visibility=VISIBLE, also=(), public=False, **tol):
    """A plain value check: ``Value("1.1.3", "softmax", 1, "softmax: values", "softmax.rows", ...)``;
    ``public=True`` also ships its cases with the reference's outputs as a public test of the handout."""
    if public and visibility != VISIBLE:
        raise ValueError(f"{number}: a public check must be visible (hidden tests' inputs stay hidden)")
    return Check(number, name, points, title, visibility, tuple(also), tuple(cases), tuple(sorted(tol.items())),
                 public)


def apply(spec, fn):
    """``fn`` carrying ``spec``'s Gradescope fields (through gradescope-utils) and its title."""
    fn.__doc__ = spec.title
    fn = gs.weight(spec.points)(gs.number(spec.number)(gs.visibility(spec.visibility)(gs.tags(*spec.tags)(fn))))
    fn.check = spec
    return fn


def check(number, name, points, title, visibility=VISIBLE, also=()):
    """Declare a property check: ``@check("1.1.1", "softmax", 1, "softmax: rows sum to 1")``."""
    spec = Check(number, name, points, title, visibility, tuple(also))
    return lambda fn: apply(spec, fn)


def slug(text):
    return re.sub(r"[^a-z0-9]+", "_", text.lower()).strip("_")[:60]


class Declared(unittest.TestCase):
    """A test class whose ``values`` rows become test methods (``run_value`` runs one)."""

    values = ()

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        for spec in cls.__dict__.get("values", ()):
            def test(self, spec=spec):
                self.run_value(spec)
            setattr(cls, f"test_{spec.number.replace('.', '_')}_{slug(spec.title.split(':')[-1])}", apply(spec, test))

    def run_value(self, spec):
        raise NotImplementedError(f"{type(self).__name__} declares value rows but cannot run them")


def spec_of(test):
    """The ``Check`` of a collected test (a unittest.TestCase instance)."""
    return getattr(getattr(test, test._testMethodName), "check", None)
