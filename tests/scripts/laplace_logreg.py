"""Bayesian logistic regression with a Laplace approximation: MAP by Newton's method with the
exact Hessian, posterior covariance from a Cholesky factor, log marginal likelihood (evidence)
with slogdet, and a predictive probit approximation; gradient of the evidence w.r.t. the prior
precision (type-II maximum likelihood).

Covers: F.logsigmoid, F.binary_cross_entropy_with_logits(reduction="sum"), functional.hessian,
linalg.cholesky, cholesky_solve, linalg.solve_triangular, linalg.slogdet (sign, logabsdet),
logdet, torch.diag / diag_embed, einsum("ij,jk,ik->i"), torch.erf-based probit, torch.cat of a
bias column, boolean accuracy with .float().mean(), gradient through cholesky and slogdet,
autograd.grad of a nested-Newton evidence w.r.t. a hyperparameter, a non-PD Cholesky (error:
torch.linalg.LinAlgError) and a float/double matmul mix (error).
"""
import numpy as np
import torch
import torch.nn.functional as F
from torch.autograd.functional import hessian

rng = np.random.default_rng(5)
N, D = 80, 3
Xn = rng.normal(size=(N, D))
w_true = np.array([1.5, -2.0, 0.5])
yn = (rng.uniform(size=N) < 1 / (1 + np.exp(-(Xn @ w_true + 0.3)))).astype(np.float64)
X = torch.cat([torch.ones(N, 1, dtype=torch.float64), torch.from_numpy(Xn)], dim=1)
y = torch.from_numpy(yn)
print("X", X.shape, X.dtype, "positives", int(y.sum().item()))


def neg_log_post(w, alpha):
    nll = F.binary_cross_entropy_with_logits(X @ w, y, reduction="sum")
    return nll + 0.5 * alpha * (w ** 2).sum()


def laplace(alpha, iters=12):
    w = torch.zeros(D + 1, dtype=torch.float64)
    for _ in range(iters):
        w = w.detach().requires_grad_(True)
        g = torch.autograd.grad(neg_log_post(w, alpha), w)[0]
        H = hessian(lambda v: neg_log_post(v, alpha.detach()), w.detach())
        w = w - torch.linalg.solve(H, g)
    return w.detach()


alpha = torch.tensor(1.0, dtype=torch.float64)
w_map = laplace(alpha)
print("w_map", w_map)
wq = w_map.clone().requires_grad_(True)
print("nll via logsigmoid %.6f" % (-(y * F.logsigmoid(X @ wq) + (1 - y) * F.logsigmoid(-(X @ wq))).sum()).item())

# Hessian in closed form: X^T diag(s(1-s)) X + alpha I
s = torch.sigmoid(X @ w_map)
H = X.T @ torch.diag(s * (1 - s)) @ X + alpha * torch.eye(D + 1, dtype=torch.float64)
H_ad = hessian(lambda v: neg_log_post(v, alpha), w_map)
print("closed-form Hessian matches autograd:", torch.allclose(H, H_ad))
L = torch.linalg.cholesky(H)
print("L", L)
cov = torch.cholesky_solve(torch.eye(D + 1, dtype=torch.float64), L)
print("posterior sd", cov.diagonal().sqrt())
sign, logabsdet = torch.linalg.slogdet(H)
print("slogdet", sign.item(), "%.6f" % logabsdet.item(), "2*sum log diag L %.6f" % (2 * L.diagonal().log().sum()).item())

# predictive probit approximation
Xt = torch.tensor([[1.0, 0.5, -0.5, 0.0], [1.0, -1.0, 1.0, 2.0], [1.0, 0.0, 0.0, 0.0]], dtype=torch.float64)
mu = Xt @ w_map
var = torch.einsum("ij,jk,ik->i", Xt, cov, Xt)
kappa = 1 / torch.sqrt(1 + torch.pi * var / 8)
p_pred = torch.sigmoid(kappa * mu)
print("predictive", p_pred, "vs plug-in", torch.sigmoid(mu))
z = torch.linalg.solve_triangular(L, Xt.T, upper=False)
print("var via triangular solve matches", torch.allclose((z ** 2).sum(0), var))
acc = ((X @ w_map > 0).float() == y.float()).float().mean()
print("train accuracy %.4f" % acc.item(), acc.dtype)


# evidence as a function of log alpha (Laplace), gradient through cholesky/slogdet
def log_evidence(log_alpha):
    a = log_alpha.exp()
    w = laplace(a)
    wv = w.requires_grad_(False)
    sg = torch.sigmoid(X @ wv)
    Ha = X.T @ ((sg * (1 - sg))[:, None] * X) + a * torch.eye(D + 1, dtype=torch.float64)
    Lc = torch.linalg.cholesky(Ha)
    return (-neg_log_post(wv, a) + 0.5 * (D + 1) * torch.log(a) - Lc.diagonal().log().sum())


for la in [-2.0, 0.0, 2.0]:
    log_alpha = torch.tensor(la, dtype=torch.float64, requires_grad=True)
    ev = log_evidence(log_alpha)
    (g,) = torch.autograd.grad(ev, log_alpha)
    print(f"log alpha {la:+.1f} evidence {ev.item():.5f} d/dlog alpha {g.item():+.5f}")
log_alpha = torch.tensor(0.0, dtype=torch.float64, requires_grad=True)
for it in range(5):
    ev = log_evidence(log_alpha)
    (g,) = torch.autograd.grad(ev, log_alpha)
    with torch.no_grad():
        log_alpha += 0.5 * g
print("type-II alpha %.4f" % log_alpha.exp().item())
print("logdet == slogdet", torch.isclose(torch.logdet(H), logabsdet).item())
Hg = H.clone().requires_grad_(True)
torch.linalg.slogdet(Hg).logabsdet.backward()
print("d logdet / dH = H^-1:", torch.allclose(Hg.grad, torch.linalg.inv(H)))

try:
    torch.linalg.cholesky(H - 100 * torch.eye(D + 1, dtype=torch.float64))
except torch.linalg.LinAlgError as e:
    print(type(e).__name__, "|", str(e).split(":")[0], "| is RuntimeError", isinstance(e, RuntimeError))
try:
    X.float() @ w_map
except RuntimeError as e:
    print(type(e).__name__, "|", e)
