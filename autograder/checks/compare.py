"""got/expected comparisons, checked in order: exists, type, shape, dtype, then values.

Each returns None when the check passes, or a message for the student.
"""
import numpy as np

RTOL, ATOL = 1e-4, 1e-5  # accepts float32 work; an absolute floor for values near zero


def _fmt(a):
    return np.array2string(np.asarray(a), precision=4, suppress_small=True, threshold=20, edgeitems=3)


def as_array(value, *, name):
    """The student's value as a float array, or a message saying why it is not one."""
    if value is None:
        return None, f"`{name}` returned None; expected an array (did you forget `return`?)"
    try:
        a = np.asarray(value)
    except Exception as e:  # noqa: BLE001
        return None, f"`{name}` returned something that is not an array ({type(e).__name__})"
    if a.dtype.kind not in "biuf":
        return None, f"`{name}` returned an array of dtype {a.dtype}; expected numbers"
    return a, None


def check_shape(*, actual, expected_shape, name):
    if tuple(np.shape(actual)) != tuple(expected_shape):
        return f"{name} has the wrong shape: got {tuple(np.shape(actual))}, expected {tuple(expected_shape)}"
    return None


def check_close(*, actual, expected, name, rtol=RTOL, atol=ATOL):
    """Shape, finiteness, then values with the largest error and where it is."""
    actual, expected = np.asarray(actual), np.asarray(expected)
    msg = check_shape(actual=actual, expected_shape=expected.shape, name=name)
    if msg:
        return msg
    if actual.dtype.kind == "b" or expected.dtype.kind == "b":
        if actual.dtype.kind != expected.dtype.kind and not np.array_equal(actual.astype(bool), actual):
            return f"{name} should be a bool array, got dtype {actual.dtype}"
        bad = np.argwhere(actual.astype(bool) != expected.astype(bool))
        if len(bad):
            i = tuple(int(v) for v in bad[0])
            return (f"{name} differs at {len(bad)} position(s); first at index {i}: "
                    f"got {bool(actual[i])}, expected {bool(expected[i])}")
        return None
    a, e = actual.astype(np.float64), expected.astype(np.float64)
    finite_e = np.isfinite(e)
    if not np.array_equal(np.isnan(a), np.isnan(e)):
        i = tuple(int(v) for v in np.argwhere(np.isnan(a) != np.isnan(e))[0])
        return f"{name} has NaN where it should not (first at index {i}): got {a[i]}, expected {e[i]}"
    if not np.array_equal(a[~finite_e], e[~finite_e]) or not np.isfinite(a[finite_e]).all():
        i = tuple(int(v) for v in np.argwhere((a != e) & ~(np.isfinite(a) & finite_e))[0])
        return f"{name} has an infinite value where it should not (first at index {i}): got {a[i]}, expected {e[i]}"
    err = np.where(finite_e, np.abs(a - e), 0.0)
    tol = atol + rtol * np.abs(np.where(finite_e, e, 0.0))
    if (err > tol).any():
        i = tuple(int(v) for v in np.unravel_index(np.argmax(err - tol), err.shape))
        return (f"{name} has wrong values: {int((err > tol).sum())} of {err.size} entries are off; the largest "
                f"error is {err.max():.3g} at index {i}: got {a[i]:.6g}, expected {e[i]:.6g}\n"
                f"got:\n{_fmt(a)}\nexpected:\n{_fmt(e)}")
    return None
