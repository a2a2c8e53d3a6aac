"""graph-winograd: 3x3 stride-1 convs (with a ReLU) compiled with and without the pass, timed in
the same process, interleaved (one thread by default). The shapes are ResNet-50's and VGG's.

    python benchmarks/winograd.py                          # the default shapes, 30 runs each
    python benchmarks/winograd.py --shapes 256x14,64x56 --threads 2 --runs 50

Per shape (C = K channels, an H x H map, batch 1; two convs in a chain with a residual add, as in a
ResNet block): the median latency of both, the speedup (direct / winograd) and the max abs
difference to onnxruntime. The rows with fewer channels or smaller maps than the pass's defaults
run the pass with `min-channels=1 min-pixels=1`, so they show why the defaults stop there.
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
    from minimlir.passes.graph.winograd import MIN_CHANNELS, MIN_PIXELS

    base = expand("compile")
    print(f"{'shape':>10} {'direct ms':>10} {'winograd ms':>12} {'speedup':>8} {'max |diff|':>11}  pass")
    with tempfile.TemporaryDirectory() as tmp:
        for spec in args.shapes.split(","):
            c, h = map(int, spec.split("x"))
            path = model(Path(tmp) / f"{spec}.onnx", c, h)
            forced = c < MIN_CHANNELS or h * h < MIN_PIXELS
            option = "graph-winograd{min-channels=1 min-pixels=1}" if forced else "graph-winograd"
            direct = compile(path, cache=False, num_threads=args.threads, pipeline=base.replace("graph-winograd,", ""))
            wino = compile(path, cache=False, num_threads=args.threads, pipeline=base.replace("graph-winograd", option))
            x = np.random.default_rng(1).standard_normal((1, c, h, h)).astype(np.float32)
            ref = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"]).run(None, {"x": x})[0]
            diff = max(float(np.abs(m(x)[0] - ref).max()) for m in (direct, wino))
            times: dict[str, list[float]] = {"d": [], "w": []}
            for _ in range(args.runs):
                for key, m in (("d", direct), ("w", wino)):
                    m(x)
                    t = time.perf_counter()
                    m(x)
                    times[key].append(time.perf_counter() - t)
            d, w = statistics.median(times["d"]) * 1e3, statistics.median(times["w"]) * 1e3
            print(f"{spec:>10} {d:>10.3f} {w:>12.3f} {d / w:>7.2f}x {diff:>11.2e}  {option}")


if __name__ == "__main__":
    main()
