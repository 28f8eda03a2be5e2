"""The op table and the ops that call the student's functions as they are: arrays in, arrays out.

Nothing here is trusted: a student's module can replace any of it. The parent judges only
raw outputs of the student's own functions, for inputs it chose."""

OPS = {}


def op(fn):
    OPS[fn.__name__] = fn
    return fn


@op
def ping():
    return "pong"


@op
def call(module, name, args=(), kwargs=None):
    """``{"value": module.name(*args, **kwargs)}``, returned as it is (the wire converts)."""
    from . import wire
    from .student import StudentCodeError, attribute
    value = attribute(module, name)(*args, **(kwargs or {}))
    try:
        wire.dumps(value, where=f"the value {name} returned")
    except wire.WireError as e:
        raise StudentCodeError(kind="bad_output", message=str(e)) from None
    return {"value": value}


@op
def has(module, names):
    """Which of ``names`` the student's module defines."""
    from .student import load
    m = load(module)
    return {n: hasattr(m, n) for n in names}


def _register_part_b():
    try:
        from . import ops_part_b  # noqa: F401  (registers its ops; imports torch lazily)
    except ImportError:
        pass


_register_part_b()
