"""The main job: train a small CNN on scikit-learn's bundled 8x8 digits.

Loads the 1,797 digit images that ship inside scikit-learn (no download), holds
out a stratified 20% test split, trains with Adam while a tqdm bar shows the
running loss and accuracy, reports held-out accuracy, saves the model with
``tg.save``, loads it back and checks the predictions match, and writes a PNG of
the training curves and a Graphviz DOT picture of one training step's graph.
"""

from __future__ import annotations

import gzip
import importlib.util
import json
import pathlib
import time

import numpy as np

import tapegrad as tg
from tapegrad import nn


def _load_digits():
    """scikit-learn's digits as ``load_digits()`` gives them: images (1797, 8, 8) of 0..16
    and their labels.

    Note [Digits without importing sklearn]: ``import sklearn.datasets`` costs ~2 s of CPU,
    more than an epoch of the demo, and each rank of ``demo --distributed`` paid it. The
    data is the gzipped CSV scikit-learn ships, which ``load_digits()`` reads with this
    same ``np.loadtxt``; where the file is not where it was, ``load_digits()`` itself.
    """
    spec = importlib.util.find_spec("sklearn")  # finds the package, does not import it
    places = list(spec.submodule_search_locations or []) if spec is not None else []
    path = pathlib.Path(places[0], "datasets", "data", "digits.csv.gz") if places else None
    if path is None or not path.is_file():
        from sklearn.datasets import load_digits  # noqa: PLC0415 - optional 'demo' extra

        digits = load_digits()
        return digits.images, digits.target
    with gzip.open(path, "rt", encoding="utf-8") as f:
        data = np.loadtxt(f, delimiter=",")
    return data[:, :-1].reshape(-1, 8, 8), data[:, -1].astype(int)


def load_digits_split(seed: int, test_fraction: float = 0.2):
    """Images as float32 (N, 1, 8, 8) in [0, 1] and int64 labels, split per class."""
    raw_images, raw_labels = _load_digits()
    images = (raw_images / 16.0).astype(np.float32)[:, None, :, :]
    labels = raw_labels.astype(np.int64)
    rng = np.random.default_rng(seed)
    test_idx = []
    for c in np.unique(labels):
        idx = rng.permutation(np.flatnonzero(labels == c))
        test_idx.extend(idx[: int(round(len(idx) * test_fraction))])
    test_mask = np.zeros(len(labels), dtype=bool)
    test_mask[test_idx] = True
    return (images[~test_mask], labels[~test_mask]), (images[test_mask], labels[test_mask])


def make_model(layers=nn):
    """conv(1→32) → relu → maxpool → conv(32→64) → relu → maxpool → dropout → linear(256→10).

    ``layers`` is the module providing the layer classes: ``tapegrad.nn`` by default;
    the benchmarks pass ``torch.nn`` to build the same network in PyTorch.
    """
    return layers.Sequential(
        layers.Conv2d(1, 32, 3, padding=1),
        layers.ReLU(),
        layers.MaxPool2d(2),
        layers.Conv2d(32, 64, 3, padding=1),
        layers.ReLU(),
        layers.MaxPool2d(2),
        layers.Flatten(),
        layers.Dropout(0.25),
        layers.Linear(64 * 2 * 2, 10),
    )


def accuracy(model: nn.Module, images: np.ndarray, labels: np.ndarray) -> float:
    model.eval()
    with tg.no_grad():
        logits = model(tg.from_numpy(images))
    model.train()
    return float((logits.numpy().argmax(axis=1) == labels).mean())


def run(*args, **kwargs) -> dict:
    """Train, evaluate, save/load, plot (see :func:`train`), with BLAS on one thread.

    The GEMMs of this model are small: on a busy 2-core machine a multi-threaded BLAS
    spends more time waking threads than multiplying, and step times swing 10x.
    """
    from threadpoolctl import threadpool_limits  # noqa: PLC0415 - ships with scikit-learn

    with threadpool_limits(limits=1, user_api="blas"):
        return train(*args, **kwargs)


