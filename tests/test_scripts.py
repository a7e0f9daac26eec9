"""Existing PyTorch scripts run unchanged under tapegrad and print what PyTorch prints.

Each ``tests/scripts/<name>.py`` is an ordinary PyTorch autograd script (``import torch``,
``import torch.nn.functional as F``, ``from torch.autograd import Function`` ...; data from
numpy with fixed seeds). The test runs it in a subprocess with a generated ``torch`` package
first on ``PYTHONPATH`` that makes ``torch`` and every ``torch.<sub>`` module resolve to
tapegrad's, and compares its stdout line by line with ``tests/scripts/expected/<name>.out``,
recorded from real PyTorch 2.13: the text between numbers must be identical, numbers must agree
within rtol 1e-4 / atol 1e-5, and memory addresses (``0x7f...``) are masked. This needs no
torch. When torch is installed, each script also runs on real torch and must reproduce its
expected file, so a script edited without re-recording is caught.

    python tests/test_scripts.py [NAME ...]            # run under tapegrad, show differences
    python tests/test_scripts.py --record [NAME ...]   # (re)write expected/ from real torch
"""
import atexit
import json
import math
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
SCRIPTS = os.path.join(HERE, "scripts")
EXPECTED = os.path.join(SCRIPTS, "expected")
NAMES = sorted(f[:-3] for f in os.listdir(SCRIPTS) if f.endswith(".py") and not f.startswith("_"))
RTOL, ATOL = 1e-4, 1e-5
TIMEOUT = 900  # seconds; the first script to use a Numba kernel compiles it

# scripts that fail because of a tapegrad bug: name -> reason (strict xfail: remove when fixed)
XFAIL = {}

# <shim>/torch/__init__.py: `torch` *is* tapegrad, and `torch.<sub>` is the module tapegrad.<sub>
# (the same module object, so classes and state are shared).
SHIM = r'''
import importlib, importlib.abc, importlib.machinery, sys
import tapegrad


class _Alias(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    def find_spec(self, fullname, path=None, target=None):
        if not fullname.startswith("torch."):
            return None
        name = "tapegrad." + fullname[len("torch."):]
        try:
            mod = importlib.import_module(name)
        except ModuleNotFoundError as exc:
            if not (name + ".").startswith("%s." % exc.name):
                raise  # a dependency missing inside tapegrad: surface it
            return None  # tapegrad has no such module: No module named 'torch.<sub>'
        spec = importlib.machinery.ModuleSpec(fullname, self, is_package=hasattr(mod, "__path__"))
        spec.alias_of, spec.orig_spec = mod, mod.__spec__
        return spec

    def create_module(self, spec):
        return spec.alias_of

    def exec_module(self, module):
        module.__spec__ = module.__spec__.orig_spec  # importlib stamped the alias spec on it


sys.meta_path.insert(0, _Alias())
sys.modules["torch"] = tapegrad
'''

NUM_RE = re.compile(r"[-+]?(?:\d+\.\d*|\.\d+|\d+)(?:[eE][-+]?\d+)?|(?<![A-Za-z_])[-+]?inf\b|\bnan\b")
ADDR_RE = re.compile(r"0x[0-9a-fA-F]+")


def mask(text):
    return ADDR_RE.sub("0x...", text)


def _close(e, g):
    if e == g:
        return True
    e, g = float(e), float(g)
    if math.isnan(e) or math.isnan(g):
        return math.isnan(e) and math.isnan(g)
    if math.isinf(e) or math.isinf(g):
        return e == g
    return abs(e - g) <= ATOL + RTOL * abs(e)


def lines_match(exp, got):
    if exp == got:
        return True
    e_nums, g_nums = NUM_RE.findall(exp), NUM_RE.findall(got)
    return (NUM_RE.split(exp) == NUM_RE.split(got) and len(e_nums) == len(g_nums)
            and all(_close(e, g) for e, g in zip(e_nums, g_nums)))


