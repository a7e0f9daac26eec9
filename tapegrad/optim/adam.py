"""Adam (with amsgrad, maximize, L2 or decoupled weight decay)."""
import tapegrad as _tg
from . import _fused, _kernels
from .optimizer import Optimizer, _check_fused_foreach, _get_scalar_dtype, _value, _to_scalar
from ._reference import adam

__all__ = ["Adam"]


def _check_betas(betas):
    if not 0.0 <= betas[0] < 1.0:
        raise ValueError(f"Invalid beta parameter at index 0: {betas[0]}")
    if not 0.0 <= betas[1] < 1.0:
        raise ValueError(f"Invalid beta parameter at index 1: {betas[1]}")


def _check_lr(lr):
    if isinstance(lr, _tg.Tensor) and lr.numel() != 1:
        raise ValueError("Tensor lr must be 1-element")
    if not 0.0 <= lr:
        raise ValueError(f"Invalid learning rate: {lr}")


def _new_step(group):
    fused = group.get("fused")
    if group.get("capturable") or fused:
        return _tg.zeros((), dtype=_get_scalar_dtype(is_fused=fused))
    return _tg.tensor(0.0, dtype=_get_scalar_dtype())


def _tensor_steps(self, group):
    """Old checkpoints stored 'step' as a number: make it a tensor (torch's __setstate__)."""
    for p in group["params"]:
        st = self.state.get(p, [])
        if len(st) != 0 and "step" in st and not isinstance(st["step"], _tg.Tensor):
            st["step"] = _tg.tensor(float(st["step"]), dtype=_get_scalar_dtype(
                is_fused=group.get("fused")))


class Adam(Optimizer):
    """Adam: m = lerp(m, g, 1 - beta1), v = beta2 v + (1 - beta2) g^2, p -= lr / (1 - beta1^t)
    m / (sqrt(v) / sqrt(1 - beta2^t) + eps)."""

    def __init__(self, params, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0,
                 amsgrad=False, *, foreach=None, maximize=False, capturable=False,
                 differentiable=False, fused=None, decoupled_weight_decay=False):
        if isinstance(lr, _tg.Tensor):
            if foreach and not capturable:
                raise ValueError("lr as a Tensor is not supported for capturable=False and "
                                 "foreach=True")
        _check_lr(lr)
        if not 0.0 <= eps:
            raise ValueError(f"Invalid epsilon value: {eps}")
        _check_betas(betas)
        if not 0.0 <= weight_decay:
            raise ValueError(f"Invalid weight_decay value: {weight_decay}")
        if not ((isinstance(betas[0], float) and isinstance(betas[1], float))
                or (isinstance(betas[0], _tg.Tensor) and isinstance(betas[1], _tg.Tensor))):
            raise ValueError("betas must be either both floats or both Tensors")
        betas = tuple(map(_to_scalar, betas))
        defaults = {"lr": lr, "betas": betas, "eps": eps, "weight_decay": weight_decay,
                    "amsgrad": amsgrad, "maximize": maximize, "foreach": foreach,
                    "capturable": capturable, "differentiable": differentiable, "fused": fused,
                    "decoupled_weight_decay": decoupled_weight_decay}
        super().__init__(params, defaults)
        _check_fused_foreach(fused, foreach, differentiable)

    def __setstate__(self, state):
        super().__setstate__(state)
        for group in self.param_groups:
            group.setdefault("amsgrad", False)
            group.setdefault("maximize", False)
            group.setdefault("foreach", None)
            group.setdefault("capturable", False)
            group.setdefault("differentiable", False)
            group.setdefault("decoupled_weight_decay", False)
            group.setdefault("fused", None)
            _tensor_steps(self, group)

    def _init_group(self, group):
        params, bufs, steps = [], [], []
        for p in group["params"]:
            if p.grad is None:
                continue
            params.append(p)
            state = self.state[p]
            if len(state) == 0:
                state["step"] = _new_step(group)
                state["exp_avg"] = _tg.zeros_like(p).detach()
                state["exp_avg_sq"] = _tg.zeros_like(p).detach()
                if group["amsgrad"]:
                    state["max_exp_avg_sq"] = _tg.zeros_like(p).detach()
            b = [state["exp_avg"], state["exp_avg_sq"]]
            if group["amsgrad"]:
                b.append(state["max_exp_avg_sq"])
            bufs.append(b)
            steps.append([state["step"]])
        return params, bufs, steps

    def _step_group(self, group):
        params, bufs, steps = self._init_group(group)
        if not params:
            return
        if group["differentiable"]:
            return adam(self, group, params)
        beta1, beta2 = (float(_value(b)) for b in group["betas"])
        _fused.run(self._plan_cache(group), _kernels.adam, params, bufs, steps, None, float(_value(group["lr"])), beta1,
                   beta2, float(group["eps"]), float(_value(group["weight_decay"])),
                   bool(group["amsgrad"]), bool(group["maximize"]),
                   bool(group["decoupled_weight_decay"]))
