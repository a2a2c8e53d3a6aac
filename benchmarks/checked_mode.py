"""The cost of checked mode (`compile(..., checks=True)`): compile time and latency, checked / plain,
measured in the same run on the same inputs (one thread, process CPU time for compiles).

    python benchmarks/checked_mode.py [--models examples/mlp.onnx ...] [--runs 20]
"""

from __future__ import annotations

import argparse
import statistics
import time
from pathlib import Path

import numpy as np

from minimlir.backend import parallel
from minimlir.frontend import compile

ROOT = Path(__file__).resolve().parents[1]
DEFAULT = ["examples/mlp.onnx", "examples/conv_add_relu.onnx", "tests/data/tiny_bert_layer.onnx"]


def feeds_for(model, size: int, seed: int = 0) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(seed)
    out = {}
    for spec in model.inputs:
        shape = [d if d is not None else size for d in spec.shape]
        if np.issubdtype(spec.dtype, np.integer):
            out[spec.name] = rng.integers(0, 2 if spec.name == "attention_mask" else 50, shape).astype(spec.dtype)
        else:
            out[spec.name] = rng.standard_normal(shape).astype(spec.dtype)
    return out


def latency(model, feeds, runs: int) -> float:
    model(**feeds)
    times = []
    for _ in range(runs):
        t = time.perf_counter()
        model(**feeds)
        times.append(time.perf_counter() - t)
    return statistics.median(times)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--models", nargs="*", default=DEFAULT)
    ap.add_argument("--runs", type=int, default=20)
    ap.add_argument("--size", type=int, default=16, help="value of every dynamic dim")
    args = ap.parse_args()
    parallel.set_num_threads(1)
    print(f"{'model':40s} {'compile plain':>14s} {'checked':>9s} {'ratio':>6s} {'run plain':>11s} "
          f"{'checked':>9s} {'ratio':>6s}")
    for path in args.models:
        res = {}
        for checks in (False, True):
            t = time.process_time()
            m = compile(ROOT / path, checks=checks, cache=False)
            res[checks] = (time.process_time() - t, m)
        feeds = feeds_for(res[False][1], args.size)
        lat = {c: latency(res[c][1], feeds, args.runs) for c in (False, True)}
        print(f"{path:40s} {res[False][0]:13.2f}s {res[True][0]:8.2f}s {res[True][0] / res[False][0]:6.2f} "
              f"{lat[False] * 1e3:9.3f}ms {lat[True] * 1e3:7.3f}ms {lat[True] / lat[False]:6.2f}")


if __name__ == "__main__":
    main()
