"""SGD with momentum, dampening, Nesterov momentum, weight decay and maximize."""
import tapegrad as _tg
from . import _fused, _kernels
from .optimizer import Optimizer, _check_fused_foreach, _value
from ._reference import sgd

__all__ = ["SGD"]


class SGD(Optimizer):
    """Stochastic gradient descent (torch's update: buf = momentum buf + (1 - dampening) g,
    the first buffer being g itself; Nesterov: g + momentum buf)."""

    def __init__(self, params, lr=1e-3, momentum=0, dampening=0, weight_decay=0, nesterov=False,
                 *, maximize=False, foreach=None, differentiable=False, fused=None):
        if isinstance(lr, _tg.Tensor) and lr.numel() != 1:
            raise ValueError("Tensor lr must be 1-element")
        if lr < 0.0:
            raise ValueError(f"Invalid learning rate: {lr}")
        if momentum < 0.0:
            raise ValueError(f"Invalid momentum value: {momentum}")
        if weight_decay < 0.0:
            raise ValueError(f"Invalid weight_decay value: {weight_decay}")
        defaults = {"lr": lr, "momentum": momentum, "dampening": dampening,
                    "weight_decay": weight_decay, "nesterov": nesterov, "maximize": maximize,
                    "foreach": foreach, "differentiable": differentiable, "fused": fused}
        if nesterov and (momentum <= 0 or dampening != 0):
            raise ValueError("Nesterov momentum requires a momentum and zero dampening")
        super().__init__(params, defaults)
        _check_fused_foreach(fused, foreach, differentiable)

    def __setstate__(self, state):
        super().__setstate__(state)
        for group in self.param_groups:
            group.setdefault("nesterov", False)
            group.setdefault("maximize", False)
            group.setdefault("foreach", None)
            group.setdefault("differentiable", False)
            group.setdefault("fused", False)

    def _step_group(self, group):
        if group["differentiable"]:
            return sgd(self, group, [p for p in group["params"] if p.grad is not None])
        params, bufs, init = [], [], []
        momentum = group["momentum"]
        for p in group["params"]:
            if p.grad is None:
                continue
            params.append(p)
            if momentum != 0:
                state = self.state[p]
                buf = state.get("momentum_buffer")
                init.append(buf is None)
                if buf is None:
                    buf = state["momentum_buffer"] = _tg.zeros_like(p).detach()
                bufs.append([buf])
            else:
                init.append(False)
                bufs.append([None])
        if not params:
            return
        _fused.run(self._plan_cache(group), _kernels.sgd, params, bufs, None, init, float(_value(group["lr"])),
                   float(momentum), float(group["dampening"]), float(_value(group["weight_decay"])),
                   bool(group["nesterov"]), bool(group["maximize"]))
