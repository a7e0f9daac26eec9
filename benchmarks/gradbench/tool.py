#!/usr/bin/env python3
"""tapegrad's GradBench tool: speaks GradBench's protocol on stdin/stdout.

    python benchmarks/gradbench/tool.py [--multithreaded]

Under GradBench's runner:  gradbench run --eval "gradbench eval gmm" \
    --tool "python /path/to/tapegrad/benchmarks/gradbench/tool.py"
Single-threaded unless --multithreaded (as GradBench's tools). See README.md here.
"""
import argparse
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--multithreaded", action="store_true")
    args = parser.parse_args(argv)
    sys.path.insert(0, HERE)
    sys.path.insert(0, ROOT)
    from tapegrad_tool import _threads
    if not args.multithreaded:
        _threads.single()               # before numpy / numba / tapegrad are imported
    import tapegrad_tool
    from tapegrad_tool import _workarounds
    _workarounds.apply()
    try:
        tapegrad_tool.serve(sys.stdin, sys.stdout)
    except (EOFError, BrokenPipeError):
        pass


if __name__ == "__main__":
    main()
