"""Batch normalization implemented by hand (train + eval), checked against F.batch_norm and autograd.

Covers: mean/var over a dim with keepdim and unbiased=, running statistics updated in place under
no_grad through a global, the analytic BN backward vs autograd, F.batch_norm / F.layer_norm.
"""
import numpy as np
import torch
import torch.nn.functional as F

rng = np.random.default_rng(8)
N, C = 32, 5
x = torch.tensor(rng.normal(loc=2.0, scale=3.0, size=(N, C)), dtype=torch.float32, requires_grad=True)
gamma = torch.ones(C, requires_grad=True)
beta = torch.zeros(C, requires_grad=True)
running_mean = torch.zeros(C)
running_var = torch.ones(C)
momentum, eps = 0.1, 1e-5

def batchnorm(x, gamma, beta, training=True):
    global running_mean, running_var
    if training:
        mean = x.mean(dim=0, keepdim=True)
        var = x.var(dim=0, unbiased=False, keepdim=True)
        with torch.no_grad():
            running_mean.mul_(1 - momentum).add_(momentum * mean.squeeze(0))
            running_var.mul_(1 - momentum).add_(momentum * x.var(dim=0, unbiased=True))
    else:
        mean, var = running_mean, running_var
    x_hat = (x - mean) / torch.sqrt(var + eps)
    return gamma * x_hat + beta

out = batchnorm(x, gamma, beta)
print("out mean ~0:", bool(out.mean(0).abs().max() < 1e-5))
print("out std ", out.std(0, unbiased=False))
print("running", running_mean, running_var)
w = torch.tensor(rng.normal(size=(N, C)), dtype=torch.float32)
loss = (out * w).sum()
loss.backward()
gx_manual = x.grad.clone()
print("dgamma", gamma.grad)
print("dbeta", beta.grad)

# analytic backward formula from the BN paper
with torch.no_grad():
    mu = x.mean(0)
    var = x.var(0, unbiased=False)
    xh = (x - mu) / torch.sqrt(var + eps)
    dxh = w * gamma
    dx = (1.0 / N) / torch.sqrt(var + eps) * (N * dxh - dxh.sum(0) - xh * (dxh * xh).sum(0))
print("analytic dx matches autograd:", torch.allclose(dx, gx_manual, atol=1e-5))
print("dx[0]", gx_manual[0])

# against the library implementation
x.grad = None
rm, rv = torch.zeros(C), torch.ones(C)
ref = F.batch_norm(x, rm, rv, weight=gamma, bias=beta, training=True, momentum=momentum, eps=eps)
print("F.batch_norm max diff", (ref - out).abs().max().item())
print("F.batch_norm running", rm, rv)
(ref * w).sum().backward()
print("grad diff", (x.grad - gx_manual).abs().max().item())

# eval mode
with torch.no_grad():
    ev = batchnorm(x, gamma, beta, training=False)
print("eval out[0]", ev[0])
# layer norm by hand vs F.layer_norm
ln = (x - x.mean(-1, keepdim=True)) / torch.sqrt(x.var(-1, keepdim=True, unbiased=False) + eps)
print("layer_norm diff", (ln - F.layer_norm(x, (C,), eps=eps)).abs().max().item())
