"""A tiny RealNVP-style normalising flow on 2-D two-moons-like data: affine coupling layers with
alternating masks, log-determinant as a sum of log-scales, exact inverse, manual SGD with
weight decay; a 1-D sample quantile check.

Covers: masks as float tensors, tanh-bounded scales, torch.cat / split / flip, sum(dim=1),
Normal log-prob by hand, inverse pass consistency (allclose), torch.no_grad sampling from
numpy noise, autograd.grad of the log-density w.r.t. the input (score), sort / quantile,
p.grad.zero_(), weight decay with add_(p, alpha=).
"""
import math
import numpy as np
import torch

rng = np.random.default_rng(8)
N = 256
t = rng.uniform(0, math.pi, size=N)
data = np.stack([np.cos(t), np.sin(t) - 0.25], 1) + rng.normal(scale=0.08, size=(N, 2))
x = torch.tensor(data, dtype=torch.float32)
H = 16
layers = []
for i in range(4):
    layers.append({
        "W1": torch.tensor(rng.normal(size=(1, H)) * 0.5, dtype=torch.float32, requires_grad=True),
        "b1": torch.zeros(H, requires_grad=True),
        "W2": torch.tensor(rng.normal(size=(H, 2)) * 0.05, dtype=torch.float32, requires_grad=True),
        "b2": torch.zeros(2, requires_grad=True),
    })
params = [p for L in layers for p in L.values()]


def coupling(L, xa):
    h = torch.relu(xa @ L["W1"] + L["b1"])
    s, shift = (h @ L["W2"] + L["b2"]).split(1, dim=1)
    return torch.tanh(s), shift


def forward(x):
    logdet = torch.zeros(x.shape[0])
    for i, L in enumerate(layers):
        xa, xb = x[:, :1], x[:, 1:]
        if i % 2:
            xa, xb = xb, xa
        s, shift = coupling(L, xa)
        yb = xb * torch.exp(s) + shift
        logdet = logdet + s.sum(dim=1)
        x = torch.cat([xa, yb], dim=1) if i % 2 == 0 else torch.cat([yb, xa], dim=1)
    return x, logdet


def inverse(z):
    for i in reversed(range(len(layers))):
        L = layers[i]
        za, zb = (z[:, :1], z[:, 1:]) if i % 2 == 0 else (z[:, 1:], z[:, :1])
        s, shift = coupling(L, za)
        xb = (zb - shift) * torch.exp(-s)
        z = torch.cat([za, xb], 1) if i % 2 == 0 else torch.cat([xb, za], 1)
    return z


def log_prob(x):
    z, logdet = forward(x)
    base = -0.5 * (z ** 2).sum(dim=1) - math.log(2 * math.pi)
    return base + logdet


lp = log_prob(x[:4])
print(lp)
print(lp.grad_fn.name(), lp.shape)
for step in range(120):
    nll = -log_prob(x).mean()
    for p in params:
        if p.grad is not None:
            p.grad.zero_()
    nll.backward()
    with torch.no_grad():
        for p in params:
            p.grad.add_(p, alpha=1e-4)
            p.add_(p.grad, alpha=-0.05)
    if step % 30 == 0:
        print(f"step {step:3d} nll {nll.item():.5f}")
print("final nll", -log_prob(x).mean())

z, ld = forward(x[:5])
back = inverse(z)
print("inverse ok", torch.allclose(back, x[:5], atol=1e-5), (back - x[:5]).abs().max() < 1e-5)
print(ld.detach())

xq = x[:3].clone().requires_grad_(True)
score, = torch.autograd.grad(log_prob(xq).sum(), xq)
print("score", score)

with torch.no_grad():
    zs = torch.tensor(rng.normal(size=(400, 2)), dtype=torch.float32)
    samples = inverse(zs)
    print(samples.shape, samples.requires_grad)
    print("mean", samples.mean(dim=0), "std", samples.std(dim=0))
    srt, order = samples[:, 0].sort()
    print(order.dtype, srt[0] <= srt[-1])
    print("quantiles", torch.quantile(samples[:, 1], torch.tensor([0.1, 0.5, 0.9])))
    print(x.flip(0)[:2], x.flip(1)[0])
