"""The optimizer updates written with tensor operations (torch's ``differentiable=True`` path):
used when a group asks for ``differentiable=True`` (the step is recorded, so gradients flow
through it to the hyper-parameters or to non-leaf parameters), and by the tests as a second,
independent implementation of each formula beside the compiled kernels.

Each function updates the group's parameters that have gradients, in place, with the same
operations (and state layout) as torch's single-tensor implementation.
"""
import tapegrad as _tg
from .optimizer import _value


def _grad(group, p):
    g = p.grad
    return -g if group["maximize"] else g


def sgd(opt, group, params):
    lr, momentum, dampening = group["lr"], group["momentum"], group["dampening"]
    wd = group["weight_decay"]
    for p in params:
        g = _grad(group, p)
        if wd != 0:
            g = g.add(p, alpha=_value(wd))
        if momentum != 0:
            state = opt.state[p]
            buf = state.get("momentum_buffer")
            if buf is None:
                buf = g.detach().clone()
            else:
                buf = buf.mul(momentum).add(g, alpha=1 - dampening)
            state["momentum_buffer"] = buf
            g = g.add(buf, alpha=momentum) if group["nesterov"] else buf
        if isinstance(lr, _tg.Tensor) and lr.requires_grad:
            p.addcmul_(g, lr, value=-1)
        else:
            p.add_(g, alpha=-_value(lr))


def _steps(opt, p):
    st = opt.state[p]["step"]
    st += 1
    return float(st.item())


def adam(opt, group, params):
    lr, (beta1, beta2) = _value(group["lr"]), group["betas"]
    wd, eps = group["weight_decay"], group["eps"]
    for p in params:
        state = opt.state[p]
        g = _grad(group, p)
        step = _steps(opt, p)
        if wd != 0:
            if group["decoupled_weight_decay"]:
                p.mul_(1 - lr * wd)
            else:
                g = g.add(p, alpha=wd)
        m = state["exp_avg"].lerp(g, 1 - beta1)
        v = state["exp_avg_sq"].mul(beta2).addcmul(g, g, value=1 - beta2)
        state["exp_avg"], state["exp_avg_sq"] = m, v
        bc1 = 1 - beta1 ** step
        bc2 = 1 - beta2 ** step
        if group["amsgrad"]:
            vmax = _tg.maximum(state["max_exp_avg_sq"], v)
            state["max_exp_avg_sq"] = vmax
            denom = (vmax.sqrt() / (bc2 ** 0.5)).add(eps)
        else:
            denom = (v.sqrt() / (bc2 ** 0.5)).add(eps)
        p.addcdiv_(m, denom, value=-(lr / bc1))


def rmsprop(opt, group, params):
    lr, alpha, eps, wd = _value(group["lr"]), group["alpha"], group["eps"], group["weight_decay"]
    momentum = group["momentum"]
    for p in params:
        state = opt.state[p]
        g = _grad(group, p)
        _steps(opt, p)
        if wd != 0:
            g = g.add(p, alpha=wd)
        sq = state["square_avg"].mul(alpha).addcmul(g, g, value=1 - alpha)
        state["square_avg"] = sq
        if group["centered"]:
            ga = state["grad_avg"].lerp(g, 1 - alpha)
            state["grad_avg"] = ga
            avg = sq.addcmul(ga, ga, value=-1).sqrt()
        else:
            avg = sq.sqrt()
        avg = avg.add(eps)
        if momentum > 0:
            buf = state["momentum_buffer"].mul(momentum).addcdiv(g, avg)
            state["momentum_buffer"] = buf
            p.add_(buf, alpha=-lr)
        else:
            p.addcdiv_(g, avg, value=-lr)


def adagrad(opt, group, params):
    lr, lr_decay, eps, wd = (_value(group["lr"]), group["lr_decay"], group["eps"],
                             group["weight_decay"])
    for p in params:
        state = opt.state[p]
        g = _grad(group, p)
        step = _steps(opt, p)
        if wd != 0:
            g = g.add(p, alpha=wd)
        clr = lr / (1 + (step - 1) * lr_decay)
        s = state["sum"].addcmul(g, g, value=1)
        state["sum"] = s
        p.addcdiv_(g, s.sqrt() + eps, value=-clr)


def adadelta(opt, group, params):
    lr, rho, eps, wd = _value(group["lr"]), group["rho"], group["eps"], group["weight_decay"]
    for p in params:
        state = opt.state[p]
        g = _grad(group, p)
        _steps(opt, p)
        if wd != 0:
            g = g.add(p, alpha=wd)
        sq = state["square_avg"].mul(rho).addcmul(g, g, value=1 - rho)
        state["square_avg"] = sq
        std = sq.add(eps).sqrt()
        delta = state["acc_delta"].add(eps).sqrt().div(std).mul(g)
        state["acc_delta"] = state["acc_delta"].mul(rho).addcmul(delta, delta, value=1 - rho)
        p.add_(delta, alpha=-lr)


