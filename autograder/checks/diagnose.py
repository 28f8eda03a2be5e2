"""Known bugs of Part A, recognised by their signature: ``diagnose(function_name, inputs, actual)``
recomputes in trusted NumPy, from the same inputs, what each classic mistake would return
(softmax down the columns, no ``sqrt(dk)``, a transposed mask, ...) and names the one the
student's wrong output matches, or returns None. Variants equal to the right answer on these
inputs are skipped, so a diagnosis is never a guess."""
import math

import numpy as np

from .compare import close_enough


def _softmax(x, axis=-1):
    e = np.exp(x - np.max(x, axis=axis, keepdims=True))
    return e / np.sum(e, axis=axis, keepdims=True)


def _softmax_sigs(x, axis=-1):
    x = np.asarray(x, dtype=np.float64)
    yield None, _softmax(x, axis)
    for other in range(x.ndim):
        if other != axis % x.ndim:
            where = " (down each column instead of along each row)" if x.ndim == 2 and other == 0 else ""
            yield f"your softmax sums to 1 along axis {other} instead of the axis asked for (axis={axis}){where}", \
                _softmax(x, other)
    e = np.exp(x)
    yield "your softmax overflows: subtract each slice's maximum before np.exp", e / e.sum(axis, keepdims=True)
    e = np.exp(x - np.max(np.abs(x), axis=axis, keepdims=True))
    yield "your softmax turns slices holding -inf into NaN: subtract the slice's maximum (not of |x|), " \
          "so exp(-inf - max) = 0", e / e.sum(axis, keepdims=True)


def _mean_context_sigs(X):
    X = np.asarray(X, dtype=np.float64)
    yield None, X.mean(axis=-2)
    yield "you averaged over axis 0 instead of the token axis (-2)", X.mean(axis=0)
    yield "you averaged over the last axis (the features) instead of the tokens (axis -2)", X.mean(axis=-1)


