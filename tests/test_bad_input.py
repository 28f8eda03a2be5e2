"""Bad submissions get a clear message naming the cause, and it reads as the student's doing,
never as the grader's failure; the part that is fine is still graded as usual."""
import os

import pytest

from attacks import kit
from autograder.grade import GRADER_FAULT
from conftest import REFERENCE

with open(os.path.join(REFERENCE, "attention.py"), encoding="utf-8") as f:
    ATTENTION = f.read()
with open(os.path.join(REFERENCE, "gpt.py"), encoding="utf-8") as f:
    GPT = f.read()

BAD_FUNCTIONS = ATTENTION + '''

gpt_params_count = gpt_param_count  # a typo in a name of the contract
del gpt_param_count


def layer_norm(x, gamma, beta, eps=1e-5):
    raise NotImplementedError("layer_norm is not implemented yet")


def apply_rope(x, positions=None, base=10000.0):
    y = x * 2  # forgot to return


def sinusoidal_positional_encoding(T, d_model):
    return "PE"


def mean_context(X):
    return {"mean": 1.0}


def gelu(x):
    return np.full(np.shape(x), np.nan)


def attention_shapes(T, n_embd, n_head, batch=1):
    return 1 / 0
'''
# contract name -> what each of its failed tests must say (one of)
EXPECTED = {
    "gpt_param_count": ["attention.py has no `gpt_param_count` (did you mean `gpt_params_count`?)"],
    "layer_norm": ["NotImplementedError: layer_norm is not implemented yet"],
    "apply_rope": ["got None, expected an array (did you forget `return`?)", "expected a ValueError"],
    "sinusoidal_positional_encoding": ["got a str ('PE'), expected an array", "expected a ValueError"],
    "mean_context": ["got a dict (", "expected an array"],
    "gelu": ["NaN"],
    "attention_shapes": ["ZeroDivisionError: division by zero"],
}


@pytest.fixture(scope="module")
def honest(tmp_path_factory):
    from autograder.grade import grade
    out = tmp_path_factory.mktemp("honest")
    return grade(REFERENCE, str(out / "results.json"), ["part-a"])


def write(folder, name, data):
    os.makedirs(folder, exist_ok=True)
    with open(os.path.join(folder, name), "wb") as f:
        f.write(data.encode("utf-8") if isinstance(data, str) else data)
    return str(folder)


def part(document, tag):
    return [t for t in document["tests"] if t["tags"][0] == tag]


def assert_students_fault(tests, *phrases, any_of=()):
    """Every test failed, not as the grader's fault, saying each of ``phrases`` (and one of ``any_of``)."""
    assert tests
    for t in tests:
        assert t["score"] == 0 and GRADER_FAULT.strip() not in t["output"], t["output"][:500]
        for phrase in phrases:
            assert phrase in t["output"], f"{t['name']}: {phrase!r} not in {t['output'][:500]!r}"
        assert not any_of or any(p in t["output"] for p in any_of), f"{t['name']}: {t['output'][:500]!r}"


def assert_same_as(tests, honest):
    scores = {t["name"]: t["score"] for t in honest["tests"]}
    assert tests and all(t["score"] == scores[t["name"]] for t in tests)


def test_an_empty_submission_says_nothing_was_found(grade, tmp_path):
    os.makedirs(tmp_path / "empty")
    document = grade(str(tmp_path / "empty"))
    assert kit.valid(document) and document["score"] == 0
    assert_students_fault(part(document, "part-a"), "attention.py was not found in your submission",
                          "no attention.py, gpt.py or .ipynb notebook was found")
    assert_students_fault(part(document, "part-b"), "gpt.py was not found in your submission")


def test_an_empty_file_is_named_and_each_missing_function_said(grade, tmp_path):
    document = grade(write(tmp_path / "s", "attention.py", "\n"), ["part-a"])
    assert "attention.py is empty" in document["output"]
    assert_students_fault(part(document, "part-a"), "attention.py has no `")


