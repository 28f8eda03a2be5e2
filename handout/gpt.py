# Generated from reference/gpt.py by `make handout`; staff: edit it there, not here.
"""
HW11 Building GPT-2: a GPT language model in one file, nanoGPT style.

Read top to bottom: CausalSelfAttention -> MLP -> Block -> GPTConfig -> GPT, then the
two functions that use a trained model, sample_next_token and perplexity.

Shapes use one notation everywhere:
    B  batch size            T  sequence length (<= block_size)
    C  n_embd                nh n_head            hs head size = C // nh
    V  vocab_size

Parameter names are those of a GPT-2 checkpoint in nanoGPT's layout
(transformer.wte, transformer.h.0.attn.c_attn.weight, ..., lm_head.weight), so weights load
key by key. Note that nn.Linear stores its weight as (out, in), the transpose of the
(in, out) layout of Part A and of OpenAI's checkpoint files.
"""

import math
from dataclasses import dataclass

import torch
import torch.nn as nn
from torch.nn import functional as F


class CausalSelfAttention(nn.Module):
    """Multi-head causal self-attention, computed by hand.

    Submodules: ``c_attn = nn.Linear(C, 3C)`` (q, k, v are the consecutive thirds of its
    output) and ``c_proj = nn.Linear(C, C)``, both with ``bias=config.bias``; dropout
    ``attn_dropout`` on the attention weights and ``resid_dropout`` on the output.

    ``forward(x)``: ``x (B, T, C) -> (B, T, C)``. Per head: ``softmax(q k^T / sqrt(hs))``
    with the scores of future positions (``j > t``) set to ``-inf`` before the softmax,
    then multiplied by ``v``; the heads are concatenated back to ``(B, T, C)`` and projected
    by ``c_proj``. ``F.scaled_dot_product_attention`` and ``nn.MultiheadAttention`` are
    off limits. Extra buffers, such as a registered causal mask, are allowed.
    """

    def __init__(self, config):
        super().__init__()
        raise NotImplementedError("CausalSelfAttention.__init__: not implemented yet")

    def forward(self, x):
        """(B, T, C) -> (B, T, C): causal multi-head self-attention."""
        raise NotImplementedError("CausalSelfAttention.forward: not implemented yet")


class MLP(nn.Module):
    """Position-wise feed-forward network.

    Submodules: ``c_fc = nn.Linear(C, 4C)``, ``gelu = nn.GELU(approximate="tanh")``,
    ``c_proj = nn.Linear(4C, C)`` (``bias=config.bias``) and ``dropout``.

    ``forward(x)``: ``(B, T, C) -> (B, T, C)``, ``dropout(c_proj(gelu(c_fc(x))))``.
    """

    def __init__(self, config):
        super().__init__()
        raise NotImplementedError("MLP.__init__: not implemented yet")

    def forward(self, x):
        """(B, T, C) -> (B, T, C)."""
        raise NotImplementedError("MLP.forward: not implemented yet")


class Block(nn.Module):
    """One pre-LN transformer block.

    Submodules: ``ln_1 = nn.LayerNorm(C)``, ``attn = CausalSelfAttention(config)``,
    ``ln_2 = nn.LayerNorm(C)``, ``mlp = MLP(config)`` (layer norms with ``bias=config.bias``).

    ``forward(x)``: ``(B, T, C) -> (B, T, C)``: ``x = x + attn(ln_1(x))``, then
    ``x = x + mlp(ln_2(x))``.
    """

    def __init__(self, config):
        super().__init__()
        raise NotImplementedError("Block.__init__: not implemented yet")

    def forward(self, x):
        """(B, T, C) -> (B, T, C)."""
        raise NotImplementedError("Block.forward: not implemented yet")


@dataclass
class GPTConfig:
    """Everything that fixes a GPT's shape. GPT-2 small is
    GPTConfig(vocab_size=50257, block_size=1024, n_layer=12, n_head=12, n_embd=768)."""

    vocab_size: int  # number of distinct tokens; token ids are 0 .. vocab_size - 1
    block_size: int  # longest context the model can see (rows of the position table)
    n_layer: int  # number of transformer blocks
    n_head: int  # attention heads per block; must divide n_embd
    n_embd: int  # width C of the residual stream
    dropout: float = 0.0  # 0 while we check and grade: the forward pass is then deterministic
    bias: bool = True  # GPT-2 has biases in every Linear and LayerNorm, so its weights load


