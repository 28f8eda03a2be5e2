"""The worker loop: read a request, run one op on the student's code, send the answer.

Started by ``autograder.sandbox.runner`` as
``python -I -c "...main(fd_in, fd_out, submission_dir)"``. A request is
``{"op": name, "args": {...}}``; the answer is ``{"ok": True, "value": ...}`` or
``{"ok": False, "kind": ..., "message": ..., "traceback": ...}``. Nothing here is trusted by
the parent: it checks every answer and decides every verdict itself.
"""
import os
import sys

from . import student, wire
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


def main(fd_in, fd_out, submission_dir):
    student.ROOT = os.path.realpath(submission_dir)
    sys.path.insert(0, submission_dir)
    os.chdir(submission_dir)
    rin, out = os.fdopen(fd_in, "rb"), os.fdopen(fd_out, "wb")
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
