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
# The tests use the compiled code (compiled in this process on first use when the cache lacks
# it), not the uncompiled start-up path of a fresh installation with its background compile:
# tests/test_pysweep.py and tests/test_startup.py exercise that one explicitly. (tapegrad may
# already be imported, by its pytest plugin: the mode is set on the module too.)
os.environ.setdefault("TAPEGRAD_COMPILE", "now")
from tapegrad._compiled import _cache  # noqa: E402
_cache.set_mode(os.environ["TAPEGRAD_COMPILE"])


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


# ---------------------------------------------------------------- tapegrad.testing (issue 3)
# Hypothesis profiles: "quick" is the default (README test command, CI); "thorough" runs many
# thousands of examples: `python -m pytest --hypothesis-profile thorough tests/test_testing.py`
# (HYPOTHESIS_PROFILE=thorough works too).
try:
    from hypothesis import HealthCheck
    from hypothesis import settings as _hsettings
except ImportError:        # hypothesis is a test extra; its tests skip themselves
    _hsettings = None
if _hsettings is not None:
    _hsettings.register_profile("quick", max_examples=25, deadline=None, print_blob=True,
                                suppress_health_check=[HealthCheck.too_slow])
    _hsettings.register_profile("thorough", max_examples=20000, deadline=None, print_blob=True,
                                suppress_health_check=[HealthCheck.too_slow,
                                                       HealthCheck.filter_too_much])
    _hsettings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "quick"))


def pytest_addoption(parser, pluginmanager):
    # The tapegrad pytest plugin (--tapegrad-seed, fixtures tg / tapegrad_seed) is an entry
    # point of the installed package; register it from the checkout when it is not installed.
    if not pluginmanager.has_plugin("tapegrad"):
        from tapegrad.testing import pytest_plugin
        pluginmanager.register(pytest_plugin, "tapegrad")


def _check_checkout_is_tested():
    # An installed tapegrad whose pytest11 entry point imported it before this file ran would be
    # tested instead of the checkout: say so (`python -m pytest` from the checkout, or
    # `pip install -e .`, avoids it).
    mod = sys.modules.get("tapegrad")
    path = os.path.abspath(getattr(mod, "__file__", "") or "")
    if mod is not None and not path.startswith(os.path.join(ROOT, "tapegrad")):
        import warnings
        warnings.warn("tests import tapegrad from %s, not from the checkout %s" % (path, ROOT))


_check_checkout_is_tested()
