"""Calibrate HW11's training-quality check: run the grader's training (the one loop,
autograder/sandbox/worker/training.py, on the grader's data, autograder/checks/part_b/quality_data.py)
on the reference GPT and on deliberately broken ones, then measure the validation loss against
the exact entropy bound and judge samples with the corpus recogniser.

    .venv/bin/python tools/calibrate_quality.py                      # reference, seed 0
    .venv/bin/python tools/calibrate_quality.py --seeds 0,1,2 \\
        --variants reference,untrained,self_only,n_layer_0,no_pos,no_mask,heads_mixed,no_scale --json runs.jsonl
    .venv/bin/python tools/calibrate_quality.py --check-corpus        # entropy by brute force
    .venv/bin/python tools/calibrate_quality.py --hw-dir path/to/folder  # a submission's gpt.py
    .venv/bin/python tools/calibrate_quality.py --table runs.jsonl     # a summary

Every knob the grader fixes is a flag whose default is the recorded configuration
(docs/CALIBRATION.md says why). The grader evaluates the returned weights with the trusted
NumPy GPT-2; the variants made here by surgery have no such twin, so this tool evaluates every
model with its own logits and samples with torch: for the reference the two agree (the
grader's numbers are printed beside, for the reference only).

Variants (made from the model by surgery, after construction):
  reference   the model as written          untrained   no training steps at all
  self_only   every position attends only to itself (a bigram model with a position table)
  n_layer_0   GPTConfig(n_layer=0): embeddings -> ln_f -> lm_head, another bigram model
  no_pos      position embeddings zero and frozen
  no_mask     no causal mask: training sees the next token (it "cheats"); generation cannot
  heads_mixed q/k/v split into heads with .view(B, nh, T, hs) and no transpose (also leaks)
  no_scale    scores not divided by sqrt(hs) (a bug the quality check is not meant to catch)
"""
import argparse
import importlib
import json
import math
import sys
import time
import types
from pathlib import Path

import numpy as np
import torch
from torch.nn import functional as F

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
from autograder.checks.part_b import quality_data, weights  # noqa: E402 - after the path is set
from autograder.sandbox.worker import training  # noqa: E402 - after the path is set

VARIANTS = ("reference", "untrained", "self_only", "n_layer_0", "no_pos", "no_mask", "heads_mixed", "no_scale")


def _attention_forward(bug):
    def forward(self, x):
        B, T, C = x.size()
        hs = C // self.n_head
        q, k, v = self.c_attn(x).split(C, dim=2)
        if bug == "heads_mixed":  # the bug: no transpose
            q, k, v = (t.reshape(B, self.n_head, T, hs) for t in (q, k, v))
        else:
            q, k, v = (t.view(B, T, self.n_head, hs).transpose(1, 2) for t in (q, k, v))  # (B, nh, T, hs)
        att = q @ k.transpose(-2, -1) / (1.0 if bug == "no_scale" else math.sqrt(hs))  # (B, nh, T, T)
        keep = {"self_only": torch.eye(T, dtype=torch.bool), "no_mask": torch.ones(T, T, dtype=torch.bool)}.get(
            bug, torch.tril(torch.ones(T, T, dtype=torch.bool)))
        y = F.softmax(att.masked_fill(~keep, float("-inf")), dim=-1) @ v  # (B, nh, T, hs)
        y = y.reshape(B, T, C) if bug == "heads_mixed" else y.transpose(1, 2).reshape(B, T, C)
        return self.c_proj(y)
    return forward


def build(gpt, d, variant):
    """The student's (or reference's) GPT for the grader's configuration, from the grader's
    starting weights by name, with ``variant``'s surgery."""
    config = dict(d.config, n_layer=0) if variant == "n_layer_0" else d.config
    model = gpt.GPT(gpt.GPTConfig(**config))
    start = weights.init(config, 0) if variant == "n_layer_0" else d.init
    params = dict(model.named_parameters(remove_duplicate=False))
    with torch.no_grad():
        for name, value in start.items():
            params[name].copy_(torch.as_tensor(value))
    if variant in ("self_only", "no_mask", "heads_mixed", "no_scale"):
        for block in model.transformer.h:
            block.attn.forward = types.MethodType(_attention_forward(variant), block.attn)
    if variant == "no_pos":
        with torch.no_grad():
            model.transformer.wpe.weight.zero_()
        model.transformer.wpe.weight.requires_grad_(False)
    return model


@torch.no_grad()
def own_val_loss(model, d):
    logits = torch.cat([model(torch.from_numpy(d.val[i:i + 250, :-1]))[0] for i in range(0, len(d.val), 250)])
    nll = F.cross_entropy(logits.transpose(1, 2), torch.from_numpy(d.val[:, 1:]), reduction="none")  # (N, W - 1)
    return float(nll[torch.from_numpy(d.counted)].mean())


@torch.no_grad()
def own_samples(model, d, q):
    g = torch.Generator().manual_seed(q["seed"])
    idx = torch.full((q["sample_rows"], 1), d.sep, dtype=torch.long)
    for _ in range(q["sample_tokens"] or d.config["block_size"] - 1):
        logits, _ = model(idx[:, -d.config["block_size"]:])
        idx = torch.cat((idx, torch.multinomial(F.softmax(logits[:, -1] / q["temperature"], -1), 1, generator=g)), 1)
    return idx[:, 1:].numpy()


