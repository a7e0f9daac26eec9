"""Signatures of the decisions an op takes from the values of a recorded tensor, for the
guards of ``tapegrad.func`` (see ``tensor._guard_sel``): a replay recomputes the signature from
its own values and records the function again when it differs, as for a comparison.

* ``order(a, axis, tail)``: the order type of the values along ``axis`` (None: all of them;
  ``tail`` > 0: over the last ``tail`` dimensions together): the stable argsort, which
  neighbours in sorted order are equal (equal infinities too), and where the NaNs are. Any choice made from the
  order of the values (max / min and their indices, amax's ties, sort, topk, kthvalue,
  median, mode, cummax, quantile, max pooling) is a function of it.
* ``cuts(a, *c)``: for each value, its side of each cut point (and NaN): the masks of
  hardtanh / relu6 (also at 0: whether a value is +-0), threshold, hardshrink, softshrink,
  hardswish.
* ``exponent(a)``: frexp's exponents (the mantissa's gradient is 2^-exponent).
* ``vals(a)``: the values themselves, for values that leave the recording (``detach()``,
  ``numpy()``, ``tolist()``, a cast to an integer or bool dtype, searchsorted / bucketize,
  clamp's tensor bounds): a replay on other values records again.
* ``mask(a, name)``: numpy's predicate ``name`` (isnan, isinf, isfinite, signbit ...).
* ``never(a)``: the op's recorded constants depend on the values in a way no signature
  captures (scatter_reduce's prod / amax / amin): the recording is not replayed.

``REPLAY`` is the one place where an op declares how its recording replays (default-deny,
docs/func.md): its grad_fn name maps to ``"pure"`` (the recorded entries recompute everything
from their operands; their constants come from shapes and static arguments) or ``"guard"``
(the op reads values to decide, and registers the guards above for what it reads). A
recording holding an entry whose name is in neither is not replayed: tapegrad.func serves
its calls by eager recording. ``EAGER`` gives the reason for the ops left out on purpose.
"""
import numpy as np


def order(a, axis=None, tail=0):
    a = np.asarray(a)
    if tail:
        a = a.reshape(a.shape[:a.ndim - tail] + (-1,))
        axis = -1
    if axis is None or a.ndim == 0:
        a = a.reshape(-1)
        axis = -1
    idx = np.argsort(a, axis=axis, kind="stable")
    s = np.moveaxis(np.take_along_axis(a, idx, axis), axis, -1)
    # neighbours compared, not subtracted: inf - inf is nan, and equal infinities are a tie
    # (amax / median split the gradient among them)
    eq = s[..., 1:] == s[..., :-1]
    return np.concatenate([idx.reshape(-1), eq.reshape(-1), (a != a).reshape(-1)])


def cuts(a, *c):
    a = np.asarray(a)
    side = [np.sign(a - v).reshape(-1) for v in c]
    return np.concatenate(side + [(a != a).reshape(-1).astype(side[0].dtype if side else int)])


def exponent(a):
    return np.frexp(np.asarray(a))[1].reshape(-1)


def vals(a):
    return np.array(a, copy=True).reshape(-1)


def mask(a, name):
    return getattr(np, name)(np.asarray(a)).reshape(-1)


def never(a):
    return np.array([np.nan])


SEL = {"order": order, "cuts": cuts, "exponent": exponent, "vals": vals, "mask": mask,
       "never": never}


def _names(text):
    return text.split()


