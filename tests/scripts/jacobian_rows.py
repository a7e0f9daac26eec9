"""Jacobian of a vector function computed row by row with torch.autograd.grad.

Covers: grad with retain_graph / grad_outputs / is_grads_batched / allow_unused,
autograd.functional.jacobian, backward(vector), and the RuntimeErrors people hit (unused input,
non-scalar output, backward of a tensor that does not require grad).
"""
import torch

def fn(x):
    return torch.stack([
        x[0] * x[1],
        torch.sin(x[2]) + x[0] ** 2,
        torch.exp(-x[1]) * x[2],
        (x ** 2).sum().sqrt(),
    ])

x = torch.tensor([1.0, 2.0, 0.5], requires_grad=True)
y = fn(x)
print("y =", y)
print("y.grad_fn =", y.grad_fn)
rows = []
for i in range(y.shape[0]):
    g, = torch.autograd.grad(y[i], x, retain_graph=True)
    rows.append(g)
J = torch.stack(rows)
print("J (row by row):\n", J)

# using grad_outputs with unit vectors
J2 = torch.zeros(4, 3)
for i in range(4):
    e = torch.zeros(4)
    e[i] = 1.0
    J2[i] = torch.autograd.grad(y, x, grad_outputs=e, retain_graph=True)[0]
print("J via grad_outputs equal:", torch.equal(J, J2))

# batched via is_grads_batched
J3, = torch.autograd.grad(y, x, grad_outputs=torch.eye(4), retain_graph=True, is_grads_batched=True)
print("batched", torch.allclose(J, J3))

# functional API
J4 = torch.autograd.functional.jacobian(fn, x.detach())
print("functional.jacobian\n", J4)
print(torch.allclose(J, J4))

# columns by finite differences
eps = 1e-3
with torch.no_grad():
    Jfd = torch.stack([(fn(x + eps * torch.eye(3)[j]) - fn(x - eps * torch.eye(3)[j])) / (2 * eps) for j in range(3)], dim=1)
print("finite-diff max err", (Jfd - J).abs().max().item() < 1e-2)

# backward() with a vector argument (vector-Jacobian product)
x.grad = None
y = fn(x)
v = torch.tensor([1.0, 0.1, 0.01, 0.001])
y.backward(v)
print("vjp", x.grad, "J^T v", J.T @ v)

# allow_unused and None grads
z = torch.tensor(3.0, requires_grad=True)
out = (x * 2).sum()
gx, gz = torch.autograd.grad(out, [x, z], allow_unused=True)
print("unused:", gx, gz)
try:
    torch.autograd.grad((x * 2).sum(), [x, z])
except RuntimeError as e:
    print("RuntimeError:", e)
# gradient of non-scalar without grad_outputs
try:
    torch.autograd.grad(fn(x), x)
except RuntimeError as e:
    print("RuntimeError:", e)
# grad of a tensor that doesn't require grad
try:
    torch.tensor([1.0, 2.0]).sum().backward()
except RuntimeError as e:
    print("RuntimeError:", e)