def train(
    epochs: int = 30,
    seed: int = 0,
    out_dir: str = "demo_output",
    batch_size: int = 64,
    lr: float = 1e-2,
    progress: bool = True,
    distributed: bool = False,
) -> dict:
    """Train, evaluate, save/load, plot. Returns a summary dict (also written as JSON).

    With ``distributed=True`` (run under ``mpiexec -n N``) every rank trains a
    DistributedDataParallel replica on its 1/N share of each epoch's shuffled data with
    ``batch_size // N`` per step, so the global batch is unchanged; rank 0 prints, saves
    and plots, the other ranks stay quiet.
    """
    from tqdm import tqdm  # noqa: PLC0415 - optional 'demo' extra

    rank, world = 0, 1
    if distributed:
        import tapegrad.distributed as dist  # noqa: PLC0415

        if not dist.is_initialized():
            dist.init_process_group(backend="mpi")
        rank, world = dist.get_rank(), dist.get_world_size()
        batch_size = max(1, batch_size // world)
    lead = rank == 0
    progress = progress and lead
    out = pathlib.Path(out_dir)
    if lead:
        out.mkdir(parents=True, exist_ok=True)
    tg.manual_seed(seed)
    (x_train, y_train), (x_test, y_test) = load_digits_split(seed)
    if world > 1:  # each rank its own share, the same every epoch (shuffled within)
        share = np.random.default_rng(seed).permutation(len(y_train))[rank::world]
        x_train, y_train = x_train[share], y_train[share]
    train = tg.utils.data.TensorDataset(tg.from_numpy(x_train), tg.from_numpy(y_train))
    loader = tg.utils.data.DataLoader(
        train, batch_size=batch_size, shuffle=True, generator=tg.Generator(seed + rank)
    )
    net = make_model()
    model = nn.parallel.DistributedDataParallel(net) if distributed else net
    optimizer = tg.optim.Adam(model.parameters(), lr=lr)
    scheduler = tg.optim.lr_scheduler.CosineAnnealingLR(optimizer, T_max=epochs)
    loss_fn = nn.CrossEntropyLoss()
    history = {"loss": [], "train_acc": [], "test_acc": []}
    start = time.perf_counter()
    for epoch in range(1, epochs + 1):
        total, correct, seen = 0.0, 0, 0
        bar = tqdm(loader, desc=f"epoch {epoch:2d}/{epochs}", leave=False, disable=not progress)
        for xb, yb in bar:
            logits = model(xb)
            loss = loss_fn(logits, yb)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            n = len(yb)
            total += loss.item() * n
            correct += int((logits.detach().numpy().argmax(1) == yb.numpy()).sum())
            seen += n
            bar.set_postfix(loss=f"{total / seen:.4f}", acc=f"{correct / seen:.3f}")
        scheduler.step()
        history["loss"].append(total / seen)
        history["train_acc"].append(correct / seen)
        history["test_acc"].append(accuracy(net, x_test, y_test))
        if not lead:
            continue
        print(
            f"epoch {epoch:2d}  loss {history['loss'][-1]:.4f}  "
            f"train acc {history['train_acc'][-1]:.3f}  test acc {history['test_acc'][-1]:.3f}"
        )
    seconds = time.perf_counter() - start
    test_acc = history["test_acc"][-1]
    summary = {
        "test_accuracy": test_acc,
        "epochs": epochs,
        "seed": seed,
        "world_size": world,
        "train_seconds": round(seconds, 2),
        "history": history,
    }
    if not lead:
        return summary
    print(f"held-out accuracy: {test_acc:.2%} on {len(y_test)} images ({seconds:.1f} s training)")

    model_path = out / "digits_cnn.tapegrad"
    tg.save(net.state_dict(), model_path)
    reloaded = make_model()
    reloaded.load_state_dict(tg.load(model_path))
    reloaded_acc = accuracy(reloaded, x_test, y_test)
    if reloaded_acc != test_acc:
        raise RuntimeError(f"reloaded model scores {reloaded_acc:.4f}, expected {test_acc:.4f}")
    print(f"saved to {model_path} and reloaded: same held-out accuracy")

    curves = out / "training_curves.png"
    _plot(history, curves)
    graph = out / "train_step_graph.dot"
    xb, yb = next(iter(loader))
    step_loss = loss_fn(net(xb), yb)
    graph.write_text(tg.viz.to_dot(step_loss, params=dict(net.named_parameters())))
    print(f"wrote {curves} and {graph}")
    (out / "summary.json").write_text(json.dumps(summary, indent=2))
    return summary


def _plot(history: dict, path: pathlib.Path) -> None:
    import matplotlib  # noqa: PLC0415 - optional 'demo' extra

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt  # noqa: PLC0415

    epochs = range(1, len(history["loss"]) + 1)
    fig, (ax_loss, ax_acc) = plt.subplots(1, 2, figsize=(9, 3.5))
    ax_loss.plot(epochs, history["loss"], marker="o")
    ax_loss.set(title="training loss", xlabel="epoch", ylabel="cross-entropy")
    ax_acc.plot(epochs, history["train_acc"], marker="o", label="train")
    ax_acc.plot(epochs, history["test_acc"], marker="s", label="held-out")
    ax_acc.set(title="accuracy", xlabel="epoch", ylim=(0, 1))
    ax_acc.legend(loc="lower right")
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)
