"""
HW11: train your GPT (gpt.py) on text, and look at what it learned.

    python train.py                                   # the synthetic language, about a minute
    python train.py --steps 300 --out out/quick       # a quick look
    python train.py --corpus mybook.txt --steps 5000 --n-layer 4 --n-embd 128 --block-size 128
    python train.py --help                            # every option, with its default

It trains on one CPU thread (--threads 1): a model this small gains little from more, and on
a busy machine several threads wait on each other and run 5-10 times slower. On an idle
machine with free cores, --threads 2 (or 0, torch's choice) may be faster.

By default the model learns corpus.py's synthetic language, whose best possible loss (its
entropy, in nats per character) is known exactly, so you can see how close you got.
--corpus trains on any UTF-8 text file instead (90% for training, the last 10% to validate).

Writes into --out (default out/):
    loss.png      training and validation loss, and validation perplexity, against steps
    samples.txt   continuations of a few prompts, greedy and at temperatures 0.5, 1.0, 1.5
    model.pt      torch.save({"model": state_dict, "config": GPTConfig fields, "chars": ...})

Load a checkpoint back with:
    ckpt = torch.load("out/model.pt")
    model = GPT(GPTConfig(**ckpt["config"])); model.load_state_dict(ckpt["model"])
    tokenizer = CharTokenizer(ckpt["chars"])
"""

import argparse
import dataclasses
import math
import os
import sys
import time

import corpus
import numpy as np
import torch
from corpus import CharTokenizer
from gpt import GPT, GPTConfig, perplexity
from torch.nn import functional as F

SYNTHETIC_PROMPTS = ("\n", "the dog", "the cats near the", "the owl that the bees")
TEMPERATURES = (0.0, 0.5, 1.0, 1.5)  # 0.0 is greedy: always the most likely token


# ----------------------------------------------------------------------------- data

def load_data(args):
    """(tokenizer, train ids, val ids, val sentences or None, prompts) as NumPy int64 arrays.

    The synthetic corpus draws fresh training and validation sentences from different seeds;
    a text file is split 90/10 (the validation part is the end of the file)."""
    if args.corpus is None:
        tok = CharTokenizer.for_language()
        train_text = corpus.generate_text(args.train_sentences, seed=args.seed)
        val_sentences = corpus.generate_sentences(1000, seed=args.seed + 10_000)
        val_text = "".join(s + corpus.SEPARATOR for s in val_sentences)
        prompts = SYNTHETIC_PROMPTS
    else:
        try:
            text = corpus.load_text(args.corpus)
        except (OSError, ValueError) as e:
            raise SystemExit(f"cannot train on --corpus {args.corpus}: {e}") from None
        tok = CharTokenizer.from_text(text)
        cut = int(0.9 * len(text))
        train_text, val_text, val_sentences = text[:cut], text[cut:], None
        if min(len(train_text), len(val_text)) < args.block_size + 2:
            raise SystemExit(
                f"{args.corpus} has {len(text)} characters: too short to cut into training and "
                f"validation windows of {args.block_size + 1}; use a longer text or a "
                f"smaller --block-size")
        prompts = _prompts_from(val_text)
    train_ids = np.array(tok.encode(train_text), dtype=np.int64)
    val_ids = np.array(tok.encode(val_text), dtype=np.int64)
    return tok, train_ids, val_ids, val_sentences, prompts


