"""The inputs of every Part A check, and ``record``, which turns them into expected outputs.

A case is a name (``"sdpa.causal"``) and its inputs: a dict of the function's arguments in
the contract's order, passed positionally (so a student's own parameter names do not matter).
Each group draws from its own ``np.random.default_rng(seed)``, so editing one group leaves
the others' inputs unchanged. ``record`` (run on the reference) and the graded checks (run on
a student) build their inputs here, so the two cannot drift apart.
"""
import numpy as np

# case group -> the attention.py function it calls
FUNCTIONS = {
    "softmax": "softmax", "mean_context": "mean_context", "pe": "sinusoidal_positional_encoding",
    "rope": "apply_rope", "mask": "causal_mask", "sdpa": "scaled_dot_product_attention",
    "mha": "multi_head_attention", "ln": "layer_norm", "gelu": "gelu", "block": "transformer_block",
    "shapes": "attention_shapes", "params": "gpt_param_count",
}
# Recitation 11's toy models: 65 characters, a context of 8
FEMTO = dict(n_layer=1, n_head=1, n_embd=2)
PICO = dict(n_layer=3, n_head=3, n_embd=6)


def _tril(T):
    return np.tril(np.ones((T, T), dtype=bool))


def softmax_cases():
    rng = np.random.default_rng(101)
    x = rng.normal(size=(3, 5))
    return {
        "softmax.rows": {"x": 3 * rng.normal(size=(4, 6))},
        "softmax.batch": {"x": 2 * rng.normal(size=(2, 3, 4, 5))},
        "softmax.axis0": {"x": 2 * rng.normal(size=(5, 3)), "axis": 0},
        "softmax.axis1_3d": {"x": 2 * rng.normal(size=(2, 4, 3)), "axis": 1},
        "softmax.large": {"x": np.array([[1000.0, 1000.0, 999.0], [-1000.0, -1000.0, -999.0],
                                         [1000.0, 0.0, -1000.0]])},
        "softmax.neg_inf": {"x": np.array([[0.0, -np.inf, 1.0, -np.inf], [-np.inf, -np.inf, 2.0, -np.inf],
                                           [3.0, 1.0, -np.inf, 0.0]])},
        "softmax.shift": {"x": x},
        "softmax.shifted": {"x": x + np.array([[50.0], [-30.0], [7.5]])},
    }


def mean_context_cases():
    rng = np.random.default_rng(102)
    return {f"mean_context.{k}": {"X": rng.normal(size=s)}
            for k, s in (("single", (5, 3)), ("batch", (2, 5, 3)), ("batch2", (3, 2, 4, 6)))}


def pe_cases():
    return {"pe.even": {"T": 12, "d_model": 8}, "pe.wide": {"T": 50, "d_model": 64},
            "pe.odd": {"T": 7, "d_model": 5}, "pe.one": {"T": 3, "d_model": 1},
            "pe.negative_T": {"T": -1, "d_model": 4}, "pe.zero_d": {"T": 4, "d_model": 0},
            "pe.negative_d": {"T": 4, "d_model": -2}}


def rope_cases():
    rng = np.random.default_rng(104)
    q, k = rng.normal(size=(4, 8)), rng.normal(size=(4, 8))
    pq, pk = np.array([0.0, 1.0, 2.0, 5.0]), np.array([2.0, 0.0, 2.0, 9.0])
    cases = {
        "rope.single": {"x": rng.normal(size=(6, 8))},
        "rope.batch": {"x": rng.normal(size=(2, 3, 5, 4))},
        "rope.positions": {"x": rng.normal(size=(4, 6)), "positions": np.array([3.0, 0.0, 7.0, 12.0]),
                           "base": 100.0},
        "rope.odd_d": {"x": rng.normal(size=(3, 5))},
    }
    for s in RELATIVE_SHIFTS:  # q at positions pq + s, k at pk + s: q.k depends on pq - pk only
        cases[f"rope.rel_q{s}"] = {"x": q, "positions": pq + s}
        cases[f"rope.rel_k{s}"] = {"x": k, "positions": pk + s}
    return cases


RELATIVE_SHIFTS = (0, 3, 40)


def mask_cases():
    return {f"mask.T{T}": {"T": T} for T in (1, 2, 5, 8)}


