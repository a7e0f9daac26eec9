"""Writes the checkpoints under tests/data/ with real PyTorch (2.13): run once with torch
installed (``python tests/data/make_torch_fixtures.py``); the files are committed so the tests
that read them need no torch.

* torch213_mlp.pt: {'model': state_dict of Sequential(Linear(4, 8), BatchNorm1d(8), ReLU(),
  Linear(8, 3)) (weights from a fixed numpy seed, BN statistics from two training batches),
  'optimizer': Adam state_dict after 3 steps, 'epoch': 7, 'loss': 0.5, 'note': 'fixture',
  'shared': (t, t[1:]) (a view sharing a storage), 'meta': {'dtype': torch.float64,
  'size': torch.Size([2, 3])}, 'ints': int64/int32/uint8/bool tensors, 'f64': a float64
  tensor}
* torch213_legacy.pt: {'w': tensor, 'b': tensor} saved with
  _use_new_zipfile_serialization=False.
* torch213_values.npz: the expected values, for comparison without torch.
"""
import os

import numpy as np
import torch

HERE = os.path.dirname(os.path.abspath(__file__))


def main():
    rng = np.random.default_rng(2024)
    model = torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.BatchNorm1d(8),
                                torch.nn.ReLU(), torch.nn.Linear(8, 3))
    with torch.no_grad():
        for p in model.parameters():
            p.copy_(torch.tensor(rng.standard_normal(tuple(p.shape)).astype(np.float32)))
    opt = torch.optim.Adam(model.parameters(), lr=0.01)
    x = torch.tensor(rng.standard_normal((5, 4)).astype(np.float32))
    for _ in range(3):
        opt.zero_grad()
        model(x).pow(2).mean().backward()
        opt.step()
    base = torch.arange(6, dtype=torch.float32)
    obj = {"model": model.state_dict(), "optimizer": opt.state_dict(), "epoch": 7, "loss": 0.5,
           "note": "fixture", "shared": (base, base[1:]),
           "meta": {"dtype": torch.float64, "size": torch.Size([2, 3])},
           "ints": [torch.tensor([1, -2, 3]), torch.tensor([4, 5], dtype=torch.int32),
                    torch.tensor([7, 250], dtype=torch.uint8), torch.tensor([True, False])],
           "f64": torch.tensor([[1.5, -2.25], [3.0, 4e-300]], dtype=torch.float64)}
    torch.save(obj, os.path.join(HERE, "torch213_mlp.pt"))
    torch.save({"w": torch.tensor([[1.0, 2.0], [3.0, 4.0]]), "b": torch.tensor([0.5, -0.5])},
               os.path.join(HERE, "torch213_legacy.pt"), _use_new_zipfile_serialization=False)
    vals = {"model." + k: v.numpy() for k, v in model.state_dict().items()}
    for i, st in opt.state_dict()["state"].items():
        for k, v in st.items():
            vals[f"opt.{i}.{k}"] = v.numpy()
    np.savez(os.path.join(HERE, "torch213_values.npz"), **vals)
    x_eval = rng.standard_normal((3, 4)).astype(np.float32)
    model.eval()
    np.save(os.path.join(HERE, "torch213_eval_in.npy"), x_eval)
    np.save(os.path.join(HERE, "torch213_eval_out.npy"),
            model(torch.tensor(x_eval)).detach().numpy())


if __name__ == "__main__":
    main()
