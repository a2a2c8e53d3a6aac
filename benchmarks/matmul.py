"""GFLOP/s of minimlir's default schedule (pipeline `compile`) on square matmuls, next to NumPy.

    python benchmarks/matmul.py                  # sizes 256 512 1024, 1 thread and all cores
    python benchmarks/matmul.py --sizes 1024 --reps 10 --threads 1
    python benchmarks/matmul.py --sizes 65x33x17,63x64x48 --threads 1   # M x K x N (ragged tiles)
    python benchmarks/matmul.py --sizes fc --threads 1   # FC layers at batch 1 (alexnet/vgg/zfnet)
    python benchmarks/matmul.py --sizes transformer      # BERT / ViT / GPT-2 shapes; BxMxKxN: batched

NumPy runs in a subprocess per thread count with OPENBLAS_NUM_THREADS / OMP_NUM_THREADS /
MKL_NUM_THREADS set and OPENBLAS_CORETYPE / OPENBLAS_L2_SIZE removed from its environment
(both are set on the build machines and slow a current OpenBLAS down); the subprocess prints
which BLAS it uses. minimlir's thread count is set with backend.parallel.set_num_threads.
Times are the minimum over --reps calls after warm-up; the output buffer is reused (out=).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time

import numpy as np

_NUMPY_CHILD = r"""
import json, sys, time
import numpy as np
cfg = json.loads(sys.argv[1])
info = "unknown"
try:
    c = np.show_config(mode="dicts")
    blas = c.get("Build Dependencies", {}).get("blas", {})
    info = f"{blas.get('name', '?')} {blas.get('version', '')}".strip()
except Exception:
    pass
try:
    import threadpoolctl
    info += " " + ",".join(f"{p['internal_api']}:{p.get('architecture')}:{p['num_threads']}t"
                           for p in threadpoolctl.threadpool_info())
except Exception:
    pass
