"""The second main job: a character-level GPT trained on Python's own documentation.

``python -m tapegrad demo gpt`` trains a small GPT (causal self-attention through
``F.scaled_dot_product_attention``, pre-norm blocks, AdamW with weight-decay groups,
``clip_grad_norm_``, a warm-up then cosine learning-rate schedule) on the text of
``pydoc_data.topics`` (about 465,000 characters of the Python reference that ships with
every CPython: no download, the same on every machine with the same Python), shows a
tqdm bar, prints the validation loss beside a bigram baseline's, samples a few lines,
and writes a loss plot.

The model is written once against a torch-like namespace (``build(tm)`` with
``tm = tapegrad`` or ``torch``), so the benchmark in ``benchmarks/gpt_step.py`` times
the very same network in both libraries.
"""

from __future__ import annotations

import json
import math
import pathlib
import time

import numpy as np

import tapegrad as tg


def load_text() -> str:
    """Python's reference documentation (``pydoc_data.topics``), topics in sorted order."""
    from pydoc_data.topics import topics  # noqa: PLC0415 - ships with CPython

    return "".join(topics[k] for k in sorted(topics))


def encode(text: str):
    chars = sorted(set(text))
    stoi = {c: i for i, c in enumerate(chars)}
    data = np.fromiter((stoi[c] for c in text), dtype=np.int64, count=len(text))
    return data, chars


