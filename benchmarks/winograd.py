"""graph-winograd: 3x3 stride-1 convs (a ResNet block: two convs, a residual add, ReLUs) compiled
direct, as F(2x2, 3x3) and as F(4x4, 3x3), timed in the same process, interleaved (one thread by
default). The shapes are ResNet-50's and VGG's.

    python benchmarks/winograd.py                          # the default shapes, 30 runs each
    python benchmarks/winograd.py --shapes 256x14,64x56 --threads 2 --runs 50

Per shape (C = K channels, an H x H map, batch 1): the median latency of each, the speedups over
the direct conv, which one the default pipeline takes (`default`: direct below the pass's
min-channels / min-pixels, else F(4x4) from F4_MIN_SIDE on, else F(2x2)) and the largest
relative difference to onnxruntime (max |diff| / max |ref|) of each.
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from pathlib import Path

import numpy as np


def model(path: Path, c: int, h: int) -> Path:
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    rng = np.random.default_rng(0)
    inits, nodes, prev = [], [], "x"
    for i in range(2):
        inits += [numpy_helper.from_array((rng.standard_normal((c, c, 3, 3)) / np.sqrt(9 * c)).astype(np.float32), f"w{i}"),
                  numpy_helper.from_array(rng.standard_normal(c).astype(np.float32) * 0.1, f"b{i}")]
        nodes.append(helper.make_node("Conv", [prev, f"w{i}", f"b{i}"], [f"c{i}"], pads=[1, 1, 1, 1]))
        if i == 1:
            nodes.append(helper.make_node("Add", [f"c{i}", "x"], ["s"]))
        nodes.append(helper.make_node("Relu", ["s" if i == 1 else f"c{i}"], [f"r{i}"]))
        prev = f"r{i}"
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, c, h, h])],
                              [helper.make_tensor_value_info(prev, TensorProto.FLOAT, None)], inits)
    m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    m.ir_version = 8
    onnx.save(m, path)
    return path


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--shapes", default="64x56,128x28,256x14,512x7", help="CxH, comma-separated")
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--runs", type=int, default=30)
    args = ap.parse_args()
    import onnxruntime as ort

    from minimlir.compiler.pipelines import expand
    from minimlir.frontend import compile
    from minimlir.passes.graph.winograd import F4_MIN_SIDE, MIN_CHANNELS, MIN_PIXELS

    base = expand("compile").replace("graph-winograd,", "")
    variants = {"direct": base}
    for m in (2, 4):
        variants[f"F{m}"] = base.replace("graph-layout,", f"graph-layout,graph-winograd{{min-channels=1 min-pixels=1 tile={m}}},")
    print(f"{'shape':>8} {'direct ms':>10} {'F2 ms':>8} {'F4 ms':>8} {'F2 x':>6} {'F4 x':>6} {'default':>8}  max rel diff (direct, F2, F4)")
    with tempfile.TemporaryDirectory() as tmp:
        for spec in args.shapes.split(","):
            c, h = map(int, spec.split("x"))
            path = model(Path(tmp) / f"{spec}.onnx", c, h)
            default = "direct" if c < MIN_CHANNELS or h * h < MIN_PIXELS else "F4" if h >= F4_MIN_SIDE else "F2"
            models = {k: compile(path, cache=False, num_threads=args.threads, pipeline=v) for k, v in variants.items()}
            x = np.random.default_rng(1).standard_normal((1, c, h, h)).astype(np.float32)
            ref = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"]).run(None, {"x": x})[0]
            diffs = [float(np.abs(m(x)[0] - ref).max() / np.abs(ref).max()) for m in models.values()]
            times: dict[str, list[float]] = {k: [] for k in models}
            for _ in range(args.runs):
                for key, m in models.items():
                    m(x)
                    t = time.perf_counter()
                    m(x)
                    times[key].append(time.perf_counter() - t)
            med = {k: statistics.median(v) * 1e3 for k, v in times.items()}
            print(f"{spec:>8} {med['direct']:>10.3f} {med['F2']:>8.3f} {med['F4']:>8.3f} "
                  f"{med['direct'] / med['F2']:>5.2f}x {med['direct'] / med['F4']:>5.2f}x {default:>8}  "
                  + ", ".join(f"{d:.1e}" for d in diffs))


if __name__ == "__main__":
    main()
