"""Hand-written knowledge the differential suite adds to the generated signature table
(``_api_specs.py``): which names are not drawn and why, signatures torch does not declare in
a machine-readable way, input domains, shape families of coupled arguments, and the known
deliberate differences from torch (each with its reason).

Everything here is data; the drawing logic is in ``_diffgen.py``.
"""

# ---------------------------------------------------------------- names not drawn, with reasons
_STATE = "changes or reads process-global state (would leak into the other programs)"
_CALLABLE = "takes a Python callable; covered by tests/test_autograd_api.py / test_func.py"
_NOT_TORCH = ("tapegrad-only public name: torch has no such name (an internal helper leaking "
              "into the public namespace, or an extension); listed in "
              "tests/differential_findings.md")
EXCLUDED = {
    "torch.set_default_dtype": _STATE, "torch.set_default_device": _STATE,
    "torch.set_num_threads": _STATE, "torch.set_num_interop_threads": _STATE,
    "torch.set_printoptions": _STATE, "torch.set_rng_state": _STATE,
    "torch.manual_seed": _STATE, "torch.seed": _STATE,
    "torch.use_deterministic_algorithms": _STATE,
    "torch.set_float32_matmul_precision": _STATE,
    "torch.get_rng_state": "random state: torch's Mersenne twister vs tapegrad's PCG64 by design",
    "torch.initial_seed": "random state: differs by design (docs/api.md: tapegrad's own stream)",
    "torch.get_num_threads": "thread counts are the libraries' own (Numba's vs ATen's)",
    "torch.get_num_interop_threads": "thread counts are the libraries' own",
    "torch.save": "writes files; covered by tests/test_serialization.py",
    "torch.load": "reads files; covered by tests/test_serialization.py",
    "torch.compile": "tapegrad.compile is the replay compiler, not torch.compile: the replay "
                     "runner covers it (tapegrad.func)",
    "torch.from_numpy": "takes an ndarray (programs hold tensors); covered by test_semantics.py",
    "Tensor.apply_": _CALLABLE, "Tensor.map_": _CALLABLE, "Tensor.map2_": _CALLABLE,
    "Tensor.register_hook": _CALLABLE, "Tensor.register_post_accumulate_grad_hook": _CALLABLE,
    "Tensor.backward": "the programs' ending phase calls it (backward / retain_graph / "
                       "create_graph), not drawn as a step",
    "Tensor.data_ptr": "an address: compared through the aliasing relation instead",
    "Tensor.const_data_ptr": "an address: compared through the aliasing relation instead",
    "Tensor.cuda": "CPU only: both raise (tests/test_tensor_dtype.py)",
}
EXCLUDED.update({k: _NOT_TORCH for k in (
    "F.exact", "F.hide", "F.multi_name_id", "F.named", "F.tap", "F.tap_entry", "F.unary",
    "special.exact", "special.hide", "special.named", "special.unary", "special.clamp",
    "special.lgamma", "special.mvlgamma", "special.where", "linalg.cholesky_inverse",
    "linalg.cholesky_solve", "linalg.logdet", "torch.expand_as", "Tensor.isin",
    "Tensor.logaddexp_", "Tensor.logaddexp2_", "Tensor.maximum_", "Tensor.minimum_")})

# random results: only shape, dtype, requires_grad and grad_fn are compared
RANDOM = {
    "torch.rand", "torch.randn", "torch.randint", "torch.randperm", "torch.rand_like",
    "torch.randn_like", "torch.randint_like", "torch.bernoulli", "torch.multinomial",
    "torch.normal", "torch.dropout", "torch.dropout_", "F.dropout", "F.alpha_dropout",
    "F.dropout1d", "F.dropout2d", "F.dropout3d", "F.feature_alpha_dropout",
    "F.gumbel_softmax", "Tensor.bernoulli", "Tensor.bernoulli_", "Tensor.multinomial",
    "Tensor.normal_", "Tensor.uniform_", "Tensor.exponential_", "Tensor.cauchy_",
    "Tensor.log_normal_", "Tensor.geometric_", "Tensor.random_",
    # uninitialised memory in torch (tapegrad zero-fills)
    "torch.empty", "torch.empty_like", "torch.empty_strided", "Tensor.new_empty",
    "Tensor.new_empty_strided", "Tensor.resize_",
}

# results unique only up to the sign of each column (eigenvectors, singular vectors, QR
# factors): compared in absolute value; a sign difference taints what is computed from them
SIGN_AMBIGUOUS = {"linalg.eigh", "linalg.svd", "linalg.qr", "torch.svd", "torch.qr",
                  "Tensor.svd", "Tensor.qr", "torch.eig", "Tensor.eig", "torch.symeig",
                  "Tensor.symeig", "torch.pca_lowrank"}

