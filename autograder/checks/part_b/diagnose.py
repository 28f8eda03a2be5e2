"""Part B's known bugs, as options of the trusted NumPy GPT-2 (checks/gpt2.py), and what to tell
the student when their logits match one. ``match`` also serves the checks whose verdict does
not depend on the model's values: a model recognised as a known (causal) variant is graded on
the property the check is about, its bug charged once, by the value test."""
import numpy as np

from .. import gpt2
from ..compare import close_enough

BUGS = {
    "no_mask": "your attention is not causal: the logits match a model without the causal mask "
               "(position t sees the future)",
    "mask_T": "your causal mask looks transposed: position t attends to j >= t (the future) instead of j <= t",
    "mask_zero": "your masked scores look set to 0 instead of -inf before the softmax, so future positions "
                 "still get weight",
    "unscaled": "your attention scores look unscaled: divide q k^T by sqrt(hs), hs = C // n_head",
    "scale_d": "your attention scores look divided by hs instead of sqrt(hs)",
    "scale_C": "your attention scores look divided by sqrt(C) instead of sqrt(hs), the head size",
    "columns": "your softmax looks taken over the queries (dim=-2); it is over the keys, the last dim",
    "kqv": "q and k look swapped: q, k, v are the consecutive thirds of c_attn's output, in that order",
    "split_no_transpose": "the heads look split with .view(B, nh, T, hs); use .view(B, T, nh, hs).transpose(1, 2)",
    "merge_no_transpose": "the heads look merged with .view(B, T, C) straight from (B, nh, T, hs); "
                          "transpose(1, 2) back to (B, T, nh, hs) first",
    "c_proj_T": "attn.c_proj's weight looks applied transposed (x @ W instead of x @ W.T): nn.Linear stores "
                "(out, in), and a square matrix hides the slip from every shape check",
    "relu": "the MLP's activation looks like ReLU; GPT-2 uses GELU (tanh approximation)",
    "erf": "the MLP's GELU looks like the exact erf GELU, not the tanh approximation GPT-2 uses "
           "(nn.GELU(approximate=\"tanh\"))",
    "post_ln": "the blocks look post-LN (x = ln(x + attn(x))); GPT-2 is pre-LN: x = x + attn(ln_1(x))",
    "no_mlp_residual": "the residual around the MLP looks missing: x = x + mlp(ln_2(x))",
    "no_attn_residual": "the residual around attention looks missing: x = x + attn(ln_1(x))",
    "ln_1_twice": "the MLP's layer norm looks like ln_1; it is ln_2",
    "no_wpe": "the position embeddings (wpe) look unused: x = wte(idx) + wpe(pos)",
    "wpe_by_token": "wpe looks indexed by the token ids; it is indexed by the positions 0 .. T-1",
    "positions_from_one": "the positions look counted from 1; they are 0 .. T-1 (wpe(torch.arange(T)))",
    "no_ln_f": "the final layer norm ln_f looks missing before lm_head",
}


def variants(w, idx, n_head, candidates=None, rtol=1e-3, atol=1e-4):
    """{None or bug: logits} of the contract's model and of each known bug that differs from it
    on these weights and inputs, by more than ``rtol``/``atol`` (a bug equal to the right answer
    here is left out)."""
    with np.errstate(all="ignore"):
        right = gpt2.logits(w, idx, n_head)
        found = {None: right}
        for bug in BUGS if candidates is None else candidates:
            try:  # (a variant may not run on these inputs: wpe indexed past block_size)
                z = gpt2.logits(w, idx, n_head, bug)
            except (IndexError, ValueError):
                continue
            if not close_enough(z, right, rtol=rtol, atol=atol):
                found[bug] = z
    return found


def match(actual, w, idx, n_head, candidates=None, rtol=1e-4, atol=1e-5):
    """("reference" | a bug | None): which model's logits ``actual`` reproduces on ``idx``."""
    for bug, z in variants(w, idx, n_head, candidates, rtol, atol).items():
        if close_enough(actual, z, rtol=rtol, atol=atol):
            return bug or "reference"
    return None


def diagnose(w, idx, n_head, actual):
    """A sentence naming the known bug whose logits ``actual`` matches, or None."""
    try:
        bug = match(actual, w, idx, n_head, rtol=1e-3, atol=1e-4)
    except Exception:  # noqa: BLE001 - a diagnosis is a bonus; it must never break a check
        return None
    return BUGS.get(bug)
