"""Adagrad (lr decay, initial accumulator value, weight decay, maximize)."""
import tapegrad as _tg
from . import _fused, _kernels
from .adam import _check_lr, _tensor_steps
from .optimizer import Optimizer, _check_fused_foreach, _get_scalar_dtype, _value
from ._reference import adagrad

__all__ = ["Adagrad"]


class Adagrad(Optimizer):
    def __init__(self, params, lr=1e-2, lr_decay=0, weight_decay=0, initial_accumulator_value=0,
                 eps=1e-10, foreach=None, *, maximize=False, differentiable=False, fused=None):
        _check_lr(lr)
        if not 0.0 <= lr_decay:
            raise ValueError(f"Invalid lr_decay value: {lr_decay}")
        if not 0.0 <= weight_decay:
            raise ValueError(f"Invalid weight_decay value: {weight_decay}")
        if not 0.0 <= initial_accumulator_value:
            raise ValueError("Invalid initial_accumulator_value value: "
                             f"{initial_accumulator_value}")
        if not 0.0 <= eps:
            raise ValueError(f"Invalid epsilon value: {eps}")
        defaults = {"lr": lr, "lr_decay": lr_decay, "eps": eps, "weight_decay": weight_decay,
                    "initial_accumulator_value": initial_accumulator_value, "foreach": foreach,
                    "maximize": maximize, "differentiable": differentiable, "fused": fused}
        super().__init__(params, defaults)
        _check_fused_foreach(fused, foreach, differentiable)
        for group in self.param_groups:
            for p in group["params"]:
                state = self.state[p]
                state["step"] = (_tg.zeros((), dtype=_get_scalar_dtype(is_fused=True))
                                 if group["fused"] else
                                 _tg.tensor(0.0, dtype=_get_scalar_dtype()))
                state["sum"] = _tg.full_like(p, initial_accumulator_value).detach()

    def __setstate__(self, state):
        super().__setstate__(state)
        for group in self.param_groups:
            group.setdefault("foreach", None)
            group.setdefault("maximize", False)
            group.setdefault("differentiable", False)
            group.setdefault("fused", None)
            _tensor_steps(self, group)

    def share_memory(self):
        pass

    def _step_group(self, group):
        params, bufs, steps = [], [], []
        for p in group["params"]:
            if p.grad is None:
                continue
            params.append(p)
            state = self.state[p]
            bufs.append([state["sum"]])
            steps.append([state["step"]])
        if not params:
            return
        if group["differentiable"]:
            return adagrad(self, group, params)
        _fused.run(self._plan_cache(group), _kernels.adagrad, params, bufs, steps, None, float(_value(group["lr"])),
                   float(group["lr_decay"]), float(group["eps"]), float(group["weight_decay"]),
                   bool(group["maximize"]))
