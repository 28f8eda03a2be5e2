"""Public tests for Part B (gpt.py): small, fast checks of the contract.

Run them with `make test` in the handout folder. The graded tests check more (values against
the reference, weights loaded by name, training quality), so passing these is a good sign,
not a guarantee. Without torch, this whole file is skipped (Part A's tests still run).
"""

import math

import pytest

torch = pytest.importorskip(
    "torch", reason="Part B needs PyTorch: pip install torch (the CPU build is enough)")

from gpt import GPT, CausalSelfAttention, GPTConfig, perplexity, sample_next_token  # noqa: E402 - after importorskip(torch)
from torch.nn import functional as F  # noqa: E402 (after the check that torch is installed)

V, BLOCK = 11, 8  # a tiny vocabulary and context, so every test runs in milliseconds


def tiny_model(n_layer=2, seed=0):
    torch.manual_seed(seed)
    config = GPTConfig(vocab_size=V, block_size=BLOCK, n_layer=n_layer, n_head=2, n_embd=8)
    return GPT(config).eval()


def random_tokens(B, T, seed=1):
    return torch.randint(0, V, (B, T), generator=torch.Generator().manual_seed(seed))


# ----------------------------------------------------------------------------- the model

def test_parameter_names_match_a_gpt2_checkpoint():
    names = {name for name, _ in tiny_model().named_parameters()}
    for name in ["transformer.wte.weight", "transformer.wpe.weight",
                 "transformer.h.0.ln_1.weight", "transformer.h.0.ln_1.bias",
                 "transformer.h.0.attn.c_attn.weight", "transformer.h.0.attn.c_attn.bias",
                 "transformer.h.0.attn.c_proj.weight", "transformer.h.0.ln_2.weight",
                 "transformer.h.0.mlp.c_fc.weight", "transformer.h.0.mlp.c_proj.weight",
                 "transformer.h.1.mlp.c_proj.bias", "transformer.ln_f.weight"]:
        assert name in names, f"missing parameter {name}; got {sorted(names)}"


def test_linear_layers_have_gpt2_shapes():
    params = dict(tiny_model().named_parameters())
    # nn.Linear(in, out) stores its weight as (out, in)
    assert params["transformer.h.0.attn.c_attn.weight"].shape == (24, 8)
    assert params["transformer.h.0.attn.c_proj.weight"].shape == (8, 8)
    assert params["transformer.h.0.mlp.c_fc.weight"].shape == (32, 8)
    assert params["transformer.h.0.mlp.c_proj.weight"].shape == (8, 32)
    assert params["transformer.wpe.weight"].shape == (BLOCK, 8)


def test_lm_head_weight_is_the_token_embedding_weight():
    model = tiny_model()
    assert model.lm_head.weight is model.transformer.wte.weight
    assert model.lm_head.bias is None


def test_logits_have_shape_batch_time_vocab_and_no_loss_without_targets():
    logits, loss = tiny_model()(random_tokens(3, 5))
    assert logits.shape == (3, 5, V)
    assert loss is None


def test_loss_is_the_mean_cross_entropy_over_all_positions():
    idx, targets = random_tokens(2, BLOCK, seed=1), random_tokens(2, BLOCK, seed=2)
    logits, loss = tiny_model()(idx, targets)
    expected = F.cross_entropy(logits.reshape(-1, V), targets.reshape(-1))
    assert loss.dim() == 0
    assert torch.allclose(loss, expected, atol=1e-6)


def test_sequence_longer_than_block_size_raises_value_error():
    with pytest.raises(ValueError):
        tiny_model()(random_tokens(1, BLOCK + 1))


def test_future_tokens_do_not_change_past_logits():
    model = tiny_model()
    idx = random_tokens(2, BLOCK)
    changed = idx.clone()
    changed[:, 5:] = (changed[:, 5:] + 1) % V  # a different future from position 5 on
    with torch.no_grad():
        before, _ = model(idx)
        after, _ = model(changed)
    assert torch.allclose(before[:, :5], after[:, :5], atol=1e-6), \
        "the logits at positions 0..4 depend on tokens at positions 5.. (check the causal mask)"
    assert not torch.allclose(before[:, 5:], after[:, 5:]), "the changed tokens had no effect"


