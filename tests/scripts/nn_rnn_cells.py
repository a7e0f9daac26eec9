"""Manual unrolling with RNNCell, LSTMCell and GRUCell (the loop people write for
sequence-to-one models and for decoders): hidden states carried through time, a linear
readout, Adam, predicting the next value of noisy sine waves."""
import numpy as np
import torch
import torch.nn as nn

rng = np.random.default_rng(27)
t = np.arange(0, 12, 0.5)
phases = rng.uniform(0, 2 * np.pi, 8)
waves = np.sin(t[None, :] + phases[:, None]) + 0.05 * rng.standard_normal((8, t.size))
seq = torch.tensor(waves.astype(np.float32)).t().unsqueeze(-1)     # (T, B, 1)


class CellModel(nn.Module):
    def __init__(self, kind):
        super().__init__()
        self.kind = kind
        self.cell = {"rnn": nn.RNNCell(1, 10), "lstm": nn.LSTMCell(1, 10),
                     "gru": nn.GRUCell(1, 10)}[kind]
        self.readout = nn.Linear(10, 1)

    def forward(self, seq):
        B = seq.size(1)
        h = torch.zeros(B, 10)
        c = torch.zeros(B, 10)
        outs = []
        for x in seq:
            if self.kind == "lstm":
                h, c = self.cell(x, (h, c))
            else:
                h = self.cell(x, h)
            outs.append(self.readout(h))
        return torch.stack(outs)


for kind in ("rnn", "lstm", "gru"):
    model = CellModel(kind)
    g = np.random.default_rng(28)
    with torch.no_grad():
        for p in model.parameters():
            p.copy_(torch.tensor(g.uniform(-0.3, 0.3, size=tuple(p.shape)), dtype=torch.float32))
    opt = torch.optim.Adam(model.parameters(), lr=0.02)
    for it in range(30):
        pred = model(seq[:-1])
        loss = nn.functional.mse_loss(pred, seq[1:])
        opt.zero_grad()
        loss.backward()
        opt.step()
    print(f"{kind:4s} {model.cell} final mse {loss.item():.6f}")
    with torch.no_grad():
        print("   one-step predictions:", model(seq[:5])[-1, :3, 0])
