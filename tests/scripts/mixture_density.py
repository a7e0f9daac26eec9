"""Mixture density network on a 1-D inverse problem (x = y + 0.3 sin(2 pi y) + noise, predict y
from x), trained with manual Adam; the negative log-likelihood is computed with logsumexp.

Covers: chunk into (logits, mu, log_sigma), log_softmax, clamp on log-scales, logsumexp over a
dim, gather of the most probable component, max(dim) -> (values, indices), where, exp/log,
torch.no_grad evaluation, float64 parameters, printing of float64 tensors (dtype= suffix).
"""
import math
import numpy as np
import torch
import torch.nn.functional as F

rng = np.random.default_rng(2)
N, H, K = 200, 16, 3
yv = rng.uniform(0, 1, size=(N, 1))
xv = yv + 0.3 * np.sin(2 * np.pi * yv) + rng.normal(scale=0.05, size=(N, 1))
x = torch.from_numpy(xv)   # float64
y = torch.from_numpy(yv)
print(x.dtype, x.shape)

W1 = torch.tensor(rng.normal(size=(1, H)), requires_grad=True)
b1 = torch.zeros(H, dtype=torch.float64, requires_grad=True)
W2 = torch.tensor(rng.normal(size=(H, 3 * K)) * 0.3, requires_grad=True)
b2 = torch.zeros(3 * K, dtype=torch.float64, requires_grad=True)
params = [W1, b1, W2, b2]


def mdn(x):
    h = torch.tanh(x @ W1 + b1)
    logit, mu, log_sigma = (h @ W2 + b2).chunk(3, dim=-1)
    log_sigma = log_sigma.clamp(min=-5.0, max=2.0)
    return F.log_softmax(logit, dim=-1), mu, log_sigma


def nll(x, y):
    log_pi, mu, log_sigma = mdn(x)
    z = (y - mu) / log_sigma.exp()
    log_n = -0.5 * z ** 2 - log_sigma - 0.5 * math.log(2 * math.pi)
    return -torch.logsumexp(log_pi + log_n, dim=-1).mean()


log_pi, mu, ls = mdn(x[:3])
print(log_pi)
print(mu.grad_fn.name(), ls.grad_fn.name())
print(log_pi.exp().sum(-1))
l0 = nll(x, y)
print("initial nll", l0)
l0.backward()
print("grad norms", [round(p.grad.norm().item(), 5) for p in params])

m = [torch.zeros_like(p) for p in params]
s = [torch.zeros_like(p) for p in params]
for t in range(1, 151):
    for p in params:
        p.grad = None
    loss = nll(x, y)
    loss.backward()
    with torch.no_grad():
        for p, mi, si in zip(params, m, s):
            mi.lerp_(p.grad, 0.1)
            si.mul_(0.999).add_(p.grad.square() * 0.001)
            p -= 0.02 * (mi / (1 - 0.9 ** t)) / ((si / (1 - 0.999 ** t)).sqrt() + 1e-8)
    if t % 30 == 0:
        print(f"{t:3d} nll {loss.item():.5f}")

with torch.no_grad():
    xs = torch.linspace(0.1, 0.9, 5, dtype=torch.float64).unsqueeze(1)
    log_pi, mu, log_sigma = mdn(xs)
    best_w, best_k = log_pi.max(dim=1)
    print("best component", best_k, best_w.exp())
    mode = mu.gather(1, best_k.unsqueeze(1))
    print("mode prediction", mode.squeeze(1))
    sigma = log_sigma.exp()
    confident = torch.where(sigma.min(dim=1).values < 0.1, mode.squeeze(1), torch.full_like(mode.squeeze(1), float("nan")))
    print(confident)
    print(torch.isnan(confident).sum(), confident.nan_to_num(0.0))
    mean = (log_pi.exp() * mu).sum(dim=1, keepdim=True)
    print(mean.shape, mean.T)
