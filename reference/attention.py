"""
HW11 Part A: attention and the GPT-2 block in NumPy (Lecture 20, Recitation 11).

Read top to bottom, in lecture order: softmax -> mean_context -> positional encodings
(sinusoidal, RoPE) -> causal_mask -> scaled_dot_product_attention -> multi_head_attention
-> layer_norm -> gelu -> transformer_block, then the two dimension exercises of
Recitation 11, attention_shapes and gpt_param_count.

Shapes use one notation everywhere:
    ...  any number of leading batch dimensions (possibly none)
    B  batch size            T  sequence length       Tq, Tk  query / key lengths
    C  d_model = n_embd      nh n_heads               hs head size = C // nh
    dk key/query size        dv value size

Every function accepts Python lists or NumPy arrays and returns NumPy arrays. NumPy only:
no torch, no scipy. float64 and float32 results are both correct if the values are (the
grader compares within float32 tolerance).
"""

from __future__ import annotations

import math
from typing import Mapping

import numpy as np
from numpy.typing import ArrayLike


def _as_float(x: ArrayLike) -> np.ndarray:
    """``x`` as a float array: float32 and float64 arrays stay as they are, lists and
    integer arrays become float64. A helper you may use in every function below."""
    x = np.asarray(x)
    return x if np.issubdtype(x.dtype, np.floating) else x.astype(np.float64)


def softmax(x: ArrayLike, axis: int = -1) -> np.ndarray:
    """Softmax of ``x`` along ``axis``.

    Returns an array of the same shape as ``x`` whose slices along ``axis`` are
    non-negative and sum to 1: ``exp(x) / sum(exp(x))`` along ``axis``.

    It must be numerically stable: subtract each slice's maximum before ``np.exp``, so that
    inputs of 1000 and more do not overflow (``softmax([1000, 1000]) == [0.5, 0.5]``) and
    ``-inf`` entries get a weight of exactly 0 (``softmax([0, -inf]) == [1, 0]``), as long
    as every slice has at least one finite entry.
    """
    ### BEGIN SOLUTION
    x = _as_float(x)
    x_max = np.max(x, axis=axis, keepdims=True)  # finite when the slice has a finite entry
    e = np.exp(x - x_max)  # in (0, 1]; exp(-inf) = 0
    return e / np.sum(e, axis=axis, keepdims=True)
    ### END SOLUTION


def mean_context(X: ArrayLike) -> np.ndarray:
    """The simplest context: the plain average of the token vectors.

    ``X (..., T, d) -> (..., d)``: the mean over the token axis (axis -2), every token
    weighted ``1 / T``. This is attention with uniform weights and no queries or keys.
    """
    ### BEGIN SOLUTION
    X = _as_float(X)
    return X.mean(axis=-2)  # (..., T, d) -> (..., d)
    ### END SOLUTION


