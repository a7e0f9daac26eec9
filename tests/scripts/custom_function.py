"""Custom autograd.Function: straight-through estimator, clamp with custom backward, exp with
saved output, and the LinearFunction of the "Extending PyTorch" docs.

Covers: ctx.save_for_backward / saved_tensors / needs_input_grad, non-tensor arguments and
None gradients, boolean-mask assignment in backward, gradcheck of custom Functions, an STE
inside a training loop.
"""
import torch
from torch.autograd import Function

class RoundSTE(Function):
    @staticmethod
    def forward(ctx, x):
        return torch.round(x)

    @staticmethod
    def backward(ctx, grad_output):
        return grad_output

class GradClamp(Function):
    """Clamp in forward, but let gradient pass where the input was clipped in the direction of the feasible set."""
    @staticmethod
    def forward(ctx, x, lo, hi):
        ctx.save_for_backward(x)
        ctx.lo, ctx.hi = lo, hi
        return x.clamp(lo, hi)

    @staticmethod
    def backward(ctx, grad_output):
        x, = ctx.saved_tensors
        g = grad_output.clone()
        g[(x < ctx.lo) & (grad_output > 0)] = 0
        g[(x > ctx.hi) & (grad_output < 0)] = 0
        return g, None, None

class MyExp(Function):
    @staticmethod
    def forward(ctx, i):
        result = i.exp()
        ctx.save_for_backward(result)
        return result

    @staticmethod
    def backward(ctx, grad_output):
        result, = ctx.saved_tensors
        return grad_output * result

class LinearFn(Function):
    @staticmethod
    def forward(ctx, input, weight, bias=None):
        ctx.save_for_backward(input, weight, bias)
        output = input.mm(weight.t())
        if bias is not None:
            output += bias.unsqueeze(0).expand_as(output)
        return output

    @staticmethod
    def backward(ctx, grad_output):
        input, weight, bias = ctx.saved_tensors
        grad_input = grad_weight = grad_bias = None
        if ctx.needs_input_grad[0]:
            grad_input = grad_output.mm(weight)
        if ctx.needs_input_grad[1]:
            grad_weight = grad_output.t().mm(input)
        if bias is not None and ctx.needs_input_grad[2]:
            grad_bias = grad_output.sum(0)
        return grad_input, grad_weight, grad_bias

x = torch.tensor([-1.7, -0.4, 0.2, 0.5, 1.49, 2.51], requires_grad=True)
y = RoundSTE.apply(x)
print(y)
print(type(y.grad_fn).__name__, y.requires_grad)
(y * torch.arange(6.0)).sum().backward()
print("STE grad", x.grad)

x.grad = None
z = GradClamp.apply(x * 2, -1.0, 1.0)
print("clamped", z)
(z * torch.tensor([1.0, -1.0, 1.0, -1.0, 1.0, -1.0])).sum().backward()
print("GradClamp grad", x.grad)

a = torch.tensor([0.0, 1.0, -2.0], dtype=torch.float64, requires_grad=True)
out = MyExp.apply(a)
out.sum().backward()
print("MyExp", out, a.grad)
x64 = torch.tensor([0.3, -1.1, 0.8, 2.0], dtype=torch.double, requires_grad=True)
print("gradcheck MyExp:", torch.autograd.gradcheck(MyExp.apply, (x64,)))

inp = torch.tensor([[1.0, 2.0, 3.0], [0.5, -1.0, 2.0]], dtype=torch.double, requires_grad=True)
W = torch.tensor([[0.1, 0.2, 0.3], [-0.3, 0.4, 0.1]], dtype=torch.double, requires_grad=True)
bb = torch.tensor([0.01, -0.02], dtype=torch.double, requires_grad=True)
print("gradcheck LinearFn:", torch.autograd.gradcheck(LinearFn.apply, (inp, W, bb), eps=1e-6, atol=1e-4))
o = LinearFn.apply(inp, W)
o.pow(2).sum().backward()
print("LinearFn no-bias grads", inp.grad, W.grad, bb.grad)
ref = inp.detach().mm(W.detach().t())
print("forward matches mm:", torch.equal(o.detach(), ref))

# STE in a quantised training loop
w = torch.tensor([0.3, -1.2, 2.7], requires_grad=True)
target = torch.tensor([1.0, -1.0, 3.0])
for i in range(5):
    q = RoundSTE.apply(w * 2) / 2
    loss = ((q - target) ** 2).sum()
    loss.backward()
    with torch.no_grad():
        w -= 0.1 * w.grad
    w.grad.zero_()
    print(i, loss.item(), w.tolist())

# calling forward on a non-requires-grad input
print("no-grad input:", RoundSTE.apply(torch.tensor([0.4, 0.6])).requires_grad)
