"""Prove the grader fast and small: time and memory of grades, the public tests, the zip, the
reference GPT's training speed and quality, against the budgets. Prints one report, writes
bench.json, and with --docs records the figures in docs/measured.json and rewrites the
figures the docs quote from it (between <!-- m:KEY --> markers; tools/docfigures.py's DOCS:
README.md, docs/WORKFLOWS.md, docs/THREAT_MODEL.md, docs/CALIBRATION.md).

    .venv/bin/python tools/bench.py [--out bench.json] [--skip-zip] [--skip-train] [--strict] [--docs]

Grades run through the one launcher (autograder/launch.py) as `python -m autograder grade`;
the peak memory sums the grade's process tree and every process of its sandbox uid (the
container's view), sampled every 20 ms by autograder/sandbox/procs.py.
"""
import argparse
import json
import os
import subprocess
import sys
import time

TOOLS = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(TOOLS)
sys.path[:0] = [REPO, TOOLS]
import docfigures  # noqa: E402 - after the path is set

from autograder import launch  # noqa: E402 - after the path is set
from autograder.sandbox import limits  # noqa: E402 - after the path is set

BUDGETS = {"grade_seconds": (30, "a whole grade of the reference (issue 9: 30 s on this machine)"),
           "peak_rss_mb": (768, "all grading processes together"),
           "part_a_seconds": (15, "a Part A grade"), "public_tests_seconds": (10, "the public tests"),
           "isolation_overhead_seconds": (5, "the sandbox's cost over in-process calls, Part A"),
           "val_loss_gap": (0.10, "validation loss above the entropy bound")}


def grade(env, uid, select=None):
    """A grade of the reference in a process of its own: seconds, CPU seconds, peak memory, score."""
    out = os.path.join(REPO, "out", "bench", f"{select or 'all'}.json")
    g = launch.grade_in_process(os.path.join(REPO, "reference"), out, select=select, env=env, watch=True, uid=uid)
    doc = g.document or {"tests": [], "score": None}
    return {"seconds": round(g.seconds, 2), "cpu_seconds": round(g.cpu_seconds, 2),
            "peak_rss_mb": round(g.peak_bytes / 2**20, 1), "score": doc.get("score"),
            "max_score": sum(t["max_score"] for t in doc["tests"]), "tests": len(doc["tests"]), "exit": g.returncode}


def public_tests(env):
    env = dict(env, HW_DIR=os.path.join(REPO, "reference"))
    start = time.monotonic()
    proc = subprocess.run(["make", "-s", "-C", "handout", "test"], cwd=REPO, env=env, capture_output=True, text=True)
    last = (proc.stdout.strip().splitlines() or [""])[-1]
    return round(time.monotonic() - start, 2), proc.returncode, last


def zip_size(env, skip):
    path = os.path.join(REPO, "dist", "autograder.zip")
    note = None
    if not skip:
        proc = subprocess.run(["make", "-s", "-o", "install", "autograder"], cwd=REPO, env=env, capture_output=True,
                              text=True)
        if proc.returncode:
            note = f"make autograder failed: {(proc.stderr or proc.stdout).strip()[-300:]}"
    if os.path.exists(path):
        return round(os.path.getsize(path) / 2**10), note
    return None, note or "dist/autograder.zip was not written"


def isolation(uid_env):
    """Part A graded in this process through the sandbox, then with the same worker ops called
    in-process (no worker process, no pipes): the difference is what isolation costs."""
    from autograder.grade import grade as run_grade
    from autograder.sandbox import Sandbox, StudentError
    from autograder.sandbox.worker import ops_common, student, wire

    class InProcess:
        timeout, isolation = 30.0, {}

        def __init__(self, staged, **_):
            self.staged = staged

        def call(self, op, timeout=None, wall=None, **args):
            cwd = os.getcwd()
            os.chdir(self.staged)
            sys.path.insert(0, self.staged)
            try:
                value = ops_common.OPS[op](**args)
            except Exception as e:  # noqa: BLE001 - reported as the worker would
                info = getattr(e, "info", None) or {"kind": "raised", "message": f"{type(e).__name__}: {e}"}
                raise StudentError(info.get("kind", "raised"), info.get("message", "")) from None
            finally:
                os.chdir(cwd)
                sys.path.remove(self.staged)
            return wire.loads(wire.dumps(value))  # the same conversions as over the pipe

        def close(self):
            """Nothing to stop."""

    os.environ.update(uid_env)
    out = os.path.join(REPO, "out", "bench", "isolation.json")
    times = {}
    for label, cls in (("sandboxed", Sandbox), ("in_process", InProcess), ("sandboxed", Sandbox)):
        student._loaded.clear()
        start = time.monotonic()
        doc = run_grade(os.path.join(REPO, "reference"), out, ["part-a"], sandbox=cls)
        times[label] = min(times.get(label, 1e9), time.monotonic() - start)
        times[label + "_score"] = doc.get("score")
    start = time.monotonic()
    with Sandbox(os.path.join(REPO, "reference")) as sb:
        sb.call("ping")
        startup = time.monotonic() - start
    return {k: round(v, 3) if isinstance(v, float) else v for k, v in times.items()}, round(startup, 3)


