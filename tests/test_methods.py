"""The method table (tapegrad/_methods.py): every Tensor method is attached once, nothing else
sets a Tensor attribute, and torch's Tensor methods are all there but a documented list."""
import ast
import os

import pytest

import tapegrad
from tapegrad import _methods
from tapegrad.tensor import Tensor

HERE = os.path.dirname(os.path.abspath(__file__))
PKG = os.path.dirname(tapegrad.__file__)

# torch's Tensor methods tapegrad leaves out, by reason. Shrink-only: a name implemented since
# fails test_torch_tensor_methods_are_covered until it is removed here.
EXCLUDED = {
    # sparse, quantized and nested layouts (tapegrad tensors are dense, strided)
    "ccol_indices", "coalesce", "col_indices", "crow_indices", "dense_dim", "indices",
    "is_coalesced", "is_sparse", "is_sparse_csr", "resize_as_sparse_", "row_indices",
    "sparse_dim", "sparse_mask", "sparse_resize_", "sparse_resize_and_clear_", "sspaddmm",
    "smm", "to_dense", "to_sparse", "to_sparse_bsc", "to_sparse_bsr", "to_sparse_coo",
    "to_sparse_csc", "to_sparse_csr", "values", "dequantize", "int_repr", "is_quantized",
    "q_per_channel_axis", "q_per_channel_scales", "q_per_channel_zero_points", "q_scale",
    "q_zero_point", "qscheme", "is_nested", "to_padded_tensor", "to_mkldnn", "is_mkldnn",
    # other devices and memory (CPU only: no accelerators, pinned or shared memory, streams)
    "__cuda_array_interface__", "ipu", "is_ipu", "is_maia", "is_mps", "is_mtia", "is_vulkan",
    "is_xla", "is_xpu", "mtia", "xpu", "is_pinned", "pin_memory", "is_shared",
    "share_memory_", "record_stream", "storage", "storage_type", "untyped_storage",
    # dtypes tapegrad does not have (bfloat16, complex)
    "bfloat16", "cdouble", "cfloat", "chalf",
    # torch's dispatch and serialization protocols, DLPack
    "__torch_dispatch__", "__torch_function__", "__dlpack__", "__dlpack_c_exchange_api__",
    "__dlpack_device__", "__setstate__", "__deepcopy__", "__annotations__", "as_subclass",
    "module_load", "hash_tensor",
    # Python 2 era and deprecated names
    "__div__", "__idiv__", "__rdiv__", "__long__", "__nonzero__", "reinforce", "volatile",
    "name", "grad_dtype",
    # not implemented yet
    "__contains__", "__delitem__", "__reversed__", "as_strided_", "geqrf", "hardshrink",
    "index", "istft", "lu", "lu_solve", "orgqr", "ormqr", "prelu", "resize", "resize_as",
    "resize_as_", "set_", "slice_inverse", "stft",
}


def _class_body_names():
    with open(os.path.join(PKG, "tensor.py"), encoding="utf-8") as fh:
        tree = ast.parse(fh.read())
    cls = next(n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == "Tensor")
    names = set()
    for n in cls.body:
        if isinstance(n, (ast.FunctionDef, ast.ClassDef)):
            names.add(n.name)
        elif isinstance(n, ast.Assign):
            for t in n.targets:
                names |= {x.id for x in ast.walk(t) if isinstance(x, ast.Name)}
    return names


def test_the_table_is_what_the_class_carries():
    """Every name of the table is set on Tensor as that very object, and none of them is
    defined in the class body too."""
    assert _methods.TABLE
    body = _class_body_names()
    assert sorted(body & set(_methods.TABLE)) == []
    for name, value in _methods.TABLE.items():
        assert vars(Tensor)[name] is value, name


def test_no_tensor_attribute_is_set_outside_the_table():
    """Tensor's attributes are the class body's and the table's: no module patches the class
    on its own (that is how a name came to be set twice, the later silently winning)."""
    implicit = {"__dict__", "__weakref__", "__module__", "__doc__", "__qualname__"}
    stray = set(vars(Tensor)) - _class_body_names() - set(_methods.TABLE) - implicit
    assert sorted(stray) == []


def test_a_name_defined_twice_raises():
    table = {}
    stand_in = _methods._Collect(Tensor, table)
    stand_in.foo_for_test = 1
    with pytest.raises(RuntimeError, match="set twice"):
        stand_in.foo_for_test = 2
    with pytest.raises(RuntimeError, match="set twice"):
        stand_in.numel = None                 # defined in the class body
    assert stand_in.foo_for_test == 1 and stand_in.numel is Tensor.numel
    assert "foo_for_test" not in vars(Tensor)


def _torch_names():
    try:
        import torch  # deferred in tests too: the list below stands in without torch
    except ImportError:
        with open(os.path.join(HERE, "torch_tensor_names.txt"), encoding="utf-8") as fh:
            return {ln.strip() for ln in fh if ln.strip() and not ln.startswith("#")}
    return {n for n in dir(torch.Tensor)
            if not n.startswith("_") or (n.startswith("__") and n.endswith("__"))} - _CACHED


# attributes the standard library caches on a class when its instances are first pickled
# (copyreg): present in dir(torch.Tensor) only after some test pickled a torch tensor
_CACHED = {"__slotnames__"}


def test_torch_tensor_methods_are_covered():
    missing = _torch_names() - set(dir(Tensor))
    assert sorted(missing - EXCLUDED) == [], "torch.Tensor methods missing by accident"
    implemented = EXCLUDED & set(dir(Tensor))
    assert sorted(implemented) == [], "implemented now: remove from EXCLUDED"


def test_checked_in_torch_names_are_current():
    torch = pytest.importorskip("torch")
    if not torch.__version__.startswith("2.13"):
        pytest.skip("the list is PyTorch 2.13's")
    with open(os.path.join(HERE, "torch_tensor_names.txt"), encoding="utf-8") as fh:
        listed = {ln.strip() for ln in fh if ln.strip() and not ln.startswith("#")}
    live = {n for n in dir(torch.Tensor)
            if not n.startswith("_") or (n.startswith("__") and n.endswith("__"))}
    assert listed == live - _CACHED
