"""tapegrad.autograd: grad modes, backward/grad, custom Functions, graph views."""
from .grad_mode import (enable_grad, inference_mode, is_grad_enabled, no_grad,  # noqa: F401
                        set_grad_enabled)
from .graph import AccumulateGrad, Node  # noqa: F401
from .engine import backward, grad  # noqa: F401
from .function import Function, FunctionCtx  # noqa: F401
from . import function, graph, grad_mode  # noqa: F401
from .variable import Variable  # noqa: F401
from . import forward_ad, variable  # noqa: F401
from . import functional  # noqa: F401
from .anomaly import detect_anomaly, is_anomaly_enabled, set_detect_anomaly  # noqa: F401
from ._gradcheck import GradcheckError, gradcheck, gradgradcheck  # noqa: F401,E402
