"""dist/autograder.zip, unpacked the way Gradescope unpacks it, grades submissions into a
results.json that follows Gradescope's specification (tests/gradescope_schema.json)."""
import json
import os
import re
import shutil
import stat
import subprocess
import sys
import zipfile

import jsonschema
import pytest
from test_notebook_submission import build_notebook

from conftest import HANDOUT, REFERENCE, REPO

SCHEMA = os.path.join(REPO, "tests", "gradescope_schema.json")
VENV_BIN = os.path.dirname(sys.executable)  # the project's .venv/bin when run by `make test`


def torch_pin():
    """The one torch pin: the Makefile's TORCH variable."""
    with open(os.path.join(REPO, "Makefile")) as f:
        return re.search(r"^TORCH\s*\?=\s*(\S+)", f.read(), re.M).group(1)


def build(out):
    subprocess.run([sys.executable, os.path.join("tools", "make_autograder.py"), "--torch", torch_pin(),
                    "--out", str(out), "--allow-stale"], cwd=REPO, check=True, capture_output=True, text=True)
    return out


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    return build(tmp_path_factory.mktemp("dist") / "autograder.zip")


def unpack(zip_path, root, submission):
    """Gradescope's layout: source/ (the zip), submission/, results/, submission_metadata.json."""
    with zipfile.ZipFile(zip_path) as z:
        z.extractall(root / "source")
        for info in z.infolist():  # extractall drops the modes; Gradescope keeps them
            os.chmod(root / "source" / info.filename, (info.external_attr >> 16) & 0o777)
    shutil.copy(root / "source" / "run_autograder", root / "run_autograder")
    if os.path.isdir(submission):
        shutil.copytree(submission, root / "submission")
    else:
        (root / "submission").mkdir()
        shutil.copy(submission, root / "submission")
    (root / "results").mkdir()
    (root / "submission_metadata.json").write_text(json.dumps({"id": 1, "users": [{"name": "A Student"}]}))


def run_autograder(root, path_first=VENV_BIN):
    env = dict(os.environ, AUTOGRADER_ROOT=str(root), PATH=f"{path_first}{os.pathsep}{os.environ['PATH']}")
    proc = subprocess.run([str(root / "run_autograder")], env=env, capture_output=True, text=True, timeout=900)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    with open(root / "results" / "results.json") as f:
        document = json.load(f)
    with open(SCHEMA) as f:
        jsonschema.Draft202012Validator(json.load(f)).validate(document)
    if "score" in document:
        assert document["score"] == pytest.approx(sum(t["score"] for t in document["tests"]), abs=1e-6)
    assert stat.S_IMODE(os.stat(root / "source").st_mode) & 0o077 == 0, "source/ is readable by others"
    return document, proc.stdout


def full_marks(document):
    failed = [f"{t['name']}: {t['output'][:300]}" for t in document["tests"] if t["status"] != "passed"]
    assert not failed, "\n".join(failed)
    assert document["score"] == sum(t["max_score"] for t in document["tests"]) > 0


# -- the zip itself -------------------------------------------------------------------------------
def test_the_zip_has_the_scripts_at_its_root_executable(built):
    with zipfile.ZipFile(built) as z:
        modes = {i.filename: (i.external_attr >> 16) & 0o777 for i in z.infolist()}
    assert modes["setup.sh"] == modes["run_autograder"] == 0o755
    assert modes["requirements.txt"] == 0o644


def test_the_zip_holds_exactly_what_grading_needs(built):
    with zipfile.ZipFile(built) as z:
        names = set(z.namelist())
    assert {"autograder/__main__.py", "autograder/grade.py", "autograder/sandbox/worker/main.py",
            "reference/__init__.py", "reference/corpus.py", "requirements.txt"} <= names
    data = {f"autograder/data/{n}" for n in os.listdir(os.path.join(REPO, "autograder", "data"))}
    assert data <= names
    top = {n.split("/")[0] for n in names}
    assert top == {"autograder", "reference", "setup.sh", "run_autograder", "requirements.txt"}
    assert {n for n in names if n.startswith("reference/")} == {"reference/__init__.py", "reference/corpus.py"}
    assert not [n for n in names if "__pycache__" in n or n.endswith(".pyc") or "/." in n or n.startswith(".")]


def test_the_zip_is_byte_for_byte_reproducible(built, tmp_path):
    assert build(tmp_path / "again.zip").read_bytes() == built.read_bytes()
    with zipfile.ZipFile(built) as z:
        assert [i.filename for i in z.infolist()] == sorted(z.namelist())
        assert {i.date_time for i in z.infolist()} == {(1980, 1, 1, 0, 0, 0)}


def test_setup_installs_the_makefile_torch_pin_on_the_cpu_index_and_creates_the_sandbox_user(built):
    with zipfile.ZipFile(built) as z:
        setup = z.read("setup.sh").decode()
        requirements = z.read("requirements.txt").decode().split()
    assert f'TORCH_REQUIREMENT="{torch_pin()}"' in setup and "@TORCH_REQUIREMENT@" not in setup
    assert '--index-url "$TORCH_CPU_INDEX_URL" "$TORCH_REQUIREMENT"' in setup
    assert 'SANDBOX_USER="ag-student"' in setup and "useradd" in setup and "python3-pip" in setup
    assert {"numpy>=1.23", "gradescope-utils==0.5.0", "nbformat>=5.7"} <= set(requirements)
    for script in ("setup.sh", "run_autograder"):
        subprocess.run(["bash", "-n", os.path.join(REPO, "gradescope", script)], check=True)