def sdpa_cases():
    rng = np.random.default_rng(106)
    n = rng.normal
    Q, K, V = n(size=(6, 4)), n(size=(6, 4)), n(size=(6, 3))
    K2, V2 = K.copy(), V.copy()
    K2[3:], V2[3:] = n(size=(3, 4)), n(size=(3, 3))  # change the keys and values after position 2
    mask = n(size=(4, 6)) > 0.3
    mask[:, 0] = True  # every query keeps at least one key
    return {
        "sdpa.lecture": {"Q": np.array([[1.0], [2.0]]), "K": np.array([[1.0], [3.0]]),
                         "V": np.array([[10.0], [20.0]]), "mask": _tril(2)},
        "sdpa.shapes": {"Q": n(size=(2, 3, 4, 5)), "K": n(size=(2, 3, 6, 5)), "V": n(size=(2, 3, 6, 7))},
        "sdpa.nomask": {"Q": 1.5 * n(size=(5, 4)), "K": 1.5 * n(size=(6, 4)), "V": n(size=(6, 3))},
        "sdpa.causal": {"Q": 1.5 * n(size=(2, 3, 5, 4)), "K": 1.5 * n(size=(2, 3, 5, 4)),
                        "V": n(size=(2, 3, 5, 6)), "mask": _tril(5)},
        "sdpa.future": {"Q": Q, "K": K, "V": V, "mask": _tril(6)},
        "sdpa.future_changed": {"Q": Q, "K": K2, "V": V2, "mask": _tril(6)},
        "sdpa.random_mask": {"Q": 1.5 * n(size=(2, 4, 5)), "K": 1.5 * n(size=(2, 6, 5)),
                             "V": n(size=(2, 6, 3)), "mask": mask},
    }


FUTURE_FROM = 3  # sdpa.future and block.future differ only at positions >= 3


def _weights(rng, C, count, scale=0.6):
    return [scale * rng.normal(size=(C, C)) for _ in range(count)]


def mha_cases():
    rng = np.random.default_rng(107)

    def case(shape, n_heads, causal=None):
        X = rng.normal(size=shape)
        inputs = dict(zip(("X", "W_Q", "W_K", "W_V", "W_O"), [X, *_weights(rng, shape[-1], 4)]))
        inputs["n_heads"] = n_heads
        if causal is not None:
            inputs["causal"] = causal
        return inputs
    return {"mha.one_head": case((5, 6), 1), "mha.heads3": case((6, 6), 3),
            "mha.noncausal": case((5, 8), 2, causal=False), "mha.batch": case((2, 3, 5, 8), 4, causal=True),
            "mha.bad_heads": case((4, 6), 4)}


def ln_cases():
    rng = np.random.default_rng(108)
    tiny = 0.1 + 1e-3 * rng.normal(size=(4, 6))  # variance ~1e-6: eps=1e-5 dominates it
    g, b = 1 + 0.5 * rng.normal(size=6), 0.5 * rng.normal(size=6)
    return {
        "ln.values": {"x": 1 + 2 * rng.normal(size=(2, 4, 6)), "gamma": 1 + 0.5 * rng.normal(size=6),
                      "beta": 0.5 * rng.normal(size=6)},
        "ln.unit": {"x": 2 + 3 * rng.normal(size=(5, 8)), "gamma": np.ones(8), "beta": np.zeros(8)},
        "ln.tiny": {"x": tiny, "gamma": g, "beta": b},
        "ln.tiny_eps1": {"x": tiny, "gamma": g, "beta": b, "eps": 1.0},
    }


def gelu_cases():
    rng = np.random.default_rng(109)
    batch = 3 * rng.normal(size=(2, 3, 4))
    batch[0, 0, :] = [-50.0, -20.0, 20.0, 50.0]
    return {"gelu.grid": {"x": np.linspace(-3.0, 3.0, 25)}, "gelu.batch": {"x": batch}}


