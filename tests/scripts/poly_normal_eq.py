"""Polynomial regression by normal equations (solve / lstsq / pinv), then check the gradient is ~0.

Covers: float64 data from numpy, linalg.solve / lstsq / pinv / norm / cond / det / slogdet,
differentiating through solve (wrt the right-hand side and the matrix), gradcheck.
Edited from the audit version: the gradient at the optimum is round-off noise of order 1e-16
whose signs differ between implementations; it is printed rounded.
"""
import numpy as np
import torch

rng = np.random.default_rng(2)
x_np = np.sort(rng.uniform(-1, 1, 50))
y_np = 0.5 - 1.2 * x_np + 2.0 * x_np ** 3 + rng.normal(scale=0.05, size=50)
x = torch.tensor(x_np)           # float64
y = torch.tensor(y_np)
print(x.dtype, y.dtype)

deg = 3
A = torch.stack([x ** k for k in range(deg + 1)], dim=1)
print("design", A.shape)
AtA = A.T @ A
Aty = A.T @ y
coef = torch.linalg.solve(AtA, Aty)
print("solve coef:", coef)
coef2 = torch.linalg.lstsq(A, y.unsqueeze(1)).solution.squeeze(1)
print("lstsq coef:", coef2)
print("max diff", (coef - coef2).abs().max().item())
coef3 = torch.linalg.pinv(A) @ y
print("pinv coef", coef3)

# gradient of the mean squared error at the solution should vanish
c = coef.clone().requires_grad_(True)
mse = ((A @ c - y) ** 2).mean()
mse.backward()
print("mse at optimum", mse.item())
# (the gradient itself is round-off noise of order 1e-16: print it rounded, not raw)
print("grad at optimum", [round(g, 8) for g in c.grad.tolist()])
print("grad small:", bool(c.grad.abs().max() < 1e-10))

# differentiate the solution itself wrt the targets (implicit function through solve)
yy = y.clone().requires_grad_()
sol = torch.linalg.solve(A.T @ A, A.T @ yy)
sol[3].backward()
print("d coef3 / d y (first 5):", yy.grad[:5])

# gradient check of a loss through solve wrt the design entries
def f(Ain):
    return torch.linalg.solve(Ain.T @ Ain + 0.1 * torch.eye(deg + 1, dtype=Ain.dtype), Ain.T @ y[:10]).sum()
Ain = A[:10].clone().requires_grad_()
print("gradcheck solve:", torch.autograd.gradcheck(f, (Ain,)))
r = torch.linalg.norm(A @ coef - y)
print("residual norm", r, "cond", torch.linalg.cond(AtA).item() > 1)
print(torch.linalg.det(AtA), torch.linalg.slogdet(AtA))
