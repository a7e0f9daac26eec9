"""Layer 8: THE method table. Every Tensor method defined outside the class is attached here,
once.

The class in ``tensor.py`` holds storage, dtype, views and version counters only. A method that
records or runs an op lives with its family, either in a ``class TensorMethods`` holder there
(written as in a class body) or in the family's ``_install(Tensor)`` function, which assigns
its methods (often built in loops: in-place variants, aliases) to the stand-in it is given.
``table()`` runs them all into one dict -- a name defined twice, or one the class body already
has, raises -- and ``attach()`` sets the dict on the class at import (``tapegrad/__init__.py``
imports this module once every family is loaded). ``tests/test_methods.py`` checks that
nothing else sets a Tensor attribute and which of torch's Tensor methods are left out.
"""
from . import _format, _index, _info, _math, _matrix, _record, _reduce, _shape, creation, linalg
from . import special
from .autograd import engine, graph, hooks
from .nn import _conv, functional
from .tensor import Tensor, _LegacyType

# the holders, in the order their methods are attached
HOLDERS = (_record.TensorMethods, _shape.TensorMethods, _index.TensorMethods, _math.TensorMethods,
           _math.TensorOperators, creation.TensorMethods, _reduce.TensorMethods,
           _matrix.TensorMethods, graph.TensorMethods, engine.TensorMethods,
           _format.TensorMethods)

# the families' method-building functions, in the order they run: each assigns its methods
# to the stand-in class it is given (``_Collect``), so they all land in one table
INSTALLS = (_shape._install, _shape._install_gather, _shape._install_index_family,
            _math._install, _reduce._install, _matrix._install, _matrix._install_extra,
            _conv._install, functional._install, linalg._install, special._install,
            hooks._install, _info._install_composed, _shape._install_composed,
            _index._install_composed, _math._install_composed, creation._install_composed,
            _reduce._install_composed, _matrix._install_composed, _conv._install_composed,
            special._install_composed)

_CLASS_ONLY = frozenset(("__module__", "__qualname__", "__doc__", "__dict__", "__weakref__"))


class _Collect:
    """Stands in for the Tensor class while the INSTALLS run: an assignment lands in the table
    (a name assigned twice, or one the class defines itself, raises); a read sees the table
    first, then the class."""

    def __init__(self, cls, table):
        object.__setattr__(self, "_cls", cls)
        object.__setattr__(self, "_table", table)

    def __setattr__(self, name, value):
        if name in self._table or name in vars(self._cls):
            raise RuntimeError("Tensor.%s is set twice" % name)
        self._table[name] = value

    def __getattr__(self, name):
        table = object.__getattribute__(self, "_table")
        if name in table:
            return table[name]
        return getattr(object.__getattribute__(self, "_cls"), name)


def table():
    """{name: attribute} of every Tensor method the families define (a name defined twice
    raises)."""
    out = {}
    stand_in = _Collect(Tensor, out)
    for install in INSTALLS:
        install(stand_in)
    for h in HOLDERS:
        for name, value in vars(h).items():
            if name in _CLASS_ONLY:
                continue
            if name in out:
                raise RuntimeError("Tensor.%s is defined by two holders" % name)
            out[name] = value
    return out


TABLE = {}


def attach():
    TABLE.update(table())
    for name, value in TABLE.items():
        if name in vars(Tensor):
            raise RuntimeError("Tensor.%s is set twice" % name)
        setattr(Tensor, name, value)
    # the legacy tensor types (torch.FloatTensor ...) construct through creation
    for name, value in vars(creation.LegacyTypeMethods).items():
        if name not in _CLASS_ONLY:
            setattr(_LegacyType, name, value)


attach()


# torch-namespace in-place functions: torch.exp_(t) is t.exp_() (the names torch has)
INPLACE_NAMES = (
    "abs_", "acos_", "acosh_", "addmv_", "arccos_", "arccosh_", "arcsin_", "arcsinh_", "arctan_",
    "arctanh_", "asin_", "asinh_", "atan_", "atanh_", "ceil_", "clamp_", "clamp_max_",
    "clamp_min_", "clip_", "cos_", "cosh_", "deg2rad_", "erf_", "erfc_", "exp2_", "exp_",
    "expm1_", "fix_", "floor_", "frac_", "gcd_", "i0_", "lcm_", "ldexp_", "log10_", "log1p_",
    "log2_", "log_", "logit_", "nan_to_num_", "neg_", "negative_", "rad2deg_", "reciprocal_",
    "round_", "rsqrt_", "sigmoid_", "sin_", "sinc_", "sinh_", "sqrt_", "square_", "tan_",
    "tanh_", "trunc_", "xlogy_", "zero_", "fill_", "index_put_", "detach_")


def namespace_functions():
    """torch's functions that are the methods attached here (torch.exp_ ...) or built from
    the namespace's views (torch.diagonal_copy ...): merged into tapegrad's namespace."""
    ns = {n: getattr(Tensor, n) for n in INPLACE_NAMES if hasattr(Tensor, n)}
    ns.update(_shape._copies())
    return ns

