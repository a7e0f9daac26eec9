"""Start-up before/after: this checkout's tapegrad against the tapegrad of a git revision.

    python benchmarks/startup_compare.py --base 2085cbc --cold 7 --cached 9

Same protocol as workload d of bench_foundation.py (fresh `python -c` processes, import + first
backward, bytecode cached, NUMBA_CACHE_DIR unset), with every kind interleaved run by run:
cold runs alternate base/head on fresh copies; each cached round runs base, head, head with
Numba's own loader (TAPEGRAD_NUMBA_FULL_REFRESH=1) and the numba floor once each.
Prints medians and [min - max] of wall and in-process times; --json writes every run.
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import shutil

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, HERE)

from bench_foundation import (FLOOR_MODULE, FLOOR_SNIPPET, _fmt_time, fresh_copy,  # noqa: E402
                              run_startup)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--base", required=True, help="git revision to compare against")
    ap.add_argument("--cold", type=int, default=7, help="cold runs of each tree")
    ap.add_argument("--cached", type=int, default=9, help="interleaved cached rounds")
    ap.add_argument("--json", default=None)
    args = ap.parse_args(argv)

    tmp = tempfile.mkdtemp(prefix="tapegrad_cmp_")
    try:
        base_src = os.path.join(tmp, "base_src")
        os.makedirs(base_src)
        arch = subprocess.run(["git", "archive", args.base, "tapegrad"], cwd=ROOT,
                              capture_output=True, check=True).stdout
        subprocess.run(["tar", "-x", "-C", base_src], input=arch, check=True)
        srcs = {"base": os.path.join(base_src, "tapegrad"), "head": os.path.join(ROOT, "tapegrad")}
        runs = {k: [] for k in ("base cold", "head cold", "base", "head", "head numba-loader",
                                "numba floor")}
        roots = {}
        for i in range(args.cold):
            for k in ("base", "head"):
                root = fresh_copy(os.path.join(tmp, k), i, srcs[k])
                rec = run_startup("tapegrad", root, root)
                assert rec["file"].startswith(root), rec["file"]
                runs[k + " cold"].append(rec)
                roots[k] = root
                print("cold   #%d %-5s wall %s in-process %s" % (i + 1, k, _fmt_time(rec["wall"]),
                                                              _fmt_time(rec["total"])), flush=True)
        floor = os.path.join(tmp, "floor")
        os.makedirs(floor)
        with open(os.path.join(floor, "tg_numba_floor.py"), "w") as f:
            f.write(FLOOR_MODULE)
        run_startup("floor", floor, floor, snippet=FLOOR_SNIPPET)  # fills its cache
        kinds = {
            "base": lambda: run_startup("tapegrad", roots["base"], roots["base"]),
            "head": lambda: run_startup("tapegrad", roots["head"], roots["head"]),
            "head numba-loader": lambda: run_startup(
                "tapegrad", roots["head"], roots["head"], {"TAPEGRAD_NUMBA_FULL_REFRESH": "1"}),
            "numba floor": lambda: run_startup("floor", floor, floor, snippet=FLOOR_SNIPPET),
        }
        for i in range(args.cached):
            for k, fn in kinds.items():
                rec = fn()
                runs[k].append(rec)
                print("cached #%d %-17s wall %s in-process %s (import %s)"
                      % (i + 1, k, _fmt_time(rec["wall"]), _fmt_time(rec["total"]),
                         _fmt_time(rec["import"])), flush=True)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)

    print("\nmedian [min - max] over fresh processes")
    summary = {}
    for k, recs in runs.items():
        w = [r["wall"] for r in recs]
        t = [r["total"] for r in recs]
        summary[k] = {"n": len(recs), "wall_median_s": statistics.median(w),
                      "wall_range_s": [min(w), max(w)], "in_process_median_s": statistics.median(t),
                      "in_process_range_s": [min(t), max(t)]}
        print("  %-18s n=%d  wall %s [%s - %s]  in-process %s [%s - %s]"
              % (k, len(recs), _fmt_time(statistics.median(w)), _fmt_time(min(w)),
                 _fmt_time(max(w)), _fmt_time(statistics.median(t)), _fmt_time(min(t)),
                 _fmt_time(max(t))))
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"base": args.base, "summary": summary, "runs": runs}, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
