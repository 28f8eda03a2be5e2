"""A correct Part A written independently of reference/, einsum style.

It must get full marks; tests/test_part_a_grading.py also derives its buggy submissions from
this file by replacing one exact line each, so every line a mutant replaces is unique.
"""
import math

import numpy as np


def softmax(x, axis=-1):
    x = np.asarray(x, dtype=np.float64)
    z = x - x.max(axis=axis, keepdims=True)
    e = np.exp(z)
    return e / e.sum(axis=axis, keepdims=True)


def mean_context(X):
    return np.asarray(X, dtype=np.float64).mean(axis=-2)


def sinusoidal_positional_encoding(T, d_model):
    if T < 0 or d_model <= 0:
        raise ValueError("bad size")
    col = np.arange(d_model)
    angle = np.arange(T)[:, None] / 10000.0 ** ((col - col % 2) / d_model)
    return np.where(col % 2 == 0, np.sin(angle), np.cos(angle))


def apply_rope(x, positions=None, base=10000.0):
    x = np.asarray(x, dtype=np.float64)
    T, d = x.shape[-2:]
    if d % 2:
        raise ValueError("odd d")
    pos = np.arange(T) if positions is None else np.asarray(positions, dtype=np.float64)
    theta = np.einsum("...t,i->...ti", pos, base ** (-np.arange(0, d, 2) / d))
    c, s = np.cos(theta), np.sin(theta)
    a, b = x[..., 0::2], x[..., 1::2]
    out = np.empty_like(x)
    out[..., 0::2] = a * c - b * s
    out[..., 1::2] = a * s + b * c
    return out


def causal_mask(T):
    t, j = np.indices((T, T))
    return j <= t


def scaled_dot_product_attention(Q, K, V, mask=None):
    Q, K, V = (np.asarray(M, dtype=np.float64) for M in (Q, K, V))
    scores = np.einsum("...qd,...kd->...qk", Q, K)
    scores = scores / math.sqrt(Q.shape[-1])
    if mask is not None:
        scores = np.where(mask, scores, -np.inf)
    A = softmax(scores, axis=-1)
    return np.einsum("...qk,...kv->...qv", A, V), A


def _heads(q, k, v, n_heads, causal):
    *b, T, C = q.shape
    hs = C // n_heads
    split = [M.reshape(*b, T, n_heads, hs) for M in (q, k, v)]
    q, k, v = (np.einsum("...thd->...htd", M) for M in split)
    Z, _ = scaled_dot_product_attention(q, k, v, causal_mask(T) if causal else None)
    return np.einsum("...htd->...thd", Z).reshape(*b, T, C)


def multi_head_attention(X, W_Q, W_K, W_V, W_O, n_heads, causal=True):
    X = np.asarray(X, dtype=np.float64)
    if X.shape[-1] % n_heads:
        raise ValueError("d_model % n_heads != 0")
    q, k, v = (np.einsum("...tc,cd->...td", X, np.asarray(W)) for W in (W_Q, W_K, W_V))
    return _heads(q, k, v, n_heads, causal) @ np.asarray(W_O)


def layer_norm(x, gamma, beta, eps=1e-5):
    x = np.asarray(x, dtype=np.float64)
    mu = x.mean(axis=-1, keepdims=True)
    var = ((x - mu) ** 2).mean(axis=-1, keepdims=True)
    return (x - mu) / np.sqrt(var + eps) * np.asarray(gamma) + np.asarray(beta)


def gelu(x):
    x = np.asarray(x, dtype=np.float64)
    return 0.5 * x * (1.0 + np.tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * x**3)))


def transformer_block(x, params, n_heads):
    p = {k: np.asarray(v, dtype=np.float64) for k, v in params.items()}
    x = np.asarray(x, dtype=np.float64)
    C = x.shape[-1]
    h = layer_norm(x, p["ln_1.weight"], p["ln_1.bias"])
    qkv = h @ p["attn.c_attn.weight"] + p["attn.c_attn.bias"]
    y = _heads(qkv[..., :C], qkv[..., C:2 * C], qkv[..., 2 * C:], n_heads, True)
    x = x + y @ p["attn.c_proj.weight"] + p["attn.c_proj.bias"]
    h = gelu(layer_norm(x, p["ln_2.weight"], p["ln_2.bias"]) @ p["mlp.c_fc.weight"] + p["mlp.c_fc.bias"])
    return x + h @ p["mlp.c_proj.weight"] + p["mlp.c_proj.bias"]


def attention_shapes(T, n_embd, n_head, batch=1):
    B, C, nh = batch, n_embd, n_head
    hs = C // nh
    heads = (B, nh, T, hs)
    return {"x": (B, T, C), "q": heads, "k": heads, "v": heads, "scores": (B, nh, T, T),
            "weights": (B, nh, T, T), "z": heads, "out": (B, T, C)}


def gpt_param_count(vocab_size, block_size, n_layer, n_embd):
    C = n_embd
    per_block = 12 * C * C + 13 * C
    return vocab_size * C + block_size * C + n_layer * per_block + 2 * C
