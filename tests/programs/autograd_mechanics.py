# ruff: noqa  (a PyTorch program kept as its authors wrote it: tests/programs/README.md)
# Snippets from "A Gentle Introduction to torch.autograd" and "Autograd mechanics"
# (PyTorch docs): requires_grad propagation, leaves, retain_grad, hooks, no_grad /
# inference_mode / set_grad_enabled, in-place correctness checks, higher-order gradients,
# torch.autograd.functional, gradient accumulation and freezing a pretrained part.
import torch
from torch import nn, optim

a = torch.tensor([2.0, 3.0], requires_grad=True)
b = torch.tensor([6.0, 4.0], requires_grad=True)
Q = 3 * a**3 - b**2
external_grad = torch.tensor([1.0, 1.0])
Q.backward(gradient=external_grad)
print(9 * a**2 == a.grad, -2 * b == b.grad)

x = torch.rand(5, 5)
y = torch.rand(5, 5)
z = torch.rand((5, 5), requires_grad=True)
a = x + y
print(f"Does `a` require gradients?: {a.requires_grad}")
b = x + z
print(f"Does `b` require gradients?: {b.requires_grad}")
print(z.is_leaf, b.is_leaf, b.grad_fn is not None, b.grad_fn.next_functions[1][0] is not None)

# retain_grad and hooks
x = torch.tensor([1.0, 2.0, 3.0], requires_grad=True)
h = x * 2
h.retain_grad()
seen = []
h.register_hook(lambda g: seen.append(g.clone()))
x.register_hook(lambda g: g * 10)
(h**2).sum().backward()
print(h.grad, seen[0], x.grad)

# grad modes
x = torch.ones(2, requires_grad=True)
with torch.no_grad():
    y = x * 2
print(y.requires_grad)
with torch.inference_mode():
    y = x * 2
print(y.requires_grad, torch.is_inference_mode_enabled())
torch.set_grad_enabled(False)
y = x * 2
print(y.requires_grad)
torch.set_grad_enabled(True)


@torch.no_grad()
def doubler(t):
    return t * 2


print(doubler(x).requires_grad, (x * 2).requires_grad, x.detach().requires_grad)

# in-place correctness checks: a saved tensor modified in place
a = torch.tensor([1.0, 2.0, 3.0], requires_grad=True)
b = a.sigmoid()
c = b * 2
b.mul_(3)
try:
    c.sum().backward()
    print("no error")
except RuntimeError:
    print("RuntimeError: a saved tensor was modified in place")
try:
    a.add_(1)
except RuntimeError:
    print("RuntimeError: a leaf that requires grad used in an in-place operation")

# backward twice
x = torch.tensor([1.0, 2.0], requires_grad=True)
y = (x**3).sum()
y.backward(retain_graph=True)
y.backward()
print(x.grad)
try:
    z = (x.exp() * x).sum()
    z.backward()
    z.backward()
except RuntimeError:
    print("RuntimeError: backward through the graph a second time")

# higher-order gradients
x = torch.tensor([0.5, -1.0, 2.0], requires_grad=True)
y = (x.sin() * x**2).sum()
(g,) = torch.autograd.grad(y, x, create_graph=True)
(gg,) = torch.autograd.grad(g.sum(), x)
print(g, gg)


# torch.autograd.functional
def f(inp):
    return inp.tanh() * inp.sum()


inp = torch.tensor([0.1, 0.2, 0.3])
print(torch.autograd.functional.jacobian(f, inp))
print(torch.autograd.functional.hessian(lambda t: (t**3).sum() * t.prod(), inp))
print(torch.autograd.functional.vjp(f, inp, torch.ones(3))[1])
print(torch.autograd.functional.jvp(f, inp, torch.ones(3))[1])

# gradient accumulation and zero_grad(set_to_none=...)
model = nn.Linear(3, 2)
opt = optim.SGD(model.parameters(), lr=0.1)
data = torch.randn(4, 3)
for i in range(2):
    model(data[2 * i : 2 * i + 2]).pow(2).mean().backward()
print(model.weight.grad)
opt.step()
opt.zero_grad(set_to_none=False)
print(model.weight.grad, model.bias.grad)
opt.zero_grad()
print(model.weight.grad)

# freezing a "pretrained" feature extractor, training a new head
features = nn.Sequential(nn.Linear(8, 6), nn.ReLU())
for param in features.parameters():
    param.requires_grad = False
head = nn.Linear(6, 2)
model = nn.Sequential(features, head)
opt = optim.SGD([p for p in model.parameters() if p.requires_grad], lr=0.5, momentum=0.9)
inputs, targets = torch.randn(16, 8), torch.randint(0, 2, (16,))
for step in range(5):
    loss = nn.functional.cross_entropy(model(inputs), targets)
    opt.zero_grad()
    loss.backward()
    opt.step()
    print(step, round(loss.item(), 5), features[0].weight.grad is None)
print(sum(p.numel() for p in model.parameters() if p.requires_grad))
