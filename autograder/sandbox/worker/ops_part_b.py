"""Part B's ops: build the student's GPT as the grader asks, call its methods, return raw outputs.

``gpt(model, calls)`` builds ``GPT(GPTConfig(...))`` of the student's gpt.py (its own
initialisation under a fixed seed, or the grader's weights loaded by parameter name), then
makes each call in order on that one model: ``forward``, ``parameters``, ``generate``,
``perplexity``, ``gradient``. ``sample`` calls ``sample_next_token``; ``train`` runs the one
training loop (training.py) and returns the trained weights.

Everything here runs in the student's process and may be replaced by it: the parent judges
only the raw outputs (logits, losses, token ids, gradients, weights), comparing them with the
reference's for the same weights and inputs. The only module here that imports torch, and
only inside the ops, so a Part A worker never pays for it.
"""
import dataclasses

import numpy as np

from .ops_common import op
from .student import StudentCodeError, attribute

CONFIG_FIELDS = ("vocab_size", "block_size", "n_layer", "n_head", "n_embd")  # GPTConfig's order
_threads = []


def _torch():
    import torch
    if not _threads:  # tiny models: one thread is fastest, and robust when the machine is busy
        torch.set_num_threads(1)
        _threads.append(1)
    return torch


def _fail(message, kind="raised"):
    raise StudentCodeError(kind=kind, message=message)


def _long(a):
    torch = _torch()
    return a.long() if torch.is_tensor(a) else torch.from_numpy(np.ascontiguousarray(a, dtype=np.int64))


def _array(t):
    return t.detach().cpu().float().numpy()


def _mro(exc):
    return [c.__name__ for c in type(exc).__mro__]


def _shape(x):
    return tuple(getattr(x, "shape", ()))


def _parameters(model):
    return dict(model.named_parameters(remove_duplicate=False))


def _load(model, weights):
    """Copy ``weights`` (name -> array) into the parameters of those names; a name the model
    lacks, or a shape it does not have, is the student's error. Others are left as they are."""
    torch = _torch()
    params = _parameters(model)
    lacks = sorted(set(weights) - set(params))
    if lacks:
        _fail(f"your GPT has no parameter named {', '.join(lacks[:6])}{' ...' if len(lacks) > 6 else ''} "
              f"(GPT-2's checkpoint names, nanoGPT's layout; your model has {', '.join(sorted(params)[:6])} ...), "
              "so the grader's weights cannot be loaded by name")
    for name, value in weights.items():
        if _shape(params[name]) != np.shape(value):
            _fail(f"parameter {name} has shape {_shape(params[name])}, expected {np.shape(value)}, so the grader's "
                  "weights cannot be loaded by name")
    with torch.no_grad():
        for name, value in weights.items():
            p = params[name]
            p.copy_(torch.as_tensor(np.asarray(value, dtype=np.float32)).to(p.dtype))


def _build(module, model):
    """GPT(GPTConfig(...)) as ``model`` asks: {"config", "positional", "weights", "train", "seed"}."""
    torch = _torch()
    config = model["config"]
    cls = attribute(module, "GPTConfig")
    cfg = cls(*(config[k] for k in CONFIG_FIELDS)) if model.get("positional") else cls(**config)
    torch.manual_seed(int(model.get("seed", 0)))
    gpt = attribute(module, "GPT")(cfg)
    if not isinstance(gpt, torch.nn.Module):
        _fail(f"GPT(config) should be a torch.nn.Module, got a {type(gpt).__name__}")
    if model.get("weights") is not None:
        _load(gpt, model["weights"])
    return gpt.train(bool(model.get("train")))


def _forward(gpt, idx, targets=None):
    """``gpt(idx[, targets])`` -> (logits tensor, loss tensor or None), checked for their kind."""
    torch = _torch()
    out = gpt(_long(idx)) if targets is None else gpt(_long(idx), _long(targets))
    call = "GPT.forward(idx)" if targets is None else "GPT.forward(idx, targets)"
    if not (isinstance(out, (tuple, list)) and len(out) == 2):
        _fail(f"{call} should return (logits, loss); got a {type(out).__name__}", "bad_output")
    logits, loss = out
    if not torch.is_tensor(logits):
        _fail(f"{call}'s logits should be a tensor (B, T, V), got a {type(logits).__name__}", "bad_output")
    if loss is not None and (not torch.is_tensor(loss) or loss.numel() != 1):
        _fail(f"{call}'s loss should be None or a 0-dim tensor, got a {type(loss).__name__} of shape {_shape(loss)}",
              "bad_output")
    return logits, loss


