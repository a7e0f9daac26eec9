"""Printing tensors the way people inspect them in notebooks and loops.

Covers: repr/str of float/int/bool/empty/scalar tensors (sci mode, summarised 40x50, nan/inf),
set_printoptions(precision, sci_mode, profile), grad_fn in reprs, f-string format specs,
tensors inside lists and dicts, Size / dtype printing, tolist / numpy.
"""
import numpy as np
import torch

torch.set_printoptions(precision=4)
rng = np.random.default_rng(11)
print(torch.tensor(rng.normal(size=(3, 4)), dtype=torch.float32))
print(torch.tensor(rng.normal(size=(2, 3)) * 1e5))
print(torch.tensor([1e-8, 1.0, 1e8]))
print(torch.tensor([0.1, float('nan'), float('inf'), -float('inf')]))
print(torch.arange(2000, dtype=torch.float32).reshape(40, 50) / 7)
print(torch.arange(12).reshape(2, 2, 3))
print(torch.tensor([True, False]), torch.tensor([[1, -2], [300, 4]], dtype=torch.int32))
print(torch.zeros(0), torch.zeros(2, 0), torch.ones(1, 1, 1))
w = torch.tensor(rng.normal(size=(2, 2)), requires_grad=True)
print(w)
print(w * 2)
print(w.sum(), w.mean(dim=0), w[0])
print(repr(w.T), str(w.detach()))
print(torch.tensor(2.5), torch.tensor(-0.0), torch.tensor(3), torch.tensor(1e20), torch.tensor(123456.789))
print(f"{torch.tensor(0.123456):.3f} {torch.tensor(3.0).item():.2f} {torch.tensor(7)}")
print([torch.tensor(1.5), torch.tensor(2)])
print({"loss": torch.tensor(0.25, requires_grad=True) * 1})
torch.set_printoptions(precision=2, sci_mode=False)
print(torch.tensor([1e-5, 123.456, 1e4]))
torch.set_printoptions(profile="default")
print(torch.linspace(0, 1, 7), torch.logspace(0, 2, 3) if hasattr(torch, "logspace") else None)
print(torch.tensor([1.0, 2.0, 3.0]).shape, torch.Size([2, 3]), tuple(torch.ones(2, 3).shape), torch.ones(2, 3).size(1))
print(torch.ones(3, dtype=torch.float64).dtype, torch.float64, str(torch.int64), torch.get_default_dtype())
print(torch.tensor([1.0]).grad_fn, torch.tensor([1.0], requires_grad=True).is_leaf)
print(torch.tensor([0.5, 1.25]).tolist(), torch.tensor(1.25).tolist(), torch.tensor([[1, 2]]).numpy())
