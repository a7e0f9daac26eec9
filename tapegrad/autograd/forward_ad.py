"""``torch.autograd.forward_ad`` (dual numbers): not supported by tapegrad, a reverse-mode
library. Each name raises NotImplementedError saying so; Jacobian-vector products are
available through ``autograd.functional.jvp`` and ``func.jvp`` / ``func.jacfwd`` (computed in
reverse mode)."""

_MSG = ("tapegrad does not implement forward-mode AD (torch.autograd.forward_ad.%s); use "
        "torch.autograd.functional.jvp or torch.func.jvp / torch.func.jacfwd, which tapegrad "
        "computes in reverse mode")


def _unsupported(name):
    def f(*args, **kwargs):
        raise NotImplementedError(_MSG % name)
    f.__name__ = name
    return f


make_dual = _unsupported("make_dual")
unpack_dual = _unsupported("unpack_dual")
enter_dual_level = _unsupported("enter_dual_level")
exit_dual_level = _unsupported("exit_dual_level")


class dual_level:
    """Raises NotImplementedError on entry (no forward-mode AD in tapegrad)."""

    def __enter__(self):
        raise NotImplementedError(_MSG % "dual_level")

    def __exit__(self, *exc):
        return False