def build(
    tm,
    vocab_size: int,
    block_size: int = 64,
    n_layer: int = 2,
    n_head: int = 4,
    n_embd: int = 64,
    dropout: float = 0.0,
):
    """A GPT over ``tm`` (``tapegrad`` or ``torch``): token + position embeddings, ``n_layer``
    pre-norm blocks of causal self-attention and a 4x GELU MLP, a final LayerNorm and a
    linear head tied to the token embedding."""
    nn, F = tm.nn, tm.nn.functional

    class CausalSelfAttention(nn.Module):
        def __init__(self):
            super().__init__()
            self.c_attn = nn.Linear(n_embd, 3 * n_embd)
            self.c_proj = nn.Linear(n_embd, n_embd)
            self.resid_dropout = nn.Dropout(dropout)

        def forward(self, x):
            B, T, C = x.shape
            q, k, v = self.c_attn(x).split(n_embd, dim=2)
            q = q.view(B, T, n_head, C // n_head).transpose(1, 2)
            k = k.view(B, T, n_head, C // n_head).transpose(1, 2)
            v = v.view(B, T, n_head, C // n_head).transpose(1, 2)
            p = dropout if self.training else 0.0
            y = F.scaled_dot_product_attention(q, k, v, dropout_p=p, is_causal=True)
            y = y.transpose(1, 2).reshape(B, T, C)
            return self.resid_dropout(self.c_proj(y))

    class Block(nn.Module):
        def __init__(self):
            super().__init__()
            self.ln_1 = nn.LayerNorm(n_embd)
            self.attn = CausalSelfAttention()
            self.ln_2 = nn.LayerNorm(n_embd)
            self.mlp = nn.Sequential(
                nn.Linear(n_embd, 4 * n_embd),
                nn.GELU(),
                nn.Linear(4 * n_embd, n_embd),
                nn.Dropout(dropout),
            )

        def forward(self, x):
            x = x + self.attn(self.ln_1(x))
            return x + self.mlp(self.ln_2(x))

    class GPT(nn.Module):
        def __init__(self):
            super().__init__()
            self.block_size = block_size
            self.wte = nn.Embedding(vocab_size, n_embd)
            self.wpe = nn.Embedding(block_size, n_embd)
            self.drop = nn.Dropout(dropout)
            self.h = nn.ModuleList([Block() for _ in range(n_layer)])
            self.ln_f = nn.LayerNorm(n_embd)
            self.lm_head = nn.Linear(n_embd, vocab_size, bias=False)
            self.lm_head.weight = self.wte.weight  # weight tying, as nanoGPT
            for name, p in self.named_parameters():
                if name.endswith("c_proj.weight"):
                    nn.init.normal_(p, mean=0.0, std=0.02 / math.sqrt(2 * n_layer))
                elif p.dim() >= 2:
                    nn.init.normal_(p, mean=0.0, std=0.02)
                elif name.endswith("bias"):
                    nn.init.zeros_(p)

        def forward(self, idx, targets=None):
            B, T = idx.shape
            pos = tm.arange(0, T, dtype=tm.long)
            x = self.drop(self.wte(idx) + self.wpe(pos))
            for block in self.h:
                x = block(x)
            logits = self.lm_head(self.ln_f(x))
            if targets is None:
                return logits, None
            loss = F.cross_entropy(logits.view(-1, logits.size(-1)), targets.view(-1))
            return logits, loss

    return GPT()


def optimizer_for(tm, model, lr: float, weight_decay: float = 0.1):
    """AdamW with two groups, as nanoGPT: matrices decay, biases and LayerNorm gains do not."""
    params = {id(p): p for p in model.parameters() if p.requires_grad}.values()
    decay = [p for p in params if p.dim() >= 2]
    no_decay = [p for p in params if p.dim() < 2]
    groups = [
        {"params": decay, "weight_decay": weight_decay},
        {"params": no_decay, "weight_decay": 0.0},
    ]
    return tm.optim.AdamW(groups, lr=lr, betas=(0.9, 0.95))


def get_batch(data: np.ndarray, batch_size: int, block_size: int, rng):
    ix = rng.integers(0, len(data) - block_size - 1, batch_size)
    x = np.stack([data[i : i + block_size] for i in ix])
    y = np.stack([data[i + 1 : i + 1 + block_size] for i in ix])
    return x, y


def bigram_loss(train: np.ndarray, val: np.ndarray, vocab: int) -> float:
    """Validation cross-entropy (nats/char) of the best bigram model of the training text
    (counts with add-one smoothing): the baseline a GPT must beat."""
    counts = np.ones((vocab, vocab))
    np.add.at(counts, (train[:-1], train[1:]), 1)
    logp = np.log(counts / counts.sum(1, keepdims=True))
    return float(-logp[val[:-1], val[1:]].mean())


def evaluate(model, data, batch_size, block_size, batches=8, seed=1) -> float:
    rng = np.random.default_rng(seed)
    model.eval()
    losses = []
    with tg.no_grad():
        for _ in range(batches):
            x, y = get_batch(data, batch_size, block_size, rng)
            _, loss = model(tg.from_numpy(x), tg.from_numpy(y))
            losses.append(loss.item())
    model.train()
    return float(np.mean(losses))


def generate(model, start: np.ndarray, n: int, temperature: float = 0.8) -> np.ndarray:
    idx = tg.from_numpy(start[None, :])
    model.eval()
    with tg.no_grad():
        for _ in range(n):
            cond = idx[:, -model.block_size :]
            logits, _ = model(cond)
            probs = tg.softmax(logits[:, -1, :] / temperature, dim=-1)
            nxt = tg.multinomial(probs, num_samples=1)
            idx = tg.cat([idx, nxt], dim=1)
    model.train()
    return idx.numpy()[0]


def run(*args, **kwargs) -> dict:
    """Train with BLAS on one thread (small GEMMs: threads cost more than they give here)."""
    from threadpoolctl import threadpool_limits  # noqa: PLC0415 - ships with scikit-learn

    with threadpool_limits(limits=1, user_api="blas"):
        return train(*args, **kwargs)


def train(
    steps: int = 1500,
    seed: int = 0,
    out_dir: str = "demo_output",
    batch_size: int = 16,
    block_size: int = 64,
    lr: float = 3e-3,
    progress: bool = True,
    eval_every: int = 250,
    sample_len: int = 80,
) -> dict:
    """Train the GPT; returns (and writes as gpt_summary.json) the losses and the samples."""
    from tqdm import tqdm  # noqa: PLC0415 - optional 'demo' extra

    out = pathlib.Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    tg.manual_seed(seed)
    data, chars = encode(load_text())
    split = int(0.9 * len(data))
    train_data, val_data = data[:split], data[split:]
    vocab = len(chars)
    baseline = bigram_loss(train_data, val_data, vocab)
    model = build(tg, vocab, block_size=block_size)
    opt = optimizer_for(tg, model, lr)
    warmup = max(1, steps // 20)

    def lr_at(step):  # linear warm-up, then cosine down to 10%
        if step < warmup:
            return (step + 1) / warmup
        progress_ = (step - warmup) / max(1, steps - warmup)
        return 0.1 + 0.9 * 0.5 * (1 + math.cos(math.pi * progress_))

    sched = tg.optim.lr_scheduler.LambdaLR(opt, lr_at)
    rng = np.random.default_rng(seed)
    history = {"step": [], "train": [], "val": []}
    running = None
    start = time.perf_counter()
    bar = tqdm(range(steps), desc="gpt", disable=not progress)
    for step in bar:
        x, y = get_batch(train_data, batch_size, block_size, rng)
        _, loss = model(tg.from_numpy(x), tg.from_numpy(y))
        opt.zero_grad(set_to_none=True)
        loss.backward()
        tg.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        sched.step()
        value = loss.item()
        running = value if running is None else 0.95 * running + 0.05 * value
        bar.set_postfix(loss=f"{running:.3f}")
        if (step + 1) % eval_every == 0 or step + 1 == steps:
            history["step"].append(step + 1)
            history["train"].append(running)
            history["val"].append(evaluate(model, val_data, batch_size, block_size))
            if not progress:
                print(f"step {step + 1:5d}  train {running:.3f}  val {history['val'][-1]:.3f}")
    seconds = time.perf_counter() - start
    val = history["val"][-1]
    print(
        f"validation loss (nats/char): GPT {val:.3f}  vs  bigram baseline {baseline:.3f}  "
        f"({steps} steps, {seconds:.1f} s)"
    )
    samples = []
    prompt_rng = np.random.default_rng(seed + 1)
    for _ in range(3):
        i = int(prompt_rng.integers(0, len(val_data) - 8))
        ids = generate(model, val_data[i : i + 8], sample_len)
        samples.append("".join(chars[j] for j in ids))
    print("samples:")
    for s in samples:
        print("  " + s.replace("\n", " "))
    _plot(history, baseline, out / "gpt_loss.png")
    summary = {
        "val_loss": val,
        "bigram_val_loss": baseline,
        "steps": steps,
        "train_seconds": round(seconds, 2),
        "history": history,
        "samples": samples,
    }
    (out / "gpt_summary.json").write_text(json.dumps(summary, indent=2))
    print(f"wrote {out / 'gpt_loss.png'}")
    return summary


def _plot(history: dict, baseline: float, path: pathlib.Path) -> None:
    import matplotlib  # noqa: PLC0415 - optional 'demo' extra

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt  # noqa: PLC0415

    fig, ax = plt.subplots(figsize=(6, 3.5))
    ax.plot(history["step"], history["train"], marker="o", label="train (running)")
    ax.plot(history["step"], history["val"], marker="s", label="validation")
    ax.axhline(baseline, color="grey", linestyle="--", label="bigram baseline (val)")
    ax.set(title="char-level GPT on pydoc topics", xlabel="step", ylabel="nats / char")
    ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)
