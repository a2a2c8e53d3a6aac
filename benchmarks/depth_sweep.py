"""Compile time against network depth, with a dynamic batch: is it linear?

    python benchmarks/depth_sweep.py                       # N = 50 100 200 400, static and dynamic
    python benchmarks/depth_sweep.py --depths 50 100 --profile /tmp/sweep.prof

The model is a chain of N residual blocks on a `batch x C x H x W` tensor (`batch` a `dim_param`):

    r = relu(conv3x3(x) + x)
    y = r * sigmoid(global_average_pool(r)) * scale    # squeeze-excite: batch x C x 1 x 1,
                                                       # and a C x 1 x 1 weight, both broadcast

Every block has a broadcasting binary op whose output dim comes from both inputs, the pattern that
made the dynamic dims' size expressions double at each block (issue 11). Each depth compiles in its
own process, cold (`cache=False`), with and without the dynamic batch. Printed: wall and CPU seconds
per depth (CPU: this process and its finished LLVM workers), the per-pass times above 5%, and the
ratios, on CPU seconds (steadier on a shared machine), `t(N) / t(N/2)` (linear: about 2; target
<= 2.3) and dynamic / static.
`--profile PATH` writes a cProfile dump of the largest dynamic compile.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np


def build(depth: int, dynamic: bool, channels: int = 4, size: int = 8, seed: int = 0):
    """The ModelProto of `depth` residual blocks (see the module docstring)."""
    from onnx import TensorProto, helper, numpy_helper

    rng = np.random.default_rng(seed)
    batch: str | int = "batch" if dynamic else 1
    nodes, inits = [], []
    x = "x"
    for k in range(depth):
        w = rng.normal(0, 0.1, (channels, channels, 3, 3)).astype(np.float32)
        s = rng.uniform(0.5, 1.5, (channels, 1, 1)).astype(np.float32)
        inits += [numpy_helper.from_array(w, f"w{k}"), numpy_helper.from_array(s, f"s{k}")]
        nodes += [
            helper.make_node("Conv", [x, f"w{k}"], [f"c{k}"], pads=[1, 1, 1, 1]),
            helper.make_node("Add", [f"c{k}", x], [f"a{k}"]),
            helper.make_node("Relu", [f"a{k}"], [f"r{k}"]),
            helper.make_node("GlobalAveragePool", [f"r{k}"], [f"p{k}"]),
            helper.make_node("Sigmoid", [f"p{k}"], [f"g{k}"]),
            helper.make_node("Mul", [f"r{k}", f"g{k}"], [f"e{k}"]),
            helper.make_node("Mul", [f"e{k}", f"s{k}"], [f"y{k}"]),
        ]
        x = f"y{k}"
    shape = [batch, channels, size, size]
    g = helper.make_graph(
        nodes, "depth_sweep",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, shape)],
        [helper.make_tensor_value_info(x, TensorProto.FLOAT, shape)],
        inits,
    )
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)


def measure(depth: int, dynamic: bool, profile: str | None) -> dict:
    import onnx

    from minimlir.frontend import compile as compile_model

    with tempfile.TemporaryDirectory() as d:
        path = Path(d) / "m.onnx"
        onnx.save(build(depth, dynamic), path)
        t, cpu0 = time.perf_counter(), _cpu()
        if profile:
            import cProfile

            prof = cProfile.Profile()
            m = prof.runcall(compile_model, path, cache=False)
            prof.dump_stats(profile)
        else:
            m = compile_model(path, cache=False)
        wall, cpu = time.perf_counter() - t, _cpu() - cpu0
        x = np.random.default_rng(1).normal(size=(2 if dynamic else 1, 4, 8, 8)).astype(np.float32)
        m(x)  # it runs
    return {"depth": depth, "dynamic": dynamic, "wall_s": wall, "cpu_s": cpu, "timings": m.timings}


def _cpu() -> float:
    """CPU seconds of this process and its finished children (LLVM workers): on a shared machine
    they vary less than wall time."""
    import resource

    me, kids = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return me.ru_utime + me.ru_stime + kids.ru_utime + kids.ru_stime


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--depths", type=int, nargs="+", default=[50, 100, 200, 400])
    p.add_argument("--dynamic-only", action="store_true", help="skip the static-batch compiles")
    p.add_argument("--profile", default=None, metavar="PATH")
    p.add_argument("--timeout", type=float, default=1800)
    p.add_argument("--one", nargs=2, default=None, help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    if args.one:
        depth, dyn = int(args.one[0]), args.one[1] == "dynamic"
        print(json.dumps(measure(depth, dyn, args.profile)))
        return 0
    rows: dict[tuple[int, bool], float] = {}
    ok = True
    kinds = [True] if args.dynamic_only else [False, True]
    for depth in args.depths:
        for dyn in kinds:
            cmd = [sys.executable, os.path.abspath(__file__), "--one", str(depth),
                   "dynamic" if dyn else "static"]
            if args.profile and dyn and depth == max(args.depths):
                cmd += ["--profile", args.profile]
            label = f"N={depth:4} {'dynamic' if dyn else 'static ':7}"
            try:
                proc = subprocess.run(cmd, capture_output=True, text=True, timeout=args.timeout)
            except subprocess.TimeoutExpired:
                print(f"{label} timeout after {args.timeout:g} s", flush=True)
                ok = False
                continue
            lines = proc.stdout.strip().splitlines()
            if proc.returncode or not lines:
                print(f"{label} error: {(proc.stderr.strip().splitlines() or ['?'])[-1][:160]}", flush=True)
                ok = False
                continue
            row = json.loads(lines[-1])
            rows[(depth, dyn)] = row["cpu_s"]
            t = row["timings"]
            big = sorted(((v, k) for k, v in t.items()
                          if k not in ("total", "lower", "jit") and v > 0.05 * row["wall_s"]), reverse=True)
            print(f"{label} {row['wall_s']:7.1f} s wall {row['cpu_s']:7.1f} s cpu   " + ", ".join(f"{k} {v:.1f}" for v, k in big), flush=True)
    print()
    for dyn in kinds:
        name = "dynamic" if dyn else "static"
        for a, b in zip(args.depths, args.depths[1:]):
            if (a, dyn) in rows and (b, dyn) in rows:
                print(f"{name:7} cpu t(N={b})/t(N={a}) = {rows[(b, dyn)] / rows[(a, dyn)]:.2f}"
                      f"  (x{b / a:g} depth)")
    if not args.dynamic_only:
        for depth in args.depths:
            if (depth, True) in rows and (depth, False) in rows:
                print(f"N={depth:4} cpu dynamic/static = {rows[(depth, True)] / rows[(depth, False)]:.2f}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
