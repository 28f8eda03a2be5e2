"""Record the expected outputs from reference/ (``make reference``), or check they are fresh
(``make check-reference``).

    python tools/make_reference.py             # re-record the parts whose inputs changed
    python tools/make_reference.py --force     # re-record every part
    python tools/make_reference.py --check     # run nothing; exit 1 naming every stale input or output

Recording stages reference/ as a submission and runs it in the sandbox, exactly as a student
is run: ``part_a.base.record(call)`` and ``part_b.cases.record(run)`` return ``(arrays, meta)``,
written to ``part_X.npz`` (sorted members, fixed timestamps: the bytes depend only on the
values) and ``part_X.json``. ``manifest.json`` records, per part, the sha256 of its inputs (the
reference files and worker code it runs, and the values of its cases, so rewording a check
changes nothing) and of its outputs, plus the seeds and library versions. ``--check`` compares
only those hashes. A part whose inputs did not change is not recorded again, so its bytes stay.
"""
import argparse
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
WORKER = ("autograder/sandbox/worker/ops_common.py", "autograder/sandbox/worker/student.py")
# part -> (student module, the files whose contents the recorded outputs depend on)
PARTS = {
    "part_a": ("attention", ("reference/attention.py", *WORKER)),
    "part_b": ("gpt", ("reference/gpt.py", "reference/corpus.py", "autograder/sandbox/worker/ops_part_b.py",
                       "autograder/sandbox/worker/training.py", "autograder/checks/gpt2.py", *WORKER)),
}
FIXED_TIME = (1980, 1, 1, 0, 0, 0)
RECORD_TIMEOUT = 900.0  # seconds for one sandbox call while recording (Part B trains)
RECORD_MEMORY_MB = 2048  # the reference is trusted; grading's own limit is tested by grading it


# -- files and hashes ------------------------------------------------------------------------------
def sha256(path):
    with open(path, "rb") as f:
        return hashlib.sha256(f.read()).hexdigest()


def _feed(h, value):
    """Hash a nest of dicts, lists, scalars and arrays by value (dtype, shape and bytes)."""
    import numpy as np
    if isinstance(value, dict):
        for k in sorted(value):
            h.update(f"<{k}>".encode())
            _feed(h, value[k])
    elif isinstance(value, (list, tuple)):
        h.update(b"[")
        for v in value:
            _feed(h, v)
        h.update(b"]")
    elif isinstance(value, np.ndarray):
        h.update(f"{value.dtype.str}{value.shape}".encode())
        h.update(np.ascontiguousarray(value).tobytes())
    else:
        h.update(repr(value).encode())


def case_values(part, root):
    """Everything the part's cases feed the reference, by value."""
    sys.path.insert(0, root)
    if part == "part_a":
        from autograder.checks.part_a import base
        return {c: base.inputs(c) for g in sorted(base.concepts()) for c in base._cases(g)}
    from autograder.checks.part_b import cases, quality_data
    from reference import corpus
    d = quality_data.data(corpus)
    return {"inputs": cases.inputs(), "weights": {n: cases.weight_set(n) for n in cases.WEIGHT_SEEDS},
            "configs": [cases.CONFIG, cases.STRUCTURE_CONFIG],
            "quality": [quality_data.QUALITY, quality_data.THRESHOLDS],
            "training": [d.config, d.init, d.tokens, d.starts, d.val, d.counted],
            "sampler": [cases.SAMPLER_LOGITS, cases.TEMPERATURES, cases.TOP_KS, cases.GENERATE_DRAWS, cases.N_DRAWS,
                        cases.ALPHA, cases.GREEDY, cases.PROBE_POSITIONS, cases.GRAD_POSITION]}


def input_hashes(root, part):
    """{input: sha256} of ``part``: its files, and "cases" for the values its cases feed."""
    found = {p: sha256(os.path.join(root, p)) for p in PARTS[part][1]}
    h = hashlib.sha256()
    _feed(h, case_values(part, root))
    found["cases"] = h.hexdigest()
    return found


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
def record_parts(root, parts=tuple(PARTS)):
    """{part: (arrays, meta)} from running reference/ in the sandbox."""
    sys.path.insert(0, root)
    from autograder import loader
    from autograder.checks.part_a import base as part_a
    from autograder.checks.part_b import cases as part_b
    from autograder.sandbox import Sandbox

    staging = tempfile.mkdtemp(prefix="ag-reference-")
    try:
        submission = loader.load(os.path.join(root, "reference"), os.path.join(staging, "reference"))
        recorded = {}
        for part in parts:
            module = PARTS[part][0]
            start = time.monotonic()
            with Sandbox(submission.staged, timeout=RECORD_TIMEOUT, memory_mb=RECORD_MEMORY_MB) as sb:
                if part == "part_a":
                    def call(name, *args, sb=sb, module=module):
                        return sb.call("call", module=module, name=name, args=list(args))["value"]
                    recorded[part] = part_a.record(call)
                else:
                    def run(op, sb=sb, module=module, **args):
                        return sb.call(op, module=module, **args)
                    recorded[part] = part_b.record(run)
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


