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
        ### BEGIN SOLUTION
        if config.n_embd % config.n_head != 0:
            raise ValueError(
                f"n_embd ({config.n_embd}) must be divisible by n_head ({config.n_head})"
            )
        self.n_head = config.n_head
        self.n_embd = config.n_embd
        # key, query, value projections for all heads, in one batch
        self.c_attn = nn.Linear(config.n_embd, 3 * config.n_embd, bias=config.bias)
        # output projection
        self.c_proj = nn.Linear(config.n_embd, config.n_embd, bias=config.bias)
        self.attn_dropout = nn.Dropout(config.dropout)
        self.resid_dropout = nn.Dropout(config.dropout)
        # causal mask: True where position t may attend to position j, that is j <= t.
        # A buffer, not a parameter, and not saved in the state_dict.
        mask = torch.tril(torch.ones(config.block_size, config.block_size, dtype=torch.bool))
        self.register_buffer("mask", mask.view(1, 1, config.block_size, config.block_size),
                             persistent=False)  # (1, 1, block_size, block_size)
        ### END SOLUTION

    def forward(self, x):
        """(B, T, C) -> (B, T, C): causal multi-head self-attention."""
        ### BEGIN SOLUTION
        B, T, C = x.size()
        hs = C // self.n_head
        q, k, v = self.c_attn(x).split(self.n_embd, dim=2)  # 3 x (B, T, C)
        q = q.view(B, T, self.n_head, hs).transpose(1, 2)  # (B, nh, T, hs)
        k = k.view(B, T, self.n_head, hs).transpose(1, 2)  # (B, nh, T, hs)
        v = v.view(B, T, self.n_head, hs).transpose(1, 2)  # (B, nh, T, hs)
        # (B, nh, T, hs) x (B, nh, hs, T) -> (B, nh, T, T)
        att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(hs))
        att = att.masked_fill(~self.mask[:, :, :T, :T], float("-inf"))
        att = F.softmax(att, dim=-1)
        att = self.attn_dropout(att)
        y = att @ v  # (B, nh, T, T) x (B, nh, T, hs) -> (B, nh, T, hs)
        y = y.transpose(1, 2).contiguous().view(B, T, C)  # (B, T, C): heads side by side
        return self.resid_dropout(self.c_proj(y))
        ### END SOLUTION


class MLP(nn.Module):
    """Position-wise feed-forward network.

    Submodules: ``c_fc = nn.Linear(C, 4C)``, ``gelu = nn.GELU(approximate="tanh")``,
    ``c_proj = nn.Linear(4C, C)`` (``bias=config.bias``) and ``dropout``.

    ``forward(x)``: ``(B, T, C) -> (B, T, C)``, ``dropout(c_proj(gelu(c_fc(x))))``.
    """

    def __init__(self, config):
        super().__init__()
        ### BEGIN SOLUTION
        self.c_fc = nn.Linear(config.n_embd, 4 * config.n_embd, bias=config.bias)
        self.gelu = nn.GELU(approximate="tanh")
        self.c_proj = nn.Linear(4 * config.n_embd, config.n_embd, bias=config.bias)
        self.dropout = nn.Dropout(config.dropout)
        ### END SOLUTION

    def forward(self, x):
        """(B, T, C) -> (B, T, C)."""
        ### BEGIN SOLUTION
        x = self.c_fc(x)  # (B, T, 4C)
        x = self.gelu(x)
        x = self.c_proj(x)  # (B, T, C)
        return self.dropout(x)
        ### END SOLUTION


