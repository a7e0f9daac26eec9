"""Run a PyTorch script with tapegrad standing in for torch:

    python examples/run.py examples/cubic_fit_sin.py           # under tapegrad
    python examples/run.py examples/cubic_fit_sin.py --torch   # under PyTorch

The scripts are written the way people write PyTorch (``import torch``); this runner only
makes ``import torch`` (and ``torch.nn``, ``torch.nn.functional``, ``torch.linalg``) resolve
to tapegrad. ``run(path, lib)`` returns the script's globals (tests read ``results``).
"""
import os
import runpy
import sys

_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if _ROOT not in sys.path:            # the checkout's tapegrad, not an installed copy
    sys.path.insert(0, _ROOT)

_NAMES = ("torch", "torch.nn", "torch.nn.functional", "torch.linalg", "torch.special")


def run(path, lib="tapegrad"):
    if lib == "torch":
        return runpy.run_path(path, run_name="__main__")
    import tapegrad
    saved = {k: sys.modules.get(k) for k in _NAMES}
    try:
        sys.modules["torch"] = tapegrad
        sys.modules["torch.nn"] = tapegrad.nn
        sys.modules["torch.nn.functional"] = tapegrad.nn.functional
        sys.modules["torch.linalg"] = tapegrad.linalg
        if hasattr(tapegrad, "special"):
            sys.modules["torch.special"] = tapegrad.special
        return runpy.run_path(path, run_name="__main__")
    finally:
        for k, v in saved.items():
            if v is None:
                sys.modules.pop(k, None)
            else:
                sys.modules[k] = v


if __name__ == "__main__":
    run(sys.argv[1], "torch" if "--torch" in sys.argv[2:] else "tapegrad")
