"""Importing the student's modules and describing what their code raised."""
import importlib
import os
import sys
import traceback

_loaded = {}  # module name -> module, or the error info of its failed import


class StudentCodeError(Exception):
    """Carries a ready-made error description back to the parent."""

    def __init__(self, **info):
        super().__init__(info.get("message", ""))
        self.info = info


def _student_frames(exc):
    """The traceback lines that point into the student's own files."""
    root = os.path.realpath(os.getcwd())
    frames = [f for f in traceback.extract_tb(exc.__traceback__)
              if os.path.realpath(f.filename).startswith(root + os.sep)]
    for f in frames:
        f.filename = os.path.relpath(f.filename, root)
    return "".join(traceback.format_list(frames))


def describe_exception(exc):
    if isinstance(exc, SystemExit):
        return {"kind": "exit", "message": f"your code called sys.exit({exc.code!r})",
                "traceback": _student_frames(exc)}
    if isinstance(exc, MemoryError):
        return {"kind": "memory", "message": "your code ran out of memory (MemoryError)",
                "traceback": _student_frames(exc)}
    return {"kind": "raised", "message": f"{type(exc).__name__}: {exc}"[:2000],
            "traceback": _student_frames(exc)}


def load(name):
    """Import the student's module ``name`` once; later calls get the same module or error."""
    if name not in _loaded:
        if not os.path.exists(f"{name}.py"):
            _loaded[name] = {"kind": "missing", "message": f"{name}.py was not found in your submission"}
        else:
            try:
                _loaded[name] = importlib.import_module(name)
            except BaseException as e:  # noqa: BLE001
                info = describe_exception(e)
                info["kind"] = "import"
                info["message"] = f"{name}.py could not be imported: {info['message']}"
                _loaded[name] = info
    module = _loaded[name]
    if isinstance(module, dict):
        raise StudentCodeError(**module)
    return module


def attribute(module_name, name):
    """The student's ``module_name.name`` (dotted names reach into classes)."""
    obj = load(module_name)
    for part in name.split("."):
        if not hasattr(obj, part):
            raise StudentCodeError(kind="missing", message=f"{module_name}.py has no `{name}`")
        obj = getattr(obj, part)
    return obj
