"""A custom nn.Module the way libraries write them: parameters, buffers (persistent and not),
extra_repr, submodules in a ModuleList, forward hooks collecting activations, a forward
pre-hook, a full backward hook reading gradient norms, state_dict / named_buffers / apply for
re-initialisation, print(model)."""
import numpy as np
import torch
import torch.nn as nn


class Scale(nn.Module):
    def __init__(self, n, init=1.0):
        super().__init__()
        self.weight = nn.Parameter(torch.full((n,), init))
        self.register_buffer("calls", torch.zeros((), dtype=torch.long))
        self.register_buffer("cache", torch.zeros(n), persistent=False)

    def forward(self, x):
        self.calls += 1
        self.cache = x.detach().mean(0)
        return x * self.weight

    def extra_repr(self):
        return f"n={self.weight.numel()}"


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.layers = nn.ModuleList([nn.Linear(4, 4) for _ in range(3)])
        self.scales = nn.ModuleList([Scale(4, 0.5 + i) for i in range(3)])
        self.out = nn.Linear(4, 1)

    def forward(self, x):
        for lin, sc in zip(self.layers, self.scales):
            x = torch.tanh(sc(lin(x)))
        return self.out(x)


net = Net()
print(net)
g = np.random.default_rng(29)


def reinit(m):
    if isinstance(m, nn.Linear):
        with torch.no_grad():
            m.weight.copy_(torch.tensor(g.uniform(-0.5, 0.5, size=tuple(m.weight.shape)),
                                        dtype=torch.float32))
            m.bias.fill_(0.01)


net.apply(reinit)
print("state_dict:", [(k, tuple(v.shape)) for k, v in net.state_dict().items()])
print("buffers:", [n for n, _ in net.named_buffers()])

activations = {}
handles = []
for i, layer in enumerate(net.layers):
    handles.append(layer.register_forward_hook(
        lambda mod, inp, out, i=i: activations.__setitem__(f"layer{i}", out.detach())))
pre = net.out.register_forward_pre_hook(lambda mod, args: (args[0] * 2.0,))
grad_norms = []
net.scales[1].register_full_backward_hook(
    lambda mod, gin, gout: grad_norms.append((round(gin[0].norm().item(), 5),
                                              round(gout[0].norm().item(), 5))))

x = torch.tensor(np.random.default_rng(30).standard_normal((5, 4)).astype(np.float32))
y = net(x)
y.sum().backward()
print("output:", y.squeeze(1))
print("activation means:", {k: round(v.mean().item(), 5) for k, v in activations.items()})
print("backward hook (grad_input, grad_output norms):", grad_norms)
print("calls:", [s.calls.item() for s in net.scales], "cache:", net.scales[0].cache)
for h in handles:
    h.remove()
pre.remove()
activations.clear()
print("without hooks:", net(x).squeeze(1), "activations recorded:", len(activations))
print("grad of scale weights:", net.scales[2].weight.grad)
