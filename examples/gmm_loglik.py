"""Gaussian-mixture log-likelihood and its gradient; a few steps of gradient ascent."""
import math

import torch

K, D, N = 3, 2, 150
t = torch.arange(N, dtype=torch.float64)
data = torch.stack([torch.sin(t * 0.31) * 2 + torch.cos(t * 1.7),
                    torch.cos(t * 0.23) * 1.5 - torch.sin(t * 0.9)], dim=1)

means = torch.tensor([[1.0, 0.0], [-1.0, 0.5], [0.0, -1.0]], dtype=torch.float64, requires_grad=True)
log_std = torch.zeros(K, D, dtype=torch.float64, requires_grad=True)
logits = torch.zeros(K, dtype=torch.float64, requires_grad=True)


def log_likelihood(x, means, log_std, logits):
    log_w = torch.log_softmax(logits, dim=0)                         # (K,)
    diff = x.unsqueeze(1) - means.unsqueeze(0)                        # (N, K, D)
    var = torch.exp(2 * log_std)
    log_norm = -0.5 * (diff ** 2 / var).sum(-1) - log_std.sum(-1) - 0.5 * D * math.log(2 * math.pi)
    return torch.logsumexp(log_w + log_norm, dim=1).sum()


trace = []
for step in range(30):
    ll = log_likelihood(data, means, log_std, logits)
    trace.append(ll.item())
    gm, gs, gl = torch.autograd.grad(ll, (means, log_std, logits))
    with torch.no_grad():
        means += 0.01 * gm
        log_std += 0.005 * gs
        logits += 0.01 * gl
print("log-likelihood", trace[0], "->", trace[-1])
results = {"trace": trace, "means": means.detach().numpy().tolist(),
           "log_std": log_std.detach().numpy().tolist(), "logits": logits.detach().numpy().tolist()}
