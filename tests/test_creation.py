"""tapegrad/creation.py: the constructors composed from primitives (vander, cartesian_prod,
combinations, range, asarray, windows, empty_strided), Tensor.new and the samplers (cauchy_,
log_normal_, geometric_), against torch and finite differences."""
import numpy as np
import pytest

import tapegrad as tg
from oracle import check_fd, check_forward, check_program, same
from oracle import tensor_of as _t


# name -> (program on x, input shape, domain)
COMPOSED = {
    "cartesian_prod": (lambda lib, x: lib.cartesian_prod(x, x * 2), (3,), (-1, 1)),
    "combinations": (lambda lib, x: lib.combinations(x), (4,), (-1, 1)),
    "combinations_r3": (lambda lib, x: lib.combinations(x, 3, with_replacement=True), (3,), (-1, 1)),
}


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("name", sorted(COMPOSED))
def test_composed_vs_torch(name, dtype):
    check_program(COMPOSED, name, dtype)


COMPOSED_FORWARD = {
    "vander": lambda lib: lib.vander(_t(lib, [1.5, -2.0, 0.5])),
    "vander_rg": lambda lib: lib.vander(_t(lib, [1.5, -2.0, 0.5]).requires_grad_(), 4),
    "vander_inc_rg": lambda lib: lib.vander(_t(lib, [1.5, -2.0]).requires_grad_(), 3, True),
    "vander_int32": lambda lib: lib.vander(_t(lib, [1, 2, 3], "int32")),
    "vander_bool": lambda lib: lib.vander(_t(lib, [True, False]), 3),
    "vander_N0": lambda lib: lib.vander(_t(lib, [1.0, 2.0]), N=0),
    "vander_N1": lambda lib: lib.vander(_t(lib, [1.0, 2.0]), N=1),
    "vander_2d": lambda lib: lib.vander(_t(lib, [[1.0]])),
    "vander_negN": lambda lib: lib.vander(_t(lib, [1.0]), N=-1),
    "cartesian_int": lambda lib: lib.cartesian_prod(_t(lib, [1, 2]), _t(lib, [3, 4, 5])),
    "cartesian_three": lambda lib: lib.cartesian_prod(_t(lib, [1, 2]), _t(lib, [3]), _t(lib, [4, 5])),
    "cartesian_one": lambda lib: lib.cartesian_prod(_t(lib, [1.0, 2.0])),
    "cartesian_2d": lambda lib: lib.cartesian_prod(_t(lib, [[1.0]]), _t(lib, [1.0])),
    "combinations_short": lambda lib: lib.combinations(_t(lib, [1.0, 2.0]), 3),
    "combinations_r0": lambda lib: lib.combinations(_t(lib, [1.0, 2.0]), 0),
    "combinations_int": lambda lib: lib.combinations(_t(lib, [1, 2, 3, 4]), 3),
    "combinations_2d": lambda lib: lib.combinations(_t(lib, [[1.0]])),
    "asarray": lambda lib: lib.asarray([1, 2.5]),
    "asarray_dtype": lambda lib: lib.asarray([1, 2], dtype=lib.float64),
    "asarray_tensor": lambda lib: lib.asarray(_t(lib, [1, 2]), dtype=lib.float32),
    "asarray_np": lambda lib: lib.asarray(np.array([1.0, 2.0])),
    "asarray_rg": lambda lib: lib.asarray([1.0], requires_grad=True),
    "new": lambda lib: [lib.ones(2, dtype=lib.float64).new(2, 3).shape,
                        lib.ones(2, dtype=lib.int32).new([1, 2]),
                        lib.ones(2).new().shape, lib.ones(2).new(lib.Size([1, 2])).dtype],
    "range": lambda lib: lib.range(1, 4),
    "range_step": lambda lib: lib.range(0, 1, 0.25, dtype=lib.float64),
}


@pytest.mark.parametrize("name", sorted(COMPOSED_FORWARD))
def test_composed_forward_vs_torch(name):
    check_forward(COMPOSED_FORWARD, name)


COMPOSED_FD = {
    "combinations": (lambda x: tg.combinations(x, 2) ** 2, [[0.3, -1.0, 2.0, 0.5]]),
    "cartesian": (lambda x, y: tg.cartesian_prod(x, y).prod(1), [[0.3, -1.0], [2.0, 0.5, 1.5]]),
    "vander": (lambda x: tg.vander(x, 4), [[0.3, -1.0, 2.0]]),
    "vander_inc": (lambda x: tg.vander(x, 3, increasing=True), [[0.3, -1.0, 2.0]]),
}


@pytest.mark.parametrize("name", sorted(COMPOSED_FD))
def test_composed_fdcheck(name):
    check_fd(COMPOSED_FD, name)


def test_combinatorics_without_torch():
    import itertools
    v = [1.0, 2.0, 3.0, 4.0]
    for r, rep in ((2, False), (3, False), (2, True), (3, True)):
        gen = itertools.combinations_with_replacement if rep else itertools.combinations
        got = tg.combinations(tg.tensor(v), r, with_replacement=rep).tolist()
        assert got == [list(c) for c in gen(v, r)]
    got = tg.cartesian_prod(tg.tensor([1, 2]), tg.tensor([3, 4, 5])).tolist()
    assert got == [list(p) for p in itertools.product([1, 2], [3, 4, 5])]


def test_range_warns_and_includes_end():
    with pytest.warns(UserWarning, match="torch.range is deprecated"):
        r = tg.range(1, 3, 0.5)
    assert r.tolist() == [1.0, 1.5, 2.0, 2.5, 3.0] and r.dtype is tg.float32


CALLABLES = {
    "cauchy_int": lambda lib: lib.zeros(3, dtype=lib.int64).cauchy_(),
    "cauchy_sigma": lambda lib: lib.zeros(3).cauchy_(sigma=0),
    "log_normal_int": lambda lib: lib.zeros(3, dtype=lib.int64).log_normal_(),
    "log_normal_std": lambda lib: lib.zeros(3).log_normal_(std=-1),
    "geometric_p": lambda lib: lib.zeros(3).geometric_(1.5),
    "random_shapes": lambda lib: [t.dtype for t in (lib.zeros(3).geometric_(0.5),
                                                    lib.zeros(3, dtype=lib.int64).geometric_(0.5),
                                                    lib.zeros(2).cauchy_(), lib.zeros(2).log_normal_(),
                                                    lib.full((3,), 0.5).bernoulli(),
                                                    lib.full((3,), 0.5).multinomial(2))],
    "leaf_cauchy_": lambda lib: lib.zeros(2, requires_grad=True).cauchy_(),
}


@pytest.mark.parametrize("name", sorted(CALLABLES))
def test_callables_and_sampling_vs_torch(name):
    same(CALLABLES[name])


def test_sampling_distributions_without_torch():
    tg.manual_seed(3)
    g = tg.zeros(20000, dtype=tg.float64).geometric_(0.25).numpy()
    assert g.min() >= 1 and abs(g.mean() - 4.0) < 0.15           # mean 1/p
    ln = np.log(tg.zeros(20000, dtype=tg.float64).log_normal_(0.5, 0.3).numpy())
    assert abs(ln.mean() - 0.5) < 0.02 and abs(ln.std() - 0.3) < 0.02
    c = tg.zeros(20001, dtype=tg.float64).cauchy_(2.0, 0.5).numpy()
    assert abs(np.median(c) - 2.0) < 0.05                          # median
    assert abs(np.quantile(c, 0.75) - 2.5) < 0.05                  # quartile median + sigma
