"""Portfolio optimisation: long-only weights as softmax(logits), mean-variance utility with a
sample covariance (torch.cov), historical VaR / CVaR via torch.quantile and sorting, risk
contributions via autograd, and a max-Sharpe fit with gradient ascent.

Covers: torch.cov (rows as variables), torch.corrcoef, torch.quantile (scalar and tensor q,
dim, interpolation), torch.sort / topk / kthvalue, torch.std(correction=...), softmax with dim,
x @ S @ x quadratic forms, autograd.grad with retain_graph for Euler risk decomposition,
torch.clamp(min=), relu, masked means, torch.nanmean with inserted NaNs, float64 <-> float32
conversions, argsort, cummax for drawdowns, mixed integer division, hand-written SGD-momentum
and Adam updates (add_(alpha=), addcdiv_(value=)) under no_grad, and the classic mistakes:
in-place op on a leaf requiring grad, and calling .item() on a multi-element tensor.
"""
import numpy as np
import torch

rng = np.random.default_rng(2024)
T, A = 250, 5
mu_np = np.array([0.0004, 0.0006, 0.0003, 0.0008, 0.0002])
L_np = np.tril(rng.normal(size=(A, A))) * 0.006 + np.eye(A) * 0.004
R = torch.from_numpy(rng.normal(size=(T, A)) @ L_np.T + mu_np)
print("returns", R.shape, R.dtype)
S = torch.cov(R.T)
C = torch.corrcoef(R.T)
print("cov diag", S.diagonal())
print("corr[0]", C[0])
mu = R.mean(0)
print("std (correction=0) vs default", R.std(0, correction=0)[:2], R.std(0)[:2])

logits = torch.zeros(A, dtype=torch.float64, requires_grad=True)
w = torch.softmax(logits, dim=0)
port_var = w @ S @ w
vol = port_var.sqrt()
(g_w,) = torch.autograd.grad(vol, w, retain_graph=True)
rc = w.detach() * g_w
print("equal-weight vol %.6f" % vol.item(), type(vol.grad_fn).__name__)
print("risk contributions", rc, "sum == vol", torch.isclose(rc.sum(), vol.detach()).item())

# mean-variance with risk aversion 5, gradient ascent on logits
buf = torch.zeros_like(logits)
for it in range(60):
    logits.grad = None
    w = torch.softmax(logits, 0)
    util = w @ mu - 5.0 * (w @ S @ w)
    (-util).backward()
    with torch.no_grad():                      # SGD with momentum
        buf.mul_(0.9).add_(logits.grad)
        logits.add_(buf, alpha=-50.0)
    if it % 20 == 0:
        print(f"MV it {it:2d} utility {util.item():.7f}")
print("MV weights", torch.softmax(logits, 0).detach())

# CVaR at 95%: tail mean of losses beyond the VaR quantile
def cvar(w, alpha=0.95):
    losses = -(R @ w)
    var = torch.quantile(losses, alpha)
    tail = losses[losses >= var]
    return var, tail.mean()


w_eq = torch.full((A,), 1.0 / A, dtype=torch.float64, requires_grad=True)
var95, cvar95 = cvar(w_eq)
cvar95.backward()
print("VaR %.6f CVaR %.6f" % (var95.item(), cvar95.item()), "dCVaR/dw", w_eq.grad)
print("quantiles", torch.quantile(R[:, 0], torch.tensor([0.05, 0.5, 0.95], dtype=torch.float64)))
print("quantile dim/keepdim", torch.quantile(R, 0.5, dim=0, keepdim=True).shape,
      torch.quantile(R[:, :2], 0.1, dim=0, interpolation="lower"))
print("median == quantile(0.5) lower", torch.median(R[:, 1]).item() == torch.quantile(R[:, 1], 0.5, interpolation="lower").item())

# Rockafellar-Uryasev smooth CVaR minimisation
z = torch.zeros(A, dtype=torch.float64, requires_grad=True)
tau = torch.tensor(0.0, dtype=torch.float64, requires_grad=True)
state = {id(q): (torch.zeros_like(q), torch.zeros_like(q)) for q in (z, tau)}
for it in range(100):
    z.grad = tau.grad = None
    w = torch.softmax(z, 0)
    losses = -(R @ w)
    obj = tau + torch.relu(losses - tau).mean() / 0.05
    obj.backward()
    with torch.no_grad():                      # Adam
        for q in (z, tau):
            a, b = state[id(q)]
            a.mul_(0.9).add_(0.1 * q.grad)
            b.mul_(0.999).add_(0.001 * q.grad * q.grad)
            q.addcdiv_(a / (1 - 0.9 ** (it + 1)), (b / (1 - 0.999 ** (it + 1))).sqrt().add_(1e-8), value=-0.05)
print("RU CVaR %.6f tau %.6f" % (obj.item(), tau.item()), "weights", torch.softmax(z, 0).detach())

# sorting utilities and drawdown
pnl = (R @ torch.softmax(z, 0)).detach()
wealth = torch.cumprod(1 + pnl, 0)
peak = torch.cummax(wealth, 0).values
dd = (wealth / peak - 1).min()
print("max drawdown %.5f" % dd.item(), "final wealth %.5f" % wealth[-1].item())
vals, idx = torch.sort(pnl)
print("worst 3 days", idx[:3], vals[:3])
print("topk best", torch.topk(pnl, 3).indices, "kthvalue(10)", torch.kthvalue(pnl, 10).values)
print("argsort desc first", torch.argsort(mu, descending=True))
pnl_nan = pnl.clone()
pnl_nan[::50] = float("nan")
print("nanmean %.7f" % torch.nanmean(pnl_nan).item(), "mean is nan", torch.isnan(pnl_nan.mean()).item())
print("days up", (pnl > 0).sum().item(), "of", T, "frac", (pnl > 0).sum().item() / T,
      (pnl > 0).sum() // 7, (pnl > 0).sum() / 7)
print("float32 weights", torch.softmax(z, 0).detach().float())

try:
    w_eq.mul_(2)
except RuntimeError as e:
    print(type(e).__name__, "|", e)
try:
    pnl[:3].item()
except RuntimeError as e:
    print(type(e).__name__, "|", e)