class Block(nn.Module):
    """One pre-LN transformer block.

    Submodules: ``ln_1 = nn.LayerNorm(C)``, ``attn = CausalSelfAttention(config)``,
    ``ln_2 = nn.LayerNorm(C)``, ``mlp = MLP(config)`` (layer norms with ``bias=config.bias``).

    ``forward(x)``: ``(B, T, C) -> (B, T, C)``: ``x = x + attn(ln_1(x))``, then
    ``x = x + mlp(ln_2(x))``.
    """

    def __init__(self, config):
        super().__init__()
        ### BEGIN SOLUTION
        self.ln_1 = nn.LayerNorm(config.n_embd, bias=config.bias)
        self.attn = CausalSelfAttention(config)
        self.ln_2 = nn.LayerNorm(config.n_embd, bias=config.bias)
        self.mlp = MLP(config)
        ### END SOLUTION

    def forward(self, x):
        """(B, T, C) -> (B, T, C)."""
        ### BEGIN SOLUTION
        x = x + self.attn(self.ln_1(x))
        x = x + self.mlp(self.ln_2(x))
        return x
        ### END SOLUTION


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
        ### BEGIN SOLUTION
        self.transformer = nn.ModuleDict(dict(
            wte=nn.Embedding(config.vocab_size, config.n_embd),
            wpe=nn.Embedding(config.block_size, config.n_embd),
            drop=nn.Dropout(config.dropout),
            h=nn.ModuleList([Block(config) for _ in range(config.n_layer)]),
            ln_f=nn.LayerNorm(config.n_embd, bias=config.bias),
        ))
        self.lm_head = nn.Linear(config.n_embd, config.vocab_size, bias=False)
        # weight tying: the output layer reuses the token embedding matrix (V, C)
        self.transformer.wte.weight = self.lm_head.weight

        self.apply(self._init_weights)
        # GPT-2 scales the projections that write into the residual stream, one per
        # sub-block and two sub-blocks per layer, so the stream's variance does not grow
        # with depth.
        for name, p in self.named_parameters():
            if name.endswith("c_proj.weight"):
                nn.init.normal_(p, mean=0.0, std=0.02 / math.sqrt(2 * config.n_layer))
        ### END SOLUTION

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
        ### BEGIN SOLUTION
        B, T = idx.size()
        if T > self.config.block_size:
            raise ValueError(
                f"Cannot forward sequence of length {T}, "
                f"block size is only {self.config.block_size}"
            )
        pos = torch.arange(0, T, dtype=torch.long, device=idx.device)  # (T,)
        tok_emb = self.transformer.wte(idx)  # (B, T, C)
        pos_emb = self.transformer.wpe(pos)  # (T, C), broadcast over B
        x = self.transformer.drop(tok_emb + pos_emb)  # (B, T, C)
        for block in self.transformer.h:
            x = block(x)  # (B, T, C)
        x = self.transformer.ln_f(x)  # (B, T, C)
        logits = self.lm_head(x)  # (B, T, V)
        loss = None
        if targets is not None:
            # (B*T, V) against (B*T,)
            loss = F.cross_entropy(logits.view(B * T, -1), targets.reshape(B * T))
        return logits, loss
        ### END SOLUTION

    @torch.no_grad()
    def generate(self, idx, max_new_tokens, temperature=1.0, top_k=None, generator=None):
        """Continue each row of idx (B, T) by max_new_tokens tokens.

        Returns LongTensor (B, T + max_new_tokens): the prompt followed by the new tokens.
        Each new token is sample_next_token(...) of the logits at the last position, the
        model seeing only the last block_size tokens of the sequence so far. Runs without
        gradients; call model.eval() first when dropout > 0.
        """
        ### BEGIN SOLUTION
        for _ in range(max_new_tokens):
            idx_cond = idx[:, -self.config.block_size:]  # (B, <= block_size)
            logits, _ = self(idx_cond)  # (B, T', V)
            next_token = sample_next_token(logits[:, -1, :], temperature=temperature,
                                           top_k=top_k, generator=generator)  # (B,)
            idx = torch.cat((idx, next_token[:, None]), dim=1)  # (B, T + 1)
        return idx
        ### END SOLUTION


def sample_next_token(logits, temperature=1.0, top_k=None, generator=None):
    """Draw one token id per row from logits (B, V); returns a LongTensor (B,).

    temperature 0 returns the argmax (no randomness); temperature > 0 samples from
    softmax(logits / temperature); a negative temperature raises ValueError.
    top_k (an int >= 1, or None for all) keeps the k largest logits of each row and sets the
    others to -inf before sampling. Every random draw comes from `generator` (a
    torch.Generator) when one is given: torch.multinomial(probs, 1, generator=generator).
    """
    ### BEGIN SOLUTION
    if temperature < 0:
        raise ValueError(f"temperature must be >= 0, got {temperature}")
    if top_k is not None and top_k < 1:
        raise ValueError(f"top_k must be None or >= 1, got {top_k}")
    if temperature == 0:
        return torch.argmax(logits, dim=-1)  # (B,)
    logits = logits / temperature  # (B, V)
    if top_k is not None:
        k = min(top_k, logits.size(-1))
        kth_largest = torch.topk(logits, k, dim=-1).values[:, [-1]]  # (B, 1)
        logits = logits.masked_fill(logits < kth_largest, float("-inf"))
    probs = F.softmax(logits, dim=-1)  # (B, V)
    return torch.multinomial(probs, num_samples=1, generator=generator).squeeze(-1)  # (B,)
    ### END SOLUTION


@torch.no_grad()
def perplexity(model, windows):
    """exp of the mean next-token negative log-likelihood (nats) of `model` on `windows`.

    windows: LongTensor (N, T + 1) with T <= block_size; the inputs are windows[:, :-1] and
    the targets windows[:, 1:], so there are N*T predictions, all weighted equally.
    Runs in eval mode without gradients (the model's train/eval mode is restored after).
    Returns a Python float (1.0 for a perfect model, vocab_size for uniform guessing).
    """
    ### BEGIN SOLUTION
    windows = torch.as_tensor(windows, dtype=torch.long)
    if windows.dim() != 2 or windows.size(0) == 0 or windows.size(1) < 2:
        raise ValueError(f"windows must be (N, T + 1) with N >= 1 and T >= 1, "
                         f"got shape {tuple(windows.shape)}")
    device = next(model.parameters()).device
    was_training = model.training
    model.eval()
    total_nll, count = 0.0, 0
    try:
        for start in range(0, windows.size(0), 64):
            chunk = windows[start:start + 64].to(device)  # (n, T + 1)
            x, y = chunk[:, :-1], chunk[:, 1:]  # (n, T), (n, T)
            _, loss = model(x, y)
            total_nll += loss.item() * y.numel()
            count += y.numel()
    finally:
        model.train(was_training)
    return math.exp(total_nll / count)
    ### END SOLUTION
