"""Figures the docs quote come from measurements, never from typing.

``make bench`` (tools/bench.py --docs) records its figures in docs/measured.json and rewrites
every ``<!-- m:KEY -->...<!-- /m -->`` span of the files in DOCS with the
figure KEY, formatted as FORMATS says. ``drift()`` lists the spans that do not say what
docs/measured.json holds (tests/test_docs.py fails on any), so a hand edit cannot drift.
"""
import datetime
import json
import os
import re

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
MEASURED = os.path.join(REPO, "docs", "measured.json")
DOCS = ("README.md", "docs/WORKFLOWS.md", "docs/THREAT_MODEL.md", "docs/CALIBRATION.md")
SPAN = re.compile(r"<!-- m:(?P<key>[\w.]+) -->(?P<text>.*?)<!-- /m -->", re.S)
FORMATS = {
    "grade_seconds": "{:.1f} s", "grade_cpu_seconds": "{:.1f} s", "part_a_seconds": "{:.1f} s",
    "part_b_seconds": "{:.1f} s", "peak_rss_mb": "{:.0f} MB", "public_tests_seconds": "{:.1f} s",
    "zip_kib": "{:.0f} KiB", "sandbox_startup_seconds": "{:.2f} s", "isolation_overhead_seconds": "{:.2f} s",
    "train_seconds": "{:.1f} s", "train_tokens_per_s": "{:,.0f} tok/s", "train_speed_ratio": "{:.2f}",
    "judge_seconds": "{:.1f} s", "val_loss": "{:.4f}", "val_loss_gap": "{:.3f}", "in_language": "{:.0%}",
    "load_before": "{:.1f}", "date": "{}",
}


def load():
    with open(MEASURED, encoding="utf-8") as f:
        return json.load(f)


def text_of(key, measured):
    return FORMATS[key].format(measured[key])


def rewrite(text, measured):
    return SPAN.sub(lambda m: f"<!-- m:{m['key']} -->{text_of(m['key'], measured)}<!-- /m -->", text)


def record(report):
    """Keep ``report``'s figures in docs/measured.json and rewrite the docs' spans; returns the files changed."""
    measured = {k: report[k] for k in FORMATS if k in report}
    measured["date"] = datetime.date.today().isoformat()
    with open(MEASURED, "w", encoding="utf-8") as f:
        json.dump(dict(sorted(measured.items())), f, indent=1)
        f.write("\n")
    changed = [MEASURED]
    for doc in DOCS:
        path = os.path.join(REPO, doc)
        with open(path, encoding="utf-8") as f:
            text = f.read()
        new = rewrite(text, measured)
        if new != text:
            with open(path, "w", encoding="utf-8") as f:
                f.write(new)
            changed.append(path)
    return changed


def drift():
    """["README.md: grade_seconds says '10.2 s', measured '17.3 s'", ...]: every span out of step."""
    measured, found = load(), []
    for doc in DOCS:
        with open(os.path.join(REPO, doc), encoding="utf-8") as f:
            for m in SPAN.finditer(f.read()):
                if m["key"] not in measured:
                    found.append(f"{doc}: {m['key']} is not a measured figure (docs/measured.json)")
                elif m["text"] != text_of(m["key"], measured):
                    found.append(f"{doc}: {m['key']} says {m['text']!r}, measured {text_of(m['key'], measured)!r}")
    return found