def train_quality():
    """The grader's training run (the one loop, on the grader's data) of the reference GPT and, on
    the same batches, of a plain PyTorch transformer of the same sizes: their throughputs; then
    the reference's weights judged as a grade judges them (NumPy GPT-2, samples drawn here)."""
    import numpy as np
    import torch
    from calibrate_quality import build  # tools/, on the path
    from torch import nn
    from torch.nn import functional as F

    from autograder.checks import data
    from autograder.checks.part_b import quality_data
    from autograder.sandbox.worker import training
    from reference import corpus, gpt

    class Plain(nn.Module):
        def __init__(self, V, T, L, H, C):
            super().__init__()
            self.H, self.wte, self.wpe = H, nn.Embedding(V, C), nn.Embedding(T, C)
            self.h = nn.ModuleList(nn.ModuleDict(dict(
                ln1=nn.LayerNorm(C), qkv=nn.Linear(C, 3 * C), proj=nn.Linear(C, C), ln2=nn.LayerNorm(C),
                fc=nn.Linear(C, 4 * C), out=nn.Linear(4 * C, C))) for _ in range(L))
            self.ln_f, self.head = nn.LayerNorm(C), nn.Linear(C, V, bias=False)
            self.head.weight = self.wte.weight

        def forward(self, idx):
            B, T = idx.shape
            x = self.wte(idx) + self.wpe(torch.arange(T))
            for b in self.h:
                q, k, v = b.qkv(b.ln1(x)).view(B, T, 3, self.H, -1).permute(2, 0, 3, 1, 4)  # (B, nh, T, hs)
                y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
                x = x + b.proj(y.transpose(1, 2).reshape(B, T, -1))
                x = x + b.out(F.gelu(b.fc(b.ln2(x)), approximate="tanh"))
            return self.head(self.ln_f(x)), None

    q = data.meta("part_b")["quality"]
    d = quality_data.data(corpus, q)
    torch.set_num_threads(1)  # as the grader's worker
    model = build(gpt, d, "reference")
    torch.manual_seed(0)
    cfg = d.config
    plain = Plain(cfg["vocab_size"], cfg["block_size"], cfg["n_layer"], cfg["n_head"], cfg["n_embd"])
    seconds = {}
    for name, m in (("reference", model), ("plain", plain)):
        start = time.perf_counter()
        training.train(m, d.tokens, d.starts, block_size=cfg["block_size"], lr=q["lr"], warmup=q["warmup"],
                       min_lr_frac=q["min_lr_frac"], grad_clip=q["grad_clip"])
        seconds[name] = time.perf_counter() - start
    tokens = d.starts.size * cfg["block_size"]
    w = {n: p.detach().numpy() for n, p in model.named_parameters(remove_duplicate=False)}
    start = time.perf_counter()
    loss, judged = quality_data.evaluate(w, d, q, corpus)
    H = corpus.entropy_per_char()
    return dict(train_tokens_per_s=round(tokens / seconds["reference"]),
                plain_tokens_per_s=round(tokens / seconds["plain"]),
                train_speed_ratio=round(seconds["plain"] / seconds["reference"], 3),
                train_seconds=round(seconds["reference"], 2), judge_seconds=round(time.perf_counter() - start, 2),
                val_loss=round(loss, 4), entropy_per_char=round(H, 4),
                val_loss_gap=round(loss / H - 1, 4), sampled_sentences=judged["n"],
                in_language=round(judged["in_language"], 3), reference_val_loss=round(q["reference_val_loss"], 4),
                np_val_loss_matches_recorded=bool(np.isclose(loss, q["reference_val_loss"], rtol=1e-3)))


