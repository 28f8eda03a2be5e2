"""What the grader writes is clean (issue 10, items 2 and 3; issue 9, item 6's output):
results.json is strict UTF-8 JSON whatever the submission's messages and names hold, the
top-level summary cannot be forged and never totals tests students cannot see yet, and the
results file's space is reserved so a full disk cannot cost a correct grade."""
import errno
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import textwrap

import pytest

from autograder import results
from autograder.results import gradescope, store
from autograder.results.clean import clean_text, quote
from autograder.results.model import TestResult as Result
from autograder.results.summary import summary
from conftest import REFERENCE, REPO

NASTY = ["lone \ud800 surrogate", "escaped byte \udcff from a folder name", "bell\x07 nul\x00 esc\x1b[2J",
         "cr\rlf\r\n", "nel\x85 ls\u2028 ps\u2029", "bidi \u202eevil\u202c", "del\x7f c1\x9b", "tab\tok",
         "emoji 😀 fine", "\udbff\udfff a split pair"]
SURROGATE_ESCAPE = re.compile(rb"(?<!\\)(\\\\)*\\u[dD][89a-fA-F][0-9a-fA-F]{2}")  # not after an escaped backslash


def _strings(value):
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for k, v in value.items():
            yield k
            yield from _strings(v)
    elif isinstance(value, list):
        for v in value:
            yield from _strings(v)


def assert_strict_json(data):
    """``data`` (bytes) is what strict parsers accept: UTF-8, no lone surrogate, no raw control."""
    text = data.decode("utf-8")  # strict: raises on a surrogate encoded as UTF-8
    assert not SURROGATE_ESCAPE.search(data), "a \\uD8xx-\\uDFxx escape: lone surrogates are not JSON text"
    assert not re.search("[\x00-\x08\x0b-\x1f\x7f-\x9f\u2028\u2029\u202a-\u202e]", text)
    document = json.loads(text)
    for s in _strings(document):
        s.encode("utf-8")  # a lone surrogate that came from an escape cannot be encoded
    for tool, cmd in (("jq", ["jq", "-e", "."]),
                      ("perl", ["perl", "-MJSON::PP", "-0777", "-ne", "JSON::PP->new->utf8->decode($_)"])):
        if shutil.which(tool):
            proc = subprocess.run(cmd, input=data, capture_output=True, timeout=60)
            assert proc.returncode == 0, f"{tool} rejects the file: {proc.stderr[-300:]!r}"
    return document


def nasty_document():
    tests = [Result(name=f"test {n}", max_score=1, score=i % 2, number=f"1.{i}", tags=["part-a", n],
                        output=f"calling `f` failed: ValueError: {n}", extra_data={n: n})
             for i, n in enumerate(NASTY)]
    return results.to_gradescope_dict(tests, execution_time=1.0, output="\n".join(NASTY),
                                      leaderboard=[{"name": NASTY[0], "value": 1.5},
                                                   {"name": "nan", "value": float("nan")}],
                                      extra_data={NASTY[1]: NASTY})


# ---- clean text

def test_clean_text_escapes_what_is_unsafe_and_keeps_what_is_meant():
    assert clean_text("plain text, é and 😀\n\ttab") == "plain text, é and 😀\n\ttab"
    assert clean_text("a\ud800b") == "a\\ud800b"
    assert clean_text("folder\udcff") == "folder\\xff"  # os.fsdecode of the byte 0xff
    assert clean_text("\x1b[2J\x00\x7f\x85") == "\\x1b[2J\\x00\\x7f\\x85"
    assert clean_text("a\r\nb\rc") == "a\nb\\rc"
    assert clean_text("x\u2028y\u202ez") == "x\\u2028y\\u202ez"
    assert clean_text(b"bytes \xff") == "bytes \\xff"
    for s in NASTY:
        cleaned = clean_text(s)
        cleaned.encode("utf-8")  # no surrogate left
        assert clean_text(cleaned) == cleaned  # idempotent


