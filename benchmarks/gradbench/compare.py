#!/usr/bin/env python3
"""tapegrad's GradBench tool against GradBench's PyTorch and JAX tools, on the same messages.

    python benchmarks/gradbench/compare.py --gradbench DIR [--preset sizes|large|quick|eager28]
        [--evals gmm,lse,...] [--tools tapegrad,pytorch,jax] [--rounds 3] [--min-runs 3]
        [--min-seconds 0.2] [--timeout 300] [--cpu 0] [--json out.json] [--markdown t.md]
        [--keep earlier.json]

The messages are GradBench's own: each eval's ``run.py`` main runs in this process with its
``SingleModuleValidatedEval`` replaced by a recorder, on the sizes of the preset (command-line
arguments of that eval). Every tool is a process of its own, started once and kept (one
thread: the environment of ``peer_runner.ONE_THREAD``; all pinned to the same CPU with
--cpu). Each evaluate message goes to the tools in turn, in ``--rounds`` rounds (the tools'
order rotating), so a burst of load from other processes hits every tool.

For each message and tool: the first run's time (the first call: recording and compilation for
tapegrad, tracing and compilation for JAX) and the median of the other runs over all rounds.
Ratios are peer / tapegrad (> 1: tapegrad faster). Outputs are checked two ways:
- GradBench's validator of the eval (``mismatch(expect)`` against GradBench's golden C++
  "manual" tool when it is built under DIR/tools/manual/bin, tolerance 1e-4), per tool;
- against each other: every number within 1e-6 of tapegrad's, relative to max(|a|+|b|, 1)
  (GradBench's own normalisation).

Tools: ``tapegrad`` (benchmarks/gradbench/tool.py), ``pytorch``, ``jax`` (GradBench's tools,
unchanged; JAX's runs synchronised, see peer_runner.py), ``jax-async`` (JAX's tool as GradBench
runs it: the timing holds only the dispatch), ``pytorch-on-tapegrad`` (GradBench's PyTorch tool
code with ``import torch`` resolved to tapegrad: eager tapegrad). Preset ``eager28`` compares
``pytorch-on-tapegrad`` with ``pytorch`` on the 28 cases of issue 28.
"""
import argparse
import contextlib
import io
import json
import math
import os
import select
import statistics
import subprocess
import sys
import time
import types

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path[:0] = [HERE, os.path.dirname(HERE)]
from peer_runner import ONE_THREAD  # noqa: E402
from _results import default_path, write  # noqa: E402

# Sizes, as each eval's command-line arguments (GradBench's defaults are much longer lists).
# ``sizes`` (the default): a small and a medium size of every eval, issue 28's 28 cases (the
# first 7 evals, as EAGER28 below) plus llsq and ode; ``large``: a longer sweep.
PRESETS = {
    "sizes": {
        "hello": [],
        "lse": ["-n", "2500", "40000"],
        "gmm": ["-d", "2", "10", "-k", "5", "25"],
        "kmeans": ["-k", "10", "100", "-n", "1000", "-d", "8"],
        "lstm": ["-l", "2", "4", "-c", "1024"],
        "ba": ["--min", "1", "--max", "1"],
        "ht": ["--min", "1", "--max", "2", "--model", "small"],
        "llsq": ["-n", "128", "1024"],
        "ode": ["-n", "1000", "10000", "-s", "1", "10"],
    },
    "large": {
        "hello": [],
        "lse": ["-n", "2500", "40000", "640000"],
        "gmm": ["-d", "2", "10", "20", "-k", "5", "25", "50"],
        "kmeans": ["-k", "10", "100", "-n", "1000", "10000", "-d", "8"],
        "lstm": ["-l", "2", "4", "-c", "1024"],
        "ba": ["--min", "1", "--max", "3"],
        "ht": ["--min", "1", "--max", "3", "--model", "small"],
        "llsq": ["-n", "128", "1024", "16392"],
        "ode": ["-n", "1000", "100000", "-s", "1", "10"],
    },
    "quick": {
        "hello": [],
        "lse": ["-n", "2500", "40000"],
        "gmm": ["-d", "2", "10", "-k", "5", "25"],
        "kmeans": ["-k", "10", "100", "-n", "1000", "-d", "8"],
        "lstm": ["-l", "2", "-c", "1024"],
        "ba": ["--min", "1", "--max", "1"],
        "ht": ["--min", "1", "--max", "1", "--model", "small"],
        "llsq": ["-n", "128", "1024"],
        "ode": ["-n", "1000", "-s", "1", "10"],
    },
}
# Issue 28's 28 cases: small and medium sizes of 7 evals, 2 functions each. ba's data files
# hold 31,843 observations and more, far too slow for GradBench's PyTorch tool (a Python loop
# with two backward passes per observation): its two sizes keep ba1's camera, point and
# feature with p = 200 and 2,000 observations (n, m scaled alike).
EAGER28 = {name: PRESETS["sizes"][name]
           for name in ("hello", "lse", "gmm", "kmeans", "lstm", "ba", "ht")}
