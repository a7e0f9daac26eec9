"""The differential suite's quick profile (CI) and the checks of the machinery itself.

* The signature table covers every public name (or the name is excluded with a reason), and
  is what the generator script makes from the installed torch.
* Random programs over the whole public API, run on tapegrad and torch (eager), and recorded
  and replayed with ``tapegrad.func`` on adversarial inputs: no finding outside the
  catalogue of known findings (tests/differential_findings.json, written by the long
  profile; docs/testing.md). A new finding fails with the minimal program printed.
* The checks catch planted bugs (a wrong op, a wrong replayed gradient, an aliasing result)
  and shrink them to the one statement at fault; without torch, ``self_check`` catches a
  wrong gradient by finite differences.

Fixed seeds and no hypothesis database: the quick profile draws the same programs each run.
"""
import json
import os
import types

import numpy as np
import pytest

import tapegrad
from tapegrad.testing import _api_hints as H
from tapegrad.testing import _diffgen as G
from tapegrad.testing import differential as D
from tapegrad.testing._gen_api_specs import public_names

HERE = os.path.dirname(os.path.abspath(__file__))
CATALOGUE = os.path.join(HERE, "differential_findings.json")
N_EAGER = int(os.environ.get("TAPEGRAD_DIFF_EAGER", "150"))
N_REPLAY = int(os.environ.get("TAPEGRAD_DIFF_REPLAY", "20"))


# ---------------------------------------------------------------- the signature table
def test_every_public_name_is_covered_or_excluded():
    names = set(public_names())
    missing = sorted(n for n in names if n not in G.SPECS and n not in H.EXCLUDED)
    assert not missing, ("public names neither in _api_specs.py (rerun python -m "
                         "tapegrad.testing._gen_api_specs) nor in _api_hints.EXCLUDED: %s"
                         % missing)
    for k, reason in H.EXCLUDED.items():
        assert isinstance(reason, str) and len(reason) > 20, k
    stale = sorted(k for k in H.EXCLUDED if k not in names)
    assert not stale, "EXCLUDED names tapegrad no longer has: %s" % stale
    drawn = set(G.drawable_keys())
    assert len(drawn) > 1000 and all(k in drawn for k in ("torch.add", "Tensor.add_",
                                                          "F.relu", "linalg.solve",
                                                          "special.xlogy", "op.setitem"))


def test_spec_table_is_generated_from_torch():
    torch = pytest.importorskip("torch")
    from tapegrad.testing import _api_specs, _gen_api_specs
    if torch.__version__.split("+")[0] != _api_specs.TORCH_VERSION:
        pytest.skip("table generated from torch %s" % _api_specs.TORCH_VERSION)
    specs, missing = _gen_api_specs.build()
    assert specs == _api_specs.SPECS, "stale: rerun python -m tapegrad.testing._gen_api_specs"
    assert tuple(sorted(missing)) == _api_specs.NOT_IN_TORCH
    # argument kinds come from the schemas: a few spot checks
    assert ("dim", "I", 0) in [p[:3] for o in specs["torch.cumsum"] for p in o[1]]
    assert any("i" in o[3] for o in specs["Tensor.add_"])
    assert any("v" in o[3] for o in specs["Tensor.transpose"])


# ---------------------------------------------------------------- known findings
def _known():
    if not os.path.exists(CATALOGUE):
        return []
    with open(CATALOGUE) as fh:
        return json.load(fh)["findings"]


KNOWN = _known()


def _is_known(f):
    if f.allowed:
        return True
    for e in KNOWN:
        if e["cat"] != f.cat:
            continue
        if e["op"] == f.op or e.get("op_min") == f.op:
            return True
        if f.op.startswith("ops:"):
            base = e.get("op_min", e["op"])
            if base.startswith("ops:") and set(base[4:].split("+")) <= set(f.op[4:].split("+")):
                return True
    return False


def _report(prog, fs):
    return "new finding(s):\n%s\n\nminimal program:\n%s" % (
        "\n".join(map(repr, fs)), prog.source())


# ---------------------------------------------------------------- eager, quick profile
def test_eager_quick_profile():
    pytest.importorskip("torch")
    new, n_stmts = [], 0
    for seed in range(N_EAGER):                     # the long profile's programs of seed 2
        p = D.draw_program(20_000_000 + seed)
        n_stmts += len(p.ops)
        fs = [f for f in D.eager_check(p) if not _is_known(f)]
        if fs:
            new.append((p, fs))
    assert n_stmts > N_EAGER, "programs too short"
    if new:
        p, fs = new[0]
        small, f = D.shrink(p, fs[0], budget=100)
        pytest.fail("%d of %d programs with new findings; the first, shrunk:\n%s" % (
            len(new), N_EAGER, _report(small, [f])))


