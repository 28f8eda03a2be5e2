"""Prove the grader fast: time and memory of grades, the reference GPT's training speed and
quality, against the budgets. Prints one report and writes bench.json.

    .venv/bin/python tools/bench.py [--out bench.json] [--skip-zip] [--skip-train] [--strict]

A thread sums, every 20 ms, the RSS of a grading subprocess, its descendants and the sandbox
user's processes. As root the sandbox user is a free one of tools/validate.py's, so a bench
never kills another grade's sandbox.
"""
import argparse
import json
import math
import os
import resource
import subprocess
import sys
import threading
import time

TOOLS = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(TOOLS)
sys.path[:0] = [REPO, TOOLS]
from autograder.sandbox import limits  # noqa: E402

BUDGETS = {"grade_seconds": (60, "a whole grade of the reference"), "peak_rss_mb": (768, "all grading processes"),
           "part_a_seconds": (15, "a Part A grade"), "public_tests_seconds": (10, "the public tests"),
           "isolation_overhead_seconds": (5, "the sandbox's cost over in-process calls, Part A"),
           "val_loss_gap": (0.10, "validation loss above the entropy bound")}
PAGE = resource.getpagesize()


class TreeRSS(threading.Thread):
    """Every 20 ms, the summed RSS of `root`, its descendants and every process of `uid`; keeps the peak."""

    def __init__(self, root, uid=None):
        super().__init__(daemon=True)
        self.root, self.uid, self.peak, self.done = root, uid, 0, threading.Event()

    def run(self):
        while not self.done.wait(0.02):
            table = {}  # pid -> (ppid, uid, rss bytes)
            for pid in filter(str.isdigit, os.listdir("/proc")):
                try:
                    with open(f"/proc/{pid}/status") as f:
                        fields = dict(line.split(":", 1) for line in f if ":" in line)
                    with open(f"/proc/{pid}/statm") as f:
                        rss = int(f.read().split()[1]) * PAGE
                    table[int(pid)] = (int(fields["PPid"]), int(fields["Uid"].split()[0]), rss)
                except (OSError, KeyError, ValueError, IndexError):
                    continue
            tree, size = {self.root}, 0
            while len(tree) != size:
                size = len(tree)
                tree |= {pid for pid, (ppid, _, _) in table.items() if ppid in tree}
            self.peak = max(self.peak, sum(rss for pid, (_, uid, rss) in table.items() if pid in tree or uid == self.uid))


