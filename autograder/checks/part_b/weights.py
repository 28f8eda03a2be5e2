"""The weights Part B's checks load into the student's GPT, by name, and the layouts they travel in.

Each set makes a check depend on what it tests and little else (charge each bug once):

* ``full``: every part of the model shows in the logits (the value test of the whole model);
* ``generation``: the blocks are inert (attention and MLP weights zero, layer norms the
  identity), so the logits are ln_f(wte[token] + wpe[position]) @ wte.T: what ``generate``,
  ``perplexity``, the loss and weight tying need, whatever bug the attention or the MLP has;
* ``probe``: attention mixes the visible positions uniformly (q = k = 0, so the scale of the
  scores cannot matter), the MLP is off: what the causality probes need;
* ``init``: GPT-2's initialisation, the grader's training run's starting point.

Names and shapes are nanoGPT's (``nn.Linear`` weights ``(out, in)``, layout ``"out_in"``);
``to_layout`` transposes the four linear weights of every block for a model that stores them
``(in, out)`` like Hugging Face's Conv1D (``"in_out"``), so a layout mismatch costs only the
structure test.
"""
import math

import numpy as np

from ..gpt2 import LINEAR


def gpt2_parameters(config):
    """[(name, shape)] of GPT(config) in nanoGPT's layout, lm_head.weight included (tied)."""
    V, L, C = config["vocab_size"], config["n_layer"], config["n_embd"]
    params = [("transformer.wte.weight", (V, C)), ("transformer.wpe.weight", (config["block_size"], C))]
    for i in range(L):
        h = f"transformer.h.{i}."
        params += [(h + "ln_1.weight", (C,)), (h + "ln_1.bias", (C,)),
                   (h + "attn.c_attn.weight", (3 * C, C)), (h + "attn.c_attn.bias", (3 * C,)),
                   (h + "attn.c_proj.weight", (C, C)), (h + "attn.c_proj.bias", (C,)),
                   (h + "ln_2.weight", (C,)), (h + "ln_2.bias", (C,)),
                   (h + "mlp.c_fc.weight", (4 * C, C)), (h + "mlp.c_fc.bias", (4 * C,)),
                   (h + "mlp.c_proj.weight", (C, 4 * C)), (h + "mlp.c_proj.bias", (C,))]
    return params + [("transformer.ln_f.weight", (C,)), ("transformer.ln_f.bias", (C,)),
                     ("lm_head.weight", (V, C))]


def _is_linear(name):
    return name.endswith(LINEAR)


def to_layout(weights, layout):
    """nanoGPT-layout ``weights`` as a model of ``layout`` stores them."""
    if layout == "out_in":
        return dict(weights)
    return {k: (np.ascontiguousarray(np.asarray(v).T) if _is_linear(k) else v) for k, v in weights.items()}


from_layout = to_layout  # a transpose is its own inverse


def detect_layout(shapes, config):
    """"out_in" or "in_out" from a model's parameter shapes {name: shape} (judged on the
    non-square c_attn and c_fc, never on the square c_proj), or None when neither fits."""
    C = config["n_embd"]
    found = {tuple(shapes.get(f"transformer.h.0.{n}", ())) for n in ("attn.c_attn.weight", "mlp.c_fc.weight")}
    if config["n_layer"] == 0:
        return "out_in"
    if found == {(3 * C, C), (4 * C, C)}:
        return "out_in"
    if found == {(C, 3 * C), (C, 4 * C)}:
        return "in_out"
    return None


def _fill(config, rule):
    """{name: float32 array} from ``rule(name, shape)`` over GPT-2's parameters; lm_head = wte."""
    w = {}
    for name, shape in gpt2_parameters(config):
        w[name] = w["transformer.wte.weight"] if name == "lm_head.weight" else rule(name, shape)
    return {k: np.asarray(v, dtype=np.float32) for k, v in w.items()}


def full(config, seed):
    """Weights large enough that every part shows in the logits (GPT-2's init gives logits near
    zero, where a missing scale or mask changes nothing measurable)."""
    rng = np.random.default_rng(seed)

    def rule(name, shape):
        if ".ln_" in name:
            return name.endswith(".weight") + 0.2 * rng.standard_normal(shape)
        if name.endswith(".bias"):
            return 0.1 * rng.standard_normal(shape)
        if len(shape) == 2 and not name.startswith("transformer.w"):
            return (1.5 if "c_attn" in name else 1.0) * rng.standard_normal(shape) / math.sqrt(shape[1])
        return (0.5 if name.endswith("wte.weight") else 1.0) * rng.standard_normal(shape)
    return _fill(config, rule)


def _identity_ln(name, shape):
    return np.ones(shape) if name.endswith(".weight") else np.zeros(shape)


def generation(config, seed):
    """Inert blocks (zero attention and MLP weights, identity layer norms); the logits are
    ln_f(wte[token] + wpe[position]) @ wte.T, spread over the vocabulary, and depend on the
    position (so a context cropped one short changes them)."""
    rng = np.random.default_rng(seed)

    def rule(name, shape):
        if name == "transformer.ln_f.weight":  # logits of about +-2; the residual stream keeps
            return np.full(shape, 0.17)         # a variance near 1, so eps changes nothing
        if ".ln_" in name:
            return _identity_ln(name, shape)
        if name == "transformer.wte.weight":
            return rng.standard_normal(shape)
        if name == "transformer.wpe.weight":  # large enough that the position moves the argmax
            return 1.5 * rng.standard_normal(shape)
        return np.zeros(shape)  # every weight and bias of the blocks
    return _fill(config, rule)


def probe(config, seed):
    """q = k = 0 (every visible position gets the same weight, whatever the scale), v and
    c_proj random, MLP off, identity layer norms, no position embeddings."""
    rng, C = np.random.default_rng(seed), config["n_embd"]

    def rule(name, shape):
        if ".ln_" in name:
            return _identity_ln(name, shape)
        if name == "transformer.wte.weight":
            return rng.standard_normal(shape)
        if name.endswith("attn.c_attn.weight"):  # (3C, C): rows of q, k, v
            return np.concatenate([np.zeros((2 * C, C)), 1.5 * rng.standard_normal((C, C)) / math.sqrt(C)])
        if name.endswith("attn.c_attn.bias"):
            return np.concatenate([np.zeros(2 * C), 0.1 * rng.standard_normal(C)])
        if name.endswith("attn.c_proj.weight"):
            return rng.standard_normal(shape) / math.sqrt(C)
        return np.zeros(shape)  # wpe, c_proj.bias, the MLP
    return _fill(config, rule)


def init(config, seed):
    """GPT-2's initialisation by name, from NumPy (names sorted), so a submission's own
    initialisation does not change the grader's training run."""
    rng = np.random.default_rng(seed)
    w = {}
    for name, shape in sorted(gpt2_parameters(config)):
        if name == "lm_head.weight":
            continue
        if name.endswith(".bias"):
            w[name] = np.zeros(shape)
        elif ".ln_" in name:
            w[name] = np.ones(shape)
        else:
            std = 0.02 / math.sqrt(2 * max(config["n_layer"], 1)) if name.endswith("c_proj.weight") else 0.02
            w[name] = rng.normal(0.0, std, size=shape)
    w["lm_head.weight"] = w["transformer.wte.weight"]
    return {k: v.astype(np.float32) for k, v in w.items()}
