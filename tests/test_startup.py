"""Start-up: the cached interpreter is loaded without Numba's full context refresh
(tapegrad/_fastload.py), and falls back to Numba's own loader whenever that is not safe."""
import json
import os
import subprocess
import sys

import numpy as np
import pytest

import tapegrad as tg
from tapegrad._compiled import _fastload

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
ELF = sys.platform.startswith("linux") and sys.byteorder == "little" and sys.maxsize > 2 ** 32


def _object_code(ir):
    import llvmlite.binding as ll
    from numba.core.registry import cpu_target
    cpu_target.target_context  # initializes LLVM's native target as numba does
    tm = ll.Target.from_default_triple().create_target_machine(reloc="pic", codemodel="default")
    return tm.emit_object(ll.parse_assembly(ir))


MISSING = """
declare double @tapegrad_test_no_such_symbol(double)
declare double @cos(double)
define double @f(double %x) {
  %a = call double @tapegrad_test_no_such_symbol(double %x)
  %b = call double @cos(double %a)
  ret double %b
}
"""
PRESENT = """
declare double @cos(double)
define double @g(double %x) {
  %b = call double @cos(double %x)
  ret double %b
}
"""


@pytest.mark.skipif(not ELF, reason="numba caches ELF objects only on 64-bit little-endian Linux")
def test_undefined_symbols_lists_exactly_the_external_references():
    names = _fastload.undefined_symbols(_object_code(MISSING))
    assert "tapegrad_test_no_such_symbol" in names and "cos" in names
    assert "f" not in names
    assert _fastload.undefined_symbols(_object_code(PRESENT)) == ["cos"]


def test_undefined_symbols_is_none_for_anything_but_elf64_le():
    assert _fastload.undefined_symbols(b"") is None
    assert _fastload.undefined_symbols(b"\xcf\xfa\xed\xfe" + b"\0" * 200) is None  # Mach-O
    assert _fastload.undefined_symbols(b"\x7fELF\x01\x01" + b"\0" * 200) is None  # ELF32


@pytest.mark.skipif(not ELF, reason="numba caches ELF objects only on 64-bit little-endian Linux")
def test_resolvable_refuses_an_object_with_an_unregistered_symbol():
    from numba.core.registry import cpu_target
    ctx = cpu_target.target_context
    payload = lambda obj: (("lib", "object", (obj, b"")),)  # noqa: E731
    assert _fastload._resolvable(payload(_object_code(PRESENT)), ctx)
    assert not _fastload._resolvable(payload(_object_code(MISSING)), ctx)
    assert not _fastload._resolvable((("lib", "bitcode", b""),), ctx)


def test_install_wraps_only_the_interpreter_dispatchers():
    from tapegrad._compiled import _interp, kernels
    assert "load_overload" in vars(_interp.reverse._cache)
    assert "load_overload" in vars(_interp.forward._cache)
    assert "load_overload" not in vars(kernels.vjp_sin._cache)
    assert _fastload.install(_interp) == 0  # idempotent


SCRIPT = r"""
import json, sys
import numpy as np
import tapegrad as tg
from tapegrad._compiled import _fastload
x = tg.tensor([0.3, -1.2, 2.0], dtype=tg.float64, requires_grad=True)
y = ((x * x + x.sin()).tanh() * x.exp()).sum()
y.backward()
after_backward = {"stats": dict(_fastload.STATS),
                  "arraymath": "numba.np.arraymath" in sys.modules,
                  "grad": x.grad.tolist()}
# replay on new leaf values: the forward dispatcher loads the same way
import tapegrad.func as tf
t = tf.make_tape(lambda v: (v.sin() * v).sum(), tg.ones(4, dtype=tg.float64))
xv = np.array([0.1, 0.2, 0.3, 0.4])
X = t.forward([xv])
(g,) = t.reverse(X, [np.array(1.0)])
# compiling something afterwards still works (numba refreshes its context itself)
import numba
@numba.njit
def poly(a):
    return np.sum(a * a) + np.sum(np.square(a))
print(json.dumps({"first": after_backward, "stats": dict(_fastload.STATS),
                  "replay": list(g), "poly": poly(np.arange(3.0))}))
"""


def _fresh(env_extra):
    env = dict(os.environ, PYTHONPATH=ROOT, **env_extra)
    out = subprocess.run([sys.executable, "-c", SCRIPT], capture_output=True, text=True,
                         env=env, timeout=600, cwd=ROOT)
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout.strip().splitlines()[-1])


def _expected_grad(v):
    u = v * v + np.sin(v)
    return (1 - np.tanh(u) ** 2) * (2 * v + np.cos(v)) * np.exp(v) + np.tanh(u) * np.exp(v)


@pytest.mark.parametrize("full", [False, True], ids=["light", "numba-loader"])
def test_fresh_process_loads_the_cached_interpreter(full):
    # make sure both dispatchers are in the on-disk cache (this process compiles if not)
    x = tg.tensor([0.5], dtype=tg.float64, requires_grad=True)
    (x.sin() * x).sum().backward()
    import tapegrad.func as tf
    tf.make_tape(lambda v: v.sin().sum(), tg.ones(2, dtype=tg.float64)).forward([np.ones(2)])

    r = _fresh({_fastload.ENV_DISABLE: "1"} if full else {_fastload.ENV_DISABLE: "0"})
    first = r["first"]
    v = np.array([0.3, -1.2, 2.0])
    np.testing.assert_allclose(first["grad"], _expected_grad(v), rtol=1e-12)
    xv = np.array([0.1, 0.2, 0.3, 0.4])
    np.testing.assert_allclose(r["replay"], np.cos(xv) * xv + np.sin(xv), rtol=1e-12)
    assert r["poly"] == pytest.approx(10.0)
    if full:
        assert first["stats"] == {"light": 0, "full": 1}
        assert first["arraymath"]  # numba's refresh imported its registries
        assert r["stats"] == {"light": 0, "full": 2}
    else:
        assert first["stats"] == {"light": 1, "full": 0}
        assert not first["arraymath"]  # the refresh (and scipy.linalg) was skipped
        assert r["stats"] == {"light": 2, "full": 0}
