"""The regrade's ``summary.csv``: one row per submission, and why a row needs a look.

Columns: submission, names, sids, emails (several submitters joined with "; "), total, part-a,
part-b, one column per test (its score), notes. The notes say why a row needs a look: "no
attention.py, gpt.py or notebook found", "grader fault in N tests", "the grader crashed",
"timed out after N s", "no results file", "staff-only notes in results.json", ... so an empty
submission's row differs from an untouched handout's. Entries tagged "grader" or "staff" (0-point
notices) get no column. A cell a spreadsheet would run as a formula (=, +, -, @) starts with '.
"""
import csv

from .clean import one_line
from .gradescope import CRASH_MESSAGE
from .model import number_key

PARTS = ("part-a", "part-b")
MODULES = ("attention", "gpt")
GRADER_FAULT = "The grader failed on this test; this is not your fault"
NO_FILES = "no attention.py, gpt.py or notebook found"
STAFF_NOTES = "staff-only notes in results.json"
NOT_SCORED = ("grader", "staff")  # tags of 0-point entries that are not tests (no column)


def crashed(document):
    """Whether ``document`` is the grader's crash (or unfinished-grade) document."""
    return bool(document) and (document.get("output") or "").startswith(CRASH_MESSAGE)


def grader_faults(document):
    """How many tests of ``document`` failed because of the grader, not the submission: tagged
    "grader", or feedback starting with the grader-fault sentence."""
    return sum(1 for t in (document or {}).get("tests", [])
               if "grader" in (t.get("tags") or []) or (t.get("output") or "").lstrip().startswith(GRADER_FAULT))


def grade_error(document):
    """Why a finished grade's results count as an error ("" if they do not)."""
    if crashed(document):
        return "the grader crashed (its traceback is in results.json, staff only)"
    faults = grader_faults(document)
    return f"grader fault in {faults} test{'s' * (faults != 1)} (see results.json)" if faults else ""


def missing_files(document):
    """The modules the summary says were not found (``<module>.py: not found`` lines)."""
    lines = set((document or {}).get("output", "").splitlines())
    return [m for m in MODULES if f"{m}.py: not found" in lines]


def notes(document, error, *, listed=True, has_folder=True):
    """The notes cell of one row."""
    out = [error] if error else []
    if not has_folder:
        out.append("listed in submission_metadata.yml but has no folder in the export")
    elif document and not crashed(document):
        missing = missing_files(document)
        if len(missing) == len(MODULES):
            out.append(NO_FILES)
        out += [f"no {m}.py found" for m in missing] if len(missing) < len(MODULES) else []
    if any("staff" in (t.get("tags") or []) and (t.get("output") or "").strip()
           for t in (document or {}).get("tests", [])):
        out.append(STAFF_NOTES)
    if not listed:
        out.append("not in submission_metadata.yml")
    return "; ".join(out)


def _joined(people, key):
    return "; ".join(one_line(p.get(key, "")) for p in people)


def rows(graded, people=None, *, has_metadata=False, without_folder=()):
    """(header, rows) from {submission: (document or None, error)} and the metadata's people."""
    people = people or {}
    tests = {}
    for document, _ in graded.values():
        for t in (document or {}).get("tests", []):
            if not set(NOT_SCORED) & set(t.get("tags") or []):
                tests.setdefault(t["name"], number_key(t.get("number")))
    names = sorted(tests, key=lambda n: (tests[n], n))
    out = []
    entries = [(s, *graded[s], True) for s in graded] + [(s, None, "", False) for s in without_folder]
    for submission, document, error, has_folder in sorted(entries, key=lambda e: e[0]):
        who = people.get(submission, [])
        by_name = {t["name"]: t for t in (document or {}).get("tests", [])}
        parts = [round(sum(t["score"] for t in by_name.values() if (t.get("tags") or [None])[0] == p), 4)
                 for p in PARTS]
        scored = bool(document) and not crashed(document)
        out.append([one_line(submission), _joined(who, "name"), _joined(who, "sid"), _joined(who, "email")]
                   + ([document.get("score", sum(parts))] + parts if scored else ["", "", ""])
                   + [by_name[n]["score"] if scored and n in by_name else "" for n in names]
                   + [notes(document, error, listed=submission in people or not has_metadata,
                            has_folder=has_folder)])
    return ["submission", "names", "sids", "emails", "total", *PARTS, *names, "notes"], out


def _cell(value):
    """A cell no spreadsheet runs as a formula."""
    if isinstance(value, str) and value[:1] in ("=", "+", "-", "@", "\t", "\r"):
        return "'" + value
    return value


def write(path, header, body):
    with open(path, "w", newline="", encoding="utf-8") as f:
        csv.writer(f).writerows([header] + [[_cell(v) for v in row] for row in body])
