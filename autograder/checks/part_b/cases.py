"""Part B's cases: configurations, weight sets and inputs, shared by recording and grading.

``record(run)`` runs them through the reference's gpt.py (``run(op, **args)`` is a worker op in
a sandbox holding reference/) and returns ``(arrays, meta)`` for ``autograder/data/part_b.npz``
and ``part_b.json``; the checks compare the student's raw outputs for the same weights and
inputs with those. NumPy only (and ``reference.corpus`` for the training case).
"""
import numpy as np

from .. import gpt2
from . import quality_data, weights

# The model of every value check: 3 heads (a head-merge bug shows), T = block_size = 8.
CONFIG = dict(vocab_size=13, block_size=8, n_layer=2, n_head=3, n_embd=12)
# Built with the five required fields only, so the defaults (dropout 0, bias on) are used.
STRUCTURE_CONFIG = dict(vocab_size=50, block_size=16, n_layer=3, n_head=4, n_embd=16)
WEIGHT_SEEDS = {"full": 1, "generation": 3, "probe": 4, "structure": 5}
PROBE_POSITIONS = (0, 3, 6)
GRAD_POSITION = 3
GREEDY = {"gen": 6, "long": 4}  # prompt case -> new tokens (long.idx is longer than block_size)

# The sampler's logits: no ties, not sorted (top-k must find the largest, not the first).
SAMPLER_LOGITS = (0.1, 2.0, -0.8, 0.9, -1.5, 1.4, -0.3, 0.5)
TEMPERATURES = (0.5, 1.0, 1.5)
TOP_KS = ((3, 1.0), (5, 1.5))  # (k, temperature)
GENERATE_DRAWS = ((1.5, None), (0.7, 4))  # generate's own draws: (temperature, top_k)
N_DRAWS = 20_000   # a multiplied temperature or an off-by-one k fails with chi-square in the thousands
ALPHA = 1e-9       # per comparison; <= 3 comparisons per test keeps a false failure below 1e-6


def weight_set(name):
    """The weights of set ``name`` ("full", "generation", "probe", "structure"), nanoGPT layout."""
    make = {"full": weights.full, "generation": weights.generation, "probe": weights.probe,
            "structure": weights.generation}[name]
    return make(STRUCTURE_CONFIG if name == "structure" else CONFIG, WEIGHT_SEEDS[name])


def inputs(seed=0):
    """Every token-id input of the checks, and the probe's direction ``probe.r``."""
    rng = np.random.default_rng(seed)
    V, T = CONFIG["vocab_size"], CONFIG["block_size"]
    x = {"forward.idx": rng.integers(0, V, (3, T)), "forward.targets": rng.integers(0, V, (3, T)),
         "short.idx": rng.integers(0, V, (2, 5)), "probe.idx": rng.integers(0, V, (2, T)),
         "gen.idx": rng.integers(0, V, (2, 3)), "long.idx": rng.integers(0, V, (2, T + 4)),
         "ppl.windows": rng.integers(0, V, (70, T + 1)), "argmax.logits": rng.standard_normal((16, V)),
         "own.idx": rng.integers(0, V, (2, T - 2)), "own.long": rng.integers(0, V, (2, T + 3)),
         "dist.prompt": rng.integers(0, V, (1, 4)), "probe.r": rng.standard_normal((2, V)),
         "structure.idx": rng.integers(0, STRUCTURE_CONFIG["vocab_size"], (2, STRUCTURE_CONFIG["block_size"]))}
    for t in PROBE_POSITIONS:  # the same tokens up to t, different ones after
        changed = x["probe.idx"].copy()
        changed[:, t + 1:] = (changed[:, t + 1:] + rng.integers(1, V, changed[:, t + 1:].shape)) % V
        x[f"probe.changed{t}"] = changed
    return {k: (v.astype(np.int64) if v.dtype.kind == "i" else v.astype(np.float32)) for k, v in x.items()}


def model(config, weights=None, **options):
    """The ``model`` argument of the worker op ``gpt``."""
    return dict(options, config=config, weights=weights)


def forward(idx, targets=None, every_position=True, **options):
    """A ``forward`` call; ``every_position``: all positions' logits even from a model that gives
    only the last one without targets (that shape is test 2.2.1's business alone)."""
    return dict(options, fn="forward", idx=idx, targets=targets, every_position=every_position)