def test_a_syntax_error_names_the_file_and_line_and_part_a_is_still_graded(grade, tmp_path, honest):
    broken = GPT.replace("class MLP(nn.Module):", "class MLP(nn.Module)", 1)
    line = GPT[:GPT.index("class MLP(nn.Module):")].count("\n") + 1
    write(tmp_path / "s", "gpt.py", broken)
    document = grade(write(tmp_path / "s", "attention.py", ATTENTION))
    assert kit.valid(document)
    assert_students_fault(part(document, "part-b"), "gpt.py could not be imported",
                          f"SyntaxError in gpt.py, line {line}", "class MLP(nn.Module)")
    assert_same_as(part(document, "part-a"), honest)


def test_a_file_that_is_not_utf8_is_named_as_such_and_part_a_is_still_graded(grade, tmp_path, honest):
    latin1 = GPT.replace('"""', '"""\u00e9t\u00e9 ', 1).encode("latin-1", errors="replace")  # 0xe9, not UTF-8
    write(tmp_path / "s", "gpt.py", latin1)
    document = grade(write(tmp_path / "s", "attention.py", ATTENTION))
    assert kit.valid(document)
    assert "gpt.py is not UTF-8 text (line" in document["output"], "the loader says so in the summary"
    assert_students_fault(part(document, "part-b"), "gpt.py could not be imported", "is not UTF-8 text",
                          "save the file with UTF-8 encoding")
    assert_same_as(part(document, "part-a"), honest)


@pytest.mark.parametrize("junk", [b"\x89PNG\r\n\x1a\n not a notebook", b'{"cells": [', b""])
def test_a_corrupt_notebook_is_named_in_every_test(grade, tmp_path, junk):
    document = grade(write(tmp_path / "s", "homework.ipynb", junk))
    assert kit.valid(document) and document["score"] == 0
    for tag in ("part-a", "part-b"):
        assert_students_fault(part(document, tag), "the notebook homework.ipynb could not be read")


def test_a_binary_file_named_attention_py_is_named_as_such(grade, tmp_path):
    document = grade(write(tmp_path / "s", "attention.py", b"\x00\x01\x02binary\x00" * 100), ["part-a"])
    assert "attention.py contains NUL bytes" in document["output"]
    assert_students_fault(part(document, "part-a"), "NUL bytes")


def test_a_file_over_the_size_limit_is_not_graded_and_says_why(grade, tmp_path):
    document = grade(write(tmp_path / "s", "attention.py", ATTENTION + "#" * (3 * 2**20)), ["part-a"])
    assert_students_fault(part(document, "part-a"), "attention.py was not found", "over the 2 MB limit")


def test_functions_that_raise_return_the_wrong_type_or_nan_each_get_a_clear_message(grade, tmp_path, honest):
    """One submission with a bug of each kind; the functions without one, and Part B's
    gpt.py, are graded as usual."""
    write(tmp_path / "s", "gpt.py", GPT)
    document = grade(write(tmp_path / "s", "attention.py", BAD_FUNCTIONS), ["part-a", *kit.PART_B_QUICK.split(",")])
    assert kit.valid(document)
    for name, phrases in EXPECTED.items():
        assert_students_fault([t for t in part(document, "part-a") if t["tags"][1] == name], any_of=phrases)
    untouched = [t for t in part(document, "part-a") if not {*EXPECTED, "transformer_block"} & set(t["tags"])]
    assert_same_as(untouched, honest)
    assert part(document, "part-b") and all(t["status"] == "passed" for t in part(document, "part-b"))


def test_a_symbolic_link_to_the_reference_is_not_followed(grade, tmp_path):
    """An attack more than a mistake: a link is never staged, so the grader's own solution is
    never graded as the student's."""
    os.makedirs(tmp_path / "s")
    os.symlink(os.path.join(REFERENCE, "attention.py"), tmp_path / "s" / "attention.py")
    document = grade(str(tmp_path / "s"), ["part-a"])
    assert document["score"] == 0
    assert_students_fault(part(document, "part-a"), "attention.py was not found", "symbolic links are not followed")
