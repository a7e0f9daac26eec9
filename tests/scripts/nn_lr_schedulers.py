"""Learning-rate schedules as training loops use them: scheduler.step() after
optimizer.step(), get_last_lr(), per-group learning rates, ReduceLROnPlateau on a metric,
SequentialLR/ChainedScheduler composition, OneCycleLR cycling momentum, and the state_dict of
a scheduler."""
import math

import torch
import torch.nn as nn
from torch.optim import lr_scheduler as S

model = nn.Linear(2, 1)


def run(name, make_opt, make_sched, steps=12, metric=None):
    opt = make_opt()
    sched = make_sched(opt)
    lrs = []
    for i in range(steps):
        opt.step()
        if metric is None:
            sched.step()
        else:
            sched.step(metric(i))
        lrs.append(round(opt.param_groups[0]["lr"], 8))
    extra = ""
    if "betas" in opt.param_groups[0]:
        extra = f" beta1 {opt.param_groups[0]['betas'][0]:.6f}"
    elif "momentum" in opt.param_groups[0]:
        extra = f" momentum {opt.param_groups[0]['momentum']:.6f}"
    print(f"{name:26s}", lrs, extra)
    return sched


sgd = lambda: torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
adam = lambda: torch.optim.Adam(model.parameters(), lr=0.01)

run("StepLR", sgd, lambda o: S.StepLR(o, step_size=3, gamma=0.5))
run("MultiStepLR", sgd, lambda o: S.MultiStepLR(o, milestones=[2, 5, 5, 9], gamma=0.3))
run("ExponentialLR", sgd, lambda o: S.ExponentialLR(o, gamma=0.8))
run("CosineAnnealingLR", sgd, lambda o: S.CosineAnnealingLR(o, T_max=5, eta_min=0.01))
run("LambdaLR", adam, lambda o: S.LambdaLR(o, lambda e: 1.0 / (1 + e)))
run("MultiplicativeLR", adam, lambda o: S.MultiplicativeLR(o, lambda e: 0.9))
run("LinearLR", sgd, lambda o: S.LinearLR(o, start_factor=0.25, total_iters=4))
run("ConstantLR", sgd, lambda o: S.ConstantLR(o, factor=0.5, total_iters=3))
run("PolynomialLR", sgd, lambda o: S.PolynomialLR(o, total_iters=6, power=2.0))
run("OneCycleLR(SGD)", sgd, lambda o: S.OneCycleLR(o, max_lr=1.0, total_steps=12))
run("OneCycleLR(Adam,linear)", adam,
    lambda o: S.OneCycleLR(o, max_lr=0.05, total_steps=12, anneal_strategy="linear",
                           three_phase=True))
run("CyclicLR", sgd, lambda o: S.CyclicLR(o, base_lr=0.01, max_lr=0.1, step_size_up=3,
                                          mode="triangular2"))
run("CosineWarmRestarts", sgd, lambda o: S.CosineAnnealingWarmRestarts(o, T_0=4, T_mult=2))
run("SequentialLR", sgd,
    lambda o: S.SequentialLR(o, [S.LinearLR(o, start_factor=0.1, total_iters=3),
                                 S.ExponentialLR(o, gamma=0.9)], milestones=[3]))
run("ChainedScheduler", sgd,
    lambda o: S.ChainedScheduler([S.ConstantLR(o, factor=0.5, total_iters=4),
                                  S.ExponentialLR(o, gamma=0.9)]))
losses = [1.0, 0.9, 0.85, 0.86, 0.87, 0.88, 0.7, 0.71, 0.72, 0.73, 0.74, 0.75]
sched = run("ReduceLROnPlateau", sgd,
            lambda o: S.ReduceLROnPlateau(o, factor=0.5, patience=2, cooldown=1),
            metric=lambda i: losses[i])
print("plateau state:", {k: v for k, v in sched.state_dict().items()
                         if k in ("best", "num_bad_epochs", "cooldown_counter", "last_epoch")})

opt = torch.optim.SGD([{"params": model.weight, "lr": 0.1},
                       {"params": model.bias, "lr": 0.01}], momentum=0.9)
sched = S.StepLR(opt, step_size=2, gamma=0.1)
for epoch in range(5):
    opt.step()
    sched.step()
    print("epoch", epoch, "per-group lr", [round(v, 8) for v in sched.get_last_lr()])
sd = sched.state_dict()
print("scheduler state:", sorted(sd), sd["last_epoch"], sd["base_lrs"])
opt2 = torch.optim.SGD([{"params": model.weight, "lr": 0.1},
                        {"params": model.bias, "lr": 0.01}])
sched2 = S.StepLR(opt2, step_size=2, gamma=0.1)
sched2.load_state_dict(sd)
print("restored last_epoch:", sched2.last_epoch, "cos check:", round(math.cos(0.5), 6))
