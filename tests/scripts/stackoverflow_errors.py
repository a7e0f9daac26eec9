"""Errors beginners hit (and StackOverflow answers quote) while training with autograd.

Covers: exception types and messages for dtype/shape/broadcast mismatches, non-scalar backward,
bad cross_entropy targets, in-place modification of saved tensors, leaf views, integer
requires_grad, double backward, .numpy() on tensors requiring grad, view vs reshape, index
errors. W comes from torch.randn but only error messages and shapes are printed.
"""
import numpy as np
import torch
import torch.nn.functional as F

rng = np.random.default_rng(10)
X = torch.from_numpy(rng.normal(size=(8, 3)))          # float64 by accident
W = torch.randn(3, 2, requires_grad=True)              # float32

def show(fn):
    try:
        r = fn()
        print("ok:", r)
    except Exception as e:
        print(f"{type(e).__name__}: {e}")

print(X.dtype, W.dtype)
show(lambda: X @ W)                                      # dtype mismatch
show(lambda: (X.float() @ W).shape)
show(lambda: torch.mm(X.float(), W.t()))                 # shape mismatch
show(lambda: X.float() @ torch.ones(4, 2))
show(lambda: X.float() + torch.ones(4))                  # broadcast mismatch
show(lambda: (X.float() @ W).backward())                 # non-scalar backward
show(lambda: (X.float() @ W).item())
show(lambda: F.cross_entropy(torch.zeros(4, 3), torch.tensor([0., 1., 2., 1.])))  # float targets (probabilities? shape mismatch)
show(lambda: F.cross_entropy(torch.zeros(4, 3), torch.tensor([0, 1, 2, 1], dtype=torch.int32)))
show(lambda: F.cross_entropy(torch.zeros(4, 3), torch.tensor([0, 1, 3, 1])))     # target out of range
show(lambda: F.mse_loss(torch.zeros(4, 1), torch.zeros(4)))                       # broadcasting warning
show(lambda: F.nll_loss(torch.zeros(4, 3), torch.tensor([0, 1, 2, 1])))
# in-place modification of a saved tensor
a = torch.tensor([1.0, 2.0, 3.0], requires_grad=True)
b = a.exp()
c = (b * 2).sum() + b.sum()
b2 = a.sigmoid()
b2.mul_(2)
show(lambda: b2.sum().backward())
e = a.exp()
s = e.sum()
e.add_(1)
show(lambda: s.backward())
show(lambda: a.grad)
f = a.exp()
g = (f ** 2).sum()
f += 1
show(lambda: g.backward())
# leaf view in-place
show(lambda: a[0].mul_(2))
# grad of non-leaf
h = a * 3
show(lambda: h.sum().backward())
print("nonleaf grad:", h.grad)
# requires_grad on int tensor
show(lambda: torch.tensor([1, 2, 3], requires_grad=True))
show(lambda: torch.arange(3).requires_grad_())
# calling backward twice
k = (a ** 2).sum()
k.backward()
show(lambda: k.backward())
# .numpy() on requires-grad
show(lambda: (a * 2).numpy())
# view after transpose
show(lambda: torch.ones(2, 3).t().view(-1))
show(lambda: torch.ones(2, 3).t().reshape(-1))
show(lambda: torch.ones(2, 3).view(4, -1))
# index errors
show(lambda: torch.ones(3)[5])
show(lambda: torch.ones(2, 2).sum(dim=2))
show(lambda: torch.cat([torch.ones(2, 2), torch.ones(3, 3)]))
show(lambda: torch.stack([torch.ones(2), torch.ones(3)]))
show(lambda: torch.ones(2, 2).to(torch.long).mean())
show(lambda: torch.autograd.grad(torch.ones(2, requires_grad=True).sum() * 0 + 1.0, torch.ones(2)))
