"""The autograd API as torch 2.13 behaves: grad_fn of gradients built with create_graph=True,
custom Function checks and features (setup_context, once_differentiable, gradient
validation), node hooks, grad-mode decorators on generators, .grad assignment, Variable,
post-accumulate-grad hooks, torch.func.jacfwd / hessian, gradcheck's message.

Each behaviour is compared with torch through ``oracle.same`` (skipped without torch) and,
where a gradient is involved, also checked without torch (finite differences or a closed
form)."""
import numpy as np
import pytest

import tapegrad as tg
from oracle import fdcheck, graph, same
from test_grad_paths import _square_fn

pytestmark = [pytest.mark.filterwarnings("ignore:Using backward\\(\\) with create_graph"),
              pytest.mark.filterwarnings("ignore::DeprecationWarning:torch")]


# ------------------------------------------------------------ create_graph: no extra ViewBackward0
@pytest.mark.parametrize("case", ["mul0d", "pow0d", "sin0d", "sum2d", "exp2d", "backward2d",
                                  "custom1d", "custom0d", "grad_outputs"])
def test_create_graph_gradient_has_the_grad_fn_of_its_last_op(case):
    """torch: the gradient's grad_fn is the op that computed it (t * t: AddBackward0 over two
    MulBackward0); tapegrad used to add a ViewBackward0 (flat cotangent reshaped) on top."""
    def run(lib):
        t = lib.tensor(2.0, requires_grad=True)
        m = lib.tensor([[1.0, 2.0], [3.0, 4.5]], requires_grad=True)
        x = lib.tensor([1.0, 2.0], requires_grad=True)
        Sq = _square_fn(lib)
        if case == "mul0d":
            g, = lib.autograd.grad(t * t, t, create_graph=True)
        elif case == "pow0d":
            g, = lib.autograd.grad(t ** 2, t, create_graph=True)
        elif case == "sin0d":
            g, = lib.autograd.grad(t.sin(), t, create_graph=True)
        elif case == "sum2d":
            g, = lib.autograd.grad((m * m).sum(), m, create_graph=True)
        elif case == "exp2d":
            g, = lib.autograd.grad(m.exp().sum(1).sum(), m, create_graph=True)
        elif case == "backward2d":
            (m * m).sum().backward(create_graph=True)
            g = m.grad                      # torch: CopyBackwards(None, AddBackward0(...))
        elif case == "custom1d":
            g, = lib.autograd.grad(Sq.apply(x).sum(), x, create_graph=True)
        elif case == "custom0d":
            g, = lib.autograd.grad(Sq.apply(t), t, create_graph=True)
        else:
            v = lib.tensor([[1.0, -1.0], [0.5, 2.0]], requires_grad=True)
            g, = lib.autograd.grad(m * 3, m, grad_outputs=v * 1, create_graph=True)
        h = lib.autograd.grad(g.sum(), [a for a in (t, m, x) if a.requires_grad],
                              allow_unused=True, materialize_grads=True)
        # (x ** 2 records (g * 2) * x, not torch's g * (2 * x ** 1): compare the top only)
        return g, graph(g.grad_fn, 0 if case == "pow0d" else 2), h
    same(run)


@pytest.mark.filterwarnings("ignore:Using backward\\(\\) with create_graph")
def test_create_graph_backward_grad_fields_as_torch():
    """backward(create_graph=True): a leaf's first .grad is a CopyBackwards, later ones add; a
    retained non-leaf gradient is a CloneBackward0; a constant gradient has no grad_fn."""
    def run(lib):
        x = lib.tensor([1.0, 2.0], requires_grad=True)
        y = x * x
        y.retain_grad()
        (y * y).sum().backward(create_graph=True)
        first = (x.grad, graph(x.grad.grad_fn, 1), y.grad, graph(y.grad.grad_fn, 1))
        (x * x).sum().backward(create_graph=True)
        second = (x.grad, graph(x.grad.grad_fn, 1))
        x.grad = None
        (x * 3).sum().backward(create_graph=True)
        h, = lib.autograd.grad(first[0].sum(), x)
        return first, second, x.grad, x.grad.requires_grad, h
    same(run)


