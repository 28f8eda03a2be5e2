"""Correct submissions written differently from the reference: each must get full marks."""
import textwrap

from . import Append, Entry, Replace, Sub

A, G = "attention.py", "gpt.py"
MASK_INIT = ('mask = torch.tril(torch.ones(config.block_size, config.block_size, dtype=torch.bool))\n'
             '        self.register_buffer("mask", mask.view(1, 1, config.block_size, config.block_size),\n'
             '                             persistent=False)  # (1, 1, block_size, block_size)')
MASKED = 'att = att.masked_fill(~self.mask[:, :, :T, :T], float("-inf"))'
TOP_K = ("        k = min(top_k, logits.size(-1))\n"
         "        kth_largest = torch.topk(logits, k, dim=-1).values[:, [-1]]  # (B, 1)\n"
         '        logits = logits.masked_fill(logits < kth_largest, float("-inf"))\n')
DRAW = "return torch.multinomial(probs, num_samples=1, generator=generator).squeeze(-1)  # (B,)"

HW11_LAYERS = '''
    """Layers and helpers that gpt.py imports (a second file in the same folder)."""
    import math

    import torch
    import torch.nn as nn


    def new_gelu(x):
        return 0.5 * x * (1.0 + torch.tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * torch.pow(x, 3.0))))


    class MLP(nn.Module):
        def __init__(self, config):
            super().__init__()
            self.c_fc = nn.Linear(config.n_embd, 4 * config.n_embd, bias=config.bias)
            self.c_proj = nn.Linear(4 * config.n_embd, config.n_embd, bias=config.bias)
            self.dropout = nn.Dropout(config.dropout)

        def forward(self, x):
            return self.dropout(self.c_proj(new_gelu(self.c_fc(x))))


    def top_k_filter(logits, k):
        values, _ = torch.topk(logits, min(k, logits.size(-1)))
        return logits.masked_fill(logits < values[:, [-1]], float("-inf"))
'''

NANOGPT_MODULES = '''
    class LayerNorm(nn.Module):
        """LayerNorm with an optional bias, as in nanoGPT."""

        def __init__(self, ndim, bias):
            super().__init__()
            self.weight = nn.Parameter(torch.ones(ndim))
            self.bias = nn.Parameter(torch.zeros(ndim)) if bias else None

        def forward(self, input):
            return F.layer_norm(input, self.weight.shape, self.weight, self.bias, 1e-5)


    class NewGELU(nn.Module):
        def forward(self, x):
            return 0.5 * x * (1.0 + torch.tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * torch.pow(x, 3.0))))


    class CausalSelfAttention(nn.Module):'''

