"""Checkpoints: load a checkpoint written by real PyTorch 2.13 (tests/data/torch213_mlp.pt:
a model state_dict, an Adam state_dict, an epoch counter), resume training from it, save a new
checkpoint (model + optimizer + scheduler + metadata) with torch.save, load it back with
torch.load (weights_only by default) and check that training continues identically."""
import os
import tempfile

import numpy as np
import torch
import torch.nn as nn

HERE = os.path.dirname(os.path.abspath(__file__))
ckpt_path = os.path.join(HERE, "..", "data", "torch213_mlp.pt")


def make_model():
    m = nn.Sequential(nn.Linear(4, 8), nn.BatchNorm1d(8), nn.ReLU(), nn.Linear(8, 3))
    # the bias before BatchNorm has a zero gradient up to rounding, which Adam would amplify
    # into noise: keep it fixed, as is usual before a norm layer
    m[0].bias.requires_grad_(False)
    return m


ckpt = torch.load(ckpt_path)
print("checkpoint keys:", sorted(ckpt))
print("epoch:", ckpt["epoch"], "loss:", ckpt["loss"], "note:", ckpt["note"])
print("model keys:", list(ckpt["model"].keys()))
print("optimizer groups:", [{k: v for k, v in g.items() if k != "params"}
                            for g in ckpt["optimizer"]["param_groups"]])

model = make_model()
print(model.load_state_dict(ckpt["model"]))
opt = torch.optim.Adam(model.parameters(), lr=0.01)
opt.load_state_dict(ckpt["optimizer"])
print("restored step:", opt.state[model[0].weight]["step"].item())
sched = torch.optim.lr_scheduler.StepLR(opt, step_size=2, gamma=0.5)

rng = np.random.default_rng(17)
x = torch.tensor(rng.standard_normal((16, 4)).astype(np.float32))
y = torch.tensor(rng.integers(0, 3, 16))
loss_fn = nn.CrossEntropyLoss()


def train(model, opt, sched, steps):
    out = []
    for _ in range(steps):
        model.train()
        opt.zero_grad()
        loss = loss_fn(model(x), y)
        loss.backward()
        opt.step()
        sched.step()
        out.append(round(loss.item(), 6))
    return out


print("resumed losses:", train(model, opt, sched, 3))
with tempfile.TemporaryDirectory() as d:
    path = os.path.join(d, "resume.pt")
    torch.save({"epoch": ckpt["epoch"] + 1, "model": model.state_dict(),
                "optimizer": opt.state_dict(), "scheduler": sched.state_dict(),
                "history": [1.5, 1.2]}, path)
    reloaded = torch.load(path)
    print("saved keys:", sorted(reloaded), "epoch:", reloaded["epoch"],
          "history:", reloaded["history"])
    model2 = make_model()
    model2.load_state_dict(reloaded["model"])
    opt2 = torch.optim.Adam(model2.parameters(), lr=0.01)
    opt2.load_state_dict(reloaded["optimizer"])
    sched2 = torch.optim.lr_scheduler.StepLR(opt2, step_size=2, gamma=0.5)
    sched2.load_state_dict(reloaded["scheduler"])
    a = train(model, opt, sched, 3)
    b = train(model2, opt2, sched2, 3)
    print("continued:", a)
    print("reloaded: ", b)
    print("identical:", a == b, "lr:", sched2.get_last_lr())
    torch.save(model.state_dict(), os.path.join(d, "weights.pth"))
    sd = torch.load(os.path.join(d, "weights.pth"), map_location="cpu")
    print("weights file:", [(k, tuple(v.shape), str(v.dtype)) for k, v in sd.items()][:3])
model.eval()
with torch.no_grad():
    print("eval logits:", model(x[:2]))
