"""No model at all: at import, replace the worker's ops with ones that return made-up answers of
the right shapes (structure, logits and loss, probes, generate, perplexity, training), for the
ops of today's protocol and of older ones. A grader that trusted anything the worker reports
about itself would give points; only raw outputs it can re-check may count."""
import sys as _sys

import numpy as _np

_ops = _sys.modules["_sandbox_worker.ops_common"].OPS
_NAMES = ("transformer.wte.weight", "transformer.wpe.weight", "transformer.ln_f.weight", "transformer.ln_f.bias",
          "lm_head.weight")
_BLOCK = ("ln_1.weight", "ln_1.bias", "attn.c_attn.weight", "attn.c_attn.bias", "attn.c_proj.weight",
          "attn.c_proj.bias", "ln_2.weight", "ln_2.bias", "mlp.c_fc.weight", "mlp.c_fc.bias", "mlp.c_proj.weight",
          "mlp.c_proj.bias")


def _shapes(cfg):
    V, T, L, C = cfg["vocab_size"], cfg["block_size"], cfg["n_layer"], cfg["n_embd"]
    out = {"transformer.wte.weight": (V, C), "transformer.wpe.weight": (T, C), "transformer.ln_f.weight": (C,),
           "transformer.ln_f.bias": (C,), "lm_head.weight": (V, C)}
    for i in range(L):
        for name, shape in zip(_BLOCK, ((C,), (C,), (3 * C, C), (3 * C,), (C, C), (C,), (C,), (C,), (4 * C, C),
                                        (4 * C,), (C, 4 * C), (C,))):
            out[f"transformer.h.{i}.{name}"] = shape
    return out


def _call(cfg, c):
    rng = _np.random.default_rng(0)
    fn, V = c["fn"], cfg["vocab_size"]
    if fn == "parameters":
        shapes = _shapes(cfg)
        return {"every": [[n, list(s)] for n, s in shapes.items()],
                "unique": [[n, list(s)] for n, s in shapes.items() if n != "lm_head.weight"], "buffers": [],
                "config_fields": ["vocab_size", "block_size", "n_layer", "n_head", "n_embd", "dropout", "bias"],
                "values": {n: rng.normal(0, 0.02, s).astype("float32") for n, s in shapes.items()}
                if c.get("values") else None}
    if fn == "forward":
        idx = _np.asarray(c["idx"])
        if c.get("catch") and idx.shape[1] > cfg["block_size"]:
            return {"raised": ["ValueError", "Exception"], "message": "too long"}
        logits = rng.normal(size=(*idx.shape, V)).astype("float32")
        out = {"logits": logits, "loss": None if c.get("targets") is None else float(_np.log(V)), "raised": None}
        if c.get("no_builtins"):
            out["used"] = []
        if c.get("repeat", 1) > 1:
            return {"repeats": [out] * c["repeat"]}
        return out
    if fn == "generate":
        idx = _np.asarray(c["idx"])
        new = rng.integers(0, V, (idx.shape[0], c["max_new_tokens"]))
        tokens = _np.concatenate([idx, new], axis=1)
        return {"tokens": tokens, "dtype": "torch.int64", "shape": list(tokens.shape)}
    if fn == "perplexity":
        return {"value": 1.0, "type": "float"}
    if fn == "gradient":
        idx = _np.asarray(c["idx"])
        grad = _np.zeros((*idx.shape, cfg["n_embd"]), "float32")
        grad[:, : c["t"] + 1] = 1.0
        return {"grad": grad, "logits": rng.normal(size=(*idx.shape, V)).astype("float32")}
    return {}


def _gpt(model, calls, module="gpt"):
    return [_call(model["config"], c) for c in calls]


def _train(model, tokens, starts, lr, **kw):
    return {"weights": model["weights"], "losses": _np.linspace(3, 0.3, len(starts)).astype("float32")}


def _sample(logits, temperature=1.0, top_k=None, n_draws=None, catch=False, **kw):
    rows = int(n_draws) if n_draws is not None else len(logits)
    if catch:
        return {"raised": ["ValueError", "Exception"], "message": "negative"}
    t = _np.zeros(rows, dtype=_np.int64)
    return {"tokens": t, "dtype": "torch.int64", "shape": [rows], "raised": None}


def _old(**kw):  # older protocols' ops: a made-up answer of every kind at once
    return {"unique": [], "every": [], "buffers": [], "tied": True, "logits": _np.zeros((1, 1, 1), "float32"),
            "loss": 0.0, "grad": _np.zeros((1, 1, 1), "float32"), "used": [], "value": 1.0, "type": "float",
            "raised": ["ValueError"], "message": "", "config": {"fields": None, "positional": {}}}


_ops.update(gpt=_gpt, train=_train, sample=_sample)
for _name in ("gpt_structure", "gpt_forward", "gpt_grad_probe", "gpt_forward_no_builtins", "generate", "perplexity"):
    _ops[_name] = _old
