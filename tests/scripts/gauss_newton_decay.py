"""Fitting a bi-exponential decay y = a1 exp(-k1 t) + a2 exp(-k2 t) by Gauss-Newton and by
Newton's method, with torch.autograd.functional.jacobian / hessian / vjp / jvp.

Covers: functional.jacobian of a vector function (shape (m, p)), functional.hessian of a
scalar loss, linalg.solve, linalg.lstsq, linalg.eigvalsh, diag / diag_embed, damping with
torch.eye, vjp / jvp / hvp agreement checks, float64 printing with set_printoptions, torch.log
of parameters (positivity via exp), jacobian with create_graph=False vs vectorize defaults,
tuple inputs to jacobian, and a wrong-shape solve (error).
"""
import numpy as np
import torch
from torch.autograd.functional import hessian, hvp, jacobian, jvp, vjp

torch.set_printoptions(precision=6)
rng = np.random.default_rng(7)
t = torch.linspace(0.0, 4.0, 25, dtype=torch.float64)
p_true = torch.tensor([2.0, 1.5, 0.7, 0.3], dtype=torch.float64)   # a1, k1, a2, k2


def model(p):
    a1, k1, a2, k2 = p[0], p[1], p[2], p[3]
    return a1 * torch.exp(-k1 * t) + a2 * torch.exp(-k2 * t)


y = model(p_true) + torch.from_numpy(rng.normal(0.0, 0.01, size=25))


def resid(p):
    return model(p) - y


def loss(p):
    return 0.5 * (resid(p) ** 2).sum()


p = torch.tensor([1.5, 1.0, 1.0, 0.2], dtype=torch.float64)
J = jacobian(resid, p)
print("J", J.shape, J.dtype, J.requires_grad)
print(J[:3])

lam = 1e-3
for it in range(8):
    r = resid(p)
    J = jacobian(resid, p)
    A = J.T @ J + lam * torch.eye(4, dtype=torch.float64)
    step = torch.linalg.solve(A, -J.T @ r)
    p = p + step
    print(f"GN it {it} loss {loss(p).item():.3e} |step| {step.norm().item():.3e}")
print("GN estimate", p)

H = hessian(loss, p)
print("H symmetric", torch.allclose(H, H.T), "eigvals", torch.linalg.eigvalsh(H))
g = torch.func.grad(loss)(p) if hasattr(torch, "func") else None
print("grad at optimum ~ 0:", g.abs().max().item() < 1e-6)

# Gauss-Newton approximates the Hessian near a small-residual optimum
Jopt = jacobian(resid, p)
print("rel diff H vs JtJ %.4f" % ((H - Jopt.T @ Jopt).norm() / H.norm()).item())

# Newton on log-parameters from a different start
q = torch.log(p.detach() * torch.tensor([1.1, 0.9, 1.05, 0.95], dtype=torch.float64))
f = lambda q: loss(torch.exp(q))
for it in range(6):
    gq = jacobian(f, q)
    Hq = hessian(f, q)
    ev = torch.linalg.eigvalsh(Hq)
    shift = torch.clamp(-2 * ev.min(), min=0.0) + 1e-8
    q = q - torch.linalg.solve(Hq + shift * torch.eye(4, dtype=torch.float64), gq)
    print(f"Newton it {it} loss {f(q).item():.6e} min eig {ev.min().item():.3e}")
print("Newton estimate", torch.exp(q))

# linear least squares for the amplitudes given the rates (variable projection)
k = torch.exp(q)[[1, 3]]
B = torch.exp(-t[:, None] * k[None, :])
sol = torch.linalg.lstsq(B, y[:, None]).solution
print("amplitudes", sol.squeeze(1))

# vjp / jvp / hvp consistency
v = torch.tensor([1.0, -1.0, 0.5, 2.0], dtype=torch.float64)
u = torch.from_numpy(rng.normal(size=25))
_, vj = vjp(resid, p, u)
_, jv = jvp(resid, p, v)
print("<u, Jv> = <J^T u, v>:", torch.allclose(u @ jv, vj @ v), "%.8f" % (u @ jv).item())
_, hv = hvp(loss, p, v)
print("hvp matches H @ v:", torch.allclose(hv, H @ v))

# jacobian with two inputs
Ja, Jb = jacobian(lambda a, b: (a[:, None] * b[None, :]).sum(0), (p[:2], p[2:]))
print("tuple jacobian", Ja.shape, Jb.shape)
print(Ja)

try:
    torch.linalg.solve(A, torch.ones(5, dtype=torch.float64))
except RuntimeError as e:
    print(type(e).__name__, "|", e)
torch.set_printoptions(profile="default")
print(p.float())