def adamax(opt, group, params):
    lr, (beta1, beta2), eps, wd = (_value(group["lr"]), group["betas"], group["eps"],
                                   group["weight_decay"])
    for p in params:
        state = opt.state[p]
        g = _grad(group, p)
        step = _steps(opt, p)
        if wd != 0:
            g = g.add(p, alpha=wd)
        m = state["exp_avg"].lerp(g, 1 - beta1)
        u = _tg.maximum(state["exp_inf"].mul(beta2), g.abs().add(eps))
        state["exp_avg"], state["exp_inf"] = m, u
        p.addcdiv_(m, u, value=-(lr / (1 - beta1 ** step)))


def nadam(opt, group, params):
    lr, (beta1, beta2), eps, wd = (_value(group["lr"]), group["betas"], group["eps"],
                                   group["weight_decay"])
    md = group["momentum_decay"]
    for p in params:
        state = opt.state[p]
        g = _grad(group, p)
        step = _steps(opt, p)
        bc2 = 1 - beta2 ** step
        if wd != 0:
            if group["decoupled_weight_decay"]:
                p.mul_(1 - lr * wd)
            else:
                g = g.add(p, alpha=wd)
        mu = beta1 * (1.0 - 0.5 * (0.96 ** (step * md)))
        mu_next = beta1 * (1.0 - 0.5 * (0.96 ** ((step + 1) * md)))
        state["mu_product"] = state["mu_product"] * mu
        mp = float(state["mu_product"].item())
        m = state["exp_avg"].lerp(g, 1 - beta1)
        v = state["exp_avg_sq"].mul(beta2).addcmul(g, g, value=1 - beta2)
        state["exp_avg"], state["exp_avg_sq"] = m, v
        denom = v.div(bc2).sqrt().add(eps)
        p.addcdiv_(g, denom, value=-lr * (1.0 - mu) / (1.0 - mp))
        p.addcdiv_(m, denom, value=(-lr * mu_next) / (1.0 - mp * mu_next))


def radam(opt, group, params):
    lr, (beta1, beta2), eps, wd = (_value(group["lr"]), group["betas"], group["eps"],
                                   group["weight_decay"])
    for p in params:
        state = opt.state[p]
        g = _grad(group, p)
        step = _steps(opt, p)
        if wd != 0:
            if group["decoupled_weight_decay"]:
                p.mul_(1 - lr * wd)
            else:
                g = g.add(p, alpha=wd)
        m = state["exp_avg"].lerp(g, 1 - beta1)
        v = state["exp_avg_sq"].mul(beta2).addcmul(g, g, value=1 - beta2)
        state["exp_avg"], state["exp_avg_sq"] = m, v
        bc1 = 1 - beta1 ** step
        bc2 = 1 - beta2 ** step
        bcm = m / bc1
        rho_inf = 2 / (1 - beta2) - 1
        rho_t = rho_inf - 2 * step * (beta2 ** step) / bc2
        if rho_t > 5.0:
            rect = ((rho_t - 4) * (rho_t - 2) * rho_inf
                    / ((rho_inf - 4) * (rho_inf - 2) * rho_t)) ** 0.5
            adaptive = (bc2 ** 0.5) / v.sqrt().add(eps)
            p.add_(bcm * lr * adaptive * rect, alpha=-1.0)
        else:
            p.add_(bcm * lr, alpha=-1.0)


def asgd(opt, group, params):
    lr, lambd, alpha, t0, wd = (_value(group["lr"]), group["lambd"], group["alpha"],
                                group["t0"], group["weight_decay"])
    for p in params:
        state = opt.state[p]
        g = _grad(group, p)
        step = _steps(opt, p)
        if wd != 0:
            g = g.add(p, alpha=wd)
        eta = float(state["eta"].item())
        p.mul_(1 - lambd * eta)
        p.add_(g, alpha=-eta)
        if state["mu"].item() != 1:
            state["ax"] = state["ax"].add(p.sub(state["ax"]).mul(state["mu"]))
        else:
            state["ax"] = p.detach().clone()
        state["eta"].copy_(_tg.as_tensor(lr / ((1 + lambd * lr * step) ** alpha)))
        state["mu"].copy_(_tg.as_tensor(1 / max(1, step - t0)))


def rprop(opt, group, params):
    etaminus, etaplus = group["etas"]
    smin, smax = group["step_sizes"]
    for p in params:
        state = opt.state[p]
        g = _grad(group, p)
        _steps(opt, p)
        sign = g.mul(state["prev"]).sign()
        sign = _tg.where(sign > 0, _tg.full_like(sign, etaplus), sign)
        sign = _tg.where(sign < 0, _tg.full_like(sign, etaminus), sign)
        sign = _tg.where(sign == 0, _tg.ones_like(sign), sign)
        ss = state["step_size"].mul(sign).clamp(smin, smax)
        state["step_size"] = ss
        g = _tg.where(sign == etaminus, _tg.zeros_like(g), g)
        p.addcmul_(g.sign(), ss, value=-1)
        state["prev"] = g.detach().clone()
