"""Public tests for Part A (attention.py): small cases you can check by hand.

Run them with `make test` in the handout folder. The graded tests check the same functions
on more and larger inputs, so passing these is a good sign, not a guarantee.
"""

import functools
import math

import numpy as np
import pytest
from attention import (
    apply_rope,
    attention_shapes,
    causal_mask,
    gelu,
    gpt_param_count,
    layer_norm,
    mean_context,
    multi_head_attention,
    scaled_dot_product_attention,
    sinusoidal_positional_encoding,
    softmax,
    transformer_block,
)
from numpy.testing import assert_allclose, assert_array_equal

# Equal within the grader's tolerance, |got - expected| <= 1e-5 + 1e-4 * |expected|,
# so float32 results pass as well as float64 ones.
assert_close = functools.partial(assert_allclose, rtol=1e-4, atol=1e-5)


# softmax

def test_softmax_rows_sum_to_one():
    x = np.array([[1.0, 2.0, 3.0], [0.0, 0.0, 0.0], [-5.0, 10.0, 2.5]])
    p = softmax(x)
    assert p.shape == (3, 3)
    assert_close(p.sum(axis=-1), [1.0, 1.0, 1.0])
    assert_close(p[1], [1 / 3, 1 / 3, 1 / 3])


def test_softmax_along_axis_0_makes_columns_sum_to_one():
    p = softmax([[1.0, 2.0], [3.0, 5.0]], axis=0)
    assert_close(p.sum(axis=0), [1.0, 1.0])


def test_softmax_is_stable_for_large_inputs():
    assert_close(softmax([1000.0, 1000.0]), [0.5, 0.5])
    assert_close(softmax([1000.0, 0.0]), [1.0, 0.0])


def test_softmax_gives_minus_infinity_zero_weight():
    assert_close(softmax([0.0, -np.inf]), [1.0, 0.0])
    assert_close(softmax([1.0, 1.0, -np.inf]), [0.5, 0.5, 0.0])


# the simplest context and positions

def test_mean_context_averages_over_tokens():
    X = [[1.0, 2.0], [3.0, 4.0], [5.0, 9.0]]  # (T, d) = (3, 2)
    assert_close(mean_context(X), [3.0, 5.0])
    assert mean_context(np.zeros((4, 3, 2))).shape == (4, 2)


def test_sinusoid_at_position_zero_is_zero_one_zero_one():
    PE = sinusoidal_positional_encoding(3, 4)
    assert PE.shape == (3, 4)
    assert_close(PE[0], [0.0, 1.0, 0.0, 1.0])


def test_sinusoid_values_at_literal_points():
    PE = sinusoidal_positional_encoding(3, 4)
    assert_close(PE[1, 0], math.sin(1))  # 0.84147...
    assert_close(PE[1, 1], math.cos(1))  # 0.54030...
    assert_close(PE[1, 2], math.sin(1 / 100))  # 10000**(2/4) = 100
    assert_close(PE[2, 3], math.cos(2 / 100))


def test_rope_preserves_the_norm_of_every_row():
    x = np.random.default_rng(0).standard_normal((2, 5, 8))  # (B, T, d)
    out = apply_rope(x)
    assert out.shape == (2, 5, 8)
    assert_close(np.linalg.norm(out, axis=-1), np.linalg.norm(x, axis=-1))


def test_rope_leaves_position_zero_unchanged_and_rotates_position_one():
    x = np.array([[1.0, 0.0], [1.0, 0.0]])  # (T, d) = (2, 2): the same vector at p = 0 and 1
    out = apply_rope(x)
    assert_close(out[0], [1.0, 0.0])
    assert_close(out[1], [math.cos(1), math.sin(1)])  # theta = 1 * 10000**0 = 1


# attention

def test_causal_mask_for_three_tokens():
    expected = np.array([[True, False, False],
                         [True, True, False],
                         [True, True, True]])
    mask = causal_mask(3)
    assert mask.dtype == bool
    assert_array_equal(mask, expected)


