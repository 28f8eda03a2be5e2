"""Bytes a student's process could write on the answer pipe to hurt the trusted parent that
decodes them: pickles, a zip bomb, a shape that claims terabytes, nesting that blows the
stack, oversized JSON, dangling references, garbage. ``wire.loads`` must turn each into a
WireError, quickly and without using much memory."""
import io
import json
import struct
import zipfile

import numpy as np

from autograder.sandbox.worker import wire


def _frame(doc, npz):
    doc = json.dumps(doc).encode()
    return struct.pack(">I", len(doc)) + doc + npz


def _npz(**arrays):
    buf = io.BytesIO()
    np.savez(buf, **arrays)
    return buf.getvalue()


def _zip(name, data, compress=zipfile.ZIP_STORED):
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", compression=compress) as z:
        z.writestr(name, data)
    return buf.getvalue()


def _npy_header(shape, descr="<f8"):
    buf = io.BytesIO()
    np.lib.format.write_array_header_1_0(buf, {"descr": descr, "fortran_order": False, "shape": shape})
    return buf.getvalue()


PAYLOADS = {
    "a pickled object array": _frame({"__ndarray__": "a0"}, _npz(a0=np.array([{"x": 1}], dtype=object))),
    "a compressed member (zip bomb)": _frame({"__ndarray__": "a0"},
                                             _zip("a0.npy", _npy_header((2**23,)) + b"\0" * 2**26,
                                                  zipfile.ZIP_DEFLATED)),
    "a shape larger than its data": _frame({"__ndarray__": "a0"}, _zip("a0.npy", _npy_header((10**12,)) + b"\0" * 64)),
    "a reference to a missing array": _frame({"__ndarray__": "a9"}, _npz()),
    "JSON nested 100000 deep": struct.pack(">I", 200_000) + b"[" * 100_000 + b"]" * 100_000 + _npz(),
    "a JSON part over its limit": struct.pack(">I", wire.MAX_JSON_BYTES + 1) + b" " * (wire.MAX_JSON_BYTES + 1),
    "garbage": b"\x00\x01junk" * 100,
}
