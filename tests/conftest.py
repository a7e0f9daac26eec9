"""Shared test setup.

* Makes the checkout importable without installing it (``python -m pytest`` from anywhere).
* ``TAPEGRAD_TEST_LIB=torch python -m pytest tests/test_semantics.py`` runs the semantics
  tests against real PyTorch instead of tapegrad: every expectation in that file is meant to
  hold for torch, so this is how a test (rather than tapegrad) is checked when it fails.
* Every test starts and must end with grad mode enabled (a leaked ``no_grad`` would make
  later tests pass or fail for the wrong reason).
"""
import importlib
import os
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if ROOT not in sys.path:
    sys.path.insert(0, ROOT)


def semantics_lib():
    """The library test_semantics.py exercises (tapegrad unless TAPEGRAD_TEST_LIB says)."""
    return importlib.import_module(os.environ.get("TAPEGRAD_TEST_LIB", "tapegrad"))


@pytest.fixture(autouse=True)
def _grad_mode_guard():
    import tapegrad
    libs = [tapegrad]
    if "torch" in sys.modules:
        libs.append(sys.modules["torch"])
    for lib in libs:
        assert lib.is_grad_enabled(), "%s: grad mode disabled before the test" % lib.__name__
    yield
    leaked = [lib.__name__ for lib in libs if not lib.is_grad_enabled()]
    for lib in libs:
        lib.set_grad_enabled(True)
    assert not leaked, "grad mode left disabled by the test in: %s" % leaked
