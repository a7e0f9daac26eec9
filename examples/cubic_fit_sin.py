"""Fit y = a + b x + c x^2 + d x^3 to sin(x) with autograd (PyTorch's tutorial program)."""
import math

import torch

dtype = torch.float
x = torch.linspace(-math.pi, math.pi, 2000, dtype=dtype)
y = torch.sin(x)

a = torch.zeros((), dtype=dtype, requires_grad=True)
b = torch.zeros((), dtype=dtype, requires_grad=True)
c = torch.zeros((), dtype=dtype, requires_grad=True)
d = torch.zeros((), dtype=dtype, requires_grad=True)

learning_rate = 1e-6
losses = []
for t in range(2000):
    y_pred = a + b * x + c * x ** 2 + d * x ** 3
    loss = (y_pred - y).pow(2).sum()
    losses.append(loss.item())
    if t % 500 == 99:
        print(t, loss.item())
    loss.backward()
    with torch.no_grad():
        a -= learning_rate * a.grad
        b -= learning_rate * b.grad
        c -= learning_rate * c.grad
        d -= learning_rate * d.grad
        a.grad = None
        b.grad = None
        c.grad = None
        d.grad = None

print(f"Result: y = {a.item()} + {b.item()} x + {c.item()} x^2 + {d.item()} x^3")
results = {"coef": [a.item(), b.item(), c.item(), d.item()], "losses": losses[::100]}
