"""The generation-quality case: what the grader's training run gets, and how the parent judges
the weights it returns (docs/CALIBRATION.md says how the numbers were chosen).

The worker trains the student's GPT with the one loop (``sandbox/worker/training.py``) on the
training stream and returns the weights. The validation sentences never leave the parent: it
computes the validation loss and draws the samples itself, with the trusted NumPy GPT-2 of
``checks/gpt2.py``, once it has checked on fresh inputs that the student's model with those
weights computes what that architecture computes.
"""
from dataclasses import dataclass

import numpy as np

from .. import gpt2
from . import weights

QUALITY = dict(n_layer=2, n_head=4, n_embd=48, block_size=48, batch_size=32, aligned=1, lr=2e-2, warmup=20,
               min_lr_frac=0.1, steps=300, grad_clip=1.0, train_sentences=20000, val_sentences=2000,
               sample_rows=64, sample_tokens=0, temperature=0.8, seed=0)
THRESHOLDS = dict(val_loss_margin=0.02, in_language_min=0.8, distinct_min=0.8, looping_rows_max=3,
                  min_sentences=32, timeout=120.0)


@dataclass
class Data:
    config: dict          # GPTConfig of the trained model
    init: dict            # the starting weights, by name (nanoGPT layout)
    tokens: np.ndarray    # the training stream (N,)
    starts: np.ndarray    # each step's batch starts (steps, B)
    val: np.ndarray       # (N, W): separator, sentence, separator, padding
    counted: np.ndarray   # (N, W - 1): the predictions that count (not the padding)
    tok: object           # the corpus's tokenizer
    sep: int


def data(corpus, q=QUALITY):
    tok = corpus.CharTokenizer.for_language()
    sep, T, B = tok.stoi[corpus.SEPARATOR], q["block_size"], q["batch_size"]
    train = np.array(tok.encode(corpus.generate_text(q["train_sentences"], seed=1)), dtype=np.int64)
    rows = [[sep] + tok.encode(s + corpus.SEPARATOR) for s in corpus.generate_sentences(q["val_sentences"], seed=2)]
    width = max(map(len, rows))
    if width > T + 1:
        raise ValueError(f"block_size {T} is too small for whole validation sentences ({width - 1})")
    val = np.full((len(rows), width), sep, dtype=np.int64)
    counted = np.zeros((len(rows), width - 1), dtype=bool)
    for i, r in enumerate(rows):
        val[i, :len(r)] = r
        counted[i, :len(r) - 1] = True
    rng = np.random.default_rng(q["seed"])
    candidates = np.flatnonzero(train[: len(train) - T - 1] == sep) if q["aligned"] else np.arange(len(train) - T - 1)
    starts = np.stack([candidates[rng.integers(0, len(candidates), size=B)] for _ in range(q["steps"])])
    config = dict(vocab_size=tok.vocab_size, block_size=T, n_layer=q["n_layer"], n_head=q["n_head"], n_embd=q["n_embd"])
    return Data(config, weights.init(config, q["seed"]), train, starts, val, counted, tok, sep)


def train_args(d, q, layout="out_in"):
    """The worker op ``train``'s arguments (the starting weights in the model's own layout)."""
    return dict(model=dict(config=d.config, weights=weights.to_layout(d.init, layout)), tokens=d.tokens,
                starts=d.starts, lr=q["lr"], warmup=q["warmup"], min_lr_frac=q["min_lr_frac"], grad_clip=q["grad_clip"])


def val_loss(w, d, bug=None):
    """Mean next-character NLL over the validation sentences, padding left out (nanoGPT-layout ``w``)."""
    z = gpt2.logits_in_chunks(w, d.val[:, :-1], d.config["n_head"], bug)  # (N, W - 1, V)
    return gpt2.cross_entropy(z, d.val[:, 1:], d.counted)


def samples(w, d, q, bug=None):
    """``sample_rows`` rows of ``block_size - 1`` characters after one separator, drawn here at
    ``temperature`` with the parent's own generator (the context never needs cropping)."""
    n = q["sample_tokens"] or d.config["block_size"] - 1
    prompt = np.full((q["sample_rows"], 1), d.sep, dtype=np.int64)
    rows = gpt2.sample(w, d.config["n_head"], prompt, n, q["temperature"], np.random.default_rng(q["seed"]),
                       d.config["block_size"], bug)
    return rows[:, 1:]


def judge(rows, tok, corpus):
    """Sentences of the samples, the fraction in the language, distinct, and looping rows."""
    sentences, looping = [], 0
    for row in rows:
        got = corpus.split_sentences(tok.decode([int(t) for t in row]))
        sentences += got
        if len(got) >= 2 and len(set(got)) <= len(got) / 2:  # a row repeating itself
            looping += 1
    n = len(sentences)
    return {"sentences": sentences, "n": n, "looping": looping,
            "in_language": sum(map(corpus.is_sentence, sentences)) / n if n else 0.0,
            "distinct": len(set(sentences)) / n if n else 0.0}


def evaluate(w, d, q, corpus, bug=None):
    """(validation loss, ``judge`` of the samples) of nanoGPT-layout weights ``w``, both computed
    here with the NumPy GPT-2 (``bug``: a deliberate mistake of ``checks/gpt2.py``'s)."""
    return val_loss(w, d, bug), judge(samples(w, d, q, bug), d.tok, corpus)


def record(run, corpus, q=QUALITY):
    """Train the reference with the grader's run and judge it as a student is judged: the
    recorded threshold is the reference's own validation loss, computed here."""
    d = data(corpus, q)
    trained = run("train", **train_args(d, q))
    w = weights.from_layout(trained["weights"], "out_in")
    loss, judged = evaluate(w, d, q, corpus)
    return dict(q, **THRESHOLDS, reference_val_loss=loss, reference_val_ppl=float(np.exp(loss)),
                reference_in_language=judged["in_language"], reference_distinct=judged["distinct"],
                entropy_per_char=corpus.entropy_per_char())
