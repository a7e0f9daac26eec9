"""ASGD (averaged stochastic gradient descent)."""
import tapegrad as _tg
from . import _fused, _kernels
from .adam import _check_lr
from .optimizer import Optimizer, _get_scalar_dtype, _value
from ._reference import asgd

__all__ = ["ASGD"]


class ASGD(Optimizer):
    def __init__(self, params, lr=1e-2, lambd=1e-4, alpha=0.75, t0=1e6, weight_decay=0,
                 foreach=None, maximize=False, differentiable=False, capturable=False):
        _check_lr(lr)
        if not 0.0 <= weight_decay:
            raise ValueError(f"Invalid weight_decay value: {weight_decay}")
        defaults = {"lr": lr, "lambd": lambd, "alpha": alpha, "t0": t0,
                    "weight_decay": weight_decay, "foreach": foreach, "maximize": maximize,
                    "differentiable": differentiable, "capturable": capturable}
        super().__init__(params, defaults)

    def __setstate__(self, state):
        super().__setstate__(state)
        for group in self.param_groups:
            group.setdefault("foreach", None)
            group.setdefault("maximize", False)
            group.setdefault("differentiable", False)
            group.setdefault("capturable", False)
            for p in group["params"]:
                st = self.state.get(p, [])
                if len(st) != 0:
                    for k in ("step", "eta", "mu"):
                        if not isinstance(st[k], _tg.Tensor):
                            st[k] = _tg.tensor(float(st[k]), dtype=_get_scalar_dtype())

    def _step_group(self, group):
        params, bufs, scalars = [], [], []
        sdt = _get_scalar_dtype()
        for p in group["params"]:
            if p.grad is None:
                continue
            params.append(p)
            state = self.state[p]
            if len(state) == 0:
                state["step"] = _tg.zeros((), dtype=sdt)
                state["eta"] = _tg.as_tensor(float(_value(group["lr"])), dtype=sdt).clone()
                state["mu"] = _tg.ones((), dtype=sdt)
                state["ax"] = _tg.zeros_like(p).detach()
            bufs.append([state["ax"]])
            scalars.append([state["step"], state["eta"], state["mu"]])
        if not params:
            return
        if group["differentiable"]:
            return asgd(self, group, params)
        _fused.run(self._plan_cache(group), _kernels.asgd, params, bufs, scalars, None, float(_value(group["lr"])),
                   float(group["lambd"]), float(group["alpha"]), float(group["t0"]),
                   float(group["weight_decay"]), bool(group["maximize"]))
