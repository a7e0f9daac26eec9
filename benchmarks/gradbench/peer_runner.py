#!/usr/bin/env python3
"""Run one of GradBench's own Python tools, unchanged, in a process set up for a comparison.

    python benchmarks/gradbench/peer_runner.py --gradbench DIR TOOL [--sync]

TOOL:
  pytorch              GradBench's PyTorch tool (torch, one thread);
  jax                  GradBench's JAX tool (XLA on one thread); --sync makes every timed run
                       wait for its result (``jax.block_until_ready``): JAX dispatches
                       asynchronously, so without it a run's timing measures the dispatch only;
  pytorch-on-tapegrad  GradBench's PyTorch tool code, unchanged, with ``import torch``
                       resolved to this checkout's tapegrad (``sys.modules`` aliases): eager
                       tapegrad running torch code.

DIR is an extracted GradBench checkout (README.md here says how to get one). The process then
speaks GradBench's protocol on stdin/stdout through the tool's own ``run.py`` main loop.
"""
import argparse
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
ONE_THREAD = {"OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1",
              "NUMBA_NUM_THREADS": "1", "TAPEGRAD_THREADS": "1", "JAX_PLATFORMS": "cpu",
              "XLA_FLAGS": "--xla_cpu_multi_thread_eigen=false intra_op_parallelism_threads=1"}


def alias_torch_to_tapegrad():
    """``import torch`` (and torch.autograd.functional, torch.special, torch.linalg, ...)
    resolves to tapegrad from here on."""
    sys.path.insert(0, ROOT)
    import importlib
    import tapegrad
    for sub in ("autograd", "autograd.functional", "special", "linalg", "nn", "nn.functional",
                "func"):
        try:
            importlib.import_module("tapegrad." + sub)
        except ImportError:
            pass
    for name, mod in list(sys.modules.items()):
        if name == "tapegrad" or name.startswith("tapegrad."):
            sys.modules["torch" + name[len("tapegrad"):]] = mod
    return tapegrad


def sync_jax_runs():
    """Make GradBench's ``wrap.multiple_runs`` time each run to completion."""
    import jax
    from gradbench import wrap
    original = wrap.multiple_runs

    def multiple_runs(**kw):
        decorate = original(**kw)

        def decorator(function):
            def synced(x):
                return jax.block_until_ready(function(x))
            w = decorate(synced)
            w.function = function
            return w
        return decorator
    wrap.multiple_runs = multiple_runs


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("tool", choices=("pytorch", "jax", "pytorch-on-tapegrad"))
    parser.add_argument("--gradbench", required=True)
    parser.add_argument("--sync", action="store_true")
    parser.add_argument("--threads", type=int, default=1)
    args = parser.parse_args(argv)
    if args.threads == 1:
        os.environ.update(ONE_THREAD)
    gb = os.path.abspath(args.gradbench)
    py = os.path.join(gb, "python", "gradbench")
    kind = "pytorch" if args.tool.startswith("pytorch") else "jax"
    tool_dir = os.path.join(py, "gradbench", "tools", kind)
    sys.path[:0] = [tool_dir, py]              # as `python .../tools/<kind>/run.py` sees it
    os.chdir(gb)
    if args.tool == "pytorch-on-tapegrad":
        tg = alias_torch_to_tapegrad()
        if args.threads == 1 and hasattr(tg, "set_num_threads"):
            tg.set_num_threads(1)
    elif args.tool == "pytorch":
        import torch
        torch.set_num_threads(args.threads)
    elif args.sync:
        sync_jax_runs()
    from importlib import import_module
    run = import_module("gradbench.tools.%s.run" % kind)
    # --multithreaded only stops the JAX tool pinning itself to CPU 0; the comparison pins
    # every tool alike, and the thread counts are set above.
    sys.argv = ["run.py", "--multithreaded"]
    try:
        run.main()
    except (EOFError, BrokenPipeError):
        pass


if __name__ == "__main__":
    main()
