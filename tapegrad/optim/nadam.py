"""NAdam (Nesterov-accelerated Adam, momentum decay, L2 or decoupled weight decay)."""
import tapegrad as _tg
from . import _fused, _kernels
from .adam import _check_betas, _check_lr, _new_step, _tensor_steps
from .optimizer import Optimizer, _get_scalar_dtype, _value
from ._reference import nadam

__all__ = ["NAdam"]


class NAdam(Optimizer):
    def __init__(self, params, lr=2e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0,
                 momentum_decay=4e-3, decoupled_weight_decay=False, *, foreach=None,
                 maximize=False, capturable=False, differentiable=False):
        _check_lr(lr)
        if not 0.0 <= eps:
            raise ValueError(f"Invalid epsilon value: {eps}")
        _check_betas(betas)
        if not 0.0 <= weight_decay:
            raise ValueError(f"Invalid weight_decay value: {weight_decay}")
        if not 0.0 <= momentum_decay:
            raise ValueError(f"Invalid momentum_decay value: {momentum_decay}")
        defaults = {"lr": lr, "betas": betas, "eps": eps, "weight_decay": weight_decay,
                    "momentum_decay": momentum_decay,
                    "decoupled_weight_decay": decoupled_weight_decay, "maximize": maximize,
                    "foreach": foreach, "capturable": capturable,
                    "differentiable": differentiable}
        super().__init__(params, defaults)

    def __setstate__(self, state):
        super().__setstate__(state)
        for group in self.param_groups:
            group.setdefault("maximize", False)
            group.setdefault("foreach", None)
            group.setdefault("capturable", False)
            group.setdefault("differentiable", False)
            group.setdefault("decoupled_weight_decay", False)
            _tensor_steps(self, group)
            for p in group["params"]:
                st = self.state.get(p, [])
                if len(st) != 0 and not isinstance(st["mu_product"], _tg.Tensor):
                    st["mu_product"] = _tg.tensor(st["mu_product"], dtype=_get_scalar_dtype())

    def _step_group(self, group):
        params, bufs, scalars = [], [], []
        for p in group["params"]:
            if p.grad is None:
                continue
            params.append(p)
            state = self.state[p]
            if len(state) == 0:
                state["step"] = _new_step(group)
                state["mu_product"] = _tg.tensor(1.0, dtype=_get_scalar_dtype())
                state["exp_avg"] = _tg.zeros_like(p).detach()
                state["exp_avg_sq"] = _tg.zeros_like(p).detach()
            bufs.append([state["exp_avg"], state["exp_avg_sq"]])
            scalars.append([state["step"], state["mu_product"]])
        if not params:
            return
        if group["differentiable"]:
            return nadam(self, group, params)
        beta1, beta2 = group["betas"]
        _fused.run(self._plan_cache(group), _kernels.nadam, params, bufs, scalars, None, float(_value(group["lr"])),
                   float(beta1), float(beta2), float(group["eps"]), float(group["weight_decay"]),
                   float(group["momentum_decay"]), bool(group["maximize"]),
                   bool(group["decoupled_weight_decay"]))