# the messages kept of those the arguments generate (by description): gmm's (2, 5) and
# (10, 25) of its 4 pairs, ode's (1000, 1) and (10000, 10) of its 4
KEEP = {"gmm": {"2_5_1000", "10_25_1000"}, "ode": {"n=1000,s=1", "n=10000,s=10"}}
BA_EAGER_P = (200, 2000)
# ba in the other presets: ba1 reduced to 2,000 observations (a size GradBench's PyTorch tool
# finishes) before GradBench's own files (ba1: 31,843 observations)
BA_NATIVE_P = (2000,)

TOOL_ARGS = {
    "tapegrad": lambda gb: [sys.executable, os.path.join(HERE, "tool.py")],
    "pytorch": lambda gb: [sys.executable, os.path.join(HERE, "peer_runner.py"), "pytorch",
                           "--gradbench", gb],
    "jax": lambda gb: [sys.executable, os.path.join(HERE, "peer_runner.py"), "jax", "--sync",
                       "--gradbench", gb],
    "jax-async": lambda gb: [sys.executable, os.path.join(HERE, "peer_runner.py"), "jax",
                             "--gradbench", gb],
    "pytorch-on-tapegrad": lambda gb: [sys.executable, os.path.join(HERE, "peer_runner.py"),
                                       "pytorch-on-tapegrad", "--gradbench", gb],
}


# ----------------------------------------------------------------------------- messages
class _Recorder:
    """Stands in for GradBench's SingleModuleValidatedEval: keeps the evaluate messages."""
    current = None

    def __init__(self, *, module, validator):
        self.module, self.validator, self.messages = module, validator, []
        _Recorder.current = self

    def start(self, *, config=None):
        return types.SimpleNamespace(id=0, tool=None, config=None)

    def define(self):
        return types.SimpleNamespace(id=1, success=True, timings=None, error=None)

    def evaluate(self, *, function, input, description=None):
        self.messages.append({"function": function, "input": input,
                              "description": description or ""})
        out = None
        if self.module == "hello":                   # hello chains on the outputs
            out = input * input if function == "square" else 2.0 * input
        return types.SimpleNamespace(success=True, output=out, timings=None, error=None)


def eval_messages(gb, name, args):
    """(validator, messages) of GradBench's eval ``name`` run with command-line ``args``."""
    sys.path.insert(0, os.path.join(gb, "python", "gradbench"))
    import importlib
    mod = importlib.import_module("gradbench.evals.%s.run" % name)
    mod.SingleModuleValidatedEval = _Recorder
    old_argv, old_cwd = sys.argv, os.getcwd()
    try:
        sys.argv = ["run.py"] + list(args)
        os.chdir(gb)
        with contextlib.redirect_stdout(io.StringIO()):
            mod.main()
    finally:
        sys.argv = old_argv
        os.chdir(old_cwd)
    rec = _Recorder.current
    return rec.validator, rec.messages


def ba_reduced(msgs, ps):
    """ba1's messages with p observations (n cameras and m points scaled alike)."""
    out = []
    for p in ps:
        for m in msgs:
            inp = dict(m["input"])
            scale = inp["p"] / p
            inp.update(p=p, n=max(1, round(inp["n"] / scale)), m=max(1, round(inp["m"] / scale)))
            out.append(dict(m, input=inp, description="%s p=%d" % (m["description"].split("_")[0], p)))
    return out


def _hello_pairs(msgs):
    """hello's first and last (square, double) pairs, named "small" and "medium"."""
    msgs = msgs[:2] + msgs[-2:]
    for m, size in zip(msgs, ("small", "small", "medium", "medium")):
        m["description"] = size
    return msgs