def _no_builtins(module):
    """(targets to patch, the list that records use): PyTorch's attention functions replaced by
    ones that raise, also where the student's module bound them to its own names."""
    torch = _torch()
    F, used = torch.nn.functional, []

    def forbidden(label):
        def refuse(*args, **kwargs):
            used.append(label)
            raise RuntimeError(f"{label} is off limits in this homework: compute attention yourself")
        return refuse
    originals = {"scaled_dot_product_attention": F.scaled_dot_product_attention,
                 "multi_head_attention_forward": F.multi_head_attention_forward}
    targets = [(F, n, v, f"torch.nn.functional.{n}") for n, v in originals.items()]
    targets += [(torch._C._nn, "scaled_dot_product_attention", originals["scaled_dot_product_attention"],
                 "torch.nn.functional.scaled_dot_product_attention"),
                (torch.nn.MultiheadAttention, "forward", torch.nn.MultiheadAttention.forward,
                 "torch.nn.MultiheadAttention")]
    student = attribute(module, "__dict__")
    for name, value in list(student.items()):  # names bound by `from ... import ...`
        for n, original in originals.items():
            if value is original:
                targets.append((student, name, value, f"torch.nn.functional.{n}"))
    return targets, used, forbidden


def _patched_forward(gpt, module, idx):
    targets, used, forbidden = _no_builtins(module)
    try:
        for holder, name, _, label in targets:
            if isinstance(holder, dict):
                holder[name] = forbidden(label)
            else:
                setattr(holder, name, forbidden(label))
        logits = _every_position(gpt, idx, _forward(gpt, idx)[0])
    except Exception:  # student code may raise anything; re-raised unless it was our refusal
        if not used:
            raise
        return {"used": sorted(set(used)), "logits": None}
    finally:
        for holder, name, original, _ in targets:
            if isinstance(holder, dict):
                holder[name] = original
            else:
                setattr(holder, name, original)
    return {"used": sorted(set(used)), "logits": _array(logits)}


def _every_position(gpt, idx, logits, needed_by=None, before_retry=None):
    """(B, T, V) logits of a model that gives only the last position's without targets (nanoGPT's
    inference shortcut): its logits when asked with targets, (B*T, V) unflattened. When neither
    has that shape: ``logits`` as they are, or, with ``needed_by`` (who needs them), a bad_output
    error. ``before_retry`` runs before the model is asked again."""
    B, T = np.shape(idx)

    def every(x):
        return x.dim() == 3 and tuple(x.shape[:2]) == (B, T)
    if every(logits):
        return logits
    if before_retry:
        before_retry()
    with_targets, _ = _forward(gpt, idx, np.zeros((B, T), dtype=np.int64))
    if with_targets.dim() == 2 and with_targets.shape[0] == B * T:
        with_targets = with_targets.reshape(B, T, -1)
    if every(with_targets):
        return with_targets
    if needed_by:
        _fail(f"GPT.forward(idx) with idx (B, T) = {(B, T)} returned logits of shape {_shape(logits)}; {needed_by} "
              f"needs every position's logits, (B, T, V) = {(B, T, 'V')}", "bad_output")
    return logits


def call_forward(gpt, module, idx, targets=None, no_builtins=False, repeat=1, every_position=False):
    """GPT.forward's raw (logits, loss), ``repeat`` times; with ``every_position``, every position's
    logits even from a model whose forward(idx) gives the last one only (its shape is test 2.2.1's)."""
    torch = _torch()
    if no_builtins:
        with torch.no_grad():
            return _patched_forward(gpt, module, idx)
    outs = []
    with torch.no_grad():
        for _ in range(int(repeat)):
            logits, loss = _forward(gpt, idx, targets)
            if every_position and targets is None:
                logits = _every_position(gpt, idx, logits)
            outs.append({"logits": _array(logits), "loss": None if loss is None else float(loss)})
    return outs[0] if repeat == 1 else {"repeats": outs}


def call_parameters(gpt, module, values=False):
    """Names and shapes of the parameters (tied ones under each name), the unique ones, the
    buffers, GPTConfig's dataclass fields, and with ``values`` every parameter's values."""
    cls = attribute(module, "GPTConfig")
    every = _parameters(gpt)
    return {"every": [[n, list(_shape(p))] for n, p in every.items()],
            "unique": [[n, list(_shape(p))] for n, p in gpt.named_parameters()],
            "buffers": [[n, list(_shape(b))] for n, b in gpt.named_buffers()],
            "config_fields": [f.name for f in dataclasses.fields(cls)] if dataclasses.is_dataclass(cls) else None,
            "values": {n: _array(p) for n, p in every.items()} if values else None}


def _tokens(out, what):
    torch = _torch()
    if not torch.is_tensor(out):
        _fail(f"{what} should return a LongTensor, got a {type(out).__name__}", "bad_output")
    return {"tokens": out.detach().cpu().numpy(), "dtype": str(out.dtype), "shape": list(out.shape)}


def call_generate(gpt, module, idx, max_new_tokens, temperature=1.0, top_k=None, seed=0, global_seed=0):
    torch = _torch()
    torch.manual_seed(int(global_seed))  # a generate that ignores the generator drifts with this
    g = None if seed is None else torch.Generator().manual_seed(int(seed))
    out = gpt.generate(_long(idx), int(max_new_tokens), temperature=temperature, top_k=top_k, generator=g)
    return _tokens(out, "GPT.generate")


