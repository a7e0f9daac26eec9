"""Implicit differentiation of a fixed point z* = tanh(W z* + U x + b) (a tiny deep-equilibrium
layer): the forward solve runs under no_grad, the backward uses the implicit function theorem
through a custom autograd.Function, and is checked against unrolled differentiation.

Covers: autograd.Function with ctx.save_for_backward / saved_tensors / needs_input_grad,
torch.linalg.solve with a transposed system, torch.autograd.grad with grad_outputs,
functional.jacobian of the fixed-point map, register_hook on an intermediate, spectral norm
rescaling via linalg.matrix_norm(ord=2), addmv / mv / outer, float64 tolerance loops with
.item(), torch.no_grad fixed-point iteration, Function.apply outputs' grad_fn names, returning
None grads for non-differentiable inputs, and a custom backward returning the wrong shape (error).
"""
import numpy as np
import torch
from torch.autograd import Function

rng = np.random.default_rng(3)
n, m = 5, 3
W0 = rng.normal(size=(n, n))
W0 = 0.6 * W0 / np.linalg.norm(W0, 2)
W = torch.tensor(W0, requires_grad=True)
U = torch.tensor(rng.normal(size=(n, m)), requires_grad=True)
b = torch.tensor(rng.normal(size=n) * 0.1, requires_grad=True)
x = torch.tensor(rng.normal(size=m))
print("||W||_2 = %.4f" % torch.linalg.matrix_norm(W.detach(), ord=2).item())


def f(z, W, U, b, x):
    return torch.tanh(torch.addmv(U @ x + b, W, z))


def solve(W, U, b, x, tol=1e-12):
    z = torch.zeros(n, dtype=torch.float64)
    with torch.no_grad():
        for k in range(200):
            z_new = f(z, W, U, b, x)
            if (z_new - z).abs().max().item() < tol:
                return z_new, k
            z = z_new
    return z, 200


class FixedPoint(Function):
    @staticmethod
    def forward(ctx, W, U, b, x):
        z, iters = solve(W, U, b, x)
        ctx.save_for_backward(z, W, U, b, x)
        ctx.iters = iters
        return z

    @staticmethod
    def backward(ctx, gz):
        z, W, U, b, x = ctx.saved_tensors
        with torch.enable_grad():
            z = z.detach().requires_grad_()
            Wd, Ud, bd = W.detach().requires_grad_(), U.detach().requires_grad_(), b.detach().requires_grad_()
            fz = f(z, Wd, Ud, bd, x)
            d = 1 - fz.detach() ** 2                         # tanh'
            Jz = d[:, None] * W.detach()                      # df/dz
            # solve (I - Jz)^T w = gz
            w = torch.linalg.solve((torch.eye(n, dtype=z.dtype) - Jz).T, gz)
            gW, gU, gb = torch.autograd.grad(fz, (Wd, Ud, bd), grad_outputs=w)
        print("  backward needs_input_grad", ctx.needs_input_grad)
        return gW, gU, gb, None


z = FixedPoint.apply(W, U, b, x)
print("z*", z)
print("grad_fn", type(z.grad_fn).__name__, "residual %.2e" % (z - f(z, W, U, b, x)).norm().item())
target = torch.linspace(-0.5, 0.5, n, dtype=torch.float64)
loss = ((z - target) ** 2).sum()
loss.backward()
gW_imp, gU_imp, gb_imp = W.grad.clone(), U.grad.clone(), b.grad.clone()
print("dL/db implicit", gb_imp)

# unrolled: differentiate through 80 iterations
W.grad = U.grad = b.grad = None
zu = torch.zeros(n, dtype=torch.float64)
for _ in range(80):
    zu = f(zu, W, U, b, x)
lu = ((zu - target) ** 2).sum()
lu.backward()
print("dL/db unrolled", b.grad)
print("max |diff| W %.2e U %.2e b %.2e" % ((W.grad - gW_imp).abs().max().item(),
      (U.grad - gU_imp).abs().max().item(), (b.grad - gb_imp).abs().max().item()))

# Jacobian of the fixed-point map at z*; a norm < 1 ensures convergence
from torch.autograd.functional import jacobian
Jz = jacobian(lambda zz: f(zz, W.detach(), U.detach(), b.detach(), x), z.detach())
sv = torch.linalg.svdvals(Jz)
print("||J||_2 %.5f" % sv[0].item(), sv.dtype, "contraction:", bool(sv.max() < 1))

# dz*/dx via implicit formula vs finite differences on x
Jx = torch.linalg.solve(torch.eye(n, dtype=torch.float64) - Jz,
                        (1 - z.detach() ** 2)[:, None] * U.detach())
with torch.no_grad():
    h = 1e-6
    e0 = torch.zeros(m, dtype=torch.float64); e0[0] = h
    fd = (solve(W, U, b, x + e0)[0] - solve(W, U, b, x - e0)[0]) / (2 * h)
print("dz/dx0 implicit", Jx[:, 0])
print("dz/dx0 fd      ", fd)

# hook on an intermediate of the loss
grads_seen = []
z2 = FixedPoint.apply(W, U, b, x)
zz = z2 * 2
zz.register_hook(lambda g: grads_seen.append(g.clone()))
(zz.sum() + torch.outer(z2, z2).trace()).backward()
print("hook saw", grads_seen[0])


class BadShape(Function):
    @staticmethod
    def forward(ctx, a):
        return a * 2

    @staticmethod
    def backward(ctx, g):
        return g[:2]


try:
    BadShape.apply(b).sum().backward()
except RuntimeError as e:
    print(type(e).__name__, "|", str(e).split(" but ")[0])
