#!/usr/bin/env python3
"""Run one of GradBench's evals, unchanged, against a tool: what GradBench's runner
(``gradbench run --eval ... --tool ...``, its Rust CLI) does, for a machine without it.

    python benchmarks/gradbench/run_eval.py --gradbench DIR gmm [-- -d 2 -k 5]
        [--tool "python benchmarks/gradbench/tool.py"] [-o log.jsonl]

The eval (``DIR/python/gradbench/gradbench/evals/<eval>/run.py`` with the arguments after
``--``) and the tool are two processes; every line the eval writes goes to the tool's stdin and
every response back to the eval, as the runner relays them. The eval validates each output
itself (its ``analysis`` messages, with GradBench's golden tool when it is built). Prints one
line per evaluate message (function, description, success, validity, median and first timing)
and exits 1 if any failed or was invalid. ``-o`` keeps the exchange, one JSON object per
message with its response (``{"message", "response", "nanoseconds"}``, the runner's log
format).
"""
import argparse
import json
import os
import shlex
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))


def relay(eval_proc, tool_proc, log=None, out=sys.stdout):
    """Relay messages until the eval ends; returns the evaluate messages' outcomes."""
    pending, outcomes = {}, []
    for line in eval_proc.stdout:
        if not line.strip():
            continue
        message = json.loads(line)
        tool_proc.stdin.write(line if line.endswith("\n") else line + "\n")
        tool_proc.stdin.flush()
        if message.get("kind") == "end":
            break
        start = time.perf_counter_ns()
        reply = tool_proc.stdout.readline()
        elapsed = time.perf_counter_ns() - start
        if not reply:
            raise RuntimeError("the tool exited before answering message %s" % message.get("id"))
        response = json.loads(reply)
        if log is not None:
            log.write(json.dumps({"message": message, "response": response,
                                  "nanoseconds": elapsed}) + "\n")
        kind = message.get("kind")
        if kind == "evaluate":
            pending[message["id"]] = row = {
                "function": message["function"], "description": message.get("description", ""),
                "success": bool(response.get("success")), "valid": None,
                "timings": [t["nanoseconds"] for t in response.get("timings", [])
                            if t.get("name") == "evaluate"],
                "error": response.get("error")}
            outcomes.append(row)
            if not row["success"]:
                _print(row, out)
        elif kind == "analysis" and message.get("of") in pending:
            row = pending.pop(message["of"])
            row["valid"] = bool(message.get("valid"))
            row["error"] = message.get("error")
            _print(row, out)
        eval_proc.stdin.write(reply)
        eval_proc.stdin.flush()
    return outcomes


def _print(row, out):
    t = row["timings"]
    times = ("median %.4g ms, first %.4g ms, %d runs" % (
        statistics.median(t[1:] or t) / 1e6, t[0] / 1e6, len(t))) if t else "-"
    status = ("failed" if not row["success"] else
              "valid" if row["valid"] else "not validated" if row["valid"] is None
              else "INVALID")
    print("%-10s %-28s %-13s %s" % (row["function"], row["description"][:28], status, times),
          file=out, flush=True)
    if row["error"] and (not row["success"] or row["valid"] is False):
        print("    " + row["error"].strip().splitlines()[-1][:300], file=out, flush=True)


def main(argv=None):
    argv = list(sys.argv[1:] if argv is None else argv)
    eval_args = []
    if "--" in argv:
        i = argv.index("--")
        argv, eval_args = argv[:i], argv[i + 1:]
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("eval", help="an eval's name: hello, lse, gmm, ...")
    parser.add_argument("--gradbench", required=True, help="an extracted GradBench checkout")
    parser.add_argument("--tool", default=None,
                        help="the tool's command, run from DIR (default: this directory's "
                        "tool.py)")
    parser.add_argument("-o", "--output", default=None, help="log the exchange here (JSONL)")
    args = parser.parse_args(argv)
    gb = os.path.abspath(args.gradbench)
    py = os.path.join(gb, "python", "gradbench")
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(
        [py] + ([os.environ["PYTHONPATH"]] if os.environ.get("PYTHONPATH") else [])))
    eval_cmd = [sys.executable, os.path.join(py, "gradbench", "evals", args.eval, "run.py")]
    tool_cmd = (shlex.split(args.tool) if args.tool
                else [sys.executable, os.path.join(HERE, "tool.py")])
    # both from the checkout's root, with its Python package importable, as GradBench's
    # runner starts them (a tool command may name GradBench's own tools by relative path)
    tool_proc = subprocess.Popen(tool_cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                 text=True, bufsize=1, cwd=gb, env=env)
    eval_proc = subprocess.Popen(eval_cmd + eval_args, stdin=subprocess.PIPE,
                                 stdout=subprocess.PIPE, text=True, bufsize=1, cwd=gb, env=env)
    log = open(args.output, "w") if args.output else None
    try:
        outcomes = relay(eval_proc, tool_proc, log)
    finally:
        for p in (eval_proc, tool_proc):
            p.stdin.close()
        code = eval_proc.wait()
        tool_proc.wait()
        if log is not None:
            log.close()
    bad = [o for o in outcomes if not o["success"] or o["valid"] is False]
    print("%d evaluate messages: %d failed or invalid; the eval exited with %d"
          % (len(outcomes), len(bad), code))
    return 1 if bad or code else 0


if __name__ == "__main__":
    sys.exit(main())
