"""The worker loop: read a request, run one op on the student's code, send the answer.

Started by ``autograder.sandbox.runner`` as
``python -I -c "...main(fd_in, fd_out, submission_dir, options)"``. Before any student code
runs it installs the seccomp filter (``options["seccomp"]``), imports the ``options["preload"]``
modules (numpy, torch: a failure there is the grading environment's, not the student's) and
sends one hello ``{"ok": True, "value": {"seccomp": ..., "preload": {name: None or error}}}``.
Then, per request ``{"op": name, "args": {...}}``, the answer is ``{"ok": True, "value": ...}``
or ``{"ok": False, "kind": ..., "message": ..., "traceback": ...}``. Nothing the worker sends
after the hello is trusted by the parent: it checks every answer and decides every verdict.
"""
import importlib
import os
import sys
import traceback

from . import student, syscalls, wire
from .ops_common import OPS
from .student import StudentCodeError, describe_exception


def _answer(request):
    if not isinstance(request, dict) or not isinstance(request.get("args", {}), dict):
        return {"ok": False, "kind": "raised", "message": "the grader's request could not be read "
                "(did your code read from or write to the grader's channel?)"}
    op = OPS.get(request.get("op"))
    if op is None:
        return {"ok": False, "kind": "grader", "message": f"unknown op {request.get('op')!r}"}
    try:
        return {"ok": True, "value": op(**request.get("args", {}))}
    except StudentCodeError as e:
        return {"ok": False, **e.info}
    except BaseException as e:  # noqa: BLE001 - student code may raise anything, even SystemExit
        return {"ok": False, **describe_exception(e)}


def _preload(names):
    """{module: None, or why it could not be imported}: before any student code, so any failure
    (a library that cannot be mapped under the address-space limit, a missing package) is the
    grading environment's."""
    failed = {}
    for name in names:
        try:
            importlib.import_module(name)
            failed[name] = None
        except BaseException as e:  # noqa: BLE001 - MemoryError, OSError from the loader, SystemExit
            where = traceback.format_exception_only(type(e), e)[-1].strip()
            failed[name] = f"{where[:1500]} (in {traceback.extract_tb(e.__traceback__)[-1].filename})" \
                if e.__traceback__ else where[:1500]
    return failed


def main(fd_in, fd_out, submission_dir, options=None):
    options = options or {}
    rin, out = os.fdopen(fd_in, "rb"), os.fdopen(fd_out, "wb")
    hello = {"seccomp": syscalls.install() if options.get("seccomp", True) else {"error": "not asked for"},
             "preload": _preload(options.get("preload", ()))}
    wire.send(out, {"ok": True, "value": hello})
    student.ROOT = os.path.realpath(submission_dir)
    sys.path.insert(0, submission_dir)
    os.chdir(submission_dir)
    while True:
        try:
            request = wire.recv(rin)
        except EOFError:
            return
        except ValueError:  # WireError included: the request's bytes were consumed, the stream is in step
            request = None
        answer = _answer(request)
        try:
            wire.send(out, answer, where="the value your code returned")
        except Exception as e:  # noqa: BLE001 - a value that cannot be sent, however it fails
            message = str(e) if isinstance(e, wire.WireError) else f"the value your code returned could not be " \
                f"sent to the grader ({type(e).__name__}: {str(e)[:300]})"
            wire.send(out, {"ok": False, "kind": "bad_output", "message": message})
