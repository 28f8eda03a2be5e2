"""Build ``dist/autograder.zip`` for Gradescope (``make autograder``).

    python tools/make_autograder.py --torch "torch==2.13.0" [--out dist/autograder.zip] [--allow-stale]

The zip holds, at its root, ``setup.sh`` and ``run_autograder`` (from ``gradescope/``, with
the torch pin filled in), ``requirements.txt`` (the project's runtime dependencies from
pyproject.toml), the ``autograder/`` package with its expected outputs in
``autograder/data/``, and ``reference/__init__.py`` + ``reference/corpus.py`` (the synthetic
language the grader trains on). Never the solution (``reference/attention.py``,
``reference/gpt.py``), the handout, tests, caches or git files. The bytes depend only on the
inputs: entries are sorted and carry fixed timestamps and permissions.
"""
import argparse
import io
import os
import re
import subprocess
import sys
import zipfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TEMPLATES = os.path.join(ROOT, "gradescope")
TORCH_PLACEHOLDER = "@TORCH_REQUIREMENT@"
SCRIPTS = ("setup.sh", "run_autograder")
REFERENCE_FILES = ("reference/__init__.py", "reference/corpus.py")  # what the grader imports
EXCLUDED_DIRS = {"__pycache__", ".pytest_cache", ".ipynb_checkpoints"}
EXCLUDED_SUFFIXES = (".pyc", ".pyo", ".swp", "~")
FIXED_TIME = (1980, 1, 1, 0, 0, 0)


def runtime_requirements(pyproject_path):
    """The ``dependencies = [...]`` strings of pyproject.toml (read without tomllib: Python 3.10)."""
    with open(pyproject_path, encoding="utf-8") as f:
        text = f.read()
    block = re.search(r"^dependencies\s*=\s*\[(.*?)\]", text, re.S | re.M)
    if not block:
        raise SystemExit(f"no `dependencies = [...]` in {pyproject_path}")
    return re.findall(r'"([^"]+)"', re.sub(r"#.*", "", block.group(1)))


def package_files(root):
    """(path inside the zip, path on disk) of every shipped file of the autograder package."""
    found = []
    for folder, dirs, files in os.walk(os.path.join(root, "autograder")):
        dirs[:] = [d for d in dirs if d not in EXCLUDED_DIRS and not d.startswith(".") and not d.endswith(".egg-info")]
        for name in files:
            if name.startswith(".") or name.endswith(EXCLUDED_SUFFIXES):
                continue
            path = os.path.join(folder, name)
            found.append((os.path.relpath(path, root).replace(os.sep, "/"), path))
    return found


def render_script(name, torch_requirement):
    with open(os.path.join(TEMPLATES, name), encoding="utf-8") as f:
        text = f.read()
    if name == "setup.sh":
        if TORCH_PLACEHOLDER not in text:
            raise SystemExit(f"gradescope/setup.sh lost its {TORCH_PLACEHOLDER} placeholder")
        text = text.replace(TORCH_PLACEHOLDER, torch_requirement)
    return text.encode("utf-8")


def entries(root, torch_requirement):
    """{path inside the zip: bytes} of everything the zip holds."""
    out = {name: render_script(name, torch_requirement) for name in SCRIPTS}
    reqs = runtime_requirements(os.path.join(root, "pyproject.toml"))
    out["requirements.txt"] = ("# installed by setup.sh; torch comes from setup.sh (CPU build)\n"
                               + "".join(r + "\n" for r in reqs)).encode("utf-8")
    for arcname, path in package_files(root) + [(p, os.path.join(root, p)) for p in REFERENCE_FILES]:
        with open(path, "rb") as f:
            out[arcname] = f.read()
    return out


def write_zip(path, files):
    """A zip whose bytes depend only on ``files``: sorted, fixed times and modes."""
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as z:
        for name in sorted(files):
            info = zipfile.ZipInfo(name, date_time=FIXED_TIME)
            info.compress_type = zipfile.ZIP_DEFLATED
            info.create_system = 3  # unix, so the modes below mean something
            mode = 0o755 if name in SCRIPTS else 0o644
            info.external_attr = (0o100000 | mode) << 16
            z.writestr(info, files[name], compresslevel=9)
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    tmp = path + ".tmp"
    with open(tmp, "wb") as f:
        f.write(buf.getvalue())
    os.replace(tmp, path)
    return len(buf.getvalue())


def check_reference_data():
    """Exit code of ``make_reference.py --check``: stale expected outputs must not ship."""
    return subprocess.call([sys.executable, os.path.join(ROOT, "tools", "make_reference.py"), "--check"])


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--torch", required=True,
                        help='the torch requirement, e.g. "torch==2.13.0" (from the Makefile)')
    parser.add_argument("--out", default=os.path.join(ROOT, "dist", "autograder.zip"))
    parser.add_argument("--allow-stale", action="store_true",
                        help="build even if autograder/data is stale (tests only; never upload such a zip)")
    args = parser.parse_args(argv)
    if not re.fullmatch(r"torch([=<>!~]=?[0-9][\w.+*]*,?)*", args.torch):
        parser.error(f"--torch {args.torch!r} is not a torch requirement like torch==2.13.0")
    if not args.allow_stale and check_reference_data() != 0:
        print("not building: the expected outputs are stale (see above); run `make reference` first",
              file=sys.stderr)
        return 1
    files = entries(ROOT, args.torch)
    size = write_zip(args.out, files)
    shown = os.path.relpath(args.out) if not os.path.relpath(args.out).startswith("..") else args.out
    print(f"wrote {shown}: {len(files)} files, {size / 1024:.0f} KiB, "
          f"setup.sh installs {args.torch} (CPU build)")
    print("upload it on Gradescope: Assignment > Configure Autograder > Zip file upload")
    return 0


if __name__ == "__main__":
    sys.exit(main())