def grade(env, uid, select=None):
    """A grade of the reference in a subprocess: its seconds, peak RSS and score."""
    out = os.path.join(REPO, "out", "bench", f"{select or 'all'}.json")
    cmd = [sys.executable, "-m", "autograder", "grade", "reference", "--out", out, "--quiet"]
    start = time.monotonic()
    proc = subprocess.Popen(cmd + (["--select", select] if select else []), cwd=REPO, env=env,
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    (watch := TreeRSS(proc.pid, uid)).start()
    _, err = proc.communicate()
    seconds = time.monotonic() - start
    watch.done.set()
    watch.join()
    with open(out) as f:
        doc = json.load(f)
    return {"seconds": round(seconds, 2), "peak_rss_mb": round(watch.peak / 2**20, 1), "score": doc.get("score"),
            "max_score": sum(t["max_score"] for t in doc["tests"]), "tests": len(doc["tests"]),
            "exit": proc.returncode, "stderr": err[-500:]}


def public_tests(env):
    env = dict(env, HW_DIR=os.path.join(REPO, "reference"))
    start = time.monotonic()
    proc = subprocess.run(["make", "-s", "-C", "handout", "test", f"HW_DIR={env['HW_DIR']}"], cwd=REPO, env=env,
                          capture_output=True, text=True)
    last = (proc.stdout.strip().splitlines() or [""])[-1]
    return round(time.monotonic() - start, 2), proc.returncode, last


def zip_size(env, skip):
    path = os.path.join(REPO, "dist", "autograder.zip")
    note = None
    if not skip and os.path.exists(os.path.join(TOOLS, "make_autograder.py")):
        proc = subprocess.run(["make", "-s", "-o", "install", "autograder"], cwd=REPO, env=env, capture_output=True, text=True)
        if proc.returncode:
            note = f"make autograder failed: {(proc.stderr or proc.stdout).strip()[-300:]}"
    elif not os.path.exists(path):
        note = "tools/make_autograder.py does not exist yet; no zip measured"
    if os.path.exists(path):
        return round(os.path.getsize(path) / 2**20, 2), note
    return None, note or "dist/autograder.zip was not written"


def isolation(uid_env):
    """Part A graded in this process through the sandbox, then with the same worker ops called
    in-process (no worker process, no pipes): the difference is what isolation costs."""
    import autograder.checks.context as context
    from autograder.grade import grade as run_grade
    from autograder.sandbox import Sandbox, StudentError
    from autograder.sandbox.worker import ops_common, student, wire

    class InProcess:
        def __init__(self, staged, **_):
            self.staged = staged

        def call(self, op, timeout=None, **args):
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
        context.Sandbox = cls
        student._loaded.clear()
        start = time.monotonic()
        doc = run_grade(os.path.join(REPO, "reference"), out, ["part-a"])
        times[label] = min(times.get(label, 1e9), time.monotonic() - start)
        times[label + "_score"] = doc.get("score")
    context.Sandbox = Sandbox
    start = time.monotonic()
    with Sandbox(os.path.join(REPO, "reference")) as sb:
        sb.call("ping")
        startup = time.monotonic() - start
    return {k: round(v, 3) if isinstance(v, float) else v for k, v in times.items()}, round(startup, 3)


def train_quality():
    """Train the reference GPT exactly as a grade does (the cases of autograder/checks/cases_part_b.py
    with the recorded "quality" configuration of autograder/data/part_b.json) and, step by step on
    the same batches, a plain PyTorch transformer of the same sizes: their throughputs, the
    reference's validation loss against the corpus's exact entropy, and its samples' quality."""
    import numpy as np
    import torch
    from torch import nn
    from torch.nn import functional as F

    from autograder.checks import cases_part_b as cases
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

        def forward(self, idx, targets):
            B, T = idx.shape
            x = self.wte(idx) + self.wpe(torch.arange(T))
            for b in self.h:
                q, k, v = b.qkv(b.ln1(x)).view(B, T, 3, self.H, -1).permute(2, 0, 3, 1, 4)  # (B, nh, T, hs)
                y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
                x = x + b.proj(y.transpose(1, 2).reshape(B, T, -1))
                x = x + b.out(F.gelu(b.fc(b.ln2(x)), approximate="tanh"))
            logits = self.head(self.ln_f(x))
            return logits, F.cross_entropy(logits.view(B * T, -1), targets.reshape(-1))

    try:
        with open(os.path.join(REPO, "autograder", "data", "part_b.json")) as f:
            q, source = json.load(f)["quality"], "autograder/data/part_b.json"
    except (OSError, KeyError, ValueError):
        q, source = {}, "nothing recorded"
    if not set(cases.QUALITY) <= set(q):  # stale (before `make reference`): the code's own case
        source = f"cases_part_b.QUALITY ({source} lacks {sorted(set(cases.QUALITY) - set(q))})"
        q = dict(q, **cases.QUALITY)
    args, tok, *rest = cases.quality_inputs(corpus, q)
    counted = rest[0] if rest else None
    cfg, T = args["config"], args["config"]["block_size"]
    torch.set_num_threads(int(args.get("threads", 1)))
    model = gpt.GPT(gpt.GPTConfig(**cfg))
    with torch.no_grad():  # the grader's initial weights, by name
        for name, p in model.named_parameters():
            p.copy_(torch.as_tensor(args["init"][name], dtype=p.dtype))
    torch.manual_seed(0)
    models = {"reference": model, "plain": Plain(cfg["vocab_size"], T, cfg["n_layer"], cfg["n_head"], cfg["n_embd"])}
    opts = {k: torch.optim.AdamW(m.parameters(), lr=args["lr"], betas=(0.9, 0.99), weight_decay=0.0)
            for k, m in models.items()}
    seconds, data, steps = dict.fromkeys(models, 0.0), torch.as_tensor(args["train_tokens"]), len(args["starts"])
    for step, row in enumerate(args["starts"]):  # the grader's loop (ops_part_b.train), both models in turn
        warm, n = (step + 1) / args["warmup"], max(1, steps - args["warmup"])
        cos = 0.5 * (1 + math.cos(math.pi * (step - args["warmup"]) / n))
        frac = args["min_lr_frac"]
        lr = args["lr"] * (warm if step < args["warmup"] else frac + (1 - frac) * cos)
        chunk = data[torch.as_tensor(row)[:, None] + torch.arange(T + 1)]  # (B, T + 1)
        for key, m in models.items():
            start = time.perf_counter()
            for group in opts[key].param_groups:
                group["lr"] = lr
            _, loss = m(chunk[:, :-1], chunk[:, 1:])
            opts[key].zero_grad(set_to_none=True)
            loss.backward()
            torch.nn.utils.clip_grad_norm_(m.parameters(), args["grad_clip"])
            opts[key].step()
            seconds[key] += time.perf_counter() - start
    ref_tps, plain_tps = (steps * len(args["starts"][0]) * T / seconds[k] for k in models)
    model.eval()
    windows = np.asarray(args["val_windows"])
    with torch.no_grad():
        logits = np.concatenate([model(torch.as_tensor(windows[i:i + 64, :-1]))[0].numpy()
                                 for i in range(0, len(windows), 64)])
        prompt = torch.full((args["sample_rows"], 1), args["start_id"], dtype=torch.long)
        rows = model.generate(prompt, args["sample_tokens"], temperature=args["temperature"],
                              generator=torch.Generator().manual_seed(args["seed"]))[:, 1:].tolist()
    val_loss = cases.val_loss(logits, windows, counted)
    sentences = [s for row in rows for s in corpus.split_sentences(tok.decode(row))]
    H = corpus.entropy_per_char()
    return dict(train_config_source=source, train_config=q, train_tokens_per_s=round(ref_tps),
                plain_tokens_per_s=round(plain_tps), train_speed_ratio=round(ref_tps / plain_tps, 3),
                val_loss=round(val_loss, 4), entropy_per_char=round(H, 4), val_loss_gap=round(val_loss / H - 1, 4),
                sampled_sentences=len(sentences),
                in_language=round(sum(map(corpus.is_sentence, sentences)) / max(1, len(sentences)), 3))


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", default=os.path.join(REPO, "bench.json"))
    parser.add_argument("--skip-zip", action="store_true", help="measure dist/autograder.zip without rebuilding it")
    parser.add_argument("--skip-train", action="store_true", help="no training throughput or quality")
    parser.add_argument("--strict", action="store_true", help="exit 1 when a budget is exceeded")
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
    r.update(grade_seconds=whole["seconds"], peak_rss_mb=whole["peak_rss_mb"], grade=whole)
    for part in ("part_a", "part_b"):
        r[part] = g = grade(env, uid, part.replace("_", "-"))
        r[part + "_seconds"], r["peak_rss_mb"] = g["seconds"], max(r["peak_rss_mb"], g["peak_rss_mb"])
    if whole["max_score"] == 0 or whole["score"] != whole["max_score"]:
        r["notes"].append(f"the reference did not get full marks: {whole['score']} / {whole['max_score']}")
    r["public_tests_seconds"], code, last = public_tests(env)
    if code:
        r["notes"].append(f"public tests failed on the reference: {last}")
    r["zip_mib"], note = zip_size(env, args.skip_zip)
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
    return 1 if exceeded and args.strict else 0


ROWS = [("whole grade (both parts)", "grade_seconds", "s"), ("Part A grade", "part_a_seconds", "s"),
        ("Part B grade", "part_b_seconds", "s"), ("peak RSS, all grading processes", "peak_rss_mb", "MB"),
        ("public tests (make -C handout test)", "public_tests_seconds", "s"), ("dist/autograder.zip", "zip_mib", "MiB"),
        ("sandbox start-up (spawn + ping)", "sandbox_startup_seconds", "s"),
        ("isolation overhead, Part A", "isolation_overhead_seconds", "s"),
        ("reference GPT training", "train_tokens_per_s", "tok/s"), ("plain PyTorch loop (F.sdpa)", "plain_tokens_per_s", "tok/s"),
        ("training speed ratio (ref / plain)", "train_speed_ratio", ""), ("val loss / entropy bound - 1", "val_loss_gap", ""),
        ("samples in the language", "in_language", "")]


def print_report(r):
    print(f"\nbench (load average {r['load_before']} before, {r['load_after']} after; {r['cpus']} CPUs)")
    for label, key, unit in ROWS:
        limit, value = BUDGETS.get(key, (None,))[0], r.get(key)
        flag = "" if limit is None or value is None else ("  OVER BUDGET" if value > limit else f"  (budget {limit})")
        print(f"  {label:40} {value if value is not None else '-':>10} {unit:6}{flag}")
    for note in r["notes"]:
        print(f"  note: {note}")
    print("budgets exceeded: " + ("; ".join(r["budgets_exceeded"]) or "none"))


if __name__ == "__main__":
    sys.exit(main())