def sinusoidal_positional_encoding(T: int, d_model: int) -> np.ndarray:
    """The sinusoidal position table of "Attention Is All You Need".

    Returns ``PE`` of shape ``(T, d_model)`` with, for position ``p`` and ``i = 0, 1, ...``::

        PE[p, 2i]     = sin(p / 10000**(2i / d_model))
        PE[p, 2i + 1] = cos(p / 10000**(2i / d_model))

    Row 0 is ``[0, 1, 0, 1, ...]``. An odd ``d_model`` is allowed: its last column is a
    sine. ``T = 0`` gives an empty ``(0, d_model)`` table. Raises ``ValueError`` when
    ``T < 0`` or ``d_model <= 0``.
    """
    ### BEGIN SOLUTION
    if T < 0 or d_model <= 0:
        raise ValueError(f"need T >= 0 and d_model > 0, got T={T}, d_model={d_model}")
    positions = np.arange(T)[:, None]  # (T, 1)
    two_i = np.arange(0, d_model, 2)  # (ceil(d_model / 2),): the even columns 2i
    angles = positions / 10000.0 ** (two_i / d_model)  # (T, ceil(d_model / 2))
    PE = np.zeros((T, d_model))
    PE[:, 0::2] = np.sin(angles)
    PE[:, 1::2] = np.cos(angles[:, : d_model // 2])  # one column fewer when d_model is odd
    return PE
    ### END SOLUTION


def apply_rope(
    x: ArrayLike, positions: ArrayLike | None = None, base: float = 10000.0
) -> np.ndarray:
    """Rotary position encoding (RoPE) of queries or keys ``x (..., T, d)``, ``d`` even.

    Each pair of columns ``(x[..., 2i], x[..., 2i+1])`` of the token at position ``p`` is
    rotated by the angle ``theta = p * base**(-2i / d)``::

        out[..., 2i]     = x[..., 2i] * cos(theta) - x[..., 2i+1] * sin(theta)
        out[..., 2i + 1] = x[..., 2i] * sin(theta) + x[..., 2i+1] * cos(theta)

    ``positions`` (shape ``(T,)``, or broadcasting against ``(..., T)``) defaults to
    ``0, 1, ..., T-1``. The output has the shape of ``x``; rotations keep every pair's
    length, so each row's norm is unchanged, and position 0 is left as it is.
    Raises ``ValueError`` when ``d`` is odd.
    """
    ### BEGIN SOLUTION
    x = _as_float(x)
    if x.ndim < 2:
        raise ValueError(f"x must be (..., T, d), got shape {x.shape}")
    T, d = x.shape[-2:]
    if d % 2 != 0:
        raise ValueError(f"RoPE rotates pairs of columns, so d must be even, got d={d}")
    positions = np.arange(T) if positions is None else _as_float(positions)  # (..., T)
    freqs = base ** (-np.arange(0, d, 2) / d)  # (d/2,): base**(-2i/d)
    theta = np.asarray(positions)[..., None] * freqs  # (..., T, d/2)
    cos, sin = np.cos(theta).astype(x.dtype), np.sin(theta).astype(x.dtype)
    x0, x1 = x[..., 0::2], x[..., 1::2]  # (..., T, d/2) each: the pairs' two halves
    r0 = x0 * cos - x1 * sin
    r1 = x0 * sin + x1 * cos
    return np.stack([r0, r1], axis=-1).reshape(*r0.shape[:-1], d)  # interleave -> (..., T, d)
    ### END SOLUTION


def causal_mask(T: int) -> np.ndarray:
    """The causal (look-back-only) mask: a bool array of shape ``(T, T)``.

    ``mask[t, j]`` is True where position ``t`` may attend to position ``j``, that is
    ``j <= t``: True on and below the diagonal, False above it. For ``T = 3``::

        [[ True, False, False],
         [ True,  True, False],
         [ True,  True,  True]]
    """
    ### BEGIN SOLUTION
    return np.tril(np.ones((T, T), dtype=bool))  # (T, T)
    ### END SOLUTION


def scaled_dot_product_attention(
    Q: ArrayLike, K: ArrayLike, V: ArrayLike, mask: ArrayLike | None = None
) -> tuple[np.ndarray, np.ndarray]:
    """Scaled dot-product attention; returns ``(Z, A)``.

    Shapes: ``Q (..., Tq, dk)``, ``K (..., Tk, dk)``, ``V (..., Tk, dv)``, with the same
    (or broadcastable) leading batch dimensions ``...``.

    1. scores ``S = Q @ K^T / sqrt(dk)``: ``(..., Tq, dk) x (..., dk, Tk) -> (..., Tq, Tk)``
    2. where ``mask`` is False, the score is set to ``-inf`` (that key gets weight 0);
       ``mask`` is a bool array that broadcasts to ``(..., Tq, Tk)``, True = keep,
       and None means keep everything
    3. attention weights ``A = softmax(S)`` over the last axis, so each row sums to 1:
       ``(..., Tq, Tk)``
    4. output ``Z = A @ V``: ``(..., Tq, Tk) x (..., Tk, dv) -> (..., Tq, dv)``

    Lecture example: ``Q = [[1], [2]]``, ``K = [[1], [3]]``, ``V = [[10], [20]]`` with
    ``mask = causal_mask(2)`` gives ``A = [[1, 0], [0.018, 0.982]]``, ``Z = [[10], [19.82]]``.
    """
    ### BEGIN SOLUTION
    Q, K, V = _as_float(Q), _as_float(K), _as_float(V)
    dk = Q.shape[-1]
    # (..., Tq, dk) x (..., dk, Tk) -> (..., Tq, Tk)
    scores = (Q @ np.swapaxes(K, -1, -2)) / math.sqrt(dk)
    if mask is not None:
        scores = np.where(np.asarray(mask, dtype=bool), scores, -np.inf)
    A = softmax(scores, axis=-1)  # (..., Tq, Tk), rows sum to 1
    Z = A @ V  # (..., Tq, Tk) x (..., Tk, dv) -> (..., Tq, dv)
    return Z, A
    ### END SOLUTION


def multi_head_attention(
    X: ArrayLike,
    W_Q: ArrayLike,
    W_K: ArrayLike,
    W_V: ArrayLike,
    W_O: ArrayLike,
    n_heads: int,
    causal: bool = True,
) -> np.ndarray:
    """Multi-head self-attention without biases: ``X (..., T, C) -> (..., T, C)``.

    Each ``W`` is ``(C, C)`` with ``C = d_model``, applied as ``X @ W``:

    1. ``Q = X @ W_Q``, ``K = X @ W_K``, ``V = X @ W_V``, each ``(..., T, C)``
    2. head ``h`` (``h = 0 .. n_heads-1``) uses columns ``h*hs:(h+1)*hs`` of Q, K and V,
       with ``hs = C // n_heads``: reshape ``(..., T, C) -> (..., T, nh, hs)`` and swap axes
       to ``(..., nh, T, hs)``
    3. each head runs ``scaled_dot_product_attention`` (with ``causal_mask(T)`` when
       ``causal``): ``(..., nh, T, hs)``
    4. the heads' outputs are concatenated in head order, back to ``(..., T, C)``, and
       multiplied by ``W_O``

    With ``n_heads = 1`` this is single-head attention followed by ``@ W_O``.
    Raises ``ValueError`` when ``C`` is not divisible by ``n_heads``.
    """
    ### BEGIN SOLUTION
    X = _as_float(X)
    *batch, T, C = X.shape
    if n_heads <= 0 or C % n_heads != 0:
        raise ValueError(f"d_model={C} must be divisible by n_heads={n_heads}")
    hs = C // n_heads

    def split_heads(M: np.ndarray) -> np.ndarray:  # (..., T, C) -> (..., nh, T, hs)
        return np.swapaxes(M.reshape(*batch, T, n_heads, hs), -2, -3)

    q = split_heads(X @ _as_float(W_Q))  # (..., nh, T, hs)
    k = split_heads(X @ _as_float(W_K))  # (..., nh, T, hs)
    v = split_heads(X @ _as_float(W_V))  # (..., nh, T, hs)
    mask = causal_mask(T) if causal else None
    y, _ = scaled_dot_product_attention(q, k, v, mask)  # (..., nh, T, hs)
    y = np.swapaxes(y, -2, -3).reshape(*batch, T, C)  # (..., T, nh, hs) -> (..., T, C)
    return y @ _as_float(W_O)  # (..., T, C)
    ### END SOLUTION


def layer_norm(x: ArrayLike, gamma: ArrayLike, beta: ArrayLike, eps: float = 1e-5) -> np.ndarray:
    """Layer normalization over the last axis: ``x (..., C)``, ``gamma (C,)``, ``beta (C,)``.

    ``(x - mean) / sqrt(var + eps) * gamma + beta``, with the mean and the biased variance
    (divide by ``C``, as ``np.var`` does) of each row over the last axis. With
    ``gamma = 1`` and ``beta = 0`` every row has mean 0 and variance (almost) 1.
    """
    ### BEGIN SOLUTION
    x = _as_float(x)
    mean = x.mean(axis=-1, keepdims=True)  # (..., 1)
    var = x.var(axis=-1, keepdims=True)  # (..., 1), biased
    return (x - mean) / np.sqrt(var + eps) * _as_float(gamma) + _as_float(beta)
    ### END SOLUTION


def gelu(x: ArrayLike) -> np.ndarray:
    """GELU with the tanh approximation GPT-2 uses, element-wise, same shape as ``x``::

        0.5 * x * (1 + tanh(sqrt(2 / pi) * (x + 0.044715 * x**3)))

    ``gelu(0) = 0`` and ``gelu(1) = 0.8412``; large positive ``x`` pass almost unchanged,
    large negative ``x`` give almost 0.
    """
    ### BEGIN SOLUTION
    x = _as_float(x)
    return 0.5 * x * (1.0 + np.tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * x**3)))
    ### END SOLUTION


