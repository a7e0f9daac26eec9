"""The pictures of the docs' "Pictures" page, drawn by ``tapegrad.viz`` (needs the graphviz
package and the ``dot`` program).

    python docs/gen_pictures.py             # writes the README's picture, docs/img/mlp_graph.svg
    python docs/gen_pictures.py --all DIR   # every picture into DIR (what the site build does)

The site build (``docs/hooks.py``) calls ``render()`` and puts the SVGs into the site as
``img/pictures/<name>.svg``; the Pictures page shows each picture under the code that made
it (``<!-- picture: name -->`` markers, expanded by the hook from the functions below).
"""
import argparse
import inspect
import os
import sys
import textwrap

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
if ROOT not in sys.path:
    sys.path.insert(0, ROOT)

README_PICTURE = "mlp_graph"            # committed as docs/img/mlp_graph.svg for the README


# Each picture is a function returning a graphviz.Digraph; its body is shown on the page.
def mlp_graph():
    import tapegrad as torch
    from tapegrad.viz import make_dot

    torch.manual_seed(0)
    W1 = torch.randn(3, 8, requires_grad=True)
    b1 = torch.zeros(8, requires_grad=True)
    W2 = torch.randn(8, 1, requires_grad=True)
    x, y = torch.randn(16, 3), torch.randn(16, 1)
    loss = (((x @ W1 + b1).tanh() @ W2 - y) ** 2).mean()
    return make_dot(loss, params=dict(W1=W1, b1=b1, W2=W2))


def mlp_saved():
    import tapegrad as torch
    from tapegrad.viz import make_dot

    torch.manual_seed(0)
    W1 = torch.randn(3, 4, requires_grad=True)
    W2 = torch.randn(4, 1, requires_grad=True)
    x = torch.randn(5, 3)
    out = ((x @ W1).tanh() @ W2).pow(2).sum()
    return make_dot(out, params=dict(W1=W1, W2=W2), show_saved=True, show_attrs=True)


def custom_function():
    import tapegrad as torch
    from tapegrad.viz import make_dot

    class Softsign(torch.autograd.Function):         # x / (1 + |x|)
        @staticmethod
        def forward(ctx, x):
            d = 1 + x.abs()
            ctx.save_for_backward(d)
            return x / d

        @staticmethod
        def backward(ctx, grad):
            (d,) = ctx.saved_tensors
            return grad / d ** 2

    a = torch.tensor([1.0, -2.0, 3.0], requires_grad=True)
    out = (Softsign.apply(a.sin()) * a).sum()
    return make_dot(out, params=dict(a=a))


def double_backward():
    import tapegrad as torch
    from tapegrad.viz import make_dot

    x = torch.tensor([0.5, 1.5], dtype=torch.float64, requires_grad=True)
    y = (x.sin() * x.exp()).sum()
    (g,) = torch.autograd.grad(y, x, create_graph=True)    # g has a grad_fn
    return make_dot(g, params=dict(x=x))


def recorded_tape():
    import tapegrad as torch
    from tapegrad.viz import draw_tape

    def loss(w, x):
        h = (x @ w).tanh()
        if h.sum() > 0:              # decided while recording: a guard
            h = h * 2
        return (h ** 2).mean()

    return draw_tape(loss, torch.randn(3, 2), torch.randn(4, 3))


def long_chain():
    import tapegrad as torch
    from tapegrad.viz import make_dot

    x = torch.ones(10, requires_grad=True)
    y = x
    for _ in range(1000):
        y = y * 1.0001 + 0.001       # 2,000 nodes, drawn as one
    return make_dot(y.sum(), params=dict(x=x))


def long_chain_tape():
    import tapegrad as torch
    from tapegrad.viz import draw_tape

    def f(x):
        for _ in range(1000):
            x = x * 1.0001 + 0.001
        return x.sum()

    return draw_tape(f, torch.ones(10))


def node_limit():
    import tapegrad as torch
    from tapegrad.viz import make_dot

    x = torch.ones(4, requires_grad=True)
    parts = [(x * float(i)).sin() for i in range(40)]        # 40 branches, 85 nodes
    return make_dot(torch.stack(parts).sum(), params=dict(x=x), max_nodes=16)


PICTURES = {f.__name__: f for f in (mlp_graph, mlp_saved, custom_function, double_backward,
                                     recorded_tape, long_chain, long_chain_tape, node_limit)}


def source(name):
    """The body of picture ``name``'s function (what the page shows)."""
    lines = inspect.getsource(PICTURES[name]).splitlines()[1:]
    return textwrap.dedent("\n".join(lines)).strip() + "\n"


def render(names=None):
    """{name: SVG bytes} for the pictures (all by default)."""
    return {n: PICTURES[n]().pipe(format="svg") for n in (names or PICTURES)}


def main(argv=None):
    from gen_plots import write_files
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--all", metavar="DIR", help="write every picture into DIR")
    args = ap.parse_args(argv)
    if args.all:
        write_files(render(), args.all, ".svg")
    else:
        write_files(render([README_PICTURE]), os.path.join(HERE, "img"), ".svg")


if __name__ == "__main__":
    main()