def test_grad_of_an_output_with_respect_to_itself():
    """grad(y, [y, x]): the seed is y's gradient once (it used to be counted twice)."""
    def run(lib):
        x = lib.tensor([1.0, 2.0], requires_grad=True)
        y = x * 2
        return (lib.autograd.grad(y.sum(), [y, x]),
                lib.autograd.grad(y, [y, x], lib.ones(2), create_graph=True),
                lib.autograd.grad(y, [y], lib.tensor([1.0, 3.0])))
    same(run)
    x = tg.tensor([1.0, 2.0], requires_grad=True)
    y = x * 2
    for cg in (False, True):
        g, = tg.autograd.grad(y, y, tg.tensor([1.0, 3.0]), retain_graph=True, create_graph=cg)
        np.testing.assert_array_equal(g.detach().numpy(), [1.0, 3.0])


@pytest.mark.parametrize("fn", ["softmax", "log_softmax", "cross_entropy", "inv"])
def test_create_graph_gradient_names_of_nn_and_linalg(fn):
    """softmax / log_softmax record torch's SoftmaxBackwardDataBackward0 /
    LogSoftmaxBackwardDataBackward0 over (grad_output, output); inv ends in NegBackward0."""
    def run(lib):
        m = lib.tensor([[1.0, 2.0], [3.0, 4.5]], dtype=lib.float64, requires_grad=True)
        F = lib.nn.functional
        y = {"softmax": lambda: m.softmax(-1), "log_softmax": lambda: F.log_softmax(m, -1),
             "cross_entropy": lambda: F.cross_entropy(m, lib.tensor([0, 1])),
             "inv": lambda: lib.linalg.inv(m)}[fn]()
        w = lib.arange(y.numel(), dtype=lib.float64).reshape(y.shape)
        g, = lib.autograd.grad((y * w).sum(), m, create_graph=True)
        h, = lib.autograd.grad((g * g).sum(), m)
        # (cross_entropy: torch's grad_output has a graph, NllLossBackwardBackward0; the
        # gradient of nll is constant in tapegrad: compare the top name only)
        nxt = [n is None or n.name() for n, _ in g.grad_fn.next_functions]
        return g, g.grad_fn.name(), nxt if fn != "cross_entropy" else None, h
    same(run)
    x = np.array([[1.0, 2.0, -0.5], [3.0, 4.5, 0.1]])
    w = np.random.default_rng(3).standard_normal(x.shape)
    for f in (lambda m: m.softmax(-1), lambda m: tg.nn.functional.log_softmax(m, -1)):
        def second(m):
            plain = not m.requires_grad         # (finite differences: plain inputs)
            if plain:
                m = m.detach().requires_grad_()
            g, = tg.autograd.grad((f(m) * tg.tensor(w)).sum(), m, create_graph=True)
            return (g * g).detach() if plain else g * g
        fdcheck(second, [x], rtol=1e-5, atol=1e-7)


def test_create_graph_gradient_is_differentiable_without_the_view():
    """The gradient bound to the sweep's node in its tensor's shape still differentiates
    correctly (second derivatives against closed forms)."""
    t = tg.tensor(0.7, dtype=tg.float64, requires_grad=True)
    g, = tg.autograd.grad(t.sin() * t, t, create_graph=True)
    assert g.shape == () and g.grad_fn.name() == "AddBackward0"
    h, = tg.autograd.grad(g, t)
    x = 0.7
    np.testing.assert_allclose(h.item(), -x * np.sin(x) + 2 * np.cos(x), rtol=1e-12)
    m = tg.tensor([[0.3, -0.2], [1.1, 0.4]], dtype=tg.float64, requires_grad=True)
    g, = tg.autograd.grad((m ** 3).sum(), m, create_graph=True)
    assert g.shape == (2, 2) and g.grad_fn.name() != "ViewBackward0"
    h, = tg.autograd.grad((g * g).sum(), m)       # d/dm sum (3 m^2)^2 = 36 m^3
    np.testing.assert_allclose(h.numpy(), 36 * m.detach().numpy() ** 3, rtol=1e-12)