def differences(expected, got, limit=5):
    """'' when the outputs match, else a report of the first differing lines."""
    e_lines, g_lines = expected.splitlines(), got.splitlines()
    out = []
    for i, (e, g) in enumerate(zip(e_lines, g_lines)):
        if not lines_match(e, g):
            out.append("line %d:\n  expected: %s\n  got:      %s" % (i + 1, e, g))
            if len(out) == limit:
                out.append("...")
                break
    if len(e_lines) != len(g_lines):
        out.append("line count: expected %d, got %d" % (len(e_lines), len(g_lines)))
        n = min(len(e_lines), len(g_lines))
        extra = e_lines[n:n + 3] if len(e_lines) > n else g_lines[n:n + 3]
        out.append("  first unmatched lines (%s): %s" % (
            "expected" if len(e_lines) > n else "got", extra))
    return "\n".join(out)


_shim_dir = None


def _shim():
    global _shim_dir
    if _shim_dir is None:
        _shim_dir = tempfile.mkdtemp(prefix="tapegrad-torch-shim-")
        atexit.register(shutil.rmtree, _shim_dir, ignore_errors=True)
        os.makedirs(os.path.join(_shim_dir, "torch"))
        with open(os.path.join(_shim_dir, "torch", "__init__.py"), "w") as fh:
            fh.write(SHIM)
    return _shim_dir


def run_script(name, impl="tapegrad"):
    """Run tests/scripts/<name>.py with impl ('tapegrad' through the shim, or 'torch');
    returns (returncode, masked stdout, stderr, seconds)."""
    if impl == "torch" and hasattr(os, "fork"):
        start = time.time()
        code, out, err = _torch_run(name)
        return code, mask(out), err, time.time() - start
    env = dict(os.environ, PYTHONHASHSEED="0", OMP_NUM_THREADS="1", MKL_NUM_THREADS="1",
               PYTHONIOENCODING="utf-8")
    path = [env["PYTHONPATH"]] if env.get("PYTHONPATH") else []
    if impl == "tapegrad":  # the shim, then this checkout's tapegrad (not an installed copy)
        path = [_shim(), ROOT] + path
    env["PYTHONPATH"] = os.pathsep.join(path)
    if not path:
        del env["PYTHONPATH"]
    start = time.time()
    proc = subprocess.run([sys.executable, os.path.join(SCRIPTS, name + ".py")], env=env,
                          cwd=tempfile.gettempdir(), capture_output=True, text=True,
                          timeout=TIMEOUT)
    return proc.returncode, mask(proc.stdout), proc.stderr, time.time() - start


# Real torch runs the scripts from one server process that imports torch once and forks a
# child per script (torch's import is ~2 s of CPU, more than most scripts): the child starts
# from the freshly imported state, as a new process would, runs the script as __main__ in the
# scripts' environment, and its stdout/stderr go to files the test reads.
SERVER = r'''
import json, os, runpy, sys, tempfile, traceback
import torch  # noqa: F401  (imported once, before any fork)
for line in sys.stdin:
    path, out, err = json.loads(line)
    pid = os.fork()
    if pid == 0:
        code = 0
        fo, fe = open(out, "w", encoding="utf-8"), open(err, "w", encoding="utf-8")
        os.dup2(fo.fileno(), 1)
        os.dup2(fe.fileno(), 2)
        sys.stdout = open(1, "w", encoding="utf-8", closefd=False)
        sys.stderr = open(2, "w", encoding="utf-8", closefd=False)
        sys.argv = [path]
        sys.path[0] = os.path.dirname(path)
        try:
            runpy.run_path(path, run_name="__main__")
        except SystemExit as exc:
            code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
        except BaseException:
            traceback.print_exc()
            code = 1
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(code)
    _, status = os.waitpid(pid, 0)
    sys.__stdout__.write(json.dumps(os.waitstatus_to_exitcode(status)) + "\n")
    sys.__stdout__.flush()
'''

_server = None