@pytest.mark.skipif(not os.environ.get("TAPEGRAD_DIFF_EXPLORE"),
                    reason="exploratory (set TAPEGRAD_DIFF_EXPLORE=1): while the findings "
                    "catalogue lists open findings, each new program family it draws finds the "
                    "next one; the fixed-seed quick profile above is the regression check")
def test_eager_hypothesis_programs():
    """The same check through hypothesis (its shrinking), fixed seed, no database: a search
    for new findings (docs/testing.md), run with TAPEGRAD_DIFF_EXPLORE=1."""
    pytest.importorskip("torch")
    from hypothesis import HealthCheck, given, note, settings

    @settings(max_examples=40, database=None, derandomize=True, deadline=None,
              suppress_health_check=list(HealthCheck))
    @given(D.programs())
    def check(prog):
        note(prog.source())
        fs = [f for f in D.eager_check(prog) if not _is_known(f)]
        assert not fs, _report(prog, fs)
    check()


# ---------------------------------------------------------------- replay, quick profile
def test_replay_quick_profile():
    new, calls = [], 0
    for seed in range(30_000_000, 30_000_000 + N_REPLAY):     # the long profile's seed 3
        p = D.regenerate("replay", seed)
        stats = {}
        fs = [f for f in D.replay_check(p, seed=seed, stats=stats) if not _is_known(f)]
        calls += stats.get("calls", 0)
        if fs:
            new.append((p, fs))
    assert calls >= 10 * N_REPLAY
    if new:
        p, fs = new[0]
        pytest.fail("%d of %d programs with new replay findings:\n%s" % (
            len(new), N_REPLAY, _report(p, fs)))


def test_variants_are_adversarial():
    p = G.DProgram([G.Input("x0", np.array([0.5, -1.0, 2.0]), "float64", True)], [],
                   consts=(0.3,))
    vs = D.variants(p, 20, seed=1)
    assert len(vs) >= 20
    a = [v[0] for v in vs]
    assert any(np.isnan(x).any() for x in a) and any(np.isinf(x).any() for x in a)
    assert any((x == 0).any() for x in a) and any((x == 0.3).any() for x in a)
    assert any(np.argmax(x) != 2 for x in a if np.isfinite(x).all())       # argmax moved
    assert any(len(set(x.tolist())) < 3 for x in a)                        # ties


# ---------------------------------------------------------------- the checks catch bugs
def _planted(**overrides):
    """tapegrad with some functions replaced (a module object; the rest is tapegrad)."""
    mod = types.ModuleType("tapegrad_planted")
    mod.__dict__.update(tapegrad.__dict__)
    mod.__dict__.update(overrides)
    return mod


def _prog(lines, inputs):
    stmts = []
    for code, op, reads, outs in lines:
        stmts.append(G.Stmt(code, op, reads, outs, (), "body", code.split(" =")[0]))
    return G.DProgram(inputs, stmts)


def test_eager_compare_catches_a_wrong_op_and_shrinks_it():
    torch = pytest.importorskip("torch")
    from tapegrad.testing._diffrun import compare, execute
    bad = _planted(exp=lambda x: tapegrad.exp(x) * 1.001)
    x0 = G.Input("x0", np.array([0.5, -1.0]), "float64", True)
    p = _prog([("v0 = torch.sin(x0)", "torch.sin", ["x0"], ["v0"]),
               ("v1 = torch.exp(v0)", "torch.exp", ["v0"], ["v1"]),
               ("v2 = v1 * 2", "op.binary*", ["v1"], ["v2"])], [x0])
    fs = compare(p, execute(p, bad), execute(p, torch), anchor_lib=torch)
    # the values at the statement at fault (not the later one reading them), and the
    # grad_fn of the planted composition
    assert {(f.cat, f.op, f.stmt) for f in fs} == {("values", "torch.exp", 1),
                                                    ("grad_fn", "torch.exp", 1)}, fs

    # a drawn program using it shrinks to that one call
    keys = ("torch.exp", "torch.sin", "Tensor.cos", "op.binary", "op.getitem", "torch.sum")

    def check(q):
        return compare(q, execute(q, bad), execute(q, torch), anchor_lib=torch)
    for seed in range(200):
        q = D.generate(G.RandomChooser(seed), torch, keys=keys, keep_errors=0.0)
        fs = [f for f in check(q) if f.cat == "values"]
        if fs and len(q.ops) >= 3:
            break
    else:
        pytest.fail("no drawn program used exp")
    small, f = D.shrink(q, fs[0], check, budget=200, keys=keys, keep_errors=0.0)
    assert f.op == "torch.exp" and small.ops == ("torch.exp",), small.source()


