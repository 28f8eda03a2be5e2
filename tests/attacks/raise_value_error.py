"""Refusing as a strategy: every function of the contract raises ValueError, whatever it gets.
A test that credits a ValueError for bad arguments must not give points for this."""
import dataclasses as _dataclasses


def _refuse(*args, **kwargs):
    raise ValueError("bad arguments")


for _name in ("softmax", "mean_context", "sinusoidal_positional_encoding", "apply_rope", "causal_mask",
              "scaled_dot_product_attention", "multi_head_attention", "layer_norm", "gelu", "transformer_block",
              "attention_shapes", "gpt_param_count", "sample_next_token", "perplexity"):
    globals()[_name] = _refuse


@_dataclasses.dataclass
class GPTConfig:
    vocab_size: int
    block_size: int
    n_layer: int
    n_head: int
    n_embd: int
    dropout: float = 0.0
    bias: bool = True


class GPT:
    def __init__(self, config):
        raise ValueError("bad arguments")
