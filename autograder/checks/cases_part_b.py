"""Part B's cases: seeded configurations, weights and inputs, shared by recording and grading.

``record(run)`` runs every case through the reference's gpt.py (``run(op, **args)`` calls a
worker op in a sandbox holding reference/) and returns ``(arrays, meta)``
for ``autograder/data/part_b.npz`` / ``part_b.json``. The checks read the same inputs back
from there, so recording and grading cannot drift apart. NumPy only (and, for the training
case, ``reference.corpus``, which is NumPy and the standard library).

    .venv/bin/python -m autograder.checks.cases_part_b     # (re)write the two data files
"""
import math
import os

import numpy as np

CONFIG_FIELDS = ("vocab_size", "block_size", "n_layer", "n_head", "n_embd")  # GPTConfig's order
# The model of every value check: 3 heads (a head-merge bug shows), T = block_size = 8.
CONFIG = dict(vocab_size=13, block_size=8, n_layer=2, n_head=3, n_embd=12)
# Built with the five required fields only, so the defaults (dropout 0, bias on) are used.
STRUCTURE_CONFIG = dict(vocab_size=50, block_size=16, n_layer=3, n_head=4, n_embd=16)
PROBE_POSITIONS = (0, 3, 6)
GRAD_POSITION = 3

# The sampler's logits: no ties, not sorted (top-k must find the largest, not the first).
SAMPLER_LOGITS = (0.1, 2.0, -0.8, 0.9, -1.5, 1.4, -0.3, 0.5)
TEMPERATURES = (0.5, 1.0, 1.5)
TOP_KS = ((3, 1.0), (5, 1.5))  # (k, temperature)
N_DRAWS = 20_000   # a multiplied temperature or an off-by-one k fails with chi-square in the thousands
ALPHA = 1e-9       # per comparison; <= 3 comparisons per test keeps a false failure below 1e-6

# The generation-quality case: the trusted loop of docs/CALIBRATION.md (tools/calibrate_quality.py):
# batches start at a separator (aligned), validation on whole sentences, sample_tokens 0 means
# block_size - 1 (the context then always starts at the separator, as in training).
QUALITY = dict(n_layer=2, n_head=4, n_embd=48, block_size=48, batch_size=32, aligned=1, lr=2e-2, warmup=20,
               min_lr_frac=0.1, steps=300, grad_clip=1.0, train_sentences=20000, val_sentences=2000,
               sample_rows=64, sample_tokens=0, temperature=0.8, seed=0, threads=1)
THRESHOLDS = dict(val_loss_margin=0.02, in_language_min=0.8, distinct_min=0.8, looping_rows_max=3,
                  min_sentences=32, timeout=120.0)


def gpt2_parameters(config):
    """[(name, shape)] of GPT(config) in nanoGPT's layout, lm_head.weight included (tied)."""
    V, L, C = config["vocab_size"], config["n_layer"], config["n_embd"]
    params = [("transformer.wte.weight", (V, C)), ("transformer.wpe.weight", (config["block_size"], C))]
    for i in range(L):
        h = f"transformer.h.{i}."
        params += [(h + "ln_1.weight", (C,)), (h + "ln_1.bias", (C,)),
                   (h + "attn.c_attn.weight", (3 * C, C)), (h + "attn.c_attn.bias", (3 * C,)),
                   (h + "attn.c_proj.weight", (C, C)), (h + "attn.c_proj.bias", (C,)),
                   (h + "ln_2.weight", (C,)), (h + "ln_2.bias", (C,)),
                   (h + "mlp.c_fc.weight", (4 * C, C)), (h + "mlp.c_fc.bias", (4 * C,)),
                   (h + "mlp.c_proj.weight", (C, 4 * C)), (h + "mlp.c_proj.bias", (C,))]
    return params + [("transformer.ln_f.weight", (C,)), ("transformer.ln_f.bias", (C,)),
                     ("lm_head.weight", (V, C))]


def param_count(config):
    """V*C + block_size*C + L*(12C^2 + 13C) + 2C (lm_head shares wte's matrix)."""
    V, C, L = config["vocab_size"], config["n_embd"], config["n_layer"]
    return V * C + config["block_size"] * C + L * (12 * C * C + 13 * C) + 2 * C