def transformer_block(x: ArrayLike, params: Mapping[str, ArrayLike], n_heads: int) -> np.ndarray:
    """One causal pre-LN GPT-2 block: ``x (..., T, C) -> (..., T, C)``.

    ``params`` is keyed like one block of a GPT-2 checkpoint, weights laid out
    ``(in, out)`` so that a linear layer is ``y = x @ W + b``::

        ln_1.weight, ln_1.bias                  (C,), (C,)
        attn.c_attn.weight, attn.c_attn.bias    (C, 3C), (3C,)
        attn.c_proj.weight, attn.c_proj.bias    (C, C), (C,)
        ln_2.weight, ln_2.bias                  (C,), (C,)
        mlp.c_fc.weight, mlp.c_fc.bias          (C, 4C), (4C,)
        mlp.c_proj.weight, mlp.c_proj.bias      (4C, C), (C,)

    1. ``x = x + attn(ln_1(x))``: ``h = ln_1(x) @ c_attn.weight + c_attn.bias`` is
       ``(..., T, 3C)``; q, k, v are its consecutive thirds ``[:C]``, ``[C:2C]``, ``[2C:]``;
       the heads split as in ``multi_head_attention`` with a causal mask; the concatenated
       heads go through ``@ attn.c_proj.weight + attn.c_proj.bias``
    2. ``x = x + mlp(ln_2(x))`` with
       ``mlp(h) = gelu(h @ c_fc.weight + c_fc.bias) @ c_proj.weight + c_proj.bias``

    Layer norms use ``eps = 1e-5``. Raises ``ValueError`` when ``C`` is not divisible by
    ``n_heads``.
    """
    ### BEGIN SOLUTION
    x = _as_float(x)
    p = {name: _as_float(value) for name, value in params.items()}
    *batch, T, C = x.shape
    if n_heads <= 0 or C % n_heads != 0:
        raise ValueError(f"d_model={C} must be divisible by n_heads={n_heads}")
    hs = C // n_heads

    # attention sub-block
    h = layer_norm(x, p["ln_1.weight"], p["ln_1.bias"])  # (..., T, C)
    qkv = h @ p["attn.c_attn.weight"] + p["attn.c_attn.bias"]  # (..., T, 3C)
    q, k, v = np.split(qkv, 3, axis=-1)  # 3 x (..., T, C)
    # (..., T, C) -> (..., T, nh, hs) -> (..., nh, T, hs)
    q, k, v = (np.swapaxes(t.reshape(*batch, T, n_heads, hs), -2, -3) for t in (q, k, v))
    y, _ = scaled_dot_product_attention(q, k, v, causal_mask(T))  # (..., nh, T, hs)
    y = np.swapaxes(y, -2, -3).reshape(*batch, T, C)  # (..., T, nh, hs) -> (..., T, C)
    x = x + y @ p["attn.c_proj.weight"] + p["attn.c_proj.bias"]

    # MLP sub-block
    h = layer_norm(x, p["ln_2.weight"], p["ln_2.bias"])  # (..., T, C)
    h = gelu(h @ p["mlp.c_fc.weight"] + p["mlp.c_fc.bias"])  # (..., T, 4C)
    return x + h @ p["mlp.c_proj.weight"] + p["mlp.c_proj.bias"]  # (..., T, C)
    ### END SOLUTION