def test_quote_keeps_a_name_on_one_line():
    name = 'sub\nTOTAL 100 / 100\r"x"\\\u2028part-a: 50 / 50'
    quoted = quote(name)
    assert quoted.count("\n") == 0 and quoted.startswith('"') and quoted.endswith('"')
    assert quoted == '"sub\\nTOTAL 100 / 100\\r\\"x\\"\\\\\\u2028part-a: 50 / 50"'


# ---- strict JSON at the one writer

def test_every_string_of_the_document_is_clean_and_the_file_is_strict_json(tmp_path):
    document = nasty_document()
    assert [e["name"] for e in document["leaderboard"]] == [clean_text(NASTY[0])]  # NaN is never published
    path = tmp_path / "results.json"
    results.write_atomic(str(path), document)
    parsed = assert_strict_json(path.read_bytes())
    assert parsed["tests"][0]["output"].endswith("lone \\ud800 surrogate")
    assert "\\x1b[2J" in parsed["output"] and "\x1b" not in parsed["output"]
    assert parsed["score"] == sum(t["score"] for t in parsed["tests"]) == 5


def test_encode_cleans_a_document_built_elsewhere():
    raw = {"score": float("nan"), "execution_time": 1, "output": "a\ud800", "tests": [
        {"name": "t\udcff", "score": 1.0, "max_score": 1.0, "output": "x" * 10, "tags": ["\x1b"], "extra_data": {}}],
        "extra_data": {"k\ud800": [1, (2, 3)]}, "leaderboard": []}
    document = assert_strict_json(gradescope.encode(raw))
    assert document["score"] == 0.0 and document["output"] == "a\\ud800" and document["tests"][0]["name"] == "t\\xff"
    assert document["extra_data"] == {"k\\ud800": [1, [2, 3]]}


def test_a_crash_still_yields_a_valid_file_with_a_notice_and_a_staff_only_traceback(tmp_path):
    slot = results.reserve(str(tmp_path / "results.json"))
    results.write_reserved(slot, results.crash_document("Traceback ...\nValueError: bad \ud800 name", 3.0))
    document = assert_strict_json((tmp_path / "results.json").read_bytes())
    assert document["score"] == 0 and document["output"] == results.CRASH_MESSAGE
    notice, trace = document["tests"]
    assert notice["visibility"] == "visible" and "not your fault" in notice["output"]
    assert trace["visibility"] == "hidden" and "bad \\ud800 name" in trace["output"]


def test_an_oversized_document_is_cut_to_fit_keeping_every_score():
    tests = [Result(name=f"t{i}", max_score=2, score=i % 3, number=f"1.{i}", tags=["part-a"],
                        output="é" * 19_000) for i in range(60)]
    document = results.to_gradescope_dict(tests, execution_time=1.0, output="summary")
    full = gradescope.encode(document, 10**9)
    data = gradescope.encode(document, 200_000)
    assert len(full) > 2_000_000 and len(data) <= 200_000
    fitted = assert_strict_json(data)
    assert [t["score"] for t in fitted["tests"]] == [t["score"] for t in document["tests"]]
    assert fitted["score"] == document["score"] and "more characters cut" in fitted["tests"][0]["output"]
    lo, hi = 1_000, 200_000  # the smallest budget that still fits: scores only, outputs dropped
    while lo < hi:
        mid = (lo + hi) // 2
        try:
            gradescope.encode(document, mid)
            hi = mid
        except ValueError:
            lo = mid + 1
    bare = assert_strict_json(gradescope.encode(document, lo))
    assert bare["output"] == gradescope.TOO_BIG and bare["score"] == document["score"]
    assert [t["output"] for t in bare["tests"]] == [""] * 60
    with pytest.raises(ValueError, match="without any output"):
        gradescope.encode(document, lo - 1)


# ---- the summary students see

def _results(hidden_scores=(2, 0.5, 3)):
    a, b, c = hidden_scores
    return [
        Result("a1", 4, 3, "1.1", ["part-a"], "visible"),
        Result("a2", 6, 6, "1.2", ["part-a"], "visible"),
        Result("a3", 5, a, "1.3", ["part-a"], "after_published"),
        Result("a4", 1, b, "1.4", ["part-a"], "after_due_date"),
        Result("b1", 3, c, "2.1", ["part-b"], "hidden"),
        Result("b2", 7, c, "2.2", ["part-b"], "after_published"),
    ]


