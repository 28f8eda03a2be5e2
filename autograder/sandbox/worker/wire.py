"""The only format that crosses the trust boundary: JSON plus an .npz, never pickle.

A value is any nesting of dicts (str keys), lists/tuples, str, int, float, bool, None and
NumPy arrays. Arrays travel as members of an uncompressed .npz; everything else travels as
JSON. Tuples arrive as lists. Object arrays, custom classes and anything else executable are
refused with a message that names what was refused.

``loads`` runs in the trusted parent on bytes the student's process wrote, so it trusts
nothing: sizes are bounded (bytes, JSON values and nesting counted before the JSON is parsed,
so 4 MB of ``{}`` cannot become 150 MB of dicts), so is the time it may take, the .npz is
parsed member by member (stored, numeric dtypes only, declared shape matching the bytes
present; ``np.load`` and pickle are never used), and any malformed input raises ``WireError``.

A message on a stream is an 8-byte big-endian length, then the payload.
"""
import io
import json
import math
import re
import struct
import time
import zipfile

import numpy as np

MAX_MESSAGE_BYTES = 16 * 2**20  # 3x the largest request (Part B training, ~5 MB); keeps the parent small
MAX_JSON_BYTES = 4 * 2**20      # the non-array part (names, shapes, numbers)
MAX_DEPTH = 64
MAX_VALUES = 100_000            # JSON values (numbers, strings, lists, dicts): big data travels as arrays
MAX_DECODE_SECONDS = 5.0        # one message's decoding, in the parent
_ARRAY = "__ndarray__"
_STRING = re.compile(rb'"[^"\\]*(?:\\.[^"\\]*)*"')


class WireError(ValueError):
    """A value that cannot cross the boundary (says what and where)."""


def _to_array(x):
    """torch tensors and NumPy scalars become arrays (used on the worker side)."""
    if hasattr(x, "detach") and hasattr(x, "numpy"):
        return x.detach().cpu().numpy()
    return np.asarray(x)


def _pack(x, arrays, where, depth=0, count=None):
    if depth > MAX_DEPTH:
        raise WireError(f"{where} is nested more than {MAX_DEPTH} levels deep")
    count = [0] if count is None else count
    count[0] += 1
    if count[0] > MAX_VALUES:
        raise WireError(f"{where} holds more than {MAX_VALUES} values (numbers, strings, lists, dicts); "
                        "return large data as a NumPy array or a tensor")
    if x is None or type(x) in (bool, str, int, float):
        return x
    if isinstance(x, (np.generic, np.ndarray)) or (hasattr(x, "detach") and hasattr(x, "numpy")):
        a = _to_array(x)
        if not isinstance(a, np.ndarray) or a.dtype.hasobject or a.dtype.kind not in "biufc":
            raise WireError(f"{where} is an array of dtype {getattr(a, 'dtype', '?')}; only numeric or bool "
                            "arrays can be graded")
        key = f"a{len(arrays)}"
        arrays[key] = np.ascontiguousarray(a)
        return {_ARRAY: key}
    for base, plain in ((int, int.__index__), (float, float.__float__), (str, str.__str__)):
        if isinstance(x, base):  # subclasses (an IntEnum, a str subclass) travel as their plain value
            return plain(x)
    if isinstance(x, (list, tuple)):  # namedtuples and torch.Size too
        return [_pack(v, arrays, f"{where}[{i}]", depth + 1, count) for i, v in enumerate(x)]
    if isinstance(x, dict):
        if set(x) == {_ARRAY}:
            raise WireError(f"{where} is a dict whose only key is {_ARRAY!r}, which is reserved")
        out = {}
        for k, v in dict.items(x):
            if type(k) is not str:
                raise WireError(f"{where} has a key of type {type(k).__name__}; only str keys can be graded")
            out[k] = _pack(v, arrays, f"{where}[{k!r}]", depth + 1, count)
        return out
    raise WireError(f"{where} is a {type(x).__module__}.{type(x).__qualname__}, which cannot be graded "
                    "(expected an array, a number, a list, a tuple or a dict)")


