"""The benchmarks page's plots and tables, drawn from the benchmark scripts' JSON results
(benchmarks/results/*.json, the schema of benchmarks/README.md) with matplotlib.

    python docs/gen_plots.py DIR       # writes DIR/<bench>.png for every results file

The site build (``docs/hooks.py``) calls ``plots()`` and ``table()``: the PNGs become
``img/bench/<bench>.png`` in the site and ``<!-- bench: NAME -->`` markers on the benchmarks
page become that run's plot and table. Nothing here is typed in by hand: rerun a benchmark
script and rebuild the site.
"""
import io
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
RESULTS = os.path.join(ROOT, "benchmarks", "results")
sys.path.insert(0, os.path.join(ROOT, "benchmarks"))

from _results import TAPEGRAD, fmt_time as _fmt_time, load_all  # noqa: E402


def _size(v):
    return "-" if v is None else ("{:,}".format(v) if isinstance(v, int) else str(v))


def _series(doc):
    """{(case, peer): [(size, ratio)]} of the peer rows that have a ratio."""
    out = {}
    for r in doc["results"]:
        if r["tool"] != TAPEGRAD and r.get("ratio"):
            out.setdefault((r["case"], r["tool"]), []).append((r["size"], r["ratio"]))
    return out


def plot(doc):
    """PNG bytes: the peers' time over tapegrad's per case (> 1: tapegrad faster), as lines
    over the size when a case was run at several sizes, else as bars."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    series = _series(doc)
    lines = {k: v for k, v in series.items() if len(v) >= 3 and all(s is not None for s, _ in v)}
    bars = [(k, r) for k, v in series.items() if k not in lines for _, r in v]
    fig, ax = plt.subplots(figsize=(7.5, 0.9 + 0.42 * max(len(bars), 1)) if not lines
                           else (7.5, 4.2), dpi=100)
    if lines:
        for (case, peer), pts in lines.items():
            pts = sorted(pts)
            ax.plot([p[0] for p in pts], [p[1] for p in pts], marker="o",
                    label="%s (%s)" % (case, peer))
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlabel("size (elements)")
        ax.set_ylabel("peer time / tapegrad time")
        ax.axhline(1.0, color="grey", lw=1, ls="--")
        ax.legend(fontsize=8)
    else:
        labels = ["%s\nvs %s" % (case, peer) for (case, peer), _ in bars]
        vals = [r for _, r in bars]
        ys = range(len(bars))
        ax.barh(list(ys), vals, color=["tab:green" if v >= 1 else "tab:red" for v in vals])
        ax.set_yticks(list(ys))
        ax.set_yticklabels(labels, fontsize=8)
        ax.invert_yaxis()
        if vals and max(vals) / min(vals) > 20:        # ratios over orders of magnitude
            ax.set_xscale("log")
        else:
            ax.set_xlim(0, max(vals + [1.0]) * 1.15)
        ax.axvline(1.0, color="grey", lw=1, ls="--")
        ax.set_xlabel("peer time / tapegrad time (> 1: tapegrad faster)")
        for y, v in zip(ys, vals):
            ax.text(v, y, " %.2fx" % v, va="center", fontsize=8)
    ax.set_title("%s (%s, %s)" % (doc["bench"], doc["date"][:10], doc["commit"] or "?"),
                 fontsize=10)
    fig.tight_layout()
    buf = io.BytesIO()
    fig.savefig(buf, format="png")
    plt.close(fig)
    return buf.getvalue()


def table(doc):
    """Markdown: the run's metadata and one row per case, size and peer."""
    m = doc["machine"]
    opts = ", ".join("%s=%s" % kv for kv in sorted(doc.get("options", {}).items())
                     if kv[1] not in (None, False, ""))
    head = ("`%s`, %s, commit `%s`%s; %s, %s cores; python %s%s%s." % (
        doc["bench"], doc["date"], doc["commit"] or "?", " (modified)" if doc.get("dirty") else "",
        m.get("cpu", "?"), m.get("cores", "?"), m.get("python", "?"),
        "".join(", %s %s" % (k, m[k]) for k in ("numpy", "numba", "torch", "jax") if k in m),
        "; options: " + opts if opts else ""))
    rows = ["| case | size | tapegrad | peer | peer time | ratio (peer / tapegrad) |",
            "| --- | ---: | ---: | --- | ---: | ---: |"]
    tg = {(r["case"], r["size"]): r["median_s"] for r in doc["results"] if r["tool"] == TAPEGRAD}
    peers = [r for r in doc["results"] if r["tool"] != TAPEGRAD]
    for r in peers:
        rows.append("| %s | %s | %s | %s | %s | %s |" % (
            r["case"], _size(r["size"]), _fmt_time(tg.get((r["case"], r["size"]))), r["tool"],
            _fmt_time(r["median_s"]), "%.2fx" % r["ratio"] if r.get("ratio") else "-"))
    for (case, size), t in tg.items():
        if not any(r["case"] == case and r["size"] == size for r in peers):
            rows.append("| %s | %s | %s | - | - | - |" % (case, _size(size), _fmt_time(t)))
    return head + "\n\n" + "\n".join(rows) + "\n"


def plots(directory=RESULTS):
    """{bench: PNG bytes} for every results file."""
    return {name: plot(doc) for name, doc in load_all(directory).items()}


def write_files(contents, directory, suffix):
    """Write {name: bytes} as directory/<name><suffix> (made if missing), printing the paths."""
    os.makedirs(directory, exist_ok=True)
    for name, data in contents.items():
        path = os.path.join(directory, name + suffix)
        with open(path, "wb") as fh:
            fh.write(data)
        print(path)


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    write_files(plots(), argv[0] if argv else ".", ".png")


if __name__ == "__main__":
    main()
