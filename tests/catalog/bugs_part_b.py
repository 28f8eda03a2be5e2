"""Part B (gpt.py): one realistic bug per entry, every contract entry covered; also forgeries
of the grader's own code in the student's process, which must win nothing."""
from . import Append, Replace, Sub, bug
from .bugs_part_a import attack

F = "gpt.py"
SCALED = "att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(hs))"
MASKED = 'att = att.masked_fill(~self.mask[:, :, :T, :T], float("-inf"))'
SAMPLE = "sample_next_token(logits[:, -1, :], temperature=temperature,"

BUGS = [
    # ---- CausalSelfAttention
    bug("b_attn_no_causal_mask", F, "CausalSelfAttention", Sub(MASKED, "pass"), diagnosis="future"),
    bug("b_attn_mask_transposed", F, "CausalSelfAttention",
        Sub("mask = torch.tril(torch.ones(", "mask = torch.triu(torch.ones("), diagnosis="future"),
    bug("b_attn_no_scaling", F, "CausalSelfAttention", Sub(SCALED, "att = q @ k.transpose(-2, -1)"),
        diagnosis="sqrt"),
    bug("b_attn_divides_by_head_size", F, "CausalSelfAttention",
        Sub(SCALED, "att = (q @ k.transpose(-2, -1)) / hs"), diagnosis="sqrt"),
    bug("b_attn_merge_without_transpose", F, "CausalSelfAttention",
        Sub("y = y.transpose(1, 2).contiguous().view(B, T, C)", "y = y.contiguous().view(B, T, C)"),
        diagnosis="transpose", note="(B, nh, T, hs) viewed as (B, T, C): heads and time mixed"),
    bug("b_attn_split_without_transpose", F, "CausalSelfAttention",
        Sub("q = q.view(B, T, self.n_head, hs).transpose(1, 2)", "q = q.reshape(B, self.n_head, T, hs)"),
        Sub("k = k.view(B, T, self.n_head, hs).transpose(1, 2)", "k = k.reshape(B, self.n_head, T, hs)"),
        Sub("v = v.view(B, T, self.n_head, hs).transpose(1, 2)", "v = v.reshape(B, self.n_head, T, hs)"),
        diagnosis="transpose"),
    bug("b_attn_kqv_split_order", F, "CausalSelfAttention",
        Sub("q, k, v = self.c_attn(x).split(self.n_embd, dim=2)", "k, q, v = self.c_attn(x).split(self.n_embd, dim=2)"),
        diagnosis="c_attn"),
    bug("b_attn_softmax_over_queries", F, "CausalSelfAttention",
        Sub("att = F.softmax(att, dim=-1)", "att = F.softmax(att, dim=-2)"), diagnosis="softmax"),
    bug("b_attn_mask_fill_zero", F, "CausalSelfAttention",
        Sub(MASKED, "att = att.masked_fill(~self.mask[:, :, :T, :T], 0.0)"), diagnosis="-inf"),
    bug("b_attn_uses_torch_sdpa", F, "CausalSelfAttention",
        Replace("CausalSelfAttention.forward", '''
            def forward(self, x):
                B, T, C = x.size()
                q, k, v = self.c_attn(x).split(self.n_embd, dim=2)
                q, k, v = (t.view(B, T, self.n_head, C // self.n_head).transpose(1, 2) for t in (q, k, v))
                y = F.scaled_dot_product_attention(q, k, v, is_causal=True)  # (B, nh, T, hs)
                return self.resid_dropout(self.c_proj(y.transpose(1, 2).contiguous().view(B, T, C)))
        '''), diagnosis="scaled_dot_product_attention", note="right numbers, but off limits"),
    # ---- MLP
    bug("b_mlp_relu", F, "MLP", Sub('self.gelu = nn.GELU(approximate="tanh")', "self.gelu = nn.ReLU()"),
        diagnosis="gelu"),
    bug("b_mlp_exact_erf_gelu", F, "MLP", Sub('self.gelu = nn.GELU(approximate="tanh")', "self.gelu = nn.GELU()"),
        diagnosis="tanh", note="subtle: differs from the tanh GELU by < 5e-4"),
    # ---- Block
    bug("b_block_post_ln", F, "Block",
        Sub("x = x + self.attn(self.ln_1(x))\n        x = x + self.mlp(self.ln_2(x))",
            "x = self.ln_1(x + self.attn(x))\n        x = self.ln_2(x + self.mlp(x))"), diagnosis="pre-LN"),
    bug("b_block_no_mlp_residual", F, "Block",
        Sub("x = x + self.mlp(self.ln_2(x))", "x = self.mlp(self.ln_2(x))"), diagnosis="residual"),
    bug("b_block_ln_1_twice", F, "Block",
        Sub("x = x + self.mlp(self.ln_2(x))", "x = x + self.mlp(self.ln_1(x))"), diagnosis="ln_2"),
    # ---- GPTConfig
    bug("b_config_dropout_default", F, "GPTConfig",
        Sub("dropout: float = 0.0", "dropout: float = 0.1"), diagnosis="dropout"),
    bug("b_config_nanogpt_field_order", F, "GPTConfig",
        Sub("    vocab_size: int  # number of distinct tokens; token ids are 0 .. vocab_size - 1\n"
            "    block_size: int  # longest context the model can see (rows of the position table)\n",
            "    block_size: int  # longest context the model can see (rows of the position table)\n"
            "    vocab_size: int  # number of distinct tokens; token ids are 0 .. vocab_size - 1\n"),
        diagnosis="GPTConfig", note="nanoGPT's field order: positional construction swaps sizes"),
    # ---- GPT
    bug("b_gpt_no_position_embedding", F, "GPT",
        Sub("x = self.transformer.drop(tok_emb + pos_emb)", "x = self.transformer.drop(tok_emb)"),
        diagnosis="wpe"),
    bug("b_gpt_positions_from_one", F, "GPT",
        Sub("pos = torch.arange(0, T, dtype=torch.long", "pos = torch.arange(1, T + 1, dtype=torch.long"),
        diagnosis="wpe"),
    bug("b_gpt_wpe_indexed_by_tokens", F, "GPT",
        Sub("pos_emb = self.transformer.wpe(pos)", "pos_emb = self.transformer.wpe(idx)"), diagnosis="wpe"),
    bug("b_gpt_lm_head_not_tied", F, "GPT",
        Sub("self.transformer.wte.weight = self.lm_head.weight\n", ""), diagnosis="tied"),
    bug("b_gpt_no_ln_f", F, "GPT", Sub("x = self.transformer.ln_f(x)  # (B, T, C)", "pass"), diagnosis="ln_f"),
    bug("b_gpt_loss_summed", F, "GPT",
        Sub("targets.reshape(B * T))", "targets.reshape(B * T), reduction=\"sum\")"), diagnosis="mean"),
    bug("b_gpt_loss_shifts_targets", F, "GPT",
        Sub("loss = F.cross_entropy(logits.view(B * T, -1), targets.reshape(B * T))",
            "loss = F.cross_entropy(logits[:, :-1].reshape(-1, logits.size(-1)), targets[:, 1:].reshape(-1))"),
        diagnosis="shift", note="Hugging Face's shift inside the model: targets are already shifted"),
    bug("b_gpt_assert_block_size", F, "GPT",
        Sub("if T > self.config.block_size:\n            raise ValueError(",
            "assert T <= self.config.block_size, (",), diagnosis="ValueError"),
    # ---- sample_next_token
    bug("b_sample_temperature_multiplies", F, "sample_next_token",
        Sub("logits = logits / temperature  # (B, V)", "logits = logits * temperature"), diagnosis="temperature"),
    bug("b_sample_temperature_after_softmax", F, "sample_next_token",
        Sub("logits = logits / temperature  # (B, V)", "# the temperature is applied to the probabilities"),
        Sub("probs = F.softmax(logits, dim=-1)  # (B, V)", "probs = F.softmax(logits, dim=-1) / temperature"),
        diagnosis="temperature", note="multinomial renormalizes: temperature has no effect"),
    bug("b_sample_top_k_keeps_k_plus_1", F, "sample_next_token",
        Sub("kth_largest = torch.topk(logits, k, dim=-1).values[:, [-1]]",
            "kth_largest = torch.topk(logits, min(k + 1, logits.size(-1)), dim=-1).values[:, [-1]]"),
        diagnosis="top_k"),
    bug("b_sample_top_k_keeps_smallest", F, "sample_next_token",
        Sub("kth_largest = torch.topk(logits, k, dim=-1).values[:, [-1]]  # (B, 1)\n"
            "        logits = logits.masked_fill(logits < kth_largest, float(\"-inf\"))",
            "kth = torch.topk(logits, k, dim=-1, largest=False).values[:, [-1]]\n"
            "        logits = logits.masked_fill(logits > kth, float(\"-inf\"))"), diagnosis="top_k"),
    bug("b_sample_zero_temperature_divides", F, "sample_next_token",
        Sub("if temperature == 0:\n        return torch.argmax(logits, dim=-1)  # (B,)\n", ""),
        diagnosis="temperature 0", note="logits / 0: inf and nan probabilities"),
    bug("b_sample_ignores_generator", F, "sample_next_token",
        Sub("torch.multinomial(probs, num_samples=1, generator=generator)", "torch.multinomial(probs, num_samples=1)"),
        diagnosis="generator"),
    bug("b_sample_no_negative_check", F, "sample_next_token",
        Sub("if temperature < 0:\n        raise ValueError", "if temperature < -1e9:\n        raise ValueError"),
        diagnosis="ValueError"),
    bug("b_sample_always_greedy", F, "sample_next_token",
        Sub("return torch.multinomial(probs, num_samples=1, generator=generator).squeeze(-1)  # (B,)",
            "return torch.argmax(probs, dim=-1)"), diagnosis="argmax"),
    # ---- GPT.generate
    bug("b_generate_no_crop", F, "generate",
        Sub("idx_cond = idx[:, -self.config.block_size:]", "idx_cond = idx"), diagnosis="block_size"),
    bug("b_generate_crops_one_short", F, "generate",
        Sub("idx_cond = idx[:, -self.config.block_size:]", "idx_cond = idx[:, -(self.config.block_size - 1):]"),
        diagnosis="block_size"),
    bug("b_generate_drops_prompt", F, "generate",
        Sub("        for _ in range(max_new_tokens):\n            idx_cond",
            "        T0 = idx.size(1)\n        for _ in range(max_new_tokens):\n            idx_cond"),
        Sub("        return idx\n        ### END SOLUTION\n\n\ndef sample_next_token",
            "        return idx[:, T0:]\n        ### END SOLUTION\n\n\ndef sample_next_token"),
        diagnosis="prompt"),
    bug("b_generate_samples_first_position", F, "generate",
        Sub(SAMPLE, "sample_next_token(logits[:, 0, :], temperature=temperature,"), diagnosis="last position"),
    bug("b_generate_ignores_temperature_top_k", F, "generate",
        Sub(SAMPLE + "\n                                           top_k=top_k, generator=generator)",
            "sample_next_token(logits[:, -1, :], generator=generator)"), diagnosis="temperature"),
    bug("b_generate_drops_generator", F, "generate",
        Sub("top_k=top_k, generator=generator)  # (B,)", "top_k=top_k)  # (B,)"), diagnosis="generator"),
    # ---- perplexity
    bug("b_ppl_no_exp", F, "perplexity",
        Sub("return math.exp(total_nll / count)", "return total_nll / count"), diagnosis="exp"),
    bug("b_ppl_mean_of_window_exps", F, "perplexity",
        Replace("perplexity", '''
            def perplexity(model, windows):
                windows = torch.as_tensor(windows, dtype=torch.long)
                model.eval()
                ppls = []
                for w in windows:
                    _, loss = model(w[None, :-1], w[None, 1:])
                    ppls.append(math.exp(loss.item()))
                return sum(ppls) / len(ppls)
        '''), diagnosis="mean", note="mean of per-window perplexities, not exp of the mean NLL"),
    bug("b_ppl_targets_unshifted", F, "perplexity",
        Sub("x, y = chunk[:, :-1], chunk[:, 1:]", "x, y = chunk[:, :-1], chunk[:, :-1]"), diagnosis="target"),
    bug("b_ppl_mean_of_batch_means", F, "perplexity",
        Sub("total_nll += loss.item() * y.numel()\n            count += y.numel()",
            "total_nll += loss.item()\n            count += 1"),
        diagnosis="mean", note="subtle: only wrong when the last batch of 64 is smaller"),
    bug("b_ppl_returns_tensor", F, "perplexity",
        Sub("return math.exp(total_nll / count)", "return torch.exp(torch.tensor(total_nll / count))"),
        diagnosis="float"),
    bug("b_sample_top_k_one_too_few", F, "sample_next_token",
        Sub("k = min(top_k, logits.size(-1))", "k = max(1, min(top_k - 1, logits.size(-1)))"), diagnosis="off by one"),
    bug("b_generate_always_greedy", F, "generate",
        Sub(SAMPLE + "\n                                           top_k=top_k, generator=generator)",
            "sample_next_token(logits[:, -1, :], temperature=0.0)"), diagnosis="greedy",
        note="generate takes the argmax whatever temperature and top_k say"),
    bug("b_attn_c_proj_applied_transposed", F, "CausalSelfAttention",
        Sub("return self.resid_dropout(self.c_proj(y))",
            "return self.resid_dropout(y @ self.c_proj.weight + self.c_proj.bias)"), diagnosis="c_proj",
        note="a missing transpose of the square c_proj passes every shape check; only values catch it"),
    # ---- forgeries: the grader's code in the student's process, replaced
    bug("b_forge_op_table", F, "GPT", Append(attack("forge_op_table")), diagnosis="not judged",
        note="every op of the worker answers made-up values"),
    bug("b_forge_training_run", F, "GPT", Append(attack("forge_training")), diagnosis="not what a GPT-2 computes",
        note="a garbage model whose training run trains the reference's instead; torch.multinomial takes the argmax"),
    bug("b_refuses_everything", F, "sample_next_token", Append(attack("raise_value_error")),
        note="every function and GPT itself raise ValueError"),
]

