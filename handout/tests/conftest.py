"""Test setup: import the homework files, and say plainly which functions are still stubs.

The homework files (attention.py, gpt.py) are imported from the folder named by the
environment variable HW_DIR, by default the handout folder that holds this tests/ folder.
A relative HW_DIR is taken from the folder the command was typed in (`make -C handout test`
passes that folder on; see the Makefile). The header of every run names the files tested.
A homework file missing from HW_DIR skips its tests; so does a missing torch for Part B.
"""

import functools
import importlib.util
import os
import re
import sys
from pathlib import Path

import pytest

HANDOUT = Path(__file__).resolve().parents[1]
HW_DIR = Path(os.environ.get("HW_DIR") or HANDOUT).resolve()
# homework file -> the public test file that tests it
TESTED_BY = {"attention.py": "test_attention.py", "gpt.py": "test_gpt.py"}

# The homework folder comes first, and the handout folder (on sys.path when pytest runs from
# it) is left out, so that a file missing from HW_DIR is never replaced by the handout's stub.
sys.path[:] = [p for p in sys.path if HW_DIR == HANDOUT or Path(p or ".").resolve() != HANDOUT]
sys.path.insert(0, str(HW_DIR))

_STUB_MESSAGE = re.compile(r"^(?P<name>[\w.<>]+): not implemented yet$")


def pytest_configure(config):
    if not HW_DIR.is_dir():
        raise pytest.UsageError(
            f"HW_DIR={os.environ.get('HW_DIR')!r} is not a folder (resolved to {HW_DIR}); "
            f"a relative HW_DIR is taken from the folder you typed the command in")


def pytest_report_header(config):
    lines = [f"homework folder (HW_DIR): {HW_DIR}"]
    for name, test_file in TESTED_BY.items():
        path = HW_DIR / name
        if path.is_file():
            lines.append(f"  testing {path}")
        else:
            lines.append(f"  missing {path}: tests/{test_file} is skipped")
    if not _installed("torch"):
        lines.append("  torch is not installed: Part B's tests (tests/test_gpt.py) are skipped")
    return lines


def _installed(module: str) -> bool:
    try:
        return importlib.util.find_spec(module) is not None
    except (ImportError, ValueError):  # e.g. a module set to None in sys.modules
        return False


def pytest_ignore_collect(collection_path, config):
    """Leave out the tests of a homework file that is not in HW_DIR (the header says so)."""
    for name, test_file in TESTED_BY.items():
        if collection_path.name == test_file and not (HW_DIR / name).is_file():
            return True
    return None


def pytest_terminal_summary(terminalreporter):
    for name, test_file in TESTED_BY.items():
        if not (HW_DIR / name).is_file():
            terminalreporter.write_line(f"tests/{test_file} was not run: no {name} in {HW_DIR}")


def pytest_collection_finish(session):
    """Stop if a homework module was imported from somewhere other than HW_DIR."""
    for name in TESTED_BY:
        module = sys.modules.get(Path(name).stem)
        where = getattr(module, "__file__", None)
        if where and (HW_DIR / name).is_file() and Path(where).resolve() != (HW_DIR / name):
            raise pytest.UsageError(f"{name} was imported from {where}, not from {HW_DIR}: "
                                    f"is a package or file of that name earlier on sys.path?")


def _stub_name(exc: NotImplementedError) -> str:
    """The function that raised: from the stub's message, else from the innermost frame."""
    match = _STUB_MESSAGE.match(str(exc))
    if match:
        return match["name"]
    tb = exc.__traceback__
    while tb.tb_next is not None:
        tb = tb.tb_next
    code = tb.tb_frame.f_code
    return getattr(code, "co_qualname", code.co_name)  # co_qualname: Python 3.11+


def _explain_stubs(test):
    """Wrap a test so that a stub's NotImplementedError fails it with one line naming the stub."""
    @functools.wraps(test)
    def run(*args, **kwargs):
        try:
            return test(*args, **kwargs)
        except NotImplementedError as exc:
            name = _stub_name(exc)
        # outside the except block, so that the report is this one line, without the traceback
        pytest.fail(f"{name} is not implemented yet", pytrace=False)

    return run


def pytest_collection_modifyitems(items):
    for item in items:
        if isinstance(item, pytest.Function):
            item.obj = _explain_stubs(item.obj)