def test_the_unpacked_grader_imports_from_source_not_from_the_checkout(built, tmp_path):
    unpack(built, tmp_path, os.path.join(REFERENCE, "attention.py"))
    out = subprocess.run([os.path.join(VENV_BIN, "python3"), "-c",
                          "import autograder, reference.corpus; print(autograder.__file__, reference.corpus.__file__)"],
                         cwd=tmp_path / "source", capture_output=True, text=True, check=True).stdout
    assert out.split() == [str(tmp_path / "source" / "autograder" / "__init__.py"),
                           str(tmp_path / "source" / "reference" / "corpus.py")]


def test_a_results_file_is_left_even_when_python_cannot_start(built, tmp_path):
    unpack(built, tmp_path, os.path.join(REFERENCE, "attention.py"))
    broken = tmp_path / "broken-bin"
    broken.mkdir()
    (broken / "python3").write_text("#!/bin/sh\nexit 3\n")
    (broken / "python3").chmod(0o755)
    document, _ = run_autograder(tmp_path, path_first=broken)
    assert document["score"] == 0 and "exit code 3" in document["tests"][0]["output"]


# -- three full grades: reference, handout, notebook ---------------------------------------------
def test_the_reference_gets_full_marks(built, tmp_path):
    unpack(built, tmp_path, REFERENCE)
    document, stdout = run_autograder(tmp_path)
    full_marks(document)
    assert {t["tags"][0] for t in document["tests"]} == {"part-a", "part-b"}
    assert "TOTAL" in stdout


def test_the_untouched_handout_gets_zero(built, tmp_path):
    unpack(built, tmp_path, HANDOUT)
    document, _ = run_autograder(tmp_path)
    assert document["tests"] and not any("grader" in t["tags"] for t in document["tests"])
    assert document["score"] == 0
    assert "NotImplementedError" in "".join(t["output"] for t in document["tests"])


def test_a_notebook_submission_gets_full_marks(built, tmp_path):
    notebook = build_notebook(tmp_path / "hw11.ipynb")
    unpack(built, tmp_path / "root", notebook)
    document, _ = run_autograder(tmp_path / "root")
    full_marks(document)
    assert "time.sleep(600)" in document["output"]


# -- the image build fails unless a worker under the grader's limits can import torch (CPU) ------
STAND_INS = {
    "fits": "",
    "maps 3 GiB at import, like a CUDA build": "import mmap\n_libraries = mmap.mmap(-1, 3 * 2**30)\n",
    "a CUDA build": "version.cuda = '12.1'\n",
}
STAND_IN = '''"""A stand-in for torch: just what the self-check asks of it."""
__version__ = "0.0+standin"


class version:
    cuda = None


class _Ones:
    def __init__(self, n):
        self.n = n

    def sum(self):
        return float(self.n)


def ones(n):
    return _Ones(n)
'''


@pytest.fixture(scope="module")
def standin_python(tmp_path_factory):
    """A Python environment the sandbox user can run whose torch is a stand-in (ahead of the
    project's packages, which a .pth file adds after it)."""
    import site
    import tempfile
    folder = tempfile.mkdtemp(prefix="ag-test-standin-")
    os.chmod(folder, 0o755)
    subprocess.run([getattr(sys, "_base_executable", sys.executable), "-m", "venv", "--without-pip", folder],
                   check=True, capture_output=True)
    packages = os.path.join(folder, "lib", f"python{sys.version_info[0]}.{sys.version_info[1]}", "site-packages")
    with open(os.path.join(packages, "project.pth"), "w") as f:
        f.write("\n".join(site.getsitepackages()) + "\n")
    os.mkdir(os.path.join(packages, "torch"))
    subprocess.run(["chmod", "-R", "a+rX", folder], check=True)
    yield folder, os.path.join(packages, "torch", "__init__.py")
    shutil.rmtree(folder)


@pytest.mark.parametrize("standin", STAND_INS)
def test_the_setup_fails_the_image_build_unless_a_limited_worker_imports_the_cpu_torch(built, tmp_path, standin_python,
                                                                                       standin):
    if os.geteuid() != 0:
        pytest.skip("setup.sh runs as root")
    folder, torch_init = standin_python
    with open(torch_init, "w") as f:
        f.write(STAND_IN + STAND_INS[standin])
    unpack(built, tmp_path, os.path.join(REFERENCE, "attention.py"))
    env = dict(os.environ, AUTOGRADER_SETUP_CHECK_ONLY="1",
               PATH=f"{os.path.join(folder, 'bin')}{os.pathsep}{os.environ['PATH']}")
    proc = subprocess.run(["bash", str(tmp_path / "source" / "setup.sh")], env=env, capture_output=True, text=True,
                          timeout=300)
    if standin == "fits":
        assert proc.returncode == 0, proc.stdout + proc.stderr
        assert "torch 0.0+standin" in proc.stdout and "self-check passed" in proc.stdout
    else:
        assert proc.returncode != 0, proc.stdout
        assert "self-check FAILED" in proc.stderr, proc.stderr
        assert ("Cannot allocate memory" in proc.stderr) if "maps" in standin else ("CUDA build" in proc.stderr)
