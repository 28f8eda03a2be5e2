# Every user task is a target; README.md documents each one.
# The one pin of torch: the CPU build (an unpinned torch pulls a CUDA build of several GB).
TORCH      ?= torch==2.13.0
# A system Python the sandbox's unprivileged user can execute (not one under /root).
SYS_PYTHON ?= $(shell [ -x /usr/bin/python3 ] && /usr/bin/python3 -c 'import venv' 2>/dev/null && echo /usr/bin/python3 || echo python3)
VENV       := .venv
PY         := $(VENV)/bin/python
STAMP      := $(VENV)/.installed
EXPORT     ?=

.PHONY: install demo test lint handout reference check-reference autograder regrade validate bench clean

install: $(STAMP)

$(STAMP): pyproject.toml
	$(SYS_PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet "$(TORCH)" -e ".[dev]"
	touch $(STAMP)

demo: install
	$(PY) -m autograder grade reference --out out/demo/reference.json
	$(PY) -m autograder grade handout --out out/demo/handout.json

test: install
	$(PY) -m pytest

lint: install
	$(PY) -m ruff check .

handout: install
	$(PY) tools/make_handout.py

reference: install
	$(PY) tools/make_reference.py

check-reference: install
	$(PY) tools/make_reference.py --check

autograder: install
	$(PY) tools/make_autograder.py --torch "$(TORCH)"

regrade: install
	@test -n "$(EXPORT)" || { echo "usage: make regrade EXPORT=path/to/gradescope/export"; exit 2; }
	$(PY) -m autograder regrade "$(EXPORT)"

validate: install
	$(PY) tools/validate.py

bench: install
	$(PY) tools/bench.py --docs

clean:
	rm -rf out dist bench.json .pytest_cache
