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
import threading
import time

import jsonschema

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
    found = []
    for entry in os.listdir("/proc"):
        if entry.isdigit() and int(entry) != os.getpid():
            try:
                with open(f"/proc/{entry}/cmdline", "rb") as f:
                    if marker.encode() in f.read():
                        found.append(int(entry))
            except OSError:
                pass
    return found


def user_processes(uid):
    """Live (not zombie) processes of ``uid``."""
    found = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/status") as f:
                    fields = dict(line.split(":", 1) for line in f if ":" in line)
            except OSError:
                continue
            if int(fields["Uid"].split()[0]) == uid and not fields["State"].strip().startswith("Z"):
                found.append(int(entry))
    return found


def sandbox_user_name():
    from autograder.sandbox import limits
    user = limits.sandbox_user()
    return user[0] if user else pwd.getpwuid(os.getuid()).pw_name


class PeakMemory(threading.Thread):
    """Peak of the summed resident memory of this process, its descendants and every process
    of ``uid``, sampled every 10 ms: what Gradescope's 768 MB container limit would see. With
    ``pss``, each process counts its proportional share of pages shared with others (forks),
    as the container's memory accounting does (slower: /proc/<pid>/smaps_rollup)."""

    def __init__(self, uid, period=0.01, pss=False):
        super().__init__(daemon=True)
        self.uid, self.period, self.pss, self.peak, self.done = uid, period, pss, 0, threading.Event()

    @staticmethod
    def _pss(pid):
        try:
            with open(f"/proc/{pid}/smaps_rollup") as f:
                return next(int(line.split()[1]) * 1024 for line in f if line.startswith("Pss:"))
        except (OSError, StopIteration, ValueError):
            return 0  # gone, or exiting (smaps_rollup is empty then)

    def _sample(self):
        table = {}
        for entry in os.listdir("/proc"):
            if entry.isdigit():
                try:
                    with open(f"/proc/{entry}/status") as f:
                        fields = dict(line.split(":", 1) for line in f if ":" in line)
                    table[int(entry)] = (int(fields["PPid"]), int(fields["Uid"].split()[0]),
                                         int(fields.get("VmRSS", "0 kB").split()[0]) * 1024)
                except (OSError, KeyError, ValueError):
                    continue
        mine = {os.getpid()}
        size = 0
        while size != len(mine):
            size = len(mine)
            mine |= {p for p, (pp, _, _) in table.items() if pp in mine}
        ours = [(p, rss) for p, (_, u, rss) in table.items() if p in mine or u == self.uid]
        return sum(self._pss(p) if self.pss else rss for p, rss in ours)

    def run(self):
        while not self.done.is_set():
            self.peak = max(self.peak, self._sample())
            time.sleep(self.period)

    def __enter__(self):
        self.start()
        return self

    def __exit__(self, *exc):
        self.done.set()
        self.join()