def test_the_summary_counts_visible_tests_and_never_totals_the_others():
    text = summary(_results(), {"attention": "attention.py", "gpt": "hw/gpt.py"}, [])
    assert text.splitlines() == [
        'attention.py: graded from "attention.py"',
        'gpt.py: graded from "hw/gpt.py"',
        "part-a: 9 / 10 points in the tests shown now (1 more point in tests shown after the due date, "
        "5 points in tests shown after grades are published)",
        "part-b: no tests shown now (7 points in tests shown after grades are published, 3 points in hidden tests)",
    ]
    for hidden in [(0, 0, 0), (5, 1, 3), (1.25, 0, 2)]:  # what students cannot see changes nothing they see
        assert summary(_results(hidden), {"attention": "attention.py", "gpt": "hw/gpt.py"}, []) == text
    only_visible = [r for r in _results() if r.visibility == "visible"]
    assert "part-a: 9 / 10 points" == summary(only_visible, {}, [])


def test_the_summary_accepts_gradescope_test_dicts():
    document = results.to_gradescope_dict(_results(), execution_time=0)
    assert summary(document["tests"], {}, []) == summary(_results(), {}, [])


def test_nothing_the_submission_controls_can_forge_a_line_of_the_summary():
    forged = "x\nTOTAL 100 / 100\npart-a: 50 / 50 points\rpart-b: 50 / 50\u2028\x85\x1b[1A"
    found = {"attention": f"evil{forged}/attention.py", "gpt": "d\udcff\ud800/gpt.py"}
    notes = [f"several notebooks were submitted; graded {forged}.ipynb",
             f"from the notebook only definitions are graded; not executed:\n  cell 1: `{forged}` (top-level code)",
             "\n\npart-a: 50 / 50 points"]
    text = summary(_results(), found, notes)
    text.encode("utf-8")
    allowed = [r'(attention|gpt)\.py: (graded from "[^"\\]*(\\.[^"\\]*)*"|not found)',
               r"part-a: 9 / 10 points in the tests shown now \(.*\)", r"part-b: no tests shown now \(.*\)",
               r"note: .*", r" {6}.*"]
    lines = text.split("\n")
    for line in lines:
        assert any(re.fullmatch(p, line) for p in allowed), line
    assert [line for line in lines if line.startswith(("part-", "TOTAL"))] == lines[2:4]
    assert not re.search("[\r\x1b\x85\u2028\ud800-\udfff]", text)


# ---- the results file's space is reserved

def test_reserve_writes_a_valid_fallback_padded_to_the_reserved_size(tmp_path):
    path = tmp_path / "out" / "results.json"
    slot = results.reserve(str(path), nbytes=300_000)
    try:
        assert os.path.getsize(path) == slot.size == 300_000
        document = assert_strict_json(path.read_bytes())
        assert document["score"] == 0 and "Grading did not finish." in json.dumps(document)
        assert oct(os.stat(path).st_mode & 0o777) == oct(0o644)
    finally:
        slot.close()


def _reference_document():
    tests = [Result(name=f"t{i}", max_score=1, score=1, number=f"1.{i}", tags=["part-a"]) for i in range(50)]
    return results.to_gradescope_dict(tests, execution_time=2.0, output="part-a: 50 / 50 points")


def test_the_final_write_needs_no_new_space_once_reserved(tmp_path, monkeypatch):
    """A disk that fills after reserve(): any new file or appended byte fails with ENOSPC."""
    path = tmp_path / "results.json"
    slot = results.reserve(str(path))

    def full(*args, **kwargs):
        raise OSError(errno.ENOSPC, "No space left on device")
    real_open = os.open
    monkeypatch.setattr(os, "write", full)
    monkeypatch.setattr(os, "open", lambda p, flags, *a, **k: full() if flags & os.O_CREAT else real_open(p, flags, *a))
    monkeypatch.setattr(store.tempfile, "mkstemp", full)
    with pytest.raises(OSError):
        results.write_atomic(str(tmp_path / "other.json"), _reference_document())  # how it failed before
    results.write_reserved(slot, _reference_document())
    monkeypatch.undo()
    document = assert_strict_json(path.read_bytes())
    assert document["score"] == 50 and os.path.getsize(path) == len(gradescope.encode(_reference_document()))


