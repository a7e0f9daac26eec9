"""Issue 28's peer figures, all on one thread, measured in the same run (ratios = peer time /
tapegrad time, > 1: tapegrad faster; medians of interleaved repeats).

    python benchmarks/bench_peers.py [--quick] [--only rosen,mlp,chain,elem] [--json PATH]

1. rosen: Rosenbrock, 10 variables, value and gradient at 10^5 points:
   ``tapegrad.func.vmap(grad_and_value(f))`` vs ``jax.jit(jax.vmap(jax.value_and_grad(f)))``
   (target: no slower) and a hand-written ``numba.njit`` gradient (target: within 2x);
   bench_batch.py's workload 2, here on one thread for every library.
2. mlp: the scalar MLP 2-16-16-1 (0-dim tensors, one sample, eager forward+backward) vs torch
   eager (target: 3x); bench_foundation.py's workload a.
3. chain: 1,000 ``y * 1.0001 + 0.001`` on a 10-vector, then ``.sum().backward()`` vs torch
   eager (target: 3x); bench_foundation.py's workload b.
4. elem: ``sum(sin(x) * exp(-x**2) + tanh(x))`` value and gradient at 10^7 float32 elements
   vs torch eager (target: no slower); bench_foundation.py's workload c at 10^7.

Every result is checked against a peer before it is timed.
"""
import os

for _k in ("NUMBA_NUM_THREADS", "OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS",
           "TAPEGRAD_THREADS"):
    os.environ[_k] = "1"
os.environ["XLA_FLAGS"] = "--xla_cpu_multi_thread_eigen=false intra_op_parallelism_threads=1"
os.environ.setdefault("JAX_PLATFORMS", "cpu")

import argparse  # noqa: E402
import json  # noqa: E402
import sys  # noqa: E402

import numpy as np  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.dirname(HERE))

import bench_batch as bb  # noqa: E402  (imports torch and jax when installed)
import bench_foundation as bf  # noqa: E402
import tapegrad as tg  # noqa: E402
import tapegrad.func as tf  # noqa: E402

torch, jax = bb.torch, bb.jax
if torch is not None:
    torch.set_num_threads(1)
ROSEN_P = 100_000
ELEM_N = 10 ** 7
TARGETS = {"rosen jax": 1.0, "rosen numba": 0.5, "mlp torch": 3.0, "chain torch": 3.0,
           "elem torch": 1.0}


def report(name, res, base, out):
    t0 = res[base]["median"]
    print("  %-34s %10.3f ms" % (base, t0 * 1e3))
    for k, r in res.items():
        if k == base:
            continue
        ratio = r["median"] / t0
        key = "%s %s" % (name, k.split()[0])
        tgt = TARGETS.get(key)
        met = "" if tgt is None else ("  target %.2gx: %s" % (tgt, "met" if ratio >= tgt else "NOT met"))
        print("  %-34s %10.3f ms   ratio %.2fx%s" % (k, r["median"] * 1e3, ratio, met))
        out[key] = {"tapegrad_ms": t0 * 1e3, "peer_ms": r["median"] * 1e3, "ratio": ratio,
                    "target": tgt, "met": None if tgt is None else ratio >= tgt}


def bench_rosen(q, out):
    print("\n1. Rosenbrock n=10 at %d points, value and gradient (float64)" % ROSEN_P)
    X = np.random.default_rng(0).uniform(-2, 2, (ROSEN_P, 10))
    Xt = tg.tensor(X)
    vg = tf.vmap(tf.grad_and_value(bb.rosen))
    g, v = vg(Xt)
    nb = bb._numba_rosen()
    V, G = np.empty(ROSEN_P), np.empty((ROSEN_P, 10))
    nb(X, V, G)
    assert np.allclose(G, g.numpy(), rtol=1e-12, atol=1e-9) and np.allclose(V, v.numpy(), rtol=1e-12)
    fns = {"tapegrad vmap(grad_and_value)": lambda: vg(Xt),
           "numba njit, hand-written": lambda: nb(X, V, G)}
    if jax is not None:
        jf = jax.jit(jax.vmap(jax.value_and_grad(bb.rosen)))
        Xj = bb.jnp.asarray(X)
        vj, gj = jf(Xj)
        assert np.allclose(np.asarray(gj), g.numpy(), rtol=1e-10, atol=1e-8)
        fns["jax jit(vmap(value_and_grad))"] = lambda: jax.block_until_ready(jf(Xj))
    res = bf.bench_pair(fns, 2, 5 if q else 15, 0.05 if q else 0.2)
    report("rosen", res, "tapegrad vmap(grad_and_value)", out)


def _torch_pair(name, make, q, out, check):
    fns = {}
    a, pa = make(tg)
    fns["tapegrad eager"] = a
    if torch is None:
        print("  torch not installed: tapegrad alone")
    else:
        b, pb = make(torch)
        check(a, pa, b, pb)
        fns["torch eager"] = b
    res = bf.bench_pair(fns, 3, 5 if q else 15, 0.05 if q else 0.2)
    report(name, res, "tapegrad eager", out)


def _grads(ps):
    ps = ps if isinstance(ps, (list, tuple)) else [ps]
    return np.concatenate([np.asarray(p.grad.detach().numpy(), dtype=np.float64).ravel() for p in ps])


def _same_grads(rtol, atol):
    def check(a, pa, b, pb):
        a()
        b()
        np.testing.assert_allclose(_grads(pa), _grads(pb), rtol=rtol, atol=atol)
    return check


def bench_mlp(q, out):
    print("\n2. scalar MLP 2-16-16-1, one sample, eager forward+backward")
    values, data = bf.mlp_init_values(), bf.mlp_data()
    _torch_pair("mlp", lambda lib: bf.make_mlp_step(lib, values, data), q, out,
                _same_grads(1e-5, 1e-6))


def bench_chain(q, out):
    print("\n3. chain of 1,000 small ops, eager forward+backward")
    _torch_pair("chain", bf.make_chain_step, q, out, _same_grads(1e-5, 1e-6))


def bench_elem(q, out):
    print("\n4. sum(sin(x)*exp(-x**2)+tanh(x)) value and gradient, %d float32 elements" % ELEM_N)
    xs = np.random.default_rng(0).uniform(-3, 3, ELEM_N).astype(np.float32)
    _torch_pair("elem", lambda lib: bf.make_elem_step(lib, xs), q, out, _same_grads(1e-5, 1e-6))


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--only", default="rosen,mlp,chain,elem")
    ap.add_argument("--json", default=None)
    a = ap.parse_args(argv)
    import numba
    print("tapegrad %s, numba %s (%d thread), torch %s (%s thread), jax %s; one thread each" % (
        getattr(tg, "__version__", "?"), numba.__version__, numba.get_num_threads(),
        torch.__version__ if torch else "-", torch.get_num_threads() if torch else "-",
        jax.__version__ if jax else "-"))
    out = {}
    for name in a.only.split(","):
        {"rosen": bench_rosen, "mlp": bench_mlp, "chain": bench_chain, "elem": bench_elem}[name](
            a.quick, out)
    if a.json:
        with open(a.json, "w") as f:
            json.dump(out, f, indent=1)


if __name__ == "__main__":
    main()
