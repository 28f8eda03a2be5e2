"""The one training loop: the grader's run on the student's GPT (op ``train``), the calibration
of the quality thresholds (tools/calibrate_quality.py) and ``make bench`` all call ``train``.

AdamW on the cross-entropy of the model's logits for the batches starting at ``starts``
(steps, B), linear warmup then cosine decay, optional gradient clipping. Inside the sandbox it
runs in the student's process, so nothing it reports is trusted: the parent judges the weights
it returns by checking them against the reference architecture itself.
"""
import math

import numpy as np


def lr_at(step, steps, lr, warmup, min_lr_frac):
    """Linear warmup over ``warmup`` steps, then cosine decay to ``min_lr_frac * lr`` at the last step."""
    if step < warmup:
        return lr * (step + 1) / warmup
    progress = (step - warmup) / max(1, steps - warmup)
    return lr * (min_lr_frac + (1 - min_lr_frac) * 0.5 * (1 + math.cos(math.pi * progress)))


def default_logits(model, x):
    return model(x)[0]


def train(model, tokens, starts, *, block_size, lr, warmup=0, min_lr_frac=1.0, grad_clip=None,
          logits_of=default_logits, on_step=None):
    """Train ``model`` in place on windows of ``tokens`` (1-D ints) starting at ``starts`` (steps, B);
    returns the training losses (steps,). ``logits_of(model, x)`` gives logits (B, T, V) for x (B, T)."""
    import torch
    F = torch.nn.functional
    model.train()
    params = [p for p in model.parameters() if p.requires_grad]
    opt = torch.optim.AdamW(params, lr=lr, betas=(0.9, 0.99), weight_decay=0.0)
    data = torch.as_tensor(np.asarray(tokens, dtype=np.int64))
    offsets = torch.arange(block_size + 1)
    starts = np.asarray(starts, dtype=np.int64)
    losses = []
    for step, row in enumerate(starts):
        for group in opt.param_groups:
            group["lr"] = lr_at(step, len(starts), lr, warmup, min_lr_frac)
        chunk = data[torch.as_tensor(row)[:, None] + offsets]  # (B, T + 1)
        logits = logits_of(model, chunk[:, :-1])  # (B, T, V)
        loss = F.cross_entropy(logits.reshape(-1, logits.shape[-1]).float(), chunk[:, 1:].reshape(-1))
        opt.zero_grad(set_to_none=True)
        loss.backward()
        if grad_clip:
            torch.nn.utils.clip_grad_norm_(params, grad_clip)
        opt.step()
        losses.append(loss.item())
        if on_step is not None:
            on_step(step, losses[-1])
    model.eval()
    return np.asarray(losses, dtype=np.float32)
