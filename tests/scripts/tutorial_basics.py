"""The 'Autograd: automatic differentiation' tutorials of pytorch.org, printed as they are in the docs.

Covers: reprs of tensors with grad_fn, requires_grad_, backward with a gradient argument,
no_grad, detach, grad_fn.next_functions, gradient accumulation over repeated backward,
the usual RuntimeErrors (.numpy() on a grad tensor, in-place on a leaf, second backward).
A torch.randn tensor is made but only its flags are printed.
"""
import torch

x = torch.ones(2, 2, requires_grad=True)
print(x)
y = x + 2
print(y)
print(y.grad_fn)
z = y * y * 3
out = z.mean()
print(z, out)

a = torch.randn(2, 2)
a = ((a * 3) / (a - 1))
print(a.requires_grad)
a.requires_grad_(True)
print(a.requires_grad)
b = (a * a).sum()
print(b.grad_fn)

out.backward()
print(x.grad)

x = torch.tensor([0.5, -1.0, 2.0], requires_grad=True)
y = x * 2
while y.data.norm() < 1000:
    y = y * 2
print(y)
v = torch.tensor([0.1, 1.0, 0.0001], dtype=torch.float)
y.backward(v)
print(x.grad)

print(x.requires_grad)
print((x ** 2).requires_grad)
with torch.no_grad():
    print((x ** 2).requires_grad)
y = x.detach()
print(y.requires_grad)
print(x.eq(y).all())

# "A Gentle Introduction to torch.autograd"
a = torch.tensor([2., 3.], requires_grad=True)
b = torch.tensor([6., 4.], requires_grad=True)
Q = 3*a**3 - b**2
external_grad = torch.tensor([1., 1.])
Q.backward(gradient=external_grad)
print(9*a**2 == a.grad)
print(-2*b == b.grad)
print(Q)
print(a.grad, b.grad)

# computational graph walk
print(Q.grad_fn)
print(Q.grad_fn.next_functions)
print(Q.grad_fn.next_functions[0][0].next_functions)

# "Automatic differentiation with torch.autograd" tutorial
x = torch.ones(5)
y = torch.zeros(3)
w = torch.tensor([[0.1, -0.2, 0.3], [0.4, 0.5, -0.6], [0.7, -0.8, 0.9], [1.0, 1.1, -1.2], [0.0, 0.2, 0.1]], requires_grad=True)
b = torch.tensor([0.1, 0.2, 0.3], requires_grad=True)
z = torch.matmul(x, w)+b
loss = torch.nn.functional.binary_cross_entropy_with_logits(z, y)
print(f"Gradient function for z = {z.grad_fn}")
print(f"Gradient function for loss = {loss.grad_fn}")
loss.backward()
print(w.grad)
print(b.grad)
z = torch.matmul(x, w)+b
print(z.requires_grad)
z_det = z.detach()
print(z_det.requires_grad)

inp = torch.eye(4, 5, requires_grad=True)
out = (inp+1).pow(2).t()
out.backward(torch.ones_like(out), retain_graph=True)
print(f"First call\n{inp.grad}")
out.backward(torch.ones_like(out), retain_graph=True)
print(f"\nSecond call\n{inp.grad}")
inp.grad.zero_()
out.backward(torch.ones_like(out), retain_graph=True)
print(f"\nCall after zeroing gradients\n{inp.grad}")

# common mistakes people print
t = torch.tensor([1.0, 2.0], requires_grad=True)
try:
    t.numpy()
except RuntimeError as e:
    print("RuntimeError:", e)
try:
    t += 1
except RuntimeError as e:
    print("RuntimeError:", e)
s = (t * 2).sum()
s.backward()
try:
    s.backward()
except RuntimeError as e:
    print("RuntimeError:", str(e)[:120])
nl = t * 2
print(nl.grad)
print(t.grad.data, t.data, t.item() if t.numel() == 1 else t.tolist())
print(torch.tensor(3.5, requires_grad=True) * 2)
print(torch.tensor([1, 2, 3]) / 2, torch.tensor([1, 2, 3]) // 2, torch.arange(5).float().mean())