# ------------------------------------------------------------------------- grad() messages
def test_allow_unused_message_names_the_index():
    def run(lib):
        a = lib.tensor([1.0, 2.0], requires_grad=True)
        b = lib.tensor([1.0, 2.0], requires_grad=True)
        out = []
        for ins, cg in (([a, b], False), ([b, a], False), ([a, b], True)):
            try:
                lib.autograd.grad((a * 2).sum(), ins, create_graph=cg)
            except RuntimeError as e:
                out.append(str(e))
        return out
    rt, rg = same(run)
    assert rt == rg


# -------------------------------------------------------------- custom Function gradients
def _wrong(lib, ret, forward=None):
    def fw(ctx, x, k=None):
        return x.sum() if forward is None else forward(x)

    def bw(ctx, g):
        return ret(lib, g)
    return type("WrongShape", (lib.autograd.Function,),
                {"forward": staticmethod(fw), "backward": staticmethod(bw)})


SHAPE_CASES = [  # (input shape, backward's result): torch sums what the input expands to
    ((2,), lambda lib, g: g),                          # [] for [2]: invalid
    ((2,), lambda lib, g: g.reshape(1)),               # [1]: invalid
    ((2,), lambda lib, g: lib.ones(3)),
    ((2,), lambda lib, g: lib.ones(1, 2)),             # accepted, summed
    ((2,), lambda lib, g: lib.ones(2, 1)),
    ((2, 3), lambda lib, g: lib.ones(3)),
    ((2, 3), lambda lib, g: lib.ones(2, 1)),
    ((2, 3), lambda lib, g: lib.ones(6)),
    ((2, 3), lambda lib, g: lib.ones(1, 2, 3) * 2),    # accepted
    ((2, 3), lambda lib, g: lib.arange(12.0).reshape(2, 2, 3)),  # accepted, summed
    ((1, 3), lambda lib, g: lib.arange(6.0).reshape(2, 3)),      # accepted, summed to [1, 3]
    ((), lambda lib, g: lib.arange(3.0)),              # accepted, summed to []
    ((2,), lambda lib, g: lib.ones(2, dtype=lib.float64)),        # cast to the input's dtype
    ((2,), lambda lib, g: lib.ones(2, dtype=lib.int64)),
    ((2,), lambda lib, g: [1.0, 2.0]),                 # not a tensor
    ((2,), lambda lib, g: 1.0),
]


@pytest.mark.parametrize("create_graph", [False, True])
@pytest.mark.parametrize("k", range(len(SHAPE_CASES)))
def test_custom_function_gradient_shape_is_validated_as_torch(k, create_graph):
    shape, ret = SHAPE_CASES[k]

    def run(lib):
        x = lib.ones(shape, requires_grad=True)
        F = _wrong(lib, ret)
        g, = lib.autograd.grad(F.apply(x) * 1, x, create_graph=create_graph)
        return g
    same(run, phrases=() if k not in (0, 2, 5) else
         ("Function WrongShapeBackward returned an invalid gradient at index 0 - got",
          "but expected shape compatible with"))


def test_custom_function_summed_gradient_without_torch():
    """A gradient of shape [2, 2, 3] for a [2, 3] input is summed over the leading dim."""
    x = tg.ones(2, 3, requires_grad=True)
    F = _wrong(tg, lambda lib, g: lib.arange(12.0).reshape(2, 2, 3))
    F.apply(x).backward()
    np.testing.assert_array_equal(x.grad.numpy(), np.arange(12.0).reshape(2, 2, 3).sum(0))
    F = _wrong(tg, lambda lib, g: lib.ones(2))
    with pytest.raises(RuntimeError, match=r"got \[2\] but expected shape compatible with \[2, 3\]"):
        F.apply(x).backward()


