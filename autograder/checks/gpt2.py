"""The trusted NumPy GPT-2: one implementation, with the known bugs and both weight layouts as
options. It gives Part A's diagnoses of attention, multi-head attention and the block, Part
B's expected logits for weights known only at grade time (a model's own initialisation, the
weights the grader's training run returned), Part B's diagnoses, and the samples of the
quality tests. Float64 throughout; it never sees student code.

Weights are a GPT-2 checkpoint's, by name. ``layout`` says how a 2-D linear weight is stored:
``"in_out"`` (Part A's ``transformer_block``, OpenAI's files, Hugging Face's Conv1D) means
``y = x @ W + b``; ``"out_in"`` (``nn.Linear``, nanoGPT) means ``y = x @ W.T + b``.

``bug`` names one known mistake (see ``LEAKS`` and the texts in the checks that use them);
``None`` is the contract's model.
"""
import math

import numpy as np

LINEAR = ("attn.c_attn.weight", "attn.c_proj.weight", "mlp.c_fc.weight", "mlp.c_proj.weight")
# bugs whose model lets position t see later positions (a causality probe must fail them)
LEAKS = frozenset({"no_mask", "mask_T", "mask_inverted", "mask_zero", "columns", "split_no_transpose",
                   "merge_no_transpose", "heads_no_swap"})
LN_BUGS = ("ln_no_eps", "ln_unbiased", "ln_eps_outside", "ln_unbiased_eps_outside", "ln_no_affine", "ln_swapped")
GELU_BUGS = ("erf", "relu", "sigmoid", "gelu_x2", "gelu_no_half")


def flip(layout):
    return "out_in" if layout == "in_out" else "in_out"


def linear(x, w, b, layout):
    y = x @ (w.T if layout == "out_in" else w)
    return y if b is None else y + b


def softmax(s, axis=-1):
    e = np.exp(s - np.max(s, axis=axis, keepdims=True))
    return e / np.sum(e, axis=axis, keepdims=True)


def layer_norm(x, w, b, eps=1e-5, bug=None, axis=-1):
    """(x - mean) / sqrt(var + eps) * w + b over ``axis``, or one of ``LN_BUGS``."""
    mu = x.mean(axis=axis, keepdims=True)
    var = x.var(axis=axis, ddof=1 if bug in ("ln_unbiased", "ln_unbiased_eps_outside") else 0, keepdims=True)
    eps = 0.0 if bug == "ln_no_eps" else eps
    scale = np.sqrt(var) + eps if bug in ("ln_eps_outside", "ln_unbiased_eps_outside") else np.sqrt(var + eps)
    w, b = {"ln_no_affine": (1.0, 0.0), "ln_swapped": (b, w)}.get(bug, (w, b))
    return (x - mu) / scale * w + (0.0 if b is None else b)


def gelu(x, bug=None):
    """GPT-2's tanh GELU, or one of ``GELU_BUGS``."""
    if bug == "erf":
        return 0.5 * x * (1 + np.vectorize(math.erf)(x / math.sqrt(2)))
    if bug == "relu":
        return np.maximum(x, 0.0)
    if bug == "sigmoid":
        return x / (1 + np.exp(-1.702 * x))
    cube = x * x if bug == "gelu_x2" else x * x * x  # (x**3 through np.power is several times slower)
    y = x * (1 + np.tanh(math.sqrt(2 / math.pi) * (x + 0.044715 * cube)))
    return y if bug == "gelu_no_half" else 0.5 * y


