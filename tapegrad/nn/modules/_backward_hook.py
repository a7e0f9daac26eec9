"""Module full backward hooks (``register_full_backward_hook`` / ``_pre_hook``).

As torch's ``BackwardHook``: the tensors going into the module pass through one identity
Function and the tensors coming out through another. The outputs' Function sees the gradients
of the outputs (the pre-hooks run there and may replace them); the inputs' Function sees the
gradients of the inputs, calls ``hook(module, grad_input, grad_output)`` (which may replace
``grad_input``) and passes them on. When no input requires grad, the hooks run at the outputs
with ``grad_input`` all None.
"""
import tapegrad as _tg
from ...autograd.function import Function


class _Identity(Function):
    @staticmethod
    def forward(ctx, hook, *tensors):
        ctx.hook = hook
        return tuple(t.view_as(t) for t in tensors)

    @staticmethod
    def backward(ctx, *grads):
        return (None,) + tuple(ctx.hook(grads))


def _tensor_positions(values):
    return [i for i, v in enumerate(values) if isinstance(v, _tg.Tensor) and v.requires_grad]


class BackwardHook:
    def __init__(self, module, user_hooks, user_pre_hooks):
        self.module = module
        self.user_hooks = user_hooks
        self.user_pre_hooks = user_pre_hooks
        self.grad_outputs = None
        self.n_inputs = 0
        self.input_positions = []
        self.input_len = 0

    def _run_hooks(self, grad_input):
        for hook in self.user_hooks:
            res = hook(self.module, grad_input, self.grad_outputs)
            if res is None:
                continue
            res = tuple(res) if isinstance(res, (tuple, list)) else (res,)
            if len(res) != len(grad_input):
                raise RuntimeError("Backward hook returned an invalid number of grad_input, got "
                                   f"{len(res)}, but expected {len(grad_input)}")
            grad_input = res
        return grad_input

    def setup_input_hook(self, args):
        pos = _tensor_positions(args)
        self.input_positions, self.input_len = pos, len(args)
        if not pos or not self.user_hooks:
            return args

        def on_inputs(grads):
            full = [None] * self.input_len
            for i, g in zip(pos, grads):
                full[i] = g
            full = self._run_hooks(tuple(full))
            return tuple(full[i] for i in pos)

        outs = _Identity.apply(on_inputs, *[args[i] for i in pos])
        outs = outs if isinstance(outs, tuple) else (outs,)
        new = list(args)
        for i, o in zip(pos, outs):
            new[i] = o
        return tuple(new)

    def setup_output_hook(self, result):
        single = isinstance(result, _tg.Tensor)
        values = (result,) if single else tuple(result)
        pos = _tensor_positions(values)
        if not pos:
            return result

        def on_outputs(grads):
            full = [None] * len(values)
            for i, g in zip(pos, grads):
                full[i] = g
            full = tuple(full)
            for hook in self.user_pre_hooks:
                res = hook(self.module, full)
                if res is None:
                    continue
                res = tuple(res) if isinstance(res, (tuple, list)) else (res,)
                if len(res) != len(full):
                    raise RuntimeError("Backward pre hook returned an invalid number of "
                                       f"grad_output, got {len(res)}, but expected {len(full)}")
                full = res
            self.grad_outputs = full
            if not self.input_positions and self.user_hooks:
                self._run_hooks(tuple([None] * self.input_len))
            return tuple(full[i] for i in pos)

        outs = _Identity.apply(on_outputs, *[values[i] for i in pos])
        outs = outs if isinstance(outs, tuple) else (outs,)
        new = list(values)
        for i, o in zip(pos, outs):
            new[i] = o
        return new[0] if single else type(result)(new) if isinstance(result, tuple) else new
