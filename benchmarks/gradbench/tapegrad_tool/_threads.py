"""One thread (GradBench's default): the environment every thread pool reads at start-up.
``single()`` must run before numpy, numba or tapegrad is imported."""
import os

ENV = ("NUMBA_NUM_THREADS", "OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS",
       "TAPEGRAD_THREADS")


def single():
    for k in ENV:
        os.environ[k] = "1"


def describe():
    return {k: os.environ.get(k) for k in ENV}
