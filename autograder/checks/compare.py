"""got/expected comparisons, checked in order: exists, type, shape, dtype, then values.

Each check returns None when it passes, or a message for the student that names the thing
(``name``), says what was got and what was expected, and for values gives the largest error
and where it is. Arguments are keyword-only, so ``actual`` and ``expected`` cannot be swapped.
"""
import numpy as np

RTOL, ATOL = 1e-4, 1e-5  # accepts float32 work (relative to float64 values); a floor near zero
KINDS = {"f": "a float array (float32 or float64)", "b": "a bool array", "i": "an integer",
         "n": "a numeric array", "any": "a numeric or bool array"}


def _fmt(a):
    return np.array2string(np.asarray(a), precision=4, suppress_small=True, threshold=30, edgeitems=3)


def shape_str(shape, notation=None):
    """``(2, 3, 4)``, or ``(B, T, C) = (2, 3, 4)`` with nanoGPT's letters when given."""
    text = str(tuple(int(n) for n in shape))
    return f"{notation} = {text}" if notation else text


def as_array(value, *, name):
    """``(array, None)`` for a numeric or bool value, else ``(None, message)``."""
    if value is None:
        return None, f"{name}: got None, expected an array (did you forget `return`?)"
    if isinstance(value, (dict, str, bytes)):
        return None, f"{name}: got a {type(value).__name__} ({str(value)[:60]!r}), expected an array"
    try:
        a = np.asarray(value)
    except Exception as e:  # noqa: BLE001 - ragged lists and the like
        return None, f"{name}: got something that is not an array ({type(e).__name__}: {e}), expected an array"
    if a.dtype.kind not in "biuf":
        return None, f"{name}: got an array of dtype {a.dtype}, expected numbers"
    return a, None


def check_shape(*, actual, expected_shape, name, notation=None):
    got = tuple(np.shape(actual))
    if got != tuple(expected_shape):
        return f"{name} has the wrong shape: got {got}, expected {shape_str(expected_shape, notation)}"
    return None


def check_dtype(*, actual, kinds="f", name):
    """``kinds``: "f" float, "b" bool, "i" integer, "n" any number (bool excluded), "any"."""
    kind = np.asarray(actual).dtype.kind
    ok = {"f": kind == "f", "b": kind == "b", "n": kind in "iuf", "i": kind in "iu", "any": kind in "biuf"}[kinds]
    if not ok:
        return f"{name} has the wrong dtype: got {np.asarray(actual).dtype}, expected {KINDS[kinds]}"
    return None


def _index(i):
    return tuple(int(v) for v in i)


def check_equal(*, actual, expected, name):
    """Exact equality (bool masks, integer results), after the shape."""
    actual, expected = np.asarray(actual), np.asarray(expected)
    msg = check_shape(actual=actual, expected_shape=expected.shape, name=name)
    if msg:
        return msg
    bad = np.argwhere(actual != expected)
    if len(bad):
        i = _index(bad[0])
        return (f"{name} differs at {len(bad)} of {actual.size} positions; first at index {i}: "
                f"got {actual[i]}, expected {expected[i]}\ngot:\n{_fmt(actual)}\nexpected:\n{_fmt(expected)}")
    return None


def check_close(*, actual, expected, name, rtol=RTOL, atol=ATOL):
    """Shape, NaN and infinities, then values within ``atol + rtol * |expected|``."""
    actual, expected = np.asarray(actual), np.asarray(expected)
    msg = check_shape(actual=actual, expected_shape=expected.shape, name=name)
    if msg:
        return msg
    if expected.dtype.kind == "b":
        return check_equal(actual=actual, expected=expected, name=name)
    a, e = actual.astype(np.float64), expected.astype(np.float64)
    nan = np.isnan(a) & ~np.isnan(e)
    if nan.any():
        i = _index(np.argwhere(nan)[0])
        return (f"{name} has {int(nan.sum())} NaN value(s): got NaN at index {i}, expected {e[i]:.6g} "
                f"(an overflow, or 0/0?)\ngot:\n{_fmt(a)}")
    inf = (np.isinf(a) | np.isinf(e)) & (a != e)
    if inf.any():
        i = _index(np.argwhere(inf)[0])
        return f"{name} has a wrong infinite value at index {i}: got {a[i]}, expected {e[i]}\ngot:\n{_fmt(a)}"
    finite = np.isfinite(e)
    err = np.abs(np.where(finite, a, 0.0) - np.where(finite, e, 0.0))  # equal infinities: no error, no warning
    tol = atol + rtol * np.abs(np.where(finite, e, 0.0))
    if (err > tol).any():
        i = _index(np.unravel_index(np.argmax(err - tol), err.shape))
        return (f"{name} has wrong values: {int((err > tol).sum())} of {err.size} entries are off; the largest "
                f"error is {err.max():.3g}, at index {i}: got {a[i]:.6g}, expected {e[i]:.6g}\n"
                f"got:\n{_fmt(a)}\nexpected:\n{_fmt(e)}")
    return None


def close_enough(actual, expected, *, rtol=1e-3, atol=1e-4):
    """A quiet yes/no (used to match bug signatures); False when shapes differ."""
    try:
        a, e = np.asarray(actual, dtype=np.float64), np.asarray(expected, dtype=np.float64)
    except (TypeError, ValueError):
        return False
    return a.shape == e.shape and bool(np.allclose(a, e, rtol=rtol, atol=atol, equal_nan=True))
