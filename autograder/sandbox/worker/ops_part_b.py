"""Part B's ops: build the student's GPT, load weights by name, run it, probe it, sample, train.

The only worker module that touches torch, and only inside the ops, so a Part A worker never
pays for importing it. Every op returns raw tensors as NumPy arrays (logits, token ids,
gradients); the parent computes every verdict from them.
"""
import math

import numpy as np

from .ops_common import op
from .student import StudentCodeError, attribute, load

_state = {}
CONFIG_FIELDS = ("vocab_size", "block_size", "n_layer", "n_head", "n_embd")  # GPTConfig's order


def _torch():
    import torch
    if not _state:  # tiny models: one thread is fastest, and robust when the machine is busy
        torch.set_num_threads(1)
        _state["threads"] = 1
    return torch


def _fail(message, kind="raised"):
    raise StudentCodeError(kind=kind, message=message)


def _long(a):
    torch = _torch()
    return a.long() if torch.is_tensor(a) else torch.from_numpy(np.ascontiguousarray(a, dtype=np.int64))


def _mro(exc):
    return [c.__name__ for c in type(exc).__mro__]


def _param_names(model):
    return dict(model.named_parameters(remove_duplicate=False))


def _load_weights(model, weights):
    """Load ``weights`` (name -> array) into the parameters of the same names; a missing or
    unexpected name is the student's error."""
    torch = _torch()
    params = _param_names(model)
    lacks, extra = sorted(set(weights) - set(params)), sorted(set(params) - set(weights))
    if lacks or extra:
        _fail("your GPT's parameter names are not those of a GPT-2 checkpoint, so weights cannot load "
              f"by name: it lacks {lacks[:8] or 'none'}; it has unexpected {extra[:8] or 'none'}")
    for name, p in params.items():
        if tuple(p.shape) != tuple(np.shape(weights[name])):
            _fail(f"parameter {name} has shape {tuple(p.shape)}, expected {tuple(np.shape(weights[name]))}")
    state = {n: torch.from_numpy(np.asarray(w, dtype=np.float32)).to(params[n].dtype) for n, w in weights.items()}
    result = model.load_state_dict(state, strict=False)
    if result.unexpected_keys:
        _fail(f"load_state_dict did not accept the parameters {result.unexpected_keys[:8]}")


def _model(module, config, weights=None):
    """GPT(GPTConfig(**config)) of the student's module, in eval mode, with ``weights`` loaded."""
    torch = _torch()
    cfg = attribute(module, "GPTConfig")(**config)
    torch.manual_seed(0)
    model = attribute(module, "GPT")(cfg)
    if not isinstance(model, torch.nn.Module):
        _fail(f"GPT(config) should be a torch.nn.Module, got {type(model).__name__}")
    if weights is not None:
        _load_weights(model, weights)
    return model.eval()


def _forward(model, idx, targets=None):
    """(logits tensor, loss tensor or None) of ``model(idx, targets)``, checked for their kind."""
    torch = _torch()
    out = model(_long(idx)) if targets is None else model(_long(idx), _long(targets))
    if not (isinstance(out, (tuple, list)) and len(out) == 2):
        _fail(f"GPT.forward should return (logits, loss); got a {type(out).__name__}", "bad_output")
    logits, loss = out
    if not torch.is_tensor(logits):
        _fail(f"GPT.forward's logits should be a tensor (B, T, V), got a {type(logits).__name__}", "bad_output")
    if loss is not None and (not torch.is_tensor(loss) or loss.numel() != 1):
        _fail("GPT.forward's loss should be None or a 0-dim tensor, got "
              f"{type(loss).__name__} of shape {tuple(getattr(loss, 'shape', ()))}", "bad_output")
    return logits, loss


def _tokens(out, what):
    torch = _torch()
    if not torch.is_tensor(out):
        _fail(f"{what} should return a LongTensor, got a {type(out).__name__}", "bad_output")
    return {"tokens": out.detach().cpu().numpy(), "dtype": str(out.dtype), "shape": list(out.shape)}


def _plain(v):
    return v if v is None or isinstance(v, (bool, int, float, str)) else repr(v)


@op
def gpt_structure(config, module="gpt"):
    """Parameter names and shapes (tied ones under both names), buffers, whether lm_head's
    weight is wte's (the same tensor), and GPTConfig's fields and values when built positionally."""
    import dataclasses
    model = _model(module, config)
    unique = [[n, list(p.shape)] for n, p in model.named_parameters()]
    every = [[n, list(p.shape)] for n, p in _param_names(model).items()]
    buffers = [[n, list(b.shape)] for n, b in model.named_buffers()]
    try:
        tied = model.lm_head.weight is model.transformer.wte.weight
    except AttributeError:
        tied = False
    cls = attribute(module, "GPTConfig")
    positional = cls(*(config[k] for k in CONFIG_FIELDS))
    names = [f.name for f in dataclasses.fields(cls)] if dataclasses.is_dataclass(cls) else None
    values = {k: _plain(getattr(positional, k, "(missing)")) for k in (*CONFIG_FIELDS, "dropout", "bias")}
    return {"unique": unique, "every": every, "buffers": buffers, "tied": bool(tied),
            "config": {"fields": names, "positional": values}}