def run_one(gpt, corpus, q, variant, seed):
    q = dict(q, seed=seed)
    d = quality_data.data(corpus, q)
    model = build(gpt, d, variant)
    t0, c0 = time.perf_counter(), time.process_time()
    losses = [] if variant == "untrained" else training.train(
        model, d.tokens, d.starts, block_size=d.config["block_size"], lr=q["lr"], warmup=q["warmup"],
        min_lr_frac=q["min_lr_frac"], grad_clip=q["grad_clip"])
    seconds, cpu = time.perf_counter() - t0, time.process_time() - c0
    model.eval()
    loss, judged = own_val_loss(model, d), quality_data.judge(own_samples(model, d, q), d.tok, corpus)
    H = corpus.entropy_per_char()
    result = dict(variant=variant, seed=seed, train_seconds=round(seconds, 2), train_cpu_seconds=round(cpu, 2),
                  final_train_loss=round(float(np.mean(losses[-20:])), 4) if len(losses) else None,
                  val_loss=round(loss, 4), val_ppl=round(math.exp(loss), 4), ratio_to_entropy=round(loss / H, 4),
                  sentences=judged["n"], in_language=round(judged["in_language"], 3),
                  distinct=round(judged["distinct"], 3), looping_rows=judged["looping"],
                  examples=judged["sentences"][:4])
    if variant == "reference":  # what the grader computes from the returned weights, outside the model
        w = {n: p.detach().numpy() for n, p in model.named_parameters(remove_duplicate=False)}
        grader_loss, grader_judged = quality_data.evaluate(w, d, q, corpus)
        result["grader_val_loss"] = round(grader_loss, 4)
        result["grader_in_language"] = round(grader_judged["in_language"], 3)
    return result


def check_corpus(corpus):
    pairs = corpus.enumerate_sentences()
    total = sum(math.exp(lp) for _, lp in pairs)
    h = -sum(math.exp(lp) * lp for _, lp in pairs)
    length = sum(math.exp(lp) * (len(s) + len(corpus.SEPARATOR)) for s, lp in pairs)
    text = corpus.generate_text(20000, seed=1)
    print(f"sentences {len(pairs)}, total probability {total:.12f}")
    print(f"H(sentence) {h:.6f} nats, E[chars] {length:.6f}, H/E {h / length:.6f}, "
          f"entropy_per_char() {corpus.entropy_per_char():.6f}")
    print(f"oracle NLL of 20000 generated sentences: {corpus.oracle_char_nll(text).mean():.6f} nats/char")


def print_table(path):
    """One line per run of a --json file."""
    print(f"{'config':34}{'variant':12}{'seed':>4}{'train_s':>8}{'cpu_s':>7}{'val':>8}{'val/H':>7}{'in_lang':>8}"
          f"{'distinct':>9}{'n':>5}")
    for line in Path(path).read_text().splitlines():
        r = json.loads(line)
        c = r["config"]
        name = (f'{c["n_layer"]}L{c["n_head"]}H{c["n_embd"]}E T{c["block_size"]} B{c["batch_size"]} '
                f'lr{c["lr"]:g} {c["steps"]}st{"" if c["aligned"] else " ua"}')
        print(f'{name:34}{r["variant"]:12}{r["seed"]:4d}{r["train_seconds"]:8.2f}{r["train_cpu_seconds"]:7.2f}'
              f'{r["val_loss"]:8.4f}{r["ratio_to_entropy"]:7.3f}{r["in_language"]:8.2f}{r["distinct"]:9.2f}'
              f'{r["sentences"]:5d}')


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    ap.add_argument("--hw-dir", type=Path, default=ROOT / "reference", help="folder whose gpt.py is trained")
    ap.add_argument("--variants", default="reference")
    ap.add_argument("--seeds", default="0")
    ap.add_argument("--threads", type=int, default=1, help="torch threads (the grader uses 1)")
    ap.add_argument("--json", type=Path, help="append one JSON line per run to this file")
    ap.add_argument("--check-corpus", action="store_true")
    ap.add_argument("--table", type=Path, help="print the runs of a --json file and exit")
    for key, value in quality_data.QUALITY.items():
        if key != "seed":
            ap.add_argument("--" + key.replace("_", "-"), type=type(value), default=value)
    args = ap.parse_args(argv)
    if args.table:
        print_table(args.table)
        return 0
    sys.path.insert(0, str(ROOT / "reference"))
    corpus = importlib.import_module("corpus")
    if args.check_corpus:
        check_corpus(corpus)
        return 0
    sys.path.insert(0, str(args.hw_dir.resolve()))
    gpt = importlib.import_module("gpt")
    torch.set_num_threads(args.threads)
    q = dict(quality_data.QUALITY, **{k: getattr(args, k) for k in quality_data.QUALITY if k != "seed"})
    print(f"config {json.dumps(q)}; entropy_per_char {corpus.entropy_per_char():.4f}; torch {torch.__version__}, "
          f"{torch.get_num_threads()} thread(s)")
    for variant in args.variants.split(","):
        if variant not in VARIANTS:
            ap.error(f"unknown variant {variant!r}; choose from {', '.join(VARIANTS)}")
        for seed in (int(s) for s in args.seeds.split(",")):
            result = run_one(gpt, corpus, q, variant, seed)
            print(json.dumps(result), flush=True)
            if args.json:
                with open(args.json, "a") as f:
                    f.write(json.dumps(dict(result, config=q)) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