# ---------------------------------------------------------------- signatures torch hides
# Same format as _api_specs.SPECS (overload name, params, returns, flags); these replace
# the generated entry.
MANUAL = {
    **{"Tensor." + n: (("", (), "T", ""),) for n in (
        "bool", "byte", "char", "double", "float", "half", "int", "long", "short")},
    "Tensor.ndimension": (("", (), "I", ""),),
    "Tensor.nelement": (("", (), "I", ""),),
    "Tensor.numpy": (("", (), "ANY", ""),),
    "Tensor.tolist": (("", (), "ANY", ""),),
    "Tensor.new": (("", (), "T", ""),),
    "Tensor.new_tensor": (("", (("data", "LIST", 0),), "T", ""),),
    "Tensor.polygamma": (("", (("n", "I", 0),), "T", ""),),
    "Tensor.type": (("", (), "ANY", ""), ("dtype", (("dtype", "DT", 0),), "T", "")),
    "Tensor.where": (("", (("condition", "T", 0), ("other", "T", 0)), "T", ""),),
    "Tensor.norm": (("", (("p", "S?", 0, "fro"), ("dim", "I[]?", 0, None),
                          ("keepdim", "B", 0, False)), "T", ""),),
    "Tensor.unique": (("", (("sorted", "B", 0, True), ("return_inverse", "B", 0, False),
                            ("return_counts", "B", 0, False), ("dim", "I?", 0, None)),
                       "ANY", ""),),
    "torch.unique": (("", (("input", "T", 0), ("sorted", "B", 0, True),
                           ("return_inverse", "B", 0, False),
                           ("return_counts", "B", 0, False), ("dim", "I?", 0, None)),
                      "ANY", "p"),),
    "torch.norm": (("", (("input", "T", 0), ("p", "S?", 0, "fro"), ("dim", "I[]?", 0, None),
                         ("keepdim", "B", 0, False)), "T", "p"),),
    "torch.asarray": (("", (("obj", "T", 0), ("dtype", "DT?", 1, None)), "T", ""),),
    "torch.can_cast": (("", (("from_", "DT", 0), ("to", "DT", 0)), "B", ""),),
    "torch.promote_types": (("", (("type1", "DT", 0), ("type2", "DT", 0)), "ANY", ""),),
    "torch.get_default_dtype": (("", (), "ANY", ""),),
    "torch.is_grad_enabled": (("", (), "B", ""),),
    "torch.is_inference_mode_enabled": (("", (), "B", ""),),
    "torch.is_anomaly_enabled": (("", (), "B", ""),),
    "torch.is_anomaly_check_nan_enabled": (("", (), "B", ""),),
    "torch.is_tensor": (("", (("obj", "T", 0),), "B", ""),),
    "torch.typename": (("", (("obj", "T", 0),), "ANY", ""),),
    "torch.broadcast_shapes": (("", (("shapes", "SHAPES", 0),), "ANY", ""),),
    "torch.eig": (("", (("input", "T", 0),), "ANY", ""),),
    "torch.matrix_rank": (("", (("input", "T", 0),), "ANY", ""),),
    "F.fold": (("", (("input", "T", 0), ("output_size", "I[]", 0), ("kernel_size", "I[]", 0),
                     ("dilation", "I", 0, 1), ("padding", "I", 0, 0), ("stride", "I", 0, 1)),
                "T", "p"),),
    "F.unfold": (("", (("input", "T", 0), ("kernel_size", "I[]", 0), ("dilation", "I", 0, 1),
                       ("padding", "I", 0, 0), ("stride", "I", 0, 1)), "T", "p"),),
}

# ---------------------------------------------------------------- value domains
# The primary tensor argument of these ops is drawn from this domain most of the time
# (adversarial values the rest of the time): pos (0.1, 3), unit (-0.95, 0.95),
# prob (0.05, 0.95), ge1 (1.05, 3), int (non-negative int64), bool, sorted (ascending).
_POS = ("log", "log2", "log10", "sqrt", "rsqrt", "lgamma", "digamma", "polygamma", "mvlgamma",
        "gammaln", "psi", "multigammaln", "reciprocal", "igamma", "igammac", "gammainc",
        "gammaincc", "xlogy", "xlog1py", "entr", "pow", "float_power", "logdet",
        "poisson_nll_loss", "gaussian_nll_loss", "kl_div")
_UNIT = ("asin", "acos", "atanh", "arcsin", "arccos", "arctanh", "erfinv")
_PROB = ("logit", "binary_cross_entropy", "ndtri", "bernoulli")
DOMAIN = {}
for _n in _POS:
    DOMAIN[_n] = "pos"
for _n in _UNIT:
    DOMAIN[_n] = "unit"
