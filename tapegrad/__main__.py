"""`python -m tapegrad`: a short walk-through of a recorded graph, its gradients and speed."""
import time

import numpy as np

import tapegrad as torch
from tapegrad._compiled import _cache


def main():
    print("tapegrad %s: reverse-mode autodiff on a flat tape, swept by Numba\n" % torch.__version__)
    a = torch.tensor(2.0, requires_grad=True)
    b = torch.tensor(3.0, requires_grad=True)
    c = a * b
    d = torch.tensor(4.0, requires_grad=True)
    e = c * d + a.exp()
    print("a = %s, b = %s, d = %s" % (a, b, d))
    print("e = (a*b)*d + exp(a) =", e)

    def walk(node, depth=0):
        if node is None:
            return
        extra = ""
        if type(node).__name__ == "AccumulateGrad":
            extra = "  (variable: %s)" % node.variable
        print("    " + "  " * depth + type(node).__name__ + extra)
        for nxt, _ in node.next_functions:
            walk(nxt, depth + 1)
    print("\ngrad_fn chain of e:")
    walk(e.grad_fn)
    t0 = time.perf_counter()
    e.backward(retain_graph=True)
    t1 = time.perf_counter()
    if _cache.ON:
        print("\nafter e.backward(): one call into the compiled sweep")
        print("  (first backward in this process: %.2f s -- Numba loads the cached interpreter)"
              % (t1 - t0))
    else:
        print("\nafter e.backward(): the sweep ran uncompiled (numpy), %.2f s: tapegrad's "
              "compiled code is not in the cache yet" % (t1 - t0))
        print("  (it is compiled once per installation, in the background; "
              "`python -m tapegrad.precompile` does it in one step)")
    print("  a.grad = b*d + exp(a) =", a.grad)
    print("  b.grad = a*d          =", b.grad)
    print("  d.grad = a*b          =", d.grad)
    for t in (a, b, d):
        t.grad = None
    t0 = time.perf_counter()
    e.backward()
    print("  a second backward of the same graph took %.0f us" % ((time.perf_counter() - t0) * 1e6))

    # a vector example, timed against a hand-written numpy gradient
    n = 1_000_000
    xs = np.random.default_rng(0).standard_normal(n).astype(np.float32)
    x = torch.from_numpy(xs).requires_grad_()

    def tg():
        x.grad = None
        y = (torch.sin(x) * torch.exp(-x ** 2) + torch.tanh(x)).sum()
        y.backward()
        return x.grad

    def by_hand():
        s, ex, th = np.sin(xs), np.exp(-xs ** 2), np.tanh(xs)
        return np.cos(xs) * ex + s * ex * (-2 * xs) + (1 - th * th)

    tg()
    g_np = by_hand()
    t_tg = min(_time(tg) for _ in range(5))
    t_np = min(_time(by_hand) for _ in range(5))
    err = float(np.max(np.abs(tg().numpy() - g_np)))
    print("\nd/dx sum(sin(x)*exp(-x^2) + tanh(x)) on %d float32 elements:" % n)
    print("  tapegrad forward+backward: %.1f ms" % (t_tg * 1e3))
    print("  numpy hand-derived gradient: %.1f ms   (ratio %.2fx, max abs diff %.1e)"
          % (t_np * 1e3, t_tg / t_np, err))


def _time(f):
    t = time.perf_counter()
    f()
    return time.perf_counter() - t


if __name__ == "__main__":
    main()