@pytest.mark.parametrize("ret", ["one", "three_none", "three", "nontensor_arg", "list"])
def test_custom_function_gradient_count_and_types(ret):
    def run(lib):
        def fw(ctx, x, k):
            return x * 2

        def bw(ctx, g):
            return {"one": lambda: g, "three_none": lambda: (g, None, None),
                    "three": lambda: (g, None, g), "nontensor_arg": lambda: (g, g),
                    "list": lambda: ([1.0, 2.0], None)}[ret]()
        F = type("F", (lib.autograd.Function,), {"forward": staticmethod(fw),
                                                 "backward": staticmethod(bw)})
        x = lib.tensor([1.0, 2.0], requires_grad=True)
        F.apply(x, 2.0).sum().backward()
        return x.grad
    same(run, phrases={"one": ("incorrect number of gradients (expected 2, got 1)",),
                       "three": ("incorrect number of gradients (expected 2, got 3)",),
                       "nontensor_arg": ("returned a gradient different than None at position 2",),
                       "list": ("expected Variable or None (got list)",)}.get(ret, ()))


def test_custom_function_node_prints_and_reads_ctx_as_torch():
    def run(lib):
        class Scale(lib.autograd.Function):
            @staticmethod
            def forward(ctx, x):
                ctx.save_for_backward(x)
                ctx.k = 3
                return x * 3

            @staticmethod
            def backward(ctx, g):
                return g * ctx.k
        x = lib.tensor([1.0, 2.0], requires_grad=True)
        fn = Scale.apply(x).grad_fn
        r = repr(fn)
        return (r[:r.index(" at 0x")], fn.name(), type(fn).__name__, fn.k,
                fn.needs_input_grad, fn.saved_tensors[0], fn._forward_cls.__name__)
    same(run)


def test_new_style_function_with_setup_context():
    def run(lib):
        class Cube(lib.autograd.Function):
            @staticmethod
            def forward(x):
                return x ** 3, 3 * x ** 2

            @staticmethod
            def setup_context(ctx, inputs, output):
                ctx.save_for_backward(inputs[0], output[1])

            @staticmethod
            def backward(ctx, grad_output, grad_dx):
                x, dx = ctx.saved_tensors
                return grad_output * dx + grad_dx * 6 * x
        x = lib.tensor([1.0, 2.0], requires_grad=True)
        c, dc = Cube.apply(x)
        (c.sum() + dc.sum()).backward()
        g, = lib.autograd.grad(Cube.apply(x)[0].sum(), x, create_graph=True)
        h, = lib.autograd.grad(g.sum(), x)
        return x.grad, c.grad_fn.name(), g, h
    same(run)
    x = tg.tensor([1.0, 2.0], dtype=tg.float64)

    class Cube(tg.autograd.Function):
        @staticmethod
        def forward(x):
            return x ** 3

        @staticmethod
        def setup_context(ctx, inputs, output):
            ctx.save_for_backward(inputs[0])

        @staticmethod
        def backward(ctx, g):
            (x,) = ctx.saved_tensors
            return 3 * x * x * g
    fdcheck(lambda x: Cube.apply(x), [x.numpy()])


def test_once_differentiable():
    from tapegrad.autograd.function import once_differentiable

    def run(lib):
        from importlib import import_module
        od = import_module(lib.__name__ + ".autograd.function").once_differentiable
        seen = []
        base = _square_fn(lib)

        class Sq(base):
            @staticmethod
            @od
            def backward(ctx, g):
                seen.append(lib.is_grad_enabled())
                return base.backward(ctx, g)
        x = lib.tensor([1.0, 2.0], requires_grad=True)
        g1, = lib.autograd.grad(Sq.apply(x).sum(), x)
        g2, = lib.autograd.grad(Sq.apply(x).sum(), x, create_graph=True)
        g3, = lib.autograd.grad((Sq.apply(x) * x).sum(), x, create_graph=True)
        return g1, g2, g3, graph(g3.grad_fn, 2), seen
    same(run)
    assert once_differentiable is tg.autograd.function.once_differentiable


