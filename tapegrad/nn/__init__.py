"""tapegrad.nn: ``functional``, ``init``, ``utils`` (gradient clipping, ``utils.rnn``),
``Parameter`` and the modules (``tapegrad.nn.modules``: layers, containers, losses; imported on
first use, to keep ``import tapegrad`` fast)."""
import sys as _sys

from . import functional  # noqa: F401
from . import init  # noqa: F401
from . import utils  # noqa: F401
from .parameter import Parameter  # noqa: F401

# ---- modules: the layers, containers, activations and losses, loaded on first
# access of any of their names (nn.Linear, nn.Module, from tapegrad.nn import Sequential ...)
_MODULE_NAMES = None


def _load_modules():
    global _MODULE_NAMES
    import importlib
    modules = importlib.import_module(__name__ + ".modules")
    rnn_utils = importlib.import_module(__name__ + ".modules.rnn_utils")
    g = globals()
    for name in modules.__all__:
        g.setdefault(name, getattr(modules, name))
    g["modules"] = modules
    utils.rnn = rnn_utils
    _MODULE_NAMES = set(modules.__all__)
    return modules


def __getattr__(name):
    if name.startswith("__"):
        raise AttributeError(name)
    modules = _load_modules()
    if name == "modules":
        return modules
    try:
        return getattr(modules, name)
    except AttributeError:
        raise AttributeError("module 'tapegrad.nn' has no attribute '%s'" % name) from None


def __dir__():
    return sorted(set(globals()) | set(_load_modules().__all__) | {"modules"})


def _lazy(name):
    def fn(*args, **kwargs):
        import importlib
        _functional = importlib.import_module(__name__ + ".modules._functional")
        return getattr(_functional, name)(*args, **kwargs)
    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = "tapegrad.nn.modules._functional.%s (loaded on first call)" % name
    return fn


# functional forms the modules added (attached only where nn.functional lacks them)
for _name in ("conv_transpose1d", "conv_transpose2d", "multi_head_attention_forward",
              "embedding_bag", "dropout1d", "dropout2d", "dropout3d", "feature_alpha_dropout",
              "rrelu", "rrelu_", "local_response_norm", "lp_pool1d", "lp_pool2d",
              "max_unpool1d", "max_unpool2d", "pixel_shuffle", "pixel_unshuffle",
              "channel_shuffle", "interpolate", "upsample", "upsample_nearest",
              "upsample_bilinear", "multilabel_margin_loss", "ctc_loss"):
    if not hasattr(functional, _name):
        setattr(functional, _name, _lazy(_name))


# nn.utils.rnn (pack_padded_sequence ...): nn/utils.py is a module, so the submodule is found
# by its dotted name for `import torch.nn.utils.rnn`, and nn.utils acts as a package
def _rnn_utils_module():
    import importlib
    rnn_utils = importlib.import_module(__name__ + ".modules.rnn_utils")
    _sys.modules[__name__ + ".utils.rnn"] = rnn_utils
    utils.rnn = rnn_utils
    return rnn_utils


class _RnnAlias:
    """A meta-path finder that serves ``tapegrad.nn.utils.rnn`` as ``nn.modules.rnn_utils``."""

    def find_spec(self, fullname, path=None, target=None):
        if fullname != __name__ + ".utils.rnn":
            return None
        import importlib.machinery
        return importlib.machinery.ModuleSpec(fullname, self)

    def create_module(self, spec):
        return _rnn_utils_module()

    def exec_module(self, module):
        pass


if not hasattr(utils, "__path__"):
    utils.__path__ = []           # a package for the import system
_sys.meta_path.append(_RnnAlias())
