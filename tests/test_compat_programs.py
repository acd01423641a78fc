"""PyTorch programs run unchanged under ``import tapegrad as torch`` (issue 12).

Each program below is the text of a short script in the style of PyTorch's tutorials
and examples (written here). It is run twice: once with ``torch`` resolving to
tapegrad (``tapegrad.as_torch``'s import hook maps ``torch`` and every ``torch.<sub>``
module to ``tapegrad`` / ``tapegrad.<sub>``, so ``import torch.nn as nn`` and
``from torch.utils.data import DataLoader`` are the real statements), and once with
real PyTorch. The printed lines must agree: the same text, numbers within 1e-4.
Weights and data are made deterministically (linspace, sin) and written with
``p.data.copy_``, so the two libraries start from the same values.
"""

from __future__ import annotations

import contextlib
import io
import re
import sys
import textwrap

import pytest

import tapegrad
from tapegrad import as_torch
from tests.programs._harness import torch_is_tapegrad as _torch_is_tapegrad

PRELUDE = """
import math
import torch

def deterministic_init(model):
    # the same starting weights in both libraries; exercises p.data.copy_
    for i, p in enumerate(model.parameters()):
        values = torch.linspace(-0.5, 0.5, p.numel()).reshape(p.shape)
        p.data.copy_(values * (1 if i % 2 == 0 else -0.3))

def make_data(n, d, classes):
    t = torch.arange(n * d, dtype=torch.float32).reshape(n, d)
    x = torch.sin(t * 0.37) + 0.1 * torch.cos(t * 1.3)
    y = (torch.arange(n) * 7 % classes)
    return x, y
"""

# -- the programs ----------------------------------------------------------------------------

QUICKSTART = """
import torch.onnx  # importable (export itself is not available in tapegrad)
from torch import nn
from torch.utils.data import DataLoader, Dataset

device = (
    "cuda" if torch.cuda.is_available()
    else "mps" if torch.backends.mps.is_available()
    else "cpu"
)
if torch.accelerator.is_available():
    device = torch.accelerator.current_accelerator().type
device = torch.device(device)
print(f"Using {device} device")
torch.manual_seed(0)
torch.cuda.manual_seed_all(0)
torch.backends.cudnn.benchmark = False
torch.backends.cudnn.deterministic = True
torch.backends.cuda.matmul.allow_tf32 = False
threads = torch.get_num_threads()
torch.set_num_threads(1)
print(torch.get_default_dtype(), torch.get_num_threads())

class Points(Dataset):
    def __init__(self):
        self.x, self.y = make_data(48, 6, 3)
    def __len__(self):
        return len(self.y)
    def __getitem__(self, i):
        return self.x[i], int(self.y[i])

class NeuralNetwork(nn.Module):
    def __init__(self):
        super().__init__()
        self.flatten = nn.Flatten()
        self.linear_relu_stack = nn.Sequential(
            nn.Linear(6, 16), nn.ReLU(), nn.Linear(16, 16), nn.ReLU(), nn.Linear(16, 3)
        )
    def forward(self, x):
        return self.linear_relu_stack(self.flatten(x))

def seed_worker(worker_id):
    pass

loader = DataLoader(Points(), batch_size=8, shuffle=False, drop_last=True,
                    worker_init_fn=seed_worker)
model = NeuralNetwork().to(device)
deterministic_init(model)
print(model.linear_relu_stack[0].weight.shape == torch.Size([16, 6]))
loss_fn = nn.CrossEntropyLoss()
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)

for epoch in range(3):
    model.train()
    for batch, (X, y) in enumerate(loader):
        X, y = X.to(device), y.to(device)
        loss = loss_fn(model(X), y)
        loss.backward()
        optimizer.step()
        optimizer.zero_grad()
        if batch % 3 == 0:
            print(f"loss: {loss:>7f}  [{(batch + 1) * len(X):>5d}/{len(loader.dataset):>5d}]")
    model.eval()
    correct, test_loss = 0, 0.0
    with torch.inference_mode():
        for X, y in loader:
            pred = model(X)
            test_loss += loss_fn(pred, y).item()
            correct += (pred.argmax(1) == y).type(torch.float).sum().item()
    print(f"epoch {epoch}: accuracy {correct / 48:.3f}, avg loss {test_loss / len(loader):.4f}")
torch.set_num_threads(threads)
"""