def test_function_vmap_and_jvp_are_named_not_implemented():
    def run(lib):
        class F(lib.autograd.Function):
            @staticmethod
            def forward(ctx, x):
                return x
        out = [F.generate_vmap_rule]
        for call in (lambda: F.vmap(None, None), lambda: F.jvp(None)):
            try:
                call()
            except NotImplementedError as e:
                out.append(str(e).split(" (tapegrad")[0])
        return out
    same(run)


# ------------------------------------------------------------------------------ node hooks
@pytest.mark.parametrize("shape", [(), (1,), (2, 3)])
@pytest.mark.parametrize("create_graph", [False, True])
def test_node_hooks_see_gradients_in_torch_shapes(shape, create_graph):
    """Pre- and post-hooks of a grad_fn get their tensors in the shapes torch gives (0-d
    outputs used to give [1], others flat); node hooks also run in create_graph sweeps and on
    custom Function nodes (post-hooks there used to be skipped)."""
    def run(lib):
        seen = []

        def shapes(ts):
            return [None if t is None else tuple(t.shape) for t in ts]

        class Two(lib.autograd.Function):
            @staticmethod
            def forward(ctx, x):
                ctx.save_for_backward(x)
                return x * x, x * 2

            @staticmethod
            def backward(ctx, g, g2):
                (x,) = ctx.saved_tensors
                return 2 * x * g + 2 * g2
        a = lib.ones(shape, requires_grad=True)
        b = lib.full(shape, 2.0, requires_grad=True)
        y = a * 3 * b
        z = y.exp()
        y.grad_fn.register_prehook(lambda go: seen.append(("pre", shapes(go))))
        y.grad_fn.register_hook(lambda gi, go: seen.append(("post", shapes(gi), shapes(go))))
        s = (z * b).sum()
        s.grad_fn.register_prehook(lambda go: seen.append(("pre-sum", shapes(go))))
        s.grad_fn.register_hook(lambda gi, go: seen.append(("post-sum", shapes(gi), shapes(go))))
        n = z.grad_fn.next_functions[0][0]         # y's node, reached from z
        n.register_hook(lambda gi, go: (gi[0] * 10, gi[1]))
        p, q = Two.apply(a)
        p.grad_fn.register_prehook(lambda go: seen.append(("fpre", shapes(go))))
        p.grad_fn.register_hook(lambda gi, go: seen.append(("fpost", shapes(gi), shapes(go))))
        g = lib.autograd.grad(s + (p * q).sum(), [a, b], create_graph=create_graph)
        return g, seen
    same(run)


def test_node_post_hook_replaces_grad_inputs_without_torch():
    a = tg.tensor([[1.0, 2.0], [3.0, 4.0]], requires_grad=True)
    y = a * 3
    got = []
    y.grad_fn.register_hook(lambda gi, go: got.append((gi[0].shape, go[0].shape)) or
                            (gi[0] * 10, None))
    y.sum().backward()
    assert got == [((2, 2), (2, 2))]
    np.testing.assert_array_equal(a.grad.numpy(), np.full((2, 2), 30.0))
    t = tg.tensor(2.0, requires_grad=True)
    u = t * 3
    pre = []
    u.grad_fn.register_prehook(lambda go: pre.append(go[0].shape))
    u.backward()
    assert pre == [()]


@pytest.mark.parametrize("create_graph", [False, True])
def test_grad_runs_the_hooks_of_requested_inputs(create_graph):
    """autograd.grad runs a leaf input's tensor hooks, and those of a non-leaf input where
    the sweep stops (they used to be skipped: the hook's replacement was not returned)."""
    def run(lib):
        x = lib.tensor([1.0, 2.0], requires_grad=True)
        w = lib.tensor([3.0, 4.0], requires_grad=True)
        x.register_hook(lambda g: g * 2)
        y = x * w
        y.register_hook(lambda g: g + 100)
        z = (y * y).sum()
        u = lib.tensor(1.0, requires_grad=True)
        u.register_hook(lambda g: g * 3)
        return [lib.autograd.grad(z, ins, retain_graph=True, create_graph=create_graph)
                for ins in ([y], [x], [w], [x, w])] + [
            lib.autograd.grad(u * 2, u, create_graph=create_graph),
            lib.autograd.grad(x.sum(), [u], allow_unused=True)]
    same(run)
    x = tg.tensor([1.0, 2.0], requires_grad=True)
    x.register_hook(lambda g: g * 2)
    g, = tg.autograd.grad((x * 3).sum(), x, create_graph=create_graph)
    np.testing.assert_array_equal(g.detach().numpy(), [6.0, 6.0])