def test_eager_compare_catches_aliasing_and_side_effects():
    torch = pytest.importorskip("torch")
    from tapegrad.testing._diffrun import compare, execute
    # a cumsum that returns its input (the aliasing of issue 24 finding 2)
    bad = _planted(cumsum=lambda x, dim: x)
    x0 = G.Input("x0", np.array([1.0]), "float64", False)
    p = _prog([("v0 = x0 * 1", "op.binary*", ["x0"], ["v0"]),
               ("v1 = torch.cumsum(v0, 0)", "torch.cumsum", ["v0"], ["v1"]),
               ("v2 = v1.add_(1)", "Tensor.add_", ["v1"], ["v2"])], [x0])
    cats = {(f.cat, f.op) for f in compare(p, execute(p, bad), execute(p, torch))}
    assert ("aliasing", "torch.cumsum") in cats and ("side_effects", "Tensor.add_") in cats


def test_replay_check_catches_a_wrong_replayed_gradient(monkeypatch):
    import tapegrad.func as tf
    real = tf.grad_and_value

    def wrong(f, argnums=0, has_aux=False):
        gv = real(f, argnums=argnums, has_aux=has_aux)
        calls = [0]

        def call(*a):
            g, v = gv(*a)
            calls[0] += 1
            if calls[0] > 3:                       # right when recorded, wrong on replays
                g = tuple(x * 1.5 for x in g)
            return g, v
        return call
    monkeypatch.setattr(tf, "grad_and_value", wrong)
    x0 = G.Input("x0", np.array([0.5, -1.0, 2.0]), "float64", True)
    p = _prog([("v0 = torch.sin(x0)", "torch.sin", ["x0"], ["v0"])], [x0])
    p.stmts.append(G.Stmt("loss = (v0 * torch.arange(1., 4.)).sum()", "loss", ["v0"],
                          ["loss"], (), "loss", "loss"))
    fs = D.replay_check(p, seed=0, vmap=False, nested=False, torch=False)
    assert "replay_grads" in {f.cat for f in fs}


def test_self_check_without_torch_catches_a_wrong_gradient(monkeypatch):
    """self_check (no torch) compares the loss gradient with finite differences."""
    x0 = G.Input("x0", np.array([0.5, -1.0, 2.0]), "float64", True)
    p = _prog([("v0 = torch.sin(x0)", "torch.sin", ["x0"], ["v0"])], [x0])
    p.stmts.append(G.Stmt("loss = (v0 * torch.arange(1., 4.)).sum()", "loss", ["v0"],
                          ["loss"], (), "loss", "loss"))
    assert D.self_check(p) == []
    real_grad = tapegrad.autograd.grad

    def wrong_grad(*a, **k):
        return tuple(None if g is None else g * 1.01 for g in real_grad(*a, **k))
    monkeypatch.setattr(tapegrad.autograd, "grad", wrong_grad)
    assert [f.cat for f in D.self_check(p)] == ["grads"]


def test_programs_print_as_runnable_scripts(tmp_path):
    """The printed program is what ran: exec it as a script with tapegrad."""
    ran = 0
    for seed in range(40):
        p = D.draw_program(40_000_000 + seed, ref=tapegrad)
        run = D.execute(p, tapegrad)
        if run.input_error or any(ev["status"] != "ok" for ev in run.events):
            continue
        ns = {}
        exec(compile(p.source(observe=False), "<script>", "exec"), ns)   # noqa: S102
        ran += 1
        for e in p.stmts[-1].outs:
            assert e.split("[")[0] in ns
    assert ran >= 10


def test_long_profile_command(tmp_path):
    """``python -m tapegrad.testing.differential`` runs chunks in subprocesses and prints
    the category summary."""
    pytest.importorskip("torch")
    out = str(tmp_path / "res")
    D.run_long("eager", 4, 7, out, chunk=4, timeout=120)
    recs = D.load(out)
    assert sorted(r["i"] for r in recs) == list(range(4))
    lines = D.summary_lines(D.summary(recs))
    assert lines[0].startswith("eager: 4 programs")
