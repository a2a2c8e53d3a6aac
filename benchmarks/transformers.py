"""A BERT-like encoder and a small ViT, minimlir next to onnxruntime measured in the same run.

    python benchmarks/transformers.py                       # both models, --threads 1,2, 20 runs
    python benchmarks/transformers.py --only bert --threads 1 --runs 30 --save-onnx /tmp/bert.onnx

Both models are built here with the `onnx` helper API (no torch), with seeded random weights, in the
opset-17 form the exporters emit: MatMul + Add for every linear layer, LayerNormalization, Softmax
over the last axis, heads split with Reshape + Transpose, and GELU either as Erf (BERT) or as the
tanh approximation with Pow(x, 3) (ViT).

- `bert`: 4 layers, d_model 512, 8 heads, FFN 2048, sequence 128, batch 1, an attention mask input
  (1 = token, 0 = padding) turned into an additive -10000 bias as exporters do; post-norm layers.
- `vit`: 224x224 image, 16x16 patches (a stride-16 Conv), class token and position embedding, 4
  pre-norm layers, d_model 384, 6 heads, MLP 1536, final LayerNorm, a 1000-way head on the class token.

Per model and thread count: minimlir compiles it (`num_threads=T`, disk cache off unless --cache),
the output is checked against onnxruntime (`intra_op_num_threads=T`, default graph optimizations), then
the two run interleaved (ours, theirs, ours, ...) --runs times after a warm-up, each timed run
after a pause of --settle seconds and an untimed run of the same side (so the other side's
spinning pool threads are idle again). Printed: the median
latency of each, the ratio ours / onnxruntime (lower is better), and the median process CPU time per
run (all threads; on a loaded machine wall time alone can mislead). The load average is printed too.
Exit code 1 when an output differs from onnxruntime beyond --atol/--rtol.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import statistics
import sys
import time
from pathlib import Path

import numpy as np

OPSET = 17


class _Builder:
    """Accumulates nodes and seeded initializers; `w(shape)` makes a weight, `node(op, ...)` a node."""

    def __init__(self, seed: int):
        self.rng = np.random.default_rng(seed)
        self.nodes: list = []
        self.inits: list = []
        self.n = 0

    def fresh(self, base: str) -> str:
        self.n += 1
        return f"{base}_{self.n}"

    def const(self, value, name: str | None = None, dtype=np.float32) -> str:
        from onnx import numpy_helper

        name = name or self.fresh("c")
        self.inits.append(numpy_helper.from_array(np.asarray(value, dtype), name))
        return name

    def w(self, shape, scale: float = 0.02, offset: float = 0.0) -> str:
        return self.const(offset + scale * self.rng.standard_normal(shape), self.fresh("w"))

    def node(self, op: str, inputs: list[str], n_out: int = 1, **attrs):
        from onnx import helper

        outs = [self.fresh(op.lower()) for _ in range(n_out)]
        self.nodes.append(helper.make_node(op, inputs, outs, name=self.fresh(op), **attrs))
        return outs[0] if n_out == 1 else outs

    def linear(self, x: str, d_in: int, d_out: int) -> str:
        return self.node("Add", [self.node("MatMul", [x, self.w((d_in, d_out))]), self.w((d_out,))])

    def layer_norm(self, x: str, d: int) -> str:
        return self.node("LayerNormalization", [x, self.w((d,), 0.1, 1.0), self.w((d,), 0.1)], axis=-1,
                         epsilon=1e-5)

    def gelu_erf(self, x: str) -> str:
        """0.5 * x * (1 + erf(x / sqrt(2))), as torch.onnx exports nn.GELU()."""
        e = self.node("Erf", [self.node("Div", [x, self.const(math.sqrt(2.0))])])
        return self.node("Mul", [self.node("Mul", [x, self.node("Add", [e, self.const(1.0)])]), self.const(0.5)])

    def gelu_tanh(self, x: str) -> str:
        """0.5 * x * (1 + tanh(sqrt(2/pi) * (x + 0.044715 * x^3))), as exporters emit GELU(approximate='tanh')."""
        cube = self.node("Pow", [x, self.const(3.0)])
        inner = self.node("Add", [x, self.node("Mul", [cube, self.const(0.044715)])])
        t = self.node("Tanh", [self.node("Mul", [inner, self.const(math.sqrt(2.0 / math.pi))])])
        return self.node("Mul", [self.node("Mul", [x, self.const(0.5)]), self.node("Add", [t, self.const(1.0)])])

    def attention(self, x: str, seq: int, d: int, heads: int, bias: str | None) -> str:
        """Multi-head self-attention on x [1, seq, d]; `bias` is added to the scores [1, heads, seq, seq]."""
        dh = d // heads
        split = self.const([1, seq, heads, dh], dtype=np.int64)
        q = self.node("Transpose", [self.node("Reshape", [self.linear(x, d, d), split])], perm=[0, 2, 1, 3])
        k = self.node("Transpose", [self.node("Reshape", [self.linear(x, d, d), split])], perm=[0, 2, 3, 1])
        v = self.node("Transpose", [self.node("Reshape", [self.linear(x, d, d), split])], perm=[0, 2, 1, 3])
        s = self.node("Div", [self.node("MatMul", [q, k]), self.const(math.sqrt(dh))])
        if bias is not None:
            s = self.node("Add", [s, bias])
        p = self.node("Softmax", [s], axis=-1)
        o = self.node("Transpose", [self.node("MatMul", [p, v])], perm=[0, 2, 1, 3])
        o = self.node("Reshape", [o, self.const([1, seq, d], dtype=np.int64)])
        return self.linear(o, d, d)

    def model(self, inputs, outputs, name: str):
        from onnx import helper

        graph = helper.make_graph(self.nodes, name, inputs, outputs, self.inits)
        m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", OPSET)], producer_name="minimlir-bench")
        m.ir_version = 8
        return m


def bert(layers: int = 4, d: int = 512, heads: int = 8, ffn: int = 2048, seq: int = 128, seed: int = 0):
    """BERT-like post-norm encoder: inputs `x` [1, seq, d] (embeddings) and `mask` [1, seq]."""
    from onnx import TensorProto, helper

    b = _Builder(seed)
    # extended mask as HF BERT exports it: (1 - mask[:, None, None, :]) * -10000
    m4 = b.node("Unsqueeze", ["mask", b.const([1, 2], dtype=np.int64)])
    bias = b.node("Mul", [b.node("Sub", [b.const(1.0), m4]), b.const(-10000.0)])
    h = "x"
    for _ in range(layers):
        a = b.attention(h, seq, d, heads, bias)
        h = b.layer_norm(b.node("Add", [a, h]), d)
        f = b.linear(b.gelu_erf(b.linear(h, d, ffn)), ffn, d)
        h = b.layer_norm(b.node("Add", [f, h]), d)
    b.nodes.append(helper.make_node("Identity", [h], ["y"], name="out"))
    inputs = [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, seq, d]),
              helper.make_tensor_value_info("mask", TensorProto.FLOAT, [1, seq])]
    return b.model(inputs, [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, seq, d])], "bert")


def vit(layers: int = 4, d: int = 384, heads: int = 6, mlp: int = 1536, image: int = 224, patch: int = 16,
        classes: int = 1000, seed: int = 1):
    """Small pre-norm ViT: input `x` [1, 3, image, image], output logits [1, classes]."""
    from onnx import TensorProto, helper

    b = _Builder(seed)
    n = (image // patch) ** 2
    seq = n + 1
    p = b.node("Conv", ["x", b.w((d, 3, patch, patch)), b.w((d,))], kernel_shape=[patch, patch],
               strides=[patch, patch])
    p = b.node("Transpose", [b.node("Reshape", [p, b.const([1, d, n], dtype=np.int64)])], perm=[0, 2, 1])
    h = b.node("Add", [b.node("Concat", [b.w((1, 1, d)), p], axis=1), b.w((1, seq, d))])
    for _ in range(layers):
        h = b.node("Add", [h, b.attention(b.layer_norm(h, d), seq, d, heads, None)])
        f = b.linear(b.gelu_tanh(b.linear(b.layer_norm(h, d), d, mlp)), mlp, d)
        h = b.node("Add", [h, f])
    cls = b.node("Gather", [b.layer_norm(h, d), b.const(0, dtype=np.int64)], axis=1)
    b.nodes.append(helper.make_node("Identity", [b.linear(cls, d, classes)], ["y"], name="out"))
    inputs = [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, image, image])]
    return b.model(inputs, [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, classes])], "vit")


MODELS = {"bert": bert, "vit": vit}


def inputs_for(name: str, model, seed: int = 0) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(seed)
    out = {}
    for vi in model.graph.input:
        shape = [d.dim_value for d in vi.type.tensor_type.shape.dim]
        if vi.name == "mask":
            m = np.ones(shape, np.float32)
            m[..., shape[-1] * 3 // 4:] = 0.0  # the last quarter is padding
            out[vi.name] = m
        else:
            out[vi.name] = rng.standard_normal(shape).astype(np.float32)
    return out


def measure(name: str, threads: int, runs: int, cache: bool, save: str | None) -> dict:
    import onnxruntime as ort

    from minimlir.frontend import compile as compile_model

    model = MODELS[name]()
    if save:
        import onnx

        onnx.save(model, save)
    feeds = inputs_for(name, model)
    order = [vi.name for vi in model.graph.input]
    row: dict = {"model": name, "threads": threads, "nodes": len(model.graph.node)}
    t = time.perf_counter()
    ours = compile_model(model.SerializeToString(), cache=cache, num_threads=threads)
    row["compile_s"] = time.perf_counter() - t
    opts = ort.SessionOptions()
    opts.intra_op_num_threads = threads
    sess = ort.InferenceSession(model.SerializeToString(), opts, providers=["CPUExecutionProvider"])
    args = [feeds[k] for k in order]
    (y,) = ours(*args)
    (ref,) = sess.run(None, feeds)
    y = np.asarray(y)
    row["max_abs_diff"] = float(np.abs(y.astype(np.float64) - ref).max())
    row["ref_max_abs"] = float(np.abs(ref).max())
    row["close"] = bool(np.allclose(y, ref, rtol=ARGS.rtol, atol=ARGS.atol))
    ours(*args)
    sess.run(None, feeds)
    wall: dict[str, list[float]] = {"ours": [], "ort": []}
    cpu: dict[str, list[float]] = {"ours": [], "ort": []}
    for _ in range(runs):  # interleaved, so a burst of load hits both sides alike
        for side, fn in (("ours", lambda: ours(*args)), ("ort", lambda: sess.run(None, feeds))):
            # a pause and an untimed run first: the other side's idle pool threads keep spinning
            # for a while after its run (onnxruntime's by default), and with T threads on T cores
            # they would take this side's cores and count in its process CPU time (2 threads, BERT:
            # 52 ms right after onnxruntime's run, 26 ms after a 30 ms pause, 14 ms after 100 ms)
            time.sleep(ARGS.settle)
            fn()
            c, t = time.process_time(), time.perf_counter()
            fn()
            wall[side].append(time.perf_counter() - t)
            cpu[side].append(time.process_time() - c)
    for side in ("ours", "ort"):
        row[f"{side}_ms"] = statistics.median(wall[side]) * 1e3
        row[f"{side}_cpu_ms"] = statistics.median(cpu[side]) * 1e3
    row["ratio"] = row["ours_ms"] / row["ort_ms"]
    row["cpu_ratio"] = row["ours_cpu_ms"] / max(row["ort_cpu_ms"], 1e-9)
    return row


ARGS: argparse.Namespace


def main(argv: list[str] | None = None) -> int:
    global ARGS
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--only", default=None, help="comma-separated subset of: " + ", ".join(MODELS))
    p.add_argument("--threads", default="1,2", help="comma-separated thread counts (default 1,2)")
    p.add_argument("--runs", type=int, default=20, help="timed runs per side (interleaved)")
    p.add_argument("--settle", type=float, default=0.1,
                   help="seconds of pause before each side's runs (the other side's pool goes idle)")
    p.add_argument("--cache", action="store_true", help="use the JIT disk cache")
    p.add_argument("--rtol", type=float, default=1e-3)
    p.add_argument("--atol", type=float, default=1e-3)
    p.add_argument("--save-onnx", default=None, metavar="PATH",
                   help="also write the model to PATH (one model: with --only)")
    p.add_argument("--json", default=None, metavar="PATH")
    ARGS = args = p.parse_args(argv)
    names = args.only.split(",") if args.only else list(MODELS)
    bad = [n for n in names if n not in MODELS]
    if bad:
        print(f"error: unknown model(s) {', '.join(bad)}; choose from {', '.join(MODELS)}", file=sys.stderr)
        return 1
    try:
        threads = [int(t) for t in args.threads.split(",")]
    except ValueError:
        print(f"error: --threads wants integers like 1,2, not {args.threads!r}", file=sys.stderr)
        return 1
    if args.save_onnx and len(names) != 1:
        print("error: --save-onnx needs exactly one model (--only)", file=sys.stderr)
        return 1
    print(f"load average: {' '.join(f'{x:.1f}' for x in os.getloadavg())}; cores: {os.cpu_count()}")
    head = (f"{'model':6} {'thr':>3} {'compile s':>9} {'ours ms':>9} {'ort ms':>9} {'ratio':>6} "
            f"{'ours cpu':>9} {'ort cpu':>9} {'cpu ratio':>9} {'max|diff|':>10}")
    print(head)
    print("-" * len(head))
    rows, ok = [], True
    for name in names:
        for t in threads:
            r = measure(name, t, args.runs, args.cache, args.save_onnx)
            rows.append(r)
            ok &= r["close"]
            print(f"{name:6} {t:3d} {r['compile_s']:9.1f} {r['ours_ms']:9.2f} {r['ort_ms']:9.2f} {r['ratio']:6.2f} "
                  f"{r['ours_cpu_ms']:9.2f} {r['ort_cpu_ms']:9.2f} {r['cpu_ratio']:9.2f} {r['max_abs_diff']:10.2g}"
                  + ("" if r["close"] else "  MISMATCH"), flush=True)
    print(f"load average: {' '.join(f'{x:.1f}' for x in os.getloadavg())}")
    if args.json:
        Path(args.json).write_text(json.dumps(rows, indent=1) + "\n")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
