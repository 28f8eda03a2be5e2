"""The one list of the contract's names, their parts and their points, derived from the checks
as declared (``spec.py``): the catalogs' coverage test, the handout's points table and the
diagnoses' registry read it here, so the facts live in one place, the declarations."""
import functools

from .base import collect
from .spec import spec_of

MODULES = {"part-a": "attention", "part-b": "gpt"}  # the file each part is graded from


@functools.lru_cache(maxsize=None)
def points():
    """{part: {contract name: points of the checks that grade it first}}, in number order."""
    found = {part: {} for part in MODULES}
    for spec in checks():
        found[spec.part][spec.name] = found[spec.part].get(spec.name, 0) + spec.points
    return found


def names(part):
    """The contract names of ``part`` that some check grades (first or among its tags)."""
    found = {}
    for spec in checks():
        if spec.part == part:
            found.update(dict.fromkeys(spec.tags[1:]))
    return tuple(found)


@functools.lru_cache(maxsize=None)
def checks():
    """Every declared check (``spec.Check``), in number order."""
    return tuple(s for s in map(spec_of, collect()) if s is not None)
