"""Importing the student's modules and describing what their code raised."""
import difflib
import importlib
import os
import sys
import traceback

ROOT = None  # the staged submission: main() sets it before any student code runs (else the cwd)
_loaded = {}  # module name -> module, or the error info of its failed import


class StudentCodeError(Exception):
    """Carries a ready-made error description back to the parent."""

    def __init__(self, **info):
        super().__init__(info.get("message", ""))
        self.info = info


def _text(obj, limit=2000):
    """``str(obj)`` even when the student's ``__str__`` raises."""
    try:
        return str(obj)[:limit]
    except BaseException:  # noqa: BLE001 - a student's __str__ may raise anything
        return f"<an unprintable {type(obj).__name__}>"


def _relative(filename):
    if not filename or not os.path.isabs(filename):  # "<frozen importlib._bootstrap>", "<string>"
        return None
    path, root = os.path.realpath(filename), _root()
    return os.path.relpath(path, root) if path.startswith(root + os.sep) else None


def _root():
    return ROOT or os.path.realpath(os.getcwd())


def _bad_byte_line(filename):
    """The line of the first byte of ``filename`` that is not UTF-8 (Python reports the end of
    the statement holding it)."""
    try:
        with open(filename, "rb") as f:
            data = f.read()
        data.decode("utf-8")
    except UnicodeDecodeError as e:
        return data[:e.start].count(b"\n") + 1
    except OSError:
        pass
    return None


def _student_frames(exc):
    """The traceback lines that point into the student's own files."""
    frames = [f for f in traceback.extract_tb(exc.__traceback__) if _relative(f.filename)]
    for f in frames:
        f.filename = _relative(f.filename)
    return "".join(traceback.format_list(frames))


def _syntax_error(exc):
    """A message naming the file, the line and the cause; encoding problems said plainly."""
    filename, lineno = getattr(exc, "filename", None), getattr(exc, "lineno", None)
    where = _relative(filename) or os.path.basename(filename or "") or "your file"
    msg = _text(exc.msg if isinstance(exc, SyntaxError) else exc)
    if "null bytes" in msg:
        return f"{where} contains NUL bytes: is it a binary file, or saved as UTF-16? Save it as UTF-8 text"
    if "utf-8" in msg.lower() and ("decode" in msg or msg.startswith("Non-UTF-8")):
        line = _bad_byte_line(filename) or lineno
        return (f"{where} is not UTF-8 text (line {line}): save the file with UTF-8 encoding "
                "(or declare its encoding on the first line, e.g. `# -*- coding: latin-1 -*-`)")
    text = f"{type(exc).__name__} in {where}, line {lineno}: {msg}"
    if getattr(exc, "text", None):
        line = exc.text.rstrip("\n")
        text += f"\n    {line.strip()}"
        if getattr(exc, "offset", None) and exc.offset > 0:
            text += "\n    " + " " * max(0, exc.offset - 1 - (len(line) - len(line.lstrip()))) + "^"
    return text


def describe_exception(exc):
    if isinstance(exc, SystemExit):
        return {"kind": "exit", "message": f"your code called sys.exit({_text(exc.code, 200)})",
                "traceback": _student_frames(exc)}
    if isinstance(exc, MemoryError):
        return {"kind": "memory", "message": "your code ran out of memory (MemoryError)",
                "traceback": _student_frames(exc)}
    if isinstance(exc, SyntaxError) or (isinstance(exc, ValueError) and "null bytes" in _text(exc)):
        try:
            return {"kind": "raised", "message": _syntax_error(exc), "traceback": ""}
        except Exception:  # noqa: BLE001 - describing must never fail
            pass
    return {"kind": "raised", "message": f"{type(exc).__name__}: {_text(exc)}", "traceback": _student_frames(exc)}


def load(name):
    """Import the student's module ``name`` once; later calls get the same module or error."""
    if name not in _loaded:
        if not os.path.exists(os.path.join(_root(), f"{name}.py")):
            _loaded[name] = {"kind": "missing", "message": f"{name}.py was not found in your submission"}
        else:
            try:
                _loaded[name] = importlib.import_module(name)
            except BaseException as e:  # noqa: BLE001 - SystemExit and KeyboardInterrupt included
                info = dict(describe_exception(e), kind="import")
                info["message"] = f"{name}.py could not be imported: {info['message']}"
                _loaded[name] = info
                sys.modules.pop(name, None)
    module = _loaded[name]
    if isinstance(module, dict):
        raise StudentCodeError(**module)
    return module


def attribute(module_name, name):
    """The student's ``module_name.name`` (dotted names reach into classes)."""
    obj = load(module_name)
    for part in name.split("."):
        if not hasattr(obj, part):
            close = difflib.get_close_matches(part, [n for n in dir(obj) if not n.startswith("__")], n=1)
            hint = f" (did you mean `{close[0]}`?)" if close else ""
            raise StudentCodeError(kind="missing", message=f"{module_name}.py has no `{name}`{hint}; "
                                   "the assignment's contract requires this name")
        obj = getattr(obj, part)
    return obj