def read_manifest(data_dir):
    try:
        with open(os.path.join(data_dir, MANIFEST), encoding="utf-8") as f:
            return json.load(f)
    except (OSError, ValueError):
        return None


def write_outputs(data_dir, recorded, inputs, manifest=None):
    """Write the recorded parts' data files and a manifest describing every part (the parts not
    recorded now keep their entries of ``manifest``)."""
    os.makedirs(data_dir, exist_ok=True)
    parts = dict((manifest or {}).get("parts", {}))
    for part, (arrays, meta) in sorted(recorded.items()):
        outputs = {}
        for name, data in ((f"{part}.npz", npz_bytes(arrays)), (f"{part}.json", json_bytes(meta))):
            write_bytes(os.path.join(data_dir, name), data)
            outputs[f"{DATA}/{name}"] = hashlib.sha256(data).hexdigest()
        parts[part] = {"inputs": inputs[part], "outputs": outputs, "seeds": find_seeds(meta), "versions": versions()}
    manifest = {"written_by": "make reference (tools/make_reference.py); checked by make check-reference",
                "parts": dict(sorted(parts.items()))}
    write_bytes(os.path.join(data_dir, MANIFEST), json_bytes(manifest))
    return manifest


# -- checking ------------------------------------------------------------------------------------
def stale(root, data_dir, parts=tuple(PARTS)):
    """{part: [what is stale, one line each]} (empty lists when fresh). Reads hashes; runs no student code."""
    manifest = read_manifest(data_dir)
    if manifest is None or "parts" not in manifest:
        return {part: [f"{DATA}/{MANIFEST} is missing or from an older format: the expected outputs were never "
                       "recorded this way"] for part in parts}
    found = {}
    for part in parts:
        entry = manifest["parts"].get(part)
        if entry is None:
            found[part] = [f"{part} was never recorded"]
            continue
        recorded, current = entry.get("inputs", {}), input_hashes(root, part)
        problems = [f"input changed since the last recording: {p}" for p in sorted(current)
                    if p in recorded and recorded[p] != current[p]]
        problems += [f"new input, not recorded: {p}" for p in sorted(set(current) - set(recorded))]
        problems += [f"input recorded but gone: {p}" for p in sorted(set(recorded) - set(current))]
        for p, digest in sorted(entry.get("outputs", {}).items()):
            file = os.path.join(data_dir, os.path.basename(p))
            if not os.path.exists(file):
                problems.append(f"output missing: {p}")
            elif sha256(file) != digest:
                problems.append(f"output differs from what was recorded (edited by hand?): {p}")
        found[part] = problems
    return found


def to_record(problems, force=False):
    """The parts ``make reference`` records: those with a stale input or output (every part with ``force``)."""
    return [p for p in PARTS if force or problems.get(p)]


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--check", action="store_true", help="run nothing; exit 1 if anything is stale")
    parser.add_argument("--force", action="store_true", help="re-record every part, changed or not")
    parser.add_argument("--root", default=ROOT, help="the project folder (default: this checkout)")
    parser.add_argument("--data", default=None, help=f"where the outputs go (default: ROOT/{DATA})")
    args = parser.parse_args(argv)
    root = os.path.abspath(args.root)
    data_dir = os.path.abspath(args.data or os.path.join(root, DATA))
    problems = stale(root, data_dir)
    if args.check:
        lines = [f"{part}: {p}" for part, ps in problems.items() for p in ps]
        if lines:
            print("the expected outputs in autograder/data/ are stale:", file=sys.stderr)
            print("".join(f"  {line}\n" for line in lines), end="", file=sys.stderr)
            print("run `make reference` and commit autograder/data/", file=sys.stderr)
            return 1
        manifest = read_manifest(data_dir)
        for part, entry in manifest["parts"].items():
            v = entry["versions"]
            print(f"{part} is up to date: {len(entry['inputs'])} inputs, {len(entry['outputs'])} outputs "
                  "(recorded with "
                  f"python {v['python']}, numpy {v['numpy']}, torch {v['torch']})")
        return 0
    parts = to_record(problems, args.force)
    if not parts:
        print("nothing to record: every part's inputs are unchanged (--force records anyway)")
        return 0
    start = time.monotonic()
    inputs = {p: input_hashes(root, p) for p in parts}
    manifest = write_outputs(data_dir, record_parts(root, parts), inputs, read_manifest(data_dir))
    shown = os.path.relpath(data_dir) if not os.path.relpath(data_dir).startswith("..") else data_dir
    print(f"recorded {', '.join(parts)} into {shown} in {time.monotonic() - start:.1f} s "
          f"({len(manifest['parts'])} parts in {MANIFEST})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