OLD_STYLE = """
import torch.nn as nn
import torch.nn.functional as F
from torch.autograd import Variable
from torch.nn.parameter import Parameter
import torch.nn.init as init
from torch.nn.modules.linear import Linear

torch.set_default_dtype(torch.float64)
try:
    x_data, y_data = make_data(20, 3, 2)
    print(torch.tensor([0.5]).dtype, Linear(2, 2).weight.dtype)
finally:
    torch.set_default_dtype(torch.float32)
x = Variable(x_data.float())
y = Variable(y_data.float().reshape(-1, 1))

class Net(nn.Module):
    def __init__(self):
        super(Net, self).__init__()
        self.w = Parameter(torch.zeros(3, 1))
        self.b = Parameter(torch.zeros(1))
        init.constant_(self.b, 0.1)
    def forward(self, x):
        return x.mm(self.w) + self.b

net = Net()
deterministic_init(net)
print(isinstance(x, Variable), net.w.requires_grad)
for step in range(5):
    out = net(x)
    loss = F.binary_cross_entropy_with_logits(out, y)
    net.zero_grad()
    loss.backward()
    for p in net.parameters():
        p.data.add_(p.grad.data, alpha=-0.5)   # the pre-optimizer idiom
    print("step %d loss %.5f" % (step, loss.item()))
print("w", [round(v, 4) for v in net.w.data.flatten().tolist()])
"""

TRAINING_LOOP = """
import os
import tempfile
import torch.nn as nn
import torch.nn.functional as F
import torch.nn.parallel
import torch.distributed as dist
import torch.optim as optim
from torch.optim.lr_scheduler import StepLR
from torch.utils.checkpoint import checkpoint
from torch.utils.data import TensorDataset, DataLoader
from torch.utils.data.distributed import DistributedSampler
from torch.testing import assert_close

print("distributed initialised:", dist.is_initialized())

class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(5, 12)
        self.fc2 = nn.Linear(12, 4)
        self.drop = nn.Dropout(0.0)
    def forward(self, x):
        h = checkpoint(lambda t: F.relu(self.fc1(t)), x, use_reentrant=False)
        return F.log_softmax(self.fc2(self.drop(h)), dim=1)

x, y = make_data(40, 5, 4)
dataset = TensorDataset(x, y)
sampler = DistributedSampler(dataset, num_replicas=2, rank=0, shuffle=False)
loader = DataLoader(dataset, batch_size=5, sampler=sampler, num_workers=2)
model = Net()
deterministic_init(model)
model = nn.DataParallel(model)
optimizer = optim.Adam(model.parameters(), lr=0.05)
scheduler = StepLR(optimizer, step_size=1, gamma=0.7)
use_amp = False
scaler = torch.amp.GradScaler("cpu")
for epoch in range(1, 4):
    sampler.set_epoch(epoch)
    model.train()
    total = 0.0
    for data, target in loader:
        optimizer.zero_grad()
        with torch.autocast(device_type="cpu", dtype=torch.bfloat16, enabled=use_amp):
            loss = F.nll_loss(model(data), target)
        scaler.scale(loss).backward()
        scaler.step(optimizer)
        scaler.update()
        total += loss.item()
    scheduler.step()
    lr = scheduler.get_last_lr()[0]
    print(f"Train Epoch: {epoch} loss {total / len(loader):.6f} lr {lr:.4f} "
          f"scale {scaler.get_scale():.0f}")

with tempfile.TemporaryDirectory() as tmp:
    path = os.path.join(tmp, "model.pt")
    torch.save(model.module.state_dict(), path)
    fresh = Net()
    fresh.load_state_dict(torch.load(path))
    model.eval(); fresh.eval()
    with torch.no_grad():
        assert_close(fresh(x), model(x))
    print("reloaded model matches;", sorted(model.state_dict())[0])
"""

RANDOM_AND_DATA = """
from torch.utils.data import (BatchSampler, ConcatDataset, DataLoader, IterableDataset,
    RandomSampler, SequentialSampler, Subset, SubsetRandomSampler, TensorDataset,
    WeightedRandomSampler, default_collate, random_split)
import torch.utils.data.dataloader
import torch.utils.data.sampler
import torch.utils.data.dataset
import torch.random

g = torch.Generator().manual_seed(42)
a = torch.rand(3, generator=g)
g.manual_seed(42)
print("generator reproducible:", a.tolist() == torch.rand(3, generator=g).tolist())
print("initial seed:", g.initial_seed())
state = torch.get_rng_state()
b = torch.randn(4)
torch.set_rng_state(state)
print("rng state restored:", b.tolist() == torch.randn(4).tolist())
state = torch.random.get_rng_state()
with torch.random.fork_rng():
    torch.randn(10)
c = torch.randn(4)
torch.random.set_rng_state(state)
print("fork_rng restores:", c.tolist() == torch.randn(4).tolist())
print(list(torch.randint(10, (4,)).shape), torch.randint(3, 5, (2, 2)).dtype)
print(sorted(torch.randperm(6).tolist()), torch.randperm(6, generator=g).dtype)
m = torch.multinomial(torch.tensor([0.0, 3.0, 0.0, 1.0]), 2)
print("multinomial:", sorted(m.tolist()))
print(torch.multinomial(torch.tensor([[1.0, 0.0], [0.0, 1.0]]), 3, replacement=True).tolist())

ds = TensorDataset(torch.arange(10).float(), torch.arange(10))
first = next(iter(DataLoader(ds, batch_size=4,
              sampler=RandomSampler(ds, replacement=True, num_samples=10**10))))
print("huge sampler first batch:", list(first[0].shape))
print(list(BatchSampler(SequentialSampler(range(7)), batch_size=3, drop_last=False)))
print(len(list(RandomSampler(range(5), num_samples=12))), sorted(SubsetRandomSampler([3, 5, 7])))
print("weighted:", set(WeightedRandomSampler([0.0, 1.0, 0.0], 5)))
parts = random_split(ds, [0.3, 0.7], generator=torch.Generator().manual_seed(1))
print([len(p) for p in parts], len(ConcatDataset([ds, Subset(ds, [1, 2])])))

class Stream(IterableDataset):
    def __iter__(self):
        return iter(range(7))
print([t.tolist() for t in DataLoader(Stream(), batch_size=3)])
batch = default_collate([{"x": torch.ones(2), "n": 1, "w": 0.5},
                         {"x": torch.zeros(2), "n": 2, "w": 1.5}])
print(list(batch["x"].shape), batch["n"].dtype, batch["w"].dtype)
pairs = DataLoader([(1, 2.0), (3, 4.0)], batch_size=2, collate_fn=lambda b: len(b))
print(list(pairs))
loss = torch.tensor(0.123456)
print(f"{loss:.3f} {loss:>8.2e} {torch.tensor(7)}")
print(torch.tensor([1.0, 2.0]).to(torch.bfloat16).dtype == torch.bfloat16)
"""

