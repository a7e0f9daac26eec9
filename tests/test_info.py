"""tapegrad/_info.py: typename, predicates and flags, output_nr, layout, dim_order, the
deprecation warnings issued once, against torch."""
import warnings

import pytest

import tapegrad as tg
from oracle import check_forward, same


COMPOSED_FORWARD = {
    "typename": lambda lib: [lib.typename(lib.zeros(1)), lib.typename(lib.zeros(1, dtype=lib.int64)),
                             lib.typename(3), lib.typename(lib.ones(1, dtype=lib.float64))],
    "sizes": lambda lib: [lib.zeros(2, 3).nbytes, lib.zeros(2, dtype=lib.int16).itemsize,
                          lib.zeros(3, dtype=lib.float64).nbytes, lib.zeros(0).nbytes],
    "predicates": lambda lib: [lib.zeros(2).is_same_size(lib.ones(2)),
                               lib.is_same_size(lib.zeros(2), lib.ones(1, 2)),
                               lib.is_signed(lib.zeros(1, dtype=lib.uint8)),
                               lib.zeros(1).is_signed(), lib.is_inference(lib.zeros(1)),
                               lib.zeros(1).is_inference(), lib.ones(1).is_nonzero(),
                               lib.zeros(1).isreal().tolist()],
    "is_nonzero_bad": lambda lib: lib.ones(2).is_nonzero(),
    "output_nr": lambda lib: [t.output_nr for t in lib.ones(4, requires_grad=True).split([1, 3])]
    + [lib.ones(1).output_nr, (lib.ones(1, requires_grad=True) * 2).output_nr],
}


@pytest.mark.parametrize("name", sorted(COMPOSED_FORWARD))
def test_composed_forward_vs_torch(name):
    check_forward(COMPOSED_FORWARD, name)


def test_small_flags_and_resize_vs_torch():
    def prog(lib):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return prog2(lib)

    def prog2(lib):
        x = lib.arange(6.0).reshape(2, 3)
        y = x.resize_(4)
        z = lib.zeros(2).resize_(1, 1)
        return [y, y is x, z, lib.is_anomaly_enabled(), lib.is_inference_mode_enabled(),
                lib.get_device(lib.zeros(1)), lib.get_float32_matmul_precision(),
                lib.frobenius_norm(lib.ones(2, 3), (0, 1)),
                lib.nuclear_norm(lib.eye(3) * 2)]
    same(prog)
    same(lambda lib: lib.ones(2, requires_grad=True).resize_(4),
         phrases=("cannot resize variables that require grad",))
    with pytest.warns(UserWarning, match="setFloat32MatmulPrecision call has no effect"):
        same(lambda lib: lib.set_float32_matmul_precision("fast"))


def test_deprecation_warnings_without_torch():
    import tapegrad._info as info
    info._WARNED.clear()
    for f, phrase in ((lambda: tg.frobenius_norm(tg.ones(2, 2)), "frobenius_norm is deprecated"),
                      (lambda: tg.nuclear_norm(tg.ones(2, 2)), "nuclear_norm is deprecated"),
                      (lambda: tg.qr(tg.eye(2)), "torch.qr is deprecated"),
                      (lambda: tg.ones(2).index_reduce(0, tg.tensor([0]), tg.ones(1), "prod"),
                       "index_reduce() is in beta")):
        with pytest.warns(UserWarning, match=phrase.replace("(", r"\(").replace(")", r"\)")):
            f()
        with warnings.catch_warnings():            # once per process, as torch's
            warnings.simplefilter("error")
            f()


def test_layout_odds_and_ends_vs_torch():
    def prog(lib):
        x = lib.zeros(2, 3, 4).permute(2, 0, 1)
        a = lib.zeros(3)
        e = lib.empty_strided((2, 3), (1, 2))
        n = lib.ones(2, dtype=lib.float64).new_empty_strided((3, 2), (1, 3))
        return [x.dim_order(), lib.zeros(2).dim_order(), str(lib.zeros(2).layout),
                lib.zeros(1).layout == lib.strided, a.is_set_to(a), a.is_set_to(a[:]),
                a.is_set_to(a[1:]), a.is_set_to(lib.zeros(3)), e.stride(), e.shape, n.stride(),
                n.dtype, x.is_meta, lib.zeros(1).is_distributed(),
                a.const_data_ptr() == a.data_ptr()]
    same(prog)