# ---------------------------------------------------------------------------- grad modes
def test_grad_mode_decorators_on_generators():
    """torch wraps generator functions so that every resumption runs under the mode."""
    def run(lib):
        out = []

        @lib.no_grad()
        def gen():
            yield lib.is_grad_enabled()
            x = yield lib.is_grad_enabled()
            yield x, lib.is_grad_enabled()
        out.append(list(gen()))
        g = gen()
        out.append((next(g), lib.is_grad_enabled(), next(g), g.send(5), lib.is_grad_enabled()))

        @lib.no_grad
        def gen2():
            yield lib.is_grad_enabled()
        out.append(list(gen2()))
        with lib.no_grad():
            @lib.enable_grad()
            def gen3():
                yield lib.is_grad_enabled()
                yield lib.is_grad_enabled()
            out.append(list(gen3()))

        @lib.inference_mode()
        def gen4():
            yield lib.is_grad_enabled()
        out.append(list(gen4()))

        @lib.set_grad_enabled(False)
        def gen5():
            yield lib.is_grad_enabled()
        out.append((list(gen5()), lib.is_grad_enabled()))

        @lib.no_grad()
        def gen6():
            try:
                yield 1
            except ValueError:
                yield ("caught", lib.is_grad_enabled())
            return 7
        g = gen6()
        next(g)
        out.append(g.throw(ValueError()))
        try:
            next(g)
        except StopIteration as e:
            out.append(("stop", e.value))
        x = lib.ones(2, requires_grad=True)

        @lib.no_grad()
        def gen7():
            yield (x * 2).requires_grad
        out.append(list(gen7()))
        out.append(gen.__name__)
        return out
    rt, rg = same(run)
    assert rt == rg


# ----------------------------------------------------------------------- .grad assignment
@pytest.mark.parametrize("value", ["size3", "dbl", "size1x2", "zero_d", "int", "list", "ok"])
def test_grad_assignment_checks_as_torch(value):
    def run(lib):
        w = lib.zeros(2, requires_grad=True)
        w.grad = {"size3": lambda: lib.ones(3), "dbl": lambda: lib.ones(2, dtype=lib.float64),
                  "size1x2": lambda: lib.ones(1, 2), "zero_d": lambda: lib.ones(()),
                  "int": lambda: lib.ones(2, dtype=lib.int64), "list": lambda: [1.0, 2.0],
                  "ok": lambda: lib.ones(2)}[value]()
        return w.grad
    same(run, phrases={
        "size3": ("attempting to assign a gradient of size '[3]' to a tensor of size '[2]'. "
                  "Please ensure that the gradient and the tensor are the same size",),
        "dbl": ("attempting to assign a gradient with dtype 'double' to a tensor with grad_dtype "
                "'Float'.",),
        "int": ("attempting to assign a gradient with dtype 'long int' to a tensor with "
                "grad_dtype 'Float'.",)}.get(value, ()))


