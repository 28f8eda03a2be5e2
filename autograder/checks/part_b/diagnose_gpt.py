"""Part B's GPT in NumPy (trusted), with the classic bugs as switches.

``gpt_logits(weights, idx, n_head)`` is the forward pass of the contract's GPT on weights in
PyTorch's layout (``nn.Linear`` weights are (out, in)); ``diagnose_logits`` names the bug
whose logits a student's wrong logits match, the way ``checks/diagnose.py`` does for Part A.
A bug whose logits equal the right ones on these inputs is skipped, so a diagnosis is never
a guess.
"""
import math

import numpy as np

from ..compare import close_enough

BUGS = {
    "no_mask": "your attention is not causal: the logits match a model without the causal mask "
               "(position t sees the future)",
    "mask_T": "your causal mask looks transposed: position t attends to j >= t (the future) instead of j <= t",
    "mask_zero": "your masked scores look set to 0 instead of -inf before the softmax, so future positions "
                 "still get weight",
    "unscaled": "your attention scores look unscaled: divide q k^T by sqrt(hs), hs = C // n_head",
    "hs": "your attention scores look divided by hs instead of sqrt(hs)",
    "columns": "your softmax looks taken over the queries (dim=-2); it is over the keys, the last dim",
    "kqv": "q and k look swapped: q, k, v are the consecutive thirds of c_attn's output, in that order",
    "split_no_transpose": "the heads look split with .view(B, nh, T, hs); use .view(B, T, nh, hs).transpose(1, 2)",
    "merge_no_transpose": "the heads look merged with .view(B, T, C) straight from (B, nh, T, hs); "
                          "transpose(1, 2) back to (B, T, nh, hs) first",
    "relu": "the MLP's activation looks like ReLU; GPT-2 uses GELU (tanh approximation)",
    "erf": "the MLP's GELU looks like the exact erf GELU, not the tanh approximation GPT-2 uses "
           "(nn.GELU(approximate=\"tanh\"))",
    "post_ln": "the blocks look post-LN (x = ln(x + attn(x))); GPT-2 is pre-LN: x = x + attn(ln_1(x))",
    "no_mlp_residual": "the residual around the MLP looks missing: x = x + mlp(ln_2(x))",
    "no_attn_residual": "the residual around attention looks missing: x = x + attn(ln_1(x))",
    "ln_1_twice": "the MLP's layer norm looks like ln_1; it is ln_2",
    "no_wpe": "the position embeddings (wpe) look unused: x = wte(idx) + wpe(pos)",
    "wpe_by_token": "wpe looks indexed by the token ids; it is indexed by the positions 0 .. T-1",
    "no_ln_f": "the final layer norm ln_f looks missing before lm_head",
}


def _ln(x, w, b, eps=1e-5):
    return (x - x.mean(-1, keepdims=True)) / np.sqrt(x.var(-1, keepdims=True) + eps) * w + b


def _softmax(s, axis):
    e = np.exp(s - s.max(axis, keepdims=True))
    return e / e.sum(axis, keepdims=True)


def _gelu(x, bug):
    if bug == "relu":
        return np.maximum(x, 0.0)
    if bug == "erf":
        return 0.5 * x * (1 + np.vectorize(math.erf)(x / math.sqrt(2)))
    return 0.5 * x * (1 + np.tanh(math.sqrt(2 / math.pi) * (x + 0.044715 * x ** 3)))


def _attention(x, p, nh, bug):
    B, T, C = x.shape
    hs = C // nh
    q, k, v = np.split(x @ p["attn.c_attn.weight"].T + p["attn.c_attn.bias"], 3, axis=-1)  # 3 x (B, T, C)
    if bug == "kqv":
        q, k = k, q

    def heads(t):  # (B, T, C) -> (B, nh, T, hs)
        return t.reshape(B, nh, T, hs) if bug == "split_no_transpose" else t.reshape(B, T, nh, hs).transpose(0, 2, 1, 3)

    q, k, v = heads(q), heads(k), heads(v)
    s = q @ k.transpose(0, 1, 3, 2) / {"unscaled": 1.0, "hs": hs}.get(bug, math.sqrt(hs))  # (B, nh, T, T)
    keep = np.tril(np.ones((T, T), dtype=bool))
    if bug != "no_mask":
        s = np.where(keep.T if bug == "mask_T" else keep, s, 0.0 if bug == "mask_zero" else -np.inf)
    y = _softmax(s, -2 if bug == "columns" else -1) @ v  # (B, nh, T, hs)
    y = y.reshape(B, T, C) if bug == "merge_no_transpose" else y.transpose(0, 2, 1, 3).reshape(B, T, C)
    return y @ p["attn.c_proj.weight"].T + p["attn.c_proj.bias"]


def _mlp(x, p, bug):
    h = _gelu(x @ p["mlp.c_fc.weight"].T + p["mlp.c_fc.bias"], bug)  # (B, T, 4C)
    return h @ p["mlp.c_proj.weight"].T + p["mlp.c_proj.bias"]


def _block(x, p, nh, bug):
    ln_1 = (p["ln_1.weight"], p["ln_1.bias"])
    ln_2 = ln_1 if bug == "ln_1_twice" else (p["ln_2.weight"], p["ln_2.bias"])
    if bug == "post_ln":
        x = _ln(x + _attention(x, p, nh, bug), *ln_1)
        return _ln(x + _mlp(x, p, bug), *ln_2)
    a = _attention(_ln(x, *ln_1), p, nh, bug)
    x = a if bug == "no_attn_residual" else x + a
    m = _mlp(_ln(x, *ln_2), p, bug)
    return m if bug == "no_mlp_residual" else x + m


def gpt_logits(weights, idx, n_head, bug=None):
    """logits (B, T, V) of the contract's GPT (or of ``bug``) in float64."""
    w = {k: np.asarray(v, dtype=np.float64) for k, v in weights.items()}
    idx = np.asarray(idx)
    wpe = w["transformer.wpe.weight"]
    x = w["transformer.wte.weight"][idx]  # (B, T, C)
    if bug != "no_wpe":
        x = x + (wpe[idx] if bug == "wpe_by_token" else wpe[: idx.shape[1]])
    layer = 0
    while f"transformer.h.{layer}.ln_1.weight" in w:
        prefix = f"transformer.h.{layer}."
        x = _block(x, {k[len(prefix):]: v for k, v in w.items() if k.startswith(prefix)}, n_head, bug)
        layer += 1
    if bug != "no_ln_f":
        x = _ln(x, w["transformer.ln_f.weight"], w["transformer.ln_f.bias"])
    return x @ w["lm_head.weight"].T  # (B, T, V)


def diagnose_logits(weights, idx, n_head, actual):
    """A sentence naming the known bug whose logits ``actual`` matches, or None."""
    with np.errstate(all="ignore"):
        try:
            right = gpt_logits(weights, idx, n_head)
        except Exception:  # noqa: BLE001 - a diagnosis is a bonus; it must never break a check
            return None
        for bug, text in BUGS.items():
            try:  # (wpe indexed by token ids can run past block_size)
                wrong = gpt_logits(weights, idx, n_head, bug)
            except Exception:  # noqa: BLE001
                continue
            if not close_enough(wrong, right) and close_enough(actual, wrong):
                return text
    return None