def _torch_run(name):
    """(returncode, stdout, stderr) of the script run by real torch in a forked child."""
    global _server
    if _server is None or _server.poll() is not None:
        env = dict(os.environ, PYTHONHASHSEED="0", OMP_NUM_THREADS="1", MKL_NUM_THREADS="1",
                   PYTHONIOENCODING="utf-8")
        _server = subprocess.Popen([sys.executable, "-c", SERVER], env=env,
                                   cwd=tempfile.gettempdir(), stdin=subprocess.PIPE,
                                   stdout=subprocess.PIPE, text=True)
        atexit.register(_server.kill)
    with tempfile.TemporaryDirectory() as d:
        out, err = os.path.join(d, "out"), os.path.join(d, "err")
        _server.stdin.write(json.dumps([os.path.join(SCRIPTS, name + ".py"), out, err]) + "\n")
        _server.stdin.flush()
        code = json.loads(_server.stdout.readline())
        with open(out, encoding="utf-8") as fo, open(err, encoding="utf-8") as fe:
            return code, fo.read(), fe.read()


def expected_output(name):
    with open(os.path.join(EXPECTED, name + ".out"), encoding="utf-8") as fh:
        return fh.read()


def check(name, impl):
    """Assert that the script's output under impl matches expected/<name>.out."""
    code, out, err, _ = run_script(name, impl)
    what = "%s.py under %s" % (name, impl)
    if code != 0:
        tail = "\n".join(err.strip().splitlines()[-12:])
        pytest.fail("%s exited with %d\n%s" % (what, code, tail), pytrace=False)
    diff = differences(expected_output(name), out)
    if diff:
        hint = ("expected/%s.out is stale: re-record it with `python tests/test_scripts.py "
                "--record %s`\n" % (name, name)) if impl == "torch" else ""
        pytest.fail("%s does not print what PyTorch 2.13 printed (expected/%s.out)\n%s%s"
                    % (what, name, hint, diff), pytrace=False)


def _params():
    return [pytest.param(n, marks=pytest.mark.xfail(reason=XFAIL[n], strict=True))
            if n in XFAIL else n for n in NAMES]


@pytest.mark.parametrize("name", _params())
def test_script_matches_torch_output(name):
    check(name, "tapegrad")


@pytest.mark.parametrize("name", NAMES)
def test_expected_output_is_current(name):
    try:
        import torch  # noqa: F401 - only whether it is there
    except ImportError:
        pytest.skip("torch is not installed")
    check(name, "torch")


def test_every_script_has_expected_output():
    missing = [n for n in NAMES if not os.path.exists(os.path.join(EXPECTED, n + ".out"))]
    stale = sorted(set(f[:-4] for f in os.listdir(EXPECTED)) - set(NAMES))
    assert not missing and not stale, "missing: %s, without a script: %s" % (missing, stale)


def test_comparison_catches_differences():
    assert lines_match("loss 0.123456 tensor([1.0000, 2.0000])", "loss 0.123457 tensor([1.0000, 2.0000])")
    assert not lines_match("loss 0.1234", "loss 0.1236")            # beyond rtol
    assert not lines_match("tensor([1., 2.])", "tensor([1., 2.], grad_fn=<AddBackward0>)")
    assert not lines_match("torch.float32", "torch.float64")
    assert not lines_match("nan", "0.0") and lines_match("-inf nan", "-inf nan")
    assert mask("<AddBackward0 object at 0x7f3a2b>") == mask("<AddBackward0 object at 0x55d1>")
    assert differences("a 1\nb 2\n", "a 1\n") != ""


def _main(argv):
    record = "--record" in argv
    names = [a for a in argv if not a.startswith("--")] or NAMES
    failed = 0
    for name in names:
        code, out, err, secs = run_script(name, "torch" if record else "tapegrad")
        if code != 0:
            status = "exit %d\n%s" % (code, "\n".join(err.strip().splitlines()[-8:]))
        elif record:
            with open(os.path.join(EXPECTED, name + ".out"), "w", encoding="utf-8") as fh:
                fh.write(out)
            status = "recorded"
        else:
            status = differences(expected_output(name), out) or "ok"
        failed += status not in ("ok", "recorded")
        print("%-28s %5.1fs %s" % (name, secs, status), flush=True)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(_main(sys.argv[1:]))
