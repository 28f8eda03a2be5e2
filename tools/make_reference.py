"""Record the expected outputs from reference/ (``make reference``), or check they are fresh
(``make check-reference``).

    python tools/make_reference.py             # run reference/ through the cases, rewrite autograder/data/
    python tools/make_reference.py --check     # run nothing; exit 1 naming every stale input or output

Recording stages reference/ as a submission and runs it in the sandbox, exactly as a student
is run: ``cases_part_a.record(call)`` and ``cases_part_b.record(run)`` return
``(arrays, meta)``, written to ``part_X.npz`` (sorted members, fixed timestamps: the bytes
depend only on the values) and ``part_X.json``. ``manifest.json`` records the seeds found in
``meta``, the library versions, and the sha256 of every input (reference/*.py, the case
files, the worker's ops) and of every output, which is all ``--check`` compares.
"""
import argparse
import glob
import hashlib
import io
import json
import os
import platform
import shutil
import sys
import tempfile
import time
import zipfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DATA = "autograder/data"
MANIFEST = "manifest.json"
INPUT_PATTERNS = ("reference/*.py", "autograder/checks/cases_*.py", "autograder/sandbox/worker/ops_*.py")
PARTS = {"part_a": ("attention", "cases_part_a"), "part_b": ("gpt", "cases_part_b")}
FIXED_TIME = (1980, 1, 1, 0, 0, 0)
RECORD_TIMEOUT = 900.0  # seconds for one sandbox call while recording (Part B trains)
RECORD_MEMORY_MB = 2048  # the reference is trusted; grading's own limit is tested by grading it


# -- files ---------------------------------------------------------------------------------------
def sha256(path):
    with open(path, "rb") as f:
        return hashlib.sha256(f.read()).hexdigest()


def input_hashes(root):
    """{path relative to root: sha256} of every input, sorted."""
    paths = sorted({p for pattern in INPUT_PATTERNS for p in glob.glob(os.path.join(root, pattern))})
    return {os.path.relpath(p, root).replace(os.sep, "/"): sha256(p) for p in paths}


def npz_bytes(arrays):
    """An .npz whose bytes depend only on the arrays: sorted members, fixed times, no pickle."""
    import numpy as np
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", compression=zipfile.ZIP_DEFLATED) as z:
        for key in sorted(arrays):
            array = np.ascontiguousarray(arrays[key])
            if array.dtype.hasobject:
                raise ValueError(f"{key}: object arrays cannot be recorded (np.load refuses pickles)")
            member = io.BytesIO()
            np.lib.format.write_array(member, array, allow_pickle=False)
            info = zipfile.ZipInfo(f"{key}.npy", date_time=FIXED_TIME)
            info.compress_type, info.create_system, info.external_attr = zipfile.ZIP_DEFLATED, 3, 0o100644 << 16
            z.writestr(info, member.getvalue(), compresslevel=6)
    return buf.getvalue()


def _plain(x):
    """JSON for NumPy scalars and arrays that slipped into ``meta``."""
    if hasattr(x, "tolist"):
        return x.tolist()
    raise TypeError(f"{type(x).__name__} cannot be written to JSON")


def json_bytes(value):
    return (json.dumps(value, indent=1, sort_keys=True, default=_plain, allow_nan=False) + "\n").encode()


def write_bytes(path, data):
    tmp = path + ".tmp"
    with open(tmp, "wb") as f:
        f.write(data)
    os.replace(tmp, path)


# -- recording -----------------------------------------------------------------------------------
def record_parts(root):
    """{part: (arrays, meta)} from running reference/ in the sandbox; parts without a case file are skipped."""
    sys.path.insert(0, root)
    import importlib
    from autograder import loader
    from autograder.sandbox import Sandbox

    staging = tempfile.mkdtemp(prefix="ag-reference-")
    try:
        submission = loader.load(os.path.join(root, "reference"), os.path.join(staging, "reference"))
        recorded = {}
        for part, (module, cases) in PARTS.items():
            if not os.path.exists(os.path.join(root, "autograder", "checks", f"{cases}.py")):
                print(f"{part}: skipped (autograder/checks/{cases}.py does not exist yet)")
                continue
            record = getattr(importlib.import_module(f"autograder.checks.{cases}"), "record", None)
            if record is None:
                raise SystemExit(f"autograder/checks/{cases}.py has no record() function")
            start = time.monotonic()
            with Sandbox(submission.staged, timeout=RECORD_TIMEOUT, memory_mb=RECORD_MEMORY_MB) as sb:
                if module == "attention":
                    def run(name, *args, **kwargs):
                        return sb.call("call", module="attention", name=name, args=list(args), kwargs=kwargs)["value"]
                else:
                    def run(op, **args):
                        return sb.call(op, module="gpt", **args)
                recorded[part] = record(run)
            arrays, meta = recorded[part]
            print(f"{part}: {len(arrays)} arrays, {len(meta)} meta entries ({time.monotonic() - start:.1f} s)")
        return recorded
    finally:
        shutil.rmtree(staging, ignore_errors=True)