VARIANTS = [
    Entry("v_float32_everywhere", A, (
        Sub("x = np.asarray(x)\n    return x if np.issubdtype(x.dtype, np.floating) else x.astype(np.float64)",
            "return np.asarray(x, dtype=np.float32)"),
        Sub("PE = np.zeros((T, d_model))", "PE = np.zeros((T, d_model), dtype=np.float32)"),
        Sub("positions = np.arange(T) if positions is None", "positions = np.arange(T, dtype=np.float32) if positions is None"),
        Sub("freqs = base ** (-np.arange(0, d, 2) / d)", "freqs = (base ** (-np.arange(0, d, 2) / d)).astype(np.float32)"),
    ), note="every array float32"),
    Entry("v_einsum", A, (
        Sub("scores = (Q @ np.swapaxes(K, -1, -2)) / math.sqrt(dk)",
            'scores = np.einsum("...qd,...kd->...qk", Q, K) / math.sqrt(dk)'),
        Sub("Z = A @ V  # (..., Tq, Tk) x (..., Tk, dv) -> (..., Tq, dv)", 'Z = np.einsum("...qk,...kv->...qv", A, V)'),
        Sub("q = split_heads(X @ _as_float(W_Q))", 'q = split_heads(np.einsum("...tc,cd->...td", X, _as_float(W_Q)))'),
        Sub("return y @ _as_float(W_O)  # (..., T, C)", 'return np.einsum("...tc,cd->...td", y, _as_float(W_O))'),
    )),
    Entry("v_minus_1e9_mask", A, (
        Sub("scores = np.where(np.asarray(mask, dtype=bool), scores, -np.inf)",
            "scores = np.where(np.asarray(mask, dtype=bool), scores, -1e9)"),
    ), more={G: (Sub(MASKED, "att = att.masked_fill(~self.mask[:, :, :T, :T], -1e9)"),)}),
    Entry("v_nanogpt_mask_buffer", G, (
        Sub(MASK_INIT, 'self.register_buffer("bias", torch.tril(torch.ones(config.block_size, config.block_size))\n'
                       '                                     .view(1, 1, config.block_size, config.block_size))'),
        Sub(MASKED, 'att = att.masked_fill(self.bias[:, :, :T, :T] == 0, float("-inf"))'),
    ), note="nanoGPT's float mask, a persistent buffer named `bias` (in the state_dict)"),
    Entry("v_inverse_cdf_sampler", G, (
        Sub(DRAW, "cdf = torch.cumsum(probs, dim=-1)  # (B, V)\n"
                  "    u = torch.rand(probs.size(0), 1, generator=generator, dtype=probs.dtype) * cdf[:, -1:]\n"
                  "    return torch.searchsorted(cdf, u, right=True).squeeze(-1).clamp_max(probs.size(-1) - 1)"),
    )),
    Entry("v_gumbel_max_sampler", G, (
        Sub("probs = F.softmax(logits, dim=-1)  # (B, V)\n    " + DRAW,
            "u = torch.rand(logits.shape, generator=generator).clamp_min(1e-20)\n"
            "    return torch.argmax(logits - torch.log(-torch.log(u)), dim=-1)"),
    )),
    Entry("v_perplexity_window_loop", G, (
        Replace("perplexity", '''
            def perplexity(model, windows):
                windows = torch.as_tensor(windows, dtype=torch.long)
                was_training = model.training
                model.eval()
                nll, n = 0.0, 0
                for w in windows:
                    logits, _ = model(w[None, :-1])
                    logp = F.log_softmax(logits[0].double(), dim=-1)  # (T, V)
                    nll -= logp.gather(1, w[1:, None]).sum().item()
                    n += w.numel() - 1
                model.train(was_training)
                return math.exp(nll / n)
        '''),
    )),
    Entry("v_cross_file_helpers", G, (
        Replace("MLP", "from hw11_layers import MLP, top_k_filter  # noqa: E402"),
        Sub(TOP_K, "        logits = top_k_filter(logits, top_k)\n"),
    ), extra={"hw11_layers.py": HW11_LAYERS}),
    Entry("v_gpt_imports_attention", G, (
        Sub("from torch.nn import functional as F\n", "from torch.nn import functional as F\n\nfrom attention import causal_mask\n"),
        Sub("mask = torch.tril(torch.ones(config.block_size, config.block_size, dtype=torch.bool))",
            "mask = torch.from_numpy(causal_mask(config.block_size))"),
    )),
    Entry("v_notebook", A, layout="notebook", note="one .ipynb with both parts, prose and experiments"),
    Entry("v_nested_subfolder", A, layout="nested", note="files in hw11-final/src/"),
    Entry("v_fused_qkv_permute", G, (
        Sub("q, k, v = self.c_attn(x).split(self.n_embd, dim=2)  # 3 x (B, T, C)\n"
            "        q = q.view(B, T, self.n_head, hs).transpose(1, 2)  # (B, nh, T, hs)\n"
            "        k = k.view(B, T, self.n_head, hs).transpose(1, 2)  # (B, nh, T, hs)\n"
            "        v = v.view(B, T, self.n_head, hs).transpose(1, 2)  # (B, nh, T, hs)",
            "qkv = self.c_attn(x).view(B, T, 3, self.n_head, hs).permute(2, 0, 3, 1, 4)  # (3, B, nh, T, hs)\n"
            "        q, k, v = qkv.unbind(0)"),
    )),
    Entry("v_softmax_logsumexp", A, (
        Replace("softmax", '''
            def softmax(x, axis=-1):
                x = np.asarray(x, dtype=float)
                m = np.max(x, axis=axis, keepdims=True)
                lse = m + np.log(np.sum(np.exp(x - m), axis=axis, keepdims=True))
                return np.exp(x - lse)
        '''),
    )),
    Entry("v_mha_head_loop", A, (
        Replace("multi_head_attention", '''
            def multi_head_attention(X, W_Q, W_K, W_V, W_O, n_heads, causal=True):
                X = np.asarray(X, dtype=float)
                C = X.shape[-1]
                if n_heads <= 0 or C % n_heads:
                    raise ValueError("d_model must be divisible by n_heads")
                hs = C // n_heads
                Q, K, V = X @ np.asarray(W_Q), X @ np.asarray(W_K), X @ np.asarray(W_V)
                mask = causal_mask(X.shape[-2]) if causal else None
                heads = []
                for h in range(n_heads):
                    cols = slice(h * hs, (h + 1) * hs)
                    z, _ = scaled_dot_product_attention(Q[..., cols], K[..., cols], V[..., cols], mask)
                    heads.append(z)
                return np.concatenate(heads, axis=-1) @ np.asarray(W_O)
        '''),
    )),
    Entry("v_nanogpt_layernorm_gelu", G, (
        Sub("class CausalSelfAttention(nn.Module):", textwrap.dedent(NANOGPT_MODULES).strip("\n")),
        Sub("self.ln_1 = nn.LayerNorm(config.n_embd, bias=config.bias)", "self.ln_1 = LayerNorm(config.n_embd, bias=config.bias)"),
        Sub("self.ln_2 = nn.LayerNorm(config.n_embd, bias=config.bias)", "self.ln_2 = LayerNorm(config.n_embd, bias=config.bias)"),
        Sub("ln_f=nn.LayerNorm(config.n_embd, bias=config.bias)", "ln_f=LayerNorm(config.n_embd, bias=config.bias)"),
        Sub('self.gelu = nn.GELU(approximate="tanh")', "self.gelu = NewGELU()"),
    )),
    Entry("v_prints_plots_and_main", A, (
        Sub("import numpy as np\n", "import numpy as np\nimport matplotlib.pyplot as plt\n\nprint('attention.py loaded')\n"),
        Append('''
            if __name__ == "__main__":
                plt.imshow(softmax(np.random.randn(4, 4)))
                plt.show()
        '''),
    ), more={G: (
        Sub("import torch\n", "import torch\n\nprint('using torch', torch.__version__)\n"),
        Append('''
            if __name__ == "__main__":
                model = GPT(GPTConfig(vocab_size=30, block_size=16, n_layer=1, n_head=1, n_embd=8))
                print(model.generate(torch.zeros(1, 1, dtype=torch.long), 5))
        '''),
    )}),
]