@op
def gpt_forward(config, weights, idx, targets=None, catch=False, module="gpt"):
    """logits (B, T, V) and loss; with ``catch``, only which exception (if any) was raised."""
    torch = _torch()
    model = _model(module, config, weights)
    try:
        with torch.no_grad():
            logits, loss = _forward(model, idx, targets)
    except Exception as e:  # noqa: BLE001 - student code may raise anything
        if catch and not isinstance(e, StudentCodeError):
            return {"raised": _mro(e), "message": str(e)[:500]}
        raise
    if catch:
        return {"raised": None, "shape": list(logits.shape)}
    return {"logits": logits.float().numpy(), "loss": None if loss is None else float(loss)}


@op
def gpt_grad_probe(config, weights, idx, t, seed=0, module="gpt"):
    """d(r . logits[:, t, :]) / d(token embeddings) for a fixed random r: (B, T, C)."""
    torch = _torch()
    model = _model(module, config, weights)
    seen = {}

    def leaf(x):
        seen["emb"] = x.detach().requires_grad_(True)
        return seen["emb"]

    def on_wte(_module, _inputs, output):  # the token embeddings (B, T, C)
        return leaf(output) if "emb" not in seen and torch.is_tensor(output) else None

    def on_block(_module, args):  # or, if wte is not called as a module, the first block's input
        return (leaf(args[0]), *args[1:]) if "emb" not in seen and args and torch.is_tensor(args[0]) else None

    handles = [model.get_submodule("transformer.wte").register_forward_hook(on_wte),
               model.get_submodule("transformer.h.0").register_forward_pre_hook(on_block)]
    try:
        with torch.enable_grad():
            logits, _ = _forward(model, idx)
    finally:
        for h in handles:
            h.remove()
    if "emb" not in seen:
        _fail("GPT.forward called neither transformer.wte nor transformer.h[0], so it cannot be probed")
    if not logits.requires_grad:
        _fail("GPT.forward's logits carry no gradient (is forward running under torch.no_grad?)")
    r = torch.randn(logits.shape[0], logits.shape[-1], generator=torch.Generator().manual_seed(seed))
    (logits[:, t, :].float() * r).sum().backward()
    grad = seen["emb"].grad
    return {"grad": np.zeros(tuple(seen["emb"].shape), np.float32) if grad is None else grad.float().numpy()}


@op
def gpt_forward_no_builtins(config, weights, idx, module="gpt"):
    """The forward pass with PyTorch's attention functions replaced by ones that raise."""
    torch = _torch()
    F = torch.nn.functional
    used = []

    def forbidden(name):
        def refuse(*args, **kwargs):
            used.append(name)
            raise RuntimeError(f"{name} is off limits in this homework: compute attention yourself")
        return refuse

    originals = {"scaled_dot_product_attention": F.scaled_dot_product_attention,
                 "multi_head_attention_forward": F.multi_head_attention_forward}
    targets = [(F, n, v, f"torch.nn.functional.{n}") for n, v in originals.items()]
    targets.append((torch._C._nn, "scaled_dot_product_attention", originals["scaled_dot_product_attention"],
                    "torch.nn.functional.scaled_dot_product_attention"))
    targets.append((torch.nn.MultiheadAttention, "forward", torch.nn.MultiheadAttention.forward,
                    "torch.nn.MultiheadAttention"))
    student = load(module)
    for gname, value in list(vars(student).items()):  # names bound by `from ... import ...`
        for n, original in originals.items():
            if value is original:
                targets.append((student, gname, value, f"torch.nn.functional.{n}"))
    model = _model(module, config, weights)
    try:
        for holder, name, _, label in targets:
            setattr(holder, name, forbidden(label))
        with torch.no_grad():
            logits, _ = _forward(model, idx)
    except Exception:  # noqa: BLE001
        if not used:
            raise
        return {"used": sorted(set(used)), "logits": None}
    finally:
        for holder, name, original, _ in targets:
            setattr(holder, name, original)
    return {"used": sorted(set(used)), "logits": logits.float().numpy()}


@op
def sample(logits, temperature=1.0, top_k=None, n_draws=None, seed=0, global_seed=0, catch=False, module="gpt"):
    """sample_next_token on ``logits`` (B, V), or on (V,) replicated to B = n_draws rows."""
    torch = _torch()
    fn = attribute(module, "sample_next_token")
    x = torch.tensor(np.asarray(logits, dtype=np.float32))
    if n_draws is not None:
        x = x.reshape(1, -1).repeat(int(n_draws), 1)  # (B, V), B = n_draws
    torch.manual_seed(global_seed)  # a sampler that ignores the generator drifts with this
    g = None if seed is None else torch.Generator().manual_seed(int(seed))
    try:
        out = fn(x, temperature=temperature, top_k=top_k, generator=g)
    except Exception as e:  # noqa: BLE001
        if catch:
            return {"raised": _mro(e), "message": str(e)[:500]}
        raise
    if catch:
        return {"raised": None}
    return _tokens(out, "sample_next_token")


