"""tapegrad.optim: torch.optim's optimizers and learning-rate schedulers.

The element-wise update of every parameter of a group is one call into compiled code
(``_kernels.py``, Numba) over all its parameters at once, in torch's arithmetic (see
docs/training.md); ``differentiable=True`` groups use the same formulas as recorded tensor
operations (``_reference.py``).
"""
from .optimizer import Optimizer  # noqa: F401
from .sgd import SGD  # noqa: F401
from .adam import Adam  # noqa: F401
from .adamw import AdamW  # noqa: F401
from .rmsprop import RMSprop  # noqa: F401
from .adagrad import Adagrad  # noqa: F401
from .adadelta import Adadelta  # noqa: F401
from .adamax import Adamax  # noqa: F401
from .nadam import NAdam  # noqa: F401
from .radam import RAdam  # noqa: F401
from .asgd import ASGD  # noqa: F401
from .rprop import Rprop  # noqa: F401
from .lbfgs import LBFGS  # noqa: F401
from . import lr_scheduler  # noqa: F401

__all__ = ["ASGD", "Adadelta", "Adagrad", "Adam", "AdamW", "Adamax", "LBFGS", "NAdam",
           "Optimizer", "RAdam", "RMSprop", "Rprop", "SGD", "lr_scheduler"]