def test_the_position_of_a_token_changes_its_logits():
    model = tiny_model()
    idx = torch.full((1, 4), 3)  # the same token four times: only the position differs
    with torch.no_grad():
        logits, _ = model(idx)
    assert not torch.allclose(logits[0, 0], logits[0, 3]), "are position embeddings added?"


def test_attention_divides_the_scores_by_sqrt_of_the_head_size():
    # Part A's lecture example with d_k = 4, inside CausalSelfAttention: n_embd 8, 2 heads of
    # size hs = 4. q = k = v = x (c_attn is three identities) and c_proj is the identity.
    # Head 1 sees columns 0-3 of x, head 2 columns 4-7, all zero here (its output is 0).
    config = GPTConfig(vocab_size=V, block_size=BLOCK, n_layer=1, n_head=2, n_embd=8)
    attn = CausalSelfAttention(config).eval()
    with torch.no_grad():
        for name, p in attn.named_parameters():  # weights are (out, in) in nn.Linear
            p.zero_()
            if name == "c_attn.weight":
                p.copy_(torch.eye(8).repeat(3, 1))  # (24, 8)
            elif name == "c_proj.weight":
                p.copy_(torch.eye(8))
        x = torch.tensor([[[1.0, 1.0, 1.0, 1.0, 0.0, 0.0, 0.0, 0.0],
                           [2.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0],
                           [0.0, 0.0, 2.0, 2.0, 0.0, 0.0, 0.0, 0.0]]])  # (B, T, C) = (1, 3, 8)
        out = attn(x)
    # head 1's weights, softmax(q k^T / sqrt(4)) with the future masked (see test_attention.py):
    #   row 2: [0.26894, 0.73106], row 3: [0.11731, 0.01588, 0.86681]
    # so row 2 = 0.26894 * x1 + 0.73106 * x2, row 3 = 0.11731 * x1 + 0.01588 * x2 + 0.86681 * x3
    expected = torch.tensor([[[1.0, 1.0, 1.0, 1.0, 0.0, 0.0, 0.0, 0.0],
                              [1.73106, 0.26894, 0.26894, 0.26894, 0.0, 0.0, 0.0, 0.0],
                              [0.14906, 0.11731, 1.85094, 1.85094, 0.0, 0.0, 0.0, 0.0]]])
    assert out.shape == (1, 3, 8)
    assert torch.allclose(out, expected, atol=1e-4), \
        f"got\n{out}\nexpected\n{expected}\n(are the scores divided by sqrt(head size) = 2?)"


def test_attention_is_computed_by_hand(monkeypatch):
    def forbidden(*args, **kwargs):
        raise AssertionError("compute attention yourself, without scaled_dot_product_attention")

    monkeypatch.setattr(F, "scaled_dot_product_attention", forbidden)
    model = tiny_model()
    model(random_tokens(1, 4))
    assert not any(isinstance(m, torch.nn.MultiheadAttention) for m in model.modules()), \
        "compute attention yourself, without nn.MultiheadAttention"


# ----------------------------------------------------------------------------- sampling

def test_sample_next_token_with_temperature_zero_is_the_argmax():
    logits = torch.tensor([[0.1, 2.0, -1.0], [3.0, 0.0, 2.9]])
    got = sample_next_token(logits, temperature=0)
    assert got.dtype == torch.long
    assert got.tolist() == [1, 0]


def test_sample_next_token_with_top_k_one_is_the_argmax():
    logits = torch.randn(16, V, generator=torch.Generator().manual_seed(0))
    got = sample_next_token(logits, temperature=1.5, top_k=1,
                            generator=torch.Generator().manual_seed(1))
    assert got.shape == (16,)
    assert got.tolist() == logits.argmax(dim=-1).tolist()


