"""Compile time and latency of the ONNX light models, next to onnxruntime measured in the same run.

    python benchmarks/models.py                        # all nine, 10 timed runs each
    python benchmarks/models.py --filter 'squeeze|shuffle' --runs 20 --threads 1 --json out.json

Per model: minimlir's compile time (import + lowering + LLVM, with the JIT disk cache off unless
--cache, so it is the cold time), its median latency over --runs calls after one warm-up, and
onnxruntime's median latency on the same input (CPUExecutionProvider, `intra_op_num_threads` =
--threads, default 1 to compare single-threaded code), plus the ratio minimlir / onnxruntime
(lower is better; 1.0 = as fast). Outputs are compared too (max abs difference), so a fast wrong
answer shows. Each model runs in its own subprocess (`--timeout`), so one failure costs one row.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from conformance import LIGHT_MODELS, light_input, onnx_data_dir  # noqa: E402


def measure(name: str, runs: int, threads: int, cache: bool) -> dict:
    import onnx
    import onnxruntime as ort

    from minimlir.frontend import compile as compile_model

    path = onnx_data_dir() / "light" / f"light_{name}.onnx"
    model = onnx.load(str(path))
    in_name, x = light_input(model)
    row: dict = {"model": name, "ops": len(model.graph.node)}

    t = time.perf_counter()
    m = compile_model(path, cache=cache, num_threads=threads)
    row["compile_s"] = time.perf_counter() - t
    row["lower_s"] = m.timings.get("lower")
    row["jit_s"] = m.timings.get("jit")
    (y,) = m(x)
    times = []
    for _ in range(runs):
        t = time.perf_counter()
        m(x)
        times.append(time.perf_counter() - t)
    row["latency_ms"] = statistics.median(times) * 1e3

    opts = ort.SessionOptions()
    opts.intra_op_num_threads = threads
    session = ort.InferenceSession(str(path), opts, providers=["CPUExecutionProvider"])
    (ref,) = session.run(None, {in_name: x})
    times = []
    for _ in range(runs):
        t = time.perf_counter()
        session.run(None, {in_name: x})
        times.append(time.perf_counter() - t)
    row["ort_latency_ms"] = statistics.median(times) * 1e3
    row["ratio"] = row["latency_ms"] / row["ort_latency_ms"]
    row["max_abs_diff"] = float(np.abs(np.asarray(y, np.float64) - ref).max())
    return row


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--filter", default=None, metavar="REGEX")
    p.add_argument("--runs", type=int, default=10)
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--cache", action="store_true", help="use the JIT disk cache (warm compile time)")
    p.add_argument("--timeout", type=float, default=1800)
    p.add_argument("--json", default=None, metavar="PATH")
    p.add_argument("--one", default=None, help=argparse.SUPPRESS)  # worker: measure one model, print JSON
    args = p.parse_args(argv)
    if args.one:
        print(json.dumps(measure(args.one, args.runs, args.threads, args.cache)))
        return 0
    import re

    models = [m for m in LIGHT_MODELS if not args.filter or re.search(args.filter, m)]
    head = f"{'model':14} {'compile s':>10} {'minimlir ms':>12} {'ort ms':>9} {'ratio':>7} {'max |diff|':>11}"
    print(head)
    print("-" * len(head))
    rows = []
    for name in models:
        cmd = [sys.executable, os.path.abspath(__file__), "--one", name, "--runs", str(args.runs),
               "--threads", str(args.threads)] + (["--cache"] if args.cache else [])
        try:
            proc = subprocess.run(cmd, capture_output=True, text=True, timeout=args.timeout)
            lines = proc.stdout.strip().splitlines()
            row = json.loads(lines[-1]) if proc.returncode == 0 and lines else {
                "model": name, "error": (proc.stderr.strip().splitlines() or ["exit code %d" % proc.returncode])[-1]}
        except subprocess.TimeoutExpired:
            row = {"model": name, "error": f"timeout after {args.timeout:g} s"}
        rows.append(row)
        if "error" in row:
            print(f"{name:14} error: {row['error'][:100]}", flush=True)
        else:
            print(f"{name:14} {row['compile_s']:10.1f} {row['latency_ms']:12.2f} {row['ort_latency_ms']:9.2f} "
                  f"{row['ratio']:7.1f} {row['max_abs_diff']:11.2g}", flush=True)
    if args.json:
        Path(args.json).write_text(json.dumps(rows, indent=1) + "\n")
    return 0 if all("error" not in r for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