def test_lecture_worked_example():
    Q = [[1.0], [2.0]]  # (T, dk) = (2, 1)
    K = [[1.0], [3.0]]
    V = [[10.0], [20.0]]
    Z, A = scaled_dot_product_attention(Q, K, V, mask=causal_mask(2))
    # row 2: softmax([2, 6]) = [1 / (1 + e^4), 1 / (1 + e^-4)] = [0.018, 0.982]
    assert_close(A, [[1.0, 0.0], [0.01799, 0.98201]], atol=1e-5)
    assert_close(Z, [[10.0], [19.8201]], atol=1e-4)  # 0.018 * 10 + 0.982 * 20


def test_lecture_example_with_dk_4_divides_the_scores_by_sqrt_dk():
    # three tokens, d_k = 4, so the scores are divided by sqrt(4) = 2; queries = keys = X
    X = [[1.0, 1.0, 1.0, 1.0],
         [2.0, 0.0, 0.0, 0.0],
         [0.0, 0.0, 2.0, 2.0]]  # (T, dk) = (3, 4)
    V = 10 * np.eye(3)  # (T, dv) = (3, 3): Z is 10 times the attention weights
    Z, A = scaled_dot_product_attention(X, X, V, mask=causal_mask(3))
    # X X^T = [[4, 2, 4], [2, 4, 0], [4, 0, 8]]; divided by 2, with the future masked:
    #   row 1: [2]          -> [1]
    #   row 2: [1, 2]       -> softmax = [1, e] / (1 + e)          = [0.26894, 0.73106]
    #   row 3: [2, 0, 4]    -> softmax = [e^2, 1, e^4] / (sum)     = [0.11731, 0.01588, 0.86681]
    # (without the sqrt(d_k), row 2 would be softmax([2, 4]) = [0.11920, 0.88080])
    assert_close(A, [[1.0, 0.0, 0.0],
                        [0.26894, 0.73106, 0.0],
                        [0.11731, 0.01588, 0.86681]], atol=1e-5)
    assert_close(Z, [[10.0, 0.0, 0.0],
                        [2.6894, 7.3106, 0.0],
                        [1.1731, 0.1588, 8.6681]], atol=1e-4)


def test_attention_without_a_mask_attends_to_every_key():
    Z, A = scaled_dot_product_attention([[1.0], [2.0]], [[1.0], [3.0]], [[10.0], [20.0]])
    assert_close(A.sum(axis=-1), [1.0, 1.0])
    assert A[0, 1] > 0  # token 1 now also sees token 2


def test_attention_keeps_leading_batch_dimensions():
    rng = np.random.default_rng(1)
    Q = rng.standard_normal((2, 3, 4, 5))  # (B, nh, Tq, dk)
    K = rng.standard_normal((2, 3, 6, 5))  # (B, nh, Tk, dk)
    V = rng.standard_normal((2, 3, 6, 7))  # (B, nh, Tk, dv)
    Z, A = scaled_dot_product_attention(Q, K, V)
    assert Z.shape == (2, 3, 4, 7)
    assert A.shape == (2, 3, 4, 6)


def test_multi_head_with_one_head_equals_single_head_attention():
    rng = np.random.default_rng(2)
    X = rng.standard_normal((4, 6))  # (T, C)
    W_Q, W_K, W_V, W_O = rng.standard_normal((4, 6, 6))
    Z, _ = scaled_dot_product_attention(X @ W_Q, X @ W_K, X @ W_V, mask=causal_mask(4))
    out = multi_head_attention(X, W_Q, W_K, W_V, W_O, n_heads=1)
    assert_close(out, Z @ W_O)


def test_multi_head_rejects_d_model_not_divisible_by_n_heads():
    X = np.zeros((3, 6))
    W = np.eye(6)
    with pytest.raises(ValueError):
        multi_head_attention(X, W, W, W, W, n_heads=4)