def block_params(rng, C):
    """One GPT-2 block's parameters, weights (in, out); c_proj is far from symmetric."""
    n = rng.normal
    return {
        "ln_1.weight": 1 + 0.2 * n(size=C), "ln_1.bias": 0.2 * n(size=C),
        "attn.c_attn.weight": 0.5 * n(size=(C, 3 * C)), "attn.c_attn.bias": 0.2 * n(size=3 * C),
        "attn.c_proj.weight": 0.3 * n(size=(C, C)) + np.triu(np.full((C, C), 0.4), 1),
        "attn.c_proj.bias": 0.2 * n(size=C),
        "ln_2.weight": 1 + 0.2 * n(size=C), "ln_2.bias": 0.2 * n(size=C),
        "mlp.c_fc.weight": 0.4 * n(size=(C, 4 * C)), "mlp.c_fc.bias": 0.2 * n(size=4 * C),
        "mlp.c_proj.weight": 0.3 * n(size=(4 * C, C)), "mlp.c_proj.bias": 0.2 * n(size=C),
    }


def block_cases():
    rng = np.random.default_rng(110)
    x = rng.normal(size=(6, 4))
    x2 = x.copy()
    x2[FUTURE_FROM:] = rng.normal(size=(6 - FUTURE_FROM, 4))
    p4 = block_params(rng, 4)
    return {
        "block.single": {"x": rng.normal(size=(5, 6)), "params": block_params(rng, 6), "n_heads": 2},
        "block.batch": {"x": rng.normal(size=(2, 4, 9)), "params": block_params(rng, 9), "n_heads": 3},
        "block.shapes": {"x": rng.normal(size=(2, 3, 4, 8)), "params": block_params(rng, 8), "n_heads": 2},
        "block.future": {"x": x, "params": p4, "n_heads": 2},
        "block.future_changed": {"x": x2, "params": p4, "n_heads": 2},
    }


def shapes_cases():
    return {"shapes.femto": {"T": 4, "n_embd": FEMTO["n_embd"], "n_head": FEMTO["n_head"]},
            "shapes.pico": {"T": 4, "n_embd": PICO["n_embd"], "n_head": PICO["n_head"]},
            "shapes.pico_batch": {"T": 8, "n_embd": 6, "n_head": 3, "batch": 4},
            "shapes.gpt2": {"T": 1024, "n_embd": 768, "n_head": 12, "batch": 2},
            "shapes.wide_heads": {"T": 5, "n_embd": 12, "n_head": 4, "batch": 3}}


def params_cases():
    def case(vocab, block, n_layer, n_embd):
        return {"vocab_size": vocab, "block_size": block, "n_layer": n_layer, "n_embd": n_embd}
    return {"params.femto": case(65, 8, FEMTO["n_layer"], FEMTO["n_embd"]),
            "params.pico": case(65, 8, PICO["n_layer"], PICO["n_embd"]),
            "params.gpt2": case(50257, 1024, 12, 768), "params.no_layers": case(10, 4, 0, 3),
            "params.small": case(100, 16, 2, 16)}


BUILDERS = {"softmax": softmax_cases, "mean_context": mean_context_cases, "pe": pe_cases, "rope": rope_cases,
            "mask": mask_cases, "sdpa": sdpa_cases, "mha": mha_cases, "ln": ln_cases, "gelu": gelu_cases,
            "block": block_cases, "shapes": shapes_cases, "params": params_cases}
# the cases on which the contract asks for a ValueError (never recorded)
RAISING = ("pe.negative_T", "pe.zero_d", "pe.negative_d", "rope.odd_d", "mha.bad_heads")


def inputs(case):
    """The inputs of ``case`` ("group.name"): a dict of arguments in the contract's order."""
    return BUILDERS[case.split(".")[0]]()[case]


def function_of(case):
    return FUNCTIONS[case.split(".")[0]]


def recorded_cases():
    """Every case whose output is recorded, in a fixed order."""
    return [c for group in BUILDERS for c in BUILDERS[group]() if c not in RAISING]


def record(call):
    """The expected outputs: ``(arrays, meta)``. ``call(name, *args)`` runs the reference's
    ``attention.name``; arrays go to ``data/part_a.npz``, dicts and ints to ``part_a.json``."""
    arrays, meta = {}, {}
    for case in recorded_cases():
        value = call(function_of(case), *inputs(case).values())
        if case.startswith("sdpa."):
            arrays[f"{case}.Z"], arrays[f"{case}.A"] = np.asarray(value[0]), np.asarray(value[1])
        elif case.startswith("shapes."):
            meta[case] = {k: [int(n) for n in v] for k, v in value.items()}
        elif case.startswith("params."):
            meta[case] = int(value)
        else:
            arrays[case] = np.asarray(value)
    return arrays, meta
