# ruff: noqa  (a PyTorch program kept as its authors wrote it: tests/programs/README.md)
# A physics-informed neural network in the usual tutorial form: solve u''(x) = -pi^2 sin(pi x)
# on [-1, 1] with u(-1) = u(1) = 0 (exact: sin(pi x)); derivatives of the network with
# torch.autograd.grad(create_graph=True), Adam then L-BFGS with a strong-Wolfe closure.
import math

import torch
import torch.nn as nn

torch.manual_seed(0)


class PINN(nn.Module):
    def __init__(self, width=16, depth=2):
        super().__init__()
        layers, d_in = [], 1
        for _ in range(depth):
            layers += [nn.Linear(d_in, width), nn.Tanh()]
            d_in = width
        layers.append(nn.Linear(d_in, 1))
        self.net = nn.Sequential(*layers)

    def forward(self, x):
        return self.net(x)


def residual(model, x):
    x = x.clone().requires_grad_(True)
    u = model(x)
    du = torch.autograd.grad(u, x, grad_outputs=torch.ones_like(u), create_graph=True)[0]
    d2u = torch.autograd.grad(du, x, grad_outputs=torch.ones_like(du), create_graph=True)[0]
    return d2u + math.pi**2 * torch.sin(math.pi * x)


model = PINN()
x_col = torch.linspace(-1, 1, 64).unsqueeze(1)
x_bc = torch.tensor([[-1.0], [1.0]])


def loss_fn():
    r = residual(model, x_col)
    return (r**2).mean() + 10.0 * (model(x_bc) ** 2).mean()


opt = torch.optim.Adam(model.parameters(), lr=1e-2)
for step in range(60):
    opt.zero_grad()
    loss = loss_fn()
    loss.backward()
    opt.step()
    if step % 20 == 0:
        print(f"adam {step:3d} loss {loss.item():.6f}")

lbfgs = torch.optim.LBFGS(model.parameters(), lr=1.0, max_iter=20, line_search_fn="strong_wolfe")


def closure():
    lbfgs.zero_grad()
    loss = loss_fn()
    loss.backward()
    return loss


for step in range(2):
    loss = lbfgs.step(closure)
    print(f"lbfgs {step} loss {loss.item():.6f}")

x_test = torch.linspace(-1, 1, 9).unsqueeze(1)
with torch.no_grad():
    err = (model(x_test) - torch.sin(math.pi * x_test)).abs().max()
print(f"max error {err.item():.2f}")  # (L-BFGS amplifies float32 rounding: 2 digits)