for _n in _PROB:
    DOMAIN[_n] = "prob"
DOMAIN.update({"acosh": "ge1", "arccosh": "ge1", "bincount": "int", "searchsorted": "sorted",
               "bucketize": "sorted", "gcd": "int", "lcm": "int", "bitwise_and": "int",
               "bitwise_or": "int", "bitwise_xor": "int", "bitwise_not": "int",
               "bitwise_left_shift": "int", "bitwise_right_shift": "int",
               "logical_and": "bool", "logical_or": "bool", "logical_xor": "bool",
               "logical_not": "bool", "multinomial": "prob", "one_hot": "int",
               "embedding": "int", "trapezoid": "any", "cumulative_trapezoid": "any"})

# ---------------------------------------------------------------- shape families
# Ops whose tensor arguments' shapes are coupled beyond broadcasting, by base name (the
# namespace and a trailing "_" are ignored). Drawing code per family: _diffgen.FAMILIES.
FAMILY = {}
for _fam, _names in {
    "mm": ("mm", "addmm", "chain_matmul", "multi_dot", "linear"),
    "bmm": ("bmm", "baddbmm", "addbmm"),
    "mv": ("mv", "addmv"),
    "vec": ("dot", "vdot", "outer", "ger", "addr", "inner", "vecdot", "kron"),
    "matmul": ("matmul", "tensordot"),
    "square": ("det", "inv", "inv_ex", "slogdet", "logdet", "inverse", "matrix_exp",
               "matrix_power", "eigvalsh", "eigh", "cholesky", "cholesky_ex", "cond",
               "svd", "svdvals", "pinv", "pinverse", "qr", "matrix_norm", "matrix_rank",
               "cholesky_inverse", "trace", "eig", "symeig"),
    "solve": ("solve", "solve_ex", "cholesky_solve", "solve_triangular", "triangular_solve",
              "lstsq"),
    "conv": ("conv1d", "conv2d"),
    "pool": ("max_pool1d", "max_pool2d", "avg_pool1d", "avg_pool2d", "adaptive_avg_pool1d",
             "adaptive_avg_pool2d", "adaptive_max_pool1d", "adaptive_max_pool2d", "unfold",
             "fold"),
    "class_loss": ("cross_entropy", "nll_loss", "multi_margin_loss"),
    "pair_loss": ("mse_loss", "l1_loss", "smooth_l1_loss", "huber_loss",
                  "binary_cross_entropy", "binary_cross_entropy_with_logits", "kl_div",
                  "poisson_nll_loss", "soft_margin_loss", "multilabel_soft_margin_loss",
                  "hinge_embedding_loss", "gaussian_nll_loss", "margin_ranking_loss",
                  "cosine_embedding_loss", "triplet_margin_loss",
                  "triplet_margin_with_distance_loss", "pairwise_distance",
                  "cosine_similarity"),
    "norm_layer": ("layer_norm", "group_norm", "batch_norm", "instance_norm", "rms_norm"),
    "embedding": ("embedding",),
    "gather": ("gather", "scatter", "scatter_add", "scatter_reduce", "take_along_dim"),
    "index_dim": ("index_select", "index_add", "index_copy", "index_fill", "index_reduce"),
    "masked": ("masked_fill", "masked_scatter", "masked_select"),
    "where": ("where",),
    "cat": ("cat", "concat", "concatenate", "stack", "hstack", "vstack", "dstack",
            "column_stack", "row_stack", "block_diag", "broadcast_tensors", "atleast_1d",
            "atleast_2d", "atleast_3d", "cartesian_prod", "meshgrid"),
    "einsum": ("einsum",),
    "index_put": ("index_put",),
    "cdist": ("cdist",),
    "cross": ("cross",),
    "sdpa": ("scaled_dot_product_attention",),
    "bilinear": ("bilinear",),
    "prelu": ("prelu",),
    "pdist": ("pdist",),
    "put": ("put", "take"),
    "sorted": ("searchsorted", "bucketize"),
    "diag_scatter": ("select_scatter", "slice_scatter", "diagonal_scatter",
                     "as_strided_scatter"),
}.items():
    for _n in _names:
        FAMILY[_n] = _fam

# str parameters: choices by parameter name (first = the simplest); op-specific below
STR_CHOICES = {
    "reduction": ("mean", "sum", "none"),
    "rounding_mode": ("trunc", "floor"),
    "reduce": ("sum", "prod", "mean", "amax", "amin"),
    "interpolation": ("linear", "lower", "higher", "midpoint", "nearest"),
    "indexing": ("ij", "xy"),
    "approximate": ("none", "tanh"),
    "UPLO": ("L", "U"),
    "side": ("left", "right"),
    "padding": ("valid", "same"),
    "compute_mode": ("use_mm_for_euclid_dist_if_necessary", "use_mm_for_euclid_dist",
                     "donot_use_mm_for_euclid_dist"),
    "mode": ("constant", "reflect", "replicate", "circular"),
    "pad_mode": ("reflect", "constant"),
    "driver": ("gelsy",),
    "type": ("torch.DoubleTensor", "torch.FloatTensor", "torch.LongTensor"),
}