def greedy_path(w, idx, new, crop=CONFIG["block_size"], bug=None, n_head=CONFIG["n_head"]):
    """The argmax path from ``idx`` on weights ``w`` (of known bug ``bug``), the context cropped to
    its last ``crop`` tokens."""
    for _ in range(new):
        z = gpt2.logits(w, idx[:, -crop:], n_head, bug)[:, -1]
        idx = np.concatenate([idx, np.argmax(z, -1)[:, None]], axis=1)
    return idx


def greedy_margin(w, tokens, prompt_len):
    """The smallest top-1 minus top-2 logit along a greedy path (a near tie would make it fragile)."""
    margin = np.inf
    for n in range(prompt_len, tokens.shape[1]):
        z = np.sort(gpt2.logits(w, tokens[:, max(0, n - CONFIG["block_size"]):n], CONFIG["n_head"])[:, -1], -1)
        margin = min(margin, float((z[:, -1] - z[:, -2]).min()))
    return margin


def record(run):
    from reference import corpus
    x = inputs()
    sets = {name: weight_set(name) for name in WEIGHT_SEEDS}
    arrays = dict(x, **{f"w.{s}.{k}": v for s, w in sets.items() for k, v in w.items()})
    meta = {"config": CONFIG, "structure_config": STRUCTURE_CONFIG, "probe_positions": list(PROBE_POSITIONS),
            "grad_position": GRAD_POSITION}

    def on(set_name, calls, config=CONFIG):
        return run("gpt", model=model(config, sets[set_name]), calls=calls)

    full = on("full", [forward(x["forward.idx"]), forward(x["short.idx"])])
    arrays["full.forward.logits"], arrays["full.short.logits"] = full[0]["logits"], full[1]["logits"]
    gen = on("generation", [forward(x["forward.idx"], x["forward.targets"]), forward(x["dist.prompt"]),
                            dict(fn="perplexity", windows=x["ppl.windows"])]
             + [dict(fn="generate", idx=x[f"{c}.idx"], max_new_tokens=n, temperature=0.0) for c, n in GREEDY.items()])
    arrays["gen.forward.logits"], meta["gen_loss"] = gen[0]["logits"], gen[0]["loss"]
    arrays["dist.logits"] = gen[1]["logits"][:, -1]  # (1, V): the next token's logits after the prompt
    meta["perplexity"] = gen[2]["value"]
    for case, out in zip(GREEDY, gen[3:]):
        arrays[f"{case}.greedy"] = out["tokens"]
        meta[f"{case}_margin"] = greedy_margin(sets["generation"], out["tokens"], x[f"{case}.idx"].shape[1])
        if meta[f"{case}_margin"] < 1e-3:
            raise RuntimeError(f"the greedy path of case {case!r} nearly ties; change the generation seed")
    cropped_short = greedy_path(sets["generation"], x["long.idx"], GREEDY["long"], CONFIG["block_size"] - 1)
    if np.array_equal(cropped_short, arrays["long.greedy"]):
        raise RuntimeError("a context cropped one token short gives the same greedy path; change the generation seed")
    probe = on("probe", [forward(x["probe.idx"])] + [forward(x[f"probe.changed{t}"]) for t in PROBE_POSITIONS]
               + [dict(fn="gradient", idx=x["probe.idx"], t=GRAD_POSITION, r=x["probe.r"])])
    arrays["probe.logits"] = np.stack([p["logits"] for p in probe[:-1]])  # (1 + P, B, T, V)
    arrays["probe.grad"] = probe[-1]["grad"]
    arrays["structure.logits"] = on("structure", [forward(x["structure.idx"])], STRUCTURE_CONFIG)[0]["logits"]
    meta["sampler"] = {"logits": list(SAMPLER_LOGITS), "temperatures": list(TEMPERATURES),
                       "top_ks": [list(k) for k in TOP_KS], "n_draws": N_DRAWS, "alpha": ALPHA,
                       "generate": [list(g) for g in GENERATE_DRAWS]}
    meta["quality"] = quality_data.record(run, corpus)
    return arrays, meta
