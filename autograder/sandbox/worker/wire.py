"""The only format that crosses the trust boundary: JSON plus an .npz, never pickle.

A value is any nesting of dicts (str keys), lists/tuples, str, int, float, bool, None and
NumPy arrays. Arrays travel as members of an .npz read back with ``allow_pickle=False``;
everything else travels as JSON. Tuples arrive as lists. Object arrays, custom classes and
anything else executable are refused with a message that names what was refused.

A message on a stream is an 8-byte big-endian length, then the payload.
"""
import io
import json
import struct

import numpy as np

MAX_MESSAGE_BYTES = 64 * 2**20  # far above any honest output; keeps the parent small
_ARRAY = "__ndarray__"


class WireError(ValueError):
    """A value that cannot cross the boundary (says what and where)."""


def _to_array(x):
    """torch tensors and NumPy scalars become arrays (used on the worker side)."""
    if hasattr(x, "detach") and hasattr(x, "numpy"):
        return x.detach().cpu().numpy()
    return np.asarray(x)


def _pack(x, arrays, where):
    if x is None or isinstance(x, (bool, str)):
        return x
    if isinstance(x, (int, float)) and not isinstance(x, bool):
        return x
    if isinstance(x, (np.generic, np.ndarray)) or (hasattr(x, "detach") and hasattr(x, "numpy")):
        a = _to_array(x)
        if a.dtype.hasobject or a.dtype.kind not in "biufc":
            raise WireError(f"{where} is an array of dtype {a.dtype}; only numeric or bool arrays can be graded")
        key = f"a{len(arrays)}"
        arrays[key] = np.ascontiguousarray(a)
        return {_ARRAY: key}
    if isinstance(x, (list, tuple)):
        return [_pack(v, arrays, f"{where}[{i}]") for i, v in enumerate(x)]
    if isinstance(x, dict):
        out = {}
        for k, v in x.items():
            if not isinstance(k, str):
                raise WireError(f"{where} has a key of type {type(k).__name__}; only str keys can be graded")
            out[k] = _pack(v, arrays, f"{where}[{k!r}]")
        return out
    raise WireError(f"{where} is a {type(x).__module__}.{type(x).__qualname__}, which cannot be graded "
                    "(expected an array, a number, a list, a tuple or a dict)")


def _unpack(x, arrays):
    if isinstance(x, list):
        return [_unpack(v, arrays) for v in x]
    if isinstance(x, dict):
        if set(x) == {_ARRAY}:
            return arrays[x[_ARRAY]]
        return {k: _unpack(v, arrays) for k, v in x.items()}
    return x


def dumps(value, where="value"):
    arrays = {}
    doc = json.dumps(_pack(value, arrays, where)).encode()
    buf = io.BytesIO()
    np.savez(buf, **arrays)
    return struct.pack(">I", len(doc)) + doc + buf.getvalue()


def loads(payload):
    (n,) = struct.unpack(">I", payload[:4])
    doc = json.loads(payload[4:4 + n].decode())
    with np.load(io.BytesIO(payload[4 + n:]), allow_pickle=False) as npz:
        arrays = {k: npz[k] for k in npz.files}
    return _unpack(doc, arrays)


def send(stream, value, where="value"):
    payload = dumps(value, where)
    if len(payload) > MAX_MESSAGE_BYTES:
        raise WireError(f"{where} is {len(payload) / 2**20:.0f} MiB, over the {MAX_MESSAGE_BYTES // 2**20} MiB limit")
    stream.write(struct.pack(">Q", len(payload)) + payload)
    stream.flush()


def read_exactly(stream, n):
    chunks, got = [], 0
    while got < n:
        chunk = stream.read(n - got)
        if not chunk:
            raise EOFError("the other side closed the channel")
        chunks.append(chunk)
        got += len(chunk)
    return b"".join(chunks)


def recv(stream):
    (n,) = struct.unpack(">Q", read_exactly(stream, 8))
    if n > MAX_MESSAGE_BYTES:
        raise WireError(f"a message of {n} bytes is over the {MAX_MESSAGE_BYTES} byte limit")
    return loads(read_exactly(stream, n))
