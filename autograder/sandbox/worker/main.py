"""The worker loop: read a request, run one op on the student's code, send the answer.

Started by ``autograder.sandbox.runner`` as
``python -I -c "...main(fd_in, fd_out, submission_dir)"``. A request is
``{"op": name, "args": {...}}``; the answer is ``{"ok": True, "value": ...}`` or
``{"ok": False, "kind": ..., "message": ..., "traceback": ...}``.
"""
import os
import sys

from . import wire
from .student import StudentCodeError, describe_exception
from .ops_common import OPS


def _answer(out, request):
    op = OPS.get(request.get("op"))
    if op is None:
        return {"ok": False, "kind": "grader", "message": f"unknown op {request.get('op')!r}"}
    try:
        return {"ok": True, "value": op(**request.get("args", {}))}
    except StudentCodeError as e:
        return {"ok": False, **e.info}
    except BaseException as e:  # noqa: BLE001 - student code may raise anything, even SystemExit
        return {"ok": False, **describe_exception(e)}


def main(fd_in, fd_out, submission_dir):
    sys.path.insert(0, submission_dir)
    os.chdir(submission_dir)
    rin, out = os.fdopen(fd_in, "rb"), os.fdopen(fd_out, "wb")
    while True:
        try:
            request = wire.recv(rin)
        except EOFError:
            return
        answer = _answer(out, request)
        try:
            wire.send(out, answer, where="the value your code returned")
        except wire.WireError as e:
            wire.send(out, {"ok": False, "kind": "bad_output", "message": str(e)})