def random_weights(config, seed):
    """Weights large enough that every part of the model shows in the logits (GPT-2's init
    gives logits near zero, where a missing scale or mask changes nothing measurable)."""
    rng = np.random.default_rng(seed)
    w = {}
    for name, shape in gpt2_parameters(config):
        if name == "lm_head.weight":
            w[name] = w["transformer.wte.weight"]
        elif ".ln_" in name:
            w[name] = (name.endswith(".weight") + 0.2 * rng.standard_normal(shape))
        elif name.endswith(".bias"):
            w[name] = 0.1 * rng.standard_normal(shape)
        elif len(shape) == 2 and not name.startswith("transformer.w"):
            gain = 1.5 if "c_attn" in name else 1.0
            w[name] = gain * rng.standard_normal(shape) / math.sqrt(shape[1])
        else:  # wte (also lm_head, so logits stay O(1)) and wpe
            w[name] = (0.5 if name.endswith("wte.weight") else 1.0) * rng.standard_normal(shape)
    return {k: v.astype(np.float32) for k, v in w.items()}


def init_weights(config, seed):
    """GPT-2's initialisation by name, from NumPy (so a submission's own init does not matter)."""
    rng = np.random.default_rng(seed)
    w = {}
    for name, shape in sorted(gpt2_parameters(config)):
        if name == "lm_head.weight":
            continue
        if name.endswith(".bias"):
            w[name] = np.zeros(shape)
        elif ".ln_" in name:
            w[name] = np.ones(shape)
        else:
            std = 0.02 / math.sqrt(2 * max(config["n_layer"], 1)) if name.endswith("c_proj.weight") else 0.02
            w[name] = rng.normal(0.0, std, size=shape)
    w["lm_head.weight"] = w["transformer.wte.weight"]
    return {k: v.astype(np.float32) for k, v in w.items()}


def inputs(seed=0):
    """Every token-id input of the value checks."""
    rng = np.random.default_rng(seed)
    V, T = CONFIG["vocab_size"], CONFIG["block_size"]
    x = {"forward.idx": rng.integers(0, V, (3, T)), "forward.targets": rng.integers(0, V, (3, T)),
         "short.idx": rng.integers(0, V, (2, 5)), "probe.idx": rng.integers(0, V, (2, T)),
         "generate.idx": rng.integers(0, V, (2, 3)), "long.idx": rng.integers(0, V, (2, T + 4)),
         "ppl.windows": rng.integers(0, V, (70, T + 1)), "argmax.logits": rng.standard_normal((16, V))}
    for t in PROBE_POSITIONS:  # the same tokens up to t, different ones after
        changed = x["probe.idx"].copy()
        changed[:, t + 1:] = (changed[:, t + 1:] + rng.integers(1, V, changed[:, t + 1:].shape)) % V
        x[f"probe.changed{t}"] = changed
    return {k: (v.astype(np.int64) if v.dtype.kind == "i" else v.astype(np.float32)) for k, v in x.items()}


def quality_inputs(corpus, q=QUALITY):
    """The train op's arguments (initial weights, training tokens, the batches' starts, the
    validation sentences padded into one batch), the tokenizer, and which predictions count."""
    tok = corpus.CharTokenizer.for_language()
    sep, T, B = tok.stoi[corpus.SEPARATOR], q["block_size"], q["batch_size"]
    train = np.array(tok.encode(corpus.generate_text(q["train_sentences"], seed=1)), dtype=np.int64)
    rows = [[sep] + tok.encode(s + corpus.SEPARATOR) for s in corpus.generate_sentences(q["val_sentences"], seed=2)]
    width = max(map(len, rows))
    if width > T + 1:
        raise ValueError(f"block_size {T} is too small for whole validation sentences ({width - 1})")
    batch = np.full((len(rows), width), sep, dtype=np.int64)  # (N, W): separator, sentence, padding
    counted = np.zeros((len(rows), width - 1), dtype=bool)   # (N, W - 1): the predictions that count
    for i, r in enumerate(rows):
        batch[i, :len(r)] = r
        counted[i, :len(r) - 1] = True
    rng = np.random.default_rng(q["seed"])
    candidates = np.flatnonzero(train[: len(train) - T - 1] == sep) if q["aligned"] else np.arange(len(train) - T - 1)
    starts = np.stack([candidates[rng.integers(0, len(candidates), size=B)] for _ in range(q["steps"])])
    config = dict(vocab_size=tok.vocab_size, block_size=T, n_layer=q["n_layer"], n_head=q["n_head"],
                  n_embd=q["n_embd"])
    args = dict(config=config, init=init_weights(config, q["seed"]), train_tokens=train, starts=starts,
                val_windows=batch, lr=q["lr"], warmup=q["warmup"], min_lr_frac=q["min_lr_frac"],
                grad_clip=q["grad_clip"], sample_rows=q["sample_rows"], sample_tokens=q["sample_tokens"] or T - 1,
                temperature=q["temperature"], start_id=sep, seed=q["seed"], threads=q["threads"],
                prefix_positions=[p for p in (7, 15, 23, 31) if p < width - 1])
    return args, tok, counted


