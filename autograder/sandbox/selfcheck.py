"""Can this machine grade? ``python3 -m autograder.sandbox.selfcheck`` (gradescope/setup.sh runs
it at the end of the image build, so a bad image fails there, not at grading).

A worker under the grader's own limits (the same ``Sandbox`` defaults, user, address space
and memory) must import numpy and torch before any student code, and torch must be the CPU
build (a CUDA build maps gigabytes of libraries that do not fit the address-space limit, and
is not what the pin asks for). Prints how student code is isolated; exits 1 with the reason
when grading would fail.
"""
import os
import shutil
import sys
import tempfile

from .runner import GraderError, Sandbox, StudentError

PROBE = '''
import numpy, torch


def facts():
    return {"numpy": numpy.__version__, "torch": torch.__version__, "cuda": torch.version.cuda,
            "x": float(torch.ones(3).sum())}
'''


def check():
    """(ok, lines to print)."""
    folder = tempfile.mkdtemp(prefix="ag-selfcheck-")
    try:
        with open(os.path.join(folder, "probe.py"), "w") as f:
            f.write(PROBE)
        os.chmod(folder, 0o755)
        with Sandbox(folder, preload=("numpy", "torch"), timeout=120.0) as sb:
            facts = sb.call("call", module="probe", name="facts")["value"]
            isolation = sb.isolation
    except (GraderError, StudentError, OSError, RuntimeError) as e:
        return False, [f"autograder self-check FAILED: a sandbox worker under the grader's limits cannot "
                       f"import numpy and torch: {e}"]
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    lines = [f"sandbox worker: python {sys.version.split()[0]}, numpy {facts['numpy']}, torch {facts['torch']}",
             "isolation: " + ", ".join(f"{k} {v}" for k, v in isolation.items())]
    if facts["cuda"] is not None or facts["x"] != 3.0:
        return False, lines + [f"autograder self-check FAILED: torch {facts['torch']} is a CUDA build (CUDA "
                               f"{facts['cuda']}); install the CPU build (setup.sh's --index-url)"]
    if isolation.get("network") == "open":
        lines.append("WARNING: student code will have network access (no network namespace, no seccomp filter: "
                     "install python3-seccomp or pyseccomp); results.json will tell staff")
    return True, lines + ["autograder self-check passed"]


def main():
    ok, lines = check()
    print("\n".join(lines), file=sys.stdout if ok else sys.stderr)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