def find_seeds(meta, prefix=""):
    """{"quality.seed": 0, ...}: every entry of ``meta`` (nested dicts too) whose key names a seed."""
    found = {}
    for key, value in meta.items():
        if isinstance(value, dict):
            found.update(find_seeds(value, f"{prefix}{key}."))
        elif "seed" in str(key).lower():
            found[f"{prefix}{key}"] = value
    return found


def versions():
    from importlib import metadata
    found = {"python": platform.python_version()}
    for lib in ("numpy", "torch"):
        try:
            found[lib] = metadata.version(lib)
        except metadata.PackageNotFoundError:
            found[lib] = None
    return found


def write_outputs(root, data_dir, recorded, inputs):
    """Write the data files and the manifest describing them."""
    os.makedirs(data_dir, exist_ok=True)
    outputs, seeds = {}, {}
    for part, (arrays, meta) in sorted(recorded.items()):
        for name, data in ((f"{part}.npz", npz_bytes(arrays)), (f"{part}.json", json_bytes(meta))):
            write_bytes(os.path.join(data_dir, name), data)
            outputs[f"{DATA}/{name}"] = hashlib.sha256(data).hexdigest()
        seeds[part] = find_seeds(meta)
    manifest = {"written_by": "make reference (tools/make_reference.py); checked by make check-reference",
                "versions": versions(), "seeds": seeds, "inputs": inputs, "outputs": outputs}
    write_bytes(os.path.join(data_dir, MANIFEST), json_bytes(manifest))
    return manifest


# -- checking ------------------------------------------------------------------------------------
def stale(root, data_dir):
    """What is stale, one line each (empty when fresh). Reads hashes only; runs nothing."""
    path = os.path.join(data_dir, MANIFEST)
    if not os.path.exists(path):
        return [f"{DATA}/{MANIFEST} is missing: the expected outputs were never recorded"]
    with open(path, encoding="utf-8") as f:
        manifest = json.load(f)
    recorded, current = manifest.get("inputs", {}), input_hashes(root)
    problems = [f"input changed since the last recording: {p}" for p in sorted(current)
                if p in recorded and recorded[p] != current[p]]
    problems += [f"new input, not recorded: {p}" for p in sorted(set(current) - set(recorded))]
    problems += [f"input recorded but gone: {p}" for p in sorted(set(recorded) - set(current))]
    for p, digest in sorted(manifest.get("outputs", {}).items()):
        file = os.path.join(data_dir, os.path.basename(p))
        if not os.path.exists(file):
            problems.append(f"output missing: {p}")
        elif sha256(file) != digest:
            problems.append(f"output differs from what was recorded (edited by hand?): {p}")
    return problems


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--check", action="store_true", help="run nothing; exit 1 if anything is stale")
    parser.add_argument("--root", default=ROOT, help="the project folder (default: this checkout)")
    parser.add_argument("--data", default=None, help=f"where the outputs go (default: ROOT/{DATA})")
    args = parser.parse_args(argv)
    root = os.path.abspath(args.root)
    data_dir = os.path.abspath(args.data or os.path.join(root, DATA))
    if args.check:
        problems = stale(root, data_dir)
        if problems:
            print("the expected outputs in autograder/data/ are stale:", file=sys.stderr)
            print("".join(f"  {p}\n" for p in problems), end="", file=sys.stderr)
            print("run `make reference` and commit autograder/data/", file=sys.stderr)
            return 1
        with open(os.path.join(data_dir, MANIFEST), encoding="utf-8") as f:
            manifest = json.load(f)
        v = manifest["versions"]
        print(f"autograder/data is up to date: {len(manifest['inputs'])} inputs, {len(manifest['outputs'])} outputs "
              f"(recorded with python {v['python']}, numpy {v['numpy']}, torch {v['torch']})")
        now = versions()
        if now != v:
            print(f"note: this machine has {now}; expected values may differ in the last digits", file=sys.stderr)
        return 0
    start = time.monotonic()
    inputs = input_hashes(root)
    manifest = write_outputs(root, data_dir, record_parts(root), inputs)
    shown = os.path.relpath(data_dir) if not os.path.relpath(data_dir).startswith("..") else data_dir
    print(f"wrote {len(manifest['outputs'])} files and {MANIFEST} to {shown} "
          f"in {time.monotonic() - start:.1f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
