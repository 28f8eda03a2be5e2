"""The figures the docs quote are measurements (`make bench` records them in
docs/measured.json and rewrites the docs), and the docs point only at files that exist."""
import os
import re
import sys

from conftest import REPO

sys.path.insert(0, os.path.join(REPO, "tools"))
import docfigures


def test_every_quoted_figure_is_the_measured_one():
    drift = docfigures.drift()
    assert not drift, "run `make bench` (it rewrites these), or fix by hand:\n" + "\n".join(drift)


def test_the_measured_figures_say_when_they_were_measured():
    measured = docfigures.load()
    assert re.fullmatch(r"\d{4}-\d{2}-\d{2}", measured["date"])
    assert {"grade_seconds", "peak_rss_mb", "public_tests_seconds"} <= set(measured)


def test_the_docs_link_only_files_that_exist():
    missing = []
    for doc in ("README.md", "docs/ARCHITECTURE.md", "docs/THREAT_MODEL.md", "docs/WORKFLOWS.md",
                "docs/CALIBRATION.md", "docs/ADDING_A_CHECK.md", "handout/README.md"):
        with open(os.path.join(REPO, doc), encoding="utf-8") as f:
            for target in re.findall(r"\]\(([^)#\s]+)\)", f.read()):
                path = os.path.join(REPO, os.path.dirname(doc), target)
                if not target.startswith("http") and not os.path.exists(path):
                    missing.append(f"{doc} -> {target}")
    assert not missing, missing