FULL_DISK = textwrap.dedent("""
    import json, os, sys
    sys.path.insert(0, {repo!r})
    from autograder import results
    folder = sys.argv[1]
    path = os.path.join(folder, "results.json")
    slot = results.reserve(path)
    # a background process fills the disk
    with open(os.path.join(folder, "filler"), "wb") as f:
        try:
            while True:
                f.write(b"x" * 65536)
                f.flush()
        except OSError as e:
            print("filler:", e.strerror)
    tests = [results.TestResult(name=f"t{{i}}", max_score=1, score=1, number=f"1.{{i}}", tags=["part-a"],
                                output="é" * 15000) for i in range(80)]
    document = results.to_gradescope_dict(tests, execution_time=1.0, output="part-a: 80 / 80 points")
    try:
        results.write_atomic(os.path.join(folder, "fresh.json"), document)
        print("fresh write: ok")
    except OSError as e:
        print("fresh write:", e.strerror)
    results.write_reserved(slot, document)
    print("reserved write: ok")
""")


def test_a_full_disk_after_reserve_still_gets_the_real_results(tmp_path):
    """A real full file system: a 4 MB tmpfs in a private mount namespace, filled to the last byte."""
    if not shutil.which("unshare") or os.geteuid() != 0:
        pytest.skip("needs root and unshare(1) to mount a private tmpfs (the monkeypatched test covers the rest)")
    folder = tmp_path / "disk"
    folder.mkdir()
    script = tmp_path / "fill.py"
    script.write_text(FULL_DISK.format(repo=REPO))
    probe = subprocess.run(["unshare", "-m", "--propagation", "private", "sh", "-c",
                            f"mount -t tmpfs -o size=4m tmpfs {folder} && echo mounted"],
                           capture_output=True, text=True, timeout=60)
    if "mounted" not in probe.stdout:
        pytest.skip(f"cannot mount a tmpfs here: {probe.stderr.strip()[:200]}")
    proc = subprocess.run(["unshare", "-m", "--propagation", "private", "sh", "-c",
                           f"mount -t tmpfs -o size=4m tmpfs {folder} && {sys.executable} {script} {folder} && "
                           f"cat {folder}/results.json > {tmp_path}/copy.json"],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert "filler: No space left on device" in proc.stdout
    assert "fresh write: No space left on device" in proc.stdout, "the disk was not full: the test proves nothing"
    assert "reserved write: ok" in proc.stdout
    document = assert_strict_json((tmp_path / "copy.json").read_bytes())
    assert document["score"] == 80 and len(document["tests"]) == 80


def test_a_folder_or_link_planted_at_the_results_path_is_handled(tmp_path):
    path = tmp_path / "results.json"
    (path / "sub").mkdir(parents=True)  # planted before the grade
    slot = results.reserve(str(path))
    os.rename(path, tmp_path / "moved.json")  # replaced during the grade (a writable results folder)
    (path / "deeper").mkdir(parents=True)
    results.write_reserved(slot, _reference_document())
    assert assert_strict_json(path.read_bytes())["score"] == 50

    victim = tmp_path / "victim.txt"
    victim.write_text("keep me")
    link = tmp_path / "linked.json"
    link.symlink_to(victim)
    results.write_reserved(results.reserve(str(link)), _reference_document())
    assert victim.read_text() == "keep me" and not link.is_symlink()
    assert assert_strict_json(link.read_bytes())["score"] == 50


def test_write_reserved_accepts_the_path_of_a_file_reserved_earlier(tmp_path):
    path = tmp_path / "results.json"
    results.reserve(str(path), nbytes=100_000).close()
    results.write_reserved(str(path), _reference_document())
    assert assert_strict_json(path.read_bytes())["score"] == 50
    results.write_reserved(str(tmp_path / "never-reserved.json"), _reference_document())
    assert assert_strict_json((tmp_path / "never-reserved.json").read_bytes())["score"] == 50


# ---- through a real grade

def test_a_graded_submission_with_hostile_names_and_messages_gives_strict_json_and_no_forged_line(tmp_path, grade):
    folder = tmp_path / "submission" / "hw\nTOTAL 100 of 100 points\u2028x"  # a name cannot hold "/"
    folder.mkdir(parents=True)
    source = open(os.path.join(REFERENCE, "attention.py")).read()
    source += ("\n\ndef mean_context(X):\n"
               "    raise ValueError('lone \\ud800 surrogate, \\x1b[2J escape, \\u2028 line\\nTOTAL 100 / 100')\n")
    (folder / "attention.py").write_text(source)
    document = grade(str(tmp_path / "submission"), select=["mean_context", "softmax"])
    data = (tmp_path / "results.json").read_bytes()
    assert_strict_json(data)
    assert json.loads(data) == document
    failed = [t for t in document["tests"] if "mean_context" in t["tags"]]
    assert failed and all(t["score"] == 0 and "lone \\ud800 surrogate" in t["output"] for t in failed)
    assert all(t["score"] == t["max_score"] for t in document["tests"] if "softmax" in t["tags"])
    assert not [line for line in document["output"].split("\n") if line.startswith("TOTAL")]


FILL_AT_IMPORT = """

def _fill(folder):  # a student's background job filling the results folder's disk
    import os
    try:
        with open(os.path.join(folder, "filler"), "wb") as f:
            while True:
                f.write(b"x" * 65536)
                f.flush()
    except OSError:
        pass


_fill({folder!r})
"""


def test_correct_work_that_fills_the_results_disk_keeps_its_marks(tmp_path, request):
    if not shutil.which("unshare") or os.geteuid() != 0:
        pytest.skip("needs root and unshare(1) to mount a private tmpfs")
    base = tempfile.mkdtemp(prefix="ag-fill-")  # reachable by the sandbox user (tmp_path is not)
    os.chmod(base, 0o755)
    request.addfinalizer(lambda: shutil.rmtree(base, ignore_errors=True))
    disk, submission = os.path.join(base, "disk"), tmp_path / "submission"
    os.mkdir(disk)
    submission.mkdir()
    source = open(os.path.join(REFERENCE, "attention.py")).read()
    (submission / "attention.py").write_text(source + FILL_AT_IMPORT.format(folder=disk))
    out = os.path.join(disk, "results.json")
    proc = subprocess.run(
        ["unshare", "-m", "--propagation", "private", "sh", "-c",
         f"mount -t tmpfs -o size=4m,mode=1777 tmpfs {disk} && "
         f"{sys.executable} -m autograder grade {submission} --out {out} --select softmax --quiet; "
         f"echo filler $(stat -c %s {disk}/filler); cat {out} > {tmp_path}/copy.json"],
        cwd=REPO, capture_output=True, text=True, timeout=600)
    if "mount:" in proc.stderr:
        pytest.skip(f"cannot mount a tmpfs here: {proc.stderr.strip()[:200]}")
    filled = int(re.search(r"filler (\d+)", proc.stdout).group(1))
    reserved = gradescope.MAX_BYTES
    assert filled > 4 * 2**20 - reserved - 100_000, f"the student's code did not fill the disk ({filled} bytes)"
    document = assert_strict_json((tmp_path / "copy.json").read_bytes())
    softmax = [t for t in document["tests"] if "softmax" in t["tags"]]
    assert softmax and all(t["score"] == t["max_score"] for t in softmax), document["output"][:500]


def test_outputs_are_cut_after_cleaning_so_escapes_cannot_push_them_over_the_limit():
    flood = "\ud800" * gradescope.MAX_OUTPUT  # each becomes the 6 characters \ud800
    document = results.to_gradescope_dict([Result("t", 1, 0, "1.1", ["part-a"], output=flood)],
                                          execution_time=0, output=flood * 3)
    assert len(document["tests"][0]["output"]) <= gradescope.MAX_OUTPUT
    assert len(document["output"]) <= gradescope.MAX_TOP_OUTPUT
    assert document["tests"][0]["output"].startswith("\\ud800\\ud800")