def preset_messages(gb, name, preset):
    """(validator, messages) of eval ``name`` at the sizes of ``preset``."""
    validator, msgs = eval_messages(gb, name, (EAGER28 if preset == "eager28"
                                               else PRESETS[preset]).get(name, []))
    if name == "hello":
        msgs = _hello_pairs(msgs)
    elif name == "ba" and preset == "eager28":
        msgs = ba_reduced(msgs, BA_EAGER_P)
    elif name == "ba":
        msgs = ba_reduced([m for m in msgs if m["description"].startswith("ba1_")],
                          BA_NATIVE_P) + msgs
    elif name in KEEP and preset in ("sizes", "eager28"):
        msgs = [m for m in msgs if m["description"] in KEEP[name]]
    return validator, msgs


# ----------------------------------------------------------------------------- tools
class Tool:
    def __init__(self, name, gb, cpu, log):
        self.name, self.gb, self.cpu, self.log = name, gb, cpu, log
        self.proc = None
        self.next_id = 0
        self.defined = {}

    def start(self):
        env = dict(os.environ)
        env.update(ONE_THREAD)
        cpu = self.cpu
        pre = None if cpu is None else (lambda: os.sched_setaffinity(0, {cpu}))
        self.proc = subprocess.Popen(TOOL_ARGS[self.name](self.gb), stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, stderr=self.log, text=True,
                                     env=env, cwd=self.gb, preexec_fn=pre, bufsize=1)
        self.defined = {}
        self.request({"kind": "start"}, timeout=600)

    def stop(self):
        if self.proc is not None:
            try:
                self.proc.stdin.close()
                self.proc.wait(timeout=10)
            except Exception:
                self.proc.kill()
                self.proc.wait()
            self.proc = None

    def request(self, message, timeout):
        if self.proc is None:
            self.start()
        message = dict(message, id=self.next_id)
        self.next_id += 1
        self.proc.stdin.write(json.dumps(message) + "\n")
        self.proc.stdin.flush()
        deadline = time.monotonic() + timeout
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                self.proc.kill()
                self.proc.wait()
                self.proc = None
                return {"success": False, "error": "timeout (%g s)" % timeout, "timeout": True}
            r, _, _ = select.select([self.proc.stdout], [], [], min(left, 1.0))
            if r:
                line = self.proc.stdout.readline()
                if not line:
                    code = self.proc.wait()
                    self.proc = None
                    return {"success": False, "error": "the tool exited (%s)" % code}
                resp = json.loads(line)
                if resp.get("id") == message["id"]:
                    return resp

    def define(self, module, timeout):
        if self.proc is None or module not in self.defined:
            self.defined[module] = self.request({"kind": "define", "module": module}, timeout)
        return self.defined[module].get("success", False)


# ----------------------------------------------------------------------------- checks
def _close(a, b, tol, path, out):
    if isinstance(a, dict) and isinstance(b, dict):
        if set(a) != set(b):
            out.append("%s: keys %s != %s" % (path, sorted(a), sorted(b)))
            return
        for k in a:
            _close(a[k], b[k], tol, "%s.%s" % (path, k), out)
    elif isinstance(a, list) and isinstance(b, list):
        if len(a) != len(b):
            out.append("%s: length %d != %d" % (path, len(a), len(b)))
            return
        for i, (x, y) in enumerate(zip(a, b)):
            _close(x, y, tol, "%s[%d]" % (path, i), out)
            if len(out) > 20:
                return
    elif isinstance(a, (int, float)) and isinstance(b, (int, float)):
        if not (abs(a - b) <= tol * max(abs(a) + abs(b), 1.0)) and not (a == b):
            out.append("%s: %r != %r" % (path, a, b))
    elif a != b:
        out.append("%s: %r != %r" % (path, a, b))


def agree(a, b, tol=1e-6):
    """Mismatches between two JSON outputs (empty: they agree within tol)."""
    out = []
    _close(a, b, tol, "", out)
    return out


def validate(validator, function, inp, output, gb):
    if validator is None:
        return None
    old = os.getcwd()
    try:
        os.chdir(gb)
        with contextlib.redirect_stdout(io.StringIO()):
            a = validator(function, inp, output)
        return bool(a.valid), a.error
    except Exception as e:                 # the golden tool is not built, ...
        return None, "%s: %s" % (type(e).__name__, e)
    finally:
        os.chdir(old)


