"""torch.func (functorch) style: grad, vmap per-sample gradients, jacrev/jacfwd, hessian, and
a new-style custom Function with setup_context.

Covers: grad / grad_and_value with extra arguments, vmap(in_dims=(None, 0, 0)) of grad,
jacrev / jacfwd / hessian, vmap of jacrev, Function with separate setup_context and two outputs.
"""
import numpy as np
import torch
from torch.func import grad, vmap, jacrev, jacfwd, hessian, grad_and_value

rng = np.random.default_rng(14)
X = torch.tensor(rng.normal(size=(8, 3)), dtype=torch.float32)
y = torch.tensor(rng.normal(size=8), dtype=torch.float32)
w = torch.tensor([0.1, -0.2, 0.3])

def loss_fn(w, x, t):
    pred = torch.tanh(x @ w)
    return ((pred - t) ** 2).mean()

g = grad(loss_fn)(w, X, y)
print("grad", g)
gv, v = grad_and_value(loss_fn)(w, X, y)
print("grad_and_value", gv, v)
per_sample = vmap(grad(loss_fn), in_dims=(None, 0, 0))(w, X, y)
print("per-sample grads", per_sample.shape)
print(per_sample[:2])
print("mean of per-sample == full grad:", torch.allclose(per_sample.mean(0), g, atol=1e-6))

def f(x):
    return torch.stack([x[0] ** 2 * x[1], torch.sin(x[1]) * x[2], x.exp().sum()])
x0 = torch.tensor([0.5, 1.0, -1.0])
print("jacrev", jacrev(f)(x0))
print("jacfwd", jacfwd(f)(x0))
print("hessian", hessian(lambda x: (x ** 3).sum() + x[0] * x[1])(x0))
print("batched jac", vmap(jacrev(f))(torch.stack([x0, x0 * 2])).shape)

class Cube(torch.autograd.Function):
    @staticmethod
    def forward(x):
        return x ** 3, 3 * x ** 2

    @staticmethod
    def setup_context(ctx, inputs, output):
        ctx.save_for_backward(inputs[0], output[1])

    @staticmethod
    def backward(ctx, grad_output, grad_dx):
        x, dx = ctx.saved_tensors
        return grad_output * dx + grad_dx * 6 * x

xt = torch.tensor([1.0, 2.0], requires_grad=True)
c, dc = Cube.apply(xt)
(c.sum() + dc.sum()).backward()
print("Cube grad", xt.grad)
