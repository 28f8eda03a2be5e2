#!/usr/bin/env bash
# Gradescope runs this once, as root, while it builds the autograder's image (Ubuntu 22.04,
# python3 3.10). It installs what grading needs for the image's python3, creates the
# unprivileged user that student code runs as, and fails the build unless a sandbox worker
# under the grader's own limits can import numpy and torch (the CPU build). Written into
# dist/autograder.zip by `make autograder` (tools/make_autograder.py), which fills in the
# torch pin below from the Makefile's TORCH variable: edit the pin there, not here.
# AUTOGRADER_SETUP_CHECK_ONLY=1 skips the installs and runs only the final check (tests).
set -euo pipefail

# The PyTorch project's index of CPU-only wheels (the default torch wheel pulls in CUDA, GBs).
TORCH_CPU_INDEX_URL="https://download.pytorch.org/whl/cpu"
TORCH_REQUIREMENT="@TORCH_REQUIREMENT@"
# The sandbox runs student code as this user (autograder/sandbox/uids.py looks it up by name).
SANDBOX_USER="ag-student"

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
export DEBIAN_FRONTEND=noninteractive PIP_NO_CACHE_DIR=1 PIP_ROOT_USER_ACTION=ignore
export PIP_BREAK_SYSTEM_PACKAGES=1  # newer images mark the system Python as externally managed

if [ "${AUTOGRADER_SETUP_CHECK_ONLY:-0}" != 1 ]; then
    if ! python3 -m pip --version >/dev/null 2>&1; then
        apt-get update
        apt-get install -y --no-install-recommends python3-pip
    fi

    python3 -m pip install -r "$HERE/requirements.txt"
    python3 -m pip install --index-url "$TORCH_CPU_INDEX_URL" "$TORCH_REQUIREMENT"

    # The worker's seccomp filter (no network where Docker refuses a network namespace) needs
    # libseccomp: pyseccomp comes with requirements.txt; Ubuntu's own bindings otherwise.
    if ! python3 -c "import pyseccomp" >/dev/null 2>&1 && ! python3 -c "import seccomp" >/dev/null 2>&1; then
        apt-get update
        apt-get install -y --no-install-recommends libseccomp2 python3-seccomp
    fi

    if ! id -u "$SANDBOX_USER" >/dev/null 2>&1; then
        useradd --system --no-create-home --home-dir /nonexistent --shell /usr/sbin/nologin "$SANDBOX_USER"
    fi
fi

python3 - <<'PY'
import sys, numpy, torch, nbformat, gradescope_utils  # noqa: F401  fail the build here, not at grading
print(f"autograder packages: python {sys.version.split()[0]}, numpy {numpy.__version__}, torch {torch.__version__}")
PY

# A worker under the grader's own limits (user, address space, memory) must import numpy and
# torch, and torch must be the CPU build: otherwise every grade would fail, so the build does.
cd "$HERE" && python3 -m autograder.sandbox.selfcheck
