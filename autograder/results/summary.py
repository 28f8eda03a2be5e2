"""The top-level ``output`` of results.json: students see it even while tests are hidden.

    attention.py: graded from "hw/attention.py"
    gpt.py: not found
    part-a: 18 / 20 points in the tests shown now (30 more points in tests shown after grades are published)
    part-b: 0 / 25 points in the tests shown now (25 more points in tests shown after grades are published)
    note: gpt.py was not found in your submission
          cell 4: `plt.plot(losses)` (top-level code)

Two rules. A part's line totals the tests a student can see now (visibility "visible") and
only counts the points of the others, so hidden results cannot be worked out. Whatever the
submission controls (file and folder names, notes that quote its cells) cannot make a line of
its own: names are quoted on one line, every line of a note is indented under ``note:``, and
control characters are escaped, so every line that starts at the margin is the grader's.
"""
from .clean import clean_text, one_line

PARTS = ("part-a", "part-b")
NOT_YET = {  # visibility -> the tests' description
    "after_due_date": "tests shown after the due date",
    "after_published": "tests shown after grades are published",
    "hidden": "hidden tests",
}
INDENT = " " * len("note: ")


def _get(result, key):
    return result.get(key) if isinstance(result, dict) else getattr(result, key, None)


def _points(x):
    x = round(float(x), 4)
    return f"{x:g} point" + ("" if x == 1 else "s")


def _number(x):
    return f"{round(float(x), 4):g}"


def part_line(part, results):
    """One part's line, counting only what students see now; None if the part has no tests."""
    if not results:
        return None
    shown = [r for r in results if _get(r, "visibility") == "visible"]
    later = []
    for visibility, what in NOT_YET.items():
        points = sum(float(_get(r, "max_score")) for r in results if _get(r, "visibility") == visibility)
        if points:
            more = "more " if shown and not later else ""
            later.append(f"{_number(points)} {more}point{'' if points == 1 else 's'} in {what}")
    later_text = ", ".join(later)
    if not shown:
        return f"{part}: no tests shown now" + (f" ({later_text})" if later else "")
    score = sum(float(_get(r, "score")) for r in shown)
    top = sum(float(_get(r, "max_score")) for r in shown)
    line = f"{part}: {_number(score)} / {_points(top)}"
    return line + (f" in the tests shown now ({later_text})" if later else "")


def note_lines(note):
    """A loader note as lines: the first after ``note:``, the others indented beneath it."""
    pieces = clean_text(note).split("\n")
    pieces = [p for p in pieces if p.strip()] or [""]
    return [f"note: {pieces[0]}"] + [INDENT + p for p in pieces[1:]]


def summary(results, found, notes):
    """The top-level output. ``results``: TestResult objects (or Gradescope test dicts);
    ``found``: module name -> the path it was graded from, or None; ``notes``: the loader's."""
    # the loader already escaped the names it found (tests/test_hostile_loader.py): keep them on one
    # line in quotes without escaping their escapes again
    lines = [f"{one_line(module)}.py: " + (f'graded from "{one_line(where)}"' if where else "not found")
             for module, where in found.items()]
    for part in PARTS:
        line = part_line(part, [r for r in results if (_get(r, "tags") or [None])[0] == part])
        if line:
            lines.append(line)
    for note in notes:
        lines += note_lines(note)
    return "\n".join(lines)
