"""The checks are declared once (autograder/checks/spec.py) and everything else reads the
declarations: these tests fail when they disagree with each other or with the reference."""
import re

import pytest

from autograder.checks import base, contract
from autograder.checks.part_a import base as part_a
from autograder.checks.spec import PARTS, VISIBLE, spec_of
from conftest import reference_public_names

TESTS = base.collect()
SPECS = contract.checks()


def test_numbers_are_unique_and_name_their_part():
    numbers = [s.number for s in SPECS]
    twice = sorted({n for n in numbers if numbers.count(n) > 1})
    assert not twice, f"numbers declared twice: {twice}"
    for spec in SPECS:
        assert re.fullmatch(r"[12]\.\d+\.\d+", spec.number), spec
        assert spec.tags[0] == PARTS[spec.number[0]] == spec.part
    for test in TESTS:
        spec = spec_of(test)
        if spec:
            assert spec.part == test.part, f"{test.id()} declares {spec.number}, a test of {spec.part}"


def test_gradescope_fields_are_the_declared_ones():
    for test in TESTS:
        spec, method = spec_of(test), getattr(test, test._testMethodName)
        if spec:
            assert (method.__weight__, method.__number__, method.__visibility__, tuple(method.__tags__)) == \
                (spec.points, spec.number, spec.visibility, spec.tags)
            assert test.shortDescription() == spec.title


def test_the_contract_names_are_the_references_public_names():
    assert set(contract.names("part-a")) == reference_public_names("attention.py")
    assert set(contract.names("part-b")) <= reference_public_names("gpt.py") | {"GPTConfig"}
    assert set(contract.names("part-b")) >= reference_public_names("gpt.py") - {"Block", "MLP", "CausalSelfAttention"}


def test_each_part_has_its_points_and_a_visible_share():
    for part, names in contract.points().items():
        total = sum(names.values())
        visible = sum(s.points for s in SPECS if s.part == part and s.visibility == VISIBLE)
        assert total > 0 and 0.35 * total <= visible <= 0.8 * total, (part, total, visible)


def test_value_checks_name_recorded_cases_of_their_concept():
    recorded = set(part_a.recorded_cases())
    for spec in SPECS:
        for case in spec.cases:
            assert case in recorded, f"{spec.number}: case {case!r} is not recorded (or must raise)"
            module = part_a.concept(case)
            assert module.FUNCTION in spec.tags, f"{spec.number}: {case} is a case of {module.FUNCTION}"


def test_a_case_group_belongs_to_one_concept_and_raising_cases_exist():
    seen = {}
    for group, module in part_a.concepts().items():
        assert group not in seen, f"case group {group} declared by {module.__name__} and {seen[group]}"
        seen[group] = module.__name__
        cases = module.cases()
        assert all(c.split(".")[0] == group for c in cases), (group, sorted(cases))
        assert set(getattr(module, "RAISES", ())) <= set(cases)


@pytest.mark.parametrize("spec", [s for s in SPECS if s.public], ids=lambda s: s.number)
def test_public_checks_are_visible_value_checks(spec):
    assert spec.visibility == VISIBLE and spec.cases
