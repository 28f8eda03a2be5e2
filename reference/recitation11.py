"""Source of handout/recitation11.ipynb: `make handout` turns each `# %%` cell into a notebook cell.

Everything above the first cell marker is left out of the notebook. Run it as a script to try
it: `python reference/recitation11.py` (it imports attention.py from its own folder).
"""

# %% [markdown]
# # Recitation 11: attention by hand, then in NumPy
#
# This notebook uses the functions you write in `attention.py`, the file beside it. Implement
# `softmax`, `causal_mask`, `scaled_dot_product_attention`, `attention_shapes` and
# `gpt_param_count` first (`make test` checks them), then run the cells top to bottom.
#
# 1. The lecture's worked example, by hand and in NumPy
# 2. Softmax over the wrong axis
# 3. The femto and pico GPTs: the shapes inside attention, and the parameter counts

# %%
import math

import numpy as np
from attention import (
    attention_shapes,
    causal_mask,
    gpt_param_count,
    scaled_dot_product_attention,
    softmax,
)

np.set_printoptions(precision=3, suppress=True)

# %% [markdown]
# ## 1. The lecture's worked example
#
# Two tokens with one-dimensional queries, keys and values ($T = 2$, $d_k = 1$):
#
# $$Q = \begin{bmatrix} 1 \\ 2 \end{bmatrix}, \quad
#   K = \begin{bmatrix} 1 \\ 3 \end{bmatrix}, \quad
#   V = \begin{bmatrix} 10 \\ 20 \end{bmatrix}$$
#
# **Scores.** $S = Q K^\top / \sqrt{d_k}$ and $\sqrt{1} = 1$, so $S_{tj} = q_t k_j$:
#
# | | $k_1 = 1$ | $k_2 = 3$ |
# |---|---|---|
# | $q_1 = 1$ | 1 | 3 |
# | $q_2 = 2$ | 2 | 6 |
#
# **Causal mask.** Token 1 may not look ahead at token 2, so $S_{12}$ becomes $-\infty$.
#
# **Softmax, row by row.**
# Row 1: $\mathrm{softmax}(1, -\infty) = (1, 0)$.
# Row 2: $\mathrm{softmax}(2, 6) = \left(\frac{e^2}{e^2 + e^6}, \frac{e^6}{e^2 + e^6}\right)
# = \left(\frac{1}{1 + e^4}, \frac{1}{1 + e^{-4}}\right) \approx (0.018, 0.982)$.
#
# **Outputs.** $z_1 = 1 \cdot 10 + 0 \cdot 20 = 10$ and
# $z_2 \approx 0.018 \cdot 10 + 0.982 \cdot 20 \approx 19.82$: the second token mostly copies
# the value of the key that matches its query best.

# %%
# The same arithmetic with plain Python numbers.
w_21 = math.exp(2) / (math.exp(2) + math.exp(6))  # weight of token 1 in row 2
w_22 = 1 - w_21
print(f"row 2 weights: {w_21:.3f} {w_22:.3f}")
print(f"z_2 = {w_21:.3f} * 10 + {w_22:.3f} * 20 = {w_21 * 10 + w_22 * 20:.2f}")

# %% [markdown]
# Now with your `scaled_dot_product_attention` and `causal_mask`. `A` should match the
# weights above and `Z` should be $[[10], [19.82]]$.

# %%
Q = np.array([[1.0], [2.0]])  # (T, d_k) = (2, 1)
K = np.array([[1.0], [3.0]])  # (T, d_k)
V = np.array([[10.0], [20.0]])  # (T, d_v) = (2, 1)

Z, A = scaled_dot_product_attention(Q, K, V, mask=causal_mask(2))
print("mask =\n", causal_mask(2))
print("A =\n", A)
print("Z =\n", Z)
assert np.allclose(A, [[1, 0], [w_21, w_22]]), "A differs from the hand computation"
assert np.allclose(Z, [[10], [19.82]], atol=5e-3), "Z differs from the hand computation"

