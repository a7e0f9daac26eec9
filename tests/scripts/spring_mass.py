"""Damped spring-mass chain integrated with semi-implicit Euler; d(final energy)/d(initial state).

Covers: float64 time stepping over 300 steps, in-place `+=` on non-leaf tensors and slices
(f[:-1] += ...), writing rows of a preallocated trajectory buffer (traj[i + 1] = x) and
differentiating through it, _version counters.
"""
import numpy as np
import torch

n = 4
k = torch.tensor([1.0, 2.0, 1.5, 0.5], dtype=torch.float64)
m = torch.tensor([1.0, 0.5, 2.0, 1.0], dtype=torch.float64)
damping = 0.05
dt = 0.01
steps = 300

x0 = torch.tensor([0.1, -0.2, 0.3, 0.0], dtype=torch.float64, requires_grad=True)
v0 = torch.zeros(n, dtype=torch.float64, requires_grad=True)

def forces(x, v):
    ext = torch.cat([x[:1], x[1:] - x[:-1]])           # spring extensions, wall at 0
    f = -k * ext
    f[:-1] += k[1:] * ext[1:]                          # in-place on a non-leaf
    return f - damping * v

def energy(x, v):
    ext = torch.cat([x[:1], x[1:] - x[:-1]])
    return 0.5 * (m * v ** 2).sum() + 0.5 * (k * ext ** 2).sum()

x = x0.clone()
v = v0.clone()
traj = torch.zeros(steps + 1, n, dtype=torch.float64)
traj[0] = x
for i in range(steps):
    a = forces(x, v) / m
    v = v + dt * a
    x = x + dt * v
    traj[i + 1] = x
    if i % 100 == 0:
        print(f"step {i:3d} E = {energy(x, v).item():.8f}")

E = energy(x, v)
print("final energy", E)
E.backward(retain_graph=True)
print("dE/dx0", x0.grad)
print("dE/dv0", v0.grad)
print("traj grad_fn", type(traj.grad_fn).__name__, traj.requires_grad)

# same thing with in-place updates on the state buffers
x0.grad = None; v0.grad = None
x = x0.clone()
v = v0.clone()
for i in range(steps):
    a = forces(x, v) / m
    v += dt * a
    x += dt * v
E2 = energy(x, v)
E2.backward()
print("in-place: E", E2.item(), "dE/dx0", x0.grad)
print("x grad_fn after in-place:", x.grad_fn.name(), x._version > 0)

# trajectory-based loss: distance to a target trajectory midpoint
x0.grad = None
target = traj.detach()[150] * 0.5
loss = ((traj[150] - target) ** 2).sum()
loss.backward()
print("traj loss", loss.item(), "grad", x0.grad)
