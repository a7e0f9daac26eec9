"""Gaussian-process regression: optimise RBF hyperparameters by minimising the negative log
marginal likelihood (float64).

Covers: linalg.cholesky / cholesky_solve / solve / slogdet / solve_triangular / logdet with
gradients, log-parameterised hyperparameters, a posterior under no_grad.
"""
import math
import numpy as np
import torch

rng = np.random.default_rng(7)
Xn = np.sort(rng.uniform(0, 5, 25))[:, None]
yn = np.sin(Xn[:, 0]) + 0.1 * rng.normal(size=25)
X = torch.from_numpy(Xn)     # float64
y = torch.from_numpy(yn)
n = X.shape[0]

log_ls = torch.tensor(0.0, dtype=torch.float64, requires_grad=True)
log_sf = torch.tensor(0.0, dtype=torch.float64, requires_grad=True)
log_sn = torch.tensor(-1.0, dtype=torch.float64, requires_grad=True)

def kernel(A, B, ls, sf):
    d2 = (A - B.T) ** 2
    return sf ** 2 * torch.exp(-0.5 * d2 / ls ** 2)

def nlml(log_ls, log_sf, log_sn):
    K = kernel(X, X, log_ls.exp(), log_sf.exp()) + (log_sn.exp() ** 2 + 1e-8) * torch.eye(n, dtype=X.dtype)
    L = torch.linalg.cholesky(K)
    alpha = torch.cholesky_solve(y.unsqueeze(-1), L)
    return 0.5 * (y @ alpha.squeeze(-1)) + torch.log(torch.diagonal(L)).sum() + 0.5 * n * math.log(2 * math.pi)

def nlml_solve(log_ls, log_sf, log_sn):
    K = kernel(X, X, log_ls.exp(), log_sf.exp()) + (log_sn.exp() ** 2 + 1e-8) * torch.eye(n, dtype=X.dtype)
    alpha = torch.linalg.solve(K, y)
    sign, logdet = torch.linalg.slogdet(K)
    return 0.5 * y.dot(alpha) + 0.5 * logdet + 0.5 * n * math.log(2 * math.pi)

v1 = nlml(log_ls, log_sf, log_sn)
v2 = nlml_solve(log_ls, log_sf, log_sn)
print("nlml chol", v1.item(), "solve", v2.item())
g1 = torch.autograd.grad(v1, (log_ls, log_sf, log_sn))
g2 = torch.autograd.grad(v2, (log_ls, log_sf, log_sn))
print("grads chol ", [round(g.item(), 8) for g in g1])
print("grads solve", [round(g.item(), 8) for g in g2])

params = [log_ls, log_sf, log_sn]
lr = 0.05
for it in range(100):
    loss = nlml(*params)
    for p in params:
        p.grad = None
    loss.backward()
    with torch.no_grad():
        for p in params:
            p -= lr * p.grad
    if it % 25 == 0:
        print(f"it {it:3d} nlml {loss.item():.6f} ls {log_ls.exp().item():.4f} sf {log_sf.exp().item():.4f} sn {log_sn.exp().item():.4f}")
print("final", loss)

# posterior mean at test points, triangular solve variant
with torch.no_grad():
    Xs = torch.linspace(0, 5, 6, dtype=torch.float64).unsqueeze(1)
    K = kernel(X, X, log_ls.exp(), log_sf.exp()) + log_sn.exp() ** 2 * torch.eye(n, dtype=torch.float64)
    L = torch.linalg.cholesky(K)
    Ks = kernel(X, Xs, log_ls.exp(), log_sf.exp())
    v = torch.linalg.solve_triangular(L, Ks, upper=False)
    a = torch.linalg.solve_triangular(L, y.unsqueeze(1), upper=False)
    mean = (v.T @ a).squeeze(1)
    var = log_sf.exp() ** 2 - (v ** 2).sum(0)
print("posterior mean", mean)
print("posterior std ", var.sqrt())
print("true", torch.sin(Xs.squeeze(1)))
print("logdet check", torch.logdet(K).item(), 2 * torch.log(torch.diag(L)).sum().item())
