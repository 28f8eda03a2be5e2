"""1.12 gpt_param_count: Recitation 11's count of Part B's GPT (biases on, lm_head tied to wte)."""
import numpy as np

from ..spec import Value
from .base import PartATest
from .dimensions import FEMTO, PICO

FUNCTION = "gpt_param_count"
GROUP = "params"


def cases():
    def case(vocab, block, n_layer, n_embd):
        return {"vocab_size": vocab, "block_size": block, "n_layer": n_layer, "n_embd": n_embd}
    return {"params.femto": case(65, 8, FEMTO["n_layer"], FEMTO["n_embd"]),
            "params.pico": case(65, 8, PICO["n_layer"], PICO["n_embd"]),
            "params.gpt2": case(50257, 1024, 12, 768), "params.no_layers": case(10, 4, 0, 3),
            "params.small": case(100, 16, 2, 16)}


def count(V, block, L, C, lm_head=0, biases=True, ln_biases=True, ln_f=True, wpe=True, mlp=4, ln=True):
    b = 1 if biases else 0
    ln_params = (2 if ln_biases else 1) * C if ln else 0
    per_block = 2 * ln_params + (3 * C * C + b * 3 * C) + (C * C + b * C) + 2 * (mlp * C * C) + b * (mlp * C + C)
    return V * C * (1 + lm_head) + (block * C if wpe else 0) + L * per_block + (ln_params if ln_f else 0)


def signatures(vocab_size, block_size, n_layer, n_embd):
    args = (vocab_size, block_size, n_layer, n_embd)
    yield None, count(*args)
    yield "you counted lm_head separately, but it shares its weight with wte (count it once)", count(*args, lm_head=1)
    yield "your count leaves out the biases of the linear layers", count(*args, biases=False)
    yield "your count leaves out every bias, the LayerNorms' included (biases are on: a LayerNorm has a weight and " \
          "a bias of size C)", count(*args, biases=False, ln_biases=False)
    yield "your count leaves out the final LayerNorm ln_f", count(*args, ln_f=False)
    yield "your count leaves out the LayerNorms (ln_1, ln_2, ln_f: a weight and a bias of size C each)", \
        count(*args, ln_f=False, ln=False)
    yield "your count leaves out the position embedding wpe", count(*args, wpe=False)
    yield "your MLP hidden size looks like C; it is 4C", count(*args, mlp=1)


def compare(got, expected, call):
    value = got.item() if isinstance(got, np.ndarray) and got.size == 1 else got
    if isinstance(value, bool) or not isinstance(value, (int, float)) or value != expected:
        return f"{call}: got {value!r}, expected {expected}"
    return None


class TestParamCount(PartATest):
    values = [
        Value("1.12.1", FUNCTION, 1, "gpt_param_count: femto and pico (65 tokens, context 8)", "params.femto",
              "params.pico", public=True),
        Value("1.12.2", FUNCTION, 1, "gpt_param_count: GPT-2 small and others", "params.gpt2", "params.small",
              "params.no_layers", visibility="after_published"),
    ]
