"""Newton's method with Hessians from double backward; Hessian-vector products.

Covers: set_default_dtype(float64), create_graph=True double and triple backward,
linalg.solve / eigvalsh, Pearlmutter HVP via grad_outputs and via backward of g @ v,
autograd.functional.hessian / hvp.
"""
import torch

torch.set_default_dtype(torch.float64)

def f(x):
    # smooth, strictly convex-ish test function
    A = torch.tensor([[3.0, 0.5, 0.0], [0.5, 2.0, 0.3], [0.0, 0.3, 1.0]])
    return 0.5 * x @ A @ x + torch.exp(0.3 * x).sum() + (x ** 4).sum() * 0.1 - x.sum()

def hessian(fun, x):
    x = x.detach().requires_grad_(True)
    y = fun(x)
    g, = torch.autograd.grad(y, x, create_graph=True)
    rows = []
    for i in range(x.numel()):
        row, = torch.autograd.grad(g[i], x, retain_graph=True)
        rows.append(row)
    return g.detach(), torch.stack(rows)

x = torch.tensor([2.0, -1.0, 0.5])
for it in range(8):
    g, Hm = hessian(f, x)
    step = torch.linalg.solve(Hm, g)
    x = x - step
    print(f"newton {it}: f={f(x).item():.12f} |g|={g.norm().item():.3e}")
print("argmin", x)
print("H at min\n", Hm)
print("symmetric:", torch.allclose(Hm, Hm.T))
print("eigvals", torch.linalg.eigvalsh(Hm))

# Hessian-vector product (Pearlmutter) vs explicit H @ v
v = torch.tensor([1.0, 2.0, -1.0])
xr = x.clone().requires_grad_()
g, = torch.autograd.grad(f(xr), xr, create_graph=True)
hv, = torch.autograd.grad(g, xr, grad_outputs=v)
print("hvp", hv, "H@v", Hm @ v)
# alternative hvp via dot product
xr.grad = None
g, = torch.autograd.grad(f(xr), xr, create_graph=True)
(g @ v).backward()
print("hvp via backward", xr.grad)
print("functional.hessian", torch.autograd.functional.hessian(f, x))
print("functional.hvp", torch.autograd.functional.hvp(f, x, v)[1])

# third derivative along a direction
t = torch.tensor(0.3, requires_grad=True)
y = torch.sin(t) * t ** 3
d1, = torch.autograd.grad(y, t, create_graph=True)
d2, = torch.autograd.grad(d1, t, create_graph=True)
d3, = torch.autograd.grad(d2, t)
print("derivs", d1.item(), d2.item(), d3.item())
print("d1", d1, "d2", d2)
