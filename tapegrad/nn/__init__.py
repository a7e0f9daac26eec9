"""tapegrad.nn: ``functional``, ``init``, ``utils`` (gradient clipping, ``utils.rnn``),
``Parameter`` and the modules (``tapegrad.nn.modules``: layers, containers, losses)."""
import sys as _sys

from . import functional  # noqa: F401
from . import init  # noqa: F401
from . import utils  # noqa: F401
from .parameter import Parameter  # noqa: F401

# ---- modules (feat/nn): the layers, containers, activations and losses
from . import modules  # noqa: F401,E402
from .modules import *  # noqa: F401,F403,E402
from .modules import Buffer  # noqa: F401,E402
from .modules import _functional as _xf  # noqa: E402
from .modules import rnn_utils as _rnn_utils  # noqa: E402

# functional forms the modules added (attached only where nn.functional lacks them)
for _name in _xf.__all__:
    if not hasattr(functional, _name):
        setattr(functional, _name, getattr(_xf, _name))
# nn.utils.rnn (pack_padded_sequence ...): nn/utils.py is a module, so the submodule is
# registered under its dotted name for `import torch.nn.utils.rnn`
utils.rnn = _rnn_utils
_sys.modules[__name__ + ".utils.rnn"] = _rnn_utils
if not hasattr(utils, "__path__"):
    utils.__path__ = []      # a package for the import system (its submodule is registered)
