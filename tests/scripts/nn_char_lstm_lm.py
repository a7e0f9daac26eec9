"""Character-level LSTM language model: Embedding, 2-layer LSTM (batch_first), Linear; Adam,
gradient clipping, truncated BPTT with detached hidden state, greedy generation."""
import numpy as np
import torch
import torch.nn as nn

text = ("the quick brown fox jumps over the lazy dog. " * 6 +
        "a stitch in time saves nine. " * 4)
chars = sorted(set(text))
stoi = {c: i for i, c in enumerate(chars)}
data = torch.tensor([stoi[c] for c in text], dtype=torch.long)
print("vocabulary:", len(chars), "characters:", len(data))


class CharLSTM(nn.Module):
    def __init__(self, vocab, emb=16, hidden=32, layers=2):
        super().__init__()
        self.embed = nn.Embedding(vocab, emb)
        self.lstm = nn.LSTM(emb, hidden, num_layers=layers, batch_first=True)
        self.head = nn.Linear(hidden, vocab)

    def forward(self, x, state=None):
        out, state = self.lstm(self.embed(x), state)
        return self.head(out), state


model = CharLSTM(len(chars))
print(model)
g = np.random.default_rng(11)
with torch.no_grad():
    for p in model.parameters():
        p.copy_(torch.tensor(g.uniform(-0.2, 0.2, size=tuple(p.shape)), dtype=torch.float32))

opt = torch.optim.Adam(model.parameters(), lr=0.01)
loss_fn = nn.CrossEntropyLoss()
seq_len, batch = 20, 4
starts = np.arange(0, len(data) - seq_len - 1, (len(data) - seq_len - 1) // batch)[:batch]
state = None
for step in range(30):
    offs = (starts + step * seq_len) % (len(data) - seq_len - 1)
    x = torch.stack([data[o:o + seq_len] for o in offs])
    y = torch.stack([data[o + 1:o + seq_len + 1] for o in offs])
    if state is not None:
        state = tuple(s.detach() for s in state)
    logits, state = model(x, state)
    loss = loss_fn(logits.reshape(-1, len(chars)), y.reshape(-1))
    opt.zero_grad()
    loss.backward()
    norm = nn.utils.clip_grad_norm_(model.parameters(), max_norm=1.0)
    opt.step()
    if step % 5 == 0 or step == 29:
        print(f"step {step:2d} loss {loss.item():.6f} grad norm {norm.item():.5f}")

model.eval()
with torch.no_grad():
    idx = torch.tensor([[stoi["t"]]])
    out, st = [], None
    for _ in range(40):
        logits, st = model(idx, st)
        idx = logits[:, -1].argmax(-1, keepdim=True)
        out.append(chars[idx.item()])
print("sample:", repr("t" + "".join(out)))
print("hidden state shapes:", tuple(st[0].shape), tuple(st[1].shape))