FLOAT32_OUTPUTS = '''
def _f32(v):
    if isinstance(v, dict):
        return {k: _f32(x) for k, x in v.items()}
    if isinstance(v, tuple):
        return tuple(_f32(x) for x in v)
    a = np.asarray(v) if isinstance(v, (list, np.ndarray)) else v
    return a.astype(np.float32) if isinstance(a, np.ndarray) and a.dtype.kind in "fi" else v


def _in_float32(fn):
    return lambda *args, **kwargs: _f32(fn(*_f32(args), **_f32(kwargs)))


for _name in ("softmax", "mean_context", "sinusoidal_positional_encoding", "apply_rope",
              "scaled_dot_product_attention", "multi_head_attention", "layer_norm", "gelu", "transformer_block"):
    globals()[_name] = _in_float32(globals()[_name])
'''

RECORDS_INPUTS = '''
import functools as _functools
import os as _os


def _recording(fn):
    @_functools.wraps(fn)
    def wrapper(*args, **kwargs):
        with open(f"/tmp/hw11-inputs-{_os.getuid()}.txt", "a") as f:
            f.write(f"{fn.__name__}{[getattr(a, 'shape', a) for a in args]}\\n")
        print("seen so far:", open(f"/tmp/hw11-inputs-{_os.getuid()}.txt").read()[-300:])
        return fn(*args, **kwargs)
    return wrapper


for _name in ("softmax", "mean_context", "apply_rope", "layer_norm", "gelu"):
    globals()[_name] = _recording(globals()[_name])
'''

VARIANTS += [
    Entry("v_einsum_independent", A, base="einsum_attention.py", note="written without the reference, einsum style"),
    Entry("v_nanogpt_independent", G, base="nanogpt_gpt.py",
          note="written the way nanoGPT does: its LayerNorm, a float mask buffer, inverse-CDF sampling"),
    Entry("v_float32_outputs_wrapped", A, (Append(FLOAT32_OUTPUTS),), note="float32 inputs and outputs"),
    Entry("v_records_its_inputs", A, (Append(RECORDS_INPUTS),),
          note="writes every call's inputs to /tmp and prints them: a relay of hidden inputs, which wins nothing"),
]
