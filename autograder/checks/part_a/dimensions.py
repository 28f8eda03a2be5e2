"""1.11 attention_shapes: Recitation 11's dimension exercise (femto: 1 head, 1 layer, n_embd 2;
pico: 3 heads, 3 layers, n_embd 6), for one causal self-attention layer."""
import numpy as np

from ..spec import Value
from .base import PartATest

FUNCTION = "attention_shapes"
GROUP = "shapes"
FEMTO = dict(n_layer=1, n_head=1, n_embd=2)
PICO = dict(n_layer=3, n_head=3, n_embd=6)
NOTATION = {"x": "(B, T, C)", "q": "(B, nh, T, hs)", "k": "(B, nh, T, hs)", "v": "(B, nh, T, hs)",
            "scores": "(B, nh, T, T)", "weights": "(B, nh, T, T)", "z": "(B, nh, T, hs)", "out": "(B, T, C)"}


def cases():
    return {"shapes.femto": {"T": 4, "n_embd": FEMTO["n_embd"], "n_head": FEMTO["n_head"]},
            "shapes.pico": {"T": 4, "n_embd": PICO["n_embd"], "n_head": PICO["n_head"]},
            "shapes.pico_batch": {"T": 8, "n_embd": 6, "n_head": 3, "batch": 4},
            "shapes.gpt2": {"T": 1024, "n_embd": 768, "n_head": 12, "batch": 2},
            "shapes.wide_heads": {"T": 5, "n_embd": 12, "n_head": 4, "batch": 3}}


def signatures(T, n_embd, n_head, batch=1):
    B, C, nh = batch, n_embd, n_head

    def shapes(heads):
        return {"x": [B, T, C], **dict.fromkeys("qkvz", list(heads)), "scores": [B, nh, T, T],
                "weights": [B, nh, T, T], "out": [B, T, C]}
    yield None, shapes((B, nh, T, C // nh))
    yield "q, k, v (and z) look like (B, T, nh, hs): after the split into heads, swap to (B, nh, T, hs)", \
        shapes((B, T, nh, C // nh))
    yield "your head size looks like C; it is hs = C // nh", shapes((B, nh, T, C))


def _as_shape(value):
    """A shape tuple of ints, or None when ``value`` is not one."""
    try:
        shape = tuple(np.asarray(value).reshape(-1).tolist())
    except Exception:  # noqa: BLE001 - any value a student returns
        return None
    ok = shape and all(isinstance(n, (int, float)) and not isinstance(n, bool) and float(n).is_integer() for n in shape)
    return tuple(int(n) for n in shape) if ok else None


def compare(got, expected, call):
    """None when ``got`` is the dict of shapes ``expected``, else what differs."""
    if not isinstance(got, dict):
        return f"{call}: got a {type(got).__name__}, expected a dict of shape tuples with keys {sorted(expected)}"
    missing = sorted(set(expected) - set(got))
    if missing:
        return f"{call} has no key(s) {missing}: got keys {sorted(got)}, expected {sorted(expected)}"
    for key, want in expected.items():
        shape = _as_shape(got[key])
        if shape != tuple(want):
            return f"{call}[{key!r}]: got {shape if shape else got[key]!r}, expected {NOTATION[key]} = {tuple(want)}"
    return None


class TestAttentionShapes(PartATest):
    values = [
        Value("1.11.1", FUNCTION, 1, "attention_shapes: femto and pico (B = 1, T = 4)", "shapes.femto", "shapes.pico",
              public=True),
        Value("1.11.2", FUNCTION, 1, "attention_shapes: batches, GPT-2 small, 4 heads of 3", "shapes.pico_batch",
              "shapes.gpt2", "shapes.wide_heads", visibility="after_published"),
    ]