def call_perplexity(gpt, module, windows):
    torch = _torch()
    value = attribute(module, "perplexity")(gpt, _long(windows))
    kind = type(value).__name__
    if torch.is_tensor(value) and value.numel() == 1:
        value = value.item()
    if not isinstance(value, (int, float, np.floating, np.integer)) or isinstance(value, bool):
        _fail(f"perplexity should return a float, got a {kind}", "bad_output")
    return {"value": float(value), "type": kind}


def call_gradient(gpt, module, idx, t, r):
    """d(r . logits[:, t, :]) / d(token embeddings) (B, T, C), with the logits, for r (B, V) the parent chose."""
    torch = _torch()
    seen = {}

    def leaf(x):
        seen["emb"] = x.detach().requires_grad_(True)
        return seen["emb"]

    def on_wte(_module, _inputs, output):  # the token embeddings (B, T, C)
        return leaf(output) if "emb" not in seen and torch.is_tensor(output) else None

    def on_block(_module, args):  # or, if wte is not called as a module, the first block's input
        return (leaf(args[0]), *args[1:]) if "emb" not in seen and args and torch.is_tensor(args[0]) else None

    handles = [gpt.get_submodule("transformer.wte").register_forward_hook(on_wte),
               gpt.get_submodule("transformer.h.0").register_forward_pre_hook(on_block)]
    try:
        with torch.enable_grad():
            logits = _every_position(gpt, idx, _forward(gpt, idx)[0], "the gradient probe", seen.clear)
    finally:
        for h in handles:
            h.remove()
    if "emb" not in seen:
        _fail("GPT.forward called neither transformer.wte nor transformer.h[0], so it cannot be probed")
    if not logits.requires_grad:
        _fail("GPT.forward's logits carry no gradient (is forward running under torch.no_grad?)")
    (logits[:, int(t), :].float() * torch.as_tensor(np.asarray(r, dtype=np.float32))).sum().backward()
    grad = seen["emb"].grad
    return {"grad": np.zeros(_shape(seen["emb"]), np.float32) if grad is None else _array(grad),
            "logits": _array(logits)}


CALLS = {"forward": call_forward, "parameters": call_parameters, "generate": call_generate,
         "perplexity": call_perplexity, "gradient": call_gradient}


@op
def gpt(model, calls, module="gpt"):
    """Build the student's GPT as ``model`` says, then make ``calls`` on it in order; one raw result
    per call. A call with ``"catch": True`` returns what it raised ({"raised": [class names], "message"})
    instead of failing the op."""
    built = _build(module, model)
    results = []
    for request in calls:
        request = dict(request)
        fn, catch = CALLS[request.pop("fn")], request.pop("catch", False)
        try:
            results.append(dict(fn(built, module, **request), raised=None) if catch else fn(built, module, **request))
        except StudentCodeError:
            raise
        except Exception as e:  # student code may raise anything: the parent judges it
            if not catch:
                raise
            results.append({"raised": _mro(e), "message": str(e)[:500]})
    return results


@op
def sample(logits, temperature=1.0, top_k=None, n_draws=None, seed=0, global_seed=0, catch=False, module="gpt"):
    """sample_next_token on ``logits`` (B, V), or on (V,) replicated to B = n_draws rows."""
    torch = _torch()
    fn = attribute(module, "sample_next_token")
    x = torch.tensor(np.asarray(logits, dtype=np.float32))
    if n_draws is not None:
        x = x.reshape(1, -1).repeat(int(n_draws), 1)  # (B, V), B = n_draws
    torch.manual_seed(int(global_seed))  # a sampler that ignores the generator drifts with this
    g = None if seed is None else torch.Generator().manual_seed(int(seed))
    try:
        out = fn(x, temperature=temperature, top_k=top_k, generator=g)
    except Exception as e:  # student code may raise anything
        if catch:
            return {"raised": _mro(e), "message": str(e)[:500]}
        raise
    return dict(_tokens(out, "sample_next_token"), raised=None)


def _training_logits(gpt, x):
    """Every position's logits (B, T, V) for the training loss, even from a model whose forward(idx)
    gives the last one only (that shape is test 2.2.1's business alone)."""
    return _every_position(gpt, x, _forward(gpt, x)[0], "the grader's training run")


@op
def train(model, tokens, starts, lr, warmup=0, min_lr_frac=1.0, grad_clip=None, module="gpt"):
    """The grader's training run on the student's GPT (training.train, one thread); returns the
    trained weights by parameter name and the losses. The parent checks the weights itself."""
    from .training import train as run
    _torch()
    built = _build(module, model)
    losses = run(built, tokens, starts, block_size=model["config"]["block_size"], lr=lr, warmup=warmup,
                 min_lr_frac=min_lr_frac, grad_clip=grad_clip, logits_of=_training_logits)
    return {"weights": {n: _array(p) for n, p in _parameters(built).items()}, "losses": losses}