# ---------------------------------------------------------------- known deliberate differences
# (category, spec key or "*", message substring or None) -> reason. A difference matching an
# entry is reported as "allowlisted", never silently dropped; the reasons are the ones
# docs/api.md states.
ALLOWLIST = {
    ("not_implemented", "*", "this in-place operation has no derivative"):
        "docs/differences.md: an in-place op without a derivative (logical_not_, the "
        "comparison methods ...) on a tensor that requires grad raises; torch records "
        "nothing and lets the old gradient pass through the changed values",
    ("tapegrad_raises", "*", "NotImplementedError"):
        "documented gap: tapegrad raises NotImplementedError naming the missing option "
        "(docs/api.md, first paragraph) rather than doing something different",
    ("values", "*", "float16"):
        "float16 arithmetic: numpy's half rounding vs torch's float-accumulated half kernels",
    ("grad_fn", "Tensor.sub", None):
        "docs/api.md: Tensor.sub(other, alpha=) shows tapegrad's hidden MulBackward0",
    ("grads", "torch.norm", "p=0"):
        "docs/api.md: norm(p=0)/dist(p=0) leave x.grad zeros where torch leaves None",
    ("aliasing", "torch.unsafe_split", None):
        "docs/api.md: torch's unsafe_split parts share the input's memory, tapegrad's do not",
    ("aliasing", "Tensor.unsafe_split", None):
        "docs/api.md: torch's unsafe_split parts share the input's memory, tapegrad's do not",
    ("aliasing", "torch.unsafe_split_with_sizes", None):
        "docs/api.md: torch's unsafe_split parts share the input's memory, tapegrad's do not",
    ("aliasing", "Tensor.unsafe_split_with_sizes", None):
        "docs/api.md: torch's unsafe_split parts share the input's memory, tapegrad's do not",
    ("aliasing", "torch.unsafe_chunk", None):
        "docs/api.md: torch's unsafe_split parts share the input's memory, tapegrad's do not",
    ("aliasing", "Tensor.unsafe_chunk", None):
        "docs/api.md: torch's unsafe_split parts share the input's memory, tapegrad's do not",
    ("values", "torch.polygamma", "e+1"):
        "docs/api.md: polygamma at the poles is inf where torch's float32 gives a rounding "
        "artefact such as 1.29e15",
    ("values", "linalg.inv_ex", "nan"):
        "docs/api.md: inv_ex / solve_ex of a singular matrix give nan where torch's LAPACK "
        "gives inf",
    ("values", "linalg.solve_ex", "nan"):
        "docs/api.md: inv_ex / solve_ex of a singular matrix give nan where torch's LAPACK "
        "gives inf",
    ("values", "Tensor.topk", "torch"):
        "docs/api.md: with tied values torch's topk may return other indices among equal "
        "values (tapegrad takes them in stable order); sorted=False order is unspecified",
    ("values", "torch.topk", "torch"):
        "docs/api.md: with tied values torch's topk may return other indices among equal "
        "values (tapegrad takes them in stable order); sorted=False order is unspecified",
    ("torch_backward_raises", "torch.vander", None):
        "docs/api.md: torch's vander with gradients fails in backward; tapegrad differentiates",
    **{("values", k, None): "docs/api.md: slogdet/logdet of an exactly singular matrix: "
       "whether LU meets an exactly zero pivot (sign 0, -inf) or a rounding residue (a finite "
       "log) depends on the LAPACK build; numpy's and torch's differ"
       for k in ("torch.slogdet", "Tensor.slogdet", "linalg.slogdet", "torch.logdet",
                 "Tensor.logdet")},
    ("version_undetected", "linalg.cond", None):
        "docs/api.md: linalg.cond with p = +-1, +-inf, 'fro': torch 2.13's backward raises "
        "(a version error on its own inv_ex result)",
    ("version_undetected", "torch.vander", None):
        "docs/api.md: torch's vander with gradients fails in backward (its own in-place "
        "writes: 'modified by an inplace operation'); tapegrad differentiates",
    ("torch_backward_raises", "linalg.cond", None):
        "docs/api.md: linalg.cond with p = +-1, +-inf, 'fro': torch 2.13's backward raises",
    ("torch_backward_raises", "torch.remainder", None):
        "docs/api.md: remainder's gradient for a tensor divisor, where torch raises",
}
