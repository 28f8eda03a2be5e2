"""Right names, wrong values: every function returns zeros of the right shape (and never raises)."""
import numpy as np


def softmax(x, axis=-1):
    return np.zeros(np.shape(x))


def mean_context(X):
    return np.zeros(np.shape(X)[:-2] + np.shape(X)[-1:])


def sinusoidal_positional_encoding(T, d_model):
    return np.zeros((max(T, 0), max(d_model, 0)))


def apply_rope(x, positions=None, base=10000.0):
    return np.zeros(np.shape(x))


def causal_mask(T):
    return np.zeros((T, T), dtype=bool)


def scaled_dot_product_attention(Q, K, V, mask=None):
    Q, K, V = np.asarray(Q), np.asarray(K), np.asarray(V)
    return np.zeros(Q.shape[:-1] + V.shape[-1:]), np.zeros(Q.shape[:-1] + K.shape[-2:-1])


def multi_head_attention(X, W_Q, W_K, W_V, W_O, n_heads, causal=True):
    return np.zeros(np.shape(X))


def layer_norm(x, gamma, beta, eps=1e-5):
    return np.zeros(np.shape(x))


def gelu(x):
    return np.zeros(np.shape(x))


def transformer_block(x, params, n_heads):
    return np.zeros(np.shape(x))


def attention_shapes(T, n_embd, n_head, batch=1):
    return {k: (0,) * n for k, n in (("x", 3), ("q", 4), ("k", 4), ("v", 4), ("scores", 4), ("weights", 4),
                                       ("z", 4), ("out", 3))}


def gpt_param_count(vocab_size, block_size, n_layer, n_embd):
    return 0
