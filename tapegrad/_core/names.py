"""The grad_fn name registry: every name a recorded entry can show (``MulBackward0``), by id.

An entry stores its name's id (column NM); the op table's default names are registered first,
and the facade adds variants (``MeanBackward0``), composite nodes with n inputs, chains of
indexing nodes and custom Functions' names as it records them.
"""
from ..ops import OPS

NAMES = []
_NAME_ID = {}
# binary entries recorded with a constant operand whose torch node has a single input
ONE_INPUT = {"RsubBackward1", "PowBackward2", "FillBackward2", "ZeroBackward0"}
# nodes torch implements in C++ report a qualified name()
_CPP_NAMES = {"CopySlices": "torch::autograd::CopySlices",
              "CopyBackwards": "torch::autograd::CopyBackwards", "Error": "torch::autograd::Error"}


def name_id(name):
    i = _NAME_ID.get(name)
    if i is None:
        i = _NAME_ID[name] = len(NAMES)
        NAMES.append(name)
    return i


for _op in OPS:
    name_id(_op.grad_fn)

# Composite nodes with n inputs (cat/stack of n tensors, losses over (input, target)): the top
# entry's name id carries the arity, and hidden *tap* entries below it record which input slot
# each of their operands is; next_functions lists the n slots ((None, 0) where no tap is found,
# i.e. the input needs no grad), as torch's CatBackward0 / MseLossBackward0 do.
ARITY = {}      # name id -> number of inputs
TAPS = {}       # name id -> (slot of operand a, slot of operand b); -1: not a slot


def multi_name_id(name, arity):
    """The id of ``name`` for a top entry whose node lists ``arity`` inputs (found by taps)."""
    key = (name, "n", int(arity))
    i = _NAME_ID.get(key)
    if i is None:
        i = _NAME_ID[key] = len(NAMES)
        NAMES.append(name)
        ARITY[i] = int(arity)
    return i


def tap_name_id(name, slots):
    """The id of ``name`` for a hidden entry whose operands are the inputs ``slots`` of the
    composite node above it (e.g. (0, 1): a is input 0, b input 1)."""
    key = (name, "tap", tuple(slots))
    i = _NAME_ID.get(key)
    if i is None:
        i = _NAME_ID[key] = len(NAMES)
        NAMES.append(name)
        TAPS[i] = tuple(slots)
    return i


# Chains (x[1, 2], x[1:, ::2], x[0, :, idx]): torch records one node per basic indexing step
# (SelectBackward0 under SelectBackward0 ...), tapegrad one entry; the entry's name id carries
# the names of the nodes below the top one, shown as ``InnerNode`` views in next_functions.
CHAIN = {}      # name id -> names of the nodes under the top one, outermost first


def chain_name_id(names):
    """The id of a top entry named ``names[0]`` standing for torch's chain ``names`` (outermost
    first) of single-input nodes."""
    key = ("chain",) + tuple(names)
    i = _NAME_ID.get(key)
    if i is None:
        i = _NAME_ID[key] = len(NAMES)
        NAMES.append(names[0])
        CHAIN[i] = tuple(names[1:])
    return i


_FUNCTION_NAMES = set()


def function_name_id(name):
    """The name id of a custom Function's node (its view is a ``FunctionNode``)."""
    _FUNCTION_NAMES.add(name)
    return name_id(name)
