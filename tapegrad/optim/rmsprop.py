"""RMSprop (centered, momentum, weight decay, maximize)."""
import tapegrad as _tg
from . import _fused, _kernels
from .adam import _check_lr, _new_step, _tensor_steps
from .optimizer import Optimizer, _value
from ._reference import rmsprop

__all__ = ["RMSprop"]


class RMSprop(Optimizer):
    def __init__(self, params, lr=1e-2, alpha=0.99, eps=1e-8, weight_decay=0, momentum=0,
                 centered=False, capturable=False, foreach=None, maximize=False,
                 differentiable=False):
        _check_lr(lr)
        if not 0.0 <= eps:
            raise ValueError(f"Invalid epsilon value: {eps}")
        if not 0.0 <= momentum:
            raise ValueError(f"Invalid momentum value: {momentum}")
        if not 0.0 <= weight_decay:
            raise ValueError(f"Invalid weight_decay value: {weight_decay}")
        if not 0.0 <= alpha:
            raise ValueError(f"Invalid alpha value: {alpha}")
        defaults = {"lr": lr, "momentum": momentum, "alpha": alpha, "eps": eps,
                    "centered": centered, "weight_decay": weight_decay, "capturable": capturable,
                    "foreach": foreach, "maximize": maximize, "differentiable": differentiable}
        super().__init__(params, defaults)

    def __setstate__(self, state):
        super().__setstate__(state)
        for group in self.param_groups:
            group.setdefault("momentum", 0)
            group.setdefault("centered", False)
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
                state["square_avg"] = _tg.zeros_like(p).detach()
                if group["momentum"] > 0:
                    state["momentum_buffer"] = _tg.zeros_like(p).detach()
                if group["centered"]:
                    state["grad_avg"] = _tg.zeros_like(p).detach()
            bufs.append([state["square_avg"],
                         state["grad_avg"] if group["centered"] else None,
                         state["momentum_buffer"] if group["momentum"] > 0 else None])
            steps.append([state["step"]])
        if not params:
            return
        if group["differentiable"]:
            return rmsprop(self, group, params)
        _fused.run(self._plan_cache(group), _kernels.rmsprop, params, bufs, steps, None, float(_value(group["lr"])),
                   float(group["alpha"]), float(group["eps"]), float(group["weight_decay"]),
                   float(group["momentum"]), bool(group["centered"]), bool(group["maximize"]))
