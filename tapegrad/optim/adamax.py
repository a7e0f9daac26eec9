"""Adamax (the infinity-norm variant of Adam)."""
import tapegrad as _tg
from . import _fused, _kernels
from .adam import _check_betas, _check_lr, _new_step, _tensor_steps
from .optimizer import Optimizer, _value
from ._reference import adamax

__all__ = ["Adamax"]


class Adamax(Optimizer):
    def __init__(self, params, lr=2e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0,
                 foreach=None, *, maximize=False, differentiable=False, capturable=False):
        _check_lr(lr)
        if not 0.0 <= eps:
            raise ValueError(f"Invalid epsilon value: {eps}")
        _check_betas(betas)
        if not 0.0 <= weight_decay:
            raise ValueError(f"Invalid weight_decay value: {weight_decay}")
        defaults = {"lr": lr, "betas": betas, "eps": eps, "weight_decay": weight_decay,
                    "foreach": foreach, "maximize": maximize, "differentiable": differentiable,
                    "capturable": capturable}
        super().__init__(params, defaults)

    def __setstate__(self, state):
        super().__setstate__(state)
        for group in self.param_groups:
            group.setdefault("foreach", None)
            group.setdefault("maximize", False)
            group.setdefault("differentiable", False)
            group.setdefault("capturable", False)
            _tensor_steps(self, group)

    def _step_group(self, group):
        params, bufs, steps = [], [], []
        for p in group["params"]:
            if p.grad is None:
                continue
            params.append(p)
            state = self.state[p]
            if len(state) == 0:
                state["step"] = _new_step(group)
                state["exp_avg"] = _tg.zeros_like(p).detach()
                state["exp_inf"] = _tg.zeros_like(p).detach()
            bufs.append([state["exp_avg"], state["exp_inf"]])
            steps.append([state["step"]])
        if not params:
            return
        if group["differentiable"]:
            return adamax(self, group, params)
        beta1, beta2 = group["betas"]
        _fused.run(self._plan_cache(group), _kernels.adamax, params, bufs, steps, None, float(_value(group["lr"])),
                   float(beta1), float(beta2), float(group["eps"]), float(group["weight_decay"]),
                   bool(group["maximize"]))