def _prompts_from(text, n=3, length=12):
    """A few prompts cut from the start of lines of `text` (or from anywhere)."""
    starts = [i + 1 for i, c in enumerate(text[:-length]) if c == "\n" and text[i + 1].strip()]
    starts = starts or list(range(0, len(text) - length, max(1, (len(text) - length) // n)))
    step = max(1, len(starts) // n)
    return tuple(text[s:s + length] for s in starts[::step][:n])


def get_batch(ids, block_size, batch_size, rng):
    """Random windows of the token stream: x, y LongTensors (B, T), y is x shifted by one."""
    starts = rng.integers(0, len(ids) - block_size - 1, size=batch_size)
    chunk = ids[starts[:, None] + np.arange(block_size + 1)]  # (B, T + 1)
    chunk = torch.from_numpy(chunk)
    return chunk[:, :-1], chunk[:, 1:]


def val_windows(ids, block_size, n=200):
    """Up to n evenly spaced windows (N, T + 1) of the validation stream."""
    last = len(ids) - block_size - 1
    starts = np.linspace(0, last, num=min(n, last + 1)).astype(np.int64)
    return torch.from_numpy(ids[starts[:, None] + np.arange(block_size + 1)])


# ----------------------------------------------------------------------------- training

def configure_optimizer(model, lr, weight_decay=0.1):
    """AdamW as in GPT-2: weight decay on the matrices only, not on biases and LayerNorms."""
    params = [p for p in model.parameters() if p.requires_grad]
    groups = [
        {"params": [p for p in params if p.dim() >= 2], "weight_decay": weight_decay},
        {"params": [p for p in params if p.dim() < 2], "weight_decay": 0.0},
    ]
    return torch.optim.AdamW(groups, lr=lr, betas=(0.9, 0.99))


def lr_at(step, steps, lr, warmup=50, min_frac=0.1):
    """Learning rate at `step`: linear warmup, then cosine decay to min_frac * lr."""
    if step < warmup:
        return lr * (step + 1) / warmup
    progress = (step - warmup) / max(1, steps - warmup)
    return lr * (min_frac + (1 - min_frac) * 0.5 * (1 + math.cos(math.pi * progress)))


def train_step(model, optimizer, x, y, lr, grad_clip=1.0):
    """One step of gradient descent on the batch (x, y); returns the loss as a float."""
    for group in optimizer.param_groups:
        group["lr"] = lr
    model.train()
    _, loss = model(x, y)
    optimizer.zero_grad(set_to_none=True)
    loss.backward()
    if grad_clip:
        torch.nn.utils.clip_grad_norm_(model.parameters(), grad_clip)
    optimizer.step()
    return loss.item()


@torch.no_grad()
def sentence_loss(model, tok, sentences, block_size):
    """Mean loss per character (nats) over whole sentences, each read from its start, the
    separator after it included: directly comparable with corpus.entropy_per_char()."""
    sep = tok.stoi[corpus.SEPARATOR]
    rows = [[sep] + tok.encode(s + corpus.SEPARATOR) for s in sentences]
    width = max(map(len, rows))
    if width > block_size + 1:  # only with a tiny --block-size: cut the longest sentences
        rows = [r[:block_size + 1] for r in rows]
        width = block_size + 1
    batch = torch.full((len(rows), width), sep, dtype=torch.long)
    counted = torch.zeros(len(rows), width - 1, dtype=torch.bool)
    for i, r in enumerate(rows):
        batch[i, :len(r)] = torch.tensor(r)
        counted[i, :len(r) - 1] = True
    was_training = model.training
    model.eval()
    logits, _ = model(batch[:, :-1])  # (N, W - 1, V)
    model.train(was_training)
    nll = F.cross_entropy(logits.transpose(1, 2), batch[:, 1:], reduction="none")  # (N, W - 1)
    return (nll[counted].sum() / counted.sum()).item()


# ----------------------------------------------------------------------------- output

def _progress(step, steps, loss, tokens_per_s, elapsed, extra=""):
    left = elapsed / max(step, 1) * (steps - step)
    return (f"step {step:>5}/{steps} | loss {loss:.4f}{extra} | {tokens_per_s:,.0f} tok/s | "
            f"{int(left) // 60}:{int(left) % 60:02d} left")


class Progress:
    """Prints progress lines: one per evaluation, the first after FIRST steps (within
    seconds), and in between one every EVERY seconds, so a slow run is never silent.
    On a terminal the in-between lines overwrite each other; in a file or pipe each is a
    line of its own."""

    FIRST = 10  # steps before the first line
    EVERY = 10.0  # seconds between lines in a file or pipe (a terminal: 0.25)

    def __init__(self, steps, tokens_per_step, interactive):
        self.steps, self.tokens_per_step, self.interactive = steps, tokens_per_step, interactive
        self.start = self.last_time = self.last_print = time.perf_counter()
        self.last_step, self.recent = 0, []
        self.every = 0.25 if interactive else self.EVERY

    def step(self, step, loss, extra=None):
        """Record step `step`'s loss; print a line when due. `extra` (the evaluation's
        text, or None) makes the line permanent and starts a new speed measurement."""
        self.recent.append(loss)
        now = time.perf_counter()
        if extra is None and not (step == self.FIRST or now - self.last_print >= self.every):
            return
        speed = self.tokens_per_step * (step - self.last_step) / max(now - self.last_time, 1e-9)
        line = _progress(step, self.steps, float(np.mean(self.recent)), speed,
                         now - self.start, extra or "")
        if self.interactive:
            print("\r" + line + "\033[K", end="\n" if extra is not None else "", flush=True)
        else:
            print(line, flush=True)
        self.last_print = now
        if extra is not None:
            self.last_step, self.last_time, self.recent = step, time.perf_counter(), []

    def seconds(self):
        return time.perf_counter() - self.start


def _plain_log_ticks(ax):
    """Label the log-scale y axis of `ax` with plain numbers (0.4, 1, 2.5), not 4x10^-1:
    matplotlib still decides which ticks get a label, only the text changes."""
    from matplotlib.ticker import LogFormatter

    class Plain(LogFormatter):
        def __call__(self, x, pos=None):
            return f"{x:g}" if super().__call__(x, pos) else ""

    ax.yaxis.set_major_formatter(Plain())
    ax.yaxis.set_minor_formatter(Plain(labelOnlyBase=False, minor_thresholds=(1, 0.4)))


def plot(history, bound, path):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, (ax_loss, ax_ppl) = plt.subplots(1, 2, figsize=(11, 4))
    ax_loss.plot(history["step"], history["train"], label="training loss")
    ax_loss.plot(history["eval_step"], history["val"], "o-",
                 label="validation loss (random windows)")
    if history["sentences"]:
        ax_loss.plot(history["eval_step"], history["sentences"], "s-",
                     label="validation loss, whole sentences")
    if bound is not None:
        ax_loss.axhline(bound, color="k", ls="--", label=f"entropy bound {bound:.4f}")
    ax_loss.set(xlabel="step", ylabel="loss (nats per character)", yscale="log",
                title="loss")
    _plain_log_ticks(ax_loss)
    ax_loss.legend()
    ax_ppl.plot(history["eval_step"], np.exp(history["val"]), "o-",
                label="validation perplexity (random windows)")
    if bound is not None:
        ax_ppl.axhline(math.exp(bound), color="k", ls="--",
                       label=f"exp(entropy bound) = {math.exp(bound):.3f}")
    ax_ppl.set(xlabel="step", ylabel="perplexity", yscale="log", title="validation perplexity")
    _plain_log_ticks(ax_ppl)
    ax_ppl.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)


def write_samples(model, tok, prompts, path, max_new_tokens, seed, synthetic):
    """Continue every prompt at every temperature; returns {temperature: fraction of the
    generated synthetic sentences that are in the language} (empty for other corpora)."""
    model.eval()
    generator = torch.Generator().manual_seed(seed)
    judged = {}
    lines = []
    for temperature in TEMPERATURES:
        name = "greedy (temperature 0)" if temperature == 0 else f"temperature {temperature}"
        lines.append(f"==================== {name} ====================\n")
        good = total = 0
        for prompt in prompts:
            idx = torch.tensor([tok.encode(prompt)], dtype=torch.long)
            out = model.generate(idx, max_new_tokens, temperature=temperature,
                                 generator=generator)
            text = tok.decode(out[0].tolist())
            lines.append(f"--- prompt {prompt!r}\n{text}\n")
            if synthetic:  # every synthetic prompt starts a sentence (or is a separator)
                sentences = corpus.split_sentences(text.lstrip(corpus.SEPARATOR))
                good += sum(map(corpus.is_sentence, sentences))
                total += len(sentences)
        if synthetic:
            judged[temperature] = (good, total)
            lines.append(f"({good} of {total} complete sentences are in the language)\n\n")
    with open(path, "w", encoding="utf-8") as f:
        f.writelines(lines)
    return judged


# ----------------------------------------------------------------------------- main

def parse_args(argv=None):
    ap = argparse.ArgumentParser(description="Train gpt.py's GPT on a corpus of characters.",
                                 formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    ap.add_argument("--corpus", help="a UTF-8 text file to train on; None: the synthetic "
                                     "language of corpus.py")
    ap.add_argument("--out", default="out", help="output folder")
    ap.add_argument("--steps", type=int, default=1200, help="training steps")
    ap.add_argument("--batch-size", type=int, default=32, help="windows per step")
    ap.add_argument("--lr", type=float, default=1e-2, help="peak learning rate")
    ap.add_argument("--block-size", type=int, default=64, help="context length T")
    ap.add_argument("--n-layer", type=int, default=2, help="transformer blocks")
    ap.add_argument("--n-head", type=int, default=4, help="attention heads per block")
    ap.add_argument("--n-embd", type=int, default=64, help="width C of the residual stream")
    ap.add_argument("--dropout", type=float, default=0.0, help="dropout probability")
    ap.add_argument("--seed", type=int, default=0, help="seed of the data, weights and samples")
    ap.add_argument("--eval-every", type=int, default=100, help="steps between evaluations")
    ap.add_argument("--sample-tokens", type=int, default=200,
                    help="new tokens per sample in samples.txt")
    ap.add_argument("--train-sentences", type=int, default=50_000,
                    help="size of the synthetic training text, in sentences")
    ap.add_argument("--threads", type=int, default=1,
                    help="torch CPU threads; 1 is fastest for small models on a busy machine, "
                         "0 lets torch choose (one per core)")
    args = ap.parse_args(argv)
    if args.steps < 1 or args.eval_every < 1:
        ap.error("--steps and --eval-every must be at least 1")
    if args.threads < 0:
        ap.error(f"--threads must be 0 (torch's choice) or more, got {args.threads}")
    return args


def main(argv=None):
    args = parse_args(argv)
    if args.threads:
        torch.set_num_threads(args.threads)
    torch.manual_seed(args.seed)
    rng = np.random.default_rng(args.seed)
    os.makedirs(args.out, exist_ok=True)

    tok, train_ids, val_ids, val_sentences, prompts = load_data(args)
    synthetic = val_sentences is not None
    bound = corpus.entropy_per_char() if synthetic else None
    config = GPTConfig(vocab_size=tok.vocab_size, block_size=args.block_size,
                       n_layer=args.n_layer, n_head=args.n_head, n_embd=args.n_embd,
                       dropout=args.dropout)
    model = GPT(config)
    optimizer = configure_optimizer(model, args.lr)
    windows = val_windows(val_ids, args.block_size)
    n_params = sum(p.numel() for p in model.parameters())
    print(f"corpus: {args.corpus or 'synthetic language (corpus.py)'}, "
          f"{len(train_ids):,} training characters, vocabulary {tok.vocab_size}")
    threads = torch.get_num_threads()
    print(f"model: {config}, {n_params:,} parameters; "
          f"{threads} torch thread{'s' if threads != 1 else ''} (--threads)")
    if synthetic:
        print(f"entropy bound: no model can get a loss below {bound:.4f} nats/char "
              f"(perplexity {math.exp(bound):.4f})")

    history = {"step": [], "train": [], "eval_step": [], "val": [], "sentences": []}
    print(f"training {args.steps} steps of {args.batch_size} windows x {args.block_size} tokens, "
          f"evaluating every {args.eval_every} steps", flush=True)
    progress = Progress(args.steps, args.batch_size * args.block_size, sys.stdout.isatty())
    for step in range(1, args.steps + 1):
        x, y = get_batch(train_ids, args.block_size, args.batch_size, rng)
        loss = train_step(model, optimizer, x, y, lr_at(step - 1, args.steps, args.lr))
        history["step"].append(step)
        history["train"].append(loss)
        extra = None
        if step % args.eval_every == 0 or step == args.steps:
            val = math.log(perplexity(model, windows))
            history["eval_step"].append(step)
            history["val"].append(val)
            extra = f" | val {val:.4f}"
            if synthetic:
                whole = sentence_loss(model, tok, val_sentences, args.block_size)
                history["sentences"].append(whole)
                extra += f" | sentences {whole:.4f} (bound {bound:.4f})"
        progress.step(step, loss, extra)
    print(f"trained {args.steps} steps in {progress.seconds():.1f}s")

    plot(history, bound, os.path.join(args.out, "loss.png"))
    judged = write_samples(model, tok, prompts, os.path.join(args.out, "samples.txt"),
                           args.sample_tokens, args.seed, synthetic)
    torch.save({"model": model.state_dict(), "config": dataclasses.asdict(config),
                "chars": tok.chars, "steps": args.steps},
               os.path.join(args.out, "model.pt"))
    for temperature, (good, total) in judged.items():
        print(f"temperature {temperature}: {good}/{total} sampled sentences in the language")
    print(f"wrote {args.out}/loss.png, {args.out}/samples.txt, {args.out}/model.pt")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
