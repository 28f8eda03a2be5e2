"""A readable table of a results.json, for people at a terminal (``python -m autograder grade``
without ``--quiet``, ``make demo``).

The summary comes first (where each file was graded from, each part's points, the loader's
notes: skipped notebook cells, files not found), then one row per test. Under a failed test
its feedback is wrapped, not cut, up to ``max_lines`` lines; lines naming a diagnosis ("This
looks like a known bug: ...", "Likely cause: ...") are always shown, and what is left out is
counted ("... (N more lines in results.json)"). Control characters print as escapes.
"""
import sys
import textwrap

from .results.clean import clean_text

KEEP = ("This looks like a known bug", "Likely cause", "The grader failed", "The autograder")
NUMBER, POINTS, MARK = 8, 14, 6  # columns; the test's name takes the rest of the width
FEEDBACK_INDENT = " " * (NUMBER + 2)
SUMMARY_LINES = 40


def _emit(text, file):
    stream = file if file is not None else sys.stdout
    try:
        stream.write(text + "\n")
    except UnicodeEncodeError:  # a terminal that is not UTF-8
        encoding = getattr(stream, "encoding", None) or "ascii"
        stream.write(text.encode(encoding, "backslashreplace").decode(encoding) + "\n")


def _wrap(line, width, indent="", more=None):
    """One line of text as display lines of at most ``width``: the first after ``indent``, the
    others after ``more`` (default ``indent``) plus the line's own indentation and two spaces."""
    line = line.rstrip().expandtabs(4)
    own = line[: len(line) - len(line.lstrip())]
    more = indent if more is None else more
    return textwrap.wrap(line, width=max(width, 20), initial_indent=indent, subsequent_indent=more + own + "  ",
                         break_long_words=True, break_on_hyphens=False, drop_whitespace=True) or [indent]


def feedback_lines(output, width=100, max_lines=12):
    """The display lines of a test's feedback: wrapped, at most ``max_lines`` (lines that name a
    diagnosis always shown), with ``... (N more lines in results.json)`` where lines were left out."""
    logical = [line for line in clean_text(output).splitlines() if line.strip()]
    first = FEEDBACK_INDENT + "-> "
    rest = FEEDBACK_INDENT + "   "
    wrapped = [_wrap(line, width, first if i == 0 else rest, rest) for i, line in enumerate(logical)]
    if sum(map(len, wrapped)) <= max_lines:
        return [d for w in wrapped for d in w]
    keep = {i for i, line in enumerate(logical) if line.lstrip().startswith(KEEP)}
    budget = max_lines - sum(len(wrapped[i]) for i in keep) - 1
    shown_any = False
    for i in range(len(logical)):
        if i in keep:
            continue
        if len(wrapped[i]) <= budget:
            keep.add(i)
            budget -= len(wrapped[i])
            shown_any = True
            continue
        if not shown_any and budget > 0:  # one very long line first: show its start
            wrapped[i] = wrapped[i][:budget]
            wrapped[i][-1] += " ..."
            keep.add(i)
        break
    out, left_out = [], 0
    for i in range(len(logical) + 1):
        if i < len(logical) and i in keep:
            if left_out:
                out.append(f"{rest}... ({left_out} more line{'s' * (left_out != 1)} in results.json)")
                left_out = 0
            out += wrapped[i]
        elif i < len(logical):
            left_out += 1
    if left_out:
        out.append(f"{rest}... ({left_out} more line{'s' * (left_out != 1)} in results.json)")
    return out


def summary_lines(output, width=100, max_lines=SUMMARY_LINES):
    """The top-level output (graded-from lines, part lines, notes), wrapped and bounded."""
    lines = [d for line in clean_text(output).splitlines() if line.strip() for d in _wrap(line, width)]
    if len(lines) > max_lines:
        lines = lines[: max_lines - 1] + [f"... ({len(lines) - max_lines + 1} more lines in results.json)"]
    return lines


def _points(x):
    return f"{round(float(x), 4):g}"


def print_table(document, title="", file=None, width=100, max_lines=12):
    """Print ``document`` (a results.json) as a table; ``max_lines``: feedback lines per test."""
    if title:
        _emit(clean_text(title), file)
    for line in summary_lines(document.get("output", ""), width):
        _emit(line, file)
    name_width = max(width - NUMBER - POINTS - MARK, 30)
    _emit(f"{'#':<{NUMBER}}{'test':<{name_width}}{'points':^{POINTS}}".rstrip(), file)
    for t in document.get("tests", []):
        mark = "ok" if t.get("status") == "passed" else "FAIL"
        names = textwrap.wrap(clean_text(t.get("name", "?")), name_width - 1) or [""]
        points = f"{_points(t.get('score', 0)):>6} / {_points(t.get('max_score', 0)):<5}"
        _emit(f"{clean_text(t.get('number', '')):<{NUMBER}}{names[0]:<{name_width}}{points}  {mark}".rstrip(), file)
        for more in names[1:]:
            _emit(f"{'':<{NUMBER}}{more}", file)
        if (t.get("status") != "passed" or not t.get("max_score")) and (t.get("output") or "").strip():
            for line in feedback_lines(t["output"], width, max_lines):
                _emit(line, file)
    total = sum(float(t.get("max_score", 0)) for t in document.get("tests", []))
    _emit(f"{'':<{NUMBER}}{'TOTAL':<{name_width}}{_points(document.get('score', 0)):>6} / {_points(total):<5}".rstrip(),
          file)
    for e in document.get("leaderboard") or []:
        _emit(f"leaderboard: {clean_text(e.get('name', '?'))} = {clean_text(e.get('value', ''))}", file)
    _emit(f"({float(document.get('execution_time', 0)):.1f} s)", file)
