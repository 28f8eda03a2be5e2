"""Helpers of the security tests: build a submission from the reference (or a wrong version
of it) plus an attack file of this folder, grade it the way Gradescope does, and judge.

An attack file is Python appended to the end of the module it attacks, so it runs when the
module is imported; attacks that act during a call wrap the function they target. Nothing
here imports torch or student code.
"""
import json
import os
import pwd
import subprocess
import sys
import time

import jsonschema

from autograder.sandbox import procs

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
REFERENCE = os.path.join(REPO, "reference")
SCHEMA = os.path.join(REPO, "tests", "gradescope_schema.json")

# A wrong implementation: the honest score of this code is below full marks, so an attack that
# raised it would show. mean_context and perplexity are leaves: nothing else calls them.
WRONG = {
    "attention": "\n\ndef mean_context(X):  # wrong on purpose: the sum, not the mean\n"
                 "    return np.asarray(X, dtype=float).sum(axis=-2)\n",
    "gpt": "\n\ndef perplexity(model, windows):  # wrong on purpose: the mean NLL, not its exp\n"
           "    logits, loss = model(windows[:, :-1], windows[:, 1:])\n"
           "    return float(loss)\n",
}
# Part B's tests that need no training (tags); training is graded where the attack needs it.
PART_B_QUICK = "sample_next_token,generate,perplexity"


def source(module, *, wrong=True, attacks=()):
    """``module``.py of the reference, made wrong if asked, with the attack files appended."""
    with open(os.path.join(REFERENCE, f"{module}.py"), encoding="utf-8") as f:
        text = f.read()
    text += WRONG[module] if wrong else ""
    for name in attacks:
        with open(os.path.join(HERE, f"{name}.py"), encoding="utf-8") as f:
            text += f"\n\n# ---- attack: {name} ----\n" + f.read()
    return text


def submission(folder, **modules):
    """A submission folder holding ``{module: source}``; returns its path."""
    os.makedirs(folder, exist_ok=True)
    os.chmod(folder, 0o755)
    for module, text in modules.items():
        with open(os.path.join(folder, f"{module}.py"), "w", encoding="utf-8") as f:
            f.write(text)
    return folder


def grade_cli(sub, out, select=None, timeout=600, env=None):
    """``python -m autograder grade`` in a subprocess, as Gradescope runs it; returns
    (results document, seconds, completed process)."""
    cmd = [sys.executable, "-m", "autograder", "grade", str(sub), "--out", str(out), "--quiet"]
    cmd += ["--select", select] if select else []
    start = time.monotonic()
    proc = subprocess.run(cmd, cwd=REPO, capture_output=True, text=True, timeout=timeout,
                          env=dict(os.environ, **(env or {})))
    seconds = time.monotonic() - start
    with open(out) as f:
        return json.load(f), seconds, proc


def valid(document):
    """Gradescope's schema, a score that is the sum of the tests', no crash entry."""
    with open(SCHEMA) as f:
        jsonschema.Draft202012Validator(json.load(f)).validate(document)
    assert abs(document["score"] - sum(t["score"] for t in document["tests"])) < 1e-6
    assert not any("grader" in t["tags"] for t in document["tests"]), "the grader crashed"
    return True


def by_name(document):
    return {t["name"]: t for t in document["tests"]}


def assert_not_better(attacked, honest, affected=()):
    """Every test scores at most what the honest code scores, and exactly the same unless it
    carries one of the ``affected`` tags (the contract names, or the part, the attack is in)."""
    a, h = by_name(attacked), by_name(honest)
    assert set(a) <= set(h), f"tests that the honest grade does not have: {set(a) - set(h)}"
    for name, test in a.items():
        assert test["score"] <= h[name]["score"] + 1e-9, \
            f"{name}: {test['score']} > honest {h[name]['score']} (honest output: {h[name]['output'][:600]})"
        if not set(test["tags"]) & set(affected):
            assert test["score"] == h[name]["score"], f"{name} (not attacked) changed: {test['output'][:300]}"
    assert attacked["score"] <= honest["score"] + 1e-9


def outputs(document):
    return "\n".join([document.get("output", "")] + [t["output"] for t in document["tests"]])


def sandbox_uid():
    from autograder.sandbox import limits
    user = limits.sandbox_user()
    return user[1] if user else os.getuid()


def processes_with(marker):
    """Pids whose command line contains ``marker``."""
    return procs.with_marker(marker)


def user_processes(uid):
    """Live (not zombie) processes of ``uid``."""
    return procs.of_user(uid)


def sandbox_user_name():
    from autograder.sandbox import limits
    user = limits.sandbox_user()
    return user[0] if user else pwd.getpwuid(os.getuid()).pw_name


def PeakMemory(uid, period=0.01, pss=False):
    """Peak of the summed resident memory of this process, its descendants and every process
    of ``uid``, sampled every ``period`` s: what Gradescope's 768 MB container limit would see.
    With ``pss``, pages shared with forks count once (slower)."""
    return procs.TreeWatch(os.getpid(), uid, period, pss)
