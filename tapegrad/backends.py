"""torch.backends for a CPU-only library: flags scripts set (``cudnn.deterministic``,
``cudnn.benchmark``, ``cuda.matmul.allow_tf32``) are stored and have no effect; ``mps`` and
``cudnn`` report unavailable."""
import types


def _ns(name, **attrs):
    m = types.SimpleNamespace(**attrs)
    m.__name__ = "tapegrad.backends." + name
    return m


cudnn = _ns("cudnn", enabled=True, deterministic=False, benchmark=False, allow_tf32=True,
            is_available=lambda: False, version=lambda: None)
mps = _ns("mps", is_available=lambda: False, is_built=lambda: False)
cuda = _ns("cuda", is_built=lambda: False, matmul=_ns("cuda.matmul", allow_tf32=False,
                                                        allow_fp16_reduced_precision_reduction=True))
mkldnn = _ns("mkldnn", enabled=True, is_available=lambda: False)
cpu = _ns("cpu", get_cpu_capability=lambda: "DEFAULT")