class GPT(nn.Module):
    """The GPT-2 language model.

    Submodules, named as in a GPT-2 checkpoint:
    ``transformer.wte = nn.Embedding(V, C)`` (token embeddings),
    ``transformer.wpe = nn.Embedding(block_size, C)`` (position embeddings),
    ``transformer.drop = nn.Dropout(dropout)``,
    ``transformer.h = nn.ModuleList([Block(config) for _ in range(n_layer)])``,
    ``transformer.ln_f = nn.LayerNorm(C)`` and ``lm_head = nn.Linear(C, V, bias=False)``
    whose weight IS ``transformer.wte.weight`` (weight tying: one tensor, counted once).
    Weights start as GPT-2's: call ``self.apply(self._init_weights)``, then scale the
    residual projections (``*.c_proj.weight``) to std ``0.02 / sqrt(2 * n_layer)``.
    """

    def __init__(self, config):
        super().__init__()
        self.config = config
        raise NotImplementedError("GPT.__init__: not implemented yet")

    def _init_weights(self, module):
        """GPT-2's initialisation: weights normal(0, 0.02), biases zero (LayerNorms keep
        PyTorch's ones and zeros)."""
        if isinstance(module, nn.Linear):
            nn.init.normal_(module.weight, mean=0.0, std=0.02)
            if module.bias is not None:
                nn.init.zeros_(module.bias)
        elif isinstance(module, nn.Embedding):
            nn.init.normal_(module.weight, mean=0.0, std=0.02)

    def get_num_params(self):
        """Number of parameters; the tied lm_head / wte matrix counts once."""
        return sum(p.numel() for p in self.parameters())

    def forward(self, idx, targets=None):
        """Next-token logits, and the loss when targets are given.

        idx: LongTensor (B, T) of token ids with T <= block_size, else ValueError.
        targets: None or LongTensor (B, T), the token that follows each position.
        Returns (logits (B, T, V), loss), where loss is the mean cross-entropy over all
        B*T positions (a 0-dim tensor) or None when targets is None.
        """
        raise NotImplementedError("GPT.forward: not implemented yet")

    @torch.no_grad()
    def generate(self, idx, max_new_tokens, temperature=1.0, top_k=None, generator=None):
        """Continue each row of idx (B, T) by max_new_tokens tokens.

        Returns LongTensor (B, T + max_new_tokens): the prompt followed by the new tokens.
        Each new token is sample_next_token(...) of the logits at the last position, the
        model seeing only the last block_size tokens of the sequence so far. Runs without
        gradients; call model.eval() first when dropout > 0.
        """
        raise NotImplementedError("GPT.generate: not implemented yet")


def sample_next_token(logits, temperature=1.0, top_k=None, generator=None):
    """Draw one token id per row from logits (B, V); returns a LongTensor (B,).

    temperature 0 returns the argmax (no randomness); temperature > 0 samples from
    softmax(logits / temperature); a negative temperature raises ValueError.
    top_k (an int >= 1, or None for all) keeps the k largest logits of each row and sets the
    others to -inf before sampling. Every random draw comes from `generator` (a
    torch.Generator) when one is given: torch.multinomial(probs, 1, generator=generator).
    """
    raise NotImplementedError("sample_next_token: not implemented yet")


@torch.no_grad()
def perplexity(model, windows):
    """exp of the mean next-token negative log-likelihood (nats) of `model` on `windows`.

    windows: LongTensor (N, T + 1) with T <= block_size; the inputs are windows[:, :-1] and
    the targets windows[:, 1:], so there are N*T predictions, all weighted equally.
    Runs in eval mode without gradients (the model's train/eval mode is restored after).
    Returns a Python float (1.0 for a perfect model, vocab_size for uniform guessing).
    """
    raise NotImplementedError("perplexity: not implemented yet")
