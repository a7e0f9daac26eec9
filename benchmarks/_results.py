"""The one JSON schema of the benchmark scripts' results (described in benchmarks/README.md).

A script collects one row per (case, size, tool) and writes them with ``write``::

    from _results import Results
    res = Results("bench_eager", options=vars(args))      # the script's name, its options
    res.add("elementwise", "tapegrad", 1.2e-5, repeats=11, size=1000, samples=[...])
    res.add("elementwise", "torch", 2.9e-5, repeats=11, size=1000)
    res.write(args.json)            # default: benchmarks/results/bench_eager.json

``ratio`` is filled in by ``write`` on every peer row: the peer's median over tapegrad's
median for the same case and size (> 1: tapegrad is faster). ``load`` reads and checks a file;
``docs/gen_plots.py`` draws the docs' plots and tables from the files in benchmarks/results/.
No dependency beyond the standard library (torch / jax versions are read from ``sys.modules``
when the script imported them).
"""
import datetime
import json
import os
import platform
import subprocess
import sys

SCHEMA = "tapegrad-bench/1"
HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
RESULTS_DIR = os.path.join(HERE, "results")
TAPEGRAD = "tapegrad"
ROW_KEYS = ("case", "size", "tool", "median_s", "repeats", "ratio")
_PEER_MODULES = ("torch", "jax", "numba", "numpy", "dask")


def fmt_time(s):
    """Seconds as the tables print them: 1.234 s, 12.34 ms, 123.4 us ("-" for None)."""
    if s is None:
        return "-"
    if s >= 1.0:
        return "%.3f s" % s
    if s >= 1e-3:
        return "%.2f ms" % (s * 1e3)
    return "%.1f us" % (s * 1e6)


def default_path(bench):
    """Where a script writes by default: benchmarks/results/<bench>.json."""
    return os.path.join(RESULTS_DIR, bench + ".json")


def _cpu_model():
    try:
        with open("/proc/cpuinfo") as fh:
            for line in fh:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def machine():
    """The machine and the versions of the libraries the script imported."""
    info = {"cpu": _cpu_model(), "cores": os.cpu_count(), "platform": platform.platform(),
            "python": platform.python_version()}
    for name in _PEER_MODULES:
        mod = sys.modules.get(name)
        if mod is not None:
            info[name] = getattr(mod, "__version__", "?")
    return info


def git_commit(root=ROOT):
    """(short commit, whether tapegrad/ has uncommitted changes); ("", False) outside git."""
    try:
        commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=root,
                                capture_output=True, text=True, timeout=10).stdout.strip()
        dirty = bool(subprocess.run(["git", "status", "--porcelain", "--", "tapegrad"], cwd=root,
                                    capture_output=True, text=True, timeout=10).stdout.strip())
    except (OSError, subprocess.SubprocessError):
        return "", False
    return commit, dirty


def _ratios(rows):
    base = {(r["case"], r["size"]): r["median_s"] for r in rows if r["tool"] == TAPEGRAD}
    for r in rows:
        if r.get("ratio") is None and r["tool"] != TAPEGRAD:
            tg = base.get((r["case"], r["size"]))
            r["ratio"] = (r["median_s"] / tg) if (tg and r["median_s"]) else None
        r.setdefault("ratio", None)


def check(doc):
    """Raise ValueError unless ``doc`` follows the schema."""
    if not isinstance(doc, dict) or doc.get("schema") != SCHEMA:
        raise ValueError("not a %s document (schema=%r)"
                         % (SCHEMA, doc.get("schema") if isinstance(doc, dict) else None))
    for k in ("bench", "date", "commit", "machine", "results"):
        if k not in doc:
            raise ValueError("%s: missing %r" % (doc.get("bench"), k))
    for i, r in enumerate(doc["results"]):
        missing = [k for k in ROW_KEYS if k not in r]
        if missing:
            raise ValueError("%s: row %d lacks %s" % (doc["bench"], i, ", ".join(missing)))
        if not isinstance(r["case"], str) or not isinstance(r["tool"], str):
            raise ValueError("%s: row %d: case and tool are strings" % (doc["bench"], i))
        if r["median_s"] is not None and not (r["median_s"] >= 0):
            raise ValueError("%s: row %d: median_s must be seconds >= 0 or null" % (doc["bench"], i))
    return doc


class Results:
    """Rows of one run of one script, written by ``write`` in the schema."""

    def __init__(self, bench, options=None):
        self.bench = bench
        self.options = dict(options or {})
        self.rows = []
        self.detail = None

    def add(self, case, tool, median_s, repeats, size=None, ratio=None, **extra):
        """One measurement: ``median_s`` seconds per call (median over ``repeats``) of
        ``tool`` ("tapegrad" or a peer: "torch", "jax", "numba", "numpy"...) on ``case`` at
        ``size`` (an int: elements, points, parameters; or None). ``ratio`` is computed at
        ``write`` unless given; ``extra`` (samples, note...) is kept in the row."""
        row = {"case": str(case), "size": size, "tool": str(tool),
               "median_s": None if median_s is None else float(median_s),
               "repeats": int(repeats), "ratio": ratio}
        row.update(extra)
        self.rows.append(row)
        return row

    def write(self, path=None):
        """Write the file (default: benchmarks/results/<bench>.json); returns the document."""
        return write(path or default_path(self.bench), self.bench, self.rows, self.options,
                     self.detail)


def write(path, bench, rows, options=None, detail=None):
    """Write ``rows`` (dicts with case, size, tool, median_s, repeats; ratio optional) of script
    ``bench`` to ``path`` in the schema, with the machine, commit and date; returns the
    document. ``detail``: anything else the script keeps (free form)."""
    rows = [dict(r) for r in rows]
    _ratios(rows)
    commit, dirty = git_commit()
    doc = {"schema": SCHEMA, "bench": bench,
           "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
           "commit": commit, "dirty": dirty, "machine": machine(),
           "options": {k: v for k, v in (options or {}).items()
                       if k != "json" and isinstance(v, (str, int, float, bool, type(None)))},
           "results": rows}
    if detail is not None:
        doc["detail"] = detail
    check(doc)
    d = os.path.dirname(os.path.abspath(path))
    os.makedirs(d, exist_ok=True)
    with open(path, "w") as fh:
        json.dump(doc, fh, indent=1)
        fh.write("\n")
    return doc


def load(path):
    """Read and check one results file."""
    with open(path) as fh:
        return check(json.load(fh))


def load_all(directory=RESULTS_DIR):
    """{bench: document} for every *.json in ``directory`` (sorted by name)."""
    out = {}
    if os.path.isdir(directory):
        for name in sorted(os.listdir(directory)):
            if name.endswith(".json"):
                doc = load(os.path.join(directory, name))
                out[doc["bench"]] = doc
    return out
