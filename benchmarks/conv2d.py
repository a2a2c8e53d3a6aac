"""GFLOP/s of minimlir's default schedule (pipeline `compile`) on ResNet-50's conv shapes
(batch 1, with bias), next to NumPy's im2col + matmul measured in the same run.

    python benchmarks/conv2d.py                        # 1 thread and all cores
    python benchmarks/conv2d.py --threads 1 --reps 3
    python benchmarks/conv2d.py --set grouped --threads 1   # alexnet grouped, shufflenet dw / g4

The NumPy baseline (benchmarks/matmul.py: numpy_gflops) runs in a subprocess with the BLAS thread
count set and OPENBLAS_CORETYPE / OPENBLAS_L2_SIZE removed; its time includes the im2col copy.
"""

from __future__ import annotations

import argparse
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from matmul import numpy_gflops, print_table, thread_counts, time_min  # noqa: E402

# (name, C, H/W, CO, K, stride, pad)
RESNET50 = [
    ("stem 7x7/2 3->64 @224", 3, 224, 64, 7, 2, 3),
    ("3x3 64->64 @56", 64, 56, 64, 3, 1, 1),
    ("1x1 256->64 @56", 256, 56, 64, 1, 1, 0),
    ("3x3 128->128 @28", 128, 28, 128, 3, 1, 1),
    ("3x3 256->256 @14", 256, 14, 256, 3, 1, 1),
    ("3x3 512->512 @7", 512, 7, 512, 3, 1, 1),
]


# grouped and depthwise convs (name, C, H/W, CO, K, stride, pad, group): alexnet, shufflenet
GROUPED = [
    ("alexnet 5x5 g2 96->256 @26", 96, 26, 256, 5, 1, 2, 2),
    ("alexnet 3x3 g2 384->384 @12", 384, 12, 384, 3, 1, 1, 2),
    ("shufflenet 1x1 g4 136->136 @28", 136, 28, 136, 1, 1, 0, 4),
    ("shufflenet 1x1 g4 272->272 @14", 272, 14, 272, 1, 1, 0, 4),
    ("shufflenet dw3x3 136 @28", 136, 28, 136, 3, 1, 1, 136),
    ("shufflenet dw3x3 272 @14", 272, 14, 272, 3, 1, 1, 272),
    ("shufflenet dw3x3/2 112 @56", 112, 56, 112, 3, 2, 1, 112),
]


def conv_text(c: int, hw: int, co: int, k: int, s: int, p: int, g: int = 1) -> tuple[str, int]:
    o = (hw + 2 * p - k) // s + 1
    x, w, y = f"tensor<1x{c}x{hw}x{hw}xf32>", f"tensor<{co}x{c // g}x{k}x{k}xf32>", f"tensor<1x{co}x{o}x{o}xf32>"
    text = f"""
func.func @main(%x: {x}, %w: {w}, %b: tensor<{co}xf32>) -> {y} {{
  %y = graph.conv2d %x, %w, %b strides [{s}, {s}] pads [{p}, {p}, {p}, {p}] dilations [1, 1] group {g} : ({x}, {w}, tensor<{co}xf32>) -> {y}
  func.return %y : {y}
}}"""
    return text, o


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--threads", default=None)
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--pipeline", default="compile")
    ap.add_argument("--set", choices=("resnet50", "grouped"), default="resnet50")
    args = ap.parse_args(argv)
    shapes = [(*r, 1) for r in RESNET50] if args.set == "resnet50" else GROUPED

    from minimlir.backend import parallel
    from minimlir.backend.runtime import compile_mlir_text

    threads = thread_counts(args.threads)
    cases = [
        {"kind": "conv", "conv": [1, c, hw, hw, co, k, k, s, p, g], "reps": args.reps}
        for _, c, hw, co, k, s, p, g in shapes
    ]
    ref = {}
    blas = ""
    for t in threads:
        blas, ref[t] = numpy_gflops(cases, t)
    rows = []
    for i, (name, c, hw, co, k, s, p, g) in enumerate(shapes):
        text, o = conv_text(c, hw, co, k, s, p, g)
        prog = compile_mlir_text(text, pipeline=args.pipeline)
        rng = np.random.default_rng(0)
        x = rng.standard_normal((1, c, hw, hw), dtype=np.float32)
        w = rng.standard_normal((co, c // g, k, k), dtype=np.float32)
        b = rng.standard_normal((co,), dtype=np.float32)
        out = np.empty((1, co, o, o), np.float32)
        flops = 2.0 * co * o * o * c // g * k * k
        per_t = []
        for t in threads:
            parallel.set_num_threads(t)
            sec = time_min(lambda: prog.main(x, w, b, out=out), args.reps)
            per_t.append((flops / sec / 1e9, ref[t][i]))
        parallel.set_num_threads(0)
        rows.append((name, per_t))
    print(f"numpy BLAS: {blas}; cores: {parallel.cpu_count()}; load average: {os.getloadavg()[0]:.1f}")
    print_table("conv2d GFLOP/s (higher is better); ratio = minimlir / numpy (im2col + matmul)", rows, threads)


if __name__ == "__main__":
    main()
