"""Calibrate HW11's training-quality check: train a GPT with the trusted loop on the
synthetic corpus, then measure validation loss against the exact entropy bound and judge
samples with the corpus recogniser, for the reference and for deliberately broken models.

    .venv/bin/python tools/calibrate_quality.py                     # reference, seed 0
    .venv/bin/python tools/calibrate_quality.py --seeds 0,1,2 \\
        --variants reference,untrained,self_only,n_layer_0,no_pos,no_mask,heads_mixed \\
        --json docs/calibration.json
    .venv/bin/python tools/calibrate_quality.py --check-corpus       # entropy by brute force
    .venv/bin/python tools/calibrate_quality.py --hw-dir path/to/submission   # their gpt.py
    .venv/bin/python tools/calibrate_quality.py --table docs/calibration.json  # a summary

Everything a grader would fix is a flag with the recommended value as its default
(docs/CALIBRATION.md explains the choice). The loop touches the model only through
GPTConfig, GPT(config), named_parameters/state_dict (to initialise every weight by name from
NumPy, so a submission's own init does not matter) and forward(idx, targets); sampling for
the judge is done here, from the logits, not with the model's generate.

Variants (made from the reference by surgery, after construction):
  reference   the model as written
  untrained   no training steps at all
  self_only   every position attends only to itself: logits depend on the current token
              (and its position) only, a bigram model with a position table
  n_layer_0   GPTConfig(n_layer=0): embeddings -> ln_f -> lm_head, another bigram model
  no_pos      position embeddings zero and frozen
  no_mask     no causal mask: training sees the next token (it "cheats"); generation cannot
  heads_mixed q/k/v split into heads with .view(B, nh, T, hs) and no transpose, a common bug
              that mixes time steps into heads (and so also leaks the future)
  no_scale    scores not divided by sqrt(hs) (a bug the quality check is not meant to catch)
"""

from __future__ import annotations

import argparse
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
VARIANTS = ("reference", "untrained", "self_only", "n_layer_0", "no_pos", "no_mask",
            "heads_mixed", "no_scale")

# The recommended grading configuration (docs/CALIBRATION.md).
DEFAULTS = dict(
    n_layer=2, n_head=4, n_embd=48, block_size=48,
    batch_size=32, aligned=1, lr=2e-2, warmup=20, min_lr_frac=0.1, steps=300, grad_clip=1.0,
    train_sentences=20000, val_sentences=2000, val_windows=256,
    sample_rows=64, sample_tokens=0, temperature=0.8, init="by-name",
)


def import_modules(hw_dir: Path, corpus_dir: Path):
    """gpt from hw_dir, corpus from corpus_dir (the reference's, always trusted)."""
    sys.path.insert(0, str(corpus_dir))
    import corpus  # noqa: E402
    sys.path.insert(0, str(hw_dir))
    import importlib
    gpt = importlib.import_module("gpt")
    return gpt, corpus


# ----------------------------------------------------------------------------- data

def make_data(corpus, cfg):
    """The tokenizer, the training stream, and two validation sets with their exact floors:
    whole sentences (each read from its start, separator included; the floor is their true
    NLL per character, an unbiased estimate of entropy_per_char) and aligned windows
    (N, T + 1) starting at a separator, the shape `perplexity` takes."""
    tok = corpus.CharTokenizer.for_language()
    sep = tok.stoi[corpus.SEPARATOR]
    train = np.array(tok.encode(corpus.generate_text(cfg["train_sentences"], seed=1)),
                     dtype=np.int64)
    sentences = corpus.generate_sentences(cfg["val_sentences"], seed=2)
    rows = [[sep] + tok.encode(s + corpus.SEPARATOR) for s in sentences]
    width = max(map(len, rows))
    assert width <= cfg["block_size"] + 1, "block_size too small for whole sentences"
    batch = np.full((len(rows), width), sep, dtype=np.int64)
    counted = np.zeros((len(rows), width - 1), dtype=bool)
    for i, r in enumerate(rows):
        batch[i, :len(r)] = r
        counted[i, :len(r) - 1] = True
    sentence_floor = (-sum(map(corpus.sentence_logprob, sentences))
                      / sum(len(s) + 1 for s in sentences))
    val = np.array(tok.encode("".join(s + corpus.SEPARATOR for s in sentences)),
                   dtype=np.int64)
    windows = corpus.sentence_windows(val, cfg["val_windows"], cfg["block_size"] + 1,
                                      seed=0, separator_id=sep)
    window_floor = float(np.mean([corpus.oracle_char_nll(tok.decode(w[1:])).mean()
                                  for w in windows]))
    return dict(tok=tok, train=train, sentences=(batch, counted), windows=windows,
                sentence_floor=sentence_floor, window_floor=window_floor)