def golden_available(gb):
    return os.path.isdir(os.path.join(gb, "tools", "manual", "bin"))


# ----------------------------------------------------------------------------- run
def fmt_ms(ns):
    if ns is None:
        return "-"
    ms = ns / 1e6
    return "%.3g" % ms if ms < 100 else "%.0f" % ms


def run(args):
    gb = os.path.abspath(args.gradbench)
    tools = args.tools.split(",")
    evals = args.evals.split(",") if args.evals else list(
        EAGER28 if args.preset == "eager28" else PRESETS[args.preset])
    log = open(args.log, "a") if args.log else subprocess.DEVNULL
    procs = {t: Tool(t, gb, args.cpu, log) for t in tools}
    use_golden = golden_available(gb) and not args.no_validate
    results = []
    timed_out = set()                   # (tool, eval): a timeout skips the eval's larger sizes
    print("tools: %s; rounds %d; min_runs %d, min_seconds %g; cpu %s; golden validator: %s"
          % (", ".join(tools), args.rounds, args.min_runs, args.min_seconds, args.cpu,
             "yes" if use_golden else "no"), flush=True)
    try:
        for name in evals:
            validator, msgs = preset_messages(gb, name, args.preset)
            for msg in msgs:
                inp = msg["input"]
                if isinstance(inp, dict) and "min_runs" in inp:
                    inp = dict(inp, min_runs=args.min_runs, min_seconds=args.min_seconds)
                row = {"eval": name, "function": msg["function"],
                       "description": msg["description"], "tools": {}}
                for r in range(args.rounds):
                    order = tools[r % len(tools):] + tools[:r % len(tools)]
                    for t in order:
                        tr = row["tools"].setdefault(t, {"runs": [], "first": None})
                        if tr.get("skip"):
                            continue
                        if (t, name) in timed_out:
                            tr["skip"] = "timeout at a smaller size"
                            continue
                        tool = procs[t]
                        if not tool.define(name, args.timeout):
                            tr["skip"] = "not implemented"
                            continue
                        resp = tool.request({"kind": "evaluate", "module": name,
                                             "function": msg["function"], "input": inp},
                                            args.timeout)
                        if not resp.get("success"):
                            tr["skip"] = (resp.get("error") or "failed").strip().splitlines()[-1][:120]
                            if resp.get("timeout"):
                                timed_out.add((t, name))
                            continue
                        ns = [x["nanoseconds"] for x in resp.get("timings", [])
                              if x["name"] == "evaluate"]
                        if tr["first"] is None:
                            tr["first"] = ns[0]
                            tr["runs"] += ns[1:]
                            tr["output"] = resp.get("output")
                        else:
                            tr["runs"] += ns
                for t, tr in row["tools"].items():
                    if tr.get("skip") or "output" not in tr:
                        continue
                    tr["median"] = statistics.median(tr["runs"]) if tr["runs"] else tr["first"]
                    if use_golden:
                        ok, err = validate(validator, msg["function"], msg["input"], tr["output"], gb)
                        tr["valid"] = ok
                        if ok is False:
                            tr["valid_error"] = (err or "")[:400]
                ref = row["tools"].get(tools[0], {})
                for t, tr in row["tools"].items():
                    if t != tools[0] and "output" in tr and "output" in ref:
                        tr["agree"] = agree(ref["output"], tr["output"])[:5]
                for tr in row["tools"].values():
                    tr.pop("output", None)
                results.append(row)
                print_row(row, tools, flush=True)
    finally:
        for p in procs.values():
            p.stop()
    return results


def _status(tr, first_tool):
    marks = ""
    if tr.get("valid") is False:
        marks += " INVALID"
    if tr.get("agree"):
        marks += " DIFFERS"
    return marks


def print_row(row, tools, flush=False):
    base = row["tools"].get(tools[0], {})
    cells = []
    for t in tools:
        tr = row["tools"].get(t, {})
        if tr.get("skip"):
            cells.append("%s: %s" % (t, tr["skip"][:40]))
            continue
        if "median" not in tr:
            continue
        s = "%s %s ms (first %s)" % (t, fmt_ms(tr["median"]), fmt_ms(tr["first"]))
        if t != tools[0] and base.get("median"):
            s += " %.2fx" % (tr["median"] / base["median"])
        cells.append(s + _status(tr, tools[0]))
    print("%-7s %-9s %-28s | %s" % (row["eval"], row["function"], row["description"][:28],
                                    " | ".join(cells)), flush=flush)


