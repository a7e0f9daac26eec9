"""1-D heat equation on a periodic rod with an explicit finite-difference stencil (torch.roll)
and on a Dirichlet rod (slicing); inverse problem: recover a spatially varying conductivity
from final temperatures, plus a 2-D Laplacian via F.conv2d and a trapezoid / cumsum energy
budget.

Covers: torch.roll, slicing-based stencils with torch.cat of boundary values, F.pad,
cumsum / cumprod / diff, torch.trapezoid, periodic padding by torch.cat of wrapped slices with a sliced
5-point stencil, softplus-parameterised
conductivity fitted with a hand-written Adam (lerp_, sub_ under no_grad), in-place boundary writes on a clone (u[..., 0] = 0), torch.where on a mask
region, index_select / gather along a dim, nonzero, torch.linspace / arange dtypes, mean with
dim and keepdim, float32 simulation, gradient via backward and via autograd.grad,
max(dim) returning (values, indices), and a view + in-place error on a leaf.
"""
import numpy as np
import torch
import torch.nn.functional as F

nx, nt = 64, 400
dx = 1.0 / nx
dt = 0.2 * dx * dx
x = torch.arange(nx, dtype=torch.float32) * dx
print("x", x.dtype, x[:4], x[-1].item())
u0 = torch.exp(-((x - 0.5) ** 2) / 0.01) + 0.3 * torch.sin(2 * torch.pi * x)
print("u0 stats %.5f %.5f" % (u0.mean().item(), u0.std().item()))


def step_periodic(u, kappa):
    flux = kappa * (torch.roll(u, -1, dims=-1) - u) / dx          # at i+1/2
    return u + dt * (flux - torch.roll(flux, 1, dims=-1)) / dx


def step_dirichlet(u, kappa):
    ku = kappa[1:] * (u[1:] - u[:-1]) / dx
    lap = torch.cat([torch.zeros(1), (ku[1:] - ku[:-1]) / dx, torch.zeros(1)])
    un = u + dt * lap
    un = un.clone()
    un[0] = 0.0
    un[-1] = 0.0
    return un


kappa_true = 1.0 + 0.5 * torch.sigmoid((x - 0.3) * 40) - 0.4 * torch.sigmoid((x - 0.7) * 40)
u = u0.clone()
for _ in range(nt):
    u = step_periodic(u, kappa_true)
u_obs = u
print("heat conserved (periodic):", torch.allclose(u_obs.sum(), u0.sum(), rtol=1e-4))
print("u_obs max", u_obs.max(dim=0))

# inverse problem on softplus(rho)
rho = torch.zeros(nx, requires_grad=True)
m1 = torch.zeros(nx)
m2 = torch.zeros(nx)
for it in range(15):
    rho.grad = None
    kappa = F.softplus(rho) / F.softplus(torch.zeros(()))
    u = u0
    for _ in range(nt):
        u = step_periodic(u, kappa)
    misfit = ((u - u_obs) ** 2).mean()
    reg = (torch.diff(rho) ** 2).sum() * 1e-4
    loss = misfit + reg
    loss.backward()
    with torch.no_grad():                     # Adam
        m1.lerp_(rho.grad, 0.1)
        m2.mul_(0.999).add_(rho.grad ** 2, alpha=0.001)
        rho.sub_(0.1 * m1 / (1 - 0.9 ** (it + 1)) / ((m2 / (1 - 0.999 ** (it + 1))).sqrt() + 1e-8))
    if it % 5 == 0:
        print(f"it {it:2d} misfit {misfit.item():.4e} reg {reg.item():.3e} |g| {rho.grad.norm().item():.4e}")
print("kappa estimate at 0.1/0.5/0.9:", kappa.detach()[[6, 32, 57]])

# Dirichlet rod: sensitivity of total heat to the initial condition
v0 = u0.clone().requires_grad_(True)
v = v0.clone()
v[0] = 0.0
v[-1] = 0.0
for _ in range(200):
    v = step_dirichlet(v, kappa_true)
total = torch.trapezoid(v, dx=dx)
(g,) = torch.autograd.grad(total, v0)
print("total heat %.6f" % total.item(), "sensitivity ends", g[:3], g[-2:])
print("cumsum heat profile", torch.cumsum(v.detach(), 0)[::16] * dx)
print("cumprod decay", torch.cumprod(torch.full((5,), 0.9), 0))
print("interior nonzero grads", (g.abs() > 1e-12).nonzero().squeeze(1)[:5], g.dtype)

# 2-D Laplacian on a periodically padded image (cat of wrapped slices), gradient of a smoothness energy
rng = np.random.default_rng(0)
img = torch.tensor(rng.normal(size=(1, 1, 12, 12)), dtype=torch.float32, requires_grad=True)
P = torch.cat([img[..., -1:], img, img[..., :1]], dim=-1)          # periodic wrap by hand
P = torch.cat([P[:, :, -1:], P, P[:, :, :1]], dim=2)
lap = P[:, :, :-2, 1:-1] + P[:, :, 2:, 1:-1] + P[:, :, 1:-1, :-2] + P[:, :, 1:-1, 2:] - 4 * P[:, :, 1:-1, 1:-1]
E = 0.5 * (lap ** 2).sum()
E.backward()
print("lap", lap.shape, type(lap.grad_fn).__name__, "E %.4f" % E.item())
lap_roll = (torch.roll(img, 1, 2) + torch.roll(img, -1, 2) + torch.roll(img, 1, 3)
            + torch.roll(img, -1, 3) - 4 * img)
print("padded == roll stencil", torch.allclose(lap, lap_roll, atol=1e-5))
print("grad row means", img.grad.mean(dim=3, keepdim=True).squeeze()[:4])
cols = torch.tensor([0, 5, 11])
print("index_select", img.grad[0, 0].index_select(1, cols)[:2])
print("gather", torch.gather(img.detach()[0, 0], 1, cols.expand(12, 3))[:2])
hot = torch.where(u0 > 0.5, u0, torch.zeros_like(u0))
print("hot region", hot.nonzero().flatten()[[0, -1]], hot.sum())

try:
    leaf = torch.zeros(nx, requires_grad=True)
    leaf[0] = 1.0
except RuntimeError as e:
    print(type(e).__name__, "|", e)
