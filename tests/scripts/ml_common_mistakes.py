"""Common mistakes in hand-written training loops and their error messages, each followed by the
usual fix: wrong cross_entropy targets, index out of range in embeddings / gathers, long vs float
matmul, view on a non-contiguous tensor, in-place updates of leaves outside no_grad, forgetting
zero_grad (accumulation), backward on a non-scalar, .numpy() on a tensor that requires grad,
item() on a multi-element tensor, requires_grad on an integer tensor.

Covers: exception types and key phrases, plus the correct results after each fix.
"""
import numpy as np
import torch
import torch.nn.functional as F

rng = np.random.default_rng(9)
logits = torch.tensor(rng.normal(size=(4, 3)), dtype=torch.float32, requires_grad=True)
targets = torch.tensor([0, 2, 1, 2])


def show(label, fn):
    try:
        out = fn()
        print(label, "OK", out)
    except Exception as e:
        msg = str(e).split("\n")[0]
        print(label, type(e).__name__ + ":", msg[:90])


# 1. class-index targets given as floats / wrong shape
show("ce float targets wrong shape", lambda: F.cross_entropy(logits, targets.float().unsqueeze(1)))
show("ce float 1-D targets", lambda: F.cross_entropy(logits, targets.float()))
show("ce target out of range", lambda: F.cross_entropy(logits, torch.tensor([0, 3, 1, 2])))
show("ce probs targets", lambda: F.cross_entropy(logits, F.one_hot(targets, 3).float()))
show("nll with int32 targets", lambda: F.nll_loss(F.log_softmax(logits, 1), targets.int()))
show("ce batch mismatch", lambda: F.cross_entropy(logits, targets[:3]))

# 2. index out of range
W = torch.tensor(rng.normal(size=(5, 2)), dtype=torch.float32, requires_grad=True)
show("embedding oob", lambda: F.embedding(torch.tensor([1, 5]), W))
show("row index oob", lambda: W[torch.tensor([0, 7])])
show("int index oob", lambda: W[5])
show("gather oob", lambda: logits.gather(1, torch.tensor([[0], [3], [1], [2]])))
show("gather float index", lambda: logits.gather(1, targets.float().unsqueeze(1)))
print("fixed gather", logits.gather(1, targets.unsqueeze(1)).squeeze(1))

# 3. dtype mismatches
xi = torch.arange(6).view(3, 2)
show("long @ float", lambda: xi @ W.t())
show("float @ double", lambda: W @ torch.ones(2, 2, dtype=torch.float64))
print("fixed", (xi.float() @ W.t()).dtype, (xi.float() @ W.t()).shape)
show("mse long target", lambda: F.mse_loss(W[:, 0], torch.arange(5)))
show("requires_grad on long", lambda: torch.tensor([1, 2], requires_grad=True))
show("requires_grad_ on long", lambda: torch.arange(3).requires_grad_())

# 4. views
Wt = W.t()
show("view non-contiguous", lambda: Wt.view(-1))
print("fixed", Wt.reshape(-1).shape, Wt.contiguous().view(-1).shape)

# 5. in-place update of a leaf that requires grad
show("inplace on leaf", lambda: W.sub_(0.1))
with torch.no_grad():
    W.sub_(0.1)
print("fixed", W.requires_grad, W.is_leaf, W.grad_fn)

# 6. forgetting to zero the gradients
for _ in range(3):
    (W ** 2).sum().backward()
print("accumulated", torch.allclose(W.grad, 3 * 2 * W.detach()))
W.grad.zero_()
print(W.grad.sum())

# 7. backward on a non-scalar / numpy on a grad tensor / item on a vector
show("backward non-scalar", lambda: (W * 2).backward())
show("numpy with grad", lambda: W.numpy())
show("item on vector", lambda: W.sum(0).item())
print("fixed", W.detach().numpy().shape, type(W.sum().item()).__name__)
show("grad of non-leaf", lambda: (W * 2).grad)
h = W * 2
h.retain_grad()
h.sum().backward()
print("retain_grad", h.grad[0])

# 8. shape mistakes in losses
pred = torch.tensor(rng.normal(size=(4, 1)), dtype=torch.float32, requires_grad=True)
y = torch.tensor([1.0, 0.0, 1.0, 1.0])
show("bce shape mismatch", lambda: F.binary_cross_entropy_with_logits(pred, y))
print("fixed bce", F.binary_cross_entropy_with_logits(pred.squeeze(1), y))
import warnings
with warnings.catch_warnings(record=True) as w:
    warnings.simplefilter("always")
    l = F.mse_loss(pred, y)
    print("mse broadcast", l.shape, len(w), str(w[0].message)[:60] if w else None)
show("cat dim mismatch", lambda: torch.cat([W, pred], dim=0))
show("stack shapes", lambda: torch.stack([W[0], pred[0]]))
show("matmul shapes", lambda: W @ pred)
