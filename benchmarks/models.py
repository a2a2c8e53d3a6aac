"""The nine ONNX light models (random weights), minimlir next to onnxruntime measured in the same run.

    python benchmarks/models.py --threads 1,2                # all nine at 1 and 2 threads, 10 runs
    python benchmarks/models.py --filter 'squeeze|shuffle' --runs 20 --threads 1 --json out.json
    python benchmarks/models.py --filter resnet50 --without graph-winograd   # a pass's share: run both

Per model and thread count, in a subprocess of its own (`--timeout`, so one failure costs one row):
minimlir compiles it (`num_threads=T`; the JIT disk cache is off unless --cache, so the compile time is
the cold one), onnxruntime opens it (CPUExecutionProvider, `intra_op_num_threads=T`, default graph
optimizations), both outputs are compared, then the two run interleaved (ours, theirs, ours, ...)
--runs times after a warm-up, each timed run after a pause of --settle seconds and an untimed run of
the same side: the other side's idle pool threads keep spinning (onnxruntime's by default), and
on a 2-vCPU VM a 2-thread run right after the other engine's took up to 3.5x its time (BERT: 52
against 14 ms; still 26 ms after a 30 ms pause, unaffected after 100 ms). Printed per row: compile time, the
median latency of each, the ratio ours / onnxruntime (lower is better; 1.0 = as fast) and the max
abs difference; per thread count the geometric mean of the ratios and the worst model; with several
thread counts, each side's speedup from the first to the last count (T1 ms / Tn ms). The load
average is printed before and after: on a loaded machine the ratios are less reliable.
Exit code 1 when a model fails or its output differs from onnxruntime's beyond 1e-3 (abs + rel).
"""

from __future__ import annotations

import argparse
import json
import math
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from conformance import LIGHT_MODELS, light_input, onnx_data_dir  # noqa: E402


def measure(name: str, runs: int, threads: int, cache: bool, settle: float = 0.1, without: str = "") -> dict:
    import onnx
    import onnxruntime as ort

    from minimlir.frontend import compile as compile_model

    path = onnx_data_dir() / "light" / f"light_{name}.onnx"
    model = onnx.load(str(path))
    in_name, x = light_input(model)
    row: dict = {"model": name, "threads": threads, "ops": len(model.graph.node)}
    t = time.perf_counter()
    pipeline = None
    if without:  # the default pipeline without these passes (a pass's effect, measured in one run)
        from minimlir.compiler.pipelines import expand

        drop = set(without.split(","))
        steps = expand("compile").split(",")
        unknown = drop - {s.split("{")[0] for s in steps}
        if unknown:
            raise SystemExit(f"--without: not in the compile pipeline: {', '.join(sorted(unknown))}")
        pipeline = ",".join(s for s in steps if s.split("{")[0] not in drop)
    m = compile_model(path, cache=cache, num_threads=threads, pipeline=pipeline)
    row["compile_s"] = time.perf_counter() - t
    opts = ort.SessionOptions()
    opts.intra_op_num_threads = threads
    session = ort.InferenceSession(str(path), opts, providers=["CPUExecutionProvider"])
    (y,) = m(x)
    (ref,) = session.run(None, {in_name: x})
    y = np.asarray(y)
    row["max_abs_diff"] = float(np.abs(y.astype(np.float64) - ref).max())
    row["close"] = bool(np.allclose(y, ref, rtol=1e-3, atol=1e-3))
    wall: dict[str, list[float]] = {"ours": [], "ort": []}
    for _ in range(runs):  # interleaved, so a burst of load hits both sides alike
        for side, fn in (("ours", lambda: m(x)), ("ort", lambda: session.run(None, {in_name: x}))):
            time.sleep(settle)  # let the other side's pool go idle (see the docstring)
            fn()  # untimed first (see the docstring)
            t = time.perf_counter()
            fn()
            wall[side].append(time.perf_counter() - t)
    row["latency_ms"] = statistics.median(wall["ours"]) * 1e3
    row["ort_latency_ms"] = statistics.median(wall["ort"]) * 1e3
    row["ratio"] = row["latency_ms"] / row["ort_latency_ms"]
    return row


