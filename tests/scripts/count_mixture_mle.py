"""Maximum-likelihood fit of hand-written count distributions: a negative binomial (lgamma)
and a two-component Poisson mixture (logsumexp), optimised by Newton's method / Adam on
unconstrained parameters (softplus / log_softmax), with observed Fisher information from the
Hessian.

Covers: torch.lgamma, torch.xlogy, torch.logsumexp(dim), log_softmax, F.softplus, torch.special
functions (gammaln, digamma), integer tensors from numpy (int64) converted with .double(),
torch.bincount, torch.unique(return_counts=True), boolean-mask selection, damped Newton with
functional.hessian and eigvalsh, Adam written out with in-place mul_/add_(alpha=)/addcmul_(value=)
under no_grad, functional.hessian with a tuple of inputs, linalg.inv,
diagonal, sqrt of the inverse Hessian as standard errors, and lgamma on an integer tensor
(dtype promotion).
"""
import numpy as np
import torch
import torch.nn.functional as F
from torch.autograd.functional import hessian

rng = np.random.default_rng(11)
counts_np = rng.negative_binomial(3, 0.3, size=400)
y = torch.from_numpy(counts_np)
print("y", y.dtype, y.shape, "mean %.3f var %.3f" % (y.double().mean().item(), y.double().var().item()))
vals, freq = torch.unique(y, return_counts=True)
print("distinct values", vals.numel(), "mode", vals[freq.argmax()].item(), freq.dtype)
print("bincount[:8]", torch.bincount(y)[:8])
print("lgamma int ->", torch.lgamma(y[:3]).dtype, torch.lgamma(y[:3]))

yd = y.double()


def nb_logpmf(y, r, p):
    return (torch.lgamma(y + r) - torch.lgamma(r) - torch.lgamma(y + 1)
            + r * torch.log(p) + torch.xlogy(y, 1 - p))


raw = torch.zeros(2, dtype=torch.float64, requires_grad=True)   # softplus(r), sigmoid(p)


def nb_nll(raw):
    r = F.softplus(raw[0])
    p = torch.sigmoid(raw[1])
    return -nb_logpmf(yd, r, p).mean()


# damped Newton on the unconstrained parameters
for it in range(12):
    nll = nb_nll(raw)
    (g,) = torch.autograd.grad(nll, raw)
    Hr = hessian(nb_nll, raw.detach())
    ev = torch.linalg.eigvalsh(Hr)
    damp = torch.clamp(1e-3 - ev.min(), min=0.0)
    with torch.no_grad():
        raw -= torch.linalg.solve(Hr + damp * torch.eye(2, dtype=torch.float64), g)
    if it % 3 == 0:
        print(f"Newton it {it:2d} nll {nll.item():.6f} |g| {g.norm().item():.3e}")
r_hat, p_hat = F.softplus(raw[0]).item(), torch.sigmoid(raw[1]).item()
print("r_hat %.4f p_hat %.4f" % (r_hat, p_hat))

# score equations at the MLE: d/dr uses digamma
r_t = torch.tensor(r_hat, dtype=torch.float64)
score_r = (torch.special.digamma(yd + r_t) - torch.special.digamma(r_t) + np.log(p_hat)).mean()
print("score_r ~ 0:", abs(score_r.item()) < 1e-4)

# observed information in (r, p) and standard errors
H = hessian(lambda r, p: -nb_logpmf(yd, r, p).sum(),
            (torch.tensor(r_hat, dtype=torch.float64), torch.tensor(p_hat, dtype=torch.float64)))
Hm = torch.stack([torch.stack([H[0][0], H[0][1]]), torch.stack([H[1][0], H[1][1]])])
print("H", Hm)
se = torch.linalg.inv(Hm).diagonal().sqrt()
print("standard errors", se)

# two-component Poisson mixture via logsumexp, Adam
logits = torch.zeros(2, dtype=torch.float64, requires_grad=True)
log_rates = torch.tensor([0.5, 2.5], dtype=torch.float64, requires_grad=True)
params = [logits, log_rates]
m1 = [torch.zeros_like(q) for q in params]
m2 = [torch.zeros_like(q) for q in params]
for it in range(200):
    for q in params:
        q.grad = None
    log_w = F.log_softmax(logits, dim=0)
    rates = log_rates.exp()
    comp = yd[:, None] * log_rates[None, :] - rates[None, :] - torch.special.gammaln(yd + 1)[:, None]
    ll = torch.logsumexp(log_w[None, :] + comp, dim=1)
    loss = -ll.mean()
    loss.backward()
    with torch.no_grad():                      # Adam, written out
        for q, a, b in zip(params, m1, m2):
            a.mul_(0.9).add_(q.grad, alpha=0.1)
            b.mul_(0.999).addcmul_(q.grad, q.grad, value=0.001)
            q -= 0.05 * (a / (1 - 0.9 ** (it + 1))) / ((b / (1 - 0.999 ** (it + 1))).sqrt() + 1e-8)
    if it % 50 == 0:
        print(f"mix it {it:3d} nll {loss.item():.5f}")
print("weights", torch.softmax(logits, 0).detach(), "rates", log_rates.exp().detach())
resp = torch.softmax(log_w[None, :] + comp, dim=1)
print("resp", resp.shape, type(resp.grad_fn).__name__, "row sums ok", torch.allclose(resp.sum(1), torch.ones(400, dtype=torch.float64)))
hard = resp.argmax(1)
print("cluster sizes", torch.bincount(hard, minlength=2), "mean count per cluster",
      torch.stack([yd[hard == k].mean() for k in range(2)]))
big = y > 15
print("tail count", big.sum().item(), "tail mean %.3f" % yd[big].mean().item(), big.dtype)

try:
    torch.lgamma(torch.tensor([1, 2, 3], requires_grad=True))
except RuntimeError as e:
    print(type(e).__name__, "|", e)
