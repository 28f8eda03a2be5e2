"""The bug and variant catalogs apply to the reference as it is now (fast: nothing is graded;
`make validate` grades them)."""
import ast
import os

import nbformat
import pytest

from autograder.checks import contract
from catalog import (
    FILES,
    Append,
    CatalogError,
    Entry,
    Replace,
    Sub,
    apply,
    base_source,
    bugs,
    materialize,
    reference_source,
    sources,
    variants,
)

BUGS, VARIANTS = bugs(), variants()


def test_catalog_is_big_enough_and_ids_are_unique():
    assert len(BUGS) >= 45 and len(VARIANTS) >= 12
    ids = [e.id for e in BUGS + VARIANTS]
    assert len(ids) == len(set(ids)), "duplicate ids"


def test_every_contract_name_the_checks_declare_has_a_bug_and_every_bug_names_one():
    for part in contract.MODULES:
        names = set(contract.names(part))
        covered = {e.broken for e in BUGS if e.part == part}
        assert covered <= names, f"not contract names: {covered - names}"
        assert names <= covered, f"{part} entries without a bug: {sorted(names - covered)}"


@pytest.mark.parametrize("entry", BUGS, ids=lambda e: e.id)
def test_bug_applies_and_changes_its_file_only(entry):
    files = sources(entry)
    assert entry.mutations and entry.broken and not entry.more and not entry.extra
    start = base_source(entry.base) if entry.base else reference_source(entry.file)
    assert files[entry.file] != start, "the mutation changed nothing"
    for other in set(FILES) - {entry.file}:
        assert files[other] == reference_source(other)
    ast.parse(files[entry.file])


@pytest.mark.parametrize("entry", VARIANTS, ids=lambda e: e.id)
def test_variant_applies(entry):
    files = sources(entry)
    assert entry.broken is None
    for text in files.values():
        ast.parse(text)


def test_missing_targets_fail_loudly():
    text = reference_source("attention.py")
    with pytest.raises(CatalogError):
        apply(text, Sub("this snippet is nowhere", "x"))
    with pytest.raises(CatalogError):
        apply(text, Sub("np.", "x"))  # not unique
    with pytest.raises(CatalogError):
        apply(text, Replace("no_such_function", "def no_such_function(): pass"))
    with pytest.raises(CatalogError):
        sources(Entry("broken_syntax", "attention.py", (Sub("def softmax(", "def softmax(("),)))


def test_replace_keeps_indentation_and_decorators():
    stub = "def generate(self, idx, *a, **k):\n    return idx"
    text = apply(reference_source("gpt.py"), Replace("GPT.generate", stub))
    assert "    @torch.no_grad()\n    def generate(self, idx, *a, **k):\n        return idx\n" in text
    assert apply("x = 1\n", Append("y = 2")) == "x = 1\n\n\ny = 2\n"


def test_layouts(tmp_path):
    by_id = {e.id: e for e in VARIANTS}
    nested = materialize(by_id["v_nested_subfolder"], str(tmp_path / "nested"))
    assert os.path.isfile(os.path.join(nested, "hw11-final", "src", "gpt.py"))
    folder = materialize(by_id["v_notebook"], str(tmp_path / "nb"))
    [name] = os.listdir(folder)
    nb = nbformat.read(os.path.join(folder, name), as_version=4)
    nbformat.validate(nb)
    code = "\n".join(c.source for c in nb.cells if c.cell_type == "code")
    assert "def softmax(" in code and "class GPT(" in code
    plain = materialize(by_id["v_cross_file_helpers"], str(tmp_path / "helpers"))
    assert sorted(os.listdir(plain)) == ["attention.py", "gpt.py", "hw11_layers.py"]