def attend(q, k, v, mask=None, bug=None):
    """Scaled dot-product attention ``(Z, A)`` of q (..., Tq, dk), k (..., Tk, dk), v (..., Tk, dv);
    ``mask`` is bool, True = keep."""
    dk, dv = q.shape[-1], v.shape[-1]
    scale = {"unscaled": 1.0, "scale_d": dk, "scale_dv": math.sqrt(dv)}.get(bug, math.sqrt(dk))
    s = q @ np.swapaxes(k, -1, -2) / scale  # (..., Tq, dk) x (..., dk, Tk) -> (..., Tq, Tk)
    if mask is not None and bug not in ("no_mask", "mask_after"):
        m = np.asarray(mask, dtype=bool)
        m = {"mask_T": np.swapaxes(m, -1, -2), "mask_inverted": ~m}.get(bug, m)
        s = np.where(m, s, 0.0 if bug == "mask_zero" else -np.inf)
    a = softmax(s, axis=-2 if bug == "columns" else -1)
    if bug == "mask_after" and mask is not None:
        a = a * np.asarray(mask, dtype=bool)
    return a @ v, a  # (..., Tq, dv), (..., Tq, Tk)


def split_heads(t, nh, how=None):
    """(..., T, C) -> (..., nh, T, hs); ``how``: None, "interleaved" (head h gets columns h::nh)
    or "no_swap" (a straight reshape to (..., nh, T, hs))."""
    *b, T, C = t.shape
    if how == "interleaved":
        return np.moveaxis(t.reshape(*b, T, C // nh, nh), -1, -3)
    if how == "no_swap":
        return t.reshape(*b, nh, T, C // nh)
    return np.swapaxes(t.reshape(*b, T, nh, C // nh), -2, -3)


def merge_heads(y, how=None):
    """(..., nh, T, hs) -> (..., T, C), the inverse of ``split_heads(.., how)``."""
    *b, nh, T, hs = y.shape
    y = {"interleaved": np.moveaxis(y, -3, -1), "no_swap": y}.get(how, np.swapaxes(y, -2, -3))
    return y.reshape(*b, T, nh * hs)


_SPLIT = {"heads_interleaved": "interleaved", "split_interleaved": "interleaved", "heads_no_swap": "no_swap",
          "split_no_transpose": "no_swap"}
_MERGE = {"heads_interleaved": "interleaved", "heads_no_swap": "no_swap", "merge_no_transpose": "no_swap"}


def heads(q, k, v, nh, causal=True, bug=None):
    """Multi-head attention of projected q, k, v (..., T, C) -> (..., T, C), before the output projection."""
    T, C = q.shape[-2:]
    if bug == "scale_C":
        q = q * math.sqrt(C // nh) / math.sqrt(C)
    split = [split_heads(t, nh, _SPLIT.get(bug)) for t in (q, k, v)]  # 3 x (..., nh, T, hs)
    mask = None
    if causal:
        mask = np.tril(np.ones((T, T), dtype=bool), -1 if bug == "mask_diagonal" else 0)
    y, _ = attend(*split, mask, None if bug in ("mask_diagonal", "scale_C") else bug)
    return merge_heads(y, _MERGE.get(bug))  # (..., T, C)


_ORDERS = {"kqv": (1, 0, 2), "qvk": (0, 2, 1), "vkq": (2, 1, 0)}


def attention(x, p, nh, bug=None, layout="in_out"):
    """A GPT-2 block's causal self-attention on x (..., T, C); ``p`` holds ``attn.*`` by name."""
    qkv = linear(x, p["attn.c_attn.weight"], p.get("attn.c_attn.bias"), layout)  # (..., T, 3C)
    if bug == "qkv_interleaved":
        parts = [qkv[..., i::3] for i in range(3)]
    else:
        parts = np.split(qkv, 3, axis=-1)  # q, k, v: the consecutive thirds
    q, k, v = (parts[i] for i in _ORDERS.get(bug, (0, 1, 2)))
    y = heads(q, k, v, nh, causal=bug != "not_causal", bug=bug)
    return linear(y, p["attn.c_proj.weight"], p.get("attn.c_proj.bias"), flip(layout) if bug == "c_proj_T" else layout)


def feed_forward(x, p, bug=None, layout="in_out"):
    h = linear(x, p["mlp.c_fc.weight"], p.get("mlp.c_fc.bias"), layout)  # (..., T, 4C)
    h = gelu(h, bug if bug in GELU_BUGS else None)
    return linear(h, p["mlp.c_proj.weight"], p.get("mlp.c_proj.bias"), layout)  # (..., T, C)


def block(x, p, nh, bug=None, layout="in_out"):
    """One pre-LN GPT-2 block: x + attn(ln_1(x)), then x + mlp(ln_2(x))."""
    ln_bug = bug if bug in LN_BUGS else None
    ln2 = ("ln_1" if bug == "ln_1_twice" else "ln_2")

    def ln(h, name):
        return layer_norm(h, p[f"{name}.weight"], p.get(f"{name}.bias"), bug=ln_bug)

    if bug == "post_ln":
        x = ln(x + attention(x, p, nh, bug, layout), "ln_1")
        return ln(x + feed_forward(x, p, bug, layout), ln2)
    a = attention(ln(x, "ln_1"), p, nh, bug, layout)
    x = a if bug == "no_attn_residual" else x + a
    m = feed_forward(ln(x, ln2), p, bug, layout)
    return m if bug == "no_mlp_residual" else x + m


def n_layers(weights):
    n = 0
    while f"transformer.h.{n}.ln_1.weight" in weights:
        n += 1
    return n


def logits(weights, idx, n_head, bug=None, layout="out_in"):
    """GPT.forward's logits (B, T, V) for token ids ``idx`` (B, T), in float64."""
    w = {k: np.asarray(v, dtype=np.float64) for k, v in weights.items()}
    idx = np.asarray(idx)
    T = idx.shape[-1]
    wte, wpe = w["transformer.wte.weight"], w["transformer.wpe.weight"]  # (V, C), (block_size, C)
    x = wte[idx]  # (B, T, C)
    if bug == "wpe_by_token":
        x = x + wpe[idx]
    elif bug == "positions_from_one":
        if T + 1 > len(wpe):
            raise IndexError("position T is past the position table")
        x = x + wpe[1:T + 1]
    elif bug != "no_wpe":
        x = x + wpe[:T]
    for layer in range(n_layers(w)):
        prefix = f"transformer.h.{layer}."
        x = block(x, {k[len(prefix):]: v for k, v in w.items() if k.startswith(prefix)}, n_head, bug, layout)
    if bug != "no_ln_f":
        x = layer_norm(x, w["transformer.ln_f.weight"], w.get("transformer.ln_f.bias"),
                       bug=bug if bug in LN_BUGS else None)
    return x @ w.get("lm_head.weight", wte).T  # (B, T, C) x (C, V) -> (B, T, V)


def logits_in_chunks(weights, idx, n_head, bug=None, layout="out_in", rows=128):
    """``logits`` a few rows at a time (attention is (B, nh, T, T): bounded memory)."""
    idx = np.asarray(idx)
    return np.concatenate([logits(weights, idx[i:i + rows], n_head, bug, layout) for i in range(0, len(idx), rows)])


def cross_entropy(z, targets, counted=None):
    """Mean cross-entropy (nats) of logits (..., V) against integer ``targets`` (...), over the
    positions where ``counted`` is True (all by default)."""
    z = np.asarray(z, dtype=np.float64)
    z = z - z.max(-1, keepdims=True)
    logp = z - np.log(np.exp(z).sum(-1, keepdims=True))
    nll = -np.take_along_axis(logp, np.asarray(targets)[..., None], -1)[..., 0]
    return float(nll.mean() if counted is None else nll[counted].mean())


def sample(weights, n_head, prompt, new_tokens, temperature, rng, block_size, bug=None, layout="out_in"):
    """Continue each row of ``prompt`` (B, T0) by ``new_tokens`` tokens drawn here from
    softmax(logits / temperature) of the last position, the context cropped to ``block_size``."""
    idx = np.asarray(prompt, dtype=np.int64)
    for _ in range(new_tokens):
        z = logits(weights, idx[:, -block_size:], n_head, bug, layout)[:, -1] / temperature  # (B, V)
        p = softmax(z)
        u = rng.random((len(p), 1))
        nxt = np.minimum((np.cumsum(p, axis=-1) < u).sum(-1), p.shape[-1] - 1)  # inverse CDF
        idx = np.concatenate([idx, nxt[:, None]], axis=1)
    return idx