def attention_shapes(
    T: int, n_embd: int, n_head: int, batch: int = 1
) -> dict[str, tuple[int, ...]]:
    """Recitation 11's dimension exercise: the shapes inside one causal self-attention layer.

    For ``B = batch`` sequences of ``T`` tokens, ``C = n_embd`` channels, ``nh = n_head``
    heads of size ``hs = C // nh``, returns a dict of shape tuples::

        "x":       (B, T, C)        the layer's input
        "q", "k", "v": (B, nh, T, hs)  after the projection and the split into heads
        "scores":  (B, nh, T, T)    q @ k^T / sqrt(hs), before the mask and softmax
        "weights": (B, nh, T, T)    after the softmax
        "z":       (B, nh, T, hs)   weights @ v, per head
        "out":     (B, T, C)        heads concatenated and projected

    Raises ``ValueError`` when ``n_embd`` is not divisible by ``n_head``.
    """
    ### BEGIN SOLUTION
    if n_head <= 0 or n_embd % n_head != 0:
        raise ValueError(f"n_embd={n_embd} must be divisible by n_head={n_head}")
    B, T, C, nh = int(batch), int(T), int(n_embd), int(n_head)  # plain ints in the tuples
    hs = C // nh
    return {
        "x": (B, T, C),
        "q": (B, nh, T, hs),
        "k": (B, nh, T, hs),
        "v": (B, nh, T, hs),
        "scores": (B, nh, T, T),
        "weights": (B, nh, T, T),
        "z": (B, nh, T, hs),
        "out": (B, T, C),
    }
    ### END SOLUTION


def gpt_param_count(vocab_size: int, block_size: int, n_layer: int, n_embd: int) -> int:
    """The number of parameters of Part B's ``GPT`` with this configuration, as an int.

    Count every weight and bias (biases on): the token embedding ``wte`` ``(vocab_size, C)``,
    the position embedding ``wpe`` ``(block_size, C)``, ``n_layer`` blocks (``ln_1``,
    ``attn.c_attn``, ``attn.c_proj``, ``ln_2``, ``mlp.c_fc``, ``mlp.c_proj``; a LayerNorm
    has a weight and a bias of size ``C``) and the final ``ln_f``. ``lm_head`` has no bias
    and shares its weight with ``wte``, so it adds nothing. The number of heads does not
    matter: splitting into heads reshapes, it adds no parameters.
    """
    ### BEGIN SOLUTION
    C = n_embd
    embeddings = vocab_size * C + block_size * C  # wte + wpe (lm_head is tied to wte)
    attn = (C * 3 * C + 3 * C) + (C * C + C)  # c_attn + c_proj
    mlp = (C * 4 * C + 4 * C) + (4 * C * C + C)  # c_fc + c_proj
    block = 2 * C + attn + 2 * C + mlp  # ln_1 + attn + ln_2 + mlp = 12 C^2 + 13 C
    return int(embeddings + n_layer * block + 2 * C)  # + ln_f
    ### END SOLUTION