PROGRAMS = {
    "quickstart": QUICKSTART,
    "old_style": OLD_STYLE,
    "training_loop": TRAINING_LOOP,
    "random_and_data": RANDOM_AND_DATA,
}

# -- running a program under one library ---------------------------------------------------


def _run(source: str, use_tapegrad: bool) -> list[str]:
    out = io.StringIO()
    code = compile(textwrap.dedent(PRELUDE) + textwrap.dedent(source), "<program>", "exec")
    with contextlib.redirect_stdout(out):
        if use_tapegrad:
            with _torch_is_tapegrad():
                exec(code, {"__name__": "__program__"})
        else:
            exec(code, {"__name__": "__program__"})
    return out.getvalue().splitlines()


_NUMBER = re.compile(r"-?\d+\.\d+(?:e[-+]?\d+)?")


_DTYPE = re.compile(r"(?:torch\.|tapegrad\.|dtype\(')(\w+)(?:'\))?")


def _normalise(line: str) -> str:
    """Dtypes print as ``torch.float32`` in torch and ``float32`` (a NumPy dtype) here."""
    line = _DTYPE.sub(r"\1", line)
    return line.replace("tapegrad.", "torch.")


def _assert_same_output(ours: list[str], theirs: list[str]) -> None:
    assert len(ours) == len(theirs), "\n".join(ours) + "\n----\n" + "\n".join(theirs)
    for a, b in zip(ours, theirs, strict=True):
        a, b = _normalise(a), _normalise(b)
        assert _NUMBER.sub("#", a) == _NUMBER.sub("#", b), f"\n  tapegrad: {a}\n  torch:    {b}"
        for x, y in zip(_NUMBER.findall(a), _NUMBER.findall(b), strict=True):
            assert float(x) == pytest.approx(float(y), rel=1e-4, abs=2e-4), f"{a!r} vs {b!r}"


@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_program_runs_under_tapegrad_as_torch(name):
    lines = _run(PROGRAMS[name], use_tapegrad=True)
    assert lines, "the program printed nothing"
    assert "torch" not in sys.modules or sys.modules["torch"] is not tapegrad


@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_program_prints_what_torch_prints(name, torch_mod):
    ours = _run(PROGRAMS[name], use_tapegrad=True)
    theirs = _run(PROGRAMS[name], use_tapegrad=False)
    _assert_same_output(ours, theirs)


def test_the_comparison_can_fail():
    """A loss that differs in the 3rd decimal is caught."""
    with pytest.raises(AssertionError):
        _assert_same_output(["loss: 0.123456"], ["loss: 0.124456"])
    with pytest.raises(AssertionError):
        _assert_same_output(["torch.float32"], ["torch.float64"])


def test_as_torch_runs_a_script_file(tmp_path, capsys, monkeypatch):
    monkeypatch.setattr(sys, "argv", list(sys.argv))  # main() sets the script's argv
    script = tmp_path / "train.py"
    script.write_text(
        "import sys, torch, torch.nn as nn\n"
        "from torch.utils.data import DataLoader\n"
        "print(torch.__name__, nn is torch.nn, sys.argv[1:])\n"
    )
    with _torch_is_tapegrad():
        as_torch.uninstall()
        as_torch.main([str(script), "--epochs", "2"])
    assert capsys.readouterr().out == "tapegrad True ['--epochs', '2']\n"


def test_as_torch_refuses_when_real_torch_is_loaded(torch_mod):
    with pytest.raises(RuntimeError, match="already imported"):
        as_torch.install()