# issue 28's goals: peer median / tapegrad median at least this
GOALS = {("tapegrad", "jax"): 1.0, ("tapegrad", "pytorch"): 5.0,
         ("pytorch-on-tapegrad", "pytorch"): 1.0}


def summary(results, tools):
    base = tools[0]
    print("\nSummary (ratio = peer median / %s median; > 1: %s faster)" % (base, base))
    for t in tools[1:]:
        ratios = [r["tools"][t]["median"] / r["tools"][base]["median"] for r in results
                  if r["tools"].get(t, {}).get("median") and r["tools"].get(base, {}).get("median")]
        if not ratios:
            continue
        geo = math.exp(sum(math.log(x) for x in ratios) / len(ratios))
        print("  %-20s %2d cases: geometric mean %.2fx, min %.2fx, max %.2fx, %d of %d >= 1"
              % (t, len(ratios), geo, min(ratios), max(ratios), sum(x >= 1 for x in ratios),
                 len(ratios)))
        goal = GOALS.get((tools[0], t))
        if goal:
            miss = ["%s %s %s %.2fx" % (r["eval"], r["function"], r["description"],
                                         r["tools"][t]["median"] / r["tools"][base]["median"])
                    for r in results if r["tools"].get(t, {}).get("median")
                    and r["tools"].get(base, {}).get("median")
                    and r["tools"][t]["median"] / r["tools"][base]["median"] < goal]
            print("  %-20s goal >= %gx: met in %d of %d%s" % ("", goal, len(ratios) - len(miss),
                  len(ratios), "; missed: " + ", ".join(miss) if miss else ""))
    bad = [(r["eval"], r["function"], r["description"], t) for r in results
           for t, tr in r["tools"].items() if tr.get("valid") is False or tr.get("agree")]
    print("  outputs: %s" % ("all agree" if not bad else "%d disagreements: %s" % (len(bad), bad)))
    for t in tools:
        v = [r["tools"][t].get("valid") for r in results if "median" in r["tools"].get(t, {})]
        if v:
            print("  %-20s GradBench's validator: %d valid, %d invalid, %d not checked"
                  % (t, v.count(True), v.count(False), v.count(None)))


def markdown(results, tools):
    base = tools[0]
    head = "| eval | function | size | " + " | ".join(
        "%s ms (first)" % t + ("" if t == base else " | ratio") for t in tools) + " |"
    lines = [head, "|" + " --- |" * (3 + len(tools) * 2 - 1)]
    for r in results:
        cells = [r["eval"], r["function"], r["description"]]
        b = r["tools"].get(base, {})
        for t in tools:
            tr = r["tools"].get(t, {})
            if "median" in tr:
                cells.append("%s (%s)%s" % (fmt_ms(tr["median"]), fmt_ms(tr["first"]),
                                            _status(tr, base)))
            else:
                cells.append(tr.get("skip", "-")[:30])
            if t != base:
                cells.append("%.2fx" % (tr["median"] / b["median"])
                             if "median" in tr and b.get("median") else "-")
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


# the tools' names in benchmarks/results/ (the tool whose ratios are taken is "tapegrad")
RESULT_TOOL = {"tapegrad": "tapegrad", "pytorch-on-tapegrad": "tapegrad", "pytorch": "torch",
               "jax": "jax", "jax-async": "jax-async"}


def bench_name(preset):
    return "gradbench" if preset == "sizes" else "gradbench_" + preset


MAX_SAMPLES = 100


def compact(results):
    """``results`` for a file: a tool's runs kept when there are at most MAX_SAMPLES of them,
    else their count and 10th / 90th percentiles (hello's and lse's runs of 10-100 us number
    thousands with --min-seconds)."""
    out = []
    for r in results:
        r = dict(r, tools={t: dict(tr) for t, tr in r["tools"].items()})
        for tr in r["tools"].values():
            runs = tr.get("runs") or []
            tr.setdefault("n_runs", len(runs))
            if len(runs) > MAX_SAMPLES:
                q = statistics.quantiles(runs, n=10)
                tr["p10"], tr["p90"], tr["runs"] = q[0], q[-1], []
        out.append(r)
    return out


