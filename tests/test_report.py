"""The local score table shows the whole message (issue 12, item 6): wrapped feedback, the
diagnosis lines, graded-from lines and skipped notebook cells, bounded per test."""
import io
import os
import subprocess
import sys

from autograder.report import print_table
from autograder.results import crash_document, to_gradescope_dict
from autograder.results.model import TestResult as Result
from conftest import REFERENCE, REPO

DIAGNOSIS = ("This looks like a known bug: your attention weights sum to 1 down each column instead of along "
             "each row, which is what a softmax over axis 0 gives.")
SKIPPED = ("from the notebook only definitions are graded; not executed:\n"
           "  cell 3: `!pip install torch numpy` (shell command)\n"
           "  cell 7: `plt.plot(losses)` and 1 more statement (top-level code)")


def table(document, **kwargs):
    stream = io.StringIO()
    print_table(document, title="sub -> results.json", file=stream, **kwargs)
    return stream.getvalue()


def document_with(output, *, score=0, found=None, notes=()):
    from autograder.results.summary import summary
    tests = [Result("scaled_dot_product_attention: values, causal mask", 2, score, "1.5.2",
                    ["part-a", "scaled_dot_product_attention"], output=output),
             Result("softmax: rows sum to 1", 1, 1, "1.1.1", ["part-a", "softmax"])]
    found = found or {"attention": "hw11/attention.py", "gpt": None}
    return to_gradescope_dict(tests, execution_time=1.5, output=summary(tests, found, list(notes)))


def test_long_feedback_is_wrapped_not_cut_and_the_diagnosis_shows():
    first = ("scaled_dot_product_attention(Q: (2, 4, 8), K: (2, 4, 8), V: (2, 4, 8), mask: (4, 4)) -> the output "
             "has wrong values: 64 of 64 entries are off; the largest error is 0.884, at index (1, 3, 2)")
    text = table(document_with(first + "\n" + DIAGNOSIS), width=100)
    lines = text.splitlines()
    assert all(len(line) <= 100 for line in lines), max(lines, key=len)
    flowing = " ".join(line.strip().removeprefix("-> ") for line in lines)
    assert first in flowing and DIAGNOSIS in flowing
    assert 'attention.py: graded from "hw11/attention.py"' in lines and "gpt.py: not found" in lines


def test_a_long_message_is_bounded_and_keeps_its_diagnosis_lines():
    body = "\n".join(f"  detail line {i}" for i in range(40))
    output = f"softmax(x: (4, 6)) -> wrong values\n{body}\n{DIAGNOSIS}\nLikely cause: the sum is over axis 0"
    text = table(document_with(output), max_lines=12)
    feedback = text.split("1.5.2", 1)[1].split("1.1.1", 1)[0].splitlines()[1:]
    assert len(feedback) <= 12, feedback
    assert "detail line 0" in text and "detail line 39" not in text
    assert "Likely cause: the sum is over axis 0" in text and "This looks like a known bug" in text
    shown = sum(f"detail line {i}\n" in text + "\n" for i in range(40))
    assert f"... ({40 - shown} more lines in results.json)" in text


def test_skipped_notebook_cells_and_notes_are_listed_under_the_summary():
    text = table(document_with("x", notes=[SKIPPED]))
    assert "note: from the notebook only definitions are graded; not executed:" in text
    assert "cell 3: `!pip install torch numpy` (shell command)" in text
    assert "cell 7: `plt.plot(losses)` and 1 more statement (top-level code)" in text


def test_control_characters_and_lone_surrogates_print_as_escapes_even_on_an_ascii_terminal():
    document = document_with("got \x1b[2J\ud800 here é", found={"attention": "a\udcff/attention.py", "gpt": None})
    document["tests"][0]["output"] += "\x1b]0;title\x07"  # a document read from elsewhere, not cleaned
    raw = io.BytesIO()
    stream = io.TextIOWrapper(raw, encoding="ascii")
    print_table(document, file=stream)
    stream.flush()
    text = raw.getvalue().decode("ascii")
    assert "\x1b" not in text and "\\x1b[2J\\ud800" in text and "\\x1b]0;title\\x07" in text
    assert "\\xe9" in text and '"a\\xff/attention.py"' in text


def test_a_crash_shows_its_notice_and_passing_tests_stay_one_line():
    text = table(crash_document("Traceback (most recent call last):\nValueError: boom"))
    assert "The autograder itself failed" in text and "ValueError: boom" in text
    text = table(document_with("ignored", score=2))
    assert "ignored" not in text and "TOTAL" in text and "3 / 3" in text


def test_the_grade_command_prints_the_diagnosis(tmp_path):
    folder = tmp_path / "submission"
    folder.mkdir()
    source = open(os.path.join(REFERENCE, "attention.py")).read()
    assert "return X.mean(axis=-2)" in source
    (folder / "attention.py").write_text(source.replace("return X.mean(axis=-2)", "return X.mean(axis=0)"))
    proc = subprocess.run([sys.executable, "-m", "autograder", "grade", str(folder), "--out",
                           str(tmp_path / "r.json"), "--select", "mean_context"],
                          cwd=REPO, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    assert "This looks like a known bug" in proc.stdout, proc.stdout
    assert "attention.py: graded from" in proc.stdout
