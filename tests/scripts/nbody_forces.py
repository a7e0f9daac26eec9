"""Lennard-Jones cluster: potential energy from pairwise distances, forces as -dE/dx via
torch.autograd.grad(create_graph=True), a force-matching loss differentiated w.r.t. epsilon and
sigma, and a few steps of velocity-Verlet.

Covers: torch.triu_indices, advanced indexing with index tensors, cdist-free pairwise
differences by broadcasting (x[:, None] - x[None]), boolean masks with masked_fill / where,
norm(dim=-1), autograd.grad with create_graph, double backward, keepdim reductions,
in-place position updates under no_grad, detach_/requires_grad_, float32 vs float64,
index_add_, printing grad_fn names, in-place modification of a tensor needed for backward
(error), shape mismatch (error).
"""
import numpy as np
import torch

rng = np.random.default_rng(42)
n = 7
grid = np.stack(np.meshgrid(np.arange(2), np.arange(2), np.arange(2)), -1).reshape(-1, 3)[:n]
pos0 = grid * 1.12 + rng.normal(0, 0.05, size=(n, 3))

pos = torch.tensor(pos0, dtype=torch.float64, requires_grad=True)
eps_ = torch.tensor(1.0, dtype=torch.float64, requires_grad=True)
sigma = torch.tensor(1.0, dtype=torch.float64, requires_grad=True)


def energy(x, eps_, sigma):
    i, j = torch.triu_indices(x.shape[0], x.shape[0], offset=1)
    r = (x[i] - x[j]).norm(dim=-1)
    sr6 = (sigma / r) ** 6
    return (4 * eps_ * (sr6 ** 2 - sr6)).sum()


E = energy(pos, eps_, sigma)
print("E", E)
print("E grad_fn", type(E.grad_fn).__name__)
(dE,) = torch.autograd.grad(E, pos, create_graph=True)
F = -dE
print("forces", F.shape, type(F.grad_fn).__name__)
print(F)
print("net force ~ 0:", F.sum(0).abs().max().item() < 1e-10)

# dense version with a diagonal mask gives the same energy
diff = pos[:, None, :] - pos[None, :, :]
r2 = (diff ** 2).sum(-1)
eye = torch.eye(n, dtype=torch.bool)
r2 = r2.masked_fill(eye, 1.0)
inv6 = torch.where(eye, torch.zeros_like(r2), r2.reciprocal() ** 3)
E_dense = 2 * (inv6 ** 2 - inv6).sum()
print("dense E %.10f" % E_dense.item(), "same:", torch.allclose(E, E_dense))

# force matching: targets from a slightly different potential
with torch.no_grad():
    x_t = pos.detach().clone().requires_grad_(True)
with torch.enable_grad():
    Et = energy(x_t, torch.tensor(1.2, dtype=torch.float64), torch.tensor(0.97, dtype=torch.float64))
    F_target = -torch.autograd.grad(Et, x_t)[0]
loss = ((F - F_target) ** 2).sum(dim=1, keepdim=True).mean()
print("force-matching loss", loss)
g_eps, g_sigma = torch.autograd.grad(loss, [eps_, sigma], retain_graph=True)
print("d/deps %.6f d/dsigma %.6f" % (g_eps.item(), g_sigma.item()))

# per-atom energy accumulation via index_add_
i, j = torch.triu_indices(n, n, offset=1)
r = (pos[i] - pos[j]).norm(dim=-1)
pair = 4 * ((1 / r) ** 12 - (1 / r) ** 6)
per_atom = torch.zeros(n, dtype=torch.float64).index_add_(0, i, 0.5 * pair).index_add_(0, j, 0.5 * pair)
print("per-atom", per_atom)
print("sum matches", torch.isclose(per_atom.sum(), E).item(), type(per_atom.grad_fn).__name__)

# velocity Verlet, float32
x = pos.detach().float().clone()
v = torch.zeros_like(x)
dt = 0.002
for step in range(30):
    x.requires_grad_(True)
    e = energy(x, 1.0, 1.0)
    f = -torch.autograd.grad(e, x)[0]
    with torch.no_grad():
        v += 0.5 * dt * f
        x += dt * v
    x = x.detach()
    if step % 10 == 0:
        print(f"step {step:2d} E {e.item():.5f} |v|max {v.norm(dim=1).max().item():.5f}")
print("x dtype", x.dtype, "v", v.dtype, x.requires_grad)

try:
    y = pos * 2
    z = y.sin()
    y.add_(1.0)
    z.sum().backward()
except RuntimeError as e:
    print(type(e).__name__, "|", "modified by an inplace operation" in str(e))

try:
    pos + torch.ones(3, 7, dtype=torch.float64)
except RuntimeError as e:
    print(type(e).__name__, "|", e)
