"""Test setup: import the homework files, and say plainly which functions are still stubs.

The homework files (attention.py, gpt.py) are imported from the folder named by the
environment variable HW_DIR, by default the handout folder that holds this tests/ folder.
"""

import functools
import os
import re
import sys
from pathlib import Path

import pytest

HW_DIR = Path(os.environ.get("HW_DIR") or Path(__file__).resolve().parents[1]).resolve()
sys.path.insert(0, str(HW_DIR))

_STUB_MESSAGE = re.compile(r"^(?P<name>[\w.<>]+): not implemented yet$")


def pytest_configure(config):
    if not HW_DIR.is_dir():
        raise pytest.UsageError(f"HW_DIR={HW_DIR} is not a folder")


def pytest_report_header(config):
    return f"homework files from: {HW_DIR}"


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