def batches(train, cfg, seed, separator_id):
    """An endless stream of (x, y) LongTensors (B, T), from a NumPy generator; with
    cfg["aligned"] every window starts at a separator (x[:, 0] is the separator)."""
    rng = np.random.default_rng(seed)
    T, B = cfg["block_size"], cfg["batch_size"]
    offsets = np.arange(T + 1)
    if cfg["aligned"]:
        candidates = np.flatnonzero(train[: len(train) - T - 1] == separator_id)
    else:
        candidates = np.arange(len(train) - T - 1)
    while True:
        starts = candidates[rng.integers(0, len(candidates), size=B)]
        chunk = torch.from_numpy(train[starts[:, None] + offsets])  # (B, T + 1)
        yield chunk[:, :-1], chunk[:, 1:]


# ----------------------------------------------------------------------------- model

def init_by_name(model, n_layer, seed):
    """Every parameter from NumPy by its name, as GPT-2 initialises: LayerNorm weights 1,
    biases 0, residual projections N(0, 0.02/sqrt(2 n_layer)), other weights N(0, 0.02)."""
    rng = np.random.default_rng(seed)
    state = {}
    for name, p in sorted(model.named_parameters()):
        if name.endswith(".bias"):
            value = np.zeros(p.shape)
        elif ".ln_" in name:  # ln_1, ln_2, ln_f weights
            value = np.ones(p.shape)
        else:
            std = 0.02 / math.sqrt(2 * max(n_layer, 1)) if name.endswith("c_proj.weight") \
                else 0.02
            value = rng.normal(0.0, std, size=p.shape)
        state[name] = torch.tensor(value, dtype=p.dtype)
    with torch.no_grad():
        for name, p in model.named_parameters():  # the tied lm_head appears once
            p.copy_(state[name])


def _heads_mixed_forward(self, x):
    B, T, C = x.size()
    hs = C // self.n_head
    q, k, v = self.c_attn(x).split(C, dim=2)
    q, k, v = (t.reshape(B, self.n_head, T, hs) for t in (q, k, v))  # the bug: no transpose
    att = (q @ k.transpose(-2, -1)) / math.sqrt(hs)
    mask = torch.tril(torch.ones(T, T, dtype=torch.bool))
    att = F.softmax(att.masked_fill(~mask, float("-inf")), dim=-1)
    y = (att @ v).reshape(B, T, C)
    return self.c_proj(y)


def _no_scale_forward(self, x):
    B, T, C = x.size()
    hs = C // self.n_head
    q, k, v = self.c_attn(x).split(C, dim=2)
    q, k, v = (t.view(B, T, self.n_head, hs).transpose(1, 2) for t in (q, k, v))
    att = q @ k.transpose(-2, -1)  # the bug: no / sqrt(hs)
    mask = torch.tril(torch.ones(T, T, dtype=torch.bool))
    att = F.softmax(att.masked_fill(~mask, float("-inf")), dim=-1)
    y = (att @ v).transpose(1, 2).reshape(B, T, C)
    return self.c_proj(y)


def build(gpt, cfg, vocab_size, variant, seed):
    n_layer = 0 if variant == "n_layer_0" else cfg["n_layer"]
    config = gpt.GPTConfig(vocab_size=vocab_size, block_size=cfg["block_size"],
                           n_layer=n_layer, n_head=cfg["n_head"], n_embd=cfg["n_embd"])
    torch.manual_seed(seed)
    model = gpt.GPT(config)
    if cfg["init"] == "by-name":
        init_by_name(model, n_layer, seed)
    elif cfg["init"] == "torch-default":  # as if GPT.__init__ forgot _init_weights
        for module in model.modules():
            if hasattr(module, "reset_parameters"):
                module.reset_parameters()
    # cfg["init"] == "own": the model's own initialisation, from torch.manual_seed(seed)
    T = cfg["block_size"]
    for block in model.transformer.h:
        attn = block.attn
        if variant == "self_only":
            attn.mask = torch.eye(T, dtype=torch.bool).view(1, 1, T, T)
        elif variant == "no_mask":
            attn.mask = torch.ones(1, 1, T, T, dtype=torch.bool)
        elif variant == "heads_mixed":
            attn.forward = types.MethodType(_heads_mixed_forward, attn)
        elif variant == "no_scale":
            attn.forward = types.MethodType(_no_scale_forward, attn)
    if variant == "no_pos":
        with torch.no_grad():
            model.transformer.wpe.weight.zero_()
        model.transformer.wpe.weight.requires_grad_(False)
    return model


