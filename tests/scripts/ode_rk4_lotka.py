"""Lotka-Volterra predator-prey ODE integrated with classic RK4; gradient of a final-state
misfit with respect to the four rate parameters, compared with a finite difference.

Covers: RK4 stages built with torch.stack / unbind, float64 time stepping, a trajectory kept
in a Python list and torch.stack'ed, slicing with a stride, mse over a subsampled trajectory,
grad_fn names, printing tensors with print(t), torch.no_grad finite differences, in-place
parameter updates under no_grad (gradient descent steps), .grad.zero_(), backward twice without
retain_graph (error) and .numpy() on a tensor requiring grad (error).
"""
import numpy as np
import torch

rng = np.random.default_rng(0)
theta_true = np.array([1.1, 0.4, 0.1, 0.4])
dt, steps = 0.05, 120


def rhs(z, th):
    prey, pred = z.unbind(-1)
    a, b, c, d = th.unbind()
    return torch.stack([a * prey - b * prey * pred, c * prey * pred - d * pred], dim=-1)


def rk4(z0, th):
    z = z0
    out = [z]
    for _ in range(steps):
        k1 = rhs(z, th)
        k2 = rhs(z + 0.5 * dt * k1, th)
        k3 = rhs(z + 0.5 * dt * k2, th)
        k4 = rhs(z + dt * k3, th)
        z = z + dt / 6.0 * (k1 + 2 * k2 + 2 * k3 + k4)
        out.append(z)
    return torch.stack(out)


z0 = torch.tensor([10.0, 5.0], dtype=torch.float64)
with torch.no_grad():
    traj_true = rk4(z0, torch.tensor(theta_true))
obs = traj_true[::10] + torch.from_numpy(rng.normal(0, 0.1, size=(13, 2)))
print("obs shape", obs.shape, obs.dtype)
print("obs[:3]", obs[:3])

theta = torch.tensor([1.0, 0.5, 0.12, 0.35], dtype=torch.float64, requires_grad=True)
traj = rk4(z0, theta)
print("traj", traj.shape, type(traj.grad_fn).__name__)
loss = ((traj[::10] - obs) ** 2).mean()
print("loss", loss)
print("loss grad_fn", loss.grad_fn.name())
loss.backward()
print("grad", theta.grad)

# central finite difference on parameter 2
with torch.no_grad():
    eps = 1e-6
    e = torch.zeros(4, dtype=torch.float64)
    e[2] = eps
    lp = ((rk4(z0, theta + e)[::10] - obs) ** 2).mean()
    lm = ((rk4(z0, theta - e)[::10] - obs) ** 2).mean()
    print("fd grad[2] %.6f  autograd %.6f" % (((lp - lm) / (2 * eps)).item(), theta.grad[2].item()))

try:
    loss.backward()
except RuntimeError as e:
    print(type(e).__name__, "|", str(e).split(".")[0])

try:
    theta.numpy()
except RuntimeError as e:
    print(type(e).__name__, "|", e)

# a few gradient descent steps with per-parameter scaling
lr = torch.tensor([1e-3, 1e-3, 1e-4, 1e-3], dtype=torch.float64)
for it in range(4):
    theta.grad.zero_()
    loss = ((rk4(z0, theta)[::10] - obs) ** 2).mean()
    loss.backward()
    with torch.no_grad():
        theta -= lr * theta.grad.clamp(-50, 50)
    print(f"it {it} loss {loss.item():.6f} theta {theta.detach().numpy().round(5)}")
print(theta)
print("final peak prey", traj.detach()[:, 0].max().item().__round__(4), "at", traj[:, 0].argmax().item())