# ------------------------------------------------------------- post-accumulate-grad hooks
@pytest.mark.filterwarnings("ignore:Using backward\\(\\) with create_graph")
def test_post_accumulate_grad_hook():
    def run(lib):
        seen = []
        x = lib.tensor([1.0, 2.0], requires_grad=True)
        h = x.register_post_accumulate_grad_hook(lambda t: seen.append((t is x, t.grad * 1)))
        x.register_hook(lambda g: g * 2)
        (x * 3).sum().backward()
        (x * x).sum().backward()
        lib.autograd.grad((x * 3).sum(), x)           # no accumulation: no post hook
        (x * x).sum().backward(create_graph=True)
        x.grad = None
        lib.autograd.backward([(x * x).sum()], inputs=[x])
        h.remove()
        (x * 3).sum().backward()
        seen.append(x.grad)
        out = [seen]
        for bad in (lambda: (x * 2).register_post_accumulate_grad_hook(print),
                    lambda: lib.ones(2).register_post_accumulate_grad_hook(print)):
            try:
                bad()
            except RuntimeError as e:
                out.append(str(e))
        y = lib.tensor(1.0, requires_grad=True)
        y.register_post_accumulate_grad_hook(lambda t: t.grad.mul_(10))
        try:
            y.backward()
        except RuntimeError as e:
            out.append(str(e))
        z = lib.tensor(2.0, requires_grad=True)
        z.register_post_accumulate_grad_hook(lambda t: t.grad.mul_(10) and None)
        (z * z).backward()
        z.backward()
        out.append(z.grad)
        return out
    rt, rg = same(run)
    assert rt[1:4] == rg[1:4]
    # without torch: the hook sees the accumulated gradient, after the tensor hook
    x = tg.tensor([1.0, 2.0], requires_grad=True)
    got = []
    x.register_hook(lambda g: g * 2)
    x.register_post_accumulate_grad_hook(lambda t: got.append(t.grad.tolist()))
    (x * 3).sum().backward()
    (x * x).sum().backward()
    assert got == [[6.0, 6.0], [10.0, 14.0]]


# ------------------------------------------------------------------------------- Variable
def test_variable():
    def run(lib):
        from importlib import import_module
        Variable = import_module(lib.__name__ + ".autograd").Variable
        t = lib.ones(2)
        v = Variable(t, requires_grad=True)
        t[0] = 5.0                                  # shares t's data
        out = [v, v is t, v.is_leaf, isinstance(t, Variable), isinstance(3, Variable)]
        x = lib.ones(2, requires_grad=True)
        u = Variable(x * 2)
        out += [u.is_leaf, u.requires_grad, Variable(x) is x, Variable(lib.tensor([1, 2])),
                Variable()]
        (v * 3).sum().backward()
        out.append(v.grad)
        for bad in (lambda: Variable([1.0, 2.0]),
                    lambda: Variable(lib.tensor([1, 2]), requires_grad=True)):
            try:
                bad()
            except (TypeError, RuntimeError) as e:
                out.append((type(e).__name__, str(e)))
        return out
    rt, rg = same(run)
    assert rt[-2:] == rg[-2:]


# ------------------------------------------------------------- graph contexts, forward_ad
def test_saved_tensor_contexts_and_forward_ad_are_explicit():
    """save_on_cpu is a no-op on CPU; saved_tensors_hooks and forward-mode AD are not
    supported and say so (NotImplementedError naming them) instead of silently ignoring."""
    x = tg.tensor([1.0, 2.0], requires_grad=True)
    with tg.autograd.graph.save_on_cpu(pin_memory=True):
        y = (x * x).sum()
    with tg.autograd.graph.disable_saved_tensors_hooks("no hooks"):
        y.backward()
    np.testing.assert_array_equal(x.grad.numpy(), [2.0, 4.0])
    with pytest.raises(NotImplementedError, match="saved_tensors_hooks"):
        with tg.autograd.graph.saved_tensors_hooks(lambda t: t, lambda t: t):
            pass
    import tapegrad.autograd.forward_ad as fwAD
    with pytest.raises(NotImplementedError, match="forward_ad.dual_level"):
        with fwAD.dual_level():
            pass
    with pytest.raises(NotImplementedError, match="forward_ad.make_dual"):
        fwAD.make_dual(x, x)


