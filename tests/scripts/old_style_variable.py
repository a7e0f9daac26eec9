"""Old-style tutorial (PyTorch 0.3/0.4 era, still all over StackOverflow): Variable, FloatTensor, .data updates.

Covers: autograd.Variable, .type(...) with tensor types and strings, legacy constructors
(torch.Tensor / FloatTensor / LongTensor / DoubleTensor), `w.data -= ...`, grad.data.zero_(),
f-string formatting of a tensor, .numpy() / .cpu() round trips.
"""
import numpy as np
import torch
from torch.autograd import Variable

dtype = torch.FloatTensor
rng = np.random.default_rng(9)
N, D_in, H, D_out = 16, 10, 8, 3
x = Variable(torch.from_numpy(rng.normal(size=(N, D_in)).astype(np.float32)).type(dtype), requires_grad=False)
y = Variable(torch.from_numpy(rng.normal(size=(N, D_out)).astype(np.float32)), requires_grad=False)
w1 = Variable(torch.from_numpy(rng.normal(size=(D_in, H)).astype(np.float32) * 0.3), requires_grad=True)
w2 = Variable(torch.from_numpy(rng.normal(size=(H, D_out)).astype(np.float32) * 0.3), requires_grad=True)
print(type(w1).__name__, w1.type(), x.type())

learning_rate = 1e-3
for t in range(50):
    y_pred = x.mm(w1).clamp(min=0).mm(w2)
    loss = (y_pred - y).pow(2).sum()
    if t % 10 == 0:
        print(t, loss.data.item(), float(loss), f"{loss:.4f}")
    loss.backward()
    w1.data -= learning_rate * w1.grad.data
    w2.data -= learning_rate * w2.grad.data
    w1.grad.data.zero_()
    w2.grad.data.zero_()
print("final loss", loss.item())

# legacy constructors
a = torch.Tensor([[1, 2], [3, 4]])
b = torch.Tensor(2, 3).zero_()
c = torch.FloatTensor([0.5, 1.5])
d = torch.LongTensor([1, 0, 2])
e = torch.DoubleTensor(3).fill_(2.0)
print(a, a.dtype)
print(b.shape, c, d, d.dtype, e)
print(a.type(torch.DoubleTensor).dtype, a.type('torch.LongTensor'))
print(isinstance(a, torch.FloatTensor), isinstance(e, torch.FloatTensor))

# volatile-free inference and numpy round trip
with torch.no_grad():
    pred = x.mm(w1).clamp(min=0).mm(w2)
arr = pred.numpy()
print(type(arr).__name__, arr.dtype, arr.shape, round(float(arr.sum()), 4))
print(w1.detach().cpu().numpy().shape, w1.data.numpy().dtype)
