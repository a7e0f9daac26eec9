"""Rprop (resilient backpropagation)."""
import tapegrad as _tg
from . import _fused, _kernels
from .adam import _check_lr, _tensor_steps
from .optimizer import Optimizer, _get_scalar_dtype, _value
from ._reference import rprop

__all__ = ["Rprop"]


class Rprop(Optimizer):
    def __init__(self, params, lr=1e-2, etas=(0.5, 1.2), step_sizes=(1e-6, 50), *,
                 capturable=False, foreach=None, maximize=False, differentiable=False):
        _check_lr(lr)
        if not 0.0 < etas[0] < 1.0 < etas[1]:
            raise ValueError(f"Invalid eta values: {etas[0]}, {etas[1]}")
        defaults = {"lr": lr, "etas": etas, "step_sizes": step_sizes, "foreach": foreach,
                    "maximize": maximize, "differentiable": differentiable,
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
                state["step"] = _tg.zeros((), dtype=_get_scalar_dtype())
                state["prev"] = _tg.zeros_like(p).detach()
                state["step_size"] = _tg.full_like(p.grad, float(_value(group["lr"]))).detach()
            bufs.append([state["prev"], state["step_size"]])
            steps.append([state["step"]])
        if not params:
            return
        if group["differentiable"]:
            return rprop(self, group, params)
        etaminus, etaplus = group["etas"]
        smin, smax = group["step_sizes"]
        _fused.run(self._plan_cache(group), _kernels.rprop, params, bufs, steps, None, float(etaminus), float(etaplus),
                   float(smin), float(smax), bool(group["maximize"]))