# the block

def test_layer_norm_gives_mean_zero_and_variance_one():
    x = np.array([[1.0, 2.0, 3.0, 4.0], [10.0, -10.0, 0.0, 5.0]])
    out = layer_norm(x, gamma=np.ones(4), beta=np.zeros(4))
    assert_close(out.mean(axis=-1), [0.0, 0.0])
    assert_close(out.var(axis=-1), [1.0, 1.0], atol=1e-4)  # eps makes it a bit below 1


def test_gelu_at_zero_and_one():
    assert_close(gelu([0.0, 1.0]), [0.0, 0.841192], atol=1e-6)


def test_transformer_block_with_zero_weights_is_the_identity():
    C = 4
    shapes = {"ln_1.weight": (C,), "ln_1.bias": (C,),
              "attn.c_attn.weight": (C, 3 * C), "attn.c_attn.bias": (3 * C,),
              "attn.c_proj.weight": (C, C), "attn.c_proj.bias": (C,),
              "ln_2.weight": (C,), "ln_2.bias": (C,),
              "mlp.c_fc.weight": (C, 4 * C), "mlp.c_fc.bias": (4 * C,),
              "mlp.c_proj.weight": (4 * C, C), "mlp.c_proj.bias": (C,)}
    params = {name: np.zeros(shape) for name, shape in shapes.items()}
    x = np.random.default_rng(3).standard_normal((2, 3, C))  # (B, T, C)
    # both residual branches add 0, so the block returns its input
    assert_close(transformer_block(x, params, n_heads=2), x)


# Recitation 11: femto (1 head, 1 layer, n_embd 2) and pico (3 heads, 3 layers, n_embd 6)

def test_femto_attention_shapes():
    shapes = attention_shapes(T=4, n_embd=2, n_head=1)
    assert shapes == {"x": (1, 4, 2),
                      "q": (1, 1, 4, 2), "k": (1, 1, 4, 2), "v": (1, 1, 4, 2),
                      "scores": (1, 1, 4, 4), "weights": (1, 1, 4, 4),
                      "z": (1, 1, 4, 2), "out": (1, 4, 2)}


def test_pico_attention_shapes():
    shapes = attention_shapes(T=4, n_embd=6, n_head=3, batch=5)
    assert shapes == {"x": (5, 4, 6),
                      "q": (5, 3, 4, 2), "k": (5, 3, 4, 2), "v": (5, 3, 4, 2),
                      "scores": (5, 3, 4, 4), "weights": (5, 3, 4, 4),
                      "z": (5, 3, 4, 2), "out": (5, 4, 6)}


def test_femto_parameter_count():
    # vocab_size 65, block_size 8, C = 2:
    #   wte 65*2 = 130, wpe 8*2 = 16,
    #   one block: ln_1 4 + c_attn (2*6 + 6) 18 + attn.c_proj (2*2 + 2) 6
    #              + ln_2 4 + c_fc (2*8 + 8) 24 + mlp.c_proj (8*2 + 2) 18 = 74,
    #   ln_f 4, lm_head 0 (tied to wte): 130 + 16 + 74 + 4 = 224
    assert gpt_param_count(vocab_size=65, block_size=8, n_layer=1, n_embd=2) == 224


def test_pico_parameter_count():
    # vocab_size 65, block_size 8, C = 6:
    #   wte 65*6 = 390, wpe 8*6 = 48,
    #   one block: ln_1 12 + c_attn (6*18 + 18) 126 + attn.c_proj (6*6 + 6) 42
    #              + ln_2 12 + c_fc (6*24 + 24) 168 + mlp.c_proj (24*6 + 6) 150 = 510,
    #   three blocks 1530, ln_f 12: 390 + 48 + 1530 + 12 = 1980
    assert gpt_param_count(vocab_size=65, block_size=8, n_layer=3, n_embd=6) == 1980
