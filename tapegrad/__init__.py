"""tapegrad: reverse-mode automatic differentiation on a flat tape, replayed by Numba.

``import tapegrad as torch`` gives PyTorch's autograd API: Tensors record one tape entry per
differentiable op, and ``backward()`` sweeps the tape in one call into compiled code.

This module is the top layer (docs/design.md, "Layers"): it builds torch's namespace from the
families' ``__all__`` lists, in the families' fixed order, then takes the public submodules'
top-level names by name, then the aliases. Each name is bound once (tests/test_init.py).
"""
from . import _alloc
_alloc.apply()          # large freed arrays stay in the process (see _alloc.py)

# ---- the op families, in their fixed order: each ``__all__`` lists the names of torch's
# namespace the module defines (no two lists share a name)
from .tensor import *  # noqa: F401,F403,E402  Tensor, Size, device, the dtypes
from ._info import *  # noqa: F401,F403,E402
from ._shape import *  # noqa: F401,F403,E402
from ._math import *  # noqa: F401,F403,E402
from .creation import *  # noqa: F401,F403,E402
from ._reduce import *  # noqa: F401,F403,E402
from ._matrix import *  # noqa: F401,F403,E402
from .nn._conv import *  # noqa: F401,F403,E402
from ._format import *  # noqa: F401,F403,E402

# ---- the public submodules, and the names of torch's namespace that are theirs
from . import autograd, backends, cuda, func, linalg, nn, special, testing  # noqa: F401,E402
from .autograd import (enable_grad, inference_mode, is_grad_enabled, no_grad,  # noqa: F401,E402
                       set_grad_enabled)
from .linalg import (cholesky_inverse, cholesky_solve, det, logdet,  # noqa: F401,E402
                     matrix_power)
from .nn.functional import (celu, celu_, cosine_similarity,  # noqa: F401,E402
                            pairwise_distance, pdist, prelu, relu, relu_, rms_norm, selu, selu_,
                            threshold, threshold_)
from .special import (digamma, erfc, erfinv, i0, lgamma, logit, mvlgamma,  # noqa: F401,E402
                      polygamma, sinc, xlogy)
from ._index import (as_strided, as_strided_scatter, diagonal_scatter, put,  # noqa: F401,E402
                     select_scatter, slice_scatter, unravel_index)
from .func import compile  # noqa: F401,E402
# torch.softmax / torch.log_softmax: dtype is their third positional argument (F's: _stacklevel)
from .nn.functional import (_torch_log_softmax as log_softmax,  # noqa: F401,E402
                            _torch_softmax as softmax)

# ---- torch's names for functions of different signature or name in the submodules (aten's
# forms: torch.slogdet returns a tuple, torch.dropout takes ``train``, torch.layer_norm ...)
from .linalg import (_torch_cholesky as cholesky, _torch_pinverse as pinverse,  # noqa: E402
                     _torch_slogdet as slogdet, inv as inverse)
from .nn.functional import (  # noqa: E402
    _torch_batch_norm as batch_norm, _torch_binary_cross_entropy_with_logits as
    binary_cross_entropy_with_logits, _torch_cosine_embedding_loss as cosine_embedding_loss,
    _torch_dropout as dropout, _torch_dropout_ as dropout_, _torch_embedding as embedding,
    _torch_group_norm as group_norm, _torch_hinge_embedding_loss as hinge_embedding_loss,
    _torch_instance_norm as instance_norm, _torch_kl_div as kl_div,
    _torch_layer_norm as layer_norm, _torch_margin_ranking_loss as margin_ranking_loss,
    _torch_poisson_nll_loss as poisson_nll_loss,
    _torch_triplet_margin_loss as triplet_margin_loss)
from .creation import _range as range  # noqa: E402
from .special import gammainc as igamma, gammaincc as igammac  # noqa: E402

# ---- the method table: every family's Tensor methods, attached once (needs the names above:
# some families' method builders read the namespace)
from . import _methods  # noqa: F401,E402

# torch's functions built from the attached methods and the names above (torch.exp_ is
# Tensor.exp_, torch.diagonal_copy ...)
globals().update(_methods.namespace_functions())

from ._compiled import _driver, _fastload, _interp  # noqa: E402
_fastload.install(_interp)  # cached interpreter loads without Numba's full refresh (start-up)
_fastload.install(_driver)

# ---- aliases: torch's other names for the objects above
absolute = abs
float = float32
double = float64
half = float16
long = int64
int = int32
short = int16
bool = bool_
# real tensors only: conjugation and the real part are the tensor itself (as torch's)
conj = conj_physical = resolve_conj = resolve_neg = real = Tensor.conj
is_conj = is_complex = Tensor.is_conj
from .tensor import LEGACY as _LEGACY  # noqa: E402
globals().update(_LEGACY)             # FloatTensor, LongTensor ... (legacy constructors)
from math import e, inf, nan, pi  # noqa: F401,E402

__version__ = "0.1.0"


def is_floating_point(t):
    return t._dtype.is_floating_point


def numel(t):
    return t.numel()


# ---- training stack: torch.optim, torch.utils.data, torch.save/load in torch's
# format (tapegrad/serialization.py), imported on first use (start-up time)
_LAZY = {"optim": "optim", "utils": "utils", "serialization": "serialization",
         "save": "serialization", "load": "serialization", "random": "random"}


def __getattr__(name):
    sub = _LAZY.get(name)
    if sub is None:
        raise AttributeError("module 'tapegrad' has no attribute '%s'" % name)
    import importlib
    mod = importlib.import_module("." + sub, __name__)
    return mod if name == sub else getattr(mod, name)


def __dir__():
    return sorted(set(globals()) | set(_LAZY))