# ---------------------------------------------------------------------- func.jacfwd / jvp
def test_func_jacfwd_and_jvp_match_torch():
    def run(lib):
        from importlib import import_module
        fn = import_module(lib.__name__ + ".func")

        def f(x):
            return lib.stack([x[0] ** 2 * x[1], lib.sin(x[1]) * x[2], x.exp().sum()])

        def g(x, y):
            return (x * y).sum(), x * 2 + y
        x0 = lib.tensor([0.5, 1.0, -1.0])
        a, b = lib.tensor([1.0, 2.0]), lib.tensor([3.0, 4.0])
        out = [fn.jacfwd(f)(x0), fn.jacfwd(g)(a, b), fn.jacfwd(g, argnums=(0, 1))(a, b),
               fn.jacfwd(lambda x, y: ((x * y).sin(), {"k": x.sum()}), argnums=1,
                         has_aux=True)(a, b),
               fn.jacfwd(lambda x: x.sum())(lib.tensor(2.0)),
               fn.jacfwd(lambda x: x * 2)(lib.tensor([[1.0, 2.0]])),
               fn.jvp(g, (a, b), (lib.ones(2), lib.zeros(2))),
               fn.jvp(lambda x: x.sin(), (a,), (lib.ones(2),)),
               fn.jvp(lambda x: (x.sin(), x.cos()), (a,), (lib.ones(2),), has_aux=True),
               fn.hessian(lambda x: (x ** 3).sum() + x[0] * x[1])(x0),
               fn.hessian(lambda x, y: (x * x * y).sum() + y[0] ** 3, argnums=(0, 1))(a, b)]
        try:
            fn.jvp(lambda x: x.sin(), a, (lib.ones(2),))
        except RuntimeError as e:
            out.append(str(e))
        return out
    same(run)


def test_func_jacfwd_against_finite_differences():
    def f(x, y):
        return (x * y.sin()).exp() + x[:1] * y.sum()
    x = np.array([0.3, -0.7, 1.1])
    y = np.array([0.2, 0.9, -0.4])
    jx, jy = tg.func.jacfwd(f, argnums=(0, 1))(tg.tensor(x, dtype=tg.float64),
                                               tg.tensor(y, dtype=tg.float64))

    def fn(x, y):
        return np.exp(x * np.sin(y)) + x[:1] * y.sum()
    for arr, J, k in ((x, jx, 0), (y, jy, 1)):
        want = np.zeros((3, 3))
        for i in range(3):
            d = np.zeros(3)
            d[i] = 1e-6
            args = [x, y]
            args[k] = arr + d
            p = fn(*args)
            args[k] = arr - d
            want[:, i] = (p - fn(*args)) / 2e-6
        np.testing.assert_allclose(J.numpy(), want, rtol=1e-6, atol=1e-8)


# -------------------------------------------------------------------- gradcheck's message
@pytest.mark.parametrize("dtype", ["float64", "float32"])
@pytest.mark.parametrize("fast", [False, True])
def test_gradcheck_message_starts_as_torch(dtype, fast):
    """The Jacobians print in torch's dtypes (float32 inputs: no dtype suffix); fast mode
    prints its two quantities as Python floats."""
    import warnings

    def run(lib):
        base = _square_fn(lib)

        class Bad(base):                 # d(x^2) given as 3 x
            @staticmethod
            def backward(ctx, g):
                return base.backward(ctx, g) * 1.5
        x = lib.tensor([1.0, 2.0], dtype=getattr(lib, dtype), requires_grad=True)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            try:
                lib.autograd.gradcheck(Bad.apply, (x,), eps=1e-3 if dtype == "float32" else 1e-6,
                                       atol=1e-2, fast_mode=fast)
            except Exception as e:      # noqa: BLE001
                return type(e).__name__, str(e)
    torch = pytest.importorskip("torch")
    (tn, tm), (gn, gm) = run(torch), run(tg)
    assert tn == gn == "GradcheckError"
    if fast:      # the random directions differ: compare the layout, numbers aside
        import re
        num = re.compile(r"-?\d+\.\d+(e-?\d+)?")
        assert num.sub("N", gm).startswith(num.sub("N", tm).split("The max")[0])
    else:
        assert gm.startswith(tm.rstrip("\n"))
