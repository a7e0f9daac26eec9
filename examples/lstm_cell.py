"""An LSTM cell written out by hand, unrolled over a sequence, trained a few steps."""
import math

import torch

T, B, I, H = 12, 4, 3, 5
k = torch.arange(T * B * I, dtype=torch.float32)
xs = torch.sin(k * 0.17).reshape(T, B, I)
target = torch.cos(torch.arange(B * H, dtype=torch.float32) * 0.3).reshape(B, H) * 0.5

s = 1 / math.sqrt(H)
W_ih = (torch.cos(torch.arange(4 * H * I, dtype=torch.float32)).reshape(4 * H, I) * s).requires_grad_()
W_hh = (torch.sin(torch.arange(4 * H * H, dtype=torch.float32) * 0.5).reshape(4 * H, H) * s).requires_grad_()
b = torch.zeros(4 * H, requires_grad=True)


def lstm_cell(x, h, c):
    gates = x @ W_ih.t() + h @ W_hh.t() + b
    i, f, g, o = gates.chunk(4, dim=1)
    i, f, o = torch.sigmoid(i), torch.sigmoid(f), torch.sigmoid(o)
    g = torch.tanh(g)
    c = f * c + i * g
    h = o * torch.tanh(c)
    return h, c


losses = []
for step in range(20):
    h = torch.zeros(B, H)
    c = torch.zeros(B, H)
    outputs = []
    for x in xs:
        h, c = lstm_cell(x, h, c)
        outputs.append(h)
    out = torch.stack(outputs)                       # (T, B, H)
    loss = ((out[-1] - target) ** 2).mean() + 1e-3 * out.pow(2).mean()
    losses.append(loss.item())
    loss.backward()
    with torch.no_grad():
        for p in (W_ih, W_hh, b):
            p -= 0.5 * p.grad
            p.grad.zero_()
print("loss", losses[0], "->", losses[-1])
results = {"losses": losses, "W_hh": W_hh.detach().numpy().tolist(), "out_shape": list(out.shape)}