def test_sample_next_token_never_draws_outside_the_top_k():
    logits = torch.tensor([[5.0, 4.0, 0.0, -1.0, 3.0]]).repeat(200, 1)
    got = sample_next_token(logits, top_k=2, generator=torch.Generator().manual_seed(0))
    assert set(got.tolist()) <= {0, 1}


def test_sample_next_token_with_the_same_generator_seed_repeats_itself():
    logits = torch.zeros(50, V)
    first = sample_next_token(logits, generator=torch.Generator().manual_seed(7))
    second = sample_next_token(logits, generator=torch.Generator().manual_seed(7))
    assert first.tolist() == second.tolist()


def test_sample_next_token_at_temperature_one_half_follows_softmax_of_logits_over_temperature():
    # logits log([1, 2, 4]) divided by temperature 0.5 are log([1, 4, 16]), so the tokens are
    # drawn with probabilities [1, 4, 16] / 21 = [0.048, 0.190, 0.762]. (Multiplying by the
    # temperature instead gives [1, 1.41, 2] / 4.41 = [0.23, 0.32, 0.45].)
    n = 2000
    logits = torch.log(torch.tensor([1.0, 2.0, 4.0])).repeat(n, 1)  # (n, 3)
    got = sample_next_token(logits, temperature=0.5, generator=torch.Generator().manual_seed(0))
    assert got.shape == (n,)
    frequencies = torch.bincount(got, minlength=3).double() / n
    expected = torch.tensor([1.0, 4.0, 16.0], dtype=torch.double) / 21
    # Each frequency of n = 2000 fair draws is within 0.1 of its probability, except with
    # probability below 2 * exp(-2 * n * 0.1**2) = 1e-17 (Hoeffding's inequality).
    assert torch.allclose(frequencies, expected, atol=0.1), \
        f"token frequencies {frequencies.tolist()}, expected {expected.tolist()} (within 0.1)"


def test_negative_temperature_raises_value_error():
    with pytest.raises(ValueError):
        sample_next_token(torch.zeros(1, V), temperature=-1.0)


def test_generate_keeps_the_prompt_and_adds_max_new_tokens():
    prompt = random_tokens(2, 3)
    out = tiny_model().generate(prompt, 4, generator=torch.Generator().manual_seed(0))
    assert out.shape == (2, 3 + 4)
    assert out[:, :3].tolist() == prompt.tolist()


def test_generate_can_go_past_the_block_size():
    out = tiny_model().generate(random_tokens(1, BLOCK), 2 * BLOCK, temperature=0)
    assert out.shape == (1, 3 * BLOCK)


def test_greedy_generate_continues_with_the_argmax_of_the_last_position():
    model = tiny_model()
    prompt = random_tokens(2, 5)
    with torch.no_grad():
        logits, _ = model(prompt)
    out = model.generate(prompt, 1, temperature=0)
    assert out[:, -1].tolist() == logits[:, -1].argmax(dim=-1).tolist()


# ----------------------------------------------------------------------------- perplexity

def test_perplexity_of_a_model_with_uniform_logits_equals_the_vocabulary_size():
    model = tiny_model()
    with torch.no_grad():  # the last LayerNorm outputs zeros, so every logit is 0
        model.transformer.ln_f.weight.zero_()
        model.transformer.ln_f.bias.zero_()
    got = perplexity(model, random_tokens(4, BLOCK + 1))
    assert isinstance(got, float)
    assert math.isclose(got, V, rel_tol=1e-5)


def test_perplexity_is_exp_of_the_mean_loss():
    model = tiny_model()
    windows = random_tokens(3, BLOCK + 1)
    with torch.no_grad():
        _, loss = model(windows[:, :-1].contiguous(), windows[:, 1:].contiguous())
    assert math.isclose(perplexity(model, windows), math.exp(loss.item()), rel_tol=1e-5)