CONV1D = '''
class Conv1D(nn.Module):
    """Hugging Face's GPT-2 linear layer: the weight stored (in, out), y = x @ W + b."""

    def __init__(self, nf, nx, bias=True):
        super().__init__()
        self.weight = nn.Parameter(torch.empty(nx, nf).normal_(std=0.02))
        self.bias = nn.Parameter(torch.zeros(nf)) if bias else None

    def forward(self, x):
        y = x @ self.weight
        return y if self.bias is None else y + self.bias


class CausalSelfAttention(nn.Module):'''
# Bugs of form that the grader must charge once, on the right test, and nowhere else
# (tests/test_grading.py checks "nowhere else"; `make validate` checks "on the right test").
BUGS += [
    bug("b_gpt_conv1d_layout", F, "GPT",
        Sub("class CausalSelfAttention(nn.Module):", CONV1D.strip("\n")),
        Sub("self.c_attn = nn.Linear(config.n_embd, 3 * config.n_embd, bias=config.bias)",
            "self.c_attn = Conv1D(3 * config.n_embd, config.n_embd, bias=config.bias)"),
        Sub("self.c_proj = nn.Linear(config.n_embd, config.n_embd, bias=config.bias)",
            "self.c_proj = Conv1D(config.n_embd, config.n_embd, bias=config.bias)"),
        Sub("self.c_fc = nn.Linear(config.n_embd, 4 * config.n_embd, bias=config.bias)",
            "self.c_fc = Conv1D(4 * config.n_embd, config.n_embd, bias=config.bias)"),
        Sub("self.c_proj = nn.Linear(4 * config.n_embd, config.n_embd, bias=config.bias)",
            "self.c_proj = Conv1D(config.n_embd, 4 * config.n_embd, bias=config.bias)"),
        diagnosis="Conv1D", note="Hugging Face's (in, out) layout: only the structure test may cost it"),
    bug("b_gpt_inference_shortcut", F, "GPT",
        Sub("logits = self.lm_head(x)  # (B, T, V)",
            "logits = self.lm_head(x) if targets is not None else self.lm_head(x[:, [-1], :])"),
        diagnosis="last position", note="nanoGPT's inference shortcut: logits (B, 1, V) without targets"),
]