def result_rows(results, tools):
    """The rows of benchmarks/results/ (``_results``' schema): one per message and tool,
    the case "eval function size"; ``first_s`` the first call, ``samples`` the other runs (or
    ``p10_s`` / ``p90_s``: see ``compact``)."""
    rows = []
    for r in compact(results):
        case = "%s %s %s" % (r["eval"], r["function"], r["description"])
        for t in tools:
            tr = r["tools"].get(t, {})
            row = {"case": case, "size": None, "tool": RESULT_TOOL.get(t, t),
                   "median_s": tr["median"] / 1e9 if "median" in tr else None,
                   "repeats": tr.get("n_runs", 0) or int("median" in tr), "ratio": None}
            if tr.get("first") is not None:
                row["first_s"] = tr["first"] / 1e9
                if tr.get("runs"):
                    row["samples"] = [x / 1e9 for x in tr["runs"]]
                if "p10" in tr:
                    row["p10_s"], row["p90_s"] = tr["p10"] / 1e9, tr["p90"] / 1e9
            for k in ("skip", "valid", "valid_error"):
                if tr.get(k) is not None:
                    row[k] = tr[k]
            if t != tools[0] and "agree" in tr:
                row["agrees"] = not tr["agree"]
            rows.append(row)
    return rows


def load_average():
    try:
        return list(os.getloadavg())
    except OSError:
        return None


def kept(path, results, tools, load):
    """``results`` with the earlier run's messages (file ``path``) of the evals not in them,
    in the presets' order of the evals; the load averages of both runs."""
    with open(path) as f:
        doc = json.load(f)
    if doc["detail"]["tools"] != tools:
        raise SystemExit("--keep: %s ran the tools %s, not %s" % (path, doc["detail"]["tools"],
                                                                  tools))
    now = {r["eval"] for r in results}
    merged = [r for r in doc["detail"]["messages"] if r["eval"] not in now] + results
    order = {e: i for i, e in enumerate(PRESETS["large"])}
    merged.sort(key=lambda r: order.get(r["eval"], len(order)))     # stable: sizes in order
    return merged, load + doc["detail"]["load_average"][:2]


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--gradbench", required=True, help="an extracted GradBench checkout")
    parser.add_argument("--preset", default="sizes", choices=("sizes", "large", "quick", "eager28"))
    parser.add_argument("--evals", default="")
    parser.add_argument("--tools", default=None)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--min-runs", type=int, default=3)
    parser.add_argument("--min-seconds", type=float, default=0.2)
    parser.add_argument("--timeout", type=float, default=600)
    parser.add_argument("--cpu", type=int, default=None, help="pin every tool to this CPU")
    parser.add_argument("--no-validate", action="store_true")
    parser.add_argument("--json", default=None,
                        help="the results in benchmarks/_results.py's schema (default: "
                        "benchmarks/results/gradbench[_PRESET].json; '' for none)")
    parser.add_argument("--markdown", default=None)
    parser.add_argument("--log", default=None, help="append the tools' stderr here")
    parser.add_argument("--keep", default=None,
                        help="an earlier run's results file (--json): its messages of the "
                        "evals not run now are kept (same tools), to rerun some evals only")
    args = parser.parse_args(argv)
    if args.tools is None:
        args.tools = ("pytorch-on-tapegrad,pytorch" if args.preset == "eager28"
                      else "tapegrad,jax,pytorch")
    tools = args.tools.split(",")
    load = [load_average()]
    results = run(args)
    load.append(load_average())
    if args.keep:
        results, load = kept(args.keep, results, tools, load)
    summary(results, tools)
    print("  load average (1, 5, 15 min) at the start %s, at the end %s" % tuple(load[:2])
          + ("; the kept run's %s, %s" % tuple(load[2:]) if len(load) > 2 else ""))
    md = markdown(results, tools)
    if args.markdown:
        with open(args.markdown, "w") as f:
            f.write(md + "\n")
    path = default_path(bench_name(args.preset)) if args.json is None else args.json
    if path:
        opts = dict(vars(args), load_start=str(load[0]), load_end=str(load[1]))
        write(path, bench_name(args.preset), result_rows(results, tools), opts,
              detail={"load_average": load, "tools": tools, "messages": compact(results)})


if __name__ == "__main__":
    main()
