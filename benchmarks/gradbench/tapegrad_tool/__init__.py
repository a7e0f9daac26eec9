"""A native GradBench tool for tapegrad (issue 28).

It speaks GradBench's tool protocol on stdin/stdout the way GradBench's own Python tools do
(``python/gradbench/gradbench/tools/pytorch/run.py`` and ``wrap.py`` in GradBench): one JSON
message per line in, one JSON response per line out, each carrying the message's ``id``.

- ``start``: ``{"id", "tool": "tapegrad", "config": {...}}``;
- ``define``: imports the eval's module; ``{"id", "success": true}``, or ``false`` and an
  ``error`` for an eval this tool does not implement;
- ``evaluate``: prepares the input (untimed), runs the function at least ``min_runs`` times and
  until ``min_seconds`` have accumulated (inputs that extend GradBench's ``Runs``), one
  ``{"name": "evaluate", "nanoseconds": ...}`` timing per run, then converts the last result to
  JSON (untimed). An exception becomes ``{"success": false, "error": traceback}``.
- any other kind (``analysis``, ...): ``{"id"}``.

The functions are written the way a tapegrad user should write them: ``tapegrad.func``
transforms, built once per module, record on their first call for an input signature and
replay compiled afterwards. The first timing of a message therefore holds the recording (and
any compilation), as the first timing of GradBench's JAX tool holds ``jax.jit``'s tracing and
compilation.
"""
import importlib
import json
import sys
import time
import traceback

TOOL = "tapegrad"
# GradBench's evals that have a Python tool (PyTorch: hello lse gmm kmeans lstm ba ht; JAX:
# hello lse gmm kmeans llsq ode).
EVALS = ("hello", "lse", "gmm", "kmeans", "lstm", "ba", "ht", "llsq", "ode")


class Function:
    """One GradBench function of an eval: ``prepare(input) -> x`` (untimed), ``compute(x) ->
    result`` (timed, once per run), ``output(result) -> JSON value`` (untimed). ``runs``:
    whether the input carries ``min_runs`` / ``min_seconds`` (hello's inputs are bare
    numbers, evaluated once, as GradBench's ``wrap.function``)."""

    def __init__(self, compute, prepare=None, output=None, runs=True):
        self.compute = compute
        self.prepare = prepare if prepare is not None else (lambda x: x)
        self.output = output if output is not None else (lambda y: y)
        self.runs = runs

    def evaluate(self, raw, clock=time.perf_counter_ns):
        if self.runs:
            min_runs, min_seconds = raw["min_runs"], raw["min_seconds"]
        else:
            min_runs, min_seconds = 1, 0
        x = self.prepare(raw)
        timings = []
        elapsed = 0.0
        while len(timings) < min_runs or elapsed < min_seconds:
            start = clock()
            result = self.compute(x)
            end = clock()
            timings.append({"name": "evaluate", "nanoseconds": end - start})
            elapsed += (end - start) / 1e9
        return {"success": True, "output": self.output(result), "timings": timings}


def module(name):
    """The module implementing eval ``name`` (ImportError for any other name)."""
    if name not in EVALS:
        raise ImportError("the tapegrad tool does not implement the eval %r (it implements %s)"
                          % (name, ", ".join(EVALS)))
    return importlib.import_module("%s.%s" % (__name__, name))


def config():
    import numpy
    import tapegrad
    from . import _threads
    return {"tapegrad": getattr(tapegrad, "__version__", None), "numpy": numpy.__version__,
            "threads": _threads.describe()}


def respond(message):
    """The response (a dict) to one protocol message."""
    kind = message.get("kind")
    response = {"id": message["id"]}
    if kind == "start":
        response["tool"] = TOOL
        response["config"] = config()
    elif kind == "define":
        try:
            module(message["module"])
            response["success"] = True
        except Exception as e:
            response["success"] = False
            response["error"] = "".join(traceback.format_exception(e))
    elif kind == "evaluate":
        try:
            fn = module(message["module"]).FUNCTIONS[message["function"]]
            response.update(fn.evaluate(message["input"]))
        except Exception as e:
            response["success"] = False
            response["error"] = "".join(traceback.format_exception(e))
    return response


def serve(lines=sys.stdin, out=sys.stdout):
    """Answer each message line of ``lines`` on ``out`` (flushed per response)."""
    for line in lines:
        if not line.strip():
            continue
        out.write(json.dumps(respond(json.loads(line))) + "\n")
        out.flush()