# %% [markdown]
# ## 2. Softmax over the wrong axis
#
# Lecture exercise: what goes wrong if the softmax normalizes each **column** (`axis=0`)
# instead of each row? Every row of `A` holds one query's weights over the keys, so it is the
# rows that must sum to one. Normalizing columns instead makes every key's weights over the
# queries sum to one, and the rows stop being averages.

# %%
S = np.array([[1.0, -np.inf], [2.0, 6.0]])  # the masked scores from part 1

by_row = softmax(S, axis=-1)
by_column = softmax(S, axis=0)
print("softmax over rows (axis=-1):\n", by_row, "\nrow sums:", by_row.sum(axis=-1))
print("softmax over columns (axis=0):\n", by_column, "\nrow sums:", by_column.sum(axis=-1))
assert np.allclose(by_row.sum(axis=-1), 1)
assert not np.allclose(by_column.sum(axis=-1), 1)

# %% [markdown]
# With `axis=0` token 1 gets only 27% of a value and token 2 gets 173%: `Z` is no longer a
# weighted average of the values, and token 1's weight depends on token 2's score, a leak
# from the future that the causal mask was meant to prevent.
#
# ## 3. The femto and pico GPTs
#
# Recitation 11's two toy models, both with 65 tokens (the characters of tiny Shakespeare)
# and a context of 8:
#
# | model | `n_head` | `n_layer` | `n_embd` | head size |
# |---|---|---|---|---|
# | femto | 1 | 1 | 2 | 2 |
# | pico | 3 | 3 | 6 | 2 |
#
# **Shapes.** Before running the next cell, write down the shapes of `x`, `q`, `scores` and
# `out` in one attention layer for a batch of $B = 1$ sequence of $T = 4$ tokens, using
# nanoGPT's notation `(B, T, C)` and `(B, nh, T, hs)`.

# %%
VOCAB_SIZE, BLOCK_SIZE, T = 65, 8, 4
femto = dict(n_layer=1, n_head=1, n_embd=2)
pico = dict(n_layer=3, n_head=3, n_embd=6)

for name, cfg in (("femto", femto), ("pico", pico)):
    print(name)
    for key, shape in attention_shapes(T, cfg["n_embd"], cfg["n_head"]).items():
        print(f"  {key:8} {shape}")

# %% [markdown]
# **Parameters.** Count femto's parameters by hand ($C = 2$, $V = 65$, block size 8), then
# check with `gpt_param_count`. Weights are `(in, out)`; a LayerNorm has a weight and a bias
# of size $C$; `lm_head` shares its weight with `wte`, so it adds nothing.
#
# | module | shape | femto |
# |---|---|---|
# | `wte` | $(V, C)$ | 130 |
# | `wpe` | $(8, C)$ | 16 |
# | `ln_1` | $2 \times (C,)$ | 4 |
# | `attn.c_attn` | $(C, 3C) + (3C,)$ | 18 |
# | `attn.c_proj` | $(C, C) + (C,)$ | 6 |
# | `ln_2` | $2 \times (C,)$ | 4 |
# | `mlp.c_fc` | $(C, 4C) + (4C,)$ | 24 |
# | `mlp.c_proj` | $(4C, C) + (C,)$ | 18 |
# | `ln_f` | $2 \times (C,)$ | 4 |

# %%
femto_by_hand = 130 + 16 + (4 + 18 + 6 + 4 + 24 + 18) + 4
print("femto by hand:", femto_by_hand)
print("femto:", gpt_param_count(VOCAB_SIZE, BLOCK_SIZE, femto["n_layer"], femto["n_embd"]))
print("pico: ", gpt_param_count(VOCAB_SIZE, BLOCK_SIZE, pico["n_layer"], pico["n_embd"]))
assert gpt_param_count(VOCAB_SIZE, BLOCK_SIZE, 1, 2) == femto_by_hand

# %% [markdown]
# Try it yourself: change `n_head` of pico to 1 or 6. The shapes of `q` and `scores` change,
# but the parameter count does not. Why? And GPT-2 small
# (`gpt_param_count(50257, 1024, 12, 768)`) has about 124 million parameters: which module
# holds the largest share?