def _unpack(x, arrays):
    """The value of the parsed JSON ``x`` (its nesting already checked by ``_check_json``)."""
    if isinstance(x, list):
        return [_unpack(v, arrays) for v in x]
    if isinstance(x, dict):
        if set(x) == {_ARRAY}:
            if not isinstance(x[_ARRAY], str) or x[_ARRAY] not in arrays:
                raise WireError(f"a reference to a missing array {str(x[_ARRAY])[:40]!r}")
            return arrays[x[_ARRAY]]
        return {k: _unpack(v, arrays) for k, v in x.items()}
    return x


def _check_json(doc):
    """Count the values and the nesting of the JSON text ``doc`` (bytes) before parsing it: at
    most one value per ``{``, ``[`` or ``,`` outside strings, plus one."""
    bare = _STRING.sub(b'""', doc)
    values = bare.count(b"{") + bare.count(b"[") + bare.count(b",") + 1
    if values > MAX_VALUES:
        raise WireError(f"a JSON part of up to {values} values (the limit is {MAX_VALUES})")
    depth = deepest = 0
    for m in re.finditer(rb"[\[{\]}]", bare) if bare.count(b"[") + bare.count(b"{") > MAX_DEPTH else ():
        depth += 1 if m.group() in b"[{" else -1
        deepest = max(deepest, depth)
        if deepest > MAX_DEPTH:
            raise WireError(f"JSON nested more than {MAX_DEPTH} levels deep")


def dumps(value, where="value"):
    arrays = {}
    doc = json.dumps(_pack(value, arrays, where)).encode()
    buf = io.BytesIO()
    np.savez(buf, **arrays)
    return struct.pack(">I", len(doc)) + doc + buf.getvalue()


def _read_arrays(blob, deadline):
    """The arrays of an uncompressed .npz, each checked before a byte of it is used."""
    arrays = {}
    with zipfile.ZipFile(io.BytesIO(blob)) as zf:
        members = zf.infolist()
        if sum(m.file_size for m in members) > len(blob):
            raise WireError("the arrays claim more bytes than were sent")
        for m in members:
            if m.compress_type != zipfile.ZIP_STORED or not m.filename.endswith(".npy"):
                raise WireError(f"array member {m.filename[:40]!r} is compressed or not .npy")
            with zf.open(m) as f:
                version = np.lib.format.read_magic(f)
                read_header = {(1, 0): np.lib.format.read_array_header_1_0,
                               (2, 0): np.lib.format.read_array_header_2_0}.get(version)
                if read_header is None:
                    raise WireError(f"array format version {version}")
                shape, fortran, dtype = read_header(f)
                if dtype.hasobject or dtype.fields is not None or dtype.kind not in "biufc":
                    raise WireError(f"an array of dtype {dtype}")
                nbytes = math.prod(shape) * dtype.itemsize
                if nbytes > m.file_size:
                    raise WireError(f"an array of shape {shape} in {m.file_size} bytes")
                data = f.read(nbytes + 1)
                if len(data) != nbytes:
                    raise WireError(f"an array of shape {shape} with {len(data)} bytes of data")
            arrays[m.filename[:-4]] = np.frombuffer(data, dtype).reshape(shape, order="F" if fortran else "C").copy()
            _in_time(deadline)
    return arrays


def _in_time(deadline):
    if time.monotonic() > deadline:
        raise WireError(f"a message that took more than {MAX_DECODE_SECONDS:g} s to decode")


def loads(payload, seconds=MAX_DECODE_SECONDS):
    """The value in ``payload``; any malformed or oversized input, or one that takes longer than
    ``seconds`` to decode, raises ``WireError``."""
    deadline = time.monotonic() + seconds
    if len(payload) > MAX_MESSAGE_BYTES:
        raise WireError(f"a message of {len(payload)} bytes")
    try:
        (n,) = struct.unpack(">I", payload[:4])
        if n > MAX_JSON_BYTES or n > len(payload) - 4:
            raise WireError(f"a JSON part of {n} bytes")
        text = payload[4:4 + n]
        _check_json(text)
        doc = json.loads(text.decode())
        _in_time(deadline)
        arrays = _read_arrays(payload[4 + n:], deadline)
        return _unpack(doc, arrays)
    except WireError:
        raise
    except (ValueError, KeyError, TypeError, RecursionError, struct.error, zipfile.BadZipFile, EOFError,
            OverflowError, MemoryError) as e:
        raise WireError(f"a malformed message ({type(e).__name__}: {str(e)[:200]})") from None


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