def _pe(T, d, exponent=lambda c, d: 2 * (c // 2) / d, swap=False, start=0):
    angles = np.arange(start, start + T)[:, None] / 10000.0 ** exponent(np.arange(d), d)  # (T, d)
    sin, cos = (np.cos, np.sin) if swap else (np.sin, np.cos)
    return np.where(np.arange(d) % 2 == 0, sin(angles), cos(angles))


def _pe_sigs(T, d_model):
    yield None, _pe(T, d_model)
    yield "sin and cos look swapped (even columns are sines, odd columns cosines)", _pe(T, d_model, swap=True)
    yield "your frequencies use the column index c in 10000**(c/d_model); use 2i = c - c % 2", \
        _pe(T, d_model, exponent=lambda c, d: c / d)
    yield "your frequencies use 10000**(i/d_model) with the pair index i; the exponent is 2i/d_model", \
        _pe(T, d_model, exponent=lambda c, d: (c // 2) / d)
    yield "your positions start at 1; they start at 0 (row 0 is [0, 1, 0, 1, ...])", _pe(T, d_model, start=1)


def _rope(x, positions, base, sign=1.0, half=False, freq_step=2, start=0):
    T, d = x.shape[-2:]
    pos = np.arange(start, start + T) if positions is None else np.asarray(positions, dtype=np.float64)
    theta = sign * pos[..., None] * base ** (-freq_step * np.arange(d // 2) / d)
    # half: GPT-NeoX's "rotate half" pairs (i, i + d/2)
    x0, x1 = (x[..., : d // 2], x[..., d // 2:]) if half else (x[..., 0::2], x[..., 1::2])
    r0, r1 = x0 * np.cos(theta) - x1 * np.sin(theta), x0 * np.sin(theta) + x1 * np.cos(theta)
    return np.concatenate([r0, r1], axis=-1) if half else np.stack([r0, r1], axis=-1).reshape(x.shape)


def _rope_sigs(x, positions=None, base=10000.0):
    x = np.asarray(x, dtype=np.float64)
    yield None, _rope(x, positions, base)
    yield "your RoPE pairs look rotated the wrong way (direction -theta): out[2i] = x[2i] cos - x[2i+1] sin", \
        _rope(x, positions, base, sign=-1.0)
    yield "your RoPE pairs column i with column i + d/2 (rotate-half); the contract pairs 2i with 2i+1", \
        _rope(x, positions, base, half=True)
    yield "your RoPE frequencies use base**(-i/d); they are base**(-2i/d)", _rope(x, positions, base, freq_step=1)
    yield "your RoPE ignores the positions it is given (it uses 0..T-1)", _rope(x, None, base)
    yield "your default positions start at 1; they start at 0 (position 0 is not rotated)", \
        _rope(x, positions, base, start=1)


def _causal_mask_sigs(T):
    ones = np.ones((T, T), dtype=bool)
    yield None, np.tril(ones)
    yield "your mask looks transposed (it lets position t see the future)", np.triu(ones)
    yield "your mask is off by one: it hides the diagonal (position t must see itself, j <= t)", np.tril(ones, -1)
    yield "your mask is off by one: it shows one future position (j <= t + 1)", np.tril(ones, 1)
    yield "your mask looks inverted: True must mean 'may attend' (j <= t)", np.triu(ones, 1)


def _attend(q, k, v, mask, bug=None):
    dk, dv = q.shape[-1], v.shape[-1]
    scale = {"unscaled": 1.0, "dk": dk, "dv": math.sqrt(dv)}.get(bug, math.sqrt(dk))
    s = q @ np.swapaxes(k, -1, -2) / scale
    if mask is not None and bug not in ("no_mask", "mask_after"):
        m = np.asarray(mask, dtype=bool)
        m = {"mask_T": np.swapaxes(m, -1, -2), "mask_inverted": ~m}.get(bug, m)
        s = np.where(m, s, 0.0 if bug == "mask_zero" else -np.inf)
    a = _softmax(s, axis=-2 if bug == "columns" else -1)
    if bug == "mask_after" and mask is not None:
        a = a * np.asarray(mask, dtype=bool)
    return a @ v, a


ATTENTION_BUGS = {
    "columns": "your attention weights sum to 1 down each column instead of along each row "
               "(softmax over the queries; it must be over the keys, the last axis)",
    "unscaled": "your scores look unscaled: they match Q K^T without dividing by sqrt(d_k)",
    "dk": "your scores look divided by d_k instead of sqrt(d_k)",
    "dv": "your scores look divided by sqrt(d_v) (the value size) instead of sqrt(d_k)",
    "mask_T": "your mask looks transposed (it lets position t see the future)",
    "mask_inverted": "your mask looks inverted: True means keep, False means set the score to -inf",
    "no_mask": "your attention ignores the mask",
    "mask_zero": "your masked scores look set to 0 instead of -inf, so masked keys still get weight",
    "mask_after": "you zeroed the masked weights after the softmax; set masked scores to -inf before it",
}


def _sdpa_sigs(Q, K, V, mask=None):
    Q, K, V = (np.asarray(t, dtype=np.float64) for t in (Q, K, V))
    yield None, list(_attend(Q, K, V, mask))
    for bug, text in ATTENTION_BUGS.items():
        try:  # (a transposed mask may not broadcast)
            yield text, list(_attend(Q, K, V, mask, bug))
        except ValueError:
            pass


def _split(M, nh, how):  # (..., T, C) -> (..., nh, T, hs); "interleaved": head h gets columns h::nh
    *b, T, C = M.shape
    if how == "interleaved":
        return np.moveaxis(M.reshape(*b, T, C // nh, nh), -1, -3)
    return M.reshape(*b, nh, T, C // nh) if how == "no_swap" else np.swapaxes(M.reshape(*b, T, nh, C // nh), -2, -3)


def _merge(y, how):  # (..., nh, T, hs) -> (..., T, C)
    *b, nh, T, hs = y.shape
    y = {"interleaved": np.moveaxis(y, -3, -1), "no_swap": y}.get(how, np.swapaxes(y, -2, -3))
    return y.reshape(*b, T, nh * hs)


def _heads(q, k, v, nh, causal, bug=None):
    """Causal multi-head attention of already projected q, k, v (..., T, C) -> (..., T, C)."""
    T, C = q.shape[-2:]
    split = "interleaved" if bug == "interleaved_split" else bug
    mask = None if causal is False else np.tril(np.ones((T, T), dtype=bool), -1 if bug == "mask_diagonal" else 0)
    mask = mask.T if bug == "mask_T" else mask
    if bug == "scale_C":
        q = q * math.sqrt(C // nh) / math.sqrt(C)
    sbug = bug if bug in ("columns", "unscaled") else None
    y, _ = _attend(_split(q, nh, split), _split(k, nh, split), _split(v, nh, split), mask, sbug)
    return _merge(y, bug)


HEAD_BUGS = {
    "interleaved": "multi-head: heads look split from interleaved columns (head h uses columns h*hs:(h+1)*hs)",
    "interleaved_split": "multi-head: heads look split from interleaved columns (head h uses columns h*hs:(h+1)*hs)",
    "no_swap": "multi-head: you reshaped (..., T, C) straight to (..., nh, T, hs); reshape to "
               "(..., T, nh, hs), then swap axes to (..., nh, T, hs)",
    "scale_C": "your scores look divided by sqrt(C) instead of sqrt(hs), the head size",
    "mask_T": "your mask looks transposed (it lets position t see the future)",
    "mask_diagonal": "your mask is off by one: it hides the diagonal (position t must see itself, j <= t)",
    "columns": ATTENTION_BUGS["columns"], "unscaled": ATTENTION_BUGS["unscaled"],
}


def _mha_sigs(X, W_Q, W_K, W_V, W_O, n_heads, causal=True):
    X, WQ, WK, WV, WO = (np.asarray(t, dtype=np.float64) for t in (X, W_Q, W_K, W_V, W_O))
    q, k, v = X @ WQ, X @ WK, X @ WV
    yield None, _heads(q, k, v, n_heads, causal) @ WO
    for bug, text in HEAD_BUGS.items():
        yield text, _heads(q, k, v, n_heads, causal, bug) @ WO
    yield "you did not multiply the concatenated heads by W_O", _heads(q, k, v, n_heads, causal)
    yield "you multiplied by the transposed weights (X @ W.T); the contract applies X @ W", \
        _heads(X @ WQ.T, X @ WK.T, X @ WV.T, n_heads, causal) @ WO.T
    yield ("causal=False was ignored: your attention still hides the future" if causal is False else
           "your attention is not causal: position t sees later positions"), \
        _heads(q, k, v, n_heads, causal is False) @ WO


def _ln(x, g, b, eps=1e-5, ddof=0, outside=False, axis=-1):
    mu, var = x.mean(axis=axis, keepdims=True), x.var(axis=axis, ddof=ddof, keepdims=True)
    return (x - mu) / (np.sqrt(var) + eps if outside else np.sqrt(var + eps)) * g + b


def _layer_norm_sigs(x, gamma, beta, eps=1e-5):
    x, g, b = (np.asarray(t, dtype=np.float64) for t in (x, gamma, beta))
    yield None, _ln(x, g, b, eps)
    yield "layer_norm ignores eps (it divides by sqrt(var), not sqrt(var + eps))", _ln(x, g, b, 0.0)
    yield "layer_norm ignores the eps it is given (it uses 1e-5 whatever eps is)", _ln(x, g, b, 1e-5)
    yield "layer_norm uses the unbiased variance (divides by C - 1); use the biased one, as np.var does", \
        _ln(x, g, b, eps, ddof=1)
    yield "layer_norm adds eps outside the square root: use sqrt(var + eps)", _ln(x, g, b, eps, outside=True)
    yield "layer_norm ignores gamma and beta", _ln(x, 1.0, 0.0, eps)
    yield "layer_norm: gamma and beta look swapped", _ln(x, b, g, eps)
    yield "layer_norm normalises over axis 0 (like batch norm), not over the last axis", _ln(x, g, b, eps, axis=0)


def _gelu(x, kind="tanh", power=3):
    if kind == "erf":
        return 0.5 * x * (1 + np.vectorize(math.erf)(x / math.sqrt(2)))
    return 0.5 * x * (1 + np.tanh(math.sqrt(2 / math.pi) * (x + 0.044715 * x**power)))


def _gelu_sigs(x):
    x = np.asarray(x, dtype=np.float64)
    yield None, _gelu(x)
    yield "gelu looks like the exact erf GELU, not the tanh approximation GPT-2 uses", _gelu(x, "erf")
    yield "gelu looks like x * sigmoid(1.702 x), not the tanh approximation", x / (1 + np.exp(-1.702 * x))
    yield "gelu looks like ReLU", np.maximum(x, 0.0)
    yield "gelu's tanh argument uses x**2; it is sqrt(2/pi) * (x + 0.044715 * x**3)", _gelu(x, power=2)
    yield "gelu is missing the factor 0.5", 2 * _gelu(x)


def _block(x, p, nh, bug=None):
    ln1 = (lambda h: _ln(h, p["ln_1.weight"], p["ln_1.bias"]))
    ln2 = (lambda h: _ln(h, *((p["ln_1.weight"], p["ln_1.bias"]) if bug == "ln_1_twice" else
                              (p["ln_2.weight"], p["ln_2.bias"]))))
    wp = p["attn.c_proj.weight"].T if bug == "c_proj_T" else p["attn.c_proj.weight"]

    def attn(h):
        qkv = h @ p["attn.c_attn.weight"] + p["attn.c_attn.bias"]                # (..., T, 3C)
        q, k, v = ([qkv[..., i::3] for i in range(3)] if bug == "qkv_interleaved"
                   else np.split(qkv, 3, axis=-1))
        q, k, v = {"kqv": (k, q, v), "qvk": (q, v, k), "vkq": (v, k, q)}.get(bug, (q, k, v))
        return _heads(q, k, v, nh, bug != "not_causal", bug if bug in HEAD_BUGS else None) @ wp + p["attn.c_proj.bias"]

    def mlp(h):
        h = _gelu(h @ p["mlp.c_fc.weight"] + p["mlp.c_fc.bias"], "erf" if bug == "erf" else "tanh")
        return h @ p["mlp.c_proj.weight"] + p["mlp.c_proj.bias"]

    if bug == "post_ln":
        return (lambda y: ln2(y + mlp(y)))(ln1(x + attn(x)))
    x = attn(ln1(x)) if bug == "no_attn_residual" else x + attn(ln1(x))
    return mlp(ln2(x)) if bug == "no_mlp_residual" else x + mlp(ln2(x))


BLOCK_BUGS = {
    "c_proj_T": "attn.c_proj.weight looks applied transposed (a missing or extra transpose of c_proj): "
                "weights are laid out (in, out), so y = x @ W + b",
    "no_attn_residual": "the residual around attention looks missing: x = x + attn(ln_1(x))",
    "no_mlp_residual": "the residual around the MLP looks missing: x = x + mlp(ln_2(x))",
    "post_ln": "this looks like a post-LN block; GPT-2 is pre-LN: x = x + attn(ln_1(x))",
    "not_causal": "your block's attention is not causal: position t sees later positions",
    "qkv_interleaved": "q, k, v look taken from interleaved columns; they are the thirds of c_attn's output",
    **dict.fromkeys(("kqv", "qvk", "vkq"), "q, k, v look taken from c_attn's output in the wrong order: "
                                           "q = [:C], k = [C:2C], v = [2C:]"),
    "ln_1_twice": "the MLP's layer norm looks like it uses ln_1's weights; it uses ln_2's",
    **{b: HEAD_BUGS[b] for b in ("interleaved", "interleaved_split", "mask_T", "mask_diagonal", "unscaled", "columns")},
    "erf": "gelu looks like the exact erf GELU, not the tanh approximation GPT-2 uses",
}


def _block_sigs(x, params, n_heads):
    x = np.asarray(x, dtype=np.float64)
    p = {k: np.asarray(v, dtype=np.float64) for k, v in params.items()}
    yield None, _block(x, p, n_heads)
    for bug, text in BLOCK_BUGS.items():
        yield text, _block(x, p, n_heads, bug)


def _shapes_sigs(T, n_embd, n_head, batch=1):
    B, C, nh = batch, n_embd, n_head

    def shapes(heads):
        return {"x": (B, T, C), **dict.fromkeys("qkvz", heads), "scores": (B, nh, T, T), "weights": (B, nh, T, T),
                "out": (B, T, C)}
    yield None, shapes((B, nh, T, C // nh))
    yield "q, k, v (and z) look like (B, T, nh, hs): after the split into heads, swap to (B, nh, T, hs)", \
        shapes((B, T, nh, C // nh))
    yield "your head size looks like C; it is hs = C // nh", shapes((B, nh, T, C))


def _count(V, block, L, C, lm_head=0, biases=True, ln_f=True, wpe=True, mlp=4, ln=True):
    b = 1 if biases else 0
    per_block = 4 * C * ln + (3 * C * C + b * 3 * C) + (C * C + b * C) + 2 * (mlp * C * C) + b * (mlp * C + C)
    return V * C * (1 + lm_head) + (block * C if wpe else 0) + L * per_block + (2 * C if ln_f else 0)


def _params_sigs(vocab_size, block_size, n_layer, n_embd):
    args = (vocab_size, block_size, n_layer, n_embd)
    yield None, _count(*args)
    yield "you counted lm_head separately, but it shares its weight with wte (count it once)", \
        _count(*args, lm_head=1)
    yield "your count leaves out the biases", _count(*args, biases=False)
    yield "your count leaves out the final LayerNorm ln_f", _count(*args, ln_f=False)
    yield "your count leaves out the LayerNorms (ln_1, ln_2, ln_f: a weight and a bias of size C each)", \
        _count(*args, ln_f=False, ln=False)
    yield "your count leaves out the position embedding wpe", _count(*args, wpe=False)
    yield "your MLP hidden size looks like C; it is 4C", _count(*args, mlp=1)


SIGNATURES = {
    "softmax": _softmax_sigs, "mean_context": _mean_context_sigs, "sinusoidal_positional_encoding": _pe_sigs,
    "apply_rope": _rope_sigs, "causal_mask": _causal_mask_sigs, "scaled_dot_product_attention": _sdpa_sigs,
    "multi_head_attention": _mha_sigs, "layer_norm": _layer_norm_sigs, "gelu": _gelu_sigs,
    "transformer_block": _block_sigs, "attention_shapes": _shapes_sigs, "gpt_param_count": _params_sigs,
}


def _same(a, b):
    if isinstance(b, dict):
        return isinstance(a, dict) and set(a) == set(b) and all(_same(a[k], b[k]) for k in b)
    if isinstance(b, (list, tuple)) and not isinstance(b, np.ndarray):
        return isinstance(a, (list, tuple)) and len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b))
    return close_enough(a, b)


def diagnose(function_name, inputs, actual):
    """A sentence naming the known bug whose output ``actual`` matches, or None."""
    sigs = SIGNATURES.get(function_name)
    if sigs is None or actual is None:
        return None
    with np.errstate(all="ignore"):
        try:
            variants = sigs(*inputs.values())
            _, right = next(variants)
            for text, wrong in variants:
                if not _same(wrong, right) and _same(actual, wrong):
                    return text
        except Exception:  # noqa: BLE001 - a diagnosis is a bonus; it must never break a check
            return None
    return None