# Declarations of replay safety, by grad_fn name (see the module docstring). Entries of custom
# autograd.Functions (and of the ops built as ones: linalg det/inv/solve/..., erfinv, i0,
# logit, xlogy...) replay by calling their forward and backward again: they need no line.
REPLAY = dict.fromkeys(_names("""
    NegBackward0 ExpBackward0 LogBackward0 SinBackward0 CosBackward0 TanhBackward0
    SigmoidBackward0 ReluBackward0 SqrtBackward0 AbsBackward0 PowBackward0 PowBackward1
    PowBackward2 TanBackward0 AsinBackward0 AcosBackward0 AtanBackward0 SinhBackward0
    CoshBackward0 ErfBackward0 Log1PBackward0 Expm1Backward0 MulBackward0 MulBackward1
    FloorBackward0 CeilBackward0 RoundBackward0 RoundBackward1 TruncBackward0 SignBackward0
    SgnBackward0 FracBackward0 ClampBackward1 ClampMinBackward0 ClampMaxBackward0
    LeakyReluBackward0 LeakyReluBackward1 GeluBackward0 SiluBackward0 SoftplusBackward0
    LogSigmoidBackward0 SmoothL1LossBackward0 HuberLossBackward0 LgammaBackward0
    PolygammaBackward0 DigammaBackward0 SoftmaxBackward0 LogSoftmaxBackward0
    SoftmaxBackwardDataBackward0 LogSoftmaxBackwardDataBackward0 AddBackward0 AddBackward1
    RsubBackward0 RsubBackward1 SubBackward0 SubBackward1 DivBackward0 DivBackward1
    MaximumBackward0 MinimumBackward0 Atan2Backward0 HypotBackward0 RemainderBackward0
    RemainderBackward1 ReciprocalBackward0 RsqrtBackward0 Exp2Backward0 Log2Backward0
    Log10Backward0 Deg2RadBackward0 Rad2DegBackward0 MvlgammaBackward0
    LerpBackward0 LerpBackward1 AddcdivBackward0 AddcmulBackward0 MishBackward0 GluBackward0
    SumBackward0 SumBackward1 MeanBackward0 MeanBackward1 CumsumBackward0 VarBackward0
    StdBackward0 VarMeanBackward0 StdMeanBackward0 TraceBackward0
    MmBackward0 BmmBackward0 MvBackward0 DotBackward0 VdotBackward0 AddmmBackward0
    AddmvBackward0 AddrBackward0 AddbmmBackward0 BaddbmmBackward0 LinalgCrossBackward0
    ToCopyBackward0 ViewBackward0 ReshapeAliasBackward0 UnsafeViewBackward0 AliasBackward0
    CloneBackward0 ExpandBackward0 PermuteBackward0 TransposeBackward0 TransposeBackward1
    TBackward0 TBackward1 SqueezeBackward0 SqueezeBackward1 SqueezeBackward2 SqueezeBackward4
    UnsqueezeBackward0 UnsqueezeBackward1 SliceBackward0 SliceBackwardBackward0 SelectBackward0
    IndexBackward0 IndexSelectBackward0 GatherBackward0 TakeBackward0 EmbeddingBackward0
    CatBackward0 StackBackward0 SplitBackward0 SplitWithSizesBackward0 UnsafeSplitBackward0
    UnsafeSplitWithSizesBackward0 UnbindBackward0 NarrowCopyBackward0 FlipBackward0
    RollBackward0 Rot90Backward0 RepeatBackward0 TrilBackward0 TriuBackward0
    DiagonalBackward0 DiagEmbedBackward0 BlockDiagBackward0 UnfoldBackward0
    ConstantPadNdBackward0 Im2ColBackward0 Col2ImBackward0 ConvolutionBackward0
    AvgPool2DBackward0 AdaptiveAvgPool2DBackward0 WhereBackward0 MaskedFillBackward0
    MaskedFillBackward1 MaskedScatterBackward0 MaskedSelectBackward0 IndexAddBackward0
    IndexCopyBackward0 IndexFillBackward0 IndexFillBackward1 IndexPutBackward0 PutBackward0
    ScatterBackward0 ScatterBackward1 ScatterAddBackward0 SelectScatterBackward0
    SliceScatterBackward0 DiagonalScatterBackward0 AsStridedBackward0 AsStridedScatterBackward0
    FillBackward0 FillBackward2 FillBackward3 ZeroBackward0 CopySlices CopyBackwards
    NativeLayerNormBackward0 NativeGroupNormBackward0 NativeBatchNormBackward0
    MseLossBackward0 SoftMarginLossBackward0 BinaryCrossEntropyWithLogitsBackward0
    NllLossBackward0 NllLoss2DBackward0 PdistBackward0 EuclideanDistBackward0
    AtanhBackward0 AsinhBackward0 AcoshBackward0 PolygammaBackward1 HardsigmoidBackward0
    AliasBackward0_copy DiagonalBackward0_copy SliceBackward0_copy SqueezeBackward0_copy
    SqueezeBackward1_copy TBackward0_copy UnsqueezeBackward0_copy TransposeBackward0_copy
    PermuteBackward0_copy ExpandBackward0_copy ViewBackward0_copy SelectBackwardBackward0
    """), "pure")