# ----------------------------------------------------------------------------- train

def lr_at(step, cfg):
    """Linear warmup, then cosine decay to min_lr_frac * lr at the last step."""
    lr = cfg["lr"]
    if step < cfg["warmup"]:
        return lr * (step + 1) / cfg["warmup"]
    progress = (step - cfg["warmup"]) / max(1, cfg["steps"] - cfg["warmup"])
    return lr * (cfg["min_lr_frac"] + (1 - cfg["min_lr_frac"]) * 0.5
                 * (1 + math.cos(math.pi * progress)))


def train(model, data_iter, cfg):
    params = [p for p in model.parameters() if p.requires_grad]
    opt = torch.optim.AdamW(params, lr=cfg["lr"], betas=(0.9, 0.99), weight_decay=0.0)
    model.train()
    losses = []
    for step in range(cfg["steps"]):
        for group in opt.param_groups:
            group["lr"] = lr_at(step, cfg)
        x, y = next(data_iter)
        logits, _ = model(x)
        # the loop's own loss: a bug in the model's loss is another test's business
        loss = F.cross_entropy(logits.reshape(-1, logits.size(-1)), y.reshape(-1))
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(params, cfg["grad_clip"])
        opt.step()
        losses.append(loss.item())
    return losses


# ----------------------------------------------------------------------------- judge

@torch.no_grad()
def sentence_loss(model, sentences):
    """Mean NLL per character over whole validation sentences, from the model's logits."""
    model.eval()
    batch, counted = (torch.from_numpy(a) for a in sentences)
    logits, _ = model(batch[:, :-1])  # (N, W - 1, V)
    nll = F.cross_entropy(logits.transpose(1, 2), batch[:, 1:], reduction="none")  # (N, W-1)
    return float(nll[counted].mean())


@torch.no_grad()
def window_loss(model, windows):
    """Mean NLL over all predictions of aligned windows (N, T + 1): log of `perplexity`."""
    model.eval()
    w = torch.from_numpy(windows)
    logits, _ = model(w[:, :-1])
    return float(F.cross_entropy(logits.reshape(-1, logits.size(-1)), w[:, 1:].reshape(-1)))


@torch.no_grad()
def sample_rows(model, start_id, cfg, seed):
    """(rows, n) ids after a separator prompt, sampled from the logits here. n is
    cfg["sample_tokens"], or block_size - 1 when that is 0: then the context is never
    cropped and always starts at the separator, as in training."""
    model.eval()
    g = torch.Generator().manual_seed(seed)
    idx = torch.full((cfg["sample_rows"], 1), start_id, dtype=torch.long)
    for _ in range(cfg["sample_tokens"] or cfg["block_size"] - 1):
        logits, _ = model(idx[:, -cfg["block_size"]:])
        probs = F.softmax(logits[:, -1, :] / cfg["temperature"], dim=-1)
        idx = torch.cat((idx, torch.multinomial(probs, 1, generator=g)), dim=1)
    return idx[:, 1:].tolist()


def judge(rows, tok, corpus):
    sentences = []
    looping_rows = 0
    for row in rows:
        got = corpus.split_sentences(tok.decode(row))
        sentences += got
        # a row loops when its sentences repeat: fewer than half of them distinct
        if len(got) >= 2 and len(set(got)) <= len(got) / 2:
            looping_rows += 1
    n = len(sentences)
    return dict(
        sentences=n,
        in_language=sum(map(corpus.is_sentence, sentences)) / n if n else 0.0,
        distinct=len(set(sentences)) / n if n else 0.0,
        looping_rows=looping_rows,
        examples=sentences[:4],
    )


def run_one(gpt, corpus, data, cfg, variant, seed):
    tok = data["tok"]
    model = build(gpt, cfg, tok.vocab_size, variant, seed)
    steps = 0 if variant == "untrained" else cfg["steps"]
    data_iter = batches(data["train"], cfg, seed, tok.stoi[corpus.SEPARATOR])
    t0, c0 = time.perf_counter(), time.process_time()
    losses = train(model, data_iter, dict(cfg, steps=steps))
    seconds, cpu_seconds = time.perf_counter() - t0, time.process_time() - c0
    vl = sentence_loss(model, data["sentences"])
    wl = window_loss(model, data["windows"])
    t1 = time.perf_counter()
    rows = sample_rows(model, tok.stoi[corpus.SEPARATOR], cfg, seed)
    sample_seconds = time.perf_counter() - t1
    H = corpus.entropy_per_char()
    return dict(
        variant=variant, seed=seed, steps=steps, threads=torch.get_num_threads(),
        train_seconds=round(seconds, 2),
        train_cpu_seconds=round(cpu_seconds, 2), sample_seconds=round(sample_seconds, 2),
        final_train_loss=round(float(np.mean(losses[-20:])), 4) if losses else None,
        val_loss=round(vl, 4), val_ppl=round(math.exp(vl), 4),
        ratio_to_entropy=round(vl / H, 4), ratio_to_floor=round(vl / data["sentence_floor"], 4),
        window_loss=round(wl, 4), window_ratio_to_floor=round(wl / data["window_floor"], 4),
        **judge(rows, tok, corpus),
    )


