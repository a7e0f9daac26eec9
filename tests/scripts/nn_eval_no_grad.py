"""Evaluation the way training scripts do it: model.eval() + torch.no_grad() (and
torch.inference_mode()), what eval mode changes (BatchNorm uses running statistics, Dropout is
the identity), requires_grad of outputs, a validation loop over a DataLoader with argmax
accuracy and a confusion matrix."""
import numpy as np
import torch
import torch.nn as nn
from torch.utils.data import DataLoader, TensorDataset

rng = np.random.default_rng(22)
model = nn.Sequential(nn.Linear(5, 12), nn.BatchNorm1d(12), nn.ReLU(), nn.Dropout(0.5),
                      nn.Linear(12, 3))
with torch.no_grad():
    for p in model.parameters():
        p.copy_(torch.tensor(rng.uniform(-0.5, 0.5, size=tuple(p.shape)), dtype=torch.float32))
x = torch.tensor(rng.standard_normal((40, 5)).astype(np.float32))
y = torch.tensor(rng.integers(0, 3, 40))

# a few training-mode forwards update the BatchNorm statistics (no dropout randomness is
# printed: the outputs of these passes are not shown)
for i in range(3):
    model(x[i * 10:(i + 1) * 10])
bn = model[1]
print("running mean:", bn.running_mean)
print("batches tracked:", bn.num_batches_tracked.item())

model.eval()
print("training flags:", [m.training for m in model])
with torch.no_grad():
    out = model(x)
print("no_grad output requires_grad:", out.requires_grad, "grad_fn:", out.grad_fn)
with torch.inference_mode():
    out2 = model(x)
print("inference_mode equal:", torch.equal(out, out2), "requires_grad:", out2.requires_grad)
again = model(x)
print("eval is deterministic:", torch.equal(out, again.detach()), again.requires_grad)

loader = DataLoader(TensorDataset(x, y), batch_size=16)
correct, total, loss_sum = 0, 0, 0.0
confusion = torch.zeros(3, 3, dtype=torch.long)
criterion = nn.CrossEntropyLoss(reduction="sum")
with torch.no_grad():
    for xb, yb in loader:
        logits = model(xb)
        loss_sum += criterion(logits, yb).item()
        pred = logits.argmax(dim=1)
        correct += (pred == yb).sum().item()
        total += yb.numel()
        for t, p in zip(yb.tolist(), pred.tolist()):
            confusion[t, p] += 1
print(f"val loss {loss_sum / total:.6f} accuracy {correct / total:.4f}")
print("confusion:\n", confusion)
model.train()
print("back to train:", model.training, model[3].training)
