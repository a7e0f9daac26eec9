"""The "Double Backward with Custom Functions" tutorial (pytorch.org/tutorials/intermediate/
custom_function_double_backward_tutorial), without torchviz: the graphs it draws are printed
as grad_fn names / next_functions instead.

Covers: Square saving an input, Exp saving its output, Sinh returning its intermediates as
extra outputs (and the "what NOT to do" Sinh whose grad has no graph), Cube whose backward is a
second custom Function (CubeBackward), gradcheck / gradgradcheck of each, grad with
create_graph=True on a cloned 0-dim leaf, second derivatives via a second autograd.grad.
Data: numpy with a fixed seed instead of torch.rand. The Sinh section comes first and is run
again at the end, after the other sections' gradchecks (earlier backwards once made tapegrad
lose the graph of Sinh's saved outputs under create_graph).
"""
import numpy as np
import torch

rng = np.random.default_rng(0)
X33 = rng.uniform(0.1, 1.0, size=(3, 3))


def graph(fn, depth=4):
    if fn is None:
        return "None"
    if depth == 0:
        return fn.name() + "..."
    kids = [graph(f, depth - 1) for f, _ in fn.next_functions]
    return fn.name() + ("(" + ", ".join(kids) + ")" if kids else "")


class Sinh(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        expx = torch.exp(x)
        expnegx = torch.exp(-x)
        ctx.save_for_backward(expx, expnegx)
        return (expx - expnegx) / 2, expx, expnegx

    @staticmethod
    def backward(ctx, grad_out, _grad_out_exp, _grad_out_negexp):
        expx, expnegx = ctx.saved_tensors
        grad_input = grad_out * (expx + expnegx) / 2
        grad_input += _grad_out_exp * expx
        grad_input -= _grad_out_negexp * expnegx
        return grad_input


def sinh(x):
    return Sinh.apply(x)[0]


x = torch.tensor(X33, requires_grad=True, dtype=torch.double)
# (the tutorial shows Sinh after Square and Exp; see the module docstring)
outs = Sinh.apply(x)
print("Sinh outputs", [o.grad_fn.name() for o in outs], [o.requires_grad for o in outs])
out = sinh(x)
print("out", out)
grad_x, = torch.autograd.grad(out.sum(), x, create_graph=True)
print("grad_x", grad_x)
print("grad_x graph", graph(grad_x.grad_fn))
g2, = torch.autograd.grad(grad_x.sum(), x)
print("d2 sinh (== sinh)", g2)
print("matches", torch.allclose(g2, torch.sinh(x)))
print("Sinh gradcheck", torch.autograd.gradcheck(sinh, x))
print("Sinh gradgradcheck", torch.autograd.gradgradcheck(sinh, x))


class Square(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x**2

    @staticmethod
    def backward(ctx, grad_out):
        x, = ctx.saved_tensors
        return grad_out * 2 * x


x = torch.tensor(X33, requires_grad=True, dtype=torch.double)
print("Square gradcheck", torch.autograd.gradcheck(Square.apply, x))
print("Square gradgradcheck", torch.autograd.gradgradcheck(Square.apply, x))

x = torch.tensor(1., requires_grad=True).clone()
print("x", x, x.is_leaf, x.requires_grad)
out = Square.apply(x)
print("out", out)
grad_x, = torch.autograd.grad(out, x, create_graph=True)
print("grad_x", grad_x)
print("grad_x graph", graph(grad_x.grad_fn))
print("out graph", graph(out.grad_fn))
g2, = torch.autograd.grad(grad_x, x)
print("d2 out / dx2", g2)


class Exp(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        result = torch.exp(x)
        ctx.save_for_backward(result)
        return result

    @staticmethod
    def backward(ctx, grad_out):
        result, = ctx.saved_tensors
        return result * grad_out


x = torch.tensor(1., requires_grad=True, dtype=torch.double).clone()
print("Exp gradcheck", torch.autograd.gradcheck(Exp.apply, x))
print("Exp gradgradcheck", torch.autograd.gradgradcheck(Exp.apply, x))
out = Exp.apply(x)
grad_x, = torch.autograd.grad(out, x, create_graph=True)
print("grad_x", grad_x)
print("grad_x graph", graph(grad_x.grad_fn))
g2, = torch.autograd.grad(grad_x, x)
print("d2 exp", g2)


class SinhBad(torch.autograd.Function):
    # the tutorial's "what NOT to do": intermediates stashed on ctx
    @staticmethod
    def forward(ctx, x):
        expx = torch.exp(x)
        expnegx = torch.exp(-x)
        ctx.expx = expx
        ctx.expnegx = expnegx
        return (expx - expnegx) / 2

    @staticmethod
    def backward(ctx, grad_out):
        expx = ctx.expx
        expnegx = ctx.expnegx
        grad_input = grad_out * (expx + expnegx) / 2
        return grad_input


out = SinhBad.apply(x)
print("bad out", out.grad_fn.name())
grad_x, = torch.autograd.grad(out.sum(), x, create_graph=True)
print("bad grad_x requires_grad", grad_x.requires_grad, grad_x.grad_fn)
try:
    torch.autograd.grad(grad_x.sum(), x)
except RuntimeError as e:
    print("RuntimeError:", str(e).split("\n")[0])


def cube_forward(x):
    return x**3


def cube_backward(grad_out, x):
    return grad_out * 3 * x**2


def cube_backward_backward(grad_out, sav_grad_out, x):
    return grad_out * sav_grad_out * 6 * x


def cube_backward_backward_grad_out(grad_out, x):
    return grad_out * 3 * x**2


class Cube(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return cube_forward(x)

    @staticmethod
    def backward(ctx, grad_out):
        x, = ctx.saved_tensors
        return CubeBackward.apply(grad_out, x)


class CubeBackward(torch.autograd.Function):
    @staticmethod
    def forward(ctx, grad_out, x):
        ctx.save_for_backward(x, grad_out)
        return cube_backward(grad_out, x)

    @staticmethod
    def backward(ctx, grad_out):
        x, sav_grad_out = ctx.saved_tensors
        dx = cube_backward_backward(grad_out, sav_grad_out, x)
        dgrad_out = cube_backward_backward_grad_out(grad_out, x)
        return dgrad_out, dx


x = torch.tensor(2., requires_grad=True, dtype=torch.double)
print("Cube gradcheck", torch.autograd.gradcheck(Cube.apply, x))
print("Cube gradgradcheck", torch.autograd.gradgradcheck(Cube.apply, x))
out = Cube.apply(x)
grad_x, = torch.autograd.grad(out, x, create_graph=True)
print("out", out)
print("grad_x", grad_x)
print("grad_x graph", graph(grad_x.grad_fn))
g2, = torch.autograd.grad(grad_x, x, create_graph=True)
print("g2", g2)
g3, = torch.autograd.grad(g2, x)
print("g3", g3)


# Sinh again, after every other section's backwards and checks
x = torch.tensor(X33[::-1].copy(), requires_grad=True, dtype=torch.double)
grad_x, = torch.autograd.grad(sinh(x).sum(), x, create_graph=True)
print("Sinh again: grad_x graph", graph(grad_x.grad_fn))
g2, = torch.autograd.grad(grad_x.sum(), x)
print("Sinh again: d2 sinh", g2)
print("Sinh again: gradgradcheck", torch.autograd.gradgradcheck(sinh, x))