def _geomean(xs: list[float]) -> float:
    return math.exp(sum(math.log(x) for x in xs) / len(xs)) if xs else float("nan")


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--filter", default=None, metavar="REGEX")
    p.add_argument("--runs", type=int, default=10, help="timed runs per side (interleaved)")
    p.add_argument("--threads", default="1", help="comma-separated thread counts, e.g. 1,2 (default 1)")
    p.add_argument("--cache", action="store_true", help="use the JIT disk cache (warm compile time)")
    p.add_argument("--timeout", type=float, default=1800)
    p.add_argument("--settle", type=float, default=0.1,
                   help="seconds of pause before each side's runs (the other side's pool goes idle)")
    p.add_argument("--json", default=None, metavar="PATH")
    p.add_argument("--without", default="", metavar="PASSES",
                   help="compile with the default pipeline minus these passes (comma-separated), e.g. graph-winograd")
    p.add_argument("--one", default=None, help=argparse.SUPPRESS)  # worker: measure one model, print JSON
    args = p.parse_args(argv)
    try:
        threads = [int(t) for t in str(args.threads).split(",")]
        if any(t < 1 for t in threads):
            raise ValueError
    except ValueError:
        print(f"error: --threads wants positive integers like 1,2, not {args.threads!r}", file=sys.stderr)
        return 1
    if args.one:
        print(json.dumps(measure(args.one, args.runs, threads[0], args.cache, args.settle, args.without)))
        return 0
    import re

    models = [m for m in LIGHT_MODELS if not args.filter or re.search(args.filter, m)]
    print(f"load average: {' '.join(f'{x:.1f}' for x in os.getloadavg())}; cores: {os.cpu_count()}")
    head = (f"{'model':14} {'thr':>3} {'compile s':>9} {'minimlir ms':>12} {'ort ms':>9} {'ratio':>6} "
            f"{'max |diff|':>10}")
    print(head)
    print("-" * len(head))
    rows, ok = [], True
    for t in threads:
        for name in models:
            cmd = [sys.executable, os.path.abspath(__file__), "--one", name, "--runs", str(args.runs),
                   "--threads", str(t), "--settle", str(args.settle), "--without", args.without] + (
                       ["--cache"] if args.cache else [])
            try:
                proc = subprocess.run(cmd, capture_output=True, text=True, timeout=args.timeout)
                lines = proc.stdout.strip().splitlines()
                row = json.loads(lines[-1]) if proc.returncode == 0 and lines else {
                    "model": name, "threads": t,
                    "error": (proc.stderr.strip().splitlines() or ["exit code %d" % proc.returncode])[-1]}
            except subprocess.TimeoutExpired:
                row = {"model": name, "threads": t, "error": f"timeout after {args.timeout:g} s"}
            rows.append(row)
            if "error" in row:
                ok = False
                print(f"{name:14} {t:3d} error: {row['error'][:100]}", flush=True)
                continue
            ok &= row["close"]
            print(f"{name:14} {t:3d} {row['compile_s']:9.1f} {row['latency_ms']:12.2f} {row['ort_latency_ms']:9.2f} "
                  f"{row['ratio']:6.2f} {row['max_abs_diff']:10.2g}" + ("" if row["close"] else "  MISMATCH"),
                  flush=True)
    print()
    for t in threads:
        good = [r for r in rows if r["threads"] == t and "error" not in r]
        if good:
            worst = max(good, key=lambda r: r["ratio"])
            print(f"{t} thread(s): geomean ratio {_geomean([r['ratio'] for r in good]):.2f} over {len(good)} "
                  f"models; worst {worst['model']} {worst['ratio']:.2f}")
    if len(threads) > 1:
        t0, tn = threads[0], threads[-1]
        by = {(r["model"], r["threads"]): r for r in rows if "error" not in r}
        pairs = [(by[(n, t0)], by[(n, tn)]) for n in models if (n, t0) in by and (n, tn) in by]
        if pairs:
            ours = _geomean([a["latency_ms"] / b["latency_ms"] for a, b in pairs])
            theirs = _geomean([a["ort_latency_ms"] / b["ort_latency_ms"] for a, b in pairs])
            print(f"speedup {tn} threads over {t0} (geomean): minimlir {ours:.2f}x, onnxruntime {theirs:.2f}x")
    print(f"load average: {' '.join(f'{x:.1f}' for x in os.getloadavg())}")
    if args.json:
        Path(args.json).write_text(json.dumps(rows, indent=1) + "\n")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
