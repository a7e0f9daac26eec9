"""The example scripts (examples/*.py, written against ``import torch``) run unchanged with
tapegrad standing in for torch; their results match PyTorch's (run live when torch is
installed, and against numbers recorded from PyTorch 2.13 otherwise)."""
import contextlib
import io
import os
import sys

import numpy as np
import pytest

from oracle import torch

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "examples"))
import run as _runner  # noqa: E402

# what each script's ``results`` is compared on, and PyTorch 2.13's value of it
KEY = {
    "sgd_training_loop": (lambda r: r["losses"][-1], 0.484698623418808),
    "cubic_fit_sin": (lambda r: r["coef"], [8.197374723462048e-11, 0.8431105613708496,
                                            7.131323864761896e-10, -0.09139160066843033]),
    "softmax_classifier": (lambda r: r["loss"][-1], 0.01934703253209591),
    "gmm_loglik": (lambda r: r["trace"][-1], -516.1793389707973),
    "lstm_cell": (lambda r: r["losses"][-1], 0.12142032384872437),
}


def _run(name, lib):
    with contextlib.redirect_stdout(io.StringIO()):
        return _runner.run(os.path.join(ROOT, "examples", name + ".py"), lib)["results"]


def _close(a, b, rtol=1e-4, atol=1e-6, path="results"):
    if isinstance(a, dict):
        assert a.keys() == b.keys(), path
        for k in a:
            _close(a[k], b[k], rtol, atol, "%s[%r]" % (path, k))
    else:
        np.testing.assert_allclose(np.asarray(a, np.float64), np.asarray(b, np.float64),
                                   rtol=rtol, atol=atol, err_msg=path)


@pytest.mark.parametrize("name", sorted(KEY))
def test_example_matches_recorded_torch_result(name):
    key, want = KEY[name]
    got = _run(name, "tapegrad")
    _close(key(got), want, rtol=1e-4, atol=1e-7)
    losses = got.get("losses") or got.get("loss")
    if losses is not None:
        assert losses[-1] < losses[0]
    if "trace" in got:
        assert got["trace"][-1] > got["trace"][0]


@pytest.mark.parametrize("name", sorted(KEY))
def test_example_matches_torch_live(name):
    if torch is None:
        pytest.skip("torch is not installed")
    _close(_run(name, "tapegrad"), _run(name, "torch"), rtol=2e-4, atol=1e-6)
