"""Adadelta."""
import tapegrad as _tg
from . import _fused, _kernels
from .adam import _check_lr, _new_step, _tensor_steps
from .optimizer import Optimizer, _value
from ._reference import adadelta

__all__ = ["Adadelta"]


class Adadelta(Optimizer):
    def __init__(self, params, lr=1.0, rho=0.9, eps=1e-6, weight_decay=0, foreach=None, *,
                 capturable=False, maximize=False, differentiable=False):
        _check_lr(lr)
        if not 0.0 <= rho <= 1.0:
            raise ValueError(f"Invalid rho value: {rho}")
        if not 0.0 <= eps:
            raise ValueError(f"Invalid epsilon value: {eps}")
        if not 0.0 <= weight_decay:
            raise ValueError(f"Invalid weight_decay value: {weight_decay}")
        defaults = {"lr": lr, "rho": rho, "eps": eps, "weight_decay": weight_decay,
                    "maximize": maximize, "capturable": capturable, "foreach": foreach,
                    "differentiable": differentiable}
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
                state["step"] = _tg.zeros((), dtype=_new_step(group).dtype)
                state["square_avg"] = _tg.zeros_like(p).detach()
                state["acc_delta"] = _tg.zeros_like(p).detach()
            bufs.append([state["square_avg"], state["acc_delta"]])
            steps.append([state["step"]])
        if not params:
            return
        if group["differentiable"]:
            return adadelta(self, group, params)
        _fused.run(self._plan_cache(group), _kernels.adadelta, params, bufs, steps, None, float(_value(group["lr"])),
                   float(group["rho"]), float(group["eps"]), float(group["weight_decay"]),
                   bool(group["maximize"]))