@op
def generate(config, weights, idx, max_new_tokens, temperature=1.0, top_k=None, seed=0, global_seed=0,
             module="gpt"):
    """GPT.generate(idx, ...) with a seeded generator: (B, T + max_new_tokens) ids."""
    torch = _torch()
    model = _model(module, config, weights)
    torch.manual_seed(global_seed)
    g = torch.Generator().manual_seed(int(seed))
    out = model.generate(_long(idx), max_new_tokens, temperature=temperature, top_k=top_k, generator=g)
    return _tokens(out, "GPT.generate")


@op
def perplexity(config, weights, windows, module="gpt"):
    """The student's perplexity(model, windows) and the type it returned."""
    torch = _torch()
    model = _model(module, config, weights)
    value = attribute(module, "perplexity")(model, _long(windows))
    kind = type(value).__name__
    if torch.is_tensor(value) and value.numel() == 1:
        value = value.item()
    if not isinstance(value, (int, float, np.floating, np.integer)) or isinstance(value, bool):
        _fail(f"perplexity should return a float, got a {kind}", "bad_output")
    return {"value": float(value), "type": kind}


def _lr_at(step, steps, lr, warmup, min_lr_frac):
    """Linear warmup, then cosine decay to min_lr_frac * lr at the last step."""
    if step < warmup:
        return lr * (step + 1) / warmup
    progress = (step - warmup) / max(1, steps - warmup)
    return lr * (min_lr_frac + (1 - min_lr_frac) * 0.5 * (1 + math.cos(math.pi * progress)))


@op
def train(config, init, train_tokens, starts, val_windows, lr, warmup=0, min_lr_frac=1.0, grad_clip=None,
          sample_rows=8, sample_tokens=100, temperature=1.0, start_id=0, seed=0, threads=2,
          prefix_positions=(0,), module="gpt"):
    """The trusted training loop on the student's GPT: weights ``init`` by name, AdamW on the
    cross-entropy of the student's logits for the batches starting at ``starts`` (steps, B),
    then the validation logits (N, T, V), those of the first 16 windows' prefixes ending at
    ``prefix_positions`` (16, P, V), and samples drawn here from the model's logits."""
    torch = _torch()
    F = torch.nn.functional
    torch.set_num_threads(int(threads))
    model = _model(module, config, init).train()
    params = [p for p in model.parameters() if p.requires_grad]
    opt = torch.optim.AdamW(params, lr=lr, betas=(0.9, 0.99), weight_decay=0.0)
    data, T, V = _long(train_tokens), config["block_size"], config["vocab_size"]
    offsets = torch.arange(T + 1)
    losses = []
    for step, row in enumerate(np.asarray(starts)):
        for group in opt.param_groups:
            group["lr"] = _lr_at(step, len(starts), lr, warmup, min_lr_frac)
        chunk = data[_long(row)[:, None] + offsets]  # (B, T + 1)
        logits, _ = _forward(model, chunk[:, :-1])  # (B, T, V)
        loss = F.cross_entropy(logits.reshape(-1, V).float(), chunk[:, 1:].reshape(-1))
        opt.zero_grad(set_to_none=True)
        loss.backward()
        if grad_clip:
            torch.nn.utils.clip_grad_norm_(params, grad_clip)
        opt.step()
        losses.append(loss.item())
    model.eval()
    windows = np.asarray(val_windows)
    with torch.no_grad():
        val = np.concatenate([_forward(model, windows[i:i + 64, :-1])[0].float().numpy()
                              for i in range(0, len(windows), 64)])  # (N, T, V)
        # the same logits from prefixes alone: a model that looks ahead gives other ones there
        prefix = np.stack([_forward(model, windows[:16, :t + 1])[0][:, -1].float().numpy()
                           for t in prefix_positions], axis=1)  # (16, P, V)
        g = torch.Generator().manual_seed(int(seed))
        idx = torch.full((sample_rows, 1), int(start_id), dtype=torch.long)
        for _ in range(sample_tokens):
            logits, _ = _forward(model, idx[:, -T:])
            probs = F.softmax(logits[:, -1, :].float() / temperature, dim=-1)  # (B, V)
            if not torch.isfinite(probs).all():
                _fail("after training, your model's logits are not finite (NaN or inf)")
            idx = torch.cat((idx, torch.multinomial(probs, 1, generator=g)), dim=1)
    return {"val_logits": val, "prefix_logits": prefix, "losses": np.asarray(losses, np.float32),
            "samples": idx[:, 1:].numpy()}