def check_corpus(corpus):
    pairs = corpus.enumerate_sentences()
    total = sum(math.exp(lp) for _, lp in pairs)
    h = -sum(math.exp(lp) * lp for _, lp in pairs)
    length = sum(math.exp(lp) * (len(s) + len(corpus.SEPARATOR)) for s, lp in pairs)
    text = corpus.generate_text(20000, seed=1)
    print(f"sentences {len(pairs)}, total probability {total:.12f}")
    print(f"H(sentence) {h:.6f} nats, E[chars] {length:.6f}, H/E {h / length:.6f}, "
          f"entropy_per_char() {corpus.entropy_per_char():.6f}")
    print(f"oracle NLL of 20000 generated sentences: "
          f"{corpus.oracle_char_nll(text).mean():.6f} nats/char")


def print_table(path):
    """One line per run of a --json file."""
    print(f"{'config':33}{'init':8}{'variant':12}{'seed':>4}{'thr':>4}{'train_s':>8}{'cpu_s':>7}"
          f"{'val':>8}{'val/H':>7}{'in_lang':>8}{'distinct':>9}{'n':>5}")
    for line in Path(path).read_text().splitlines():
        r = json.loads(line)
        c = r["config"]
        name = (f'{c["n_layer"]}L{c["n_head"]}H{c["n_embd"]}E T{c["block_size"]} '
                f'B{c["batch_size"]} lr{c["lr"]:g} {c["steps"]}st{"" if c["aligned"] else " ua"}')
        print(f'{name:33}{c.get("init", "by-name"):8}{r["variant"]:12}{r["seed"]:4d}'
              f'{r.get("threads", 0):4d}{r["train_seconds"]:8.2f}{r["train_cpu_seconds"]:7.2f}'
              f'{r["val_loss"]:8.4f}{r["ratio_to_entropy"]:7.3f}{r["in_language"]:8.2f}'
              f'{r["distinct"]:9.2f}{r["sentences"]:5d}')


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--hw-dir", type=Path, default=ROOT / "reference",
                    help="folder whose gpt.py is trained (default: reference/)")
    ap.add_argument("--variants", default="reference")
    ap.add_argument("--seeds", default="0")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--json", type=Path, help="append one JSON line per run to this file")
    ap.add_argument("--check-corpus", action="store_true")
    ap.add_argument("--table", type=Path, help="print the runs of a --json file and exit")
    for key, value in DEFAULTS.items():
        ap.add_argument("--" + key.replace("_", "-"), type=type(value), default=value)
    args = ap.parse_args(argv)
    if args.table:
        print_table(args.table)
        return 0
    gpt, corpus = import_modules(args.hw_dir.resolve(), ROOT / "reference")
    if args.check_corpus:
        check_corpus(corpus)
        return 0
    torch.set_num_threads(args.threads)
    cfg = {key: getattr(args, key) for key in DEFAULTS}
    t0 = time.perf_counter()
    data = make_data(corpus, cfg)
    print(f"config {json.dumps(cfg)}")
    print(f"data {time.perf_counter() - t0:.2f}s; entropy_per_char "
          f"{corpus.entropy_per_char():.4f}; floors: validation sentences "
          f"{data['sentence_floor']:.4f}, aligned windows {data['window_floor']:.4f}; "
          f"torch {torch.__version__}, {torch.get_num_threads()} threads")
    for variant in args.variants.split(","):
        if variant not in VARIANTS:
            ap.error(f"unknown variant {variant!r}; choose from {', '.join(VARIANTS)}")
        for seed in (int(s) for s in args.seeds.split(",")):
            result = run_one(gpt, corpus, data, cfg, variant, seed)
            print(json.dumps(result), flush=True)
            if args.json:
                with open(args.json, "a") as f:
                    f.write(json.dumps(dict(result, config=cfg)) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