ROWS = [("whole grade (both parts)", "grade_seconds", "s"),
        ("  its CPU time (grade + sandboxes)", "grade_cpu_seconds", "s"),
        ("Part A grade", "part_a_seconds", "s"), ("Part B grade", "part_b_seconds", "s"),
        ("peak memory, all grading processes", "peak_rss_mb", "MB"),
        ("public tests (make -C handout test)", "public_tests_seconds", "s"), ("dist/autograder.zip", "zip_kib", "KiB"),
        ("sandbox start-up (spawn + ping)", "sandbox_startup_seconds", "s"),
        ("isolation overhead, Part A", "isolation_overhead_seconds", "s"),
        ("reference GPT training (300 steps)", "train_seconds", "s"), ("  throughput", "train_tokens_per_s", "tok/s"),
        ("plain PyTorch loop (F.sdpa)", "plain_tokens_per_s", "tok/s"),
        ("training speed ratio (ref / plain)", "train_speed_ratio", ""),
        ("judging the returned weights (NumPy)", "judge_seconds", "s"),
        ("val loss / entropy bound - 1", "val_loss_gap", ""), ("samples in the language", "in_language", "")]


def print_report(r):
    print(f"\nbench (load average {r['load_before']} before, {r['load_after']} after; {r['cpus']} CPUs)")
    for label, key, unit in ROWS:
        limit, value = BUDGETS.get(key, (None,))[0], r.get(key)
        flag = "" if limit is None or value is None else ("  OVER BUDGET" if value > limit else f"  (budget {limit})")
        print(f"  {label:40} {value if value is not None else '-':>10} {unit:6}{flag}")
    for note in r["notes"]:
        print(f"  note: {note}")
    print("budgets exceeded: " + ("; ".join(r["budgets_exceeded"]) or "none"))


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", default=os.path.join(REPO, "bench.json"))
    parser.add_argument("--skip-zip", action="store_true", help="measure dist/autograder.zip without rebuilding it")
    parser.add_argument("--skip-train", action="store_true", help="no training throughput or quality")
    parser.add_argument("--strict", action="store_true", help="exit 1 when a budget is exceeded")
    parser.add_argument("--docs", action="store_true", help="record the figures in docs/measured.json and rewrite "
                                                            f"the figures {', '.join(docfigures.DOCS)} quote")
    args = parser.parse_args(argv)
    os.makedirs(os.path.join(REPO, "out", "bench"), exist_ok=True)
    # As root, claim one sandbox uid for every grade of this run, so their processes can be counted.
    user = str(limits.sandbox_user()[1]) if limits.running_as_root() else None
    uid_env = {"AUTOGRADER_SANDBOX_USER": user} if user else {}
    uid = int(user) if user else None
    env = dict(os.environ, **uid_env)
    started = time.monotonic()
    r = {"sandbox_user": user, "cpus": os.cpu_count(), "load_before": round(os.getloadavg()[0], 2), "notes": []}
    whole = grade(env, uid)
    r.update(grade_seconds=whole["seconds"], grade_cpu_seconds=whole["cpu_seconds"], peak_rss_mb=whole["peak_rss_mb"],
             grade=whole)
    for part in ("part_a", "part_b"):
        r[part] = g = grade(env, uid, part.replace("_", "-"))
        r[part + "_seconds"], r["peak_rss_mb"] = g["seconds"], max(r["peak_rss_mb"], g["peak_rss_mb"])
    if whole["max_score"] == 0 or whole["score"] != whole["max_score"]:
        r["notes"].append(f"the reference did not get full marks: {whole['score']} / {whole['max_score']}")
    r["public_tests_seconds"], code, last = public_tests(env)
    if code:
        r["notes"].append(f"public tests failed on the reference: {last}")
    r["zip_kib"], note = zip_size(env, args.skip_zip)
    if note:
        r["notes"].append(note)
    r["isolation"], r["sandbox_startup_seconds"] = isolation(uid_env)
    r["isolation_overhead_seconds"] = round(r["isolation"]["sandboxed"] - r["isolation"]["in_process"], 3)
    if not args.skip_train:
        r.update(train_quality())
    r["bench_seconds"] = round(time.monotonic() - started, 1)
    r["load_after"] = round(os.getloadavg()[0], 2)
    exceeded = [f"{key} = {r[key]} over {limit} ({what})" for key, (limit, what) in BUDGETS.items()
                if isinstance(r.get(key), (int, float)) and r[key] > limit]
    r["budgets"] = {key: limit for key, (limit, _) in BUDGETS.items()}
    r["budgets_exceeded"] = exceeded
    print_report(r)
    with open(args.out, "w") as f:
        json.dump(r, f, indent=1)
    print(f"wrote {os.path.relpath(args.out)}")
    if args.docs:
        for path in docfigures.record(r):
            print(f"updated {os.path.relpath(path)}")
    return 1 if exceeded and args.strict else 0


if __name__ == "__main__":
    sys.exit(main())