def cross_entropy(logits, targets, counted=None):
    """Mean cross-entropy (nats) of logits (B, T, V) against targets (B, T), in float64, over
    the positions where ``counted`` (B, T) is True (all by default)."""
    z = np.asarray(logits, dtype=np.float64)
    z = z - z.max(-1, keepdims=True)
    logp = z - np.log(np.exp(z).sum(-1, keepdims=True))
    nll = -np.take_along_axis(logp, np.asarray(targets)[..., None], -1)[..., 0]
    return float(nll.mean() if counted is None else nll[counted].mean())


def val_loss(logits, windows, counted=None):
    """Mean next-token cross-entropy of logits (N, T, V) for windows (N, T + 1)."""
    return cross_entropy(logits, np.asarray(windows)[:, 1:], counted)


def _greedy_margin(run, weights, tokens, prompt_len):
    """The smallest top-1 minus top-2 logit along a greedy path (a tie would make it fragile)."""
    margin = np.inf
    for n in range(prompt_len, tokens.shape[1]):
        ctx = tokens[:, max(0, n - CONFIG["block_size"]):n]
        z = np.sort(run("gpt_forward", config=CONFIG, weights=weights, idx=ctx)["logits"][:, -1], -1)
        margin = min(margin, float((z[:, -1] - z[:, -2]).min()))
    return margin


def record(run):
    from reference import corpus
    x = inputs()
    w = random_weights(CONFIG, seed=1)
    arrays = dict(x, **{f"w.{k}": v for k, v in w.items()})
    fwd = run("gpt_forward", config=CONFIG, weights=w, idx=x["forward.idx"], targets=x["forward.targets"])
    arrays["forward.logits"] = fwd["logits"]
    arrays["short.logits"] = run("gpt_forward", config=CONFIG, weights=w, idx=x["short.idx"])["logits"]
    meta = {"config": CONFIG, "structure_config": STRUCTURE_CONFIG, "forward_loss": fwd["loss"],
            "probe_positions": list(PROBE_POSITIONS), "grad_position": GRAD_POSITION}
    for name, new in (("generate", 5), ("long", 4)):
        out = run("generate", config=CONFIG, weights=w, idx=x[f"{name}.idx"], max_new_tokens=new, temperature=0.0)
        arrays[f"{name}.greedy"] = out["tokens"]
        meta[f"{name}_margin"] = _greedy_margin(run, w, out["tokens"], x[f"{name}.idx"].shape[1])
        if meta[f"{name}_margin"] < 1e-3:
            raise RuntimeError(f"the greedy path of case {name!r} nearly ties; change the seed of inputs()")
    meta["perplexity"] = run("perplexity", config=CONFIG, weights=w, windows=x["ppl.windows"])["value"]
    meta["sampler"] = {"logits": list(SAMPLER_LOGITS), "temperatures": list(TEMPERATURES),
                       "top_ks": [list(k) for k in TOP_KS], "n_draws": N_DRAWS, "alpha": ALPHA}
    args, _, counted = quality_inputs(corpus)
    trained = run("train", **args)
    loss = val_loss(trained["val_logits"], args["val_windows"], counted)
    meta["quality"] = dict(QUALITY, **THRESHOLDS, reference_val_loss=loss, reference_val_ppl=math.exp(loss),
                           entropy_per_char=corpus.entropy_per_char())
    return arrays, meta


def main():
    import json
    from autograder.sandbox import Sandbox
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    with Sandbox(os.path.join(root, "reference"), timeout=900.0) as sb:
        arrays, meta = record(lambda op, **args: sb.call(op, module="gpt", **args))
    data = os.path.join(root, "autograder", "data")
    os.makedirs(data, exist_ok=True)
    np.savez(os.path.join(data, "part_b.npz"), **arrays)
    with open(os.path.join(data, "part_b.json"), "w") as f:
        json.dump(meta, f, indent=1, sort_keys=True)
        f.write("\n")
    print(json.dumps(meta["quality"], indent=1))


if __name__ == "__main__":
    main()