out = {"blas": info, "results": []}
for case in cfg["cases"]:
    kind = case["kind"]
    rng = np.random.default_rng(0)
    if kind == "matmul":
        *bt, m, k, n = case["mkn"]
        a = rng.standard_normal((*bt, m, k), dtype=np.float32)
        b = rng.standard_normal((*bt, k, n), dtype=np.float32)
        o = np.empty((*bt, m, n), np.float32)
        f = lambda: np.matmul(a, b, out=o)
        flops = 2.0 * m * n * k * (bt[0] if bt else 1)
    else:  # conv via im2col + matmul per group (the im2col is timed too)
        n_, c, h, w, co, kh, kw, s, p, *grp = case["conv"]
        g = grp[0] if grp else 1
        x = rng.standard_normal((n_, c, h, w), dtype=np.float32)
        wt = rng.standard_normal((g, co // g, c // g * kh * kw), dtype=np.float32)
        oh, ow = (h + 2 * p - kh) // s + 1, (w + 2 * p - kw) // s + 1
        xp = np.pad(x, ((0, 0), (0, 0), (p, p), (p, p)))
        from numpy.lib.stride_tricks import as_strided
        sn, sc, sh, sw = xp.strides
        def f():
            cols = as_strided(xp, (n_, c, kh, kw, oh, ow), (sn, sc, sh, sw, s * sh, s * sw))
            cols = np.ascontiguousarray(cols[0]).reshape(g, c // g * kh * kw, oh * ow)
            return wt @ cols
        flops = 2.0 * n_ * co * oh * ow * c // g * kh * kw
    for _ in range(2):
        f()
    ts = []
    for _ in range(case["reps"]):
        t = time.perf_counter(); f(); ts.append(time.perf_counter() - t)
    out["results"].append(flops / min(ts) / 1e9)
print(json.dumps(out))
"""


# matrix-vector products of the FC layers (M = 1): alexnet / vgg / zfnet fc6, fc7, fc8
FC_SIZES = "1x9216x4096,1x4096x4096,1x4096x1000,4x4096x1000"
# the transformer benchmarks' matmuls: BERT-like (seq 128, d 512, FFN 2048, 8 heads of 64: the
# batched attention products B x M x K x N), the ViT (197 tokens, d 384, MLP 1536), GPT-2 decode
# steps (M = 1, d 768)
TRANSFORMER_SIZES = ("128x512x512,128x512x2048,128x2048x512,8x128x64x128,8x128x128x64,197x384x384,"
                     "197x384x1536,197x1536x384,1x768x768,1x768x3072,1x3072x768,1x768x2304")


def numpy_gflops(cases: list[dict], threads: int) -> tuple[str, list[float]]:
    """Run the NumPy baseline for `cases` in a clean subprocess with `threads` BLAS threads."""
    env = dict(os.environ)
    env.pop("OPENBLAS_CORETYPE", None)
    env.pop("OPENBLAS_L2_SIZE", None)
    for var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
        env[var] = str(threads)
    res = subprocess.run(
        [sys.executable, "-c", _NUMPY_CHILD, json.dumps({"cases": cases})],
        env=env, capture_output=True, text=True, check=True,
    )
    data = json.loads(res.stdout.strip().splitlines()[-1])
    return data["blas"], data["results"]


def time_min(fn, reps: int) -> float:
    for _ in range(2):
        fn()
    ts = []
    for _ in range(reps):
        t = time.perf_counter()
        fn()
        ts.append(time.perf_counter() - t)
    return min(ts)


def matmul_text(m: int, k: int, n: int, batch: int = 0) -> str:
    p = f"{batch}x" if batch else ""
    a, b, c = f"tensor<{p}{m}x{k}xf32>", f"tensor<{p}{k}x{n}xf32>", f"tensor<{p}{m}x{n}xf32>"
    return f"""
func.func @main(%a: {a}, %b: {b}) -> {c} {{
  %c = graph.matmul %a, %b : ({a}, {b}) -> {c}
  func.return %c : {c}
}}"""


def thread_counts(arg: str | None) -> list[int]:
    from minimlir.backend import parallel

    cores = parallel.cpu_count()
    if arg:
        return [int(t) for t in arg.split(",")]
    return sorted({1, cores})


def print_table(title: str, rows: list[tuple], threads: list[int]) -> None:
    print(f"\n{title}")
    head = f"{'case':<28}" + "".join(
        f"{'mini ' + str(t) + 't':>10}{'numpy ' + str(t) + 't':>11}{'ratio':>7}" for t in threads
    )
    if len(threads) > 1:
        head += f"{'mini ' + str(threads[-1]) + 't/1t':>14}"
    print(head)
    for name, per_t in rows:
        line = f"{name:<28}"
        for mine, ref in per_t:
            line += f"{mine:>10.1f}{ref:>11.1f}{mine / ref:>7.2f}"
        if len(threads) > 1:
            line += f"{per_t[-1][0] / per_t[0][0]:>14.2f}"
        print(line)


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sizes", default="256,512,1024")
    ap.add_argument("--threads", default=None, help="comma-separated thread counts (default: 1 and all cores)")
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--pipeline", default="compile")
    args = ap.parse_args(argv)

    from minimlir.backend import parallel
    from minimlir.backend.runtime import compile_mlir_text

    spec = {"fc": FC_SIZES, "transformer": TRANSFORMER_SIZES}.get(args.sizes, args.sizes)
    sizes = [[int(d) for d in s.split("x")] * (3 if "x" not in s else 1) for s in spec.split(",")]
    threads = thread_counts(args.threads)
    cases = [{"kind": "matmul", "mkn": mkn, "reps": args.reps} for mkn in sizes]
    ref: dict[int, list[float]] = {}
    blas = ""
    for t in threads:
        blas, ref[t] = numpy_gflops(cases, t)
    rows = []
    for i, (*bt, m, k, n) in enumerate(sizes):
        prog = compile_mlir_text(matmul_text(m, k, n, *bt), pipeline=args.pipeline)
        rng = np.random.default_rng(0)
        a = rng.standard_normal((*bt, m, k), dtype=np.float32)
        b = rng.standard_normal((*bt, k, n), dtype=np.float32)
        out = np.empty((*bt, m, n), np.float32)
        prog.main(a, b, out=out)
        err = float(np.abs(out - a @ b).max())
        assert err < 1e-2 * np.sqrt(k), f"wrong result (max error {err})"
        per_t = []
        for t in threads:
            parallel.set_num_threads(t)
            sec = time_min(lambda: prog.main(a, b, out=out), args.reps)
            per_t.append((2.0 * m * n * k * (bt[0] if bt else 1) / sec / 1e9, ref[t][i]))
        parallel.set_num_threads(0)
        rows.append((f"matmul {'x'.join(map(str, (*bt, m, k, n)))}", per_t))
    print(f"numpy BLAS: {blas}; cores: {parallel.cpu_count()}; load average: {os.getloadavg()[0]:.1f}")
    print_table("GFLOP/s (higher is better); ratio = minimlir / numpy", rows, threads)


if __name__ == "__main__":
    main()