REPLAY.update(dict.fromkeys(_names("""
    MaxBackward0 MaxBackward1 MinBackward0 MinBackward1 AmaxBackward0 AminBackward0
    SortBackward0 SortBackward1 TopkBackward0 KthvalueBackward0 MedianBackward0
    MedianBackward1 NanmedianBackward0 NanmedianBackward1 ModeBackward0 CummaxBackward0
    CumminBackward0 MaxPool2DWithIndicesBackward0 AdaptiveMaxPool2DBackward0
    HardtanhBackward0 ThresholdBackward0 ThresholdBackward1 HardshrinkBackward0
    SoftshrinkBackward0 HardswishBackward0 ClampBackward0
    FrexpBackward0 EluBackward0 EluBackward1 CeluBackward0 CeluBackward1
    """), "guard"))

# Ops left to eager recording on purpose, with the reason (docs/func.md lists them).
EAGER = {
    "CopysignBackward0": "the gradient's sign is read from the values",
    "CopysignBackward1": "the gradient's sign is read from the values",
    "FmodBackward0": "the truncated quotient is read from the values",
    "FmodBackward1": "the truncated quotient is read from the values",
    "NanToNumBackward0": "the nan/inf mask is read from the values",
    "NextafterBackward0": "which elements move is read from the values",
    "AngleBackward0": "the sign mask is read from the values",
    "ProdBackward0": "the recording depends on zeros and non-finite values",
    "ProdBackward1": "the recording depends on zeros and non-finite values",
    "CumprodBackward0": "the recording depends on zeros and non-finite values",
    "LogsumexpBackward0": "the shift (the maximum) is a recorded constant",
    "LogcumsumexpBackward0": "the shift is a recorded constant",
    "LogaddexpBackward0": "the nan mask is read from the values",
    "Logaddexp2Backward0": "the nan mask is read from the values",
    "NansumBackward0": "the positions of the nans are recorded",
    "RenormBackward0": "which slices are renormalized is read from the values",
    "PreluKernelBackward0": "the sign mask is read from the values",
    "MultiMarginLossBackward0": "recorded from the margins' values",
    "BinaryCrossEntropyBackward0": "recorded from the values (log clamp)",
    "AminmaxBackward0": "the positions of the extrema are recorded unguarded",
    "CdistBackward0": "recorded from the values (zero distances, inf norms)",
    "NormBackward1": "vector norms read the values (zeros, inf orders)",
    "LdexpBackward0": "recorded from the values",
    "IndexReduceBackward0": "recorded from the values (amax / amin / prod)",
    "ScatterReduceBackward0": "recorded from the values (amax / amin / prod)",
    "Unique2Backward0": "data-dependent shape",
    "UniqueDimBackward0": "data-dependent shape",
    "UniqueConsecutiveBackward0": "data-dependent shape",
    "TrapezoidBackward0": "not audited",
    "DistBackward0": "the inf / -inf / 0 orders read the values",
    "ErfcBackward0": "recorded as 1 - erf(x), which loses erfc's tail (x above ~1) that the "
                     "eager value keeps exactly",
}
