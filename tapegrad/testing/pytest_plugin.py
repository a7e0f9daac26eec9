"""pytest plugin for suites that test tapegrad code (registered as the ``tapegrad`` pytest11
entry point, so installing tapegrad activates it; disable with ``-p no:tapegrad``).

* ``--tapegrad-seed N``: before every test, seed tapegrad's generator (``manual_seed``), numpy's
  global generator and Python's ``random`` with N, and give every hypothesis test the seed N
  (``hypothesis.seed``, which also bypasses the example database), so a rerun with the same N
  draws the same tensors and the same examples. The seed is shown in the report header and in
  the report of every failing test.
* fixtures: ``tg`` (the tapegrad module, for ``def test_x(tg): tg.tensor(...)``) and
  ``tapegrad_seed`` (the seed in effect: N, or a fresh random seed that the fixture applies and
  that failing reports print, so ``--tapegrad-seed`` reproduces the run).

The plugin changes nothing unless ``--tapegrad-seed`` is given or its fixtures are used.
"""
import random

import pytest

_KEY = "_tapegrad_seed_used"


def pytest_addoption(parser):
    group = parser.getgroup("tapegrad", "tapegrad testing")
    group.addoption("--tapegrad-seed", action="store", type=int, default=None,
                    dest="tapegrad_seed", metavar="N",
                    help="seed tapegrad, numpy and random before every test, and hypothesis "
                         "for every @given test, with N (reproducible failures)")


def seed_everything(seed):
    """Seed tapegrad's generator, numpy's global one and Python's ``random``."""
    import numpy as np

    import tapegrad  # deferred: a pytest plugin loads with every session; the package on first use
    random.seed(seed)
    np.random.seed(seed % (1 << 32))
    tapegrad.manual_seed(seed)


def _option(config):
    try:
        return config.getoption("tapegrad_seed")
    except ValueError:
        return None


def pytest_report_header(config):
    seed = _option(config)
    if seed is not None:
        return "tapegrad: --tapegrad-seed=%d (tapegrad, numpy, random and hypothesis seeded)" % seed
    return None


def pytest_collection_modifyitems(config, items):
    seed = _option(config)
    if seed is None:
        return
    try:
        import hypothesis
    except ImportError:
        return
    seen = set()
    for item in items:
        fn = getattr(item, "obj", None)
        fn = getattr(fn, "__func__", fn)
        if fn is None or id(fn) in seen or not getattr(fn, "is_hypothesis_test", False):
            continue
        seen.add(id(fn))
        if getattr(fn, "_hypothesis_internal_use_seed", None) is None:   # an explicit @seed wins
            hypothesis.seed(seed)(fn)


@pytest.fixture(autouse=True)
def _tapegrad_reseed(request):
    seed = _option(request.config)
    if seed is not None:
        seed_everything(seed)
        setattr(request.node, _KEY, seed)
    yield


@pytest.fixture
def tapegrad_seed(request):
    """The seed of this test (``--tapegrad-seed`` or a fresh random one), already applied to
    tapegrad, numpy and random; a failing test's report prints it."""
    seed = _option(request.config)
    if seed is None:
        seed = random.SystemRandom().randrange(1 << 31)
        seed_everything(seed)
    setattr(request.node, _KEY, seed)
    return seed


@pytest.fixture
def tg():
    """The tapegrad module (``import tapegrad as torch``)."""
    import tapegrad  # deferred: a pytest plugin loads with every session; the package on first use
    return tapegrad


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    rep = outcome.get_result()
    seed = getattr(item, _KEY, None)
    if seed is not None and rep.failed:
        rep.sections.append(("tapegrad", "seed %d: rerun with --tapegrad-seed=%d" % (seed, seed)))
