"""State-dict surgery as done when adapting checkpoints: strict=False loading and the
returned missing/unexpected keys, renaming keys (a "module." prefix from DataParallel),
shape-mismatch errors, loading a subset into a submodule, load_state_dict(assign=True),
register_buffer(persistent=False) keys, and strict errors' messages."""
from collections import OrderedDict

import numpy as np
import torch
import torch.nn as nn


def make(out=3):
    return nn.Sequential(OrderedDict([("backbone", nn.Sequential(nn.Linear(4, 6), nn.ReLU())),
                                      ("head", nn.Linear(6, out))]))


src = make()
rng = np.random.default_rng(50)
with torch.no_grad():
    for p in src.parameters():
        p.copy_(torch.tensor(rng.uniform(-1, 1, size=tuple(p.shape)), dtype=torch.float32))
sd = src.state_dict()
print("keys:", list(sd.keys()))

wrapped = OrderedDict(("module." + k, v) for k, v in sd.items())
dst = make()
try:
    dst.load_state_dict(wrapped)
except RuntimeError as e:
    print("RuntimeError:", str(e).splitlines()[0])
    print("  ", str(e).splitlines()[1][:120])
fixed = OrderedDict((k[len("module."):], v) for k, v in wrapped.items())
print(dst.load_state_dict(fixed))

dst5 = make(out=5)
try:
    dst5.load_state_dict(sd)
except RuntimeError as e:
    print("size mismatch:", "size mismatch for head.weight" in str(e), str(e).splitlines()[-1])
partial = {k: v for k, v in sd.items() if not k.startswith("head")}
res = dst5.load_state_dict(partial, strict=False)
print("missing:", res.missing_keys, "unexpected:", res.unexpected_keys)
print("backbone copied:", torch.equal(dst5.backbone[0].weight, src.backbone[0].weight))

sub = nn.Sequential(nn.Linear(4, 6), nn.ReLU())
sub_sd = {k[len("backbone."):]: v for k, v in sd.items() if k.startswith("backbone.")}
print("submodule load:", sub.load_state_dict(sub_sd))
t = make()
t.load_state_dict(sd, assign=True)
print("assign keeps tensors:", t.head.bias.data_ptr() == sd["head.bias"].data_ptr(),
      type(t.head.bias).__name__, t.head.bias.requires_grad)
extra = make()
extra.register_buffer("scratch", torch.zeros(2), persistent=False)
extra.register_buffer("count", torch.tensor(3))
print("with buffers:", list(extra.state_dict().keys())[-2:],
      [n for n, _ in extra.named_buffers()])
res = extra.load_state_dict(sd, strict=False)
print("missing buffer:", res.missing_keys)
